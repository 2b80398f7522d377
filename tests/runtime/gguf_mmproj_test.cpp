// The vision tower in llama.cpp's mmproj GGUF (projector type deepseekocr): written by folio
// convert, read back by MmprojSource, and run with a deepseek2-ocr text GGUF as an OCR model.
//
// llama.cpp itself loads folio's full-size mmproj and its own encoder gives the same embeddings to
// 2.7e-4 relative RMS (f32 weights; docs/benchmarks.md, by hand with
// tools/oracles/llama_cpp_clip_embed.cpp): its loader hard-codes the full tower's 12 SAM blocks,
// so the tiny tower here cannot be checked against it in a test.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "core/thread_pool.h"
#include "io/gguf.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "vision/deep_encoder.h"
#include "vision/mmproj.h"
#include "runtime/decoder_gguf_export.h"
#include "runtime/loaded_model.h"
#include "runtime/model_factory.h"
#include "runtime/ocr_model.h"
#include "runtime/ocr_unlimited.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

struct TinyOcr {
  fs::path dir = fs::temp_directory_path() / ("folio_mmproj_" + std::to_string(getpid()));
  fs::path hf = dir / "hf", text = dir / "text.gguf", mm32 = dir / "mmproj-f32.gguf", mm16 = dir / "mmproj-bf16.gguf";
  TinyOcr() {
    fs::create_directories(dir);
    write_random_checkpoint(preset_config("unlimited-ocr", "tiny"), preset_vision_config("unlimited-ocr", "tiny"),
                            hf.string(), 11, DType::F32);
    LoadedModel m = load_model(hf.string(), false);
    write_decoder_gguf(m.config, *m.weights, read_json_file((hf / "tokenizer.json").string()), "f32", text.string(), "t");
    const VisionConfig v = VisionConfig::from_hf_file((hf / "config.json").string());
    write_mmproj_gguf(v, *m.weights, DType::F32, mm32.string(), "t");
    write_mmproj_gguf(v, *m.weights, DType::BF16, mm16.string(), "t");
  }
  ~TinyOcr() { fs::remove_all(dir); }
};
const TinyOcr& tiny() {
  static TinyOcr t;
  return t;
}

// A synthetic normalised 1024 view, planar [3, side, side].
std::vector<float> view(int side) {
  std::vector<float> px(static_cast<size_t>(3) * side * side);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x)
        px[(static_cast<size_t>(c) * side + y) * side + x] = ((7 * x + 13 * y + 29 * c + (x * y % 11)) % 256) / 127.5f - 1.f;
  return px;
}

TEST(GgufMmproj, F32FileEncodesExactlyAsTheSafetensors) {
  auto mm = MmprojSource::open(tiny().mm32.string());
  const VisionConfig want = VisionConfig::from_hf_file((tiny().hf / "config.json").string());
  const VisionConfig& got = mm->config();
  // Everything the metadata and the tensor shapes carry comes back.
  EXPECT_EQ(got.sam_width, want.sam_width);
  EXPECT_EQ(got.sam_layers, want.sam_layers);
  EXPECT_EQ(got.sam_heads, want.sam_heads);
  EXPECT_EQ(got.sam_global_layers, want.sam_global_layers);
  EXPECT_EQ(got.sam_window, want.sam_window);
  EXPECT_EQ(got.sam_mlp, want.sam_mlp);
  EXPECT_EQ(got.sam_neck, want.sam_neck);
  EXPECT_EQ(got.sam_downsample, want.sam_downsample);
  EXPECT_EQ(got.clip_width, want.clip_width);
  EXPECT_EQ(got.clip_layers, want.clip_layers);
  EXPECT_EQ(got.clip_mlp, want.clip_mlp);
  EXPECT_EQ(got.n_embed, want.n_embed);

  auto st = SafetensorsCheckpoint::open((tiny().hf / "model.safetensors").string());
  ThreadPool pool(2);
  const auto px = view(1024);
  DeepEncoder a(want, *st), b(got, *mm);
  const auto ea = a.assemble(a.encode_view(px.data(), 1024, pool), {}, TileLayout{1, 1});
  const auto eb = b.assemble(b.encode_view(px.data(), 1024, pool), {}, TileLayout{1, 1});
  EXPECT_EQ(ea, eb);
}

TEST(GgufMmproj, WritesLlamaCppsNamesAndTypes) {
  auto g = GgufFile::open(tiny().mm16.string());
  EXPECT_EQ(g->get_string("clip.projector_type"), "deepseekocr");
  EXPECT_EQ(g->get_string("general.architecture"), "clip");
  // Names llama.cpp's loader asks for (tools/mtmd/clip-impl.h), each in the type its converter
  // gives it: matrices bf16; embeddings, position tables, the neck, the downsampling convolutions,
  // the SAM patch embedding, norms and biases f32.
  const std::pair<const char*, DType> expect[] = {
      {"v.sam.patch_embd.weight", DType::F32},    {"v.sam.pos_embd.weight", DType::F32},
      {"v.sam.blk.0.attn.qkv.weight", DType::BF16}, {"v.sam.blk.0.attn.pos_h.weight", DType::F32},
      {"v.sam.blk.0.pre_ln.weight", DType::F32},  {"v.sam.neck.2.weight", DType::F32},
      {"v.sam.net_3.weight", DType::F32},         {"v.class_embd", DType::F32},
      {"v.position_embd.weight", DType::F32},     {"v.blk.0.attn_qkv.weight", DType::BF16},
      {"v.blk.0.ffn_down.weight", DType::BF16},   {"mm.model.fc.weight", DType::BF16},
      {"v.image_newline", DType::F32},            {"v.view_seperator", DType::F32}};
  for (const auto& [name, dtype] : expect) {
    const TensorView* t = g->find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dtype, dtype) << name;
  }
  EXPECT_EQ(g->tensor("v.view_seperator").shape.size(), 2u);  // [1, n_embed], as llama.cpp stores it
}

TEST(GgufMmproj, TextAndMmprojFilesReadAPageAsTheDirectoryDoes) {
  auto dir = UnlimitedOcrModel::load(tiny().hf.string());
  auto gguf = load_ocr_model(tiny().text.string(), "", tiny().mm32.string());
  auto* u = dynamic_cast<UnlimitedOcrModel*>(gguf.get());
  ASSERT_NE(u, nullptr);
  RgbImage page(700, 900);
  for (size_t i = 0; i < page.pixels.size(); ++i) page.pixels[i] = static_cast<uint8_t>((i * 31) % 251);
  ThreadPool pool(2);
  EXPECT_EQ(u->encode_page(page, VisionMode::Base, pool), dir->encode_page(page, VisionMode::Base, pool));
  EXPECT_EQ(u->tokenizer().encode("<image>document parsing."), dir->tokenizer().encode("<image>document parsing."));
}

// Rewrites the f32 mmproj with `edit` applied to its metadata and tensor list.
std::string edited(const std::string& name, const std::function<void(GgufWriter&, const GgufFile&)>& edit) {
  auto g = GgufFile::open(tiny().mm32.string());
  GgufWriter w;
  for (const std::string& k : g->keys()) w.set(k, *g->get(k));
  edit(w, *g);
  const std::string out = (tiny().dir / name).string();
  w.write(out);
  return out;
}

void add_all_but(GgufWriter& w, const GgufFile& g, const std::string& skip) {
  for (const std::string& n : g.names())
    if (n != skip) w.add_tensor(g.tensor(n));
}

TEST(GgufMmproj, BadFilesAreNamedAndNothingElseBreaks) {
  auto expect_error = [](const std::function<void()>& f, const std::vector<std::string>& parts) {
    try {
      f();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  };
  // A GGUF text model without its vision tower.
  expect_error([] { load_ocr_model(tiny().text.string()); }, {"--mmproj", tiny().text.string()});
  // Another model's projector (width 32, the decoder is 64 wide).
  std::vector<float> narrow(32 * 128, 0.01f), bias(32, 0.f);
  const std::string wide = edited("narrow.gguf", [&](GgufWriter& w, const GgufFile& g) {
    add_all_but(w, g, "mm.model.fc.weight");
    w.add_tensor({"mm.model.fc.weight", DType::F32, {32, g.tensor("mm.model.fc.weight").shape[1]}, narrow.data()});
  });
  expect_error([&] { load_ocr_model(tiny().text.string(), "", wide); }, {"projector width 32", "hidden size 64", wide});
  // Another projector type.
  const std::string qwen = edited("qwen.gguf", [](GgufWriter& w, const GgufFile& g) {
    w.set("clip.projector_type", std::string("qwen2vl_merger"));
    add_all_but(w, g, "");
  });
  expect_error([&] { MmprojSource::open(qwen); }, {"qwen2vl_merger", qwen});
  // A tensor the tower does not have.
  std::vector<float> extra(4, 0.f);
  const std::string stray = edited("stray.gguf", [&](GgufWriter& w, const GgufFile& g) {
    add_all_but(w, g, "");
    w.add_tensor({"v.resample_query_768.weight", DType::F32, {4}, extra.data()});
  });
  expect_error([&] { MmprojSource::open(stray); }, {"v.resample_query_768.weight", stray});
  // A missing tensor the sizes come from.
  const std::string holed = edited("holed.gguf", [](GgufWriter& w, const GgufFile& g) { add_all_but(w, g, "v.sam.net_3.weight"); });
  expect_error([&] { MmprojSource::open(holed); }, {"v.sam.net_3.weight", holed});
  // A directory with --mmproj.
  expect_error([] { load_ocr_model(tiny().hf.string(), "", tiny().mm32.string()); }, {"--mmproj", ".gguf"});
  // The good files still load.
  EXPECT_NO_THROW(load_ocr_model(tiny().text.string(), "", tiny().mm32.string()));
}

}  // namespace
}  // namespace folio
