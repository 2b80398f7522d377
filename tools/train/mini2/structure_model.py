"""folio-mini-ocr 2's structure decoder: a small Llama-style decoder (no rotary positions, as the v1
mini model) that writes one action per text line (structure.py) over a reference of line tokens.

    reference: per page, one token per line (features.py: numeric features through line_proj, plus
               learned embeddings of its first and last characters), then a page-end token (a
               document-end token after the last page); every token carries codes of its page and
               line number
    generated: <bos>, one action per line, <page> between pages, <eos>; each generated token's input
               carries the codes of the NEXT line to label, so finding the line is a match of codes
               in attention (the lookup head starts as that match: see MiniOcr in mini_ocr_model.py)
    mask:      R-SWA (the reference and <bos> fully visible, the last `window` generated tokens)

The C++ engine runs the decoder as its ordinary llama path (tensor names are the checkpoint's).
"""
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import structure  # noqa: E402
from features import CHAR_HEAD, CHAR_TAIL, NUMERIC  # noqa: E402
from lines import CHARSET  # noqa: E402
from mini_ocr_model import Block, rms_norm, rswa_mask  # noqa: E402

T_LINE, T_PAGE_END, T_DOC_END, T_TEXT = range(4)

CONFIG = dict(hidden=128, layers=3, heads=4, intermediate=256, window=128, rms_eps=1e-6, code_dims=32,
              lookup_init_gain=1.5, max_lines=192, max_pages=64, numeric=NUMERIC, char_slots=CHAR_HEAD + CHAR_TAIL,
              char_classes=len(CHARSET) + 1, vocab=len(structure.VOCAB))


class StructureDecoder(nn.Module):
    def __init__(self, c=CONFIG):
        super().__init__()
        self.c = dict(c)
        d, k, hd = c["hidden"], c["code_dims"], c["hidden"] // c["heads"]
        assert k == hd, "the lookup head reads exactly the code coordinates"
        self.line_proj = nn.Sequential(nn.Linear(c["numeric"], d), nn.GELU(), nn.Linear(d, d))
        self.char_embed = nn.Embedding(c["char_slots"] * c["char_classes"], d)
        self.type_embed = nn.Embedding(4, d)
        self.line_embed = nn.Embedding(c["max_lines"], d)
        self.page_embed = nn.Embedding(c["max_pages"], d)
        self.embed_tokens = nn.Embedding(c["vocab"], d)
        self.layers = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = nn.Parameter(torch.ones(d))
        self.lm_head = nn.Linear(d, c["vocab"], bias=False)
        with torch.no_grad():
            nn.init.normal_(self.char_embed.weight, std=0.1)
            nn.init.normal_(self.embed_tokens.weight, std=0.5)
            self.type_embed.weight.normal_(0.0, 0.5)
            # Codes live in the last k coordinates only; content and types in the others.
            for e in (self.line_embed, self.page_embed):
                e.weight.zero_()
                e.weight[:, d - k:].normal_(0.0, 1.0)
            for w in (self.char_embed.weight, self.embed_tokens.weight, self.type_embed.weight):
                w[:, d - k:] = 0.0
            last = self.line_proj[2]
            last.weight[d - k:] = 0.0
            last.bias[d - k:] = 0.0
            sel = torch.zeros(hd, d)
            sel[:, d - k:] = torch.eye(k) * c["lookup_init_gain"]
            for proj in (self.layers[0].q_proj, self.layers[0].k_proj):
                proj.weight[d - hd:] = sel

    def codes(self, types, pages, lines):
        pages = pages % self.c["max_pages"]
        lines = lines.clamp(max=self.c["max_lines"] - 1)
        return self.type_embed(types) + self.page_embed(pages) + self.line_embed(lines)

    def line_tokens(self, numeric, chars):
        """numeric [n, NUMERIC] float, chars [n, slots] long -> [n, d]."""
        slots = torch.arange(self.c["char_slots"]) * self.c["char_classes"]
        return self.line_proj(numeric) + self.char_embed(chars + slots).sum(1)

    def forward(self, numeric, chars, ref_types, ref_pages, ref_lines, tokens, gen_pages, gen_lines):
        """Logits [n_gen, vocab] for a document: reference rows (line tokens where ref_types ==
        T_LINE, in order, from numeric/chars) then the generated inputs."""
        d = self.c["hidden"]
        ref = torch.zeros(len(ref_types), d)
        is_line = ref_types == T_LINE
        ref[is_line] = self.line_tokens(numeric, chars)
        ref = ref + self.codes(ref_types, ref_pages, ref_lines)
        gen = self.embed_tokens(tokens) + self.codes(torch.full_like(tokens, T_TEXT), gen_pages, gen_lines)
        x = torch.cat([ref, gen])
        # <bos> (the first generated input) closes the reference, as the engine prefills it: it is
        # pinned with the lines, and the window holds the actions after it.
        mask = rswa_mask(len(ref) + 1, len(gen) - 1, self.c["window"])
        for blk in self.layers:
            x = blk(x, mask)
        return self.lm_head(rms_norm(x[len(ref):], self.norm, self.c["rms_eps"]))


def sequence(pages_actions):
    """Reference layout and generated sequence of a document: pages_actions = [[action name per
    line] per page]. Returns (ref_types, ref_pages, ref_lines, inputs, targets, gen_pages, gen_lines)."""
    ref_types, ref_pages, ref_lines = [], [], []
    n = len(pages_actions)
    for p, acts in enumerate(pages_actions):
        for i in range(len(acts)):
            ref_types.append(T_LINE); ref_pages.append(p); ref_lines.append(i)
        ref_types.append(T_DOC_END if p == n - 1 else T_PAGE_END); ref_pages.append(p); ref_lines.append(len(acts))
    targets, gen_pages, gen_lines = [], [0], [0]
    for p, acts in enumerate(pages_actions):
        for i, a in enumerate(acts):
            targets.append(structure.ID[a]); gen_pages.append(p); gen_lines.append(i + 1)
        targets.append(structure.EOS if p == n - 1 else structure.PAGE)
        gen_pages.append(p + 1); gen_lines.append(0)
    inputs = [structure.BOS] + targets[:-1]
    return ref_types, ref_pages, ref_lines, inputs, targets, gen_pages[:-1], gen_lines[:-1]
