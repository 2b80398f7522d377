"""Trains the folio-mini-ocr 2 line recognizer with CTC on rendered lines (CPU, Debian python3-torch).

    /usr/bin/python3 tools/train/mini2/train_recognizer.py --work train-work/mini2 --steps 12000 --seed 1

Resumable and seeded: the lines of step s depend only on (seed, s); WORK/state.pt (model, optimiser,
step) is written every few minutes and at the end, and the same command continues from it. Without
a WORK/state.pt it starts from --init (the checkpoint committed in the repository) if given, with a
fresh optimiser. WORK/log.csv: per-step loss; WORK/eval.csv: CER on three fixed held-out sets (held-
out text in training fonts; held-out text in held-out fonts; the same degraded like a scan).
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
import corpus as corpus_mod  # noqa: E402
import fonts  # noqa: E402
import lines  # noqa: E402
from metrics import edit_distance  # noqa: E402
from recognizer import LineRecognizer, greedy_decode  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mini3"))
import code_corpus  # noqa: E402
import tech_lines  # noqa: E402

torch.backends.mkldnn.enabled = False  # Debian torch 1.13: NaN gradients from MKL-DNN conv backward here


def make_batch(samples):
    """Pads lines (sorted by width by the caller) into one tensor; returns x, targets, lengths."""
    width = max(x.shape[1] for x, _ in samples)
    x = np.zeros((len(samples), 1, lines.HEIGHT, width), np.float32)
    for i, (a, _) in enumerate(samples):
        x[i, 0, :, :a.shape[1]] = a
    frames = torch.tensor([a.shape[1] // 4 for a, _ in samples], dtype=torch.long)
    return torch.from_numpy(x), [t for _, t in samples], frames


def ctc_loss(logits, texts, frames):
    logp = F.log_softmax(logits, -1).transpose(0, 1)
    targets = [torch.tensor([lines.CHAR_INDEX[ch] for ch in t], dtype=torch.long) for t in texts]
    lengths = torch.tensor([len(t) for t in targets], dtype=torch.long)
    return F.ctc_loss(logp, torch.cat(targets), frames, lengths, blank=0, reduction="mean", zero_infinity=True)


def draw_lines(rng, corp, families, n, degrade=None, tech=None, tech_share=0.0):
    """n lines; with a tech corpus pair (prose, code), tech_share of them from mini3's tech_lines."""
    out = []
    while len(out) < n:
        if tech and rng.random() < tech_share:
            s = tech_lines.sample(rng, tech[0], tech[1], families, degrade=degrade)
        else:
            s = lines.sample(rng, corp, families, degrade=degrade)
        if s is not None and s[0].shape[1] // 4 >= 2 * len(s[1]) // 2 + 1:
            out.append(s)
    return out


def eval_sets(work, tech):
    """Held-out text: in training fonts, in held-out fonts, the same like a scan; with --tech also
    held-out prose and code as technical lines (training fonts: every monospace face is one), clean
    and like a scan."""
    held = corpus_mod.Corpus(work, "heldout", set(lines.CHARSET))
    sets = {}
    for name, fams, deg in (("train_fonts", fonts.TRAIN, False), ("heldout_fonts", fonts.HELD_OUT, False),
                            ("heldout_fonts_scan", fonts.HELD_OUT, True)):
        sets[name] = draw_lines(random.Random(f"eval-{name}"), held, fams, 150, degrade=deg)
    if tech:
        pair = (held, code_corpus.CodeCorpus(work, "heldout"))
        for name, deg in (("tech", False), ("tech_scan", True)):
            sets[name] = draw_lines(random.Random(f"eval-{name}"), held, fonts.TRAIN, 150, degrade=deg,
                                    tech=pair, tech_share=1.0)
    return sets


@torch.no_grad()
def evaluate(model, sets):
    model.eval()
    res = {}
    for name, samples in sets.items():
        errs = chars = 0
        samples = sorted(samples, key=lambda s: s[0].shape[1])
        for i in range(0, len(samples), 16):
            x, texts, frames = make_batch(samples[i:i + 16])
            for hyp, ref in zip(greedy_decode(model(x), frames), texts):
                errs += edit_distance(hyp, ref)
                chars += len(ref)
        res[name] = errs / max(1, chars)
    model.train()
    return res


def record_eval(work, step, res):
    path = os.path.join(work, "eval.csv")
    new = not os.path.exists(path)
    with open(path, "a") as f:
        if new:
            f.write("step," + ",".join(res) + "\n")
        f.write(f"{step}," + ",".join(f"{v:.4f}" for v in res.values()) + "\n")
    print("eval", step, {k: round(v * 100, 2) for k, v in res.items()}, flush=True)


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=12000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--micro", type=int, default=8, help="lines per forward pass (sorted by width)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--init", default="", help="checkpoint to start from when WORK has no state")
    ap.add_argument("--tech", type=float, default=0.0,
                    help="share of each batch drawn by mini3's tech_lines (code, inline monospace, shading)")
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--save-minutes", type=float, default=4.0)
    ap.add_argument("--max-minutes", type=float, default=0, help="stop (after saving) once this much time passed")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.makedirs(a.work, exist_ok=True)
    with open(os.path.join(a.work, "command.txt"), "a") as f:
        f.write(time.strftime("%Y-%m-%dT%H:%M:%S ") + " ".join(sys.argv) + "\n")
    corpus_mod.build(a.work, 3000)
    train = corpus_mod.Corpus(a.work, "train", set(lines.CHARSET))
    tech = None
    if a.tech > 0:
        code_corpus.build(a.work, set(lines.CHARSET))
        tech = (train, code_corpus.CodeCorpus(a.work, "train"))
    sets = eval_sets(a.work, tech is not None)

    torch.manual_seed(a.seed)
    model = LineRecognizer()
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    state_path = os.path.join(a.work, "state.pt")
    step, warmup = 0, 300
    if os.path.exists(state_path):
        st = torch.load(state_path)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step = st["step"]
    elif a.init:
        st = torch.load(a.init)
        model.load_state_dict(st["model"])
        step, warmup = st["step"], st["step"] + 100  # a fresh optimiser warms up again
    print(f"start at step {step}, {sum(p.numel() for p in model.parameters())} parameters", flush=True)

    def save():
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, state_path + ".tmp")
        os.replace(state_path + ".tmp", state_path)

    if not os.path.exists(os.path.join(a.work, "eval.csv")):
        record_eval(a.work, step, evaluate(model, sets))  # where the run starts from
    log = open(os.path.join(a.work, "log.csv"), "a", newline="")
    logw = csv.writer(log)
    t0 = last_save = time.time()
    while step < a.steps:
        rng = random.Random(a.seed * 1_000_003 + step)
        samples = sorted(draw_lines(rng, train, fonts.TRAIN, a.batch, tech=tech, tech_share=a.tech),
                         key=lambda s: s[0].shape[1])
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a.steps, a.lr, warmup)
        opt.zero_grad()
        total = 0.0
        for i in range(0, len(samples), a.micro):
            x, texts, frames = make_batch(samples[i:i + a.micro])
            loss = ctc_loss(model(x), texts, frames) * (len(texts) / len(samples))
            loss.backward()
            total += float(loss)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        logw.writerow([step, f"{total:.4f}", f"{time.time() - t0:.1f}"])
        if step % 50 == 0:
            log.flush()
            print(f"step {step} loss {total:.3f} {(time.time() - t0):.0f}s", flush=True)
        if step % a.eval_every == 0 or step == a.steps:
            record_eval(a.work, step, evaluate(model, sets))
        if time.time() - last_save > a.save_minutes * 60:
            save()
            last_save = time.time()
        if a.max_minutes and time.time() - t0 > a.max_minutes * 60:
            break
    save()


if __name__ == "__main__":
    main()
