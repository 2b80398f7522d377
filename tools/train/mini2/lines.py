"""Text lines for the folio-mini-ocr 2 recognizer: rendering, the crop rule, augmentation.

THE CROP RULE (mirrored by the C++ line finder; keep the two in step):
  A line is a band of rows holding ink. Its profile p[y] counts ink pixels per row; the core is the
  rows from the first to the last with p >= CORE_FRACTION * max(p) (the x-height body in ordinary
  text). When that core is under CORE_MIN_SHARE of the band, one dense row outweighed the body (a
  dot leader, a run of underscores under short words) and the core is taken again against the
  largest p outside that thin core instead (core_rows). With xh = core height, the crop spans rows
  [core_top - ASCEND * xh, core_bottom + DESCEND * xh) and columns [first ink - PAD * xh, last ink +
  PAD * xh); pixels outside the band are background.
  The crop is scaled to HEIGHT rows (width in proportion, rounded up to a multiple of 4), and its
  gray levels mapped to ink in [0, 1]: (bg - v) / (bg - fg), bg and fg the 90th and 2nd percentiles.
  Keeping the x-height at a fixed fraction of the crop is what lets the recognizer tell case pairs
  (S/s, O/o, C/c) apart, which cropping to the ink alone hides.
"""
import io
import math
import random

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from fonts import font_file

HEIGHT = 32
CORE_FRACTION = 0.5
ASCEND = 0.75
DESCEND = 0.6
PAD = 0.4
CORE_MIN_SHARE = 0.25

ASCII = "".join(chr(c) for c in range(32, 127))
EXTRA = ("•–—‘’“”…©®°§¶±×÷·€£¢" "ÀÁÂÄÅÆÇÈÉÊËÍÎÏÑÓÔÖØÚÛÜßàáâãäåæçèéêëìíîïñòóôõöøùúûüýÿœ")
CHARSET = ASCII + EXTRA  # class k+1 is CHARSET[k]; class 0 is the CTC blank
CHAR_INDEX = {ch: i + 1 for i, ch in enumerate(CHARSET)}

_fonts = {}
_supported = {}


def load_font(path, size):
    key = (path, size)
    if key not in _fonts:
        if len(_fonts) > 4000:
            _fonts.clear()
        _fonts[key] = ImageFont.truetype(path, size)
    return _fonts[key]


def supported_extras(path):
    """The EXTRA characters the font draws (not as its .notdef box)."""
    if path not in _supported:
        f = load_font(path, 24)

        def glyph(ch):
            img = Image.new("L", (48, 48), 0)
            ImageDraw.Draw(img).text((8, 8), ch, font=f, fill=255)
            return img.tobytes()

        notdef = glyph("\ue000")
        _supported[path] = {ch for ch in EXTRA if glyph(ch) != notdef}
    return _supported[path]


def core_rows(p):
    """(first, last) row of the core of the profile p (see the crop rule); p must have a nonzero."""
    core = np.nonzero(p >= CORE_FRACTION * p.max())[0]
    if core[-1] + 1 - core[0] < CORE_MIN_SHARE * len(p):
        rest = np.concatenate([p[:core[0]], p[core[-1] + 1:]])
        if rest.max() > 0:
            core = np.nonzero(p >= CORE_FRACTION * rest.max())[0]
    return int(core[0]), int(core[-1])


def crop_line(ink, band=None, core=None):
    """Applies the crop rule to a 2-D ink image (float, 1 = ink) holding one line in rows `band`
    (default: the rows with ink). Returns the normalised [HEIGHT, W] float32 array, or None.
    `core`: (first, last) rows of the core, relative to the band, instead of the ink's own (a
    segment too narrow to show its line's x-height, such as a page number, takes its line's)."""
    rows = np.nonzero(ink.max(axis=1) > 0.5)[0]
    if band is None:
        if len(rows) == 0:
            return None
        band = (rows[0], rows[-1] + 1)
    y0, y1 = band
    binary = ink[y0:y1] > 0.5
    p = binary.sum(axis=1)
    if p.max() == 0:
        return None
    first, last = core_rows(p) if core is None else core
    xh = max(2.0, last + 1 - first)
    top = y0 + first - ASCEND * xh
    bottom = y0 + last + 1 + DESCEND * xh
    cols = np.nonzero(binary.any(axis=0))[0]
    left, right = cols[0] - PAD * xh, cols[-1] + 1 + PAD * xh
    return _resample(ink, band, top, bottom, left, right)


def _resample(ink, band, top, bottom, left, right):
    h, w = ink.shape
    t, b, l, r = int(math.floor(top)), int(math.ceil(bottom)), int(math.floor(left)), int(math.ceil(right))
    canvas = np.zeros((b - t, r - l), np.float32)
    sy0, sy1 = max(t, band[0]), min(b, band[1])
    sx0, sx1 = max(l, 0), min(r, w)
    canvas[sy0 - t:sy1 - t, sx0 - l:sx1 - l] = ink[sy0:sy1, sx0:sx1]
    scale = HEIGHT / canvas.shape[0]
    out_w = max(4, int(math.ceil(canvas.shape[1] * scale / 4)) * 4)
    img = Image.fromarray(canvas).resize((out_w, HEIGHT), Image.BILINEAR)
    return np.asarray(img, np.float32).clip(0, 1)


def gray_to_ink(gray):
    """uint8 gray (255 = paper) -> ink in [0, 1] by the line's own paper and ink levels."""
    g = gray.astype(np.float32)
    bg, fg = np.percentile(g, 90), np.percentile(g, 2)
    if bg - fg < 16:
        return np.zeros_like(g)
    return ((bg - g) / (bg - fg)).clip(0, 1)


def render_line(rng, text, font_path, em, degrade, features=None):
    """Draws `text` at `em` px (OpenType `features`, e.g. ["onum"], through raqm), degrades it like a
    scan when asked, returns (gray uint8, band)."""
    f = load_font(font_path, em)
    width = int(f.getlength(text)) + 2 * em
    height = 3 * em
    paper = rng.randint(215, 255) if degrade else 255
    ink = rng.randint(0, 70) if degrade else 0
    img = Image.new("L", (width, height), paper)
    ImageDraw.Draw(img).text((em, em), text, font=f, fill=ink, features=features)
    if degrade:
        img = _degrade(rng, img, em, paper)
    gray = np.asarray(img)
    return gray


def _degrade(rng, img, em, paper):
    if rng.random() < 0.7:
        img = img.rotate(rng.uniform(-0.6, 0.6), resample=Image.BILINEAR, fillcolor=paper)
    if rng.random() < 0.6:
        img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.2, 0.9) * max(1.0, em / 28)))
    if rng.random() < 0.3:  # a coarser scan: down and up again
        s = rng.uniform(0.5, 0.85)
        w, h = img.size
        img = img.resize((max(8, int(w * s)), max(8, int(h * s))), Image.BILINEAR).resize((w, h), Image.BILINEAR)
    a = np.asarray(img, np.float32)
    if rng.random() < 0.5:
        a = a + np.random.default_rng(rng.randrange(1 << 30)).normal(0, rng.uniform(2, 12), a.shape)
    img = Image.fromarray(a.clip(0, 255).astype(np.uint8))
    if rng.random() < 0.5:
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=rng.randint(40, 90))
        img = Image.open(io.BytesIO(buf.getvalue())).convert("L")
    return img


def sample_text(rng, corpus, mono):
    r = rng.random()
    if r < 0.08:  # random strings and numbers: the model has to read, not guess
        pool = ASCII[1:] if rng.random() < 0.5 else "0123456789.,-/:% "
        return "".join(rng.choice(pool) for _ in range(rng.randint(4, 40))).strip() or "0"
    text = corpus.line(rng, 3 if r < 0.25 else 12, 90 if mono else 80)
    if r > 0.95:
        text = text.upper()
    return text


def sample(rng, corpus, families, family=None, degrade=None):
    """One training line: (normalised [HEIGHT, W] float32 array, text) or None if it drew nothing."""
    family = family or rng.choice(sorted(families))
    style = rng.choices(("regular", "bold", "italic", "bolditalic"), (0.6, 0.18, 0.16, 0.06))[0]
    path = font_file(families, family, style)
    text = sample_text(rng, corpus, family in families and "Mono" in family)
    ok = set(ASCII) | supported_extras(path)
    text = "".join(ch for ch in text if ch in ok).strip()
    if not text:
        return None
    em = int(round(math.exp(rng.uniform(math.log(12), math.log(64)))))
    degrade = rng.random() < 0.5 if degrade is None else degrade
    # Old-style figures (onum) in a third of the lines with digits, in the families that have them
    # (Carlito, FreeSerif, Latin Modern, TeX Gyre, Noto, Open Sans, Libertine): real documents set
    # in such faces (EB Garamond's default figures) otherwise read 0 as o and 1 as I.
    features = ["onum"] if any(c.isdigit() for c in text) and rng.random() < 0.33 else None
    gray = render_line(rng, text, path, em, degrade, features)
    ink = gray_to_ink(gray)
    x = crop_line(ink)
    if x is None:
        return None
    return x, text
