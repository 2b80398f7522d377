"""Writes a folio mini OCR checkpoint: model.safetensors + config.json + tokenizer.json.

    /usr/bin/python3 tools/train/export.py --state train-work/mini/state.pt --out models/folio-mini-ocr

The layout is the one folio loads for every model (a Hugging Face style directory); the decoder's
tensors have llama names, the front end and position codes live under mini_ocr.*.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from decoder import save_safetensors  # noqa: E402
from mini_ocr_model import BOS, EOS, PAD, PAGE, VOCAB, MiniOcr, state_dict_for_checkpoint  # noqa: E402

VISION_KEYS = ("image_width", "image_height", "margin_top", "line_pitch", "rows", "pixel_mean", "pixel_std",
               "conv_channels", "conv_strides", "frame_hidden", "context_layers", "context_kernel", "ctc_vocab",
               "max_rows", "max_chars", "max_pages")


def bytes_to_unicode():
    """GPT-2's byte -> printable character table used by byte-level BPE vocabularies."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def byte_level_tokenizer(vocab, specials):
    """A Hugging Face tokenizer.json: byte-level BPE over `vocab` with no merges, and `specials`
    [(content, id)] as special added tokens."""
    added = [dict(id=i, content=c, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
             for c, i in specials]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": []},
    }


def tokenizer_json():
    """A byte vocabulary (id = byte value) with no merges, plus the four special tokens."""
    table = bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    return byte_level_tokenizer(vocab, [("<bos>", BOS), ("<eos>", EOS), ("<page>", PAGE), ("<pad>", PAD)])


def config_json(c, extra=None):
    text = {
        "model_type": "llama", "hidden_size": c["hidden"], "num_hidden_layers": c["layers"],
        "num_attention_heads": c["heads"], "num_key_value_heads": c["heads"], "intermediate_size": c["intermediate"],
        "vocab_size": VOCAB, "max_position_embeddings": 1 << 22, "rms_norm_eps": c["rms_eps"],
        "position_encoding": "none", "tie_word_embeddings": False, "bos_token_id": BOS, "eos_token_id": EOS,
        "sliding_window_size": c["window"],
    }
    out = {
        "model_type": "folio-mini-ocr", "architectures": ["FolioMiniOcr"],
        "vision_config": {k: c[k] for k in VISION_KEYS}, "text_config": text,
        "page_token_id": PAGE, "sliding_window_size": c["window"],
    }
    if extra:
        out.update(extra)
    return out


def export(model, out_dir, extra=None):
    os.makedirs(out_dir, exist_ok=True)
    save_safetensors(os.path.join(out_dir, "model.safetensors"), state_dict_for_checkpoint(model),
                     metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config_json(model.c, extra), f, indent=2)
        f.write("\n")
    with open(os.path.join(out_dir, "tokenizer.json"), "w") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--state", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    st = torch.load(a.state)
    model = MiniOcr(st["config"])
    model.load_state_dict(st["model"])
    export(model, a.out, {"training": {"step": st["step"], "minutes": round(st["elapsed"] / 60, 1)}})
    print(f"exported step {st['step']} to {a.out}")


if __name__ == "__main__":
    main()
