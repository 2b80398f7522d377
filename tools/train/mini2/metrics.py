"""Character error measures shared by training and evaluation."""
import numpy as np


def _last_row(a, b, first_row):
    """The last row of the edit-distance table of a against b, starting from first_row (one numpy
    row per character of a; insertions along a row by a running minimum)."""
    bv = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    idx = np.arange(len(b) + 1)
    prev = first_row
    for i, ch in enumerate(a, 1):
        cost = (bv != ord(ch)).astype(np.int64)
        cur = np.empty_like(prev)
        cur[0] = i
        cur[1:] = np.minimum(prev[1:] + 1, prev[:-1] + cost)
        cur = idx + np.minimum.accumulate(cur - idx)
        prev = cur
    return prev


def edit_distance(a, b):
    """Levenshtein distance."""
    if not a or not b:
        return max(len(a), len(b))
    return int(_last_row(a, b, np.arange(len(b) + 1))[-1])


def semi_global(pattern, text):
    """Edit distance of pattern to its best-matching stretch of text (free start and end in text)."""
    if not pattern:
        return 0
    if not text:
        return len(pattern)
    return int(_last_row(pattern, text, np.zeros(len(text) + 1, np.int64)).min())
