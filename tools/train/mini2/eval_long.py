"""folio-mini-ocr 2 on long held-out documents: one document of N pages read one page per pass, in
rswa passes of 20 (the default) and 63 pages (the most), and by `rolling` with a few resident
pages, in the engine (`folio ocr --json`).

    /usr/bin/python3 tools/train/mini2/eval_long.py --folio build/folio --model models/folio-mini-ocr-2 --pages 100 [--pages 500]

The document: held-out man pages of every section (sources never trained on) typeset by groff, joined by pdfunite
until it has N pages. Truth: `pdftotext -layout` of each page, normalised as eval_folio.py does.
For each run: pages written (must be N: none lost or duplicated), CER over the document, KV bytes
at their peak (the pool's counter, from the JSON), wall time. Each page is scored against its own
truth, so a page written in the wrong place counts as errors on both.
"""
import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from eval_folio import markdown_to_text, normalise  # noqa: E402
import corpus as corpus_mod  # noqa: E402
from eval_pages import page_count  # noqa: E402
from metrics import edit_distance  # noqa: E402


def heldout_man_sources(seed):
    """Held-out man pages of every section (corpus.py's names and split), seeded order."""
    held = [p for p in sorted(glob.glob("/usr/share/man/man[1-8]/*.gz"))
            if not os.path.islink(p) and corpus_mod.is_held_out("man:" + os.path.basename(p)[:-3])]
    random.Random(seed).shuffle(held)
    return held


def long_document(tmp, pages, seed):
    parts, total = [], 0
    for src in heldout_man_sources(seed):
        pdf = os.path.join(tmp, os.path.basename(src)[:-3] + ".pdf")
        r = subprocess.run(f"zcat '{src}' | groff -man -Tpdf 2>/dev/null > '{pdf}'", shell=True)
        if r.returncode != 0 or os.path.getsize(pdf) < 2000:
            continue
        parts.append(pdf)
        total += page_count(pdf)
        if total >= pages:
            break
    if total < pages:
        raise SystemExit(f"only {total} held-out man pages found, {pages} asked for")
    out = os.path.join(tmp, f"long-{pages}.pdf")
    subprocess.run(["pdfunite", *parts, out], check=True)
    return out


def run(folio, model, pdf, pages, args, threads):
    with tempfile.NamedTemporaryFile(suffix=".json") as j:
        t0 = time.time()
        subprocess.run([folio, "ocr", pdf, "--model", model, "--pages", f"1-{pages}", "--quiet", "--threads", str(threads),
                        "--out", os.devnull, "--json", j.name, *args], check=True)
        secs = time.time() - t0
        result = json.load(open(j.name))
    texts = ["\n".join(b["text"] for b in p["blocks"]) for p in result["pages"]]
    return texts, result["stats"], secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folio", default="build/folio")
    ap.add_argument("--model", required=True)
    ap.add_argument("--pages", type=int, action="append", help="document lengths (repeatable); default 100")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--resident", type=int, default=4, help="rolling's resident pages")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mini2_long_")
    for n in a.pages or [100]:
        pdf = long_document(tmp, n, a.seed)
        truth = [normalise(subprocess.run(["pdftotext", "-layout", "-f", str(p), "-l", str(p), pdf, "-"],
                                          capture_output=True, text=True).stdout) for p in range(1, n + 1)]
        chars = sum(len(t) for t in truth)
        # rswa's passes: the default (20 pages) and the most the model allows (its 64 page codes
        # less one: pages sharing a code are never in one pass).
        for name, args in (("one page per pass", ["--pages-per-pass", "1"]),
                           ("rswa, 20 pages per pass", ["--policy", "rswa"]),
                           ("rswa, 63 pages per pass", ["--policy", "rswa", "--pages-per-pass", "63"]),
                           (f"rolling, {a.resident} resident", ["--policy", "rolling", "--resident-pages", str(a.resident)])):
            texts, stats, secs = run(a.folio, a.model, pdf, n, args, a.threads)
            errors = sum(edit_distance(normalise(markdown_to_text(texts[i])) if i < len(texts) else "", truth[i])
                         for i in range(n))
            print(f"{n} pages, {name}: {len(texts)} pages written, CER {errors / max(1, chars):.2%} over {chars} "
                  f"characters, KV peak {stats.get('kv_bytes_peak', 0)} bytes, {secs:.1f} s ({n / secs:.2f} pages/s)",
                  flush=True)


if __name__ == "__main__":
    main()
