"""The folio mini OCR model in PyTorch: the training-side twin of folio's C++ implementation.

    page image -> per-row CNN + 1-D context -> frames (stride 2 px) -> CTC head (reads each row)
    frames where the row's greedy CTC path emits a character -> visual tokens (+ one row-end token per
    row, one page-end / document-end token per page), each carrying position codes
    (page, row, character number within the row: learned tables)
    reference = all pages' visual tokens + <bos>; a Llama-style decoder without rotary positions
    (NoPE) generates the text under the R-SWA mask (reference fully visible, last W generated tokens).

Each generated token's input carries the codes of the NEXT character to write (derived from the text
so far: a newline moves to the next row, <page> to the next page), so finding the glyph to read is a
match of codes in attention. Every formula here is mirrored in src/vision/mini_ocr_frontend.cpp
and src/runtime/mini_ocr_model.cpp; tensor names are the checkpoint's.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BOS, EOS, PAGE, PAD = 256, 257, 258, 259
VOCAB = 260
NEWLINE = 10
T_CHAR, T_ROW_END, T_PAGE_END, T_DOC_END, T_TEXT = range(5)

DEFAULT_CONFIG = dict(
    image_width=448, image_height=352, margin_top=16, line_pitch=32, rows=10,
    pixel_mean=0.5, pixel_std=0.5,
    conv_channels=[16, 32, 48, 64], conv_strides=[[2, 1], [2, 2], [2, 1], [1, 1]],
    frame_hidden=128, context_layers=2, context_kernel=5, ctc_vocab=96,
    max_rows=16, max_chars=256, max_pages=256,
    hidden=128, layers=3, heads=4, intermediate=256, window=128, rms_eps=1e-6, code_dims=32, lookup_init_gain=1.5,
)


def ctc_label(ch):
    """CTC class of a printable ASCII character (0 is the blank)."""
    return ord(ch) - 31


class FrontEnd(nn.Module):
    """One row band [B, 1, line_pitch, image_width] -> frames [B, T, frame_hidden] and CTC logits."""

    def __init__(self, c):
        super().__init__()
        chans = [1] + c["conv_channels"]
        self.conv = nn.ModuleList(
            nn.Conv2d(chans[i], chans[i + 1], 3, stride=tuple(c["conv_strides"][i]), padding=1)
            for i in range(len(c["conv_channels"])))
        h = c["line_pitch"]
        for s in c["conv_strides"]:
            h = (h + 2 - 3) // s[0] + 1
        self.out_h = h
        d = c["frame_hidden"]
        self.proj = nn.Linear(h * chans[-1], d)
        self.proj_norm = nn.LayerNorm(d)
        self.context = nn.ModuleList(
            nn.Conv1d(d, d, c["context_kernel"], padding=c["context_kernel"] // 2) for _ in range(c["context_layers"]))
        self.norm = nn.LayerNorm(d)
        self.ctc_head = nn.Linear(d, c["ctc_vocab"])

    def forward(self, bands):
        x = bands
        for conv in self.conv:
            x = F.relu(conv(x))
        b, ch, h, w = x.shape
        x = x.permute(0, 3, 2, 1).reshape(b, w, h * ch)  # per column: (row, channel), row-major like HWC
        x = self.proj_norm(self.proj(x))
        for conv in self.context:
            x = x + F.relu(conv(x.transpose(1, 2)).transpose(1, 2))
        f = self.norm(x)
        return f, self.ctc_head(f)


class Codes(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden"]
        self.visual_proj = nn.Linear(c["frame_hidden"], d)
        self.type_embed = nn.Embedding(5, d)
        self.row_embed = nn.Embedding(c["max_rows"], d)
        self.char_embed = nn.Embedding(c["max_chars"], d)
        self.page_embed = nn.Embedding(c["max_pages"], d)
        self.c = c
        # Position codes start in the last code_dims coordinates of the residual stream only (random
        # vectors there are nearly orthogonal, so "same position" is visible to a dot product from the
        # start); the type and all content start in the other coordinates.
        k = c["code_dims"]
        with torch.no_grad():
            for e in (self.row_embed, self.char_embed, self.page_embed):
                e.weight.zero_()
                e.weight[:, d - k:].normal_(0.0, 1.0)
            self.type_embed.weight.normal_(0.0, 0.5)
            self.type_embed.weight[:, d - k:] = 0.0
            self.visual_proj.weight[d - k:] = 0.0
            self.visual_proj.bias[d - k:] = 0.0

    def forward(self, types, pages, rows, chars):
        rows = rows.clamp(max=self.c["max_rows"] - 1)
        chars = chars.clamp(max=self.c["max_chars"] - 1)
        pages = pages.clamp(max=self.c["max_pages"] - 1)
        return self.type_embed(types) + self.row_embed(rows) + self.char_embed(chars) + self.page_embed(pages)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, ff = c["hidden"], c["intermediate"]
        self.heads = c["heads"]
        self.eps = c["rms_eps"]
        self.input_layernorm = nn.Parameter(torch.ones(d))
        self.post_attention_layernorm = nn.Parameter(torch.ones(d))
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.gate_proj = nn.Linear(d, ff, bias=False)
        self.up_proj = nn.Linear(d, ff, bias=False)
        self.down_proj = nn.Linear(ff, d, bias=False)

    def forward(self, x, mask):
        t, d = x.shape[-2], x.shape[-1]
        h = rms_norm(x, self.input_layernorm, self.eps)
        hd = d // self.heads
        q = self.q_proj(h).view(t, self.heads, hd).transpose(0, 1)
        k = self.k_proj(h).view(t, self.heads, hd).transpose(0, 1)
        v = self.v_proj(h).view(t, self.heads, hd).transpose(0, 1)
        s = (q @ k.transpose(1, 2)) / math.sqrt(hd)
        s = s.masked_fill(~mask[None], float("-inf"))
        a = torch.softmax(s, dim=-1) @ v
        x = x + self.o_proj(a.transpose(0, 1).reshape(t, d))
        h = rms_norm(x, self.post_attention_layernorm, self.eps)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class MiniOcr(nn.Module):
    def __init__(self, c=DEFAULT_CONFIG):
        super().__init__()
        self.c = dict(c)
        self.frontend = FrontEnd(c)
        self.codes = Codes(c)
        self.embed_tokens = nn.Embedding(VOCAB, c["hidden"])
        self.layers = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = nn.Parameter(torch.ones(c["hidden"]))
        self.lm_head = nn.Linear(c["hidden"], VOCAB, bias=False)
        nn.init.normal_(self.embed_tokens.weight, std=0.5)
        # Lookup initialisation: the last head of layer 0 starts with query = key = the code
        # coordinates (times a gain), so its scores are the dot product of the codes and a query
        # already attends to the visual token whose codes equal its own. Without it the gradient
        # towards the right token among thousands is too weak, and the decoder learns only a
        # character language model (what a first attempt here did).
        d, k, hd = c["hidden"], c["code_dims"], c["hidden"] // c["heads"]
        assert k == hd, "the lookup head reads exactly the code coordinates"
        with torch.no_grad():
            self.embed_tokens.weight[:, d - k:] = 0.0
            sel = torch.zeros(hd, d)
            sel[:, d - k:] = torch.eye(k) * c["lookup_init_gain"]
            for proj in (self.layers[0].q_proj, self.layers[0].k_proj):
                proj.weight[d - hd:] = sel

    # ---- page -> row bands
    def bands(self, pages):
        """pages: float tensor [P, H, W] in [0, 1] -> normalised bands [P * rows, 1, pitch, W]."""
        c = self.c
        x = (pages - c["pixel_mean"]) / c["pixel_std"]
        top, pitch, rows = c["margin_top"], c["line_pitch"], c["rows"]
        x = x[:, top:top + pitch * rows, :].reshape(pages.shape[0] * rows, 1, pitch, pages.shape[2])
        return x

    def decoder(self, x, mask):
        for blk in self.layers:
            x = blk(x, mask)
        return self.lm_head(rms_norm(x, self.norm, self.c["rms_eps"]))


def greedy_emissions(ctc_logits):
    """Per row: frame indices where the greedy CTC path emits (first frame of each run), and labels."""
    best = ctc_logits.argmax(-1).tolist()
    out = []
    for row in best:
        frames, labels, prev = [], [], 0
        for t, k in enumerate(row):
            if k != 0 and k != prev:
                frames.append(t)
                labels.append(k)
            prev = k
        out.append((frames, labels))
    return out


def reference_layout(emissions, rows_per_page, page_offset=0):
    """Visual tokens of a document from its rows' emissions.

    Returns (items, types, pages, rows, chars): items[i] = (band_index, frame) for a character token,
    or None for a row-end / page-end / document-end token. A page keeps rows up to its last row with
    an emission; each kept row gives its characters then a row-end token; each page ends with a
    page-end token (document-end on the last page)."""
    items, types, pages, rows, chars = [], [], [], [], []
    n_pages = len(emissions) // rows_per_page
    for p in range(n_pages):
        band0 = p * rows_per_page
        kept = 0
        for r in range(rows_per_page):
            if emissions[band0 + r][0]:
                kept = r + 1
        for r in range(kept):
            frames = emissions[band0 + r][0]
            for j, t in enumerate(frames):
                items.append((band0 + r, t)); types.append(T_CHAR)
                pages.append(p + page_offset); rows.append(r); chars.append(j)
            items.append(None); types.append(T_ROW_END)
            pages.append(p + page_offset); rows.append(r); chars.append(len(frames))
        items.append(None); types.append(T_DOC_END if p == n_pages - 1 else T_PAGE_END)
        pages.append(p + page_offset); rows.append(kept); chars.append(0)
    return items, types, pages, rows, chars


def text_codes(tokens, page_offset=0):
    """Codes (page, row, char) of the next character after each prefix of `tokens`:
    entry k is for the input that follows tokens[:k] (k = 0 is <bos>)."""
    p, r, ch = page_offset, 0, 0
    pages, rows, chars = [p], [r], [ch]
    for t in tokens:
        if t == NEWLINE:
            r, ch = r + 1, 0
        elif t == PAGE:
            p, r, ch = p + 1, 0, 0
        else:
            ch += 1
        pages.append(p); rows.append(r); chars.append(ch)
    return pages, rows, chars


def rswa_mask(n_ref, n_gen, window):
    """Reference: causal; generated: whole reference + the last `window` generated tokens (itself included)."""
    t = n_ref + n_gen
    i = torch.arange(t).view(-1, 1)
    j = torch.arange(t).view(1, -1)
    causal = j <= i
    key_ref = j < n_ref
    query_ref = i < n_ref
    in_window = (i - j >= 0) & (i - j < window)
    return torch.where(query_ref, causal, key_ref | in_window)


def llama_tensors(m):
    """{llama tensor name: tensor} of a decoder with embed_tokens, layers of Block, norm, lm_head."""
    out = {"model.embed_tokens.weight": m.embed_tokens.weight}
    for i, b in enumerate(m.layers):
        p = f"model.layers.{i}."
        out[p + "input_layernorm.weight"] = b.input_layernorm
        out[p + "post_attention_layernorm.weight"] = b.post_attention_layernorm
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out[p + f"self_attn.{n}.weight"] = getattr(b, n).weight
        for n in ("gate_proj", "up_proj", "down_proj"):
            out[p + f"mlp.{n}.weight"] = getattr(b, n).weight
    out["model.norm.weight"] = m.norm
    out["lm_head.weight"] = m.lm_head.weight
    return out


def state_dict_for_checkpoint(m):
    """{checkpoint tensor name: tensor}: llama names for the decoder, mini_ocr.* for the rest."""
    out = llama_tensors(m)
    fe = m.frontend
    for i, conv in enumerate(fe.conv):
        out[f"mini_ocr.conv.{i}.weight"] = conv.weight
        out[f"mini_ocr.conv.{i}.bias"] = conv.bias
    out["mini_ocr.proj.weight"] = fe.proj.weight
    out["mini_ocr.proj.bias"] = fe.proj.bias
    out["mini_ocr.proj_norm.weight"] = fe.proj_norm.weight
    out["mini_ocr.proj_norm.bias"] = fe.proj_norm.bias
    for i, conv in enumerate(fe.context):
        out[f"mini_ocr.context.{i}.weight"] = conv.weight
        out[f"mini_ocr.context.{i}.bias"] = conv.bias
    out["mini_ocr.norm.weight"] = fe.norm.weight
    out["mini_ocr.norm.bias"] = fe.norm.bias
    out["mini_ocr.ctc_head.weight"] = fe.ctc_head.weight
    out["mini_ocr.ctc_head.bias"] = fe.ctc_head.bias
    cd = m.codes
    out["mini_ocr.visual_proj.weight"] = cd.visual_proj.weight
    out["mini_ocr.visual_proj.bias"] = cd.visual_proj.bias
    out["mini_ocr.type_embed.weight"] = cd.type_embed.weight
    out["mini_ocr.row_embed.weight"] = cd.row_embed.weight
    out["mini_ocr.char_embed.weight"] = cd.char_embed.weight
    out["mini_ocr.page_embed.weight"] = cd.page_embed.weight
    return {k: v.detach().float().contiguous() for k, v in out.items()}
