"""Figures on pages: an evaluation set from many toolchains, and its scoring (precision and recall of
figure boxes at IoU >= 0.5).

    /usr/bin/python3 tools/train/mini4/figures.py make --out train-work/figures [--seed 2] [--docs-per-tool 4]
    /usr/bin/python3 tools/train/mini4/figures.py eval --set train-work/figures --folio build/folio \
        --model models/folio-mini-ocr-3 [--scan] [--tesseract] [--json out.json]

`make` composes short documents: paragraphs of held-out man pages (corpus.is_held_out, as
realdocs.py) with figures between them, each with a caption ("Figure N: ..."): plots drawn by
gnuplot (lines, points, bars, filled curves; PNG, and PDF for LaTeX), photographs (scikit-image's
sample photographs and GNOME's backgrounds, from Debian's python3-skimage and gnome-backgrounds
packages, unpacked with `apt-get download` into SET/photos: never installed), diagrams (boxes,
arrows and labels) and screenshots (windows and terminals) drawn with PIL. Each document is
typeset by one of TOOLS (LaTeX one or two columns, LibreOffice from .odt and .docx, DocBook
through FOP, WeasyPrint from pandoc's HTML) twice: as written, and with every figure file replaced
by a blank one of the same size, so both have the same layout. A figure's truth box is a region of
the pixels the two renders differ in (its ink: axes, labels and curves, the photograph). Pages
without figures are kept too (a figure found there is a false one). Scans as realdocs.write_scan.

Scoring (`eval`): a reader's figure boxes (folio: JSON blocks labelled "image"; tesseract: hOCR
`ocr_photo` / `ocr_image` areas) matched one to one to the truth boxes, greedily by IoU; a match at
IoU >= 0.5 is a hit. Precision = hits / found, recall = hits / truth, per toolchain and kind.
Nothing is trained on this set.
"""
import argparse
import collections
import glob
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image, ImageDraw, ImageFont

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mini3"))
sys.path.insert(0, os.path.join(HERE, "..", "mini2"))
import realdocs  # noqa: E402
import typeset  # noqa: E402
from eval_pages import page_count  # noqa: E402

KINDS = ("plot", "photo", "diagram", "screenshot")
TRUTH_DPI = 100
IOU = 0.5
FONTS = sorted(glob.glob("/usr/share/fonts/truetype/dejavu/*.ttf")) + sorted(glob.glob("/usr/share/fonts/truetype/liberation*/*.ttf"))
MONO = [f for f in FONTS if "Mono" in f]
PHOTO_NAMES = ("astronaut", "coffee", "chelsea", "camera", "rocket", "motorcycle_left", "motorcycle_right", "moon",
               "hubble_deep_field", "retina", "coins", "immunohistochemistry", "ihc", "cell", "grass", "gravel", "brick",
               "horse", "page_photo")


# ---------------------------------------------------------------- figures


def _words(rng, pool, n):
    return " ".join(rng.choice(pool) for _ in range(n))


def plot(rng, base, words, vector):
    """A gnuplot chart: PNG (and a PDF of the same size in inches when `vector`)."""
    w_in, h_in = rng.uniform(4.0, 6.5), rng.uniform(2.6, 4.2)
    kind = rng.choice(["lines", "points", "bars", "filled", "lines"])
    funcs = ["sin(x)", "cos(x)*exp(-x/8)", "x**2/30", "log(x+11)", "sqrt(x+10)", "atan(x)", "sin(x)/ (abs(x)+1)", "tanh(x/3)"]
    lines = [f'set title "{_words(rng, words, rng.randint(2, 5)).title()}"' if rng.random() < 0.6 else "unset title",
             f'set xlabel "{_words(rng, words, rng.randint(1, 2))}"', f'set ylabel "{_words(rng, words, 1)}"',
             "set grid" if rng.random() < 0.5 else "unset grid",
             rng.choice(["set key top right", "set key bottom left", "unset key", "set key outside"]),
             "set xrange [-10:10]", "set samples 200"]
    if kind == "bars":
        n = rng.randint(4, 12)
        data = "\n".join(f"{i} {rng.uniform(1, 20):.2f}" for i in range(n))
        lines += ["set style fill solid 0.6", "set boxwidth 0.7", f"set xrange [-1:{n}]", "set yrange [0:*]",
                  f"plot '-' using 1:2 with boxes title \"{_words(rng, words, 1)}\"", data, "e"]
    elif kind == "points":
        pts = "\n".join(f"{rng.gauss(0, 4):.2f} {rng.gauss(0, 2):.2f}" for _ in range(rng.randint(30, 150)))
        lines += [f"plot '-' with points pt {rng.randint(1, 7)} title \"{_words(rng, words, 1)}\"", pts, "e"]
    else:
        chosen = rng.sample(funcs, rng.randint(1, 3))
        style = "filledcurves y1=0" if kind == "filled" else f"lines lw {rng.choice([1, 2, 3])}"
        lines += ["plot " + ", ".join(f'{f} with {style} title "{_words(rng, words, 1)}"' for f in chosen)]
    body = "\n".join(lines) + "\n"
    dpi = rng.choice([100, 150])
    png = base + ".png"
    subprocess.run(["gnuplot"], input=(f"set terminal pngcairo size {int(w_in * dpi)},{int(h_in * dpi)} font 'DejaVu Sans,{rng.randint(9, 13)}'\n"
                                       f"set output '{png}'\n" + body).encode(), check=True, capture_output=True)
    files = {"png": png}
    if vector:
        pdf = base + ".pdf"
        subprocess.run(["gnuplot"], input=(f"set terminal pdfcairo size {w_in:.2f}in,{h_in:.2f}in font 'DejaVu Sans,{rng.randint(7, 10)}'\n"
                                           f"set output '{pdf}'\n" + body).encode(), check=True, capture_output=True)
        files["pdf"] = pdf
    return files


def _photo_pool(set_dir):
    d = os.path.join(set_dir, "photos")
    x = os.path.join(d, "x")
    if not os.path.isdir(x):
        os.makedirs(d, exist_ok=True)
        subprocess.run(["apt-get", "download", "python3-skimage", "gnome-backgrounds"], cwd=d, check=True, capture_output=True)
        for deb in glob.glob(os.path.join(d, "*.deb")):
            subprocess.run(["dpkg-deb", "-x", deb, x], check=True)
    pool = []
    for p in sorted(glob.glob(os.path.join(x, "usr/lib/python3/dist-packages/skimage/data/*"))):
        if os.path.splitext(os.path.basename(p))[0] in PHOTO_NAMES:
            pool.append(p)
    pool += sorted(glob.glob(os.path.join(x, "usr/share/backgrounds/gnome/*.webp")))
    return pool


def photo(rng, base, pool):
    img = Image.open(rng.choice(pool)).convert("RGB")
    w, h = img.size
    cw, ch = int(w * rng.uniform(0.6, 1.0)), int(h * rng.uniform(0.6, 1.0))
    x0, y0 = rng.randint(0, w - cw), rng.randint(0, h - ch)
    img = img.crop((x0, y0, x0 + cw, y0 + ch))
    scale = rng.uniform(500, 900) / max(cw, ch)
    img = img.resize((max(8, int(cw * scale)), max(8, int(ch * scale))), Image.LANCZOS)
    if rng.random() < 0.3:
        img = img.convert("L").convert("RGB")
    img.save(base + ".png", dpi=(150, 150))
    return {"png": base + ".png"}


def _font(rng, size, mono=False):
    return ImageFont.truetype(rng.choice(MONO if mono else FONTS), size)


def _arrow(d, a, b, width, colour):
    d.line([a, b], fill=colour, width=width)
    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    for s in (-0.45, 0.45):
        d.line([b, (b[0] - 14 * math.cos(ang + s), b[1] - 14 * math.sin(ang + s))], fill=colour, width=width)


def diagram(rng, base, words):
    """Boxes with labels joined by arrows, in rows: a flow or block diagram."""
    W, H = rng.randint(700, 1100), rng.randint(350, 650)
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    rows, cols = rng.randint(1, 3), rng.randint(2, 4)
    font = _font(rng, rng.randint(16, 24))
    colour = rng.choice([(0, 0, 0), (30, 60, 140), (90, 90, 90)])
    fill = rng.choice([None, (230, 238, 250), (245, 245, 220), (235, 235, 235)])
    centres = []
    for r in range(rows):
        for c in range(cols):
            cx, cy = int((c + 0.5) * W / cols), int((r + 0.5) * H / rows)
            bw, bh = int(W / cols * rng.uniform(0.45, 0.7)), int(H / rows * rng.uniform(0.3, 0.5))
            box = (cx - bw // 2, cy - bh // 2, cx + bw // 2, cy + bh // 2)
            if rng.random() < 0.3:
                d.ellipse(box, outline=colour, width=3, fill=fill)
            else:
                d.rounded_rectangle(box, radius=rng.choice([0, 8, 16]), outline=colour, width=3, fill=fill)
            label = _words(rng, words, rng.randint(1, 2))
            tw = d.textlength(label, font=font)
            d.text((cx - tw / 2, cy - font.size / 2), label, fill=colour, font=font)
            centres.append((cx, cy, bw, bh))
    for i in range(len(centres) - 1):
        (ax, ay, aw, ah), (bx, by, bw, bh) = centres[i], centres[i + 1]
        if ay == by:
            _arrow(d, (ax + aw // 2, ay), (bx - bw // 2, by), 3, colour)
        else:
            _arrow(d, (ax, ay + ah // 2), (bx, by - bh // 2), 3, colour)
    img.save(base + ".png", dpi=(150, 150))
    return {"png": base + ".png"}


def screenshot(rng, base, words, code_lines):
    """A window (title bar, menu, a panel of text and buttons) or a terminal."""
    W, H = rng.randint(700, 1100), rng.randint(400, 700)
    terminal = rng.random() < 0.5
    bg = rng.choice([(20, 20, 20), (40, 42, 54), (0, 43, 54)]) if terminal else (246, 246, 246)
    fg = rng.choice([(220, 220, 220), (170, 255, 170), (238, 232, 213)]) if terminal else (20, 20, 20)
    img = Image.new("RGB", (W, H), bg)
    d = ImageDraw.Draw(img)
    d.rectangle((0, 0, W - 1, 34), fill=(200, 200, 205))
    d.text((12, 7), _words(rng, words, rng.randint(2, 4)).title(), fill=(30, 30, 30), font=_font(rng, 18))
    for k, c in enumerate([(230, 80, 70), (240, 190, 60), (90, 190, 90)]):
        d.ellipse((W - 90 + 26 * k, 10, W - 74 + 26 * k, 26), fill=c)
    font = _font(rng, rng.randint(14, 18), mono=terminal)
    y = 46
    if not terminal:
        menu = "   ".join(rng.choice(["File", "Edit", "View", "Tools", "Help", "Options", "Window"]) for _ in range(5))
        d.text((12, y), menu, fill=(40, 40, 40), font=_font(rng, 16))
        y += 32
        d.rectangle((10, y, W - 10, H - 60), fill="white", outline=(160, 160, 160))
        y += 8
    while y < H - (70 if not terminal else 24):
        line = rng.choice(code_lines)[:int(W / (font.size * 0.62)) - 4] if terminal else _words(rng, words, rng.randint(3, 9))
        d.text((20, y), ("$ " if terminal and rng.random() < 0.3 else "") + line, fill=fg, font=font)
        y += int(font.size * 1.45)
    if not terminal:
        for k, label in enumerate(rng.sample(["OK", "Cancel", "Apply", "Help", "Close"], 2)):
            bx = W - 120 * (k + 1)
            d.rounded_rectangle((bx, H - 48, bx + 100, H - 14), radius=6, fill=(225, 225, 230), outline=(120, 120, 120))
            d.text((bx + 30, H - 41), label, fill=(20, 20, 20), font=_font(rng, 16))
    img.save(base + ".png", dpi=(150, 150))
    return {"png": base + ".png"}


def blank_copy(path, out, colour="white"):
    """A file of `path`'s kind and size filled with one colour: a PNG, or a PDF page."""
    if path.endswith(".png"):
        im = Image.open(path)
        Image.new("RGB", im.size, colour).save(out, dpi=im.info.get("dpi", (72, 72)))
    else:
        box = re.search(rb"/MediaBox\s*\[\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", open(path, "rb").read())
        w, h = float(box.group(3)) - float(box.group(1)), float(box.group(4)) - float(box.group(2))
        Image.new("RGB", (max(1, round(w)), max(1, round(h))), colour).save(out, resolution=72.0)


# ---------------------------------------------------------------- documents


def _man_paragraphs(path):
    md = subprocess.run(f"zcat '{path}' | pandoc -f man -t plain --wrap=none", shell=True, capture_output=True,
                        text=True, timeout=60).stdout
    paras = [realdocs.fold(p) for p in md.split("\n\n")]
    return [p for p in paras if len(p) > 120 and not re.search(r"[\\{}$#_^`|<>\[\]*]", p)]


def html_weasyprint(src, fmt_in, out_pdf, rng):
    css = (f"body {{ font-family: {rng.choice(['serif', 'sans-serif', 'DejaVu Serif'])}; font-size: {rng.choice([10, 11, 12])}pt; }}"
           f" @page {{ size: {rng.choice(['A4', 'letter'])}; margin: {rng.choice(['2cm', '2.5cm', '1in'])}; }}"
           " img { max-width: 100%; } figure { margin: 1em 0; text-align: center; }")
    with tempfile.TemporaryDirectory(prefix="ts_html_") as work:
        html = os.path.join(work, "doc.html")
        typeset.pandoc(src, fmt_in, "html5", html, ["-s", "--metadata", "title=Figures"])
        text = open(html).read().replace("</head>", f"<style>{css}</style></head>")
        import weasyprint
        weasyprint.HTML(string=text, base_url=work).write_pdf(out_pdf)


TOOLS = {
    "latex": lambda src, pdf, seed: typeset.typeset("latex", src, "markdown", pdf, seed),
    "latex-2col": lambda src, pdf, seed: typeset.typeset("latex-2col", src, "markdown", pdf, seed),
    "libreoffice-odt": lambda src, pdf, seed: typeset.typeset("libreoffice-odt", src, "markdown", pdf, seed),
    "libreoffice-docx": lambda src, pdf, seed: typeset.typeset("libreoffice-docx", src, "markdown", pdf, seed),
    "docbook-fop": lambda src, pdf, seed: typeset.typeset("docbook-fop", src, "markdown", pdf, seed),
    "weasyprint": lambda src, pdf, seed: html_weasyprint(src, "markdown", pdf, random.Random(seed)),
}


def compose(rng, name, paras, words, code_lines, photos, fig_dir, vector, two_columns):
    """A markdown document of paragraphs and figures; returns its text and the figures' files."""
    out, figs, n = ["# " + _words(rng, words, 3).title(), ""], [], 0
    k = 0
    while k < len(paras):
        for _ in range(rng.randint(1, 4)):
            if k < len(paras):
                out += [paras[k], ""]
                k += 1
        if k >= len(paras):
            break
        n += 1
        kind = rng.choice(KINDS)
        base = os.path.abspath(os.path.join(fig_dir, f"{name}-fig{n}"))
        if kind == "plot":
            files = plot(rng, base, words, vector)
        elif kind == "photo":
            files = photo(rng, base, photos)
        elif kind == "diagram":
            files = diagram(rng, base, words)
        else:
            files = screenshot(rng, base, words, code_lines)
        path = files.get("pdf") if vector and "pdf" in files and rng.random() < 0.5 else files["png"]
        caption = f"Figure {n}: " + _words(rng, words, rng.randint(3, 9)).capitalize()
        # (pandoc's LaTeX takes a width in % of \textwidth: both columns in a two-column layout)
        width = rng.choice([50, 60, 70, 80, 90]) // (2 if two_columns else 1)
        out += [f"![{caption}]({path}){{width={width}%}}", ""]
        figs.append({"kind": kind, "file": path})
    return "\n".join(out), figs


def diff_regions(a, b, page_w, radius=None):
    """Boxes (x0, y0, x1, y1, in pixels) of the regions where two renders of a page differ, pixels
    closer than `radius` (default 1.5% of the page width) joined."""
    diff = (np.abs(a.astype(np.int16) - b.astype(np.int16)) > 24)
    if not diff.any():
        return []
    r = radius or max(2, int(page_w * 0.015))
    ys, xs = np.nonzero(diff)
    grid = np.zeros(((a.shape[0] + r - 1) // r, (a.shape[1] + r - 1) // r), bool)
    grid[ys // r, xs // r] = True
    boxes = []
    seen = np.zeros_like(grid)
    for (gy, gx) in zip(*np.nonzero(grid)):
        if seen[gy, gx]:
            continue
        stack, cells = [(gy, gx)], []
        seen[gy, gx] = True
        while stack:
            y, x = stack.pop()
            cells.append((y, x))
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    ny, nx = y + dy, x + dx
                    if 0 <= ny < grid.shape[0] and 0 <= nx < grid.shape[1] and grid[ny, nx] and not seen[ny, nx]:
                        seen[ny, nx] = True
                        stack.append((ny, nx))
        cy = [c[0] for c in cells]
        cx = [c[1] for c in cells]
        y0, y1, x0, x1 = min(cy) * r, (max(cy) + 1) * r, min(cx) * r, (max(cx) + 1) * r
        sub = diff[y0:y1, x0:x1]
        yy, xx = np.nonzero(sub)
        boxes.append((x0 + int(xx.min()), y0 + int(yy.min()), x0 + int(xx.max()) + 1, y0 + int(yy.max()) + 1))
    return boxes


def _render(pdf, page, dpi, prefix):
    subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", "-f", str(page), "-l", str(page), "-singlefile", pdf, prefix], check=True)
    return np.asarray(Image.open(prefix + ".pgm"))


def _frames(filled, blank):
    """The rectangles a page's figures occupy: where the copy with figures filled black is dark and
    the blank copy is not (figures never touch, so each is one region)."""
    mask = (filled < 64) & (blank > 192)
    return diff_regions(mask.astype(np.uint8) * 255, np.zeros_like(mask, np.uint8), mask.shape[1], radius=1)


def add_document(manifest, name, tool, md, figs, out, seed):
    """Typesets `md` with `tool` three times (as written, figures blank, figures black): the figures'
    places are the black copy's rectangles, their truth boxes the ink the written copy has there."""
    work = os.path.join(out, "src", name)
    variants = {"doc": md}
    for colour in ("white", "black"):
        d = os.path.abspath(os.path.join(work, colour))
        os.makedirs(d, exist_ok=True)
        text = md
        for f in figs:
            b = os.path.join(d, os.path.basename(f["file"]))
            blank_copy(f["file"], b, colour)
            text = text.replace(f["file"], b)
        variants[colour] = text
    pdfs = {}
    try:
        for key, text in variants.items():
            src = os.path.join(work, key + ".md")
            open(src, "w").write(text)
            pdfs[key] = os.path.join(out, "docs", name + ".pdf") if key == "doc" else os.path.join(work, key + ".pdf")
            TOOLS[tool](src, pdfs[key], seed)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        err = getattr(e, "stderr", b"") or b""
        print(f"{name}: {tool} failed: {err.decode('utf-8', 'replace')[-300:] if isinstance(err, bytes) else err}", flush=True)
        return
    n = page_count(pdfs["doc"])
    if any(page_count(p) != n for p in pdfs.values()):
        print(f"{name}: a blank copy typesets to another page count; left out", flush=True)
        return
    pages = []
    scan_dir = os.path.join(out, "scans", name)
    os.makedirs(scan_dir, exist_ok=True)
    for p in range(1, n + 1):
        r = {k: _render(pdf, p, TRUTH_DPI, os.path.join(work, "r_" + k)) for k, pdf in pdfs.items()}
        if len({v.shape for v in r.values()}) != 1:
            print(f"{name}: page {p} differs in size between the copies; left out", flush=True)
            return
        h, w = r["doc"].shape
        ink = np.abs(r["doc"].astype(np.int16) - r["white"].astype(np.int16)) > 24
        boxes = []
        for x0, y0, x1, y1 in _frames(r["black"], r["white"]):
            yy, xx = np.nonzero(ink[y0:y1, x0:x1])
            if len(xx) and (x1 - x0) * (y1 - y0) > 0.002 * w * h:
                boxes.append([(x0 + int(xx.min())) / w, (y0 + int(yy.min())) / h, (x0 + int(xx.max()) + 1) / w,
                              (y0 + int(yy.max()) + 1) / h])
        dpi = realdocs.write_scan(pdfs["doc"], p, random.Random(f"{seed}:scan:{p}"), os.path.join(scan_dir, f"{p:03d}.jpg"))
        pages.append({"page": p, "figures": boxes, "scan_dpi": dpi})
    kinds = collections.Counter(f["kind"] for f in figs)
    manifest["documents"].append({"name": name, "tool": tool, "pages": pages, "kinds": dict(kinds),
                                  "figure_files": [f["file"] for f in figs]})
    print(f"{name}: {n} pages, {sum(len(p['figures']) for p in pages)} figure boxes of {len(figs)} figures ({dict(kinds)})", flush=True)


def make(a):
    out = a.out
    for d in ("docs", "scans", "src", "figs"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    man_path = os.path.join(out, "manifest.json")
    manifest = json.load(open(man_path)) if os.path.exists(man_path) else {"documents": []}
    done = {d["name"] for d in manifest["documents"]}
    rng = random.Random(a.seed)
    man, _ = realdocs._held_out_sources()
    rng.shuffle(man)
    photos = _photo_pool(out)
    code_lines = [ln for p in glob.glob("/usr/include/*.h")[:200] for ln in open(p, errors="replace").read().split("\n")
                  if 20 < len(ln.strip()) < 90]
    for tool in TOOLS:
        for k in range(a.docs_per_tool):
            name = f"{tool}-{k + 1:02d}"
            doc_rng = random.Random(f"{a.seed}:{name}")
            paras = []
            while len(paras) < 10 and man:
                paras += _man_paragraphs(man.pop()[1])
            if name in done or not paras:
                continue
            words = [w for p in paras for w in re.findall(r"[a-z]{4,12}", p)] or ["figure"]
            md, figs = compose(doc_rng, name, paras[:doc_rng.randint(8, 16)], words, code_lines, photos,
                               os.path.join(out, "figs"), tool.startswith("latex"), tool.endswith("2col"))
            add_document(manifest, name, tool, md, figs, out, f"{a.seed}:{name}")
            json.dump(manifest, open(man_path, "w"), indent=1)
    print(f"{len(manifest['documents'])} documents, {sum(len(d['pages']) for d in manifest['documents'])} pages in {out}")


# ---------------------------------------------------------------- eval


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match(found, truth):
    """Hits of a one-to-one greedy matching by IoU (>= IOU)."""
    pairs = sorted(((iou(f, t), i, j) for i, f in enumerate(found) for j, t in enumerate(truth)), reverse=True)
    used_f, used_t, hits = set(), set(), 0
    for v, i, j in pairs:
        if v < IOU:
            break
        if i not in used_f and j not in used_t:
            used_f.add(i), used_t.add(j)
            hits += 1
    return hits


def folio_figures(a, inputs):
    """Per input, folio's figure boxes as fractions of the page."""
    with tempfile.TemporaryDirectory(prefix="fig_eval_") as tmp:
        js = os.path.join(tmp, "out.json")
        subprocess.run([a.folio, "ocr", *inputs, "--model", a.model, "--json", js, "--out", os.path.join(tmp, "out.md"),
                        "--quiet", "--threads", "2"], check=True)
        doc = json.load(open(js))
    out = []
    for p in doc["pages"]:
        w, h = p["width"], p["height"]
        out.append([[x0 / w, y0 / h, x1 / w, y1 / h]
                    for b in p["blocks"] if b.get("label") == "image" for x0, y0, x1, y1 in b.get("boxes", [])[:1]])
    return out


def tesseract_figures(image):
    """tesseract's image areas (hOCR ocr_photo / ocr_image / ocr_graphic) as fractions of the page."""
    hocr = subprocess.run(["tesseract", image, "-", "-l", "eng", "hocr"], capture_output=True, text=True).stdout
    m = re.search(r"class=.ocr_page.[^>]*bbox 0 0 (\d+) (\d+)", hocr)
    if not m:
        return []
    w, h = int(m.group(1)), int(m.group(2))
    return [[int(x0) / w, int(y0) / h, int(x1) / w, int(y1) / h]
            for x0, y0, x1, y1 in re.findall(r"class=.ocr_(?:photo|image|graphic)[^>]*bbox (\d+) (\d+) (\d+) (\d+)", hocr)]


def evaluate(a):
    manifest = json.load(open(os.path.join(a.set, "manifest.json")))
    tally = collections.defaultdict(lambda: [0, 0, 0])  # key -> found, truth, hits
    per_page = []
    t_ours = 0.0
    for d in manifest["documents"]:
        if a.only and not re.search(a.only, d["name"]):
            continue
        if a.scan:
            inputs = [os.path.join(a.set, "scans", d["name"], f"{p['page']:03d}.jpg") for p in d["pages"]]
        else:
            inputs = [os.path.join(a.set, "docs", d["name"] + ".pdf")]
        t0 = time.time()
        found = folio_figures(a, inputs)
        t_ours += time.time() - t0
        for k, p in enumerate(d["pages"]):
            f, t = found[k] if k < len(found) else [], p["figures"]
            hits = match(f, t)
            for key in ("all", d["tool"]):
                tally[key][0] += len(f)
                tally[key][1] += len(t)
                tally[key][2] += hits
            row = {"doc": d["name"], "page": p["page"], "found": len(f), "truth": len(t), "hits": hits}
            if a.tesseract:
                img = inputs[k] if a.scan else None
                if img is None:
                    img = os.path.join(tempfile.gettempdir(), "fig_tess")
                    subprocess.run(["pdftoppm", "-r", "300", "-gray", "-f", str(p["page"]), "-l", str(p["page"]), "-singlefile",
                                    inputs[0], img], check=True)
                    img += ".pgm"
                tf = tesseract_figures(img)
                th = match(tf, t)
                tally["tesseract"][0] += len(tf)
                tally["tesseract"][1] += len(t)
                tally["tesseract"][2] += th
                row["tesseract"] = [len(tf), th]
            per_page.append(row)
            if a.verbose and (hits != len(f) or hits != len(t)):
                print(f"  {d['name']} p{p['page']}: found {len(f)} truth {len(t)} hits {hits}  f={f} t={t}")
    summary = {}
    for key, (nf, nt, nh) in sorted(tally.items()):
        summary[key] = {"found": nf, "truth": nt, "hits": nh, "precision": nh / nf if nf else 1.0, "recall": nh / nt if nt else 1.0}
        print(f"{key:18s} found {nf:4d} truth {nt:4d} hits {nh:4d}  P {summary[key]['precision']:.3f}  R {summary[key]['recall']:.3f}")
    print(f"folio: {t_ours:.1f} s")
    if a.json:
        json.dump({"scan": a.scan, "summary": summary, "pages": per_page, "folio_s": t_ours}, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    m.add_argument("--seed", type=int, default=2)
    m.add_argument("--docs-per-tool", type=int, default=4)
    e = sub.add_parser("eval")
    e.add_argument("--set", required=True)
    e.add_argument("--folio", default="build/folio")
    e.add_argument("--model", default="models/folio-mini-ocr-3")
    e.add_argument("--scan", action="store_true")
    e.add_argument("--tesseract", action="store_true")
    e.add_argument("--only", default="")
    e.add_argument("--verbose", action="store_true")
    e.add_argument("--json")
    a = ap.parse_args()
    make(a) if a.cmd == "make" else evaluate(a)


if __name__ == "__main__":
    main()
