"""The held-out documents folio's accuracy is measured on, and the sample PDFs in examples/.

    /usr/bin/python3 tools/train/make_eval_sets.py

Text comes only from the held-out sources (synth.split_of), so none of it was seen in training.
Pages get the "light" noise (contrast, jitter, skew, blur; no per-pixel noise, which would make
the committed PDFs ten times larger). Each document is NAME.pdf + NAME.txt (the exact expected
text: rows joined by "\\n", pages by "<page>").
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SETS = [("data/heldout-grid/p1", 20, 1, 100), ("data/heldout-grid/p20", 3, 20, 200)]
EXAMPLES = [("examples", "sample-3page", 3, 901), ("examples", "sample-1page", 1, 902)]


def main():
    corpus = synth.Corpus("heldout")
    for rel, n_docs, n_pages, seed0 in SETS:
        for i in range(n_docs):
            images, pages = synth.make_document(seed0 + i, n_pages, corpus, noise="light")
            out = os.path.join(ROOT, rel)
            os.makedirs(out, exist_ok=True)
            synth.write_pdf(images, os.path.join(out, f"doc-{i + 1:02d}.pdf"))
            with open(os.path.join(out, f"doc-{i + 1:02d}.txt"), "w") as f:
                f.write(synth.document_text(pages))
    for rel, name, n_pages, seed in EXAMPLES:
        images, pages = synth.make_document(seed, n_pages, corpus, noise="light")
        out = os.path.join(ROOT, rel)
        os.makedirs(out, exist_ok=True)
        synth.write_pdf(images, os.path.join(out, f"{name}.pdf"))
        with open(os.path.join(out, f"{name}.txt"), "w") as f:
            f.write(synth.document_text(pages))


if __name__ == "__main__":
    main()
