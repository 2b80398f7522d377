"""Independent, deliberately simple PyTorch reference for folio's decoder-only models.

Two architectures, loaded from a Hugging Face style directory (config.json + model.safetensors):

  llama        LlamaForCausalLM (GQA allowed, untied lm_head)
  deepseek_v2  DeepSeek-V2 without MLA, as used by the Unlimited-OCR decoder: plain multi-head
               attention (q/k/v/o projections, no bias), a dense gated-SiLU MLP in the first
               `first_k_dense_replace` layers and a mixture of experts (softmax gate, greedy top-k,
               shared experts) in the others.

Everything is computed in float32 (bf16 checkpoints are widened on load). Nothing is cached: each
call recomputes the whole sequence under an explicit attention mask, which is slow but makes the
attention policy easy to read:

  full  plain causal attention;
  rswa  the Reference Sliding Window Attention training mask: the first `prefix_len` positions
        (the reference = the whole first prefill) attend causally among themselves and are fully
        visible to every later (answer) token; answer token a attends to answer token b only when
        0 <= a - b < window.

Run with Debian's /usr/bin/python3 (torch 1.13). No dependency beyond torch.

  /usr/bin/python3 tools/reference/decoder.py MODEL_DIR --prompt 0,5,9 --policy rswa --window 8 --steps 10
"""
import argparse
import json
import math
import os
import struct

import torch

# ---------------------------------------------------------------------------------------------------
# safetensors: 8-byte little-endian header length, JSON header, then raw little-endian tensor bytes.
# ---------------------------------------------------------------------------------------------------
_ST_DTYPES = {
    "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool,
}
_ST_NAMES = {v: k for k, v in _ST_DTYPES.items()}


def load_safetensors(path):
    """Return {name: tensor} (dtypes as stored) and the __metadata__ dict (or {})."""
    with open(path, "rb") as f:
        blob = f.read()
    (hlen,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _ST_DTYPES[info["dtype"]]
        start, end = info["data_offsets"]
        raw = bytearray(blob[base + start:base + end])
        if len(raw) == 0:
            t = torch.empty(0, dtype=dtype)
        else:
            t = torch.frombuffer(raw, dtype=dtype)
        out[name] = t.reshape(info["shape"])
    return out, header.get("__metadata__", {})


def save_safetensors(path, tensors, metadata=None):
    """Write {name: tensor} in insertion order; header padded with spaces to a multiple of 8."""
    header = {}
    chunks = []
    offset = 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        # view as bytes without going through numpy (numpy has no bfloat16)
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _ST_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * ((8 - len(hbytes) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for c in chunks:
            f.write(c)


# ---------------------------------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------------------------------
# Defaults of the official DeepseekV2Config for keys the published config.json leaves out.
DEEPSEEK_V2_DEFAULTS = dict(
    rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None, attention_bias=False, hidden_act="silu",
    moe_layer_freq=1, norm_topk_prob=False, routed_scaling_factor=1.0, scoring_func="softmax",
    topk_method="greedy", n_shared_experts=None, n_routed_experts=None, first_k_dense_replace=0,
    tie_word_embeddings=False, use_mla=False,
)
LLAMA_DEFAULTS = dict(rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None, attention_bias=False,
                      hidden_act="silu", tie_word_embeddings=False)


def load_config(model_dir):
    """Read config.json (or the official golden tool's tiny_config.json) and fill defaults.

    Accepts three layouts: a flat HF config with model_type "llama" / "deepseek_v2"; the published
    Unlimited-OCR config.json (model_type "unlimited-ocr", decoder keys repeated at top level); and
    the official-golden tool's tiny_config.json (decoder keys under "language", no model_type)."""
    path = os.path.join(model_dir, "config.json")
    if not os.path.exists(path):
        path = os.path.join(model_dir, "tiny_config.json")
    with open(path) as f:
        raw = json.load(f)
    return load_config_dict(raw, path)


def load_config_dict(raw, source="config"):
    """Normalise a config dict: pick the architecture, fill defaults, reject what is unsupported."""
    if "language" in raw and "model_type" not in raw:
        cfg = dict(raw["language"])
        cfg["model_type"] = "deepseek_v2"
    else:
        cfg = dict(raw)
    mt = cfg.get("model_type")
    if mt in ("deepseek_v2", "unlimited-ocr"):
        arch = "deepseek_v2"
        defaults = DEEPSEEK_V2_DEFAULTS
    elif mt == "llama":
        arch = "llama"
        defaults = LLAMA_DEFAULTS
    else:
        raise ValueError(f"{source}: unsupported model_type {mt!r}")
    for k, v in defaults.items():
        if cfg.get(k) is None:
            cfg[k] = v
    cfg["arch"] = arch
    if cfg.get("num_key_value_heads") is None:
        cfg["num_key_value_heads"] = cfg["num_attention_heads"]
    if cfg.get("head_dim") is None:
        cfg["head_dim"] = cfg["hidden_size"] // cfg["num_attention_heads"]
    if cfg["rope_scaling"] is not None:
        raise ValueError(f"{source}: rope_scaling is not supported by the reference")
    if cfg["hidden_act"] != "silu":
        raise ValueError(f"{source}: hidden_act {cfg['hidden_act']!r} is not supported")
    if arch == "deepseek_v2":
        if cfg["use_mla"]:
            raise ValueError(f"{source}: use_mla=true is not supported")
        if cfg["scoring_func"] != "softmax" or cfg["topk_method"] != "greedy":
            raise ValueError(f"{source}: only softmax scoring with greedy top-k is supported")
    return cfg


def is_moe_layer(cfg, i):
    """DeepSeek-V2 rule: layer i is MoE iff n_routed_experts is set, i >= first_k_dense_replace and
    i % moe_layer_freq == 0; every other layer has the dense MLP (intermediate_size)."""
    return (cfg["arch"] == "deepseek_v2" and cfg.get("n_routed_experts") is not None
            and i >= cfg["first_k_dense_replace"] and i % cfg["moe_layer_freq"] == 0)


def tensor_names(cfg):
    """Every tensor name the model reads (checkpoint names, HF layout)."""
    names = ["model.embed_tokens.weight", "model.norm.weight"]
    if not cfg["tie_word_embeddings"]:
        names.append("lm_head.weight")
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        names += [p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
        names += [p + f"self_attn.{x}_proj.weight" for x in "qkvo"]
        if is_moe_layer(cfg, i):
            names.append(p + "mlp.gate.weight")
            for e in range(cfg["n_routed_experts"]):
                names += [p + f"mlp.experts.{e}.{x}_proj.weight" for x in ("gate", "up", "down")]
            if cfg.get("n_shared_experts"):
                names += [p + f"mlp.shared_experts.{x}_proj.weight" for x in ("gate", "up", "down")]
        else:
            names += [p + f"mlp.{x}_proj.weight" for x in ("gate", "up", "down")]
    return names


# ---------------------------------------------------------------------------------------------------
# building blocks (all float32)
# ---------------------------------------------------------------------------------------------------
def rms_norm(x, weight, eps):
    # y = w * x / sqrt(mean(x^2) + eps), statistics in float32
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rope_cos_sin(positions, head_dim, theta):
    """cos/sin tables [T, head_dim] for rotate-half RoPE over the whole head (frequencies repeated)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    freqs = positions.float()[:, None] * inv_freq[None, :]          # [T, head_dim/2]
    emb = torch.cat([freqs, freqs], dim=-1)                        # [T, head_dim]
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x, cos, sin):
    # x: [heads, T, head_dim]
    return x * cos[None] + rotate_half(x) * sin[None]


def silu_mlp(x, gate_w, up_w, down_w):
    return torch.nn.functional.linear(
        torch.nn.functional.silu(torch.nn.functional.linear(x, gate_w)) * torch.nn.functional.linear(x, up_w),
        down_w)


def attention_mask(seq_len, prefix_len, policy, window):
    """Boolean [T, T], True where query i may attend key j.

    full: j <= i.  rswa: positions < prefix_len are the reference (causal among themselves, visible
    to everyone after); answer i (a = i - prefix_len) sees answer j (b = j - prefix_len) iff
    0 <= a - b < window."""
    i = torch.arange(seq_len)[:, None]
    j = torch.arange(seq_len)[None, :]
    causal = j <= i
    if policy == "full":
        return causal
    if policy != "rswa":
        raise ValueError(f"unknown policy {policy!r}")
    if window is None or window < 1:
        raise ValueError("rswa needs window >= 1")
    key_is_ref = j < prefix_len
    query_is_ref = i < prefix_len
    in_window = (i - j >= 0) & (i - j < window)
    return torch.where(query_is_ref, causal, key_is_ref | in_window)


# ---------------------------------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------------------------------
class Decoder:
    """Decoder-only transformer; forward(ids, mask) -> logits [T, vocab] (float32)."""

    def __init__(self, cfg, weights):
        self.cfg = cfg
        self.w = weights
        self.arch = cfg["arch"]
        self.n_layers = cfg["num_hidden_layers"]
        self.n_heads = cfg["num_attention_heads"]
        self.n_kv = cfg["num_key_value_heads"]
        self.head_dim = cfg["head_dim"]
        self.eps = float(cfg["rms_norm_eps"])
        self.theta = float(cfg["rope_theta"])
        self.bias = bool(cfg["attention_bias"])
        if self.n_heads % self.n_kv:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        for name in tensor_names(cfg):
            if name not in weights:
                raise KeyError(f"checkpoint lacks tensor {name}")

    @classmethod
    def load(cls, model_dir):
        cfg = load_config(model_dir)
        path = os.path.join(model_dir, "model.safetensors")
        if not os.path.exists(path):
            path = os.path.join(model_dir, "tiny_weights.safetensors")
        raw, _ = load_safetensors(path)
        # compute in float32 whatever the stored dtype (bf16 values are exactly representable)
        weights = {k: v.float() for k, v in raw.items() if v.is_floating_point()}
        return cls(cfg, weights)

    # -- layers -------------------------------------------------------------------------------------
    def _lin(self, x, name):
        b = self.w.get(name[:-len("weight")] + "bias") if self.bias else None
        return torch.nn.functional.linear(x, self.w[name], b)

    def attention(self, i, x, cos, sin, mask):
        p = f"model.layers.{i}.self_attn."
        T = x.shape[0]
        q = self._lin(x, p + "q_proj.weight").view(T, self.n_heads, self.head_dim).transpose(0, 1)
        k = self._lin(x, p + "k_proj.weight").view(T, self.n_kv, self.head_dim).transpose(0, 1)
        v = self._lin(x, p + "v_proj.weight").view(T, self.n_kv, self.head_dim).transpose(0, 1)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        group = self.n_heads // self.n_kv          # query head h uses kv head h // group
        k = k.repeat_interleave(group, dim=0)
        v = v.repeat_interleave(group, dim=0)
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.head_dim)   # [H, T, T]
        scores = scores.masked_fill(~mask[None], float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(0, 1).reshape(T, self.n_heads * self.head_dim)
        return self._lin(out, p + "o_proj.weight")

    def dense_mlp(self, prefix, x):
        return silu_mlp(x, self.w[prefix + "gate_proj.weight"], self.w[prefix + "up_proj.weight"],
                        self.w[prefix + "down_proj.weight"])

    def moe(self, i, x):
        """DeepSeek-V2 MoE: scores = softmax over all routed experts of (x @ gate^T); the top-k scores
        (greedy) weight the chosen experts, renormalised only when norm_topk_prob (and k > 1), times
        routed_scaling_factor; the shared experts are one dense MLP added unweighted."""
        c = self.cfg
        p = f"model.layers.{i}.mlp."
        scores = torch.softmax(torch.nn.functional.linear(x, self.w[p + "gate.weight"]), dim=-1)
        k = c["num_experts_per_tok"]
        top_w, top_i = torch.topk(scores, k, dim=-1)
        if k > 1 and c["norm_topk_prob"]:
            top_w = top_w / (top_w.sum(-1, keepdim=True) + 1e-20)
        top_w = top_w * float(c["routed_scaling_factor"])
        # dense combine matrix [T, n_routed]: zero for experts a token did not pick; running every
        # expert on every token is wasteful but keeps the routing rule visible in one place
        combine = torch.zeros_like(scores).scatter(1, top_i, top_w)
        y = torch.zeros_like(x)
        for e in range(c["n_routed_experts"]):
            if bool((combine[:, e] != 0).any()):
                y = y + combine[:, e:e + 1] * self.dense_mlp(p + f"experts.{e}.", x)
        if c.get("n_shared_experts"):
            y = y + self.dense_mlp(p + "shared_experts.", x)
        return y

    def forward(self, ids, mask, positions=None, last_only=False):
        """ids: list/1-D tensor of token ids; mask: bool [T, T]; positions default 0..T-1.
        Returns logits [T, vocab], or [vocab] for the last position when last_only."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        T = ids.shape[0]
        if positions is None:
            positions = torch.arange(T)
        cos, sin = rope_cos_sin(positions, self.head_dim, self.theta)
        h = self.w["model.embed_tokens.weight"][ids]
        for i in range(self.n_layers):
            p = f"model.layers.{i}."
            h = h + self.attention(i, rms_norm(h, self.w[p + "input_layernorm.weight"], self.eps), cos, sin, mask)
            x = rms_norm(h, self.w[p + "post_attention_layernorm.weight"], self.eps)
            h = h + (self.moe(i, x) if is_moe_layer(self.cfg, i) else self.dense_mlp(p + "mlp.", x))
        h = rms_norm(h, self.w["model.norm.weight"], self.eps)
        if last_only:
            h = h[-1]
        head = self.w["model.embed_tokens.weight" if self.cfg["tie_word_embeddings"] else "lm_head.weight"]
        return torch.nn.functional.linear(h, head)


def greedy_decode(model, prompt_ids, policy, window, n_steps):
    """Prefill the prompt (P tokens), then n_steps greedy steps.

    g0 = argmax(prefill logits at position P-1); step k feeds g_k at position P+k and yields
    step_logits[k]; g_{k+1} = argmax(step_logits[k]). Returns (prefill_logits [V],
    step_logits [n_steps, V], greedy ids [n_steps + 1])."""
    ids = [int(t) for t in prompt_ids]
    P = len(ids)
    with torch.no_grad():
        prefill = model.forward(ids, attention_mask(P, P, policy, window), last_only=True)
        greedy = [int(prefill.argmax())]
        steps = []
        for k in range(n_steps):
            ids.append(greedy[k])
            T = len(ids)
            last = model.forward(ids, attention_mask(T, P, policy, window), last_only=True)
            steps.append(last)
            greedy.append(int(last.argmax()))
    return prefill, torch.stack(steps) if steps else torch.empty(0), greedy


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("--prompt", required=True, help="comma-separated token ids")
    ap.add_argument("--policy", choices=("full", "rswa"), default="full")
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--steps", type=int, default=16)
    a = ap.parse_args()
    model = Decoder.load(a.model_dir)
    prompt = [int(t) for t in a.prompt.split(",") if t.strip()]
    prefill, _, greedy = greedy_decode(model, prompt, a.policy, a.window, a.steps)
    print(json.dumps({"prefill_argmax": int(prefill.argmax()), "greedy_ids": greedy}))


if __name__ == "__main__":
    main()
