"""How folio-mini-ocr 2 lays out man pages typeset by groff (a typesetter it never trained on): are
the section headings found, and how much prose comes out as code?

    /usr/bin/python3 tools/train/mini2/eval_man_structure.py --folio build/folio --model models/folio-mini-ocr-2 [--docs 30]

Pages: held-out man pages (eval_pages.heldout_man_pdfs: sources never trained on), read whole by
`folio ocr`. Truth for headings: groff sets a man page's section headings (.SH) at the left margin
in bold capitals, its body indented; in `pdftotext -layout` of each page they are the lines that
start at column 0 and hold only capitals, digits, spaces and -/&() (the running header and footer,
the first and last line of a page, are left out). A markdown heading line (`#`) of ours matches a
truth heading of the same page with the same text (case and spaces ignored). Reports heading
precision and recall, and the share of our lines inside code fences (groff sets no code blocks in
these pages except where a page's own example is indented; today's shares are the measure).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from eval_pages import heldout_man_pdfs, page_count  # noqa: E402

HEADING = re.compile(r"[A-Z][A-Z0-9 &()/-]*[A-Z)]")


def key(text):
    return re.sub(r"[^a-z0-9]", "", text.lower())


def truth_headings(pdf, page):
    raw = subprocess.run(["pdftotext", "-layout", "-f", str(page), "-l", str(page), pdf, "-"],
                         capture_output=True, text=True, check=True).stdout
    lines = [l for l in raw.split("\n") if l.strip()]
    return [key(l) for l in lines[1:-1] if not l.startswith(" ") and HEADING.fullmatch(l.strip())]


def folio_pages(folio, model, pdf, threads):
    with tempfile.NamedTemporaryFile(suffix=".md") as f:
        subprocess.run([folio, "ocr", pdf, "--model", model, "--out", f.name, "--quiet", "--threads", str(threads)],
                       check=True)
        md = open(f.name, encoding="utf-8").read()
    pages = re.split(r"^<!-- page \d+ -->$", md, flags=re.M)
    return [p for p in pages if p.strip()] if len(pages) > 1 else [md]


def code_share(md):
    inside, code, total = False, 0, 0
    for line in md.split("\n"):
        if line.startswith("```"):
            inside = not inside
            continue
        if line.strip():
            total += 1
            code += inside
    return code, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", default="build/folio")
    ap.add_argument("--model", required=True)
    ap.add_argument("--docs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="man_structure_")
    tp = predicted = actual = code = lines = 0
    for pdf in heldout_man_pdfs(tmp, a.docs, a.seed):
        ours = folio_pages(a.folio, a.model, pdf, a.threads)
        for page in range(1, page_count(pdf) + 1):
            truth = truth_headings(pdf, page)
            md = ours[page - 1] if page - 1 < len(ours) else ""
            mine = [key(re.sub(r"^#+ ", "", l)) for l in md.split("\n") if re.match(r"^#{1,6} ", l)]
            left = list(truth)
            for h in mine:
                if h in left:
                    left.remove(h)
                    tp += 1
            predicted += len(mine)
            actual += len(truth)
            c, t = code_share(md)
            code += c
            lines += t
    print(f"headings: precision {tp / max(1, predicted):.3f} ({tp}/{predicted}), recall {tp / max(1, actual):.3f} "
          f"({tp}/{actual}); lines inside code fences {code / max(1, lines):.1%} ({code}/{lines})")


if __name__ == "__main__":
    main()
