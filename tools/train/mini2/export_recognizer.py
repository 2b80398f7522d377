"""Exports the line recognizer for the C++ engine: batch norm folded into the convolutions.

    /usr/bin/python3 tools/train/mini2/export_recognizer.py --checkpoint tools/train/mini2/checkpoints/recognizer.pt \
        --out /tmp/recognizer [--check]

Writes OUT/recognizer.safetensors (f32) and OUT/recognizer.json. Tensors, in the order they run:
  conv{0..3}.weight [cout, cin, 3, 3] + .bias   (3x3, padding 1, then ReLU; max-pools 2x2, 2x2,
                                                  (2,1) after conv 0, 1, 2)
  proj.weight [256, 512] + .bias                (per frame: its 4 rows x 128 channels, row major,
                                                  the order an HWC map gathers in; then ReLU)
  block{0..3}.weight [256, 256, 3] + .bias      (x + ReLU(conv1d k=3, padding 1))
  head.weight [classes, 256] + .bias            (class 0 the CTC blank, class k CHARSET[k-1])
--check runs the folded tensors through plain torch functions and compares with the trained module
in eval mode (the C++ port's oracle is this same computation).
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference"))
from decoder import save_safetensors  # noqa: E402
from lines import ASCEND, CHARSET, CORE_FRACTION, CORE_MIN_SHARE, DESCEND, HEIGHT, PAD  # noqa: E402
from recognizer import LineRecognizer  # noqa: E402

torch.backends.mkldnn.enabled = False
POOLS = [(2, 2), (2, 2), (2, 1), None]


def fold(weight, bn):
    """conv weight (no bias) followed by eval-mode batch norm -> (weight, bias)."""
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    w = weight * scale.reshape(-1, *([1] * (weight.dim() - 1)))
    return w.detach(), (bn.bias - bn.running_mean * scale).detach()


def folded_tensors(model):
    t = {}
    convs = [m for m in model.features if isinstance(m, torch.nn.Sequential)]
    for i, seq in enumerate(convs):
        t[f"conv{i}.weight"], t[f"conv{i}.bias"] = fold(seq[0].weight, seq[1])
    w, b = fold(model.proj[0].weight, model.proj[1])
    # torch flattens (channel, row); the engine gathers (row, channel): reorder the columns.
    w = w.squeeze(-1)
    rows = 4
    t["proj.weight"] = w.reshape(w.shape[0], -1, rows).transpose(1, 2).reshape(w.shape[0], -1).contiguous()
    t["proj.bias"] = b
    for i, blk in enumerate(model.blocks):
        t[f"block{i}.weight"], t[f"block{i}.bias"] = fold(blk.conv.weight, blk.bn)
    t["head.weight"], t["head.bias"] = model.head.weight.detach().squeeze(-1), model.head.bias.detach()
    return t


def run_folded(t, x):
    for i, pool in enumerate(POOLS):
        x = F.relu(F.conv2d(x, t[f"conv{i}.weight"], t[f"conv{i}.bias"], padding=1))
        if pool:
            x = F.max_pool2d(x, pool)
    x = x.permute(0, 2, 1, 3).flatten(1, 2)  # (row, channel) per frame
    x = F.relu(F.conv1d(x, t["proj.weight"].unsqueeze(-1), t["proj.bias"]))
    i = 0
    while f"block{i}.weight" in t:
        x = x + F.relu(F.conv1d(x, t[f"block{i}.weight"], t[f"block{i}.bias"], padding=1))
        i += 1
    return F.conv1d(x, t["head.weight"].unsqueeze(-1), t["head.bias"]).transpose(1, 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    st = torch.load(a.checkpoint)
    model = LineRecognizer()
    model.load_state_dict(st["model"])
    model.eval()
    t = folded_tensors(model)
    os.makedirs(a.out, exist_ok=True)
    save_safetensors(os.path.join(a.out, "recognizer.safetensors"), {k: v.float() for k, v in t.items()})
    cfg = {"height": HEIGHT, "frame_stride": 4, "charset": CHARSET, "blank": 0, "step": st["step"],
           "crop_rule": {"core_fraction": CORE_FRACTION, "core_min_share": CORE_MIN_SHARE, "ascend": ASCEND, "descend": DESCEND, "pad": PAD}}
    with open(os.path.join(a.out, "recognizer.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=1)
    if a.check:
        x = torch.rand(3, 1, HEIGHT, 200)
        with torch.no_grad():
            diff = (model(x) - run_folded(t, x)).abs().max().item()
        print(f"folded vs module: max |logit difference| {diff:.2e}")
        if diff > 1e-3:
            sys.exit(1)


if __name__ == "__main__":
    main()
