"""Create tiny random decoder checkpoints and golden greedy runs for folio's tests.

usage: /usr/bin/python3 tools/reference/make_fixtures.py [OUT_DIR]
       (default OUT_DIR: tests/fixtures/decoder next to this repository's tools/)

Deterministic: the same seeds give the same bytes. For each case it writes OUT_DIR/<case>/:
  config.json, model.safetensors            the checkpoint (f32, or the same values rounded to bf16)
  golden_<policy>.safetensors               prefill_logits [vocab], step_logits [len(steps), vocab]
  golden_<policy>.json                      prompt_ids, policy, window, steps, greedy_ids, ...
for policy in {full, rswa}. See README.md next to this file.

Each case has a list of candidate seeds; the first seed whose runs pass `acceptable()` (varied
greedy ids, a clear top-1/top-2 logit gap at every step, full and rswa ids differ) is used, for
both the f32 and the bf16 variant.
"""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import decoder as ref  # noqa: E402

PROMPT_LEN = 24
WINDOW = 8
N_STEPS = 40
RECORD_STEPS = [0, 5, 7, 8, 9, 20, 39]
POLICIES = ("full", "rswa")
MIN_MARGIN = 1e-2          # smallest accepted top-1 minus top-2 logit gap, any step, any policy
MIN_DISTINCT = 12          # distinct ids among the 41 greedy ids

LLAMA = dict(
    architectures=["LlamaForCausalLM"], model_type="llama",
    vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    rms_norm_eps=1e-5, rope_theta=50000.0, max_position_embeddings=256,
    bos_token_id=1, eos_token_id=2, tie_word_embeddings=False, hidden_act="silu", attention_bias=False,
)

# Key names as in the published Unlimited-OCR config.json (plus the DeepseekV2Config keys it leaves at
# their defaults, written out so that a loader need not know the defaults).
UOCR = dict(
    architectures=["DeepseekV2ForCausalLM"], model_type="deepseek_v2",
    vocab_size=256, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
    num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
    n_routed_experts=8, n_shared_experts=2, num_experts_per_tok=3, first_k_dense_replace=1,
    moe_layer_freq=1, n_group=1, topk_group=1, topk_method="greedy", scoring_func="softmax",
    norm_topk_prob=False, routed_scaling_factor=1.0,
    kv_lora_rank=None, q_lora_rank=None, qk_nope_head_dim=0, qk_rope_head_dim=0, v_head_dim=16,
    use_mla=False, rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=32768,
    bos_token_id=0, eos_token_id=1, lm_head=True, rm_head=False, tie_word_embeddings=False,
    hidden_act="silu", attention_bias=False, sliding_window_size=WINDOW,
)

# The published model does not renormalise the top-k weights; this variant checks the path that does
# (renormalised, then scaled by routed_scaling_factor, as the official MoEGate does).
UOCR_RENORM = dict(UOCR, norm_topk_prob=True, routed_scaling_factor=2.5)

CASES = [("llama-tiny", LLAMA, list(range(100, 140))), ("uocr-tiny", UOCR, list(range(200, 240))),
         ("uocr-tiny-renorm", UOCR_RENORM, list(range(300, 340)))]


def random_weights(cfg, seed):
    """Seeded values for every tensor the reference needs, generated in sorted-name order.

    norms ~ 1 + 0.1 N; embeddings ~ 0.5 N; q/k projections ~ 2 N / sqrt(fan_in) (sharper attention,
    so that the window visibly matters); lm_head ~ 3 N / sqrt(fan_in) (logits of std ~3, so that
    the greedy choice has a clear margin); other matrices ~ N / sqrt(fan_in)."""
    cfg = ref.load_config_dict(cfg)
    names = sorted(ref.tensor_names(cfg))
    shapes = weight_shapes(cfg)
    g = torch.Generator().manual_seed(seed)
    out = {}
    for n in names:
        shape = shapes(n)
        r = torch.randn(shape, generator=g, dtype=torch.float32)
        if n.endswith("norm.weight"):
            v = 1.0 + 0.1 * r
        elif n == "model.embed_tokens.weight":
            v = 0.5 * r
        elif n.endswith(("q_proj.weight", "k_proj.weight")):
            v = 2.0 * r / math.sqrt(shape[1])
        elif n == "lm_head.weight":
            v = 3.0 * r / math.sqrt(shape[1])
        else:
            v = r / math.sqrt(shape[1])
        out[n] = v
    return out


def weight_shapes(cfg):
    H, V = cfg["hidden_size"], cfg["vocab_size"]
    hd = cfg.get("head_dim") or H // cfg["num_attention_heads"]
    nq, nkv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd

    def shape(n):
        if n in ("model.embed_tokens.weight", "lm_head.weight"):
            return (V, H)
        if n.endswith("norm.weight"):
            return (H,)
        if n.endswith("q_proj.weight"):
            return (nq, H)
        if n.endswith(("k_proj.weight", "v_proj.weight")):
            return (nkv, H)
        if n.endswith("o_proj.weight"):
            return (H, nq)
        if n.endswith("mlp.gate.weight"):
            return (cfg["n_routed_experts"], H)
        if ".experts." in n:
            inter = cfg["moe_intermediate_size"]
        elif ".shared_experts." in n:
            inter = cfg["moe_intermediate_size"] * cfg["n_shared_experts"]
        else:
            inter = cfg["intermediate_size"]
        return (H, inter) if n.endswith("down_proj.weight") else (inter, H)
    return shape


def prompt_for(cfg, seed):
    g = torch.Generator().manual_seed(seed + 7)
    ids = torch.randint(3, cfg["vocab_size"], (PROMPT_LEN,), generator=g).tolist()
    ids[0] = cfg["bos_token_id"]
    return ids


def top2_margin(logits):
    top = torch.topk(logits, 2, dim=-1).values
    return float((top[..., 0] - top[..., 1]).min())


def run_case(cfg, weights, prompt):
    full_cfg = ref.load_config_dict(cfg)
    model = ref.Decoder(full_cfg, weights)
    runs = {}
    for policy in POLICIES:
        prefill, steps, greedy = ref.greedy_decode(model, prompt, policy, WINDOW, N_STEPS)
        runs[policy] = dict(prefill=prefill, steps=steps, greedy=greedy,
                            margin=min(top2_margin(prefill), top2_margin(steps)))
    return runs


def acceptable(runs):
    full, rswa = runs["full"]["greedy"], runs["rswa"]["greedy"]
    return (full != rswa
            and all(len(set(r["greedy"])) >= MIN_DISTINCT for r in runs.values())
            and all(r["margin"] >= MIN_MARGIN for r in runs.values()))


def write_case(out_dir, cfg, weights, prompt, runs, weights_dtype, seed):
    os.makedirs(out_dir, exist_ok=True)
    cfg = dict(cfg, torch_dtype="float32" if weights_dtype == "f32" else "bfloat16")
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
        f.write("\n")
    store_dtype = torch.float32 if weights_dtype == "f32" else torch.bfloat16
    ref.save_safetensors(os.path.join(out_dir, "model.safetensors"),
                         {k: v.to(store_dtype) for k, v in weights.items()},
                         metadata={"format": "pt", "seed": seed, "generator": "tools/reference/make_fixtures.py"})
    for policy, r in runs.items():
        ref.save_safetensors(os.path.join(out_dir, f"golden_{policy}.safetensors"),
                             {"prefill_logits": r["prefill"], "step_logits": r["steps"][RECORD_STEPS]})
        first_diff = next((i for i, (a, b) in enumerate(zip(runs["full"]["greedy"], runs["rswa"]["greedy"]))
                           if a != b), None)
        meta = {
            "prompt_ids": prompt, "policy": policy, "window": WINDOW, "steps": RECORD_STEPS,
            "greedy_ids": r["greedy"], "weights_dtype": weights_dtype,
            "prompt_len": PROMPT_LEN, "n_steps": N_STEPS,
            "min_top2_margin": round(r["margin"], 6),
            "first_greedy_index_where_full_and_rswa_differ": first_diff,
            "definition": "g0 = argmax(prefill_logits at position P-1); step k feeds g_k at position P+k "
                          "giving step logits; g_{k+1} = argmax of them; step_logits row i = step steps[i]",
        }
        with open(os.path.join(out_dir, f"golden_{policy}.json"), "w") as f:
            f.write(compact_json(meta))


def compact_json(obj):
    """One top-level key per line, values (lists included) on that line."""
    lines = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in obj.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "fixtures", "decoder")
    out_root = os.path.abspath(out_root)
    torch.set_num_threads(1)
    for name, cfg, seeds in CASES:
        for seed in seeds:
            w32 = random_weights(cfg, seed)
            wbf = {k: v.to(torch.bfloat16).float() for k, v in w32.items()}
            prompt = prompt_for(cfg, seed)
            r32 = run_case(cfg, w32, prompt)
            if not acceptable(r32):
                continue
            rbf = run_case(cfg, wbf, prompt)
            if not acceptable(rbf):
                continue
            write_case(os.path.join(out_root, name), cfg, w32, prompt, r32, "f32", seed)
            write_case(os.path.join(out_root, name + "-bf16"), cfg, wbf, prompt, rbf, "bf16", seed)
            print(f"{name}: seed {seed}; margins f32 {r32['full']['margin']:.4f}/{r32['rswa']['margin']:.4f} "
                  f"bf16 {rbf['full']['margin']:.4f}/{rbf['rswa']['margin']:.4f}")
            for tag, r in (("f32", r32), ("bf16", rbf)):
                for p in POLICIES:
                    print(f"  {tag} {p:4s} {r[p]['greedy']}")
            break
        else:
            raise SystemExit(f"{name}: no acceptable seed among {seeds[0]}..{seeds[-1]}")


if __name__ == "__main__":
    main()
