"""Writes a folio-mini-ocr 2 model directory: config.json + model.safetensors + tokenizer.json.

    /usr/bin/python3 tools/train/mini2/export_model.py --recognizer tools/train/mini2/checkpoints/recognizer.pt \
        --structure tools/train/mini2/checkpoints/structure.pt --out models/folio-mini-ocr-2 [--dtype bf16]

model.safetensors holds the recognizer (batch norm folded, export_recognizer.py; prefix
"recognizer."), the structure decoder's line-token and code tables (prefix "structure.") and the
decoder itself under llama names (model.*, lm_head). config.json: model_type "folio-mini-ocr-2",
the PDF resolution, the recognizer's charset and crop rule, the actions, the code tables' sizes and
the llama text_config (no rotary positions). tokenizer.json: one token per action plus <bos>, <eos>,
<page> (the decoder writes no text: the engine turns actions and the recognizer's readings into
markdown).
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference"))
sys.path.insert(0, os.path.join(HERE, ".."))
import structure  # noqa: E402
from decoder import save_safetensors  # noqa: E402
from export_recognizer import folded_tensors  # noqa: E402
from lines import ASCEND, CHARSET, CORE_FRACTION, CORE_MIN_SHARE, DESCEND, HEIGHT, PAD  # noqa: E402
from recognizer import LineRecognizer  # noqa: E402
from export import byte_level_tokenizer, bytes_to_unicode  # noqa: E402  (tools/train/export.py, v1's)
from mini_ocr_model import llama_tensors  # noqa: E402
from structure_model import StructureDecoder  # noqa: E402

PDF_DPI = 150


def structure_tensors(m):
    out = llama_tensors(m)
    out["structure.line_proj.0.weight"] = m.line_proj[0].weight
    out["structure.line_proj.0.bias"] = m.line_proj[0].bias
    out["structure.line_proj.2.weight"] = m.line_proj[2].weight
    out["structure.line_proj.2.bias"] = m.line_proj[2].bias
    for n in ("char_embed", "type_embed", "page_embed", "line_embed"):
        out[f"structure.{n}.weight"] = getattr(m, n).weight
    return {k: v.detach().float().contiguous() for k, v in out.items()}


def tokenizer_json():
    """The actions and specials as special tokens with the decoder's ids; the 256 byte tokens a
    byte-level vocabulary must have come after them (the decoder never writes them)."""
    specials = {f"<{name}>" if not name.startswith("<") else name: i for i, name in enumerate(structure.VOCAB)}
    table = bytes_to_unicode()
    vocab = dict(specials)
    vocab.update({table[b]: len(specials) + b for b in range(256)})
    return byte_level_tokenizer(vocab, list(specials.items()))


def config_json(c, extra=None, model_type="folio-mini-ocr-2"):
    text = {
        "model_type": "llama", "hidden_size": c["hidden"], "num_hidden_layers": c["layers"],
        "num_attention_heads": c["heads"], "num_key_value_heads": c["heads"], "intermediate_size": c["intermediate"],
        "vocab_size": c["vocab"], "max_position_embeddings": 1 << 22, "rms_norm_eps": c["rms_eps"],
        "position_encoding": "none", "tie_word_embeddings": False, "bos_token_id": structure.BOS,
        "eos_token_id": structure.EOS, "sliding_window_size": c["window"],
    }
    out = {
        "model_type": model_type, "architectures": ["FolioMiniOcr2"], "pdf_dpi": PDF_DPI,
        "recognizer": {"height": HEIGHT, "frame_stride": 4, "charset": CHARSET,
                       "crop_rule": {"core_fraction": CORE_FRACTION, "core_min_share": CORE_MIN_SHARE, "ascend": ASCEND, "descend": DESCEND, "pad": PAD}},
        "structure": {"actions": structure.ACTIONS, "max_lines": c["max_lines"], "max_pages": c["max_pages"],
                      "numeric": c["numeric"], "char_slots": c["char_slots"], "char_classes": c["char_classes"]},
        "text_config": text, "page_token_id": structure.PAGE, "sliding_window_size": c["window"],
    }
    if extra:
        out.update(extra)
    return out


def export(recognizer, decoder, out_dir, dtype=torch.bfloat16, extra=None, model_type="folio-mini-ocr-2"):
    t = {"recognizer." + k: v for k, v in folded_tensors(recognizer).items()}
    t.update(structure_tensors(decoder))
    os.makedirs(out_dir, exist_ok=True)
    save_safetensors(os.path.join(out_dir, "model.safetensors"), {k: v.to(dtype).contiguous() for k, v in t.items()},
                     metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config_json(decoder.c, extra, model_type), f, indent=2, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--recognizer", required=True)
    ap.add_argument("--structure", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("--model-type", default="folio-mini-ocr-2",
                    help="folio-mini-ocr-3 for the model retrained on technical documents (same format)")
    a = ap.parse_args()
    rec = LineRecognizer()
    rs = torch.load(a.recognizer)
    rec.load_state_dict(rs["model"])
    rec.eval()
    ss = torch.load(a.structure)
    dec = StructureDecoder(ss.get("config") or None) if ss.get("config") else StructureDecoder()
    dec.load_state_dict(ss["model"])
    export(rec, dec, a.out, torch.bfloat16 if a.dtype == "bf16" else torch.float32,
           {"training": {"recognizer_step": rs["step"], "structure_step": ss["step"]}}, a.model_type)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
