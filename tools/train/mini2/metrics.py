"""Character error measures shared by training and evaluation."""
import numpy as np


def edit_distance(a, b):
    """Levenshtein distance, one numpy row per character of a."""
    if not a or not b:
        return max(len(a), len(b))
    bv = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    idx = np.arange(len(b) + 1)
    prev = idx.copy()
    for i, ch in enumerate(a, 1):
        cost = (bv != ord(ch)).astype(np.int64)
        cur = np.empty_like(prev)
        cur[0] = i
        cur[1:] = np.minimum(prev[1:] + 1, prev[:-1] + cost)
        cur = idx + np.minimum.accumulate(cur - idx)
        prev = cur
    return int(prev[-1])
