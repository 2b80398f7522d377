"""Deskewing a page for folio-mini-ocr 2 (the C++ engine mirrors it: src/vision/deskew.h).

The skew is the angle in [-MAX_ANGLE, MAX_ANGLE] degrees, in steps of STEP, at which the page's ink
projects most sharply onto the vertical: text lines y = c + x tan(a) project onto y cos(a) - x sin(a)
as one value each, so the sum of squared counts of the projection (1-pixel bins) peaks at the lines'
angle. Ink is Otsu's (<= level), at most MAX_POINTS pixels of it (every k-th in row-major order).
Angles are tried from 0 outwards (0, -STEP, +STEP, ...), the first best kept; the page counts as
skewed only when that best beats the level projection by MIN_GAIN (two columns whose baselines
differ gain a few percent from a tiny turn that only lines one column up with the other). A skewed page is turned back about its centre with bilinear sampling
(paper beyond the edges), rounded to bytes.
"""
import math

import numpy as np

from line_finder import otsu

MAX_ANGLE = 3.0
STEP = 0.1
MAX_POINTS = 20000
MIN_POINTS = 100
MIN_GAIN = 1.1


def skew_angle(gray):
    """Degrees; 0.0 when the page has too little ink to tell."""
    ys, xs = np.nonzero(gray <= otsu(gray))
    if len(ys) < MIN_POINTS:
        return 0.0
    k = -(-len(ys) // MAX_POINTS)
    ys, xs = ys[::k].astype(np.float64), xs[::k].astype(np.float64)
    steps = int(round(MAX_ANGLE / STEP))
    best, best_score, level = 0, -1, 0
    for i in sorted(range(-steps, steps + 1), key=lambda i: (abs(i), i)):
        a = math.radians(i * STEP)
        proj = np.floor(ys * math.cos(a) - xs * math.sin(a)).astype(np.int64)
        counts = np.bincount(proj - proj.min()).astype(np.int64)
        score = int((counts * counts).sum())
        if i == 0:
            level = score
        if score > best_score:
            best, best_score = i, score
    return best * STEP if best_score >= MIN_GAIN * level else 0.0


def rotate(gray, degrees):
    """The page turned so that lines at `degrees` become level (same size; paper outside)."""
    h, w = gray.shape
    a = math.radians(degrees)
    c, s = math.cos(a), math.sin(a)
    cx, cy = (w - 1) / 2.0, (h - 1) / 2.0
    dy, dx = np.mgrid[0:h, 0:w].astype(np.float64)
    dx -= cx
    dy -= cy
    sx = cx + dx * c - dy * s
    sy = cy + dx * s + dy * c
    x0, y0 = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
    fx, fy = sx - x0, sy - y0
    src = np.full((h + 2, w + 2), 255.0)
    src[1:-1, 1:-1] = gray

    def at(yy, xx):
        return src[np.clip(yy + 1, 0, h + 1), np.clip(xx + 1, 0, w + 1)]

    top = (1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1)
    bottom = (1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1)
    v = (1 - fy) * top + fy * bottom
    return np.clip(np.floor(v + 0.5), 0, 255).astype(np.uint8)


def deskew(gray):
    """(page, angle in degrees): the page unchanged when its skew is 0."""
    a = skew_angle(gray)
    return (rotate(gray, a) if a != 0.0 else gray), a
