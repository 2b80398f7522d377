"""Trains folio-mini-ocr 2's structure decoder on make_structure_data.py's line records.

    OMP_NUM_THREADS=1 /usr/bin/python3 tools/train/mini2/train_structure.py --work train-work/mini2 --steps 6000

Resumable and seeded: WORK/structure_state.pt (model, optimiser, step) is saved every few minutes
and at the end; the documents of step s depend only on (seed, s) and the training documents on
disk (re-read every --reload-every steps, so training can start while make_structure_data.py is
still writing them; for a run that repeats exactly, write the data first). Evaluates on the held-out split
(held-out sources and fonts): greedy decoding, line by line, as the engine decodes; prints action
accuracy, precision and recall of headings and list items, and the markdown's character error
against the source markdown next to the same for the true actions (the recognizer's part of it).
"""
import argparse
import glob
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import heading_levels  # noqa: E402
import structure  # noqa: E402
from features import line_text, page_features  # noqa: E402
from metrics import edit_distance  # noqa: E402
from structure_model import CONFIG, StructureDecoder, sequence  # noqa: E402

MAX_PAGES_PER_SAMPLE = 6


def load_split(work, split, limit=0):
    docs = []
    for path in sorted(glob.glob(os.path.join(work, "structure", split, "*.json")))[: limit or None]:
        with open(path) as f:
            rec = json.load(f)
        pages = [p for p in rec["pages"] if p["lines"]]
        if pages:
            docs.append({"pages": pages, "markdown": rec["markdown"], "style": rec.get("style", {})})
    return docs


def tensors(pages, page_offset=0):
    numeric, chars, acts = [], [], []
    for p in pages:
        for f, c in page_features(p["lines"], p["size"][1]):
            numeric.append(f)
            chars.append(c)
        acts.append([ln["action"] for ln in p["lines"]])
    rt, rp, rl, inputs, targets, gp, gl = sequence(acts)
    t = lambda v: torch.tensor(v, dtype=torch.long)  # noqa: E731
    return (torch.tensor(numeric, dtype=torch.float32), t(chars), t(rt), t(rp) + page_offset, t(rl), t(inputs),
            t(targets), t(gp) + page_offset, t(gl))


def sample(docs, rng):
    d = rng.choice(docs)
    n = len(d["pages"])
    k = rng.randint(1, min(n, MAX_PAGES_PER_SAMPLE))
    first = rng.randint(0, n - k)
    return d["pages"][first:first + k], rng.randrange(CONFIG["max_pages"])


@torch.no_grad()
def greedy(model, pages, heading_rules=False):
    """Actions per line by greedy decoding (the whole prefix recomputed each step: small models).
    heading_rules: heading levels settled as the engine settles them (heading_levels.py)."""
    numeric, chars, rt, rp, rl, _, targets, gp, gl = tensors(pages)
    styles = [heading_levels.page_styles(p["lines"]) for p in pages]
    levels = heading_levels.HeadingLevels()
    page = line = 0
    inputs = [structure.BOS]
    for k in range(len(targets)):
        logits = model(numeric, chars, rt, rp, rl, torch.tensor(inputs), gp[:k + 1], gl[:k + 1])
        token = structure.VOCAB[int(logits[-1].argmax())]
        if token in heading_levels.HEADINGS and page < len(pages) and line < len(styles[page]) and heading_rules:
            lv = levels.level(styles[page][line], int(token[1]))
            levels.note(styles[page][line], lv)
            token = f"H{lv}"
        page, line = (page + 1, 0) if token == "PAGE" else (page, line + 1)
        inputs.append(structure.ID[token])
    return [structure.VOCAB[i] for i in inputs[1:]], [structure.VOCAB[i] for i in targets.tolist()]


def evaluate(model, docs, limit, heading_rules=False):
    model.eval()
    hits = n = 0
    level_hits = 0  # headings found at their level
    counts = {k: [0, 0, 0] for k in ("heading", "item")}  # true positives, predicted, actual
    e_pred = e_true = chars = 0
    kind = {"H1": "heading", "H2": "heading", "H3": "heading", "BULLET": "item", "NUMBERED": "item"}
    for d in docs[:limit]:
        pages = d["pages"][:MAX_PAGES_PER_SAMPLE]
        pred, true = greedy(model, pages, heading_rules)
        lines = [ln for p in pages for ln in p["lines"]]
        pa = [a for a in pred if a in structure.ACTIONS][: len(lines)]
        ta = [a for a in true if a in structure.ACTIONS]
        pa += ["PARA"] * (len(ta) - len(pa))
        hits += sum(a == b for a, b in zip(pa, ta))
        level_hits += sum(a == b and kind.get(a) == "heading" for a, b in zip(pa, ta))
        n += len(ta)
        for a, b in zip(pa, ta):
            for k in counts:
                counts[k][0] += kind.get(a) == k and kind.get(b) == k
                counts[k][1] += kind.get(a) == k
                counts[k][2] += kind.get(b) == k
        texts = [[s["text"] for s in ln["segments"]] for ln in lines]
        flat = [t if a == "ROW" else " ".join(t) for a, t in zip(ta, texts)]
        md_true = structure.render_markdown(ta, flat)
        md_pred = structure.render_markdown(pa, [t if a == "ROW" else " ".join(t) for a, t in zip(pa, texts)])
        if len(pages) == len(d["pages"]):
            e_pred += edit_distance(md_pred, d["markdown"])
            e_true += edit_distance(md_true, d["markdown"])
            chars += len(d["markdown"])
    model.train()
    out = {"action_acc": hits / max(1, n)}
    for k, (tp, p, a) in counts.items():
        out[k + "_p"] = tp / max(1, p)
        out[k + "_r"] = tp / max(1, a)
    out["heading_level_acc"] = level_hits / max(1, counts["heading"][0])
    out["md_cer_pred"] = e_pred / max(1, chars)
    out["md_cer_true_actions"] = e_true / max(1, chars)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--eval-docs", type=int, default=60)
    ap.add_argument("--save-minutes", type=float, default=3.0)
    ap.add_argument("--init", default="", help="start from this checkpoint's weights (e.g. checkpoints/structure.pt) "
                    "with a fresh optimiser, when WORK holds no state yet")
    ap.add_argument("--reload-every", type=int, default=500, help="re-read the training documents (data still coming)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    train, held = load_split(a.work, "train"), load_split(a.work, "heldout")
    print(f"{len(train)} training documents, {len(held)} held out", flush=True)
    model = StructureDecoder()
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    state_path = os.path.join(a.work, "structure_state.pt")
    step = 0
    if os.path.exists(state_path):
        st = torch.load(state_path)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step = st["step"]
        print("resumed at step", step, flush=True)
    elif a.init:
        model.load_state_dict(torch.load(a.init)["model"])
        print("weights from", a.init, flush=True)

    def save():
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "config": CONFIG},
                   state_path + ".tmp")
        os.replace(state_path + ".tmp", state_path)

    t0 = last_save = time.time()
    while step < a.steps:
        lr = a.lr * min(1.0, (step + 1) / 200) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / a.steps)))
        for g in opt.param_groups:
            g["lr"] = lr
        rng = random.Random(f"{a.seed}:{step}")
        loss_sum = 0.0
        for _ in range(a.accum):
            pages, offset = sample(train, rng)
            numeric, chars, rt, rp, rl, inputs, targets, gp, gl = tensors(pages, offset)
            logits = model(numeric, chars, rt, rp, rl, inputs, gp, gl)
            loss = F.cross_entropy(logits, targets) / a.accum
            loss.backward()
            loss_sum += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        step += 1
        if step % 50 == 0:
            print(f"step {step} loss {loss_sum:.4f} lr {lr:.2e} {time.time() - t0:.0f}s", flush=True)
        if step % a.eval_every == 0 or step == a.steps:
            print("eval", step, {k: round(v, 4) for k, v in evaluate(model, held, a.eval_docs).items()}, flush=True)
            manual = [d for d in held if d["style"].get("manual")]
            if manual:  # the manual-style documents among the held-out ones (docsynth.manual_blocks)
                print("eval manual", step, {k: round(v, 4) for k, v in evaluate(model, manual, a.eval_docs).items()},
                      flush=True)
        if step % a.reload_every == 0:
            train = load_split(a.work, "train")
            print(f"{len(train)} training documents", flush=True)
        if time.time() - last_save > a.save_minutes * 60 or step == a.steps:
            save()
            last_save = time.time()


if __name__ == "__main__":
    main()
