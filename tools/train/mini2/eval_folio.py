"""folio-mini-ocr 2 in the engine (`folio ocr`) against tesseract on held-out born-digital pages.

    /usr/bin/python3 tools/train/mini2/eval_folio.py --folio build/folio --model models/folio-mini-ocr-2 --pages 20 [--set fonts] [--scan]

Pages (`--set groff`, the default): held-out man pages (sources never trained on) typeset by groff
(`-Tpdf`, a typesetter never used in training), set in Times. `--set fonts`: documents of held-out
sources typeset by WeasyPrint (the training typesetter) in the four held-out font families (EB
Garamond, Roboto, TeX Gyre Schola, C059), in styles drawn as training draws them (docsynth.py) but
in one column (`pdftotext -layout` interleaves two columns' lines). Truth: `pdftotext -layout` of
the same page. folio reads each PDF whole (rendering at the model's DPI, 2 threads); tesseract reads
each page at 300 DPI (its best case) with `--psm 6` (its best mode on these pages), 2 threads
allowed. Both sides are normalised alike:
markdown syntax taken off ours (heading marks, list markers, table pipes and separator rows,
fences), then on both sides ligatures, dash and space variants mapped (corpus.clean), list bullet
glyphs dropped, whitespace runs made one space. CER is the edit distance over the reference length,
case kept. Times are whole commands (process start, PDF rendering included).
"""
import argparse
import io
import os
import random
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus as corpus_mod  # noqa: E402
import lines  # noqa: E402
from eval_pages import heldout_man_pdfs, page_count, render  # noqa: E402
from metrics import edit_distance  # noqa: E402

BULLETS = "•◦▪‣●○■□"


def normalise(text):
    text = corpus_mod.clean(text, set(lines.CHARSET) | {"\n"})
    text = "".join(c for c in text if c not in BULLETS)
    return " ".join(text.split())


def markdown_to_text(md):
    out = []
    for line in md.split("\n"):
        if line.startswith("<!-- page") or line.startswith("```") or re.fullmatch(r"\|(---\|)+", line):
            continue
        line = re.sub(r"^#{1,6} ", "", line)
        line = re.sub(r"^- ", "", line)
        if line.startswith("| ") and line.endswith(" |"):
            line = " ".join(c.strip() for c in line[2:-2].split(" | "))
        out.append(line)
    return "\n".join(out)


def heldout_font_pdfs(out_dir, n, seed):
    """n documents of held-out sources in the held-out font families, typeset by WeasyPrint."""
    import docsynth
    import fonts
    work = os.path.join(out_dir, "corpus")
    corpus_mod.build(work, 600)
    corp = corpus_mod.Corpus(work, "heldout", set(lines.CHARSET))
    for i in range(n):
        rng = random.Random(f"{seed}:fonts:{i}")
        blocks = docsynth.make_blocks(rng, corp)
        style = docsynth.make_style(rng, list(fonts.HELD_OUT))
        style["columns"] = 1  # pdftotext -layout, the truth, interleaves the lines of two columns
        pdf = os.path.join(out_dir, f"heldout-fonts-{i:03d}.pdf")
        docsynth.render(docsynth.to_html(blocks, style, fonts.HELD_OUT, f"held-out {i}", False), pdf)
        yield pdf


def folio_pages(folio, model, pdf, threads):
    with tempfile.NamedTemporaryFile(suffix=".md") as f:
        t0 = time.time()
        subprocess.run([folio, "ocr", pdf, "--model", model, "--out", f.name, "--quiet", "--threads", str(threads)],
                       check=True)
        secs = time.time() - t0
        md = open(f.name, encoding="utf-8").read()
    pages = re.split(r"^<!-- page \d+ -->$", md, flags=re.M)
    pages = [p for p in pages if p.strip()] if len(pages) > 1 else [md]
    return pages, secs


def scanned(png, rng, out_path):
    """The page as a scan: turned by up to 2 degrees, blurred, JPEG quality 60."""
    from PIL import Image, ImageFilter
    img = Image.open(png).convert("L")
    img = img.rotate(rng.uniform(-2.0, 2.0), resample=Image.BILINEAR, fillcolor=255)
    img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 0.8)))
    img.save(out_path, format="JPEG", quality=60)
    return out_path


def folio_scan_pages(folio, model, images, threads):
    with tempfile.NamedTemporaryFile(suffix=".md") as f:
        t0 = time.time()
        subprocess.run([folio, "ocr", *images, "--model", model, "--out", f.name, "--quiet", "--threads", str(threads)],
                       check=True)
        secs = time.time() - t0
        md = open(f.name, encoding="utf-8").read()
    pages = re.split(r"^<!-- page \d+ -->$", md, flags=re.M)
    return ([p for p in pages if p.strip()] if len(pages) > 1 else [md]), secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", default="build/folio")
    ap.add_argument("--model", required=True)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--set", choices=["groff", "fonts"], default="groff")
    ap.add_argument("--psm", default="6", help="tesseract's page segmentation mode")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-tesseract", action="store_true")
    ap.add_argument("--show", type=int, default=0, help="print the first N pages side by side")
    ap.add_argument("--scan", action="store_true", help="read degraded images of the pages instead (tilt up to 2 "
                    "degrees, blur, JPEG 60; ours from 150 DPI, tesseract's from 300 DPI)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mini2_folio_eval_")
    totals = {"folio": [0, 0, 0.0, 0], "tesseract": [0, 0, 0.0, 0]}
    done = 0
    pdfs = heldout_man_pdfs(tmp, 60, a.seed) if a.set == "groff" else heldout_font_pdfs(tmp, 60, a.seed)
    for pdf in pdfs:
        n = page_count(pdf)
        if a.scan:
            images = [scanned(render(pdf, p, 150, os.path.join(tmp, f"s{p}")), random.Random(f"{a.seed}:{os.path.basename(pdf)}:{p}"),
                              os.path.join(tmp, f"scan{p}.jpg")) for p in range(1, n + 1)]
            ours, secs = folio_scan_pages(a.folio, a.model, images, a.threads)
        else:
            ours, secs = folio_pages(a.folio, a.model, pdf, a.threads)
        totals["folio"][2] += secs
        totals["folio"][3] += n
        for page in range(1, n + 1):
            if done == a.pages:
                break
            ref = normalise(subprocess.run(["pdftotext", "-layout", "-f", str(page), "-l", str(page), pdf, "-"],
                                           capture_output=True, text=True).stdout)
            hyp = normalise(markdown_to_text(ours[page - 1])) if page - 1 < len(ours) else ""
            e = edit_distance(hyp, ref)
            totals["folio"][0] += e
            totals["folio"][1] += len(ref)
            line = f"{os.path.basename(pdf)} p{page}: folio {e / max(1, len(ref)):.2%}"
            if done < a.show:
                print("REF:", ref[:400], "\nOURS:", hyp[:400])
            if not a.no_tesseract:
                png = render(pdf, page, 300, os.path.join(tmp, "p300"))
                if a.scan:
                    png = scanned(png, random.Random(f"{a.seed}:{os.path.basename(pdf)}:{page}"), os.path.join(tmp, "t300.jpg"))
                t0 = time.time()
                tess = subprocess.run(["tesseract", png, "-", "--psm", a.psm], capture_output=True, text=True,
                                      env={**os.environ, "OMP_THREAD_LIMIT": str(a.threads)}).stdout
                totals["tesseract"][2] += time.time() - t0
                totals["tesseract"][3] += 1
                et = edit_distance(normalise(tess), ref)
                totals["tesseract"][0] += et
                totals["tesseract"][1] += len(ref)
                line += f", tesseract {et / max(1, len(ref)):.2%}"
            print(line, flush=True)
            done += 1
        if done == a.pages:
            break
    for name, (e, n, secs, pages) in totals.items():
        if pages:
            print(f"{name}: CER {e / max(1, n):.2%} over {n} characters; {pages} pages in {secs:.1f}s = "
                  f"{pages / max(secs, 1e-9):.2f} pages/s")


if __name__ == "__main__":
    main()
