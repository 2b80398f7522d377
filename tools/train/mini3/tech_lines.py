"""Training lines of technical documents for folio-mini-ocr 3 (mini2's lines.py draws the rest).

Four kinds, each what real manuals hold and mini2's lines never showed:
  code     a source line in a monospace face, on a grey or tinted box in most lines (listings);
  mixed    a prose line in a proportional face with 1-3 words replaced by identifiers set in a
           monospace face on the same baseline (BZ2_bzopen, os.path.join, --output), sometimes
           each on its own shaded box (inline code in HTML-made documents);
  idlist   identifiers in a list ("BZ2_bzopen, BZ2_bzread, BZ2_bzwrite"), after a few prose words;
  shaded   a prose line on a shaded box (notes, table headers);
  toc      a table of contents' entry: a section number, a title, a dot leader (spaced as TeX sets it
           or dense as FOP does) and a page number.
A code line is now and then a rule of punctuation (----- name -----, =====, *****, #####), as code
comments and plain-text listings draw them, and in half the lines syntax-highlighted as documents
print it in gray: comments, strings, punctuation and keywords in tones between ink and paper
(commas and parentheses faint, comments in a light italic), the tones drawn per line.
Monospace faces come from fonts.MONO, proportional ones from the rest of the family set passed
in. The monospace run's size is 0.85-1.05 of the prose's, so a line holds two x-heights.

A line goes through what a page goes through in the engine: drawn (like a scan when asked), its
background removed (line_finder.remove_background, with the window a page of this type size gets:
0.6-0.9 em), its ink scaled (lines.gray_to_ink) and cropped (lines.crop_line).
"""
import math
import os
import re
import sys

import numpy as np
from PIL import Image, ImageDraw

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mini2"))
import fonts  # noqa: E402
import lines  # noqa: E402
from line_finder import remove_background  # noqa: E402

KINDS = ("code", "mixed", "idlist", "shaded", "toc")
KIND_WEIGHTS = (0.3, 0.3, 0.12, 0.12, 0.16)
STYLES = ("regular", "bold", "italic", "bolditalic")


def _split(families):
    mono = sorted(f for f in families if f in fonts.MONO)
    prop = sorted(f for f in families if f not in fonts.MONO)
    return mono, prop


def _font(rng, families, names, weights=(0.75, 0.15, 0.08, 0.02)):
    family = rng.choice(names)
    return fonts.font_file(families, family, rng.choices(STYLES, weights)[0])


def _keep(text, path):
    ok = set(lines.ASCII) | lines.supported_extras(path)
    return "".join(ch for ch in text if ch in ok)


def _mixed_runs(rng, prose, code, mono_path, prop_path, count):
    """A prose line with `count` words replaced by identifiers: runs of (text, font path). A word's
    trailing punctuation stays in the prose face; a space next to prose is set in the prose face."""
    words = prose.line(rng, 20, 80).split()
    slots = set(rng.sample(range(len(words)), min(count, len(words))))
    tokens = []  # (text, path, space before)
    for i, w in enumerate(words):
        if i in slots:
            tail = w[len(w.rstrip(".,;:)")):]
            tokens.append((code.identifier(rng), mono_path, i > 0))
            if tail:
                tokens.append((tail, prop_path, False))
        else:
            tokens.append((w, prop_path, i > 0))
    runs = []
    for text, path, space in tokens:
        if space:
            if runs and (runs[-1][1] == prop_path or path == runs[-1][1]):
                runs[-1] = (runs[-1][0] + " ", runs[-1][1])
            else:
                text = " " + text
        if runs and runs[-1][1] == path:
            runs[-1] = (runs[-1][0] + text, path)
        else:
            runs.append((text, path))
    return runs


def _rule_line(rng, prose):
    ch = rng.choice("-=*#~_.+")
    left, right = ch * rng.randint(3, 30), ch * rng.randint(0, 30)
    if rng.random() < 0.5:
        return left + right
    name = " ".join(prose.line(rng, 3, 20).split()[:2])
    opener, closer = rng.choice((("", ""), ("/* ", " */"), ("# ", ""), ("// ", "")))
    return f"{opener}{left} {name} {right}{closer}".strip()


def _toc_line(rng, prose):
    title = " ".join(w.capitalize() if rng.random() < 0.5 else w for w in prose.line(rng, 6, 40).split())
    depth = rng.choice((0, 1, 1, 2, 2, 3))
    number = ".".join(str(rng.randint(1, 19)) for _ in range(depth)) + ("." if depth and rng.random() < 0.5 else "")
    dots = rng.randint(4, 70)
    leader = " ".join("." * dots) if rng.random() < 0.6 else "." * dots
    page = str(rng.randint(1, 480)) if rng.random() < 0.9 else rng.choice(("i", "ii", "iii", "iv", "v", "vii", "ix", "xi"))
    return f"{number} {title} {leader} {page}".strip()


HIGHLIGHT_TOKEN = re.compile(r"(#.*$|//.*$|/\*.*?(?:\*/|$)|\"[^\"]*\"|'[^']*'|\w+|\s+|[^\w\s])")
KEYWORDS = set("def class return if else elif for while in import from as with try except raise int void char "
               "const static struct unsigned long double float bool true false None True False self public "
               "private namespace template typename include define auto let var function new delete".split())


def _highlighted(rng, line, regular, italic, bold):
    """A code line as a syntax highlighter sets it: runs (text, font path, tone), tone the share of
    the way from ink to paper (0: ink). Each line draws its own theme: comments lighter and often
    italic, strings and punctuation lighter or not, keywords bold or darker."""
    theme = {"comment": rng.uniform(0.25, 0.6), "string": rng.uniform(0.0, 0.45), "punct": rng.choice((0.0, rng.uniform(0.2, 0.55))),
             "keyword": rng.uniform(0.0, 0.3), "word": rng.choice((0.0, 0.0, rng.uniform(0.05, 0.3)))}
    comment_font = italic if rng.random() < 0.6 else regular
    keyword_font = bold if rng.random() < 0.4 else regular
    runs = []
    for tok in HIGHLIGHT_TOKEN.findall(line):
        if tok.startswith(("#", "//", "/*")):
            runs.append((tok, comment_font, theme["comment"]))
        elif tok[0] in "\"'":
            runs.append((tok, regular, theme["string"]))
        elif tok in KEYWORDS:
            runs.append((tok, keyword_font, theme["keyword"]))
        elif tok[0].isalnum() or tok[0] == "_":
            runs.append((tok, regular, theme["word"]))
        elif tok.isspace():
            runs.append((tok, regular, 0.0))
        else:
            runs.append((tok, regular, theme["punct"]))
    return runs


def _runs(rng, kind, prose, code, families):
    """[(text, font path, tone)] and the shading: None, 'line' or 'runs'."""
    mono_names, prop_names = _split(families)
    mono_path = _font(rng, families, mono_names, (0.85, 0.1, 0.05, 0.0))
    prop_path = _font(rng, families, prop_names)
    if kind == "code":
        shade = "line" if rng.random() < 0.6 else None
        if rng.random() < 0.12:
            return [(_rule_line(rng, prose), mono_path, 0.0)], shade
        if rng.random() < 0.5:  # syntax highlighting, in gray: tokens of several tones and faces
            family = rng.choice(mono_names)
            faces = [fonts.font_file(families, family, st) for st in ("regular", "italic", "bold")]
            return _highlighted(rng, code.line(rng), *faces), shade
        return [(code.line(rng), mono_path, 0.0)], shade
    if kind == "toc":
        return [(_toc_line(rng, prose), mono_path if rng.random() < 0.1 else prop_path, 0.0)], None
    if kind == "shaded":
        return [(prose.line(rng, 12, 80), prop_path, 0.0)], "line"
    if kind == "idlist":
        ids = ", ".join(code.identifier(rng) for _ in range(rng.randint(2, 4)))
        lead = " ".join(prose.line(rng, 3, 30).split()[:rng.randint(0, 4)])
        runs = ([(lead + " ", prop_path, 0.0)] if lead else []) + [(ids, mono_path, 0.0)]
        return runs, ("runs" if rng.random() < 0.2 else None)
    runs = _mixed_runs(rng, prose, code, mono_path, prop_path, rng.randint(1, 3))
    r = rng.random()
    return [(t, p, 0.0) for t, p in runs], ("runs" if r < 0.25 else "line" if r < 0.35 else None)


def render_runs(rng, runs, em, mono_scale, shade, degrade):
    """Draws the runs on one baseline (monospace runs at mono_scale x em) with the shading asked
    for, degraded like a scan when asked; returns gray uint8."""
    sized = [(t, lines.load_font(p, max(6, int(round(em * (mono_scale if p in _MONO_FILES else 1.0))))))
             for t, p, _ in runs]
    widths = [f.getlength(t) for t, f in sized]
    width, height = int(sum(widths)) + 2 * em, 3 * em
    paper = rng.randint(215, 255) if degrade else 255
    ink = rng.randint(0, 70) if degrade else 0
    shade_level = max(ink + 90, paper - rng.randint(10, 60))
    img = Image.new("L", (width, height), paper)
    d = ImageDraw.Draw(img)
    base = int(round(1.9 * em))
    if shade == "line":
        full = rng.random() < 0.5  # a listing's middle line: the box runs above and below
        y0 = 0 if full else base - int(rng.uniform(1.0, 1.4) * em)
        y1 = height if full else base + int(rng.uniform(0.35, 0.7) * em)
        x0, x1 = int(rng.uniform(0, 0.8) * em), width - int(rng.uniform(0, 0.8) * em)
        d.rectangle((x0, y0, x1, y1), fill=shade_level)
    x = float(em)
    for (t, f), w, (_, p, tone) in zip(sized, widths, runs):
        if shade == "runs" and p in _MONO_FILES:
            pad = 0.15 * em
            d.rectangle((int(x - pad), base - int(1.0 * em), int(x + w + pad), base + int(0.3 * em)), fill=shade_level)
        background = shade_level if shade else paper
        d.text((x, base), t, font=f, fill=int(round(ink + tone * (background - ink))), anchor="ls")
        x += w
    if degrade:
        img = lines._degrade(rng, img, em, paper)
    return np.asarray(img)


_MONO_FILES = {p for fam in fonts.MONO if fam in fonts.TRAIN for p in fonts.TRAIN[fam].values()}


def sample(rng, prose, code, families=None, degrade=None, kind=None):
    """One training line: (normalised [HEIGHT, W] float32 array, text) or None if it drew nothing."""
    families = families or fonts.TRAIN
    kind = kind or rng.choices(KINDS, KIND_WEIGHTS)[0]
    runs, shade = _runs(rng, kind, prose, code, families)
    runs = [(_keep(t, p), p, tone) for t, p, tone in runs]
    text = " ".join("".join(t for t, _, _ in runs).split())
    if not text:
        return None
    em = int(round(math.exp(rng.uniform(math.log(12), math.log(56)))))
    degrade = rng.random() < 0.5 if degrade is None else degrade
    gray = render_runs(rng, runs, em, rng.uniform(0.85, 1.05), shade, degrade)
    window = max(9, 2 * int(em * rng.uniform(0.3, 0.45)) + 1)
    x = lines.crop_line(lines.gray_to_ink(remove_background(gray, window)))
    if x is None:
        return None
    return x, text
