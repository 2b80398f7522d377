#include "vision/mmproj.h"

#include <utility>

#include "core/error.h"

namespace folio {

namespace {

// Hugging Face name -> mmproj name; '#' stands for a block number. Suffixes (.weight / .bias) are
// part of each entry, since llama.cpp adds ".weight" to some names and not to others.
const std::pair<const char*, const char*> kNames[] = {
    {"model.sam_model.patch_embed.proj.weight", "v.sam.patch_embd.weight"},
    {"model.sam_model.patch_embed.proj.bias", "v.sam.patch_embd.bias"},
    {"model.sam_model.pos_embed", "v.sam.pos_embd.weight"},
    {"model.sam_model.blocks.#.norm1.weight", "v.sam.blk.#.pre_ln.weight"},
    {"model.sam_model.blocks.#.norm1.bias", "v.sam.blk.#.pre_ln.bias"},
    {"model.sam_model.blocks.#.norm2.weight", "v.sam.blk.#.post_ln.weight"},
    {"model.sam_model.blocks.#.norm2.bias", "v.sam.blk.#.post_ln.bias"},
    {"model.sam_model.blocks.#.attn.rel_pos_h", "v.sam.blk.#.attn.pos_h.weight"},
    {"model.sam_model.blocks.#.attn.rel_pos_w", "v.sam.blk.#.attn.pos_w.weight"},
    {"model.sam_model.blocks.#.attn.qkv.weight", "v.sam.blk.#.attn.qkv.weight"},
    {"model.sam_model.blocks.#.attn.qkv.bias", "v.sam.blk.#.attn.qkv.bias"},
    {"model.sam_model.blocks.#.attn.proj.weight", "v.sam.blk.#.attn.out.weight"},
    {"model.sam_model.blocks.#.attn.proj.bias", "v.sam.blk.#.attn.out.bias"},
    {"model.sam_model.blocks.#.mlp.lin1.weight", "v.sam.blk.#.mlp.lin1.weight"},
    {"model.sam_model.blocks.#.mlp.lin1.bias", "v.sam.blk.#.mlp.lin1.bias"},
    {"model.sam_model.blocks.#.mlp.lin2.weight", "v.sam.blk.#.mlp.lin2.weight"},
    {"model.sam_model.blocks.#.mlp.lin2.bias", "v.sam.blk.#.mlp.lin2.bias"},
    {"model.sam_model.neck.#.weight", "v.sam.neck.#.weight"},
    {"model.sam_model.neck.#.bias", "v.sam.neck.#.bias"},
    {"model.sam_model.net_2.weight", "v.sam.net_2.weight"},
    {"model.sam_model.net_3.weight", "v.sam.net_3.weight"},
    {"model.vision_model.embeddings.class_embedding", "v.class_embd"},
    {"model.vision_model.embeddings.patch_embedding.weight", "v.patch_embd.weight"},
    {"model.vision_model.embeddings.position_embedding.weight", "v.position_embd.weight"},
    {"model.vision_model.pre_layrnorm.weight", "v.pre_ln.weight"},
    {"model.vision_model.pre_layrnorm.bias", "v.pre_ln.bias"},
    {"model.vision_model.transformer.layers.#.self_attn.qkv_proj.weight", "v.blk.#.attn_qkv.weight"},
    {"model.vision_model.transformer.layers.#.self_attn.qkv_proj.bias", "v.blk.#.attn_qkv.bias"},
    {"model.vision_model.transformer.layers.#.self_attn.out_proj.weight", "v.blk.#.attn_out.weight"},
    {"model.vision_model.transformer.layers.#.self_attn.out_proj.bias", "v.blk.#.attn_out.bias"},
    {"model.vision_model.transformer.layers.#.layer_norm1.weight", "v.blk.#.ln1.weight"},
    {"model.vision_model.transformer.layers.#.layer_norm1.bias", "v.blk.#.ln1.bias"},
    {"model.vision_model.transformer.layers.#.layer_norm2.weight", "v.blk.#.ln2.weight"},
    {"model.vision_model.transformer.layers.#.layer_norm2.bias", "v.blk.#.ln2.bias"},
    {"model.vision_model.transformer.layers.#.mlp.fc1.weight", "v.blk.#.ffn_up.weight"},
    {"model.vision_model.transformer.layers.#.mlp.fc1.bias", "v.blk.#.ffn_up.bias"},
    {"model.vision_model.transformer.layers.#.mlp.fc2.weight", "v.blk.#.ffn_down.weight"},
    {"model.vision_model.transformer.layers.#.mlp.fc2.bias", "v.blk.#.ffn_down.bias"},
    {"model.projector.layers.weight", "mm.model.fc.weight"},
    {"model.projector.layers.bias", "mm.model.fc.bias"},
    {"model.image_newline", "v.image_newline"},
    {"model.view_seperator", "v.view_seperator"},
};

// `name` against `pattern` ('#' = a run of digits): the digits, "" for a pattern without '#', or
// nullopt when it does not match.
std::optional<std::string> match(const std::string& name, const std::string& pattern) {
  const size_t hash = pattern.find('#');
  if (hash == std::string::npos) return name == pattern ? std::optional<std::string>("") : std::nullopt;
  const std::string pre = pattern.substr(0, hash), post = pattern.substr(hash + 1);
  if (name.size() <= pre.size() + post.size() || name.compare(0, pre.size(), pre) != 0 ||
      name.compare(name.size() - post.size(), post.size(), post) != 0)
    return std::nullopt;
  const std::string digits = name.substr(pre.size(), name.size() - pre.size() - post.size());
  for (char ch : digits)
    if (ch < '0' || ch > '9') return std::nullopt;
  return digits;
}

std::string translate(const std::string& name, bool to_mmproj) {
  for (const auto& [hf, gg] : kNames) {
    const std::string from = to_mmproj ? hf : gg, to = to_mmproj ? gg : hf;
    if (auto n = match(name, from)) {
      const size_t hash = to.find('#');
      return hash == std::string::npos ? to : to.substr(0, hash) + *n + to.substr(hash + 1);
    }
  }
  return "";
}

// Tensors that stay f32 whatever the matrices' type (llama.cpp's converter forces these).
bool keeps_f32(const std::string& hf_name, const TensorView& t) {
  for (const char* part : {".embeddings.", "pos_embed", ".rel_pos_", ".neck.", ".net_", "patch_embed.", "image_newline",
                           "view_seperator"})
    if (hf_name.find(part) != std::string::npos) return true;
  return t.shape.size() < 2;
}

}  // namespace

std::string mmproj_tensor_name(const std::string& hf_name) { return translate(hf_name, true); }
std::string hf_vision_tensor_name(const std::string& mmproj_name) { return translate(mmproj_name, false); }

namespace {

// The sizes of the tower: the few llama.cpp writes as metadata, the rest from tensor shapes.
VisionConfig config_from(const GgufFile& g, const std::map<std::string, TensorView, std::less<>>& t) {
  const std::string file = g.description();
  auto key = [&](const char* k) {
    auto v = g.get_int(k);
    if (!v) throw_invalid("mmproj '" + file + "': missing metadata key '" + k + "'");
    return *v;
  };
  auto shape = [&](const std::string& hf) -> const std::vector<int64_t>& {
    auto it = t.find(hf);
    if (it == t.end()) throw_invalid("mmproj '" + file + "': no tensor '" + mmproj_tensor_name(hf) + "'");
    return it->second.shape;
  };
  VisionConfig c;
  c.sam_width = key("clip.vision.sam.embedding_length");
  c.sam_layers = key("clip.vision.sam.block_count");
  c.sam_heads = key("clip.vision.sam.head_count");
  c.sam_window = g.get_int("clip.vision.window_size").value_or(c.sam_window);
  c.clip_width = key("clip.vision.embedding_length");
  c.clip_layers = key("clip.vision.block_count");
  c.clip_heads = key("clip.vision.attention.head_count");
  const auto& patch = shape("model.sam_model.patch_embed.proj.weight");  // [width, 3, p, p]
  const auto& pos = shape("model.sam_model.pos_embed");                   // [1, grid, grid, width]
  if (patch.size() != 4 || pos.size() != 4) throw_invalid("mmproj '" + file + "': SAM patch or position embedding is not 4-D");
  c.sam_patch = patch[2];
  c.sam_image = pos[1] * c.sam_patch;
  c.sam_mlp = shape("model.sam_model.blocks.0.mlp.lin1.weight")[0];
  c.sam_neck = shape("model.sam_model.neck.0.weight")[0];
  c.sam_downsample = {shape("model.sam_model.net_2.weight")[0], shape("model.sam_model.net_3.weight")[0]};
  // A windowed block's table spans 2 * window - 1 offsets; a global block's, the whole grid.
  c.sam_global_layers.clear();
  for (int64_t b = 0; b < c.sam_layers; ++b)
    if (shape("model.sam_model.blocks." + std::to_string(b) + ".attn.rel_pos_h")[0] != 2 * c.sam_window - 1)
      c.sam_global_layers.push_back(b);
  // llama.cpp's converter writes clip.vision.feed_forward_length wrongly (heads x 4): use the tensor.
  c.clip_mlp = shape("model.vision_model.transformer.layers.0.mlp.fc1.weight")[0];
  c.n_embed = shape("model.projector.layers.weight")[0];
  c.validate();
  return c;
}

}  // namespace

std::unique_ptr<MmprojSource> MmprojSource::open(const std::string& path) {
  std::unique_ptr<MmprojSource> m(new MmprojSource());
  m->file_ = GgufFile::open(path);
  const GgufFile& g = *m->file_;
  const std::string type = g.get_string("clip.projector_type").value_or("");
  if (type != "deepseekocr")
    throw Error(Error::Kind::Unsupported, "mmproj '" + path + "': projector type '" + type +
                                              "' is not supported (deepseekocr: DeepSeek-OCR / Unlimited-OCR)");
  for (const std::string& n : g.names()) {
    const std::string hf = hf_vision_tensor_name(n);
    if (hf.empty()) throw_invalid("mmproj '" + path + "': tensor '" + n + "' is not part of DeepSeek-OCR's vision tower");
    TensorView v = g.tensor(n);
    v.name = hf;
    if (hf == "model.view_seperator" && v.shape.size() == 2 && v.shape[0] == 1) v.shape = {v.shape[1]};
    m->tensors_[hf] = v;
  }
  m->config_ = config_from(g, m->tensors_);
  return m;
}

void write_mmproj_gguf(const VisionConfig& c, const TensorSource& hf, DType matrices, const std::string& path,
                       const std::string& model_name) {
  FOLIO_CHECK_INPUT(matrices == DType::F32 || matrices == DType::F16 || matrices == DType::BF16,
                    std::string("mmproj matrices must be f32, f16 or bf16, not ") + dtype_name(matrices));
  GgufWriter w;
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  w.set("general.architecture", std::string("clip"));
  w.set("general.type", std::string("mmproj"));
  w.set("general.name", model_name);
  w.set("general.file_type", uint32_t{matrices == DType::F32 ? 0u : matrices == DType::F16 ? 1u : 32u});
  w.set("clip.has_vision_encoder", true);
  w.set("clip.projector_type", std::string("deepseekocr"));
  w.set("clip.use_gelu", true);
  w.set("clip.vision.projection_dim", u32(c.n_embed));
  w.set("clip.vision.image_size", u32(c.sam_image));
  w.set("clip.vision.patch_size", u32(c.sam_patch));
  w.set("clip.vision.embedding_length", u32(c.clip_width));
  w.set("clip.vision.feed_forward_length", u32(c.clip_mlp));
  w.set("clip.vision.block_count", u32(c.clip_layers));
  w.set("clip.vision.attention.head_count", u32(c.clip_heads));
  w.set("clip.vision.attention.layer_norm_epsilon", c.sam_eps);
  w.set("clip.vision.image_mean", std::vector<float>{0.5f, 0.5f, 0.5f});
  w.set("clip.vision.image_std", std::vector<float>{0.5f, 0.5f, 0.5f});
  w.set("clip.vision.window_size", u32(c.sam_window));
  w.set("clip.vision.preproc_min_tiles", uint32_t{2});
  w.set("clip.vision.preproc_max_tiles", uint32_t{32});  // Unlimited-OCR's Gundam grids (doc/preprocess.h)
  w.set("clip.vision.sam.block_count", u32(c.sam_layers));
  w.set("clip.vision.sam.embedding_length", u32(c.sam_width));
  w.set("clip.vision.sam.head_count", u32(c.sam_heads));
  std::vector<std::vector<uint8_t>> storage;
  int written = 0;
  for (const std::string& n : hf.names()) {
    const std::string gg = mmproj_tensor_name(n);
    if (gg.empty()) continue;  // the decoder's tensors
    const TensorView& src = *hf.find(n);
    TensorView v = src;
    v.name = gg;
    if (n == "model.view_seperator") v.shape = {1, src.numel()};
    v.dtype = keeps_f32(n, src) ? DType::F32 : matrices;
    if (v.dtype != src.dtype) {
      storage.emplace_back(v.nbytes());
      convert_tensor(src, v.dtype, storage.back().data());
      v.data = storage.back().data();
    }
    w.add_tensor(v);
    ++written;
  }
  if (written == 0) throw_invalid(hf.description() + " has no vision tower (DeepEncoder tensors) to write as an mmproj");
  w.write(path);
}

}  // namespace folio
