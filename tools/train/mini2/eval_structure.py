"""A structure decoder checkpoint on the held-out documents of a WORK directory, decoded greedily as
in training, with the heading levels as the decoder gives them and as the engine settles them
(heading_levels.py).

    OMP_NUM_THREADS=1 /usr/bin/python3 tools/train/mini2/eval_structure.py --work train-work/mini2 \\
        --checkpoint tools/train/mini2/checkpoints/structure.pt
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from structure_model import StructureDecoder  # noqa: E402
from train_structure import evaluate, load_split  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--docs", type=int, default=100)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = StructureDecoder()
    model.load_state_dict(torch.load(a.checkpoint)["model"])
    held = load_split(a.work, "heldout")
    sets = {"all": held, "manuals": [d for d in held if d["style"].get("manual")]}
    print(f"{len(held)} held-out documents ({len(sets['manuals'])} manuals), the first {a.docs} of each set")
    for name, docs in sets.items():
        for rules in (False, True):
            r = evaluate(model, docs, a.docs, heading_rules=rules)
            label = "levels settled" if rules else "decoder's levels"
            print(name, label, {k: round(v, 4) for k, v in r.items()}, flush=True)


if __name__ == "__main__":
    main()
