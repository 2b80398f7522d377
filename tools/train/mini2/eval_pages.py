"""Reads real born-digital pages with the recognizer checkpoint and with tesseract, and prints CER.

    /usr/bin/python3 tools/train/mini2/eval_pages.py --work train-work/mini2 --pages 12

Pages: held-out man pages (sources the recognizer never trained on) typeset by groff (`-Tpdf`, a
typesetter never used in training), rendered at 200 DPI for us and 300 DPI for tesseract (its best
case). Ground truth: `pdftotext -layout` of the same PDF. Both sides are normalised alike (corpus
clean: ligatures, dash and space variants; whitespace runs to one space) before the edit distance.
"""
import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus as corpus_mod  # noqa: E402
import lines  # noqa: E402
from line_finder import find_lines  # noqa: E402
from metrics import edit_distance  # noqa: E402
from recognizer import LineRecognizer, greedy_decode  # noqa: E402

torch.backends.mkldnn.enabled = False


def normalise(text):
    text = corpus_mod.clean(text, set(lines.CHARSET) | {"\n"})
    return " ".join(text.split())


def heldout_man_pdfs(out_dir, n, seed):
    pages = sorted(glob.glob("/usr/share/man/man1/*.gz"))
    held = [p for p in pages if not os.path.islink(p) and corpus_mod.is_held_out("man:" + os.path.basename(p)[:-3])]
    held = [p for p in held if not os.path.basename(p).startswith("gcloud")]
    random.Random(seed).shuffle(held)
    pdfs = []
    for p in held:
        pdf = os.path.join(out_dir, os.path.basename(p)[:-3] + ".pdf")
        r = subprocess.run(f"zcat '{p}' | groff -man -Tpdf 2>/dev/null > '{pdf}'", shell=True)
        if r.returncode == 0 and os.path.getsize(pdf) > 2000:
            pdfs.append(pdf)
        if len(pdfs) == n:
            break
    return pdfs


def page_count(pdf):
    info = subprocess.run(["pdfinfo", pdf], capture_output=True, text=True).stdout
    return int(next(l.split()[1] for l in info.splitlines() if l.startswith("Pages:")))


def render(pdf, page, dpi, out_prefix):
    subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", "-f", str(page), "-l", str(page), "-singlefile", pdf, out_prefix],
                   check=True)
    return out_prefix + ".pgm"


def read_ours(model, gray):
    found = find_lines(gray)
    texts, rows = [], []
    order = sorted(range(len(found)), key=lambda i: found[i][1].shape[1])
    results = [None] * len(found)
    with torch.no_grad():
        for k in range(0, len(order), 16):
            idx = order[k:k + 16]
            width = max(found[i][1].shape[1] for i in idx)
            x = np.zeros((len(idx), 1, lines.HEIGHT, width), np.float32)
            for j, i in enumerate(idx):
                x[j, 0, :, :found[i][1].shape[1]] = found[i][1]
            frames = torch.tensor([found[i][1].shape[1] // 4 for i in idx])
            for i, t in zip(idx, greedy_decode(model(torch.from_numpy(x)), frames)):
                results[i] = t
    return "\n".join(results), len(found)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--checkpoint", default="")
    ap.add_argument("--pages", type=int, default=12)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--psm", default="4")
    ap.add_argument("--dpi", type=int, default=200, help="our rendering resolution")
    ap.add_argument("--no-tesseract", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = LineRecognizer()
    st = torch.load(a.checkpoint or os.path.join(a.work, "state.pt"))
    model.load_state_dict(st["model"])
    model.eval()
    tmp = tempfile.mkdtemp(prefix="mini2_eval_")
    pdfs = heldout_man_pdfs(tmp, 40, a.seed)
    totals = {"ours": [0, 0, 0.0], "tesseract": [0, 0, 0.0]}
    done = 0
    for pdf in pdfs:
        for page in range(1, page_count(pdf) + 1):
            if done == a.pages:
                break
            ref = normalise(subprocess.run(["pdftotext", "-layout", "-f", str(page), "-l", str(page), pdf, "-"],
                                           capture_output=True, text=True).stdout)
            if len(ref) < 200:
                continue
            gray = np.asarray(Image.open(render(pdf, page, a.dpi, os.path.join(tmp, "ours"))).convert("L"))
            t0 = time.time()
            ours, nlines = read_ours(model, gray)
            t_ours = time.time() - t0
            tess, t_tess = "", 0.0
            if not a.no_tesseract:
                png300 = render(pdf, page, 300, os.path.join(tmp, "p300"))
                t0 = time.time()
                tess = subprocess.run(["tesseract", png300, "-", "--psm", a.psm], capture_output=True, text=True,
                                      env={**os.environ, "OMP_THREAD_LIMIT": str(a.threads)}).stdout
                t_tess = time.time() - t0
            for name, hyp, secs in (("ours", ours, t_ours), ("tesseract", tess, t_tess)):
                e = edit_distance(normalise(hyp), ref)
                totals[name][0] += e
                totals[name][1] += len(ref)
                totals[name][2] += secs
            print(f"{os.path.basename(pdf)} p{page}: {nlines} lines, ours {edit_distance(normalise(ours), ref) / len(ref):.2%} "
                  f"({t_ours:.2f}s), tesseract {edit_distance(normalise(tess), ref) / len(ref):.2%} ({t_tess:.2f}s)",
                  flush=True)
            done += 1
        if done == a.pages:
            break
    for name, (e, n, secs) in totals.items():
        print(f"{name}: CER {e / max(1, n):.2%} over {n} characters, {done / max(secs, 1e-9):.2f} pages/s")


if __name__ == "__main__":
    main()
