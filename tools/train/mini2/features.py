"""What folio-mini-ocr 2's structure decoder reads about each line (the C++ engine mirrors this).

A line token is NUMERIC features (geometry, ink, text statistics, whether the line before ends with
a hyphen; page-relative) plus the classes of
its first CHAR_HEAD and last CHAR_TAIL characters. Inputs are layout.py's lines and the recognizer's
text of each segment, in the record form make_structure_data.py writes:
  {"box": [x0, y0, x1, y1], "column", "columns", "region": [x0, x1], "xh", "gap_before",
   "segments": [{"x": [x0, x1], "text", "ink"}]}
"""
import math

from lines import CHAR_INDEX

NUMERIC = 22
CHAR_HEAD, CHAR_TAIL = 3, 2


def _median(v, default):
    v = sorted(v)
    return v[len(v) // 2] if v else default


def clip(v, lo, hi):
    return lo if v < lo else hi if v > hi else v


def line_text(line):
    return " ".join(s["text"] for s in line["segments"])


def page_features(lines, page_h):
    """[(numeric [NUMERIC], chars [CHAR_HEAD + CHAR_TAIL])] for one page's lines in reading order."""
    med_xh = _median([ln["xh"] for ln in lines], 10)
    med_gap = max(1, _median([ln["gap_before"] for ln in lines if ln["gap_before"] >= 0], med_xh))
    ink = [_line_ink(ln) for ln in lines]
    med_ink = max(1e-3, _median(ink, 0.1))
    out = []
    for i, ln in enumerate(lines):
        x0, y0, x1, y1 = ln["box"]
        r0, r1 = ln["region"]
        rw = max(1, r1 - r0)
        xh = max(2, ln["xh"])
        first = ln["gap_before"] < 0
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        same_next = nxt is not None and nxt["gap_before"] >= 0 and nxt["column"] == ln["column"]
        gap_after = nxt["gap_before"] if same_next else 0
        prev = lines[i - 1] if i > 0 and not first else None
        text = line_text(ln)
        letters = [c for c in text if c.isalpha()]
        seg_gaps = sum(b["x"][0] - a["x"][1] for a, b in zip(ln["segments"], ln["segments"][1:]))
        f = [
            (x0 - r0) / rw,
            (r1 - x1) / rw,
            clip(math.log(xh / med_xh), -2, 2),
            clip((y1 - y0) / xh / 4, 0, 3),
            0.0 if first else clip(ln["gap_before"] / xh / 4, 0, 2),
            1.0 if first else 0.0,
            0.0 if first else clip(ln["gap_before"] / med_gap - 1, -1, 4),
            clip(gap_after / xh / 4, 0, 2),
            0.0 if same_next else 1.0,
            min(len(ln["segments"]) - 1, 3) / 3,
            # Pages of three or four columns read like two-column ones: the second and later
            # columns as the right one (the decoder was trained on one and two).
            float(min(ln["column"], 1)),
            1.0 if ln["columns"] >= 2 else 0.0,
            y0 / max(1, page_h),
            clip(ink[i] / med_ink - 1, -1, 2),
            clip(len(text) / (rw / xh), 0, 2),
            0.0 if prev is None else clip((x0 - prev["box"][0]) / xh / 8, -2, 2),
            0.0 if prev is None else clip((x1 - prev["box"][2]) / xh / 8, -2, 2),
            seg_gaps / rw,
            sum(c.isdigit() for c in text) / max(1, len(text)),
            sum(c.isupper() for c in letters) / max(1, len(letters)),
            ((x0 + x1) / 2 - (r0 + r1) / 2) / rw,
            # The line before in reading order ends with a hyphen: what JOIN, DEHYPHEN and
            # JOIN_TIGHT turn on.
            1.0 if i > 0 and line_text(lines[i - 1]).rstrip().endswith("-") else 0.0,
        ]
        stripped = text.strip()
        head = [CHAR_INDEX.get(c, 0) for c in stripped[:CHAR_HEAD]]
        tail = [CHAR_INDEX.get(c, 0) for c in stripped[-CHAR_TAIL:]] if stripped else []
        chars = head + [0] * (CHAR_HEAD - len(head)) + [0] * (CHAR_TAIL - len(tail)) + tail
        out.append((f, chars))
    return out


def _line_ink(ln):
    w = [s["x"][1] - s["x"][0] for s in ln["segments"]]
    return sum(s["ink"] * wi for s, wi in zip(ln["segments"], w)) / max(1, sum(w))
