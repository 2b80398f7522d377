"""Check that the reference decoder reproduces the official golden run in tests/fixtures/official.

usage: /usr/bin/python3 tools/reference/check_official.py [FIXTURE_DIR]

The official run (Test A of shared/tools/official-golden) used the official R-SWA ring cache; the
reference recomputes the sequence under the R-SWA training mask. Both must give the same greedy ids
and logits within float32 rounding. Exit status 1 when they do not.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import decoder as ref  # noqa: E402

TOLERANCE = 1e-4


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "fixtures", "official")
    model = ref.Decoder.load(d)
    gold, _ = ref.load_safetensors(os.path.join(d, "golden_text.safetensors"))
    with open(os.path.join(d, "golden.json")) as f:
        text = json.load(f)["text"]
    P, W, n = text["prompt_len"], text["ring_window"], text["n_decode"]
    all_ids = text["record"]["all_ids"]  # prompt + greedy ids (the I64 tensors were dropped from the file)
    prefill, steps, greedy = ref.greedy_decode(model, all_ids[:P], "rswa", W, n)
    official_ids = all_ids[P:]
    worst = (prefill - gold["logits_prefill_last"].float()).abs().max().item()
    print(f"prefill_last  max|diff| {worst:.3g}")
    for name in sorted((k for k in gold if k.startswith("logits_decode_")), key=lambda s: int(s.rsplit("_", 1)[1])):
        k = int(name.rsplit("_", 1)[1])
        d_k = (steps[k] - gold[name].float()).abs().max().item()
        worst = max(worst, d_k)
        print(f"decode_{k:<3d}    max|diff| {d_k:.3g}")
    same = greedy == official_ids
    print(f"greedy ids ({len(greedy)}) identical: {same}; worst logit diff {worst:.3g}")
    return 0 if same and worst < TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
