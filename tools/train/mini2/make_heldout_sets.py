"""The held-out sets of `folio bench accuracy` (data/heldout): born-digital pages folio-mini-ocr 2
never saw in any form.

    /usr/bin/python3 tools/train/mini2/make_heldout_sets.py [--out data/heldout] [--seed 7]

Pages: man pages of held-out sources (corpus.is_held_out: the recognizer and the structure decoder
never trained on their text) typeset by groff (`groff -man -Tpdf`, Times; training typeset only with
PIL line renderings and WeasyPrint, so the typesetter is new as well).
 - p1/doc-NN.pdf: 20 one-page documents, each one page (drawn at random, with at least 300
   characters of text) of a different man page;
 - p20/doc-NN.pdf: 3 twenty-page documents, each whole man pages joined in order (pdfunite), the
   last one cut at page 20. No man page appears in two documents.
Truth (doc-NN.txt): `pdftotext -layout` of each page, mapped as training text is (corpus.clean with
the recognizer's charset: ligatures, dash and space variants), bullet glyphs dropped, every line
stripped and empty lines dropped; pages joined by "<page>". `set.json` tells `folio bench accuracy`
to compare normalised text (markdown syntax taken off the model's output, whitespace runs made one
space on both sides), since the truth has no markdown.

The installed man pages decide which sources exist, so another machine makes other sets: the
committed sets are the reference, this script how they were made.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus as corpus_mod  # noqa: E402
import lines  # noqa: E402
from eval_pages import heldout_man_pdfs, page_count  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
BULLETS = "•◦▪‣●○■□"


def page_truth(pdf, page):
    raw = subprocess.run(["pdftotext", "-layout", "-f", str(page), "-l", str(page), pdf, "-"],
                         capture_output=True, text=True, check=True).stdout
    text = corpus_mod.clean(raw, set(lines.CHARSET) | {"\n"})
    text = "".join(c for c in text if c not in BULLETS)
    return "\n".join(l.strip() for l in text.split("\n") if l.strip())


def extract(pdf, page, tmp, index):
    """One page of pdf as a PDF of its own (pdfseparate keeps the page as drawn)."""
    part = os.path.join(tmp, f"part-{index:03d}.pdf")
    subprocess.run(["pdfseparate", "-f", str(page), "-l", str(page), pdf, part], check=True)
    return part


def write_doc(out_dir, name, pages, tmp):
    """pages: [(source pdf, page)] -> out_dir/name.pdf and name.txt."""
    parts = [extract(pdf, p, tmp, i) for i, (pdf, p) in enumerate(pages)]
    pdf_out = os.path.join(out_dir, name + ".pdf")
    if len(parts) == 1:
        os.replace(parts[0], pdf_out)
    else:
        subprocess.run(["pdfunite", *parts, pdf_out], check=True)
        for part in parts:
            os.remove(part)
    with open(os.path.join(out_dir, name + ".txt"), "w", encoding="utf-8") as f:
        f.write("<page>".join(page_truth(pdf, p) for pdf, p in pages))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "heldout"))
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="heldout_sets_")
    rng = random.Random(a.seed)
    sources = [(pdf, page_count(pdf)) for pdf in heldout_man_pdfs(tmp, 200, a.seed)]
    p1 = os.path.join(a.out, "p1")
    p20 = os.path.join(a.out, "p20")
    os.makedirs(p1, exist_ok=True)
    os.makedirs(p20, exist_ok=True)
    it = iter(sources)
    for i in range(20):
        while True:  # a page with text on it (not a last page holding only its footer)
            pdf, n = next(it)
            page = rng.randint(1, n)
            if len(page_truth(pdf, page)) >= 300:
                break
        write_doc(p1, f"doc-{i + 1:02d}", [(pdf, page)], tmp)
    for i in range(3):
        pages = []
        while len(pages) < 20:
            pdf, n = next(it)
            pages += [(pdf, p) for p in range(1, n + 1)]
        write_doc(p20, f"doc-{i + 1:02d}", pages[:20], tmp)
    with open(os.path.join(a.out, "set.json"), "w") as f:
        json.dump({"compare": "normalised-text",
                   "made_by": "/usr/bin/python3 tools/train/mini2/make_heldout_sets.py --seed %d" % a.seed,
                   "pages": "held-out man pages typeset by groff -man -Tpdf",
                   "truth": "pdftotext -layout per page, corpus.clean, bullets dropped, lines stripped"}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
