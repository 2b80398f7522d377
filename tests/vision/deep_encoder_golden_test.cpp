// The DeepEncoder against golden tensors written by the OFFICIAL Unlimited-OCR modeling code
// (tests/fixtures/vision/, see its README): tiny but structurally complete SAM / CLIP / projector,
// a 1024 global view and 2x2 640 tiles (C1) or the global view only (C2). Each stage is fed the
// golden input of that stage, so a failure points at one stage; then pixels -> image embeddings ->
// decoder logits end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/thread_pool.h"
#include "generated_weights.h"
#include "golden_compare.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/decoder.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "vision/deep_encoder.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/vision/";

// Float32 on both sides: differences come from summation order and from interpolation weights
// computed in another precision. Values are O(1-10); a wrong layout, epsilon, activation or
// position table moves them by 1e-2 or more.
constexpr float kSamTol = 2e-4f, kClipTol = 5e-4f, kProjTol = 5e-4f, kLogitTol = 1e-3f;
constexpr double kRelL2 = 1e-5;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

using testing::compare;
using testing::nchw_to_tokens;

void expect_close(const char* what, const testing::Diff& d, float tol, double rel = kRelL2) { testing::expect_close(what, d, tol, rel); }

struct Fixture {
  testing::GeneratedWeights weights{kDir + "generated_weights.json"};
  std::unique_ptr<SafetensorsFile> golden = SafetensorsFile::open(kDir + "vision_golden.safetensors");
  nlohmann::json meta = read_json(kDir + "golden.json");
  VisionConfig cfg = VisionConfig::from_hf_file(kDir + "config.json");
  DeepEncoder enc{cfg, weights};
  ThreadPool pool{2};

  std::vector<float> tensor(const std::string& name) const {
    const TensorView& t = golden->get(name);
    std::vector<float> v(static_cast<size_t>(t.numel()));
    convert_to_f32(t.dtype, t.data, v.data(), t.numel());
    return v;
  }
  // Tile i of the C1 crops, planar [3, 640, 640].
  std::vector<float> tile_pixels(int64_t i) const {
    auto all = weights.pixels("images_crop");
    const size_t n = 3 * 640 * 640;
    return {all.begin() + static_cast<long>(i * n), all.begin() + static_cast<long>((i + 1) * n)};
  }
  std::vector<int64_t> kept_tiles() const { return meta["tiles_kept"].get<std::vector<int64_t>>(); }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

TEST(VisionGolden, RegeneratedWeightsMatchTheManifest) {
  EXPECT_TRUE(fx().weights.checksum_mismatches().empty());
  EXPECT_EQ(fx().cfg.sam_width, 64);
  EXPECT_EQ(fx().cfg.clip_layers, 2);
}

TEST(VisionGolden, SamGlobalView) {
  auto& f = fx();
  auto px = f.weights.pixels("image_ori");
  SamEncoder::Output s = f.enc.sam(px.data(), 1024, f.pool);
  ASSERT_EQ(s.side, 16);
  ASSERT_EQ(s.channels, 1024);
  auto gold = nchw_to_tokens(f.tensor("crop.sam_global").data(), 1024, 256);
  expect_close("SAM global (1024 view)", compare(s.tokens.data(), gold.data(), 256 * 1024), kSamTol);
}

// 640 tiles exercise the resized tables (pos 64 -> 40, rel_pos 127 -> 79) and the 40 -> 42 padding.
TEST(VisionGolden, SamTiles) {
  auto& f = fx();
  auto gold = f.tensor("crop.sam_local_kept");
  auto kept = f.kept_tiles();
  for (size_t k = 0; k < kept.size(); ++k) {
    auto px = f.tile_pixels(kept[k]);
    SamEncoder::Output s = f.enc.sam(px.data(), 640, f.pool);
    ASSERT_EQ(s.side, 10);
    auto g = nchw_to_tokens(gold.data() + k * 1024 * 100, 1024, 100);
    expect_close(("SAM tile " + std::to_string(kept[k])).c_str(), compare(s.tokens.data(), g.data(), 100 * 1024), kSamTol);
  }
}

TEST(VisionGolden, ClipOnGoldenSamFeatures) {
  auto& f = fx();
  SamEncoder::Output in;
  in.side = 16;
  in.channels = 1024;
  in.tokens = nchw_to_tokens(f.tensor("crop.sam_global").data(), 1024, 256);
  auto out = f.enc.clip(in, f.pool);
  ASSERT_EQ(out.size(), 257u * 1024u);
  expect_close("CLIP global (257 rows incl. CLS)", compare(out.data(), f.tensor("crop.clip_global").data(), 257 * 1024), kClipTol);

  auto sam_tiles = f.tensor("crop.sam_local_kept"), clip_tiles = f.tensor("crop.clip_local_kept");
  for (size_t k = 0; k < f.kept_tiles().size(); ++k) {
    in.side = 10;
    in.tokens = nchw_to_tokens(sam_tiles.data() + k * 1024 * 100, 1024, 100);
    auto o = f.enc.clip(in, f.pool);  // exercises the 16 -> 10 position resize
    expect_close("CLIP tile (101 rows)", compare(o.data(), clip_tiles.data() + k * 101 * 1024, 101 * 1024), kClipTol);
  }
}

TEST(VisionGolden, ProjectorOnGoldenFeatures) {
  auto& f = fx();
  auto sam = nchw_to_tokens(f.tensor("crop.sam_global").data(), 1024, 256);
  auto p = f.enc.project(f.tensor("crop.clip_global").data(), sam.data(), 256, f.pool);
  expect_close("projector global", compare(p.data(), f.tensor("crop.proj_global").data(), 256 * 64), kProjTol);
  auto sam_tiles = f.tensor("crop.sam_local_kept"), clip_tiles = f.tensor("crop.clip_local_kept"), proj = f.tensor("crop.proj_local");
  auto kept = f.kept_tiles();
  for (size_t k = 0; k < kept.size(); ++k) {
    auto s = nchw_to_tokens(sam_tiles.data() + k * 1024 * 100, 1024, 100);
    auto o = f.enc.project(clip_tiles.data() + k * 101 * 1024, s.data(), 100, f.pool);
    expect_close("projector tile", compare(o.data(), proj.data() + kept[k] * 100 * 64, 100 * 64), kProjTol);
  }
}

ViewFeatures features(const float* rows, int64_t side, int64_t dim) {
  ViewFeatures v;
  v.side = side;
  v.dim = dim;
  v.rows.assign(rows, rows + side * side * dim);
  return v;
}

// Pure copies: the golden projector outputs assemble to exactly the golden embeddings.
TEST(VisionGolden, AssemblyOfGoldenProjections) {
  auto& f = fx();
  auto pg = f.tensor("crop.proj_global"), pl = f.tensor("crop.proj_local");
  ViewFeatures global = features(pg.data(), 16, 64);
  std::vector<ViewFeatures> tiles;
  for (int64_t i = 0; i < 4; ++i) tiles.push_back(features(pl.data() + i * 100 * 64, 10, 64));
  EXPECT_EQ(f.enc.assemble(global, tiles, {2, 2}), f.tensor("crop.image_embeds"));
  EXPECT_EQ(f.enc.assemble(global, {}, {1, 1}), f.tensor("global.image_embeds"));
  EXPECT_EQ(f.meta["mm_crop"]["n_image_tokens"].get<int64_t>(), image_token_count(16, 10, {2, 2}, true));
  EXPECT_EQ(f.meta["mm_global"]["n_image_tokens"].get<int64_t>(), image_token_count(16, 10, {1, 1}, false));
}

// Pixels -> image embeddings -> prefill embeddings -> decoder logits and greedy ids (R-SWA, W = 16).
class VisionGoldenEndToEnd : public ::testing::TestWithParam<std::string> {};

TEST_P(VisionGoldenEndToEnd, PixelsToLogits) {
  auto& f = fx();
  const std::string variant = GetParam();
  const auto& m = f.meta["mm_" + variant];

  auto px = f.weights.pixels("image_ori");
  ViewFeatures global = f.enc.encode_view(px.data(), 1024, f.pool);
  std::vector<ViewFeatures> tiles;
  TileLayout grid{m["crop"][0].get<int64_t>(), m["crop"][1].get<int64_t>()};
  if (variant == "crop")
    for (int64_t i = 0; i < grid.across * grid.down; ++i) {
      auto t = f.tile_pixels(i);
      tiles.push_back(f.enc.encode_view(t.data(), 640, f.pool));
    }
  std::vector<float> img = f.enc.assemble(global, tiles, grid);
  auto gold_img = f.tensor(variant + ".image_embeds");
  ASSERT_EQ(img.size(), gold_img.size());
  expect_close(("image embeddings " + variant).c_str(), compare(img.data(), gold_img.data(), static_cast<int64_t>(img.size())), kProjTol);

  // The official decoder of this tiny model is the one of tests/fixtures/official (same build, seed).
  auto dec_weights = SafetensorsFile::open(std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/official/tiny_weights.safetensors");
  ModelConfig mc = ModelConfig::from_hf_file(kDir + "config.json");
  Decoder dec(mc, *dec_weights, WeightNaming::HuggingFace);
  const int64_t H = mc.hidden;
  ASSERT_EQ(H, 64);

  // The placeholder positions (1 .. n_image, after BOS) take the image rows in order; the other
  // tokens their embeddings.
  auto ids = m["input_ids"].get<std::vector<int32_t>>();
  const size_t n_img = m["n_image_tokens"].get<size_t>();
  std::vector<float> prefill(ids.size() * static_cast<size_t>(H));
  size_t next_img = 0;
  for (size_t p = 0; p < ids.size(); ++p) {
    if (p >= 1 && p <= n_img)
      std::copy_n(img.data() + next_img++ * H, H, prefill.data() + p * H);
    else
      dec.embed(ids[p], prefill.data() + p * H);
  }
  ASSERT_EQ(next_img * H, img.size());
  expect_close(("prefill embeddings " + variant).c_str(),
               compare(prefill.data(), f.tensor(variant + ".prefill_inputs_embeds").data(), static_cast<int64_t>(prefill.size())),
               kProjTol);

  const auto& rec = m["record"];
  auto all_ids = rec["all_ids"].get<std::vector<int32_t>>();
  const size_t P = ids.size();
  ThreadPool pool(2);
  KVBlockPool kvpool(dec.kv_layout(DType::F32), 0);
  SequenceKV kv(kvpool, 1, KVPolicy::parse("rswa", 16), 16);
  std::vector<float> logits(static_cast<size_t>(mc.vocab));
  Decoder::Input in;
  in.kv = &kv;
  in.embeddings = prefill.data();
  in.n_embeddings = static_cast<int64_t>(P);
  in.reference = true;
  dec.forward({&in, 1}, logits.data(), pool);
  expect_close("prefill logits", compare(logits.data(), f.tensor(variant + ".logits_prefill_last").data(), mc.vocab), kLogitTol, 1e-4);
  auto argmax = [&] { return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()); };
  EXPECT_EQ(argmax(), all_ids[P]);
  for (size_t k = 0; P + k + 1 < all_ids.size(); ++k) {  // teacher-forced with the official ids
    Decoder::Input step;
    step.kv = &kv;
    step.tokens = std::span<const int32_t>(&all_ids[P + k], 1);
    dec.forward({&step, 1}, logits.data(), pool);
    EXPECT_EQ(argmax(), all_ids[P + k + 1]) << "greedy id after decode step " << k;
    if (k == 0 || k == 15 || k == 29)
      expect_close(("decode logits step " + std::to_string(k)).c_str(),
                   compare(logits.data(), f.tensor(variant + ".logits_decode_" + std::to_string(k)).data(), mc.vocab), kLogitTol,
                   1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, VisionGoldenEndToEnd, ::testing::Values("crop", "global"));

// ---- load errors name the tensor ---------------------------------------------------------------

std::string load_error(const VisionConfig& cfg, const TensorSource& w) {
  try {
    DeepEncoder e(cfg, w);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(VisionGoldenLoad, MissingMisshapedAndUnexpectedTensors) {
  const VisionConfig cfg = fx().cfg;
  {
    testing::GeneratedWeights w(kDir + "generated_weights.json");
    w.erase("model.sam_model.blocks.3.attn.rel_pos_h");
    EXPECT_NE(load_error(cfg, w).find("'model.sam_model.blocks.3.attn.rel_pos_h' not found"), std::string::npos) << load_error(cfg, w);
  }
  {
    testing::GeneratedWeights w(kDir + "generated_weights.json");
    w.erase("model.view_seperator");
    EXPECT_NE(load_error(cfg, w).find("model.view_seperator"), std::string::npos);
  }
  {
    testing::GeneratedWeights w(kDir + "generated_weights.json");
    w.add("model.sam_model.blocks.4.norm1.weight", {64});  // a block the config does not have
    EXPECT_NE(load_error(cfg, w).find("unexpected tensor 'model.sam_model.blocks.4.norm1.weight'"), std::string::npos)
        << load_error(cfg, w);
  }
  {
    // The real model's config on the tiny weights: the first mismatch is named with both shapes.
    testing::GeneratedWeights w(kDir + "generated_weights.json");
    std::string e = load_error(VisionConfig{}, w);
    EXPECT_NE(e.find("'model.sam_model.patch_embed.proj.weight' has shape [64, 3, 16, 16]"), std::string::npos) << e;
  }
  {
    // Windowed vs global is read from the config; a config that swaps them mis-shapes rel_pos.
    VisionConfig swapped = cfg;
    swapped.sam_global_layers = {0, 3};
    testing::GeneratedWeights w(kDir + "generated_weights.json");
    std::string e = load_error(swapped, w);
    EXPECT_NE(e.find("'model.sam_model.blocks.0.attn.rel_pos_h' has shape [27, 32]"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace folio
