"""Contents pages and indexes: an evaluation set from many toolchains and shipped PDFs, and its scoring.

    /usr/bin/python3 tools/train/mini4/contents.py make --out train-work/contents
    /usr/bin/python3 tools/train/mini4/contents.py eval --set train-work/contents --folio build/folio \
        --model models/folio-mini-ocr-3 [--scan] [--tesseract] [--paddle] [--json out.json]

`make` composes manuals from held-out sources (corpus.is_held_out: man pages never in any training
text), each man page a chapter with its sections and subsections, and typesets each with a table of
contents or an index by one of TOOLS; it adds the contents and index pages of the PDFs
documentation packages ship. From each document the first run of entry pages in its front half and
the last run in its back half (up to --pages-per-doc each) are copied to SET/pages/NAME.pdf and
written as scans (realdocs.write_scan). SET/manifest.json holds per document its toolchain,
sources, pages, each page's kind (contents or index, entry_kind) and truth entries.

Truth (page_entries): the entries of `pdftotext -layout`, read per column where a page's entries
stand in two: a line ending in a page list (numbers and ranges, or a roman numeral) after a dot
leader, two spaces, a comma or a colon; a line with no number just after an entry and before one
is the first part of a wrapped title. Nothing is trained on this set.

Scoring (`eval`): the reader's output split into lines (markdown list, heading and table syntax
off); an output line is an entry when it ends in a page list. A truth entry is *kept* when one
output entry, matched one to one in order, has its page list and its text within ENTRY_CER
(normalised edit distance, both sides folded as realdocs.fold, leaders dropped). Also counted:
entries whose text is found but whose number is not, output lines still holding a dot leader, and
kept entries written as list items. tools/train/mini4/README.md has the details.
"""
import argparse
import collections
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mini3"))
sys.path.insert(0, os.path.join(HERE, "..", "mini2"))
import realdocs  # noqa: E402
from eval_pages import page_count  # noqa: E402
from metrics import edit_distance  # noqa: E402

MIN_ENTRIES = 5
ENTRY_SHARE = 0.5
ENTRY_CER = 0.25
# A page number: arabic, or roman (front matter), at the end of the line.
_ONE = r"(?:\d{1,4}|[ivxlcdm]{1,8}|[IVXLCDM]{1,8})"
_NUMBER = r"(?P<page>" + _ONE + r")"
# An index entry's pages: numbers and ranges, comma-separated ("12, 15–17").
_PAGES = r"(?P<page>" + _ONE + r"(?: *[,–-] *" + _ONE + r")*)"
TRUTH_ENTRY = re.compile(r"^(?P<indent> *)(?P<text>\S.*?)(?: *(?:\. ?){2,} *| {2,}|[,:] *)" + _PAGES + r" *$")
LEADER_RUN = re.compile(r"(?:\.\s?){4,}|(?:\u2026\s?){2,}|(?:\u00b7\s?){4,}")


# ---------------------------------------------------------------- truth


def truth_entries(layout_text):
    """Entries (text, page, indent) of one page's `pdftotext -layout` text."""
    entries, pending, prev_entry = [], None, False
    for line in layout_text.split("\n"):
        if not line.strip():
            continue
        m = TRUTH_ENTRY.match(line.rstrip())
        if m and re.search(r"[A-Za-z]", m.group("text")):
            text = m.group("text").strip()
            if pending is not None:
                text = pending + " " + text
            entries.append({"text": text, "page": page_list(m.group("page")), "indent": len(m.group("indent"))})
            pending, prev_entry = None, True
        else:
            # a title's first part (not an index's letter heading)
            pending = line.strip() if prev_entry and pending is None and len(line.strip()) > 2 else None
            prev_entry = False
    return entries


def page_list(pages):
    """A page field compared as the numbers and ranges it lists: spaces dropped, dashes as '-'."""
    return re.sub(r"-+", "-", re.sub(r"\s+", "", pages.replace("\u2013", "-").replace("\u2014", "-"))).lower()


def text_lines(layout_text):
    return [ln for ln in layout_text.split("\n") if re.search(r"[A-Za-z0-9]", ln)]


# Two entries side by side (an index or a change history set in two columns): `pdftotext -layout`
# interleaves the columns' lines, so the page's truth cannot be read off it.
SIDE_BY_SIDE = re.compile(r"(?:\. ?){3,} *[\w,\u2013-]+(?: [\w,\u2013-]+)* {3,}\S")


def is_contents_page(layout_text):
    lines = text_lines(layout_text)
    if sum(1 for ln in lines if SIDE_BY_SIDE.search(ln)) > 2:
        return False
    n = len(truth_entries(layout_text))
    return n >= MIN_ENTRIES and n >= ENTRY_SHARE * len(lines)


# ---------------------------------------------------------------- sources


def _man_markdown(path):
    """A man page as markdown, its headings one level down (the page's name is the chapter)."""
    md = subprocess.run(f"zcat '{path}' | pandoc -f man -t gfm --wrap=none", shell=True, capture_output=True,
                        text=True, timeout=60).stdout
    out, paras = [], 0
    for block in md.split("\n\n"):
        if block.startswith("#"):
            level = len(block) - len(block.lstrip("#"))
            out.append("#" * min(3, level + 1) + block[level:].split("\n")[0].title()[:70])
            paras = 0
        elif paras < 2 and not block.startswith(("```", "|", "<")):
            out.append(realdocs.fold(block))
            paras += 1
    return out


def compose_manual(rng, sources):
    """Markdown of a manual: each man page a chapter (its sections and subsections beneath)."""
    md = []
    for name, path, _ in sources:
        md.append("# " + os.path.basename(path).split(".")[0].replace("_", " ").replace("-", " ").capitalize())
        md.append(realdocs.fold(f"This chapter describes {os.path.basename(path).split('.')[0]}."))
        md.extend(_man_markdown(path))
    return "\n\n".join(md) + "\n"


# ---------------------------------------------------------------- toolchains with contents


def _run(cmd, cwd=None, stdin=None, timeout=300):
    r = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, timeout=timeout)
    if r.returncode != 0:
        raise subprocess.CalledProcessError(r.returncode, cmd, r.stdout, r.stderr + r.stdout[-600:])
    return r.stdout


def latex_toc(src, out_pdf, rng, docclass):
    font = rng.choice(["lmodern", "times", "palatino", "bookman", "charter", "tgheros"])
    opts = ["-s", "--toc", "-V", f"documentclass={docclass}", "-V", f"fontsize={rng.choice(['10pt', '11pt', '12pt'])}",
            "-V", f"geometry:margin={rng.choice(['2cm', '2.5cm', '1in'])}", "-V", f"fontfamily={font}"]
    if docclass in ("report", "book", "scrreprt", "scrbook"):
        opts += ["--top-level-division=chapter"]
    if rng.random() < 0.7:
        opts += ["-N"]
    with tempfile.TemporaryDirectory(prefix="toc_latex_") as work:
        _run(["pandoc", "-f", "gfm", "-t", "latex", src, "-o", os.path.join(work, "doc.tex"), *opts])
        for _ in range(2):
            _run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=work)
        shutil.copy(os.path.join(work, "doc.pdf"), out_pdf)


def _index_terms(rng, paragraph, k=2):
    """Up to k words of the paragraph worth an index entry: 7 letters or more, in lower case."""
    words = sorted({w for w in re.findall(r"\b[a-z]{7,}\b", paragraph)})
    return rng.sample(words, min(k, len(words)))


def latex_index(src, out_pdf, rng):
    """A LaTeX report with a makeindex index: terms of each paragraph, a quarter of them as
    subentries of the paragraph's first term."""
    blocks = open(src).read().split("\n\n")
    for i, b in enumerate(blocks):
        if b.startswith("#") or "\\" in b:
            continue
        terms = _index_terms(rng, b)
        marks = [f"\\index{{{terms[0]}!{t}}}" if k and rng.random() < 0.25 else f"\\index{{{t}}}" for k, t in enumerate(terms)]
        blocks[i] = b + " " + " ".join(marks)
    opts = ["-s", "--toc", "-V", "documentclass=report", "--top-level-division=chapter",
            "-V", f"fontsize={rng.choice(['10pt', '11pt', '12pt'])}", "-V", "geometry:margin=2.5cm",
            "-V", f"fontfamily={rng.choice(['lmodern', 'times', 'palatino', 'charter'])}",
            "-V", "header-includes=\\usepackage{makeidx}\\makeindex", "-V", "include-after=\\printindex"]
    with tempfile.TemporaryDirectory(prefix="toc_index_") as work:
        open(os.path.join(work, "doc.md"), "w").write("\n\n".join(blocks))
        _run(["pandoc", "-f", "markdown", "-t", "latex", "doc.md", "-o", "doc.tex", *opts], cwd=work)
        _run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=work)
        _run(["makeindex", "-q", "doc.idx"], cwd=work)
        for _ in range(2):
            _run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=work)
        shutil.copy(os.path.join(work, "doc.pdf"), out_pdf)


def texinfo_index(src, out_pdf, rng):
    """A texinfo manual with a concept index (@cindex under each heading, @printindex cp)."""
    with tempfile.TemporaryDirectory(prefix="toc_texinfo_") as work:
        _run(["pandoc", "-f", "gfm", "-t", "texinfo", "-s", src, "-o", os.path.join(work, "doc.texi")])
        rows, out = open(os.path.join(work, "doc.texi")).read().split("\n"), []
        for i, row in enumerate(rows):
            if row == "@bye":
                out += ["@node Index", "@unnumbered Index", "", "@printindex cp", ""]
            out.append(row)
            if re.match(r"@(chapter|section|subsection) ", row):
                following = " ".join(rows[i + 1:i + 12])
                out += [f"@cindex {t}" for t in _index_terms(rng, following, 3)]
        open(os.path.join(work, "doc.texi"), "w").write("\n".join(out))
        _run(["texi2pdf", "--batch", "-q", "doc.texi"], cwd=work)
        shutil.copy(os.path.join(work, "doc.pdf"), out_pdf)


def texinfo_toc(src, out_pdf, rng):
    with tempfile.TemporaryDirectory(prefix="toc_texinfo_") as work:
        _run(["pandoc", "-f", "gfm", "-t", "texinfo", "-s", "--toc", src, "-o", os.path.join(work, "doc.texi")])
        texi = open(os.path.join(work, "doc.texi")).read()
        if "@contents" not in texi:
            texi = texi.replace("@node Top", "@contents\n\n@node Top", 1)
        open(os.path.join(work, "doc.texi"), "w").write(texi)
        _run(["texi2pdf", "--batch", "-q", "doc.texi"], cwd=work)
        shutil.copy(os.path.join(work, "doc.pdf"), out_pdf)


def docbook_toc(src, out_pdf, rng):
    xsl = "/usr/share/xml/docbook/stylesheet/docbook-xsl/fo/docbook.xsl"
    params = ["--stringparam", "paper.type", rng.choice(["A4", "USletter"]),
              "--stringparam", "body.font.master", str(rng.choice([9, 10, 11])),
              "--stringparam", "body.font.family", rng.choice(["serif", "sans-serif"]),
              "--stringparam", "section.autolabel", rng.choice(["0", "1"]),
              "--stringparam", "toc.section.depth", rng.choice(["1", "2"])]
    with tempfile.TemporaryDirectory(prefix="toc_fop_") as work:
        top = rng.choice(["chapter", "section"])
        _run(["pandoc", "-f", "gfm", "-t", "docbook4", "-s", f"--top-level-division={top}", src,
              "-o", os.path.join(work, "doc.xml")])
        _run(["xsltproc", *params, "-o", os.path.join(work, "doc.fo"), xsl, os.path.join(work, "doc.xml")])
        _run(["fop", "-q", "-fo", os.path.join(work, "doc.fo"), "-pdf", out_pdf])


def groff_ms_toc(src, out_pdf, rng):
    ms = _run(["pandoc", "-f", "gfm", "-t", "ms", "-s", "--toc", src] + (["-N"] if rng.random() < 0.6 else []))
    pdf = _run(["groff", "-ms", "-k", "-Tpdf"], stdin=ms)
    with open(out_pdf, "wb") as f:
        f.write(pdf)


_WEASY_CSS = """
@page { size: %(size)s; margin: %(margin)s; @bottom-center { content: counter(page); } }
body { font-family: %(font)s; font-size: %(pt)spt; }
nav ul { list-style: none; padding-left: 0; } nav ul ul { padding-left: 1.5em; }
nav a { color: black; text-decoration: none; }
nav a::after { content: %(leader)s target-counter(attr(href url), page); }
h1 { page-break-before: always; }
"""


def weasyprint_toc(src, out_pdf, rng):
    css = _WEASY_CSS % {"size": rng.choice(["A4", "letter"]), "margin": rng.choice(["2cm", "2.5cm", "1in"]),
                        "font": rng.choice(["DejaVu Serif", "DejaVu Sans", "Liberation Serif", "Liberation Sans"]),
                        "pt": rng.choice([10, 11, 12]), "leader": rng.choice(["leader('.')", "leader(dotted)",
                                                                             "leader(' ')"])}
    with tempfile.TemporaryDirectory(prefix="toc_weasy_") as work:
        open(os.path.join(work, "style.css"), "w").write(css)
        html = _run(["pandoc", "-f", "gfm", "-t", "html5", "-s", "--toc", "--toc-depth", rng.choice(["2", "3"]),
                     "--metadata", "title=Manual", "-c", "style.css", src]).decode()
        # pandoc puts the contents in <nav id="TOC">; the template's own styles off
        html = re.sub(r"<style>.*?</style>", "", html, flags=re.S)
        open(os.path.join(work, "doc.html"), "w").write(html)
        _run(["weasyprint", "-q", os.path.join(work, "doc.html"), os.path.abspath(out_pdf)], cwd=work)


TOOLS = {
    "latex-article": lambda s, o, r: latex_toc(s, o, r, "article"),
    "latex-report": lambda s, o, r: latex_toc(s, o, r, "report"),
    "latex-scrreprt": lambda s, o, r: latex_toc(s, o, r, "scrreprt"),
    "texinfo": texinfo_toc,
    "docbook-fop": docbook_toc,
    "groff-ms": groff_ms_toc,
    "weasyprint": weasyprint_toc,
    "latex-index": latex_index,
    "texinfo-index": texinfo_index,
}


# ---------------------------------------------------------------- the set


def _crop_text(pdf, page, x, w, h):
    return subprocess.run(["pdftotext", "-layout", "-f", str(page), "-l", str(page), "-x", str(x), "-y", "0",
                           "-W", str(w), "-H", str(h), pdf, "-"], capture_output=True, text=True).stdout


def column_texts(pdf, page):
    """The page's `-layout` text per column: two when a vertical line near the middle (0.35-0.65 of
    the width) crosses no word and each side reads as entries (an index set in two columns, whose
    lines `-layout` would interleave), else the whole page's."""
    html = subprocess.run(["pdftotext", "-bbox", "-f", str(page), "-l", str(page), pdf, "-"],
                          capture_output=True, text=True).stdout
    m = re.search(r'<page width="([\d.]+)" height="([\d.]+)"', html)
    whole = [realdocs.page_text(pdf, page, "-layout")]
    if not m:
        return whole
    w, h = int(float(m.group(1))) + 1, int(float(m.group(2))) + 1
    words = [(float(a), float(b)) for a, b in re.findall(r'<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)"', html)]
    free = [x for x in range(int(0.35 * w), int(0.65 * w)) if not any(a < x < b for a, b in words)]
    if not free:
        return whole
    x = min(free, key=lambda v: abs(v - w / 2))
    halves = [_crop_text(pdf, page, 0, x, h), _crop_text(pdf, page, x, w - x, h)]
    return halves if all(_entry_page(t, MIN_ENTRIES // 2) for t in halves) else whole


def _entry_page(text, least):
    lines = text_lines(text)
    if sum(1 for ln in lines if SIDE_BY_SIDE.search(ln)) > 2:
        return False
    n = len(truth_entries(text))
    return n >= least and n >= ENTRY_SHARE * len(lines)


def page_entries(pdf, page):
    """(entries, is an entry page) of one page, read per column."""
    texts = column_texts(pdf, page)
    entries = [e for t in texts for e in truth_entries(t)]
    return entries, len(entries) >= MIN_ENTRIES and all(_entry_page(t, 1) for t in texts)


def entry_kind(entries):
    """"index" when the entries' terms are in alphabetical order (the first letters of 9 in 10
    successive pairs of the 8 or more entries set furthest out, symbols and digits skipped, do not
    go back; a subentry follows its own term's order), else "contents"."""
    out = min((e["indent"] for e in entries), default=0)
    firsts = [m.group(0).lower() for e in entries if e["indent"] <= out + 1
              for m in [re.search(r"[A-Za-z]", realdocs.fold(e["text"]))] if m]
    rising = sum(b >= a for a, b in zip(firsts, firsts[1:]))
    return "index" if len(firsts) >= 8 and rising >= 0.9 * (len(firsts) - 1) else "contents"


def entry_pages(pdf, limit):
    """[(page, where)]: the first run of entry pages in the front half ("contents") and of the last run
    in the back half ("index"), up to `limit` each; what each page is, entry_kind says."""
    n = page_count(pdf)
    found = []
    for order, kind in ((range(1, (n + 1) // 2 + 1), "contents"), (range(n, (n + 1) // 2, -1), "index")):
        run = []
        for p in order:
            if page_entries(pdf, p)[1] and all(p != q for q, _ in found):
                run.append(p)
            elif run:
                break
        if kind == "index":
            run = sorted(run)[:limit]
        found += [(p, kind) for p in run[:limit]]
    return sorted(found)


def add_document(manifest, name, tool, sources, pdf, a):
    chosen = entry_pages(pdf, a.pages_per_doc)
    if not chosen:
        print(f"{name}: no contents or index page", flush=True)
        return
    pages, kinds = [p for p, _ in chosen], [k for _, k in chosen]
    sub = os.path.join(a.out, "pages", name + ".pdf")
    realdocs.extract_pages(pdf, pages, sub)
    truth = [page_entries(sub, i + 1)[0] for i in range(len(pages))]
    kinds = [entry_kind(t) for t in truth]
    scan_dir = os.path.join(a.out, "scans", name)
    os.makedirs(scan_dir, exist_ok=True)
    dpis = [realdocs.write_scan(sub, i + 1, random.Random(f"{a.seed}:scan:{name}:{i}"),
                                os.path.join(scan_dir, f"{i + 1:03d}.jpg")) for i in range(len(pages))]
    manifest["documents"].append({"name": name, "tool": tool, "sources": sources, "pages": pages, "kinds": kinds,
                                  "scan_dpi": dpis, "entries": truth})
    print(f"{name}: {kinds.count('contents')} contents and {kinds.count('index')} index pages, "
          f"{sum(map(len, truth))} entries", flush=True)


def make(a):
    for d in ("docs", "pages", "scans", "src"):
        os.makedirs(os.path.join(a.out, d), exist_ok=True)
    man_path = os.path.join(a.out, "manifest.json")
    manifest = json.load(open(man_path)) if os.path.exists(man_path) else {"documents": []}
    done = {d["name"] for d in manifest["documents"]}
    rng = random.Random(a.seed)
    man, _ = realdocs._held_out_sources()
    rng.shuffle(man)
    for tool, fn in TOOLS.items():
        for k in range(a.docs_per_tool):
            name = f"{tool}-{k + 1:02d}"
            chosen = [man.pop() for _ in range(rng.randint(3, 7)) if man]
            if name in done or not chosen:
                continue
            doc_rng = random.Random(f"{a.seed}:{name}")
            src = os.path.join(a.out, "src", name + ".md")
            open(src, "w").write(compose_manual(doc_rng, chosen))
            pdf = os.path.join(a.out, "docs", name + ".pdf")
            try:
                fn(src, pdf, doc_rng)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
                print(f"{name}: {tool} failed: {(getattr(e, 'stderr', b'') or b'').decode('utf-8', 'replace')[-300:]}")
                continue
            add_document(manifest, name, tool, [n for n, _, _ in chosen], pdf, a)
            json.dump(manifest, open(man_path, "w"), indent=1)
    for path in realdocs._shipped_pdfs():
        name = "shipped-" + re.sub(r"[^A-Za-z0-9]+", "-", path[len("/usr/share/doc/"):].rsplit(".pdf", 1)[0])
        if name in done:
            continue
        pdf = os.path.join(a.out, "docs", name + ".pdf")
        with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f, open(pdf, "wb") as g:
            g.write(f.read())
        add_document(manifest, name, "shipped", [path], pdf, a)
        json.dump(manifest, open(man_path, "w"), indent=1)
    n = sum(len(d["pages"]) for d in manifest["documents"])
    print(f"{len(manifest['documents'])} documents, {n} contents pages, "
          f"{sum(len(e) for d in manifest['documents'] for e in d['entries'])} entries in {a.out}")


# ---------------------------------------------------------------- scoring


def norm(text):
    text = LEADER_RUN.sub(" ", realdocs.fold(text)).lower()
    return " ".join(re.sub(r"[^a-z0-9.]+", " ", text).replace(" .", " ").split()).strip(" .")


def output_lines(text):
    """A reader's output as (line text, is a list item): markdown syntax off, table cells joined."""
    out = []
    for line in text.split("\n"):
        s = line.strip()
        if not s or s.startswith(("<!--", "```")) or re.fullmatch(r"\|?(\s*:?-+:?\s*\|)+\s*", s):
            continue
        item = bool(re.match(r"^(?:[-*+]|\d+[.)])\s", s))
        s = re.sub(r"^#{1,6}\s+", "", s)
        s = re.sub(r"^[-*+]\s+", "", s)
        if s.startswith("|"):
            s = " ".join(c.strip() for c in s.strip("|").split("|"))
        out.append((s, item))
    return out


_OUT_ENTRY = re.compile(r"^(?P<text>.*?\S)(?:[\s.\u2026\u00b7\u2014\u2013-]*\s|,\s*)" + _PAGES + r"$")


def score_page(truth, text):
    """Per-page counts: truth entries, kept (text and number), text found but number not, leader lines
    left, kept entries written as list items."""
    lines = output_lines(text)
    cands = []
    for s, item in lines:
        m = _OUT_ENTRY.match(s.strip())
        cands.append((norm(m.group("text")) if m else norm(s), page_list(m.group("page")) if m else None, item))
    used = [False] * len(cands)
    kept = lost_number = as_list = 0
    for e in truth:
        want, page = norm(e["text"]), page_list(e["page"])
        best, best_d = -1, ENTRY_CER
        for i, (t, p, _) in enumerate(cands):
            if used[i]:
                continue
            d = edit_distance(t, want) / max(1, len(want))
            if d <= best_d and (best < 0 or p == page or cands[best][1] != page):
                best, best_d = i, d
        if best < 0:
            continue
        used[best] = True
        if cands[best][1] == page:
            kept += 1
            as_list += cands[best][2]
        else:
            lost_number += 1
    leaders = sum(1 for s, _ in lines if LEADER_RUN.search(s))
    return {"entries": len(truth), "kept": kept, "number_lost": lost_number, "leader_lines": leaders, "as_list": as_list}


def run_paddle(images, paddle_dir):
    """PaddleOCR's text of each image (paddle_ocr.mjs): its lines top to bottom, one per line."""
    out = subprocess.run(["node", os.path.join(HERE, "paddle_ocr.mjs"), *images], capture_output=True, text=True,
                         env={**os.environ, "PADDLE_DIR": paddle_dir}, check=True).stdout
    texts = {}
    for row in out.splitlines():
        if row.startswith("{"):
            r = json.loads(row)
            texts[r["file"]] = "\n".join(l["text"] for l in sorted(r["lines"], key=lambda l: (l["box"][0][1], l["box"][0][0])))
    return [texts.get(img, "") for img in images]


def _png(pgm):
    from PIL import Image
    png = pgm[:-4] + ".png"
    Image.open(pgm).save(png)
    return png


def run_tesseract(images, threads):
    return [subprocess.run(["tesseract", img, "-", "--psm", "6"], capture_output=True, text=True,
                           env={**os.environ, "OMP_THREAD_LIMIT": str(threads)}).stdout for img in images]


def evaluate(a):
    manifest = json.load(open(os.path.join(a.set, "manifest.json")))
    readers = ["folio"] + (["tesseract"] if a.tesseract else []) + (["paddle"] if a.paddle else [])
    totals = {r: collections.Counter() for r in readers}
    by_kind = {r: collections.defaultdict(collections.Counter) for r in readers}
    by_tool = {r: collections.defaultdict(collections.Counter) for r in readers}
    pages_out = []
    tmp = tempfile.mkdtemp(prefix="toc_eval_")
    for doc in manifest["documents"]:
        if a.only and not re.search(a.only, doc["name"]):
            continue
        n = len(doc["pages"])
        pdf = os.path.join(a.set, "pages", doc["name"] + ".pdf")
        scans = [os.path.join(a.set, "scans", doc["name"], f"{i + 1:03d}.jpg") for i in range(n)]
        t0 = time.time()
        outs = {"folio": realdocs.run_folio(a, scans if a.scan else [pdf], n)[0]}
        if a.tesseract or a.paddle:
            imgs = scans if a.scan else [realdocs.render(pdf, i + 1, 300, os.path.join(tmp, f"p{i}")) for i in range(n)]
            if a.tesseract:
                outs["tesseract"] = run_tesseract(imgs, a.threads)
            if a.paddle:
                outs["paddle"] = run_paddle(imgs if a.scan else [_png(i) for i in imgs], a.paddle_dir)
        for r in readers:
            for i in range(n):
                s = score_page(doc["entries"][i], outs[r][i])
                totals[r].update(s)
                by_kind[r][doc.get("kinds", ["contents"] * n)[i]].update(s)
                by_tool[r][doc["tool"]].update(s)
                pages_out.append({"reader": r, "doc": doc["name"], "page": i + 1,
                                  "kind": doc.get("kinds", ["contents"] * n)[i], **s})
        got = [p for p in pages_out[-n * len(readers):] if p["reader"] == "folio"]
        print(f"{doc['name']}: folio kept {sum(p['kept'] for p in got)}/{sum(p['entries'] for p in got)} "
              f"({time.time() - t0:.1f} s)", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    summary = {}
    for r in readers:
        t = totals[r]
        summary[r] = {"entries": t["entries"], "kept": t["kept"] / max(1, t["entries"]),
                      "number_lost": t["number_lost"] / max(1, t["entries"]), "leader_lines": t["leader_lines"],
                      "as_list": t["as_list"] / max(1, t["kept"]),
                      "by_tool": {k: round(v["kept"] / max(1, v["entries"]), 4) for k, v in sorted(by_tool[r].items())},
                      "by_kind": {k: {"entries": v["entries"], "kept": round(v["kept"] / max(1, v["entries"]), 4)}
                                  for k, v in sorted(by_kind[r].items())}}
        print(f"{r}: {t['kept']}/{t['entries']} entries kept with their page numbers ({summary[r]['kept']:.1%}), "
              f"number lost {summary[r]['number_lost']:.1%}, leader lines {t['leader_lines']}, "
              f"as list items {summary[r]['as_list']:.1%}")
        for k, v in sorted(by_kind[r].items()):
            print(f"  {k} pages: {v['kept']}/{v['entries']} ({v['kept'] / max(1, v['entries']):.1%})")
        for k, v in sorted(by_tool[r].items()):
            print(f"    {k}: {v['kept']}/{v['entries']}")
    if a.json:
        json.dump({"scan": a.scan, "summary": summary, "pages": pages_out}, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    m.add_argument("--seed", type=int, default=64)
    m.add_argument("--docs-per-tool", type=int, default=3)
    m.add_argument("--pages-per-doc", type=int, default=2)
    e = sub.add_parser("eval")
    e.add_argument("--set", required=True)
    e.add_argument("--folio", default="build/folio")
    e.add_argument("--model", default="models/folio-mini-ocr-3")
    e.add_argument("--threads", type=int, default=2)
    e.add_argument("--scan", action="store_true")
    e.add_argument("--tesseract", action="store_true")
    e.add_argument("--paddle", action="store_true", help="PaddleOCR PP-OCRv4 too (paddle_ocr.mjs)")
    e.add_argument("--paddle-dir", default="train-work/paddle", help="where npm installed @gutenye/ocr-node")
    e.add_argument("--only", default="")
    e.add_argument("--json", default="")
    a = ap.parse_args()
    make(a) if a.cmd == "make" else evaluate(a)


if __name__ == "__main__":
    main()
