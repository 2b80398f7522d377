"""The real-document evaluation set of folio-mini-ocr 3: real toolchains, held-out sources, scans.

    /usr/bin/python3 tools/train/mini3/realdocs.py make --out train-work/realdocs
    /usr/bin/python3 tools/train/mini3/realdocs.py eval --set train-work/realdocs --folio build/folio \
        --model models/folio-mini-ocr-2 --json realdocs-folio.json [--tesseract] [--scan]

`make` builds the set from what Debian packages install (the packages in tools/train/mini3/README.md):
held-out sources (corpus.is_held_out: man pages' roff and the markdown files under /usr/share/doc,
never in any training text) typeset by each toolchain in typeset.py (none of them used for
training pages), plus the PDFs Debian's documentation packages ship (typeset by their authors'
own toolchains). From each document up to --pages-per-doc pages with text are chosen and copied
into SET/pages/NAME.pdf; each chosen page is also written as a scan (SET/scans/NAME/NNN.jpg: 200 or
300 DPI, turned up to 2 degrees, blurred, noise, JPEG 50-70). SET/manifest.json holds per document
its toolchain, sources, pages, whether code is shaded and whether it is set in two columns, and the
strings of each class (code lines, inline monospace, identifiers with underscores, table cells,
headers and footers) found on the chosen pages.

Truth: the PDF's text layer in content-stream order (`pdftotext -raw`), which for the two-column
documents typeset here is the source's reading order (a column, then the next), not pdftotext's
layout guess. Scoring (`eval`): both sides ASCII-folded (ligatures, quotes and dashes mapped,
accents dropped), markdown syntax taken off folio's output, whitespace runs made one space; CER =
edit distance / truth length per page, summed over pages; word F1 over the bags of words; per class,
the edit distance of each class string to its best-matching stretch of the document's output over the
string's length. Pages/s are whole commands (process start and PDF rendering included).
"""
import argparse
import collections
import glob
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "mini2"))
import code_corpus  # noqa: E402
import corpus as corpus_mod  # noqa: E402
import typeset  # noqa: E402
from eval_folio import markdown_to_text  # noqa: E402
from eval_pages import page_count, render  # noqa: E402
from metrics import edit_distance, semi_global  # noqa: E402

CLASSES = ("shaded_code", "code", "inline_mono", "underscore_ids", "table", "furniture")
IDENT = re.compile(r"[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_?|_[A-Za-z][A-Za-z0-9_]+")
_FOLD = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u2212": "-",
         "\u2010": "-", "\u2011": "-", "\u00a0": " ", "\ufb01": "fi", "\ufb02": "fl", "\ufb00": "ff", "\ufb03": "ffi",
         "\ufb04": "ffl", "\u2022": "", "\u00b7": "", "\u2026": "...", "\u00ad": "", "\t": " ", "\u25cf": "", "\u25e6": ""}


LEADER = re.compile(r" ?(?:\. ?){4,}")
LINE_HYPHEN = re.compile(r"([A-Za-z])- ([A-Za-z])")
LETTER_HYPHEN = re.compile(r"(?<=[A-Za-z])-(?=[A-Za-z])")


def fold(text):
    """ASCII folding applied to truth and to every reader's output alike. A dot leader (a table of
    contents' run of four or more dots, spaced or not) becomes "...": how many dots fill a line is
    the typesetter's choice, not text, and counted dot by dot one TOC page outweighed ten of prose.
    Hyphens between letters go, with the space after a line end's hyphen ("exist- ing" and
    "auto-healing" become "existing", "autohealing"): whether a reader joins a word split at a line
    end is the writer's choice (folio's joins it, the text layer and tesseract keep the break)."""
    text = "".join(_FOLD.get(c, c) for c in text)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if 32 <= ord(c) < 127 or c == "\n")
    text = " ".join(LEADER.sub(" ... ", " ".join(text.split())).split())
    return LETTER_HYPHEN.sub("", LINE_HYPHEN.sub(r"\1\2", text))


# ---------------------------------------------------------------- sources


def _held_out_sources():
    man = []
    for sec in ("1", "3", "5", "8"):
        for p in sorted(glob.glob(f"/usr/share/man/man{sec}/*.gz")):
            name = "man:" + os.path.basename(p)[:-3]
            if not os.path.islink(p) and corpus_mod.is_held_out(name) and os.path.getsize(p) > 2500:
                man.append((name, p, "man"))
    md = []
    for p in sorted(glob.glob("/usr/share/doc/*/*.md") + glob.glob("/usr/share/doc/*/*.md.gz")):
        name = "doc:" + p[len("/usr/share/doc/"):]
        if corpus_mod.is_held_out(name) and os.path.getsize(p) > 1500:
            md.append((name, p, "gfm"))
    return man, md


def _unpack(path, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.basename(path)
    dst = os.path.join(out_dir, base[:-3] if base.endswith(".gz") else base)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f, open(dst, "wb") as g:
        g.write(f.read())
    return dst


def _pdf_bytes(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read()


def _font_package(path):
    """True when the package that owns `path` installs font files: its PDFs are specimen sheets and
    encoding charts (Latin Modern's, TeX Gyre's), not documents people read or OCR."""
    owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True).stdout.split(":")[0]
    files = subprocess.run(["dpkg", "-L", owner], capture_output=True, text=True).stdout if owner else ""
    return re.search(r"/fonts/.*\.(otf|ttf|pfb|t1)$", files, re.M) is not None


def _shipped_pdfs():
    """The PDFs documentation packages ship, each content once (lmodern and fonts-lmodern, groff and
    groff-base ship the same files), in path order; none from a font package."""
    out, seen = [], set()
    for p in sorted(glob.glob("/usr/share/doc/**/*.pdf", recursive=True) + glob.glob("/usr/share/doc/**/*.pdf.gz", recursive=True)):
        # (a dangling link: tex-gyre's specimen sheets point into a package that is not installed)
        if os.path.exists(p) and os.path.getsize(p) > 20_000 and not _font_package(p):
            digest = hashlib.sha1(_pdf_bytes(p)).hexdigest()
            if digest not in seen:
                seen.add(digest)
                out.append(p)
    return out


# ---------------------------------------------------------------- composed technical documents


def _code_files():
    """Held-out code files (code_corpus's split: none of them gave a training line)."""
    return [p for p in code_corpus._sources() if code_corpus.corpus_mod.is_held_out("code:" + p)]


def _listing(rng, path, lo=5, hi=14, width=64):
    """A run of 5-14 consecutive non-blank ASCII lines of one file, `width` columns at most (a
    listing wider than the text block would run off the page or into the next column and still be
    in the text layer)."""
    try:
        text = open(path, "rb").read(60_000).decode("ascii")
    except (OSError, UnicodeDecodeError):
        return []
    rows = [r.replace("\t", "    ").rstrip() for r in text.splitlines()]
    runs, cur = [], []
    for r in rows:
        if r.strip() and len(r) <= width and "```" not in r:
            cur.append(r)
        else:
            if len(cur) >= lo:
                runs.append(cur)
            cur = []
    if len(cur) >= lo:
        runs.append(cur)
    if not runs:
        return []
    run = rng.choice(runs)
    start = rng.randrange(max(1, len(run) - hi + 1))
    return run[start:start + rng.randint(lo, hi)]


def _mark_identifiers(paragraph, rng, extra):
    """The paragraph with its identifier-like words in backticks, and now and then a held-out
    identifier added in a short clause, as manuals write them."""
    words = []
    for w in paragraph.split():
        core = w.rstrip(".,;:")
        if "`" not in w and code_corpus._is_identifier(core) and re.fullmatch(code_corpus.IDENT, core):
            w = f"`{core}`" + w[len(core):]
        words.append(w)
    if extra and rng.random() < 0.6:
        ids = [rng.choice(extra) for _ in range(rng.randint(1, 3))]
        words.append("See " + ", ".join(f"`{i}`" for i in ids) + ".")
    return " ".join(words)


def held_out_identifiers(code_files, rng, n_files=300):
    found = set()
    for p in rng.sample(code_files, min(n_files, len(code_files))):
        try:
            text = open(p, "rb").read(60_000).decode("ascii")
        except (OSError, UnicodeDecodeError):
            continue
        found.update(t for t in code_corpus.IDENT.findall(text) if code_corpus._is_identifier(t) and len(t) <= 28)
    return sorted(found)


def compose_code_doc(rng, man_sources, code_files, identifiers, target_chars=20_000, width=64):
    """Markdown of a manual about code: held-out man pages' prose (pandoc's man reader, plain
    text), identifier-like words set as inline code, held-out identifiers in short clauses, and
    a listing from a held-out code file every two to four paragraphs."""
    md, chars, since = ["# " + os.path.basename(man_sources[0][1]).split(".")[0].replace("_", " ")], 0, 0
    for name, path, _ in man_sources:
        body = subprocess.run(f"zcat '{path}' | pandoc -f man -t plain --wrap=none", shell=True,
                              capture_output=True, text=True, timeout=60).stdout
        for para in body.split("\n\n"):
            para = " ".join(fold(para).split())
            if len(para) < 40:
                continue
            md.append(_mark_identifiers(para, rng, identifiers))
            chars += len(para)
            since += 1
            if since >= rng.randint(2, 4):
                lines = _listing(rng, rng.choice(code_files), width=width)
                if lines:
                    md.append("```\n" + "\n".join(lines) + "\n```")
                    chars += sum(map(len, lines))
                since = 0
            if chars > target_chars:
                return "\n\n".join(md) + "\n"
    return "\n\n".join(md) + "\n"


# ---------------------------------------------------------------- pages and truth


def page_text(pdf, page, mode="-raw"):
    return subprocess.run(["pdftotext", mode, "-f", str(page), "-l", str(page), pdf, "-"],
                          capture_output=True, text=True).stdout


def furniture_lines(pdf, page):
    """Text lines in the top or bottom 8% of the page (running headers, footers, page numbers)."""
    html = subprocess.run(["pdftotext", "-bbox", "-f", str(page), "-l", str(page), pdf, "-"],
                          capture_output=True, text=True).stdout
    m = re.search(r'<page width="([\d.]+)" height="([\d.]+)"', html)
    if not m:
        return []
    h = float(m.group(2))
    rows = collections.defaultdict(list)
    for x0, y0, y1, w in re.findall(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)</word>', html):
        y0, y1 = float(y0), float(y1)
        if y1 < 0.08 * h or y0 > 0.92 * h:
            rows[round(y0 / 3)].append((float(x0), w))
    return [" ".join(w for _, w in sorted(r)) for _, r in sorted(rows.items())]


def choose_pages(pdf, n, rng, min_chars=300):
    good = [p for p in range(1, page_count(pdf) + 1) if len(fold(page_text(pdf, p))) >= min_chars]
    if len(good) <= n:
        return good
    return sorted(rng.sample(good, n))


def extract_pages(pdf, pages, out_pdf):
    tmp = tempfile.mkdtemp(prefix="rd_pages_")
    parts = []
    for p in pages:
        part = os.path.join(tmp, f"{p:04d}.pdf")
        subprocess.run(["pdfseparate", "-f", str(p), "-l", str(p), pdf, part], check=True)
        parts.append(part)
    if len(parts) == 1:
        shutil.copy(parts[0], out_pdf)
    else:
        subprocess.run(["pdfunite", *parts, out_pdf], check=True)
    shutil.rmtree(tmp, ignore_errors=True)


def write_scan(pdf, page, rng, out_jpg):
    """A page as a scan: 200 or 300 DPI, turned by up to 2 degrees, blurred, noise, JPEG 50-70."""
    from PIL import Image, ImageFilter
    dpi = rng.choice([200, 300])
    pgm = render(pdf, page, dpi, out_jpg[:-4] + "_src")
    img = Image.open(pgm).convert("L")
    os.remove(pgm)
    img = img.rotate(rng.uniform(-2.0, 2.0), resample=Image.BILINEAR, fillcolor=255, expand=False)
    img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.0) * dpi / 200))
    a = np.asarray(img, np.float32)
    a = a + np.random.default_rng(rng.randrange(1 << 30)).normal(0, rng.uniform(3, 10), a.shape)
    Image.fromarray(a.clip(0, 255).astype(np.uint8)).save(out_jpg, format="JPEG", quality=rng.randint(50, 70))
    return dpi


# ---------------------------------------------------------------- class strings from the source


def _inline_str(inlines):
    out = []
    for el in inlines:
        t, c = el["t"], el.get("c")
        if t == "Str":
            out.append(c)
        elif t in ("Space", "SoftBreak", "LineBreak"):
            out.append(" ")
        elif t == "Code":
            out.append(c[1])
        elif isinstance(c, list):
            inner = c[1] if t in ("Link", "Span", "Quoted", "Cite", "Image") else c
            if isinstance(inner, list) and inner and isinstance(inner[0], dict):
                out.append(_inline_str(inner))
    return "".join(out)


def class_strings(ast):
    """{class: [strings]} from a pandoc AST: code lines, inline code, table cells, identifiers."""
    found = collections.defaultdict(list)

    def walk(x):
        if isinstance(x, dict):
            t, c = x.get("t"), x.get("c")
            if t == "CodeBlock":
                found["code"] += [ln.strip() for ln in c[1].split("\n") if len(ln.strip()) >= 4]
                return
            if t == "Code":
                found["inline_mono"].append(c[1])
                return
            if t == "Table":
                cells = []

                def cell_walk(y):
                    if isinstance(y, dict) and y.get("t") in ("Plain", "Para"):
                        cells.append(_inline_str(y["c"]))
                    elif isinstance(y, dict):
                        cell_walk(y.get("c"))
                    elif isinstance(y, list):
                        for z in y:
                            cell_walk(z)
                cell_walk(c)
                found["table"] += [s for s in cells if len(s.strip()) >= 2]
                return
            if t == "Str":
                found["underscore_ids"] += IDENT.findall(c)
            walk(c)
        elif isinstance(x, list):
            for y in x:
                walk(y)
    walk(ast["blocks"])
    for code in found["code"] + found["inline_mono"]:
        found["underscore_ids"] += IDENT.findall(code)
    return found


def on_pages(strings, truth_pages, min_len=3):
    """The strings (folded) whose text occurs on the chosen pages, with their page index."""
    joined = [fold(t) for t in truth_pages]
    out, seen = [], set()
    for s in strings:
        f = fold(s)
        if len(f) < min_len or f in seen:
            continue
        for i, t in enumerate(joined):
            if f in t:
                out.append([f, i])
                seen.add(f)
                break
    return out


# ---------------------------------------------------------------- make


def make(a):
    out = a.out
    for d in ("docs", "pages", "scans", "src"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    man_path = os.path.join(out, "manifest.json")
    manifest = json.load(open(man_path)) if os.path.exists(man_path) else {"documents": []}
    if a.redo:
        manifest["documents"] = [d for d in manifest["documents"] if not re.search(a.redo, d["name"])]
    done = {d["name"] for d in manifest["documents"]}
    rng = random.Random(a.seed)
    man, md = _held_out_sources()
    rng.shuffle(man)
    rng.shuffle(md)
    pools = {"man": man, "gfm": md}
    for tool in typeset.TOOLS:
        for k in range(a.docs_per_tool):
            kind = ("gfm", "man")[k % 2] if pools["gfm"] else "man"
            name = f"{tool}-{k + 1:02d}"
            # the same draw whether or not the document is made now, so a resumed run picks the same sources
            chosen, chars = [], 0
            while chars < a.min_source_chars and pools[kind]:
                src_name, path, fmt = pools[kind].pop()
                chosen.append((src_name, path, fmt))
                chars += os.path.getsize(path) * (3 if path.endswith(".gz") else 1)
            if name in done or not chosen:
                continue
            srcs = [_unpack(p, os.path.join(out, "src", name)) for _, p, _ in chosen]
            fmt = chosen[0][2]
            joined = os.path.join(out, "src", name, "joined." + ("md" if fmt == "gfm" else "man"))
            with open(joined, "wb") as g:
                for s in srcs:
                    g.write(open(s, "rb").read() + b"\n\n")
            typeset_document(manifest, name, tool, joined if fmt == "gfm" else srcs[0], fmt,
                             [s for s, _, _ in chosen[:1 if fmt != "gfm" else None]], a, out)
    code_files = _code_files()
    idents = held_out_identifiers(code_files, random.Random(f"{a.seed}:identifiers"))
    for tool in typeset.TOOLS:
        name, chosen = f"{tool}-code-01", [pools["man"].pop() for _ in range(3) if pools["man"]]
        if name in done or not chosen:
            continue
        doc_rng = random.Random(f"{a.seed}:{name}")
        joined = os.path.join(out, "src", name, "joined.md")
        os.makedirs(os.path.dirname(joined), exist_ok=True)
        with open(joined, "w") as g:
            g.write(compose_code_doc(doc_rng, chosen, code_files, idents, width=34 if typeset.TOOLS[tool][3] else 64))
        typeset_document(manifest, name, tool, joined, "gfm", [n for n, _, _ in chosen], a, out)
    shipped = {p for p in _shipped_pdfs() if re.search(a.shipped, p)}
    manifest["documents"] = [d for d in manifest["documents"] if d["tool"] != "shipped" or d["sources"][0] in shipped]
    json.dump(manifest, open(man_path, "w"), indent=1)
    done = {d["name"] for d in manifest["documents"]}
    for k, path in enumerate(sorted(shipped)):
        name = "shipped-" + re.sub(r"[^A-Za-z0-9]+", "-", path[len("/usr/share/doc/"):].split("/")[0])
        if name in done or any(d["name"] == name for d in manifest["documents"]):
            continue
        pdf = os.path.join(out, "docs", name + ".pdf")
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f, open(pdf, "wb") as g:
                g.write(f.read())
        else:
            shutil.copy(path, pdf)
        add_document(manifest, name, "shipped", [path], pdf, {}, None, False, a, out)
        json.dump(manifest, open(man_path, "w"), indent=1)
    n_pages = sum(len(d["pages"]) for d in manifest["documents"])
    print(f"{len(manifest['documents'])} documents, {n_pages} pages in {out}")


def typeset_document(manifest, name, tool, src, fmt, sources, a, out):
    """Typesets one source with one toolchain into the set (a failing toolchain is reported and
    the document left out) and saves the manifest."""
    pdf = os.path.join(out, "docs", name + ".pdf")
    try:
        typeset.typeset(tool, src, fmt, pdf, f"{a.seed}:{name}")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        err = getattr(e, "stderr", b"") or b""
        print(f"{name}: {tool} failed: {err.decode('utf-8', 'replace')[-400:]}", flush=True)
        return
    add_document(manifest, name, tool, sources, pdf, class_strings(typeset.source_ast(src, fmt)),
                 typeset.TOOLS[tool][2], typeset.TOOLS[tool][3], a, out)
    json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"), indent=1)


def add_document(manifest, name, tool, sources, pdf, strings, shaded, two_col, a, out):
    rng = random.Random(f"{a.seed}:pages:{name}")
    pages = choose_pages(pdf, a.pages_per_doc, rng)
    if not pages:
        print(f"{name}: no page with text", flush=True)
        return
    sub = os.path.join(out, "pages", name + ".pdf")
    extract_pages(pdf, pages, sub)
    truth = [page_text(sub, i + 1) for i in range(len(pages))]
    for i, t in enumerate(truth):
        with open(os.path.join(out, "pages", f"{name}.{i + 1:03d}.txt"), "w") as f:
            f.write(t)
    if shaded is None:  # a shipped PDF: no source to read classes from; identifiers from its text
        strings = {"underscore_ids": [w for t in truth for w in IDENT.findall(t)]}
    classes = {}
    for cls in ("code", "inline_mono", "underscore_ids", "table"):
        classes[cls] = on_pages(strings.get(cls, []), truth, 4 if cls == "code" else 3)
    if shaded:
        classes["shaded_code"], classes["code"] = classes["code"], []
    classes["furniture"] = [[fold(s), i] for i in range(len(pages)) for s in furniture_lines(sub, i + 1) if len(fold(s)) >= 1]
    scan_dir = os.path.join(out, "scans", name)
    os.makedirs(scan_dir, exist_ok=True)
    dpis = [write_scan(sub, i + 1, random.Random(f"{a.seed}:scan:{name}:{i}"), os.path.join(scan_dir, f"{i + 1:03d}.jpg"))
            for i in range(len(pages))]
    manifest["documents"].append({"name": name, "tool": tool, "sources": sources, "pages": pages, "scan_dpi": dpis,
                                  "shaded_code": bool(shaded), "two_columns": two_col, "classes": classes})
    print(f"{name}: {len(pages)} pages of {page_count(pdf)}, " +
          ", ".join(f"{k} {len(v)}" for k, v in classes.items() if v), flush=True)


# ---------------------------------------------------------------- eval


def split_pages(md, n):
    parts = re.split(r"^<!-- page \d+ -->$", md, flags=re.M)
    parts = [p for p in parts if p.strip()] if len(parts) > 1 else [md]
    return (parts + [""] * n)[:n]


def run_folio(a, inputs, n):
    with tempfile.NamedTemporaryFile(suffix=".md") as f:
        t0 = time.time()
        subprocess.run([a.folio, "ocr", *inputs, "--model", a.model, "--out", f.name, "--quiet", "--threads",
                        str(a.threads)], check=True)
        secs = time.time() - t0
        return split_pages(open(f.name, encoding="utf-8").read(), n), secs


def run_tesseract(a, images, keys):
    """tesseract's text of each image and the seconds it took; with --tesseract-cache each page's
    text and time are kept under the page's key (its document and the hash of its PDF, page, scan or
    born) and reused."""
    texts, secs = [], 0.0
    for img, key in zip(images, keys):
        cached = os.path.join(a.tesseract_cache, f"{key}.psm{a.psm}.json") if a.tesseract_cache else ""
        if cached and os.path.exists(cached):
            c = json.load(open(cached))
            texts.append(c["text"])
            secs += c["seconds"]
            continue
        t0 = time.time()
        texts.append(subprocess.run(["tesseract", img, "-", "--psm", a.psm], capture_output=True, text=True,
                                    env={**os.environ, "OMP_THREAD_LIMIT": str(a.threads)}).stdout)
        secs += time.time() - t0
        if cached:
            os.makedirs(a.tesseract_cache, exist_ok=True)
            json.dump({"text": texts[-1], "seconds": time.time() - t0}, open(cached, "w"))
    return texts, secs


class Tally:
    def __init__(self):
        self.err = self.chars = self.match = self.hyp_words = self.ref_words = self.pages = 0
        self.secs = 0.0
        self.cls = collections.defaultdict(lambda: [0, 0])

    def add_page(self, hyp, ref):
        self.err += edit_distance(hyp, ref)
        self.chars += len(ref)
        h, r = collections.Counter(hyp.split()), collections.Counter(ref.split())
        self.match += sum((h & r).values())
        self.hyp_words += sum(h.values())
        self.ref_words += sum(r.values())
        self.pages += 1

    def summary(self):
        p = self.match / max(1, self.hyp_words)
        r = self.match / max(1, self.ref_words)
        out = {"cer": self.err / max(1, self.chars), "word_f1": 2 * p * r / max(1e-9, p + r), "pages": self.pages,
               "chars": self.chars, "seconds": round(self.secs, 2), "pages_per_s": self.pages / max(1e-9, self.secs)}
        out["classes"] = {k: {"cer": e / max(1, n), "chars": n} for k, (e, n) in sorted(self.cls.items())}
        return out


def evaluate(a):
    manifest = json.load(open(os.path.join(a.set, "manifest.json")))
    readers = ["folio"] + (["tesseract"] if a.tesseract else [])
    tallies = {r: Tally() for r in readers}
    by_tool = {r: collections.defaultdict(Tally) for r in readers}
    tmp = tempfile.mkdtemp(prefix="rd_eval_")
    for doc in manifest["documents"]:
        if a.only and not re.search(a.only, doc["name"]):
            continue
        n = len(doc["pages"])
        pdf = os.path.join(a.set, "pages", doc["name"] + ".pdf")
        truth = [fold(open(os.path.join(a.set, "pages", f"{doc['name']}.{i + 1:03d}.txt")).read()) for i in range(n)]
        scans = [os.path.join(a.set, "scans", doc["name"], f"{i + 1:03d}.jpg") for i in range(n)]
        outputs = {}
        outputs["folio"] = run_folio(a, scans if a.scan else [pdf], n)
        if a.tesseract:
            digest = hashlib.sha1(open(pdf, "rb").read()).hexdigest()[:12]  # a remade document is new
            keys = [f"{doc['name']}.{digest}.{i + 1:03d}.{'scan' if a.scan else 'born'}" for i in range(n)]
            images = scans if a.scan else [render(pdf, i + 1, 300, os.path.join(tmp, f"p{i}")) for i in range(n)]
            outputs["tesseract"] = run_tesseract(a, images, keys)
        line = doc["name"]
        for r in readers:
            pages, secs = outputs[r]
            hyp = [fold(markdown_to_text(p)) if r == "folio" else fold(p) for p in pages]
            for t in (tallies[r], by_tool[r]["two_columns" if doc["two_columns"] else doc["tool"]]):
                t.secs += secs
                for h, ref in zip(hyp, truth):
                    t.add_page(h, ref)
            whole = " ".join(hyp)
            for cls, items in doc["classes"].items():
                for s, _ in items:
                    tallies[r].cls[cls][0] += semi_global(s, whole)
                    tallies[r].cls[cls][1] += len(s)
            e = sum(edit_distance(h, ref) for h, ref in zip(hyp, truth)) / max(1, sum(len(x) for x in truth))
            line += f"  {r} {e:.2%}"
        print(line, flush=True)
        if a.show:
            for h, ref in zip([fold(markdown_to_text(p)) for p in outputs["folio"][0]], truth):
                print("REF :", ref[:a.show], "\nOURS:", h[:a.show])
    result = {"set": a.set, "scan": a.scan, "model": a.model, "threads": a.threads, "readers": {}}
    for r in readers:
        s = tallies[r].summary()
        s["by_tool"] = {k: {key: v.summary()[key] for key in ("cer", "word_f1", "pages")}
                        for k, v in sorted(by_tool[r].items()) if v.pages}
        result["readers"][r] = s
        print(f"{r}: CER {s['cer']:.2%}  word F1 {s['word_f1']:.3f}  {s['pages']} pages  {s['pages_per_s']:.2f} pages/s")
        print("   " + "  ".join(f"{k} {v['cer']:.2%} ({v['chars']})" for k, v in s["classes"].items()))
    if a.json:
        json.dump(result, open(a.json, "w"), indent=1)
    shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--docs-per-tool", type=int, default=2)
    m.add_argument("--pages-per-doc", type=int, default=5)
    m.add_argument("--min-source-chars", type=int, default=25_000)
    m.add_argument("--redo", default="", help="a regular expression: documents to make again")
    m.add_argument("--shipped", default="", help="a regular expression: the shipped PDFs taken (default all; "
                   "texlive's documentation packages ship hundreds)")
    e = sub.add_parser("eval")
    e.add_argument("--set", required=True)
    e.add_argument("--folio", default="build/folio")
    e.add_argument("--model", default="models/folio-mini-ocr-2")
    e.add_argument("--threads", type=int, default=2)
    e.add_argument("--tesseract", action="store_true")
    e.add_argument("--psm", default="3")
    e.add_argument("--tesseract-cache", default="", help="a folder keeping tesseract's text and time per page")
    e.add_argument("--scan", action="store_true")
    e.add_argument("--only", default="", help="a regular expression over document names")
    e.add_argument("--show", type=int, default=0)
    e.add_argument("--json", default="")
    a = ap.parse_args()
    make(a) if a.cmd == "make" else evaluate(a)


if __name__ == "__main__":
    main()
