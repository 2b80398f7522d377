// The vision golden fixtures do not store the tiny model's vision weights (~74 MB in f32): the
// driver that ran the official code filled every vision parameter and the input pixels from a
// counter-based hash, and tests/fixtures/vision/generated_weights.json lists, per tensor, the seed,
// scale and offset (plus a checksum). This regenerates them bit for bit; see the fixture README.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/tensor_source.h"

namespace folio::testing {

// x in [-1, 1) in steps of 2^-23 (exact in float32), from a splitmix64-style mix of (seed, i).
inline float hashed_uniform(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i * 0xD1B54A32D192ED03ull;
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * 0x1p-23f - 1.0f;
}

// value = float32(x * scale) + offset, two float32 roundings like numpy's float32 ops (scale is a
// power of two, so the product is exact and contraction to an FMA would not change it either).
inline std::vector<float> generate(uint64_t seed, int64_t n, float scale, float offset) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float p = hashed_uniform(seed, static_cast<uint64_t>(i)) * scale;
    v[static_cast<size_t>(i)] = p + offset;
  }
  return v;
}

inline std::vector<float> generate(const nlohmann::json& spec) {
  int64_t n = 1;
  for (int64_t d : spec["shape"].get<std::vector<int64_t>>()) n *= d;
  return generate(spec["seed"].get<uint64_t>(), n, spec["scale"].get<float>(), spec["offset"].get<float>());
}

// All tensors of a generated_weights.json manifest, as f32 views.
class GeneratedWeights : public TensorSource {
 public:
  explicit GeneratedWeights(const std::string& manifest_path) : path_(manifest_path) {
    std::ifstream in(manifest_path);
    if (!in) throw_invalid("cannot open " + manifest_path);
    manifest_ = nlohmann::json::parse(in);
    for (const auto& t : manifest_["tensors"]) {
      const std::string name = t["name"].get<std::string>();
      data_[name] = generate(t);
      TensorView v;
      v.name = name;
      v.dtype = DType::F32;
      v.shape = t["shape"].get<std::vector<int64_t>>();
      v.data = data_[name].data();
      views_[name] = v;
    }
  }

  const TensorView* find(std::string_view name) const override {
    auto it = views_.find(std::string(name));
    return it == views_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> n;
    for (const auto& [k, v] : views_) n.push_back(k);
    return n;
  }
  std::string description() const override { return path_; }

  // Tensors whose regenerated values do not match the manifest's checksums (should be empty).
  std::vector<std::string> checksum_mismatches() const {
    std::vector<std::string> bad;
    for (const auto& t : manifest_["tensors"]) {
      const auto& v = data_.at(t["name"].get<std::string>());
      double s = 0;
      for (float x : v) s += x;
      const double want = t["sum"].get<double>();
      if (std::fabs(s - want) > 1e-6 * (1.0 + std::fabs(want)) || v.front() != t["first"].get<float>() ||
          v.back() != t["last"].get<float>())
        bad.push_back(t["name"].get<std::string>());
    }
    return bad;
  }

  std::vector<float> pixels(const std::string& key) const { return generate(manifest_["pixels"][key]); }

  // Drops or replaces a tensor (load-error tests).
  void erase(const std::string& name) { views_.erase(name); }
  void add(const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    data_[name].assign(static_cast<size_t>(n), 0.0f);
    TensorView v;
    v.name = name;
    v.shape = std::move(shape);
    v.data = data_[name].data();
    views_[name] = v;
  }

 private:
  std::string path_;
  nlohmann::json manifest_;
  std::map<std::string, std::vector<float>> data_;
  std::map<std::string, TensorView> views_;
};

}  // namespace folio::testing
