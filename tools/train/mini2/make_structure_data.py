"""Line records for training folio-mini-ocr 2's structure decoder, from docsynth.py's documents.

For every page of every document: deskewing (deskew.py), the layout (layout.py: columns, lines in
reading order, segments),
the recognizer's reading of every segment (the checkpoint given, greedy CTC, as the engine reads),
and each line's unit (the block it belongs to, from the coloured twin of the page) and action
(structure.label_lines). Writes WORK/structure/SPLIT/NNNNNN.json per document; resumable (documents
already written are skipped), deterministic in (seed, split, index).

    OMP_NUM_THREADS=1 /usr/bin/python3 tools/train/mini2/make_structure_data.py --work train-work/mini2 \\
        --split train --docs 2000 --checkpoint tools/train/mini2/checkpoints/recognizer.pt
"""
import argparse
import json
import os
import sys
import time
from collections import Counter

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus as corpus_mod  # noqa: E402
import docsynth  # noqa: E402
import lines as lines_mod  # noqa: E402
import structure  # noqa: E402
from deskew import deskew, rotate  # noqa: E402
from layout import find_layout  # noqa: E402
from recognizer import LineRecognizer, greedy_decode  # noqa: E402

torch.backends.mkldnn.enabled = False


def unit_of_pixels(rgb):
    """Most common unit among coloured pixels [n, 3] (docsynth.colour_of), 'furniture', or None."""
    rgb = rgb[(rgb < 250).any(axis=1)].astype(np.int32)
    if len(rgb) == 0:
        return None
    votes = Counter()
    for r, g, b in rgb[:: max(1, len(rgb) // 400)]:
        if b > 200 and r < 60 and g < 60:
            votes["furniture"] += 1
        elif abs(b - 96) < 24:
            votes[int(round((r - 8) / 16)) + 15 * int(round((g - 8) / 16))] += 1
    return votes.most_common(1)[0][0] if votes else None


def read_segments(model, crops):
    order = sorted(range(len(crops)), key=lambda i: crops[i].shape[1])
    out = [None] * len(crops)
    with torch.no_grad():
        for k in range(0, len(order), 16):
            idx = order[k:k + 16]
            width = max(crops[i].shape[1] for i in idx)
            x = np.zeros((len(idx), 1, lines_mod.HEIGHT, width), np.float32)
            for j, i in enumerate(idx):
                x[j, 0, :, :crops[i].shape[1]] = crops[i]
            frames = torch.tensor([crops[i].shape[1] // 4 for i in idx])
            for i, t in zip(idx, greedy_decode(model(torch.from_numpy(x)), frames)):
                out[i] = t
    return out


def page_records(model, gray, label):
    gray, angle = deskew(gray)  # as the engine reads a page
    if angle != 0.0:
        label = np.stack([rotate(label[:, :, c], angle) for c in range(3)], axis=2)
    found = find_layout(gray)
    crops = [c for line in found for _, c in line.segments]
    texts = read_segments(model, crops) if crops else []
    records, k = [], 0
    for line in found:
        segs = []
        for (x0, x1), crop in line.segments:
            segs.append({"x": [int(x0), int(x1)], "text": texts[k], "ink": float(crop.mean())})
            k += 1
        x0, y0, x1, y1 = line.box
        unit = unit_of_pixels(np.concatenate([label[y0:y1, s["x"][0]:s["x"][1]].reshape(-1, 3) for s in segs]))
        records.append({"box": [int(v) for v in line.box], "column": line.column, "columns": line.columns,
                        "region": [int(v) for v in line.region], "xh": int(line.xh),
                        "gap_before": int(line.gap_before), "segments": segs, "unit": unit})
    return records


def document_records(model, doc_dir):
    with open(os.path.join(doc_dir, "doc.json")) as f:
        doc = json.load(f)
    pages = []
    p = 0
    while os.path.exists(os.path.join(doc_dir, f"page-{p}.png")):
        gray = np.asarray(Image.open(os.path.join(doc_dir, f"page-{p}.png")).convert("L"))
        label = np.asarray(Image.open(os.path.join(doc_dir, f"label-{p}.png")).convert("RGB"))
        pages.append({"size": [int(gray.shape[1]), int(gray.shape[0])], "lines": page_records(model, gray, label)})
        p += 1
    # A line drawn mostly in blended pixels (thin strokes, table rules) can vote for a colour that is
    # no unit of this document: it has no label, like a line with no colour at all.
    for pg in pages:
        for ln in pg["lines"]:
            if isinstance(ln["unit"], int) and not 0 <= ln["unit"] < len(doc["units"]):
                ln["unit"] = None
    flat = [(ln["unit"], " ".join(s["text"] for s in ln["segments"])) for pg in pages for ln in pg["lines"]]
    actions = structure.label_lines(flat, [tuple(u) for u in doc["units"]])
    k = 0
    for pg in pages:
        for ln in pg["lines"]:
            ln["action"] = actions[k]
            k += 1
    return {"markdown": doc["markdown"], "style": doc["style"], "pages": pages}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--split", default="train", choices=["train", "heldout"])
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--keep-images", action="store_true", help="keep the rendered pages (else deleted once read)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = LineRecognizer()
    model.load_state_dict(torch.load(a.checkpoint)["model"])
    model.eval()
    corpus_mod.build(a.work, 3000)
    corp = corpus_mod.Corpus(a.work, a.split, set(lines_mod.CHARSET))
    out_dir = os.path.join(a.work, "structure", a.split)
    os.makedirs(out_dir, exist_ok=True)
    t0, done = time.time(), 0
    for i in range(a.first, a.first + a.docs):
        out = os.path.join(out_dir, f"{i:06d}.json")
        if os.path.exists(out):
            continue
        doc_dir = os.path.join(a.work, "docs", a.split, f"{i:06d}")
        if not os.path.exists(os.path.join(doc_dir, "doc.json")):
            docsynth.make_document(a.seed, i, corp, a.split, doc_dir)
        rec = document_records(model, doc_dir)
        with open(out + ".tmp", "w") as f:
            json.dump(rec, f)
        os.replace(out + ".tmp", out)
        if not a.keep_images:
            for name in os.listdir(doc_dir):
                if name.endswith(".png"):
                    os.remove(os.path.join(doc_dir, name))
        done += 1
        if done % 10 == 0:
            print(f"{a.split} {i + 1}: {done} documents in {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
