"""Trains the folio mini OCR model from scratch on synthetic documents (CPU, Debian python3-torch).

    /usr/bin/python3 tools/train/train.py --work train-work/mini --steps 3000 --seed 1

Resumable: the whole state (model, optimiser, step, RNG) is saved to WORK/state.pt every few
minutes and at the end; running the same command again continues from it. WORK/log.csv holds the
loss curve (plot_loss.py draws it), WORK/command.txt the exact command and seed of every run.

Schedule: a CTC-only warm-up of the front end (each row's text read by CTC; without it the decoder
learns a character language model and never aligns to the image), then joint training of CTC and the
decoder under the R-SWA mask on documents of 1-4 pages, so page breaks and the end of a document are
really trained on. Page indices get a random offset so page codes beyond the training lengths are
seen. Cosine learning-rate decay over --steps.
"""
import argparse
import csv
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth  # noqa: E402
from mini_ocr_model import (BOS, EOS, NEWLINE, PAGE, T_CHAR, T_TEXT, MiniOcr, ctc_label,  # noqa: E402
                            greedy_emissions, reference_layout, rswa_mask, text_codes)

# Debian torch 1.13 on this CPU: MKL-DNN convolution backward gave random NaN/Inf gradients.
torch.backends.mkldnn.enabled = False


def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[-1]


def page_tensor(images):
    return torch.from_numpy(np.stack([np.asarray(im, dtype=np.float32) / 255.0 for im in images]))


def row_targets(pages, rows_per_page):
    """CTC targets of every band: the row text (rows past a page's last row are empty)."""
    out = []
    for rows in pages:
        for r in range(rows_per_page):
            out.append(rows[r] if r < len(rows) else "")
    return out


def ctc_loss(logits, texts):
    logp = F.log_softmax(logits, -1).transpose(0, 1)  # [T, B, C]
    targets = [torch.tensor([ctc_label(ch) for ch in t], dtype=torch.long) for t in texts]
    lengths = torch.tensor([len(t) for t in targets], dtype=torch.long)
    flat = torch.cat(targets) if int(lengths.sum()) else torch.zeros(0, dtype=torch.long)
    in_len = torch.full((logits.shape[0],), logits.shape[1], dtype=torch.long)
    return F.ctc_loss(logp, flat, in_len, lengths, blank=0, reduction="mean", zero_infinity=True)


def row_cer(logits, texts):
    errs = chars = 0
    for (frames, labels), t in zip(greedy_emissions(logits), texts):
        pred = "".join(chr(k + 31) for k in labels)
        errs += edit_distance(pred, t)
        chars += max(1, len(t))
    return errs / chars


def doc_tokens(pages):
    """Target ids of a document: rows + '\\n', <page> between pages, <eos> at the end."""
    ids = []
    for p, rows in enumerate(pages):
        for r in rows:
            ids += [ord(ch) for ch in r] + [NEWLINE]
        ids.append(PAGE if p < len(pages) - 1 else EOS)
    return ids


def decoder_loss(model, feats, logits, pages, rng, crop=256, context=127):
    """Teacher-forced decoder loss of one document (its bands' frames `feats`)."""
    c = model.c
    offset = rng.randint(0, 200)
    em = greedy_emissions(logits.detach())
    items, types, pg, rw, ch = reference_layout(em, c["rows"], offset)
    codes = model.codes(torch.tensor(types), torch.tensor(pg), torch.tensor(rw), torch.tensor(ch))
    char_idx = [i for i, it in enumerate(items) if it is not None]
    vis = codes
    if char_idx:
        bands = torch.tensor([items[i][0] for i in char_idx])
        frames = torch.tensor([items[i][1] for i in char_idx])
        vis = codes.index_add(0, torch.tensor(char_idx), model.codes.visual_proj(feats[bands, frames]))
    ids = doc_tokens(pages)
    tp, tr, tc = text_codes(ids, offset)
    # Generated inputs k = 1..len(ids)-1 are ids[k-1] and predict ids[k]; <bos> (k = 0) predicts ids[0].
    n = len(ids)
    s = rng.randint(1, max(1, n - crop)) if n > crop else 1
    a, e = max(1, s - context), min(n, s + crop)
    ks = list(range(a, e))
    tok_in = torch.tensor([BOS] + [ids[k - 1] for k in ks])
    k_all = [0] + ks
    tcodes = model.codes(torch.full((len(k_all),), T_TEXT), torch.tensor([tp[k] for k in k_all]),
                         torch.tensor([tr[k] for k in k_all]), torch.tensor([tc[k] for k in k_all]))
    text = model.embed_tokens(tok_in) + tcodes
    x = torch.cat([vis, text], 0)
    n_ref = vis.shape[0] + 1
    mask = rswa_mask(n_ref, len(ks), c["window"])
    out = model.decoder(x, mask)[vis.shape[0]:]
    tgt = torch.tensor([ids[k] for k in k_all])
    weight = torch.tensor([1.0] + [1.0 if k >= s else 0.0 for k in ks])
    ce = F.cross_entropy(out, tgt, reduction="none")
    loss = (ce * weight).sum() / weight.sum()
    acc = ((out.argmax(-1) == tgt).float() * weight).sum() / weight.sum()
    return loss, float(acc)


def lr_at(step, total, base, warmup=100):
    if step < warmup:
        return base * (step + 1) / warmup
    return base * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, step / total))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--ctc-steps", type=int, default=700, help="CTC-only warm-up steps")
    ap.add_argument("--pages-per-step", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save-every-s", type=float, default=240)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    torch.set_num_threads(a.threads)
    with open(os.path.join(a.work, "command.txt"), "a") as f:
        f.write(time.strftime("%Y-%m-%dT%H:%M:%S ") + " ".join(["/usr/bin/python3"] + sys.argv) + "\n")

    torch.manual_seed(a.seed)
    model = MiniOcr()
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    step, elapsed = 0, 0.0
    state_path = os.path.join(a.work, "state.pt")
    if os.path.exists(state_path):
        st = torch.load(state_path)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step, elapsed = st["step"], st["elapsed"]
        torch.set_rng_state(st["torch_rng"])
        print(f"resumed at step {step} ({elapsed / 60:.1f} min trained)", flush=True)
    corpus = synth.Corpus("train")
    log_path = os.path.join(a.work, "log.csv")
    if os.path.exists(log_path):  # drop rows logged after the state we resume from
        with open(log_path) as f:
            kept = [r for r in csv.reader(f) if r and (r[0] == "step" or int(r[0]) <= step)]
        with open(log_path, "w", newline="") as f:
            csv.writer(f).writerows(kept)
    new_log = not os.path.exists(log_path)
    log = open(log_path, "a", newline="")
    w = csv.writer(log)
    if new_log:
        w.writerow(["step", "minutes", "phase", "lr", "ctc_loss", "dec_loss", "row_cer", "dec_acc"])

    def save():
        tmp = state_path + ".tmp"
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed,
                    "torch_rng": torch.get_rng_state(), "config": model.c}, tmp)
        os.replace(tmp, state_path)

    last_save = time.time()
    rows_pp = model.c["rows"]
    while step < a.steps:
        t0 = time.time()
        rng = random.Random(a.seed * 1_000_003 + step)  # data depend only on (seed, step): resumable
        joint = step >= a.ctc_steps
        docs = []
        left = a.pages_per_step
        while left > 0:
            n = min(left, rng.choice([1, 1, 2, 2, 3, 4])) if joint else 1
            docs.append(synth.make_document(rng.randrange(1 << 30), n, corpus))
            left -= n
        images = [im for d in docs for im in d[0]]
        pages = [p for d in docs for p in d[1]]
        bands = model.bands(page_tensor(images))
        feats, logits = model.frontend(bands)
        texts = row_targets(pages, rows_pp)
        l_ctc = ctc_loss(logits, texts)
        loss = l_ctc
        l_dec, acc = torch.tensor(0.0), 0.0
        if joint:
            b = 0
            dl, accs = [], []
            for imgs, pgs in docs:
                nb = len(imgs) * rows_pp
                ld, ac = decoder_loss(model, feats[b:b + nb], logits[b:b + nb], pgs, rng)
                dl.append(ld); accs.append(ac)
                b += nb
            l_dec = torch.stack(dl).mean()
            acc = sum(accs) / len(accs)
            loss = l_ctc + l_dec
        lr = lr_at(step, a.steps, a.lr)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        elapsed += time.time() - t0
        if step % 20 == 0 or step == a.steps:
            cer = row_cer(logits.detach(), texts)
            w.writerow([step, f"{elapsed / 60:.2f}", "joint" if joint else "ctc", f"{lr:.2e}", f"{float(l_ctc):.4f}",
                        f"{float(l_dec):.4f}", f"{cer:.4f}", f"{acc:.4f}"])
            log.flush()
            print(f"step {step} {elapsed / 60:.1f}min ctc {float(l_ctc):.3f} dec {float(l_dec):.3f} "
                  f"row_cer {cer:.3f} acc {acc:.3f}", flush=True)
        if time.time() - last_save > a.save_every_s or step == a.steps:
            save()
            last_save = time.time()
    save()


if __name__ == "__main__":
    main()
