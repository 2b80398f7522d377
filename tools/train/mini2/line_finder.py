"""Classical text-line finding for folio-mini-ocr 2 (the reference the C++ front end will mirror).

A page (gray, 255 = paper) is binarised with Otsu's threshold; rows holding ink form bands; a band
thinner than a third of the typical band (the dots over 'i' and 'j', accents, an underscore row)
joins its nearer neighbour when closer to it than that. Each band is cut into segments at
horizontal gaps wider than SEGMENT_GAP x its x-height (table cells, a man page's option and its description, columns).
Segments come out top to bottom, left to right, each with its box, x-height and crop (lines.py's
crop rule) ready for the recognizer.
"""
import numpy as np

from lines import core_rows, crop_line

SEGMENT_GAP = 2.2
NARROW_SEGMENT = 3.0  # x-heights: a segment this narrow, of a line of several, is cropped with its line's core
TALL_BAND = 1.6   # a band this many typical bands tall may be two lines touching (split_touching)
VALLEY = 0.25     # ... cut where a row holds under this share of its fullest row's ink


def otsu(gray):
    hist = np.bincount(gray.ravel(), minlength=256).astype(np.float64)
    total = hist.sum()
    levels = np.arange(256)
    w0 = np.cumsum(hist)
    m0 = np.cumsum(hist * levels)
    mean = m0[-1] / total
    w1 = total - w0
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mean * w0 - m0) ** 2 / (w0 * w1)
    between[~np.isfinite(between)] = 0
    return int(np.argmax(between))


def bands(ink_rows):
    """Runs of rows with ink: [(y0, y1)]."""
    out, start = [], None
    for y, has in enumerate(ink_rows):
        if has and start is None:
            start = y
        elif not has and start is not None:
            out.append((start, y))
            start = None
    if start is not None:
        out.append((start, len(ink_rows)))
    return out


def merge_thin(bs):
    """Joins each thin band (under a third of the median band height) to its nearer neighbour when
    that gap is under a third of the median too: the dots over 'i' and 'j' and accents join the line
    below them, an underscore row under a line without descenders (BZ_CONFIG_ERROR in Courier,
    where the underscores are the only ink below the baseline) joins the line above. Ties go to the
    line below."""
    if not bs:
        return bs
    typical = float(np.median([b - a for a, b in bs]))
    limit = typical / 3
    out = []
    bs = list(bs)
    for i, (a, b) in enumerate(bs):
        if b - a < limit:
            up = a - out[-1][1] if out else None
            down = bs[i + 1][0] - b if i + 1 < len(bs) else None
            if up is not None and up < limit and (down is None or up < down):
                out[-1] = (out[-1][0], b)
                continue
            if down is not None and down < limit:
                bs[i + 1] = (a, bs[i + 1][1])
                continue
        out.append((a, b))
    return out


def split_touching(binary, bs):
    """Cuts each tall band (at least TALL_BAND x the region's lower-quartile height of bands of 3
    rows or more, with four such bands or more to tell) at its thinnest row at least three quarters of a typical band from either end (not in a heading's
    row of capitals and ascenders), when
    that row holds under VALLEY of the band's fullest row's ink, and again in each part: two lines
    set tight, whose descenders and ascenders share rows (a dense scan's blur closes the gap), are
    two lines. A tall line of its own (a heading, a formula) is full in its middle."""
    heights = sorted(b - a for a, b in bs if b - a >= 3)  # what stays a line (specks of noise do not)
    if len(heights) < 4:
        return bs
    typical = heights[len(heights) // 4]
    counts = binary.sum(axis=1)
    out = []
    for a, b in bs:
        out.extend(_split_band(counts, a, b, typical))
    return out


def _split_band(counts, a, b, typical):
    lo, hi = a + 3 * typical // 4, b - 3 * typical // 4
    if b - a < TALL_BAND * typical or hi <= lo:
        return [(a, b)]
    cut = lo + int(np.argmin(counts[lo:hi]))
    if counts[cut] >= VALLEY * counts[a:b].max():
        return [(a, b)]
    return _split_band(counts, a, cut, typical) + _split_band(counts, cut, b, typical)


def x_height(binary_band):
    first, last = core_rows(binary_band.sum(axis=1))
    return max(2, last + 1 - first)


def segments(binary, y0, y1):
    band = binary[y0:y1]
    xh = x_height(band)
    cols = np.nonzero(band.any(axis=0))[0]
    out, start, prev = [], cols[0], cols[0]
    for c in cols[1:]:
        if c - prev > SEGMENT_GAP * xh:
            out.append((start, prev + 1))
            start = c
        prev = c
    out.append((start, prev + 1))
    return out, xh


def background_window(width):
    """The side of the square window of the background estimate: odd, about 1/85 of the page width
    (15 px for a page at 150 DPI), wider than the strokes of any text but a display face's."""
    return max(9, 2 * (width // 170) + 1)


def _running(a, w, axis, op, pad):
    """Running max or min over a centred window of w along axis (the window clipped at the edges)."""
    r = w // 2
    widths = [(0, 0)] * a.ndim
    widths[axis] = (r, r)
    padded = np.pad(a, widths, constant_values=pad)
    return op(np.lib.stride_tricks.sliding_window_view(padded, w, axis=axis), axis=-1)


def remove_background(gray, window=None):
    """The page divided by its background, so that text on a shaded or tinted box (code listings,
    notes, table headers) stands on white paper like any other text. The background is the gray
    closing of the page (a running max, then a running min, over a square window of
    background_window(width)): it fills every dark stroke narrower than the window and keeps the
    shade of any larger region, edges included. Each pixel becomes min(255, round(255 * g / bg)) in
    integers (bg at least 1), so the C++ twin gives the same bytes. On white paper nothing changes.
    Training lines (mini3/tech_lines.py) pass the window a page of their type size would get."""
    w = window or background_window(gray.shape[1])
    closed = gray
    for axis in (0, 1):
        closed = _running(closed, w, axis, np.max, 0)
    for axis in (0, 1):
        closed = _running(closed, w, axis, np.min, 255)
    bg = np.maximum(closed.astype(np.int64), 1)
    out = (gray.astype(np.int64) * 255 + bg // 2) // bg
    return np.minimum(out, 255).astype(np.uint8)


def binarise(gray):
    """(binary, ink) of the page with its background removed (remove_background): Otsu's ink (<= the
    level, which ends the dark class) and ink strength in [0, 1] by the page's own paper and ink
    levels (the 90th percentile of the page, the 5th of its Otsu ink): gray levels matter to the
    recognizer."""
    gray = remove_background(gray)
    t = otsu(gray)
    binary = gray <= t
    bg = float(np.percentile(gray, 90))
    fg = float(np.percentile(gray[binary], 5)) if binary.any() else 0.0
    ink = ((bg - gray.astype(np.float32)) / max(16.0, bg - fg)).clip(0, 1)
    return binary, ink


def find_lines(gray):
    """[(box (x0, y0, x1, y1), crop [32, W] float32)] in reading order."""
    binary, ink = binarise(gray)
    out = []
    for y0, y1 in merge_thin(bands(binary.any(axis=1))):
        if y1 - y0 < 3:
            continue
        segs, xh = segments(binary, y0, y1)
        for x0, x1 in segs:
            crop = crop_line(_segment(ink, y0, y1, x0, x1, xh), band=(2 * xh, 2 * xh + y1 - y0))
            if crop is not None:
                out.append(((x0, y0, x1, y1), crop))
    return out


def _segment(ink, y0, y1, x0, x1, xh):
    """The ink of one segment alone, with 2 x-heights of blank margin around it."""
    m = np.zeros((y1 - y0 + 4 * xh, x1 - x0 + 4 * xh), np.float32)
    m[2 * xh:2 * xh + y1 - y0, 2 * xh:2 * xh + x1 - x0] = ink[y0:y1, x0:x1]
    return m
