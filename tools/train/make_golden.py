"""Golden tensors for folio's C++ mini OCR model, from the PyTorch twin (mini_ocr_model.py).

    /usr/bin/python3 tools/train/make_golden.py --out tests/fixtures/mini_ocr

Writes a small random-weight checkpoint (model/), two synthetic held-out pages (page1.png,
page2.png) and expected.safetensors: the first band's frames and CTC logits, every row's greedy
emissions, the reference embeddings of the two-page document, and a greedy decode under R-SWA
(window 8) with the logits of every step. Integer arrays are stored as F32 (exact below 2^24), the
dtypes folio's safetensors reader takes. The C++ tests must reproduce them.
"""
import argparse
import os
import random
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import synth  # noqa: E402
from decoder import save_safetensors  # noqa: E402
from export import export  # noqa: E402
from mini_ocr_model import (BOS, DEFAULT_CONFIG, T_CHAR, T_TEXT, MiniOcr, greedy_emissions,  # noqa: E402
                            reference_layout, rswa_mask, text_codes)

TINY = dict(DEFAULT_CONFIG, conv_channels=[4, 8, 8, 8], frame_hidden=16, hidden=32, layers=2, heads=2,
            intermediate=64, max_pages=32, window=8, code_dims=16)


def reference(model, feats, em):
    items, types, pg, rw, ch = reference_layout(em, model.c["rows"])
    codes = model.codes(torch.tensor(types), torch.tensor(pg), torch.tensor(rw), torch.tensor(ch))
    for i, it in enumerate(items):
        if it is not None:
            codes[i] += model.codes.visual_proj(feats[it[0], it[1]])
    bos = model.embed_tokens(torch.tensor([BOS])) + model.codes(
        torch.tensor([T_TEXT]), torch.tensor([0]), torch.tensor([0]), torch.tensor([0]))
    return torch.cat([codes, bos], 0)


def greedy(model, ref, steps):
    tokens, logits = [], []
    gen = torch.zeros(0, model.c["hidden"])
    for _ in range(steps):
        x = torch.cat([ref, gen], 0)
        out = model.decoder(x, rswa_mask(ref.shape[0], gen.shape[0], model.c["window"]))[-1]
        t = int(out.argmax())
        tokens.append(t)
        logits.append(out)
        p, r, c = text_codes(tokens)
        e = model.embed_tokens(torch.tensor([t])) + model.codes(
            torch.tensor([T_TEXT]), torch.tensor([p[-1]]), torch.tensor([r[-1]]), torch.tensor([c[-1]]))
        gen = torch.cat([gen, e], 0)
    return tokens, torch.stack(logits)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    torch.manual_seed(5)
    model = MiniOcr(TINY)
    with torch.no_grad():
        # Clear CTC margins so float rounding cannot flip a greedy decision; mostly blanks.
        model.frontend.ctc_head.weight.mul_(4.0)
        model.frontend.ctc_head.bias[0] += 1.0
        model.lm_head.weight.mul_(4.0)
    model.eval()
    export(model, os.path.join(a.out, "model"))

    images, pages = synth.make_document(11, 2, synth.Corpus("heldout"))
    for i, im in enumerate(images):
        im.save(os.path.join(a.out, f"page{i + 1}.png"))
    x = torch.from_numpy(np.stack([np.asarray(im, dtype=np.float32) / 255.0 for im in images]))
    with torch.no_grad():
        feats, logits = model.frontend(model.bands(x))
        em = greedy_emissions(logits)
        ref = reference(model, feats, em)
        tokens, step_logits = greedy(model, ref, a.steps)
    counts = torch.tensor([len(f) for f, _ in em], dtype=torch.float32)
    frames = torch.tensor([t for f, _ in em for t in f], dtype=torch.float32)
    labels = torch.tensor([k for _, lab in em for k in lab], dtype=torch.float32)
    save_safetensors(os.path.join(a.out, "expected.safetensors"), {
        "band0.frames": feats[0], "band0.ctc_logits": logits[0],
        "emit.counts": counts, "emit.frames": frames, "emit.labels": labels,
        "reference": ref, "greedy.tokens": torch.tensor(tokens, dtype=torch.float32), "greedy.logits": step_logits,
    })
    print(f"reference tokens {ref.shape[0]}, emissions per row {counts.tolist()}, tokens {tokens[:20]}")


if __name__ == "__main__":
    main()
