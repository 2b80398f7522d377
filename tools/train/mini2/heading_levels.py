"""Heading levels settled per document (the C++ engine mirrors this: src/runtime/heading_levels.h).

The structure decoder picks H1, H2 or H3 for a heading line from that line and the lines around it,
and two headings that look alike can come out at two levels, or a section under the title as a
subsection. Two rules, applied while decoding, hold the levels together as a reader expects:
 1. a heading that looks like an earlier one (the same size, weight, case and indent, relative to
    its page) gets that heading's level;
 2. any other heading is at most one level below the heading before it (no level is skipped).
The first heading of a document keeps the decoder's level.
"""
import math

HEADINGS = ("H1", "H2", "H3")
SIZE_TOLERANCE = 0.12    # |ln| of the x-height ratio (x-heights are whole pixels: 1 in 8-14)
WEIGHT_TOLERANCE = 0.2   # |ln| of the ink ratio (bold sets 1.3-1.5 times the ink)
INDENT_TOLERANCE = 1.5   # in the page's median x-heights
CENTRED_SHARE = 0.05     # of the column's width: the line's centre this close to the column's ...
CENTRED_INDENT = 3.0     # ... and set in by more than this many median x-heights: a centred line


def _median(v, default):
    v = sorted(v)
    return v[len(v) // 2] if v else default


def _ink(ln):
    w = [s["x"][1] - s["x"][0] for s in ln["segments"]]
    return sum(s["ink"] * wi for s, wi in zip(ln["segments"], w)) / max(1, sum(w))


def page_styles(lines):
    """One style per line of a page (lines as make_structure_data.py records them)."""
    med_xh = max(1, _median([ln["xh"] for ln in lines], 10))
    med_ink = max(1e-3, _median([_ink(ln) for ln in lines], 0.1))
    out = []
    for ln in lines:
        x0, _, x1, _ = ln["box"]
        r0, r1 = ln["region"]
        text = " ".join(s["text"] for s in ln["segments"])
        letters = [c for c in text if c.isalpha()]
        caps = len(letters) >= 2 and sum(c.isupper() for c in letters) >= 0.8 * len(letters)
        indent = (x0 - r0) / med_xh
        centred = indent > CENTRED_INDENT and abs((x0 + x1) / 2 - (r0 + r1) / 2) <= CENTRED_SHARE * max(1, r1 - r0)
        out.append({"size": max(1, ln["xh"]) / med_xh, "weight": max(1e-3, _ink(ln)) / med_ink, "caps": caps,
                    "indent": indent, "centred": centred})
    return out


def alike(a, b):
    return (abs(math.log(a["size"] / b["size"])) <= SIZE_TOLERANCE
            and abs(math.log(a["weight"] / b["weight"])) <= WEIGHT_TOLERANCE
            and a["caps"] == b["caps"]
            and ((a["centred"] and b["centred"]) or
                 (not a["centred"] and not b["centred"] and abs(a["indent"] - b["indent"]) <= INDENT_TOLERANCE)))


class HeadingLevels:
    def __init__(self):
        self.known = []  # (style, level): the first heading of each look
        self.last = 0    # the level of the heading before; 0 before the first

    def level(self, style, proposed):
        """The level (1-3) a heading of this style is written at, the decoder having proposed one."""
        for s, lv in self.known:
            if alike(s, style):
                return lv
        return min(proposed, self.last + 1) if self.last else proposed

    def note(self, style, level):
        """A heading was written at this level."""
        if not any(alike(s, style) for s, _ in self.known):
            self.known.append((style, level))
        self.last = level
