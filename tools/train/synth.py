"""Synthetic documents for the folio mini OCR model, deterministic from a seed.

A page is a fixed grid of text rows (the geometry the model's front end reads, see GEOMETRY):
headings (bold), paragraphs and simple lists, separated by blank rows, drawn with the DejaVu
fonts Debian ships (Sans, Serif, Mono; one body font and size per document). The words come from
real prose on this machine (licence texts and package documentation under /usr/share), split into
a training and a held-out set by source file, mixed with some random strings so the model cannot
get by as a language model. Light noise, blur, skew and contrast changes are optional.

Ground truth is the exact text of each row (ASCII only); a page's rows end at its last non-empty
row. `document_text` joins rows with "\n" and pages with the <page> marker.

    /usr/bin/python3 tools/train/synth.py --seed 7 --pages 3 --out /tmp/doc   # PNGs + PDF + txt
"""
import argparse
import glob
import gzip
import hashlib
import os
import random
import re
import zlib

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

# The page geometry the model is built for (mirrored in the checkpoint's config.json).
GEOMETRY = dict(width=448, height=352, margin_top=16, margin_left=8, line_pitch=32, rows=10)
PAGE_MARK = "<page>"

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
FAMILIES = {
    "sans": ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf"),
    "serif": ("DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf"),
    "mono": ("DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf"),
}
SIZES = (15, 16, 17, 18, 19, 20)
PRINTABLE = "".join(chr(c) for c in range(32, 127))

_font_cache = {}


def font(name, size):
    key = (name, size)
    if key not in _font_cache:
        _font_cache[key] = ImageFont.truetype(os.path.join(FONT_DIR, name), size)
    return _font_cache[key]


# ----------------------------------------------------------------------------- text sources

def _read(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read(400_000)
    except OSError:
        return ""
    text = raw.decode("utf-8", errors="ignore")
    text = "".join(ch if ch in PRINTABLE or ch in "\n\t" else " " for ch in text)
    return text


def source_files():
    files = sorted(glob.glob("/usr/share/common-licenses/*"))
    files += sorted(glob.glob("/usr/share/doc/*/copyright"))
    files += sorted(glob.glob("/usr/share/doc/*/README*"))
    files += sorted(glob.glob("/usr/share/doc/*/*.md*"))
    return [f for f in files if os.path.isfile(f)]


def split_of(path):
    """'heldout' for about one source in eight (by a hash of the path), else 'train'."""
    h = int(hashlib.sha1(path.encode()).hexdigest(), 16)
    return "heldout" if h % 8 == 0 else "train"


class Corpus:
    def __init__(self, split):
        self.words = []  # list of word lists, one per source
        for path in source_files():
            if split_of(path) != split:
                continue
            words = [w for w in re.split(r"\s+", _read(path)) if w]
            # Drop separator lines ("-----", "=====") and very long tokens (URLs, hashes).
            words = [w for w in words if len(w) <= 24 and not re.fullmatch(r"[-=*_#~.]{3,}", w)]
            if len(words) >= 50:
                self.words.append(words)
        if not self.words:
            raise SystemExit(f"no {split} text sources found under /usr/share")

    def stream(self, rng):
        """Endless words: runs of real prose from random places, with random strings mixed in."""
        while True:
            src = self.words[rng.randrange(len(self.words))]
            start = rng.randrange(len(src))
            for w in src[start:start + rng.randint(30, 300)]:
                r = rng.random()
                if r < 0.06:
                    yield random_word(rng)
                elif r < 0.08:
                    yield str(rng.randint(0, 99999))
                else:
                    yield w


def random_word(rng):
    alphabets = [
        "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "0123456789",
        "".join(ch for ch in PRINTABLE if ch != " "),
    ]
    a = rng.choice(alphabets)
    return "".join(rng.choice(a) for _ in range(rng.randint(1, 10)))


# ----------------------------------------------------------------------------- layout

def fill_rows(words, f, max_width, n_rows, prefix="", indent=""):
    """Packs words into at most n_rows rows no wider than max_width pixels."""
    rows = []
    line = prefix
    while len(rows) < n_rows:
        w = next(words)
        cand = (line + " " + w) if line.strip() else (line + w)
        if f.getlength(cand) <= max_width:
            line = cand
            continue
        if line.strip():
            rows.append(line)
            line = indent + w if f.getlength(indent + w) <= max_width else indent
        # A single word wider than the row is skipped.
    return rows


def layout_page(rng, words, body, bold, max_width, n_rows):
    """Rows of one page: list of (text, font). Blocks: heading, paragraph, list, separated by blanks."""
    rows = []
    while len(rows) < n_rows:
        room = n_rows - len(rows)
        kind = rng.choices(["heading", "paragraph", "list"], weights=[2, 6, 2])[0]
        if kind == "heading":
            n = rng.randint(1, 6)
            text = " ".join(next(words) for _ in range(n))
            if rng.random() < 0.3:
                text = f"{rng.randint(1, 20)}. " + text
            while text and bold.getlength(text) > max_width:
                text = text.rsplit(" ", 1)[0] if " " in text else ""
            if text:
                rows.append((text, bold))
        elif kind == "paragraph":
            for t in fill_rows(words, body, max_width, min(room, rng.randint(1, 6))):
                rows.append((t, body))
        else:
            style = rng.choice(["- ", "* ", "num"])
            for i in range(min(room, rng.randint(2, 4))):
                prefix = f"{i + 1}. " if style == "num" else style
                for t in fill_rows(words, body, max_width, 1, prefix=prefix):
                    rows.append((t, body))
        if len(rows) < n_rows and rng.random() < 0.7:
            rows.append(("", body))
    return rows[:n_rows]


def render_page(rng, rows, noise=True):
    """noise: False (clean), "light" (contrast, jitter, skew, blur) or True (also pixel noise)."""
    g = GEOMETRY
    bg = rng.randint(215, 255) if noise else 255
    fg = rng.randint(0, 70) if noise else 0
    img = Image.new("L", (g["width"], g["height"]), bg)
    d = ImageDraw.Draw(img)
    for i, (text, f) in enumerate(rows):
        if not text:
            continue
        top = g["margin_top"] + i * g["line_pitch"]
        # Centre the font's ascent+descent box in the row, with a little jitter.
        asc, desc = f.getmetrics()
        y = top + (g["line_pitch"] - (asc + desc)) // 2 + (rng.randint(-2, 2) if noise else 0)
        x = g["margin_left"] + (rng.randint(0, 4) if noise else 0)
        d.text((x, y), text, font=f, fill=fg)
    if noise:
        if rng.random() < 0.5:
            img = img.rotate(rng.uniform(-0.4, 0.4), resample=Image.BILINEAR, fillcolor=bg)
        if rng.random() < 0.4:
            img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.2, 0.7)))
        if noise is True and rng.random() < 0.5:
            a = np.asarray(img, dtype=np.float32)
            a += np.random.default_rng(rng.randrange(1 << 30)).normal(0, rng.uniform(2, 10), a.shape)
            img = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
    return img


def trim(rows_text):
    """A page's ground-truth rows end at its last non-empty row."""
    while rows_text and not rows_text[-1]:
        rows_text.pop()
    return rows_text


def make_document(seed, n_pages, corpus, noise=True, family=None, size=None):
    """Returns (images, pages) with pages = list of row-text lists (trimmed)."""
    rng = random.Random(seed)
    family = family or rng.choice(sorted(FAMILIES))
    size = size or rng.choice(SIZES)
    body = font(FAMILIES[family][0], size)
    bold = font(FAMILIES[family][1], size)
    words = corpus.stream(rng)
    g = GEOMETRY
    max_width = g["width"] - 2 * g["margin_left"] - 8
    images, pages = [], []
    for p in range(n_pages):
        n_rows = g["rows"]
        if p == n_pages - 1 and rng.random() < 0.5:
            n_rows = rng.randint(1, g["rows"])  # a last page often ends early
        rows = layout_page(rng, words, body, bold, max_width, n_rows)
        images.append(render_page(rng, rows, noise))
        pages.append(trim([t for t, _ in rows]))
    return images, pages


def document_text(pages):
    return PAGE_MARK.join("".join(r + "\n" for r in rows) for rows in pages)


def write_pdf(images, path):
    """A PDF with one gray image per page, losslessly (Flate) compressed, one point per pixel, so a
    renderer at 72 dpi gives back the generator's pixels. (Pillow's own PDF writer uses JPEG.)"""
    objs = []  # object bodies; object i + 1

    def add(body):
        objs.append(body)
        return len(objs)

    catalog = add(None)
    pages_obj = add(None)
    kids = []
    for im in images:
        im = im.convert("L")
        w, h = im.size
        data = zlib.compress(im.tobytes(), 9)
        img = add(b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
                  b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n" % (w, h, len(data))
                  + data + b"\nendstream")
        content = b"q %d 0 0 %d 0 0 cm /Im0 Do Q" % (w, h)
        cont = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << /XObject << /Im0 %d 0 R >> >> "
                        b"/Contents %d 0 R >>" % (pages_obj, w, h, img, cont)))
    objs[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    objs[pages_obj - 1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids) +
                           b"] /Count %d >>" % len(kids))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, catalog, xref)
    with open(path, "wb") as f:
        f.write(bytes(out))


def write_document(out_dir, images, pages, name="doc"):
    os.makedirs(out_dir, exist_ok=True)
    for i, im in enumerate(images):
        im.save(os.path.join(out_dir, f"{name}-p{i + 1:03d}.png"))
    write_pdf(images, os.path.join(out_dir, f"{name}.pdf"))
    with open(os.path.join(out_dir, f"{name}.txt"), "w") as f:
        f.write(document_text(pages))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pages", type=int, default=1)
    ap.add_argument("--split", default="heldout", choices=["train", "heldout"])
    ap.add_argument("--no-noise", action="store_true")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="doc")
    a = ap.parse_args()
    imgs, pgs = make_document(a.seed, a.pages, Corpus(a.split), noise=not a.no_noise)
    write_document(a.out, imgs, pgs, a.name)
    print(document_text(pgs))
