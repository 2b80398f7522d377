"""Page layout for folio-mini-ocr 2: columns, lines in reading order, and each line's segments.

The reference the C++ front end mirrors (keep the two in step). Built on line_finder.py:

  1. The background removed (line_finder.remove_background), then Otsu binarisation (as line_finder: ink is at or below the level). Rules are removed: pixels of horizontal ink runs of at
     least RULE_H x the page width or vertical runs of at least RULE_V x its height (table borders,
     underlines, separators) stop being ink, so a ruled table falls apart into its rows and cells.
     Dot leaders are erased (dot_leaders.py: a contents entry's title and page number become two
     segments, and its line is `led`); columns are looked for with each leader a bar of ink
     (dot_leaders.leader_bar: an entry stays one run across its column, so a two-column index is
     two columns, not titles and numbers). The text extent is the box of that ink.
  2. Columns: the vertical projection counts, per pixel column, the rows with ink. A rough gutter is
     the widest run of pixel columns in the middle half of the text extent whose count stays at or
     below GUTTER_INK x the rows with ink, at least GUTTER_MIN x the page width wide. A band of the
     whole page is spanning when at least SPAN_ROWS of its rows have ink in the gutter's middle third
     (a title over both columns, a centred page number; not a line overflowing its column into the
     gutter, nor a two-column block whose one line strays into it). The gutter is then the run of pixel columns around the rough one's middle with no ink
     at all outside spanning rows (within the middle half), and spanning rows are found again with
     it. Runs of spanning rows form full-width zones; the rows between them form two-column zones,
     read left column then right. A gutter must have ink on both sides of it in at least BOTH_SIDES
     of the rows with ink (outside spanning rows), and at least twice as many such rows as spanning
     rows; else, or with no quiet run at all, the page is one column and one zone. One column too
     when the two sides pair up row by row like a table without rules (_table_like: TABLE_ALIGNED
     of the left side's bands have a right-side band at the same height, and one side's bands fill
     less than COLUMN_FILL of its width at the median; or TABLE_ALIGNED of the right side's bands
     are at most NUMBER_SIDE times as wide as tall, each within a left-side band's rows: a table of
     contents' page numbers).
  Each side of a two-column zone is read the same way once more when it holds a gutter of its
     own (find_gutter on that side's rows and columns alone), so a reference card's three or four
     columns read left to right (_blocks).
  3. Lines: in each zone and column, bands of rows with ink in that column's x range (thin bands
     merged as line_finder does, bands under 3 rows dropped), each cut into segments at gaps wider
     than SEGMENT_GAP x-heights, each segment cropped by the crop rule (a segment at most
     NARROW_SEGMENT x-heights wide, of a line of two or more, with its band's core: a page number's
     digits show no x-height of their own).

A Line carries what the structure decoder reads about it (features.py): its box, column, zone,
x-height, gap to the line above in its column, and its segments' boxes and crops.
"""
from dataclasses import dataclass, field

import numpy as np

from dot_leaders import erase_leaders
from line_finder import NARROW_SEGMENT, _segment, bands, binarise, merge_thin, segments, split_touching
from lines import core_rows, crop_line

RULE_H = 0.04   # horizontal ink runs at least this fraction of the page width are rules
RULE_V = 0.05   # vertical ink runs at least this fraction of the page height are rules
GUTTER_INK = 0.08
GUTTER_MIN = 0.012
CLEAN_GUTTER_MIN = 0.005  # a gutter no row's ink enters may be this narrow (x the page width)
FLUSH_LEFT = 3           # ... with this many lines right of it starting at its edge (and half
                          # of them, when narrower than GUTTER_MIN)
EQUAL_SIDES = 0.1         # sides of a gutter within this share of the wider one are equal
SPAN_ROWS = 0.3
BOTH_SIDES = 0.2
BOTH_SIDES_CLEAN = 0.1  # ... for a clean gutter with a flush column right of it
TABLE_ALIGNED = 0.8
MAX_SPLIT_DEPTH = 2   # a side of the page's gutter may split once more: up to four columns
SPLIT_MIN_BANDS = 6
SPLIT_MIN_SHARE = 0.3  # each part of a split column at least this share of it (not a bullet's gap)
COLUMN_FILL = 0.9
NUMBER_SIDE = 4.0     # a band this many times as wide as tall, or less: a page number ("1024", "xviii")


@dataclass
class Line:
    box: tuple            # (x0, y0, x1, y1) of all its segments
    column: int           # 0 (left or only), 1 (right); spanning lines are column 0
    columns: int          # columns of its zone (1 or 2)
    region: tuple         # (x0, x1) of its column (or the text extent when spanning)
    xh: int               # band x-height (Otsu ink)
    gap_before: int       # blank rows to the previous line of the same zone and column (-1: first)
    segments: list = field(default_factory=list)  # [((x0, x1), crop [32, W])]
    led: bool = False     # a dot leader was erased within its rows and column (dot_leaders.py)


def find_gutter(binary, within_columns=False, page_width=None):
    """(g0, g1) pixel columns of the gutter, or None. `within_columns`: the window is one side of
    a page's gutter, where a gutter parting it into sides of equal width (EQUAL_SIDES) is a grid of
    columns even when their lines pair up row by row like a table's (a reference card's columns
    share their leading). `page_width`: the page's, when the window is part of it."""
    ink_rows = binary.any(axis=1)
    n_rows = int(ink_rows.sum())
    if n_rows == 0:
        return None
    cols = np.nonzero(binary.any(axis=0))[0]
    left, right = int(cols[0]), int(cols[-1]) + 1
    proj = binary.sum(axis=0)
    lo, hi = left + (right - left) // 4, right - (right - left) // 4
    def is_columns(gutter, both_sides=BOTH_SIDES):
        grid = within_columns and abs((gutter[0] - left) - (right - gutter[1])) <= EQUAL_SIDES * max(gutter[0] - left, right - gutter[1])
        return _columns_on_both_sides(binary, n_rows, left, gutter, right, table_rule=not grid, both_sides=both_sides)

    # A clean gutter first (a card's close columns, whose ragged lines leave no wide quiet run) when
    # a column starts at its right edge and lines stand on both sides (then a short second column,
    # a document's last page, has ink beside the first on fewer rows: BOTH_SIDES_CLEAN); else the
    # run free of ink outside spanning rows around the quiet run's middle; else the quiet run itself.
    clean = _clean_gutter(_column_ink(binary, lo, hi), lo, hi, page_width or binary.shape[1])
    if clean is not None and _flush_left(binary, clean, right, page_width or binary.shape[1]) \
            and _lines_on_both_sides(binary, left, clean, right) \
            and is_columns(clean, BOTH_SIDES_CLEAN):
        return clean
    rough, refined = _quiet_gutter(binary, proj, lo, hi, n_rows)
    return _checked(refined if refined is not None else rough, is_columns)


def _column_ink(binary, lo, hi):
    """The window's projection without the bands whose ink lies within columns [lo, hi): a centred
    page number or short heading stands in a gutter's columns without crossing a column's lines."""
    proj = binary.sum(axis=0)
    for b0, b1 in bands(binary.any(axis=1)):
        cols = np.nonzero(binary[b0:b1].any(axis=0))[0]
        if cols[0] >= lo and cols[-1] < hi:
            proj = proj - binary[b0:b1].sum(axis=0)
    return proj


def _flush_left(binary, gutter, right, page_width):
    """Whether the bands right of the clean gutter start at its edge (within a third of its width,
    at least 2 pixels: a scan's lines drift with what tilt is left): FLUSH_LEFT of them or more,
    and half of them unless the gutter is a page's gutter wide (GUTTER_MIN). A column's lines, or
    its headings over indented paragraphs, are set flush left, while the space between two words of
    a title that falls in a wide gutter has the column's lines starting further right."""
    side = binary[:, gutter[1]:right]
    near = max(2, (gutter[1] - gutter[0]) // 3)
    flush = [int(np.argmax(side[b0:b1].any(axis=0))) <= near for b0, b1 in bands(side.any(axis=1))]
    wide = gutter[1] - gutter[0] >= GUTTER_MIN * page_width
    return sum(flush) >= FLUSH_LEFT and (wide or 2 * sum(flush) >= len(flush))


def _lines_on_both_sides(binary, left, gutter, right):
    """Whether both sides of the clean gutter hold SPLIT_MIN_BANDS lines (not a word space of a
    lone line)."""
    return all(len(merge_thin(bands(binary[:, a:b].any(axis=1)))) >= SPLIT_MIN_BANDS
               for a, b in ((left, gutter[0]), (gutter[1], right)))


def _checked(gutter, is_columns):
    return gutter if gutter is not None and is_columns(gutter) else None


def _widest_run(mask):
    """(start, end) of the widest run of True in the mask (the first of equals), or None."""
    best, start = None, None
    for i, on in enumerate(list(mask) + [False]):
        if on and start is None:
            start = i
        elif not on and start is not None:
            if best is None or i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    return best


def _quiet_gutter(binary, proj, lo, hi, n_rows):
    """(rough, refined): the widest quiet run in [lo, hi) (None when none is GUTTER_MIN wide) and
    the run free of ink outside spanning rows around its middle (None when not GUTTER_MIN wide)."""
    best = _widest_run(proj[lo:hi] <= GUTTER_INK * n_rows)
    if best is None or best[1] - best[0] < GUTTER_MIN * binary.shape[1]:
        return None, None
    # Then the run of pixel columns with no ink at all outside the spanning rows around its middle,
    # within the middle half: tighter where a justified line or a hanging comma enters the quiet
    # run, wider where a spanning title's strokes cut it short.
    rough = (lo + best[0], lo + best[1])
    columns_only = binary[~_spanning_rows(binary, rough)]
    proj = columns_only.sum(axis=0)
    g0 = g1 = (rough[0] + rough[1]) // 2
    if proj[g0] == 0:
        while g0 > lo and proj[g0 - 1] == 0:
            g0 -= 1
        while g1 < hi and proj[g1] == 0:
            g1 += 1
        if g1 - g0 >= GUTTER_MIN * binary.shape[1]:
            return rough, (g0, g1)
    return rough, None


def _clean_gutter(proj, lo, hi, width):
    """The widest run of pixel columns in [lo, hi) with no ink in any row, at least CLEAN_GUTTER_MIN
    x the page width wide, or None: a reference card's columns may stand closer than GUTTER_MIN, and
    their ragged lines fill the quiet run around such a gutter, but nothing crosses it."""
    best = _widest_run(proj[lo:hi] == 0)
    if best is None or best[1] - best[0] < CLEAN_GUTTER_MIN * width:
        return None
    return lo + best[0], lo + best[1]


def _columns_on_both_sides(binary, n_rows, left, gutter, right, table_rule=True, both_sides=BOTH_SIDES):
    """Whether the gutter parts columns of text (see find_gutter)."""
    # Two columns fill rows on both sides of it; a page of short lines (a man page, a list) leaves
    # a quiet middle with ink on one side only.
    spanning = _spanning_rows(binary, gutter)
    both = binary[~spanning]
    both = int((both[:, left:gutter[0]].any(axis=1) & both[:, gutter[1]:right].any(axis=1)).sum())
    # ... and are crossed by few lines: a one-column page whose table or list leaves a quiet strip
    # has its paragraphs crossing it.
    if both < both_sides * n_rows or 2 * int(spanning.sum()) > both:
        return False
    # ... and set their lines each on its own: rows that pair up across it, with a short side, are
    # a table without rules (a name and its description, a table of contents' titles and page
    # numbers), read row by row.
    return not (table_rule and _table_like(binary, ~spanning, left, gutter, right))


def _side_bands(binary, rows, x0, x1):
    """Bands of the rows (where `rows` holds) with ink in columns [x0, x1): (y0, y1, last ink column,
    first ink column)."""
    sub = binary[:, x0:x1]
    out = []
    for b0, b1 in bands(sub.any(axis=1) & rows):
        cols = np.nonzero(sub[b0:b1].any(axis=0))[0]
        out.append((b0, b1, x0 + int(cols[-1]), x0 + int(cols[0])))
    return out


def _table_like(binary, rows, left, gutter, right):
    """True when at least TABLE_ALIGNED of the left side's bands have a band on the right side
    centred within a quarter of the median band height of theirs, and one side's bands reach, at
    the median, less than COLUMN_FILL of its width (columns of text fill their width); or when at
    least TABLE_ALIGNED of the right side's bands are at most NUMBER_SIDE times as wide as they are
    tall and lie within a left-side band's rows, give or take that tolerance (a table of contents'
    page numbers beside titles that fill their side, some of them wrapped; digits stand on the
    baseline, the titles' descenders go below it)."""
    lb = _side_bands(binary, rows, left, gutter[0])
    rb = _side_bands(binary, rows, gutter[1], right)
    if not lb or not rb:
        return False
    tol = max(1.0, float(np.median([b[1] - b[0] for b in lb + rb])) / 4)
    centres = np.array([(b[0] + b[1]) / 2 for b in rb])
    aligned = np.mean([np.abs(centres - (b[0] + b[1]) / 2).min() <= tol for b in lb])
    fill_l = float(np.median([(b[2] + 1 - left) / (gutter[0] - left) for b in lb]))
    fill_r = float(np.median([(b[2] + 1 - gutter[1]) / (right - gutter[1]) for b in rb]))
    numbers = np.mean([b[2] + 1 - b[3] <= NUMBER_SIDE * (b[1] - b[0])
                       and any(l[0] - tol <= b[0] and b[1] <= l[1] + tol for l in lb) for b in rb])
    return (aligned >= TABLE_ALIGNED and min(fill_l, fill_r) < COLUMN_FILL) or numbers >= TABLE_ALIGNED


def _spanning_rows(binary, gutter):
    """Rows of the bands of the whole page that are spanning (see zones)."""
    in_gutter = binary[:, _middle_third(gutter)[0]:_middle_third(gutter)[1]].any(axis=1)
    spanning = np.zeros(binary.shape[0], bool)
    for b0, b1 in bands(binary.any(axis=1)):
        if in_gutter[b0:b1].sum() >= SPAN_ROWS * (b1 - b0):
            spanning[b0:b1] = True
    return spanning


def _middle_third(gutter):
    """The gutter's middle third: what a spanning line crosses and a line overflowing its column
    (a long URL, a code line) does not reach."""
    w = gutter[1] - gutter[0]
    return gutter[0] + w // 3, gutter[1] - w // 3


def zones(binary, gutter):
    """[(y0, y1, spanning)] covering the page's rows, top to bottom. A band of the whole page's rows
    is spanning when at least SPAN_ROWS of its rows have ink in the gutter (a title, a centred page
    number; not a two-column block whose one line strays into the gutter)."""
    h = binary.shape[0]
    if gutter is None:
        return [(0, h, False)]
    spanning = _spanning_rows(binary, gutter)
    out, y = [], 0
    while y < h:
        s = bool(spanning[y])
        y1 = y
        while y1 < h and bool(spanning[y1]) == s:
            y1 += 1
        out.append((y, y1, s))
        y = y1
    return out


def _long_runs(binary, length):
    """Pixels of runs of True along axis 1 that are at least `length` long."""
    h, w = binary.shape
    padded = np.zeros((h, w + 2), np.int8)
    padded[:, 1:-1] = binary
    d = np.diff(padded, axis=1)
    ys, starts = np.nonzero(d == 1)   # row-major order: run k starts at starts[k] and ends at ends[k]
    _, ends = np.nonzero(d == -1)
    out = np.zeros_like(binary)
    long = ends - starts >= length
    for y, x0, x1 in zip(ys[long], starts[long], ends[long]):
        out[y, x0:x1] = True
    return out


def rules(binary):
    """Pixels of horizontal and vertical rules (see the module notes)."""
    h, w = binary.shape
    return _long_runs(binary, max(2, int(RULE_H * w))) | _long_runs(binary.T, max(2, int(RULE_V * h))).T


def find_layout(gray):
    """[Line] in reading order for a gray page (uint8, 255 = paper)."""
    binary, ink = binarise(gray)
    ruled = rules(binary)
    binary &= ~ruled
    ink[ruled] = 0.0
    leaders, bars = erase_leaders(binary, ink)
    if not binary.any():
        return []
    # Columns are looked for with each leader a bar of ink: an entry (title, leader, page number)
    # stays one run across the page, as the lines are read without the dots.
    led = binary.copy()
    for by0, by1, bx0, bx1 in bars:
        led[by0:by1, bx0:bx1] = True
    cols = np.nonzero(led.any(axis=0))[0]
    extent = (int(cols[0]), int(cols[-1]) + 1)
    out = []
    for y0, y1, x0, x1, column, columns in _blocks(led, 0, binary.shape[0], 0, binary.shape[1], extent):
        out.extend(_lines_in(binary, ink, y0, y1, x0, x1, column, columns))
    for line in out:
        line.led = any(2 * line.box[1] <= ly0 + ly1 < 2 * line.box[3] and lx0 < line.region[1] and lx1 > line.region[0]
                       for lx0, ly0, lx1, ly1 in leaders)
    return out


def _blocks(binary, y0, y1, x0, x1, extent, depth=0):
    """The page (depth 0: all of it, extent its ink's columns) or one side of a gutter (extent its
    columns) cut into blocks read in order: [(y0, y1, x0, x1, column, columns)]. The gutter
    (find_gutter) makes zones; a spanning zone is one block over the extent, a two-column zone its
    left side, then its right side. A side is read the same way once more (MAX_SPLIT_DEPTH) when it
    holds a gutter of its own over at least SPLIT_MIN_BANDS lines, as wide as a page's gutter
    (GUTTER_MIN of the page width), each part at least SPLIT_MIN_SHARE of the side (a reference
    card's three or four columns; not a wide word gap in a zone of a line or two, nor the gap after
    a list's bullets). `columns` counts the blocks side by side there, `column` is the place."""
    sub = binary[y0:y1, x0:x1]
    g = None
    if depth == 0:
        g = find_gutter(sub)
    elif depth < MAX_SPLIT_DEPTH and len(merge_thin(bands(sub.any(axis=1)))) >= SPLIT_MIN_BANDS:
        g = find_gutter(sub, within_columns=True, page_width=binary.shape[1])
        w = x1 - x0
        narrowest = (CLEAN_GUTTER_MIN if not sub[:, g[0]:g[1]].any() else GUTTER_MIN) * binary.shape[1] if g else 0
        if g is not None and (min(g[0], w - g[1]) < SPLIT_MIN_SHARE * w or g[1] - g[0] < narrowest):
            g = None
    if g is None:
        return [(y0, y1, extent[0], extent[1], 0, 1)]
    out = []
    for zy0, zy1, spanning in zones(sub, g):
        a, b = y0 + zy0, y0 + zy1
        if spanning:
            out.append((a, b, extent[0], extent[1], 0, 1))
            continue
        left = _blocks(binary, a, b, extent[0], x0 + g[0], (extent[0], x0 + g[0]), depth + 1)
        right = _blocks(binary, a, b, x0 + g[1], extent[1], (x0 + g[1], extent[1]), depth + 1)
        n_left = max(blk[5] for blk in left)
        n = n_left + max(blk[5] for blk in right)
        out += [blk[:4] + (blk[4], n) for blk in left] + [blk[:4] + (n_left + blk[4], n) for blk in right]
    return out


def _lines_in(binary, ink, y0, y1, x0, x1, column, columns):
    sub = binary[y0:y1, x0:x1]
    out, prev_bottom = [], None
    for b0, b1 in split_touching(sub, merge_thin(bands(sub.any(axis=1)))):
        if b1 - b0 < 3:
            continue
        segs, xh = segments(sub, b0, b1)
        line = Line(box=None, column=column, columns=columns, region=(x0, x1), xh=int(xh),
                    gap_before=-1 if prev_bottom is None else b0 - prev_bottom)
        band_core = core_rows(sub[b0:b1].sum(axis=1))
        for s0, s1 in segs:
            # a segment of a few characters (a page number beside its title) takes its line's core
            core = band_core if len(segs) >= 2 and s1 - s0 <= NARROW_SEGMENT * xh else None
            crop = crop_line(_segment(ink[y0:y1, x0:x1], b0, b1, s0, s1, xh), band=(2 * xh, 2 * xh + b1 - b0), core=core)
            if crop is not None:
                line.segments.append(((x0 + s0, x0 + s1), crop))
        if line.segments:
            line.box = (line.segments[0][0][0], y0 + b0, line.segments[-1][0][1], y0 + b1)
            out.append(line)
            prev_bottom = b1
    return out
