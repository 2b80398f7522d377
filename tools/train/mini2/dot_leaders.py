"""Dot leaders: the rows of dots that lead a table of contents' or an index's entry to its page
number. The reference the C++ front end mirrors (src/vision/dot_leaders.h; keep the two in step).

A leader is ink, but not text: read as characters it is a run of marks no reader wants, and its dots
stand in columns that a table of contents' lines all share (LaTeX sets them on one grid), so the
spaces between them look like gutters, and the page was read as columns of dots. layout.py erases
the leaders' dots before it looks for columns; what was an entry's leader is then the wide gap
between its title and its page number (two segments), and the line is marked as led.

  1. Ink components (8-connected) of the binary page; a *dot* is a component at most DOT_MAX of
     the page width (and 3 pixels) wide and tall, roughly round (neither side more than 2 pixels
     longer than the other), at least half of its box inked.
  2. Dots chain left to right: a dot continues the chain whose last dot ends nearest before it
     (gap at most GAP_MAX x the page width, vertical centres within 2 half-pixels:
     `abs((y0 + y1) - (y0' + y1')) <= 2`, no ink between the two in their rows; the first chain of
     equals); a dot no chain takes starts one. Dots are visited in order of (x0, y0).
  3. A chain is cut where its pitch (x0 to the next dot's x0) leaves [1/2, 3/2] of the pitch its
     run started with: the run ends at the dot before, the next run starts there. Each run of at
     least MIN_DOTS dots is a leader.
"""
import numpy as np

DOT_MAX = 1.0 / 170   # x the page width: a period at 300 DPI in a 12 pt face, with a scan's blur
MIN_DOTS = 5           # an ellipsis has three
GAP_MAX = 0.025        # x the page width: LaTeX's leaders (0.5 em between dots), groff's (a sixth of an inch)


def components(binary):
    """[(x0, y0, x1, y1, count)] of the 8-connected ink components, ends exclusive, in order of
    their first pixel (row-major)."""
    h, w = binary.shape
    padded = np.zeros((h, w + 2), np.int8)
    padded[:, 1:-1] = binary
    d = np.diff(padded, axis=1)
    ys, starts = np.nonzero(d == 1)
    _, ends = np.nonzero(d == -1)
    parent = list(range(len(ys)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    row_first = np.searchsorted(ys, np.arange(h + 1))
    for y in range(1, h):
        a, a_end = row_first[y - 1], row_first[y]
        b, b_end = row_first[y], row_first[y + 1]
        i, j = a, b
        while i < a_end and j < b_end:
            # 8-connected: runs touch when they overlap with one pixel of slack either side
            if starts[i] <= ends[j] and starts[j] <= ends[i]:
                ri, rj = find(i), find(j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
            if ends[i] < ends[j]:
                i += 1
            else:
                j += 1
    boxes = {}
    for k in range(len(ys)):
        r = find(k)
        x0, x1, y = int(starts[k]), int(ends[k]), int(ys[k])
        if r in boxes:
            b = boxes[r]
            boxes[r] = [min(b[0], x0), min(b[1], y), max(b[2], x1), max(b[3], y + 1), b[4] + x1 - x0]
        else:
            boxes[r] = [x0, y, x1, y + 1, x1 - x0]
    return [tuple(boxes[r]) for r in sorted(boxes)]


def is_dot(box, page_width):
    x0, y0, x1, y1, count = box
    w, h = x1 - x0, y1 - y0
    most = max(3, int(DOT_MAX * page_width))
    return w <= most and h <= most and w <= h + 2 and h <= w + 2 and 2 * count >= w * h


def _chains(dots, binary):
    """Chains of dots (step 2). A chain stays open while a later dot could still reach it (dots come
    in order of x0, a gap is at most `reach`); the open ones keep their order of creation, so ties
    go to the earlier chain."""
    chains, open_ = [], []
    reach = int(GAP_MAX * binary.shape[1])
    for d in sorted(dots, key=lambda b: (b[0], b[1])):
        open_ = [c for c in open_ if c[-1][2] + reach >= d[0]]
        best, best_gap = None, None
        for c in open_:
            last = c[-1]
            gap = d[0] - last[2]
            if 0 < gap <= reach and abs((d[1] + d[3]) - (last[1] + last[3])) <= 2 \
                    and (best_gap is None or gap < best_gap) \
                    and not binary[min(d[1], last[1]):max(d[3], last[3]), last[2]:d[0]].any():
                best, best_gap = c, gap
        if best is None:
            chains.append([d])
            open_.append(chains[-1])
        else:
            best.append(d)
    return chains


def _regular_runs(chain):
    """The chain cut where its pitch leaves [1/2, 3/2] of the pitch its run started with (step 3):
    the run ends at the dot before, and the next starts there (a dot may end one run and start the
    next), so a title's final period or a speck before the leader leaves the leader whole, and a
    leader that changes its pitch is two leaders."""
    runs, cur, ref = [], [chain[0]], None
    for a, d in zip(chain, chain[1:]):
        p = d[0] - a[0]
        if ref is not None and (2 * p < ref or 2 * p > 3 * ref):
            runs.append(cur)
            cur, ref = [a], None
        if ref is None:
            ref = p
        cur.append(d)
    runs.append(cur)
    return [r for r in runs if len(r) >= MIN_DOTS]


def find_leaders(binary):
    """[(x0, y0, x1, y1, dots)] of the page's dot leaders, dots being their boxes."""
    dots = [b for b in components(binary) if is_dot(b, binary.shape[1])]
    out = []
    for c in (r for chain in _chains(dots, binary) for r in _regular_runs(chain)):
        out.append((c[0][0], min(b[1] for b in c), c[-1][2], max(b[3] for b in c), c))
    return sorted(out, key=lambda l: (l[1], l[0]))


def leader_bar(leader):
    """The rows and columns (y0, y1, x0, x1) a leader fills as a bar of ink for the column search:
    its dots' columns, and rows up from its dots' bottom as tall as its pitch or three dots (a
    bar of the dots' own rows weighs too little against a column's lines)."""
    x0, y0, x1, y1, dots = leader
    pitch = (dots[-1][0] - dots[0][0]) // (len(dots) - 1)
    h = max(pitch, 3 * (y1 - y0))
    return max(0, y1 - h), y1, x0, x1


def erase_leaders(binary, ink):
    """Erases the leaders' dots from both maps (in place): a dot's box from the binary page, and from
    the ink strengths the box and the pixel around it that are not binary ink (the dot's
    anti-aliased rim, which the crops would show as specks). Returns the leaders' boxes (x0, y0, x1, y1)
    and bars (leader_bar)."""
    leaders = find_leaders(binary)
    h, w = binary.shape
    for _, _, _, _, dots in leaders:
        for x0, y0, x1, y1, _ in dots:
            binary[y0:y1, x0:x1] = False
        for x0, y0, x1, y1, _ in dots:
            a, b, c, d = max(0, y0 - 1), min(h, y1 + 1), max(0, x0 - 1), min(w, x1 + 1)
            ink[a:b, c:d][~binary[a:b, c:d]] = 0.0
    return [l[:4] for l in leaders], [leader_bar(l) for l in leaders]
