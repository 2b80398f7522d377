"""Decode speed and peak memory of a PyTorch eager decoder: the peer that `folio bench report` puts
side by side with `folio bench decode` (same checkpoint, same machine, same run).

The model is tools/reference/decoder.py's (independent of folio's C++), run the way the Hugging Face
code runs on a CPU: eager PyTorch, one token per step, a KV cache per layer (preallocated, so no
per-step concatenation), experts run only on the tokens routed to them. Policies:

  full  the cache holds every token; generated token k attends to all P + k + 1 of them.
  rswa  the cache holds the reference (P rows, pinned) and a ring of W rows for generated tokens:
        token k is written to ring row k mod W and attends to the whole reference and to generated
        tokens b with 0 <= k - b < W, exactly the golden generator's mask (decoder.attention_mask).

The reference is P seeded random token ids (the decoder-only stand-in for image tokens, as in
`folio bench decode`); then N tokens are decoded greedily, EOS ignored. Weights are read tensor by
tensor from model.safetensors and kept in --dtype (f32: bf16 values widened exactly; bf16: as
stored). Peak RSS is the operating system's (getrusage ru_maxrss), for the whole process.

  /usr/bin/python3 tools/reference/bench_decode.py --model DIR --policy rswa --window 128 \
      --ref-tokens 4096 --gen-tokens 8192 --threads 2 --json out.json
  /usr/bin/python3 tools/reference/bench_decode.py --model tests/fixtures/decoder/uocr-tiny --check
      (greedy ids of this cached decoder == decoder.greedy_decode's uncached masked ones, both policies)

JSON: suite "decode", engine "pytorch-eager", torch, model, policy, window, dtype, threads, ref_tokens,
gen_tokens, load_s, prefill_ms, samples [{pos, cached_tokens, ms_per_token}], ms_per_token,
decode_tokens_per_s, rss_peak_bytes, greedy_ids_head.
"""
import argparse
import json
import math
import os
import resource
import struct
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import decoder as ref  # noqa: E402


def load_weights(model_dir, cfg, dtype):
    """Every tensor the model reads, one at a time from the file (no second copy of the checkpoint)."""
    path = os.path.join(model_dir, "model.safetensors")
    wanted = set(ref.tensor_names(cfg))
    out = {}
    with open(path, "rb") as f:
        (hlen,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(hlen).decode("utf-8"))
        base = 8 + hlen
        for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0] if kv[0] != "__metadata__" else -1):
            if name not in wanted:
                continue
            start, end = info["data_offsets"]
            f.seek(base + start)
            raw = bytearray(f.read(end - start))
            t = torch.frombuffer(raw, dtype=ref._ST_DTYPES[info["dtype"]]).reshape(info["shape"])
            out[name] = t.to(dtype) if t.dtype != dtype else t
    missing = wanted - out.keys()
    if missing:
        raise SystemExit(f"{path}: lacks tensor {sorted(missing)[0]}")
    return out


class CachedDecoder(ref.Decoder):
    """decoder.Decoder with a KV cache: forward_cached(ids, start) runs positions start.. of a sequence
    whose earlier keys and values are in the cache."""

    def __init__(self, cfg, weights, policy, window, ref_tokens, gen_tokens, dtype):
        super().__init__(cfg, weights)
        self.policy, self.window, self.P, self.dtype = policy, window, ref_tokens, dtype
        cap = ref_tokens + (gen_tokens + 1 if policy == "full" else window)
        self.k = [torch.zeros(self.n_kv, cap, self.head_dim, dtype=dtype) for _ in range(self.n_layers)]
        self.v = [torch.zeros(self.n_kv, cap, self.head_dim, dtype=dtype) for _ in range(self.n_layers)]

    def slot(self, pos):
        """Cache row of absolute position pos (rswa: generated token k goes to ring row k mod W)."""
        if self.policy == "full" or pos < self.P:
            return pos
        return self.P + (pos - self.P) % self.window

    def visible(self, pos):
        """Cache rows a query at absolute position pos reads (prefix of the buffer, order irrelevant)."""
        if self.policy == "full" or pos < self.P:
            return pos + 1
        return self.P + min(pos - self.P + 1, self.window)

    def attention_cached(self, i, x, cos, sin, start):
        p = f"model.layers.{i}.self_attn."
        T = x.shape[0]
        q = self._lin(x, p + "q_proj.weight").view(T, self.n_heads, self.head_dim).transpose(0, 1)
        k = self._lin(x, p + "k_proj.weight").view(T, self.n_kv, self.head_dim).transpose(0, 1)
        v = self._lin(x, p + "v_proj.weight").view(T, self.n_kv, self.head_dim).transpose(0, 1)
        q = ref.apply_rope(q, cos, sin)
        k = ref.apply_rope(k, cos, sin)
        group = self.n_heads // self.n_kv
        if T > 1:
            # prefill chunk (reference only, so rows are contiguous): causal within the chunk
            assert start + T <= self.P or self.policy == "full"
            self.k[i][:, start:start + T] = k
            self.v[i][:, start:start + T] = v
            n = start + T
            kk = self.k[i][:, :n].repeat_interleave(group, dim=0)
            vv = self.v[i][:, :n].repeat_interleave(group, dim=0)
            scores = torch.matmul(q, kk.transpose(1, 2)) / math.sqrt(self.head_dim)
            qi = torch.arange(start, start + T)[:, None]
            kj = torch.arange(n)[None, :]
            scores = scores.masked_fill(~(kj <= qi)[None], float("-inf"))
        else:
            s = self.slot(start)
            self.k[i][:, s] = k[:, 0]
            self.v[i][:, s] = v[:, 0]
            n = self.visible(start)
            kk = self.k[i][:, :n].repeat_interleave(group, dim=0)
            vv = self.v[i][:, :n].repeat_interleave(group, dim=0)
            scores = torch.matmul(q, kk.transpose(1, 2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores.float(), dim=-1).to(vv.dtype)
        out = torch.matmul(probs, vv).transpose(0, 1).reshape(T, self.n_heads * self.head_dim)
        return self._lin(out, p + "o_proj.weight")

    def moe(self, i, x):
        """Same routing as decoder.Decoder.moe, but each expert runs only on its own tokens."""
        c = self.cfg
        p = f"model.layers.{i}.mlp."
        scores = torch.softmax(torch.nn.functional.linear(x, self.w[p + "gate.weight"]).float(), dim=-1)
        k = c["num_experts_per_tok"]
        top_w, top_i = torch.topk(scores, k, dim=-1)
        if k > 1 and c["norm_topk_prob"]:
            top_w = top_w / (top_w.sum(-1, keepdim=True) + 1e-20)
        top_w = (top_w * float(c["routed_scaling_factor"])).to(x.dtype)
        y = torch.zeros_like(x)
        for e in torch.unique(top_i).tolist():
            rows, slot = (top_i == e).nonzero(as_tuple=True)
            out = self.dense_mlp(p + f"experts.{e}.", x[rows])
            y.index_add_(0, rows, out * top_w[rows, slot][:, None])
        if c.get("n_shared_experts"):
            y = y + self.dense_mlp(p + "shared_experts.", x)
        return y

    def forward_cached(self, ids, start):
        ids = torch.as_tensor(ids, dtype=torch.long)
        T = ids.shape[0]
        cos, sin = ref.rope_cos_sin(torch.arange(start, start + T), self.head_dim, self.theta)
        cos, sin = cos.to(self.dtype), sin.to(self.dtype)
        h = self.w["model.embed_tokens.weight"][ids]
        for i in range(self.n_layers):
            p = f"model.layers.{i}."
            h = h + self.attention_cached(i, ref.rms_norm(h, self.w[p + "input_layernorm.weight"], self.eps), cos, sin, start)
            x = ref.rms_norm(h, self.w[p + "post_attention_layernorm.weight"], self.eps)
            h = h + (self.moe(i, x) if ref.is_moe_layer(self.cfg, i) else self.dense_mlp(p + "mlp.", x))
        h = ref.rms_norm(h[-1], self.w["model.norm.weight"], self.eps)
        head = self.w["model.embed_tokens.weight" if self.cfg["tie_word_embeddings"] else "lm_head.weight"]
        return torch.nn.functional.linear(h, head).float()


def prefill(model, reference, chunk):
    """The reference in chunks; returns (logits after it, milliseconds)."""
    t0 = time.perf_counter()
    for s in range(0, len(reference), chunk):
        logits = model.forward_cached(reference[s:s + chunk], s)
    return logits, (time.perf_counter() - t0) * 1e3


def decode(model, reference, gen_tokens, sample_every, prefill_chunk=512):
    """Prefill then greedy decode; returns (prefill_ms, samples, decode_ms, greedy ids)."""
    P = len(reference)
    with torch.no_grad():
        logits, prefill_ms = prefill(model, reference, prefill_chunk)
        ids, samples = [], []
        t_start = t_win = time.perf_counter()
        for g in range(1, gen_tokens + 1):
            nxt = int(logits.argmax())
            ids.append(nxt)
            logits = model.forward_cached([nxt], P + g - 1)
            if g % sample_every == 0:
                t = time.perf_counter()
                samples.append({"pos": g, "cached_tokens": model.visible(P + g - 1),
                                "ms_per_token": (t - t_win) * 1e3 / sample_every})
                t_win = t
        decode_ms = (time.perf_counter() - t_start) * 1e3
    return prefill_ms, samples, decode_ms, ids


def decode_sampled(model, reference, gen_tokens, measure_at, measure_tokens, prefill_chunk=512):
    """Greedy decode timed only in windows: measure_tokens tokens from each generated position in
    measure_at; the positions in between are fast-forwarded, not decoded one by one.

    full: the skipped tokens (the last greedy token repeated) go through the model in chunks, so the
    cache holds every position as a decoded run would. rswa: positions that would have left the ring
    before the next window are skipped outright and the W tokens before it are decoded one at a time
    into the ring, so it is full, at the right positions, when the window starts. Either way each
    window's step reads exactly the cache rows a decoded run reads there; only the token values
    differ. Returns (prefill_ms, samples, fill_ms, mean ms/token over the whole output by linear
    interpolation between the windows (a step's work grows linearly with the cached tokens), ids)."""
    P = len(reference)
    with torch.no_grad():
        logits, prefill_ms = prefill(model, reference, prefill_chunk)
        ids, samples, fill_ms = [], [], 0.0
        g = 0  # generated tokens fed so far; the next one is fed at position P + g
        nxt = int(logits.argmax())
        for at in measure_at:
            t1 = time.perf_counter()
            if model.policy == "full":
                while g < at:
                    n = min(prefill_chunk, at - g)
                    logits = model.forward_cached([nxt] * n, P + g)
                    g += n
            else:
                g = max(g, at - model.window)
                while g < at:
                    logits = model.forward_cached([nxt], P + g)
                    g += 1
            fill_ms += (time.perf_counter() - t1) * 1e3
            nxt = int(logits.argmax())
            t1 = time.perf_counter()
            for _ in range(measure_tokens):
                ids.append(nxt)
                logits = model.forward_cached([nxt], P + g)
                g += 1
                nxt = int(logits.argmax())
            ms = (time.perf_counter() - t1) * 1e3 / measure_tokens
            samples.append({"pos": g, "window_start": at, "cached_tokens": model.visible(P + g - 1), "ms_per_token": ms})
    # Mean over generated tokens 0 .. gen_tokens - 1 of the piecewise-linear ms/token through the
    # windows' midpoints (held constant before the first and after the last).
    xs = [s["window_start"] + (measure_tokens - 1) / 2 for s in samples]
    ys = [s["ms_per_token"] for s in samples]
    def at_pos(x):
        if x <= xs[0]:
            return ys[0]
        for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
            if x <= x1:
                return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        return ys[-1]
    mean_ms = sum(at_pos(x) for x in range(gen_tokens)) / gen_tokens
    return prefill_ms, samples, fill_ms, mean_ms, ids


def check(model_dir, steps=20):
    """Greedy ids of the cached decoder against decoder.greedy_decode (uncached, explicit mask)."""
    cfg = ref.load_config(model_dir)
    raw, _ = ref.load_safetensors(os.path.join(model_dir, "model.safetensors"))
    weights = {k: v.float() for k, v in raw.items() if v.is_floating_point()}
    prompt = [int(t) for t in torch.randint(2, cfg["vocab_size"], (24,), generator=torch.Generator().manual_seed(3))]
    ok = True
    for policy in ("full", "rswa"):
        _, _, expect = ref.greedy_decode(ref.Decoder(cfg, weights), prompt, policy, 8, steps)
        m = CachedDecoder(cfg, weights, policy, 8, len(prompt), steps + 1, torch.float32)
        _, _, _, got = decode(m, prompt, steps + 1, steps + 1, prefill_chunk=10)
        same = got == expect
        ok &= same
        print(f"{policy}: cached greedy ids {'==' if same else '!='} uncached masked ids ({steps + 1} tokens)")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="HF directory: config.json + model.safetensors")
    ap.add_argument("--policy", choices=("full", "rswa"), default="rswa")
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--ref-tokens", type=int, default=1024)
    ap.add_argument("--gen-tokens", type=int, default=256)
    ap.add_argument("--sample-every", type=int, default=0, help="0: gen-tokens / 8")
    ap.add_argument("--threads", type=int, default=0, help="0: torch's default")
    ap.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--measure-at", default="",
                    help="comma-separated generated positions: time --measure-tokens tokens from each and fast-forward "
                         "the rest (see decode_sampled); empty: decode every token")
    ap.add_argument("--measure-tokens", type=int, default=64)
    ap.add_argument("--check", action="store_true", help="compare with decoder.greedy_decode and exit")
    a = ap.parse_args()
    if a.check:
        return check(a.model)
    if not a.json:
        ap.error("--json FILE is required")
    if a.ref_tokens < 1 or a.gen_tokens < 1 or a.window < 1:
        ap.error("--ref-tokens, --gen-tokens and --window must be positive")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dtype = torch.float32 if a.dtype == "f32" else torch.bfloat16
    t0 = time.perf_counter()
    cfg = ref.load_config(a.model)
    if a.ref_tokens + a.gen_tokens > cfg.get("max_position_embeddings", 1 << 30):
        ap.error(f"--ref-tokens + --gen-tokens exceeds the model's context of {cfg['max_position_embeddings']}")
    model = CachedDecoder(cfg, load_weights(a.model, cfg, dtype), a.policy, a.window, a.ref_tokens, a.gen_tokens, dtype)
    load_s = time.perf_counter() - t0
    g = torch.Generator().manual_seed(a.seed)
    reference = torch.randint(2, cfg["vocab_size"], (a.ref_tokens,), generator=g).tolist()
    extra = {}
    if a.measure_at:
        at = sorted(int(x) for x in a.measure_at.split(","))
        if at[0] < 0 or at[-1] + a.measure_tokens > a.gen_tokens or a.measure_tokens < 1:
            ap.error("--measure-at positions + --measure-tokens must lie within --gen-tokens")
        prefill_ms, samples, fill_ms, ms, ids = decode_sampled(model, reference, a.gen_tokens, at, a.measure_tokens)
        extra = {"measured": "sampled", "measure_at": at, "measure_tokens": a.measure_tokens, "fill_ms": fill_ms,
                 "decoded_tokens": len(ids)}
    else:
        every = a.sample_every or max(1, a.gen_tokens // 8)
        prefill_ms, samples, decode_ms, ids = decode(model, reference, a.gen_tokens, every)
        ms = decode_ms / a.gen_tokens
    out = {"suite": "decode", "engine": "pytorch-eager", "torch": torch.__version__, "model": a.model,
           "architecture": cfg["arch"], "policy": a.policy, "window": a.window, "dtype": a.dtype,
           "kv_dtype": a.dtype, "threads": torch.get_num_threads(), "ref_tokens": a.ref_tokens,
           "gen_tokens": a.gen_tokens, "load_s": load_s, "prefill_ms": prefill_ms, "samples": samples,
           "ms_per_token": ms, "decode_tokens_per_s": 1000.0 / ms,
           "rss_peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
           "greedy_ids_head": ids[:32], **extra}
    with open(a.json, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(f"pytorch eager {a.policy}/{a.dtype}: {1000.0 / ms:.2f} tokens/s ({ms:.2f} ms/token), prefill {prefill_ms / 1e3:.1f} s, "
          f"load {load_s:.1f} s, RSS peak {out['rss_peak_bytes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
