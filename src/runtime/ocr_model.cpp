#include "runtime/ocr_model.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "io/json_file.h"
#include "runtime/ocr_mini.h"
#include "runtime/ocr_mini2.h"
#include "runtime/ocr_unlimited.h"

namespace folio {

int64_t OcrModel::max_output_tokens(size_t) {
  return decoder().config().max_positions;
}

OcrPass OcrModel::prepare_rolling(const OcrPages&, size_t, size_t, size_t, VisionMode, ThreadPool&, const PageEncodedFn&) {
  throw Error(Error::Kind::Unsupported, "the rolling policy needs a model that reads each page as its own part of the "
                                        "reference; " + name() + " does not (use rswa, full or sparse)");
}

void check_pass_pages(const OcrPages& pages, size_t first, size_t count) {
  FOLIO_CHECK_INPUT(count >= 1 && first + count <= pages.size(), "OCR pass: pages " + std::to_string(first + 1) + ".." +
                                                                     std::to_string(first + count) + " of " +
                                                                     std::to_string(pages.size()));
}

OcrPass prepare_ocr_pass(OcrModel& model, const OcrPages& pages, size_t first, size_t count, const KVPolicy& policy,
                         VisionMode mode, ThreadPool& threads, const PageEncodedFn& on_encoded) {
  if (policy.rolls())
    return model.prepare_rolling(pages, first, count, static_cast<size_t>(policy.resident_pages), mode, threads, on_encoded);
  return model.prepare(pages, first, count, mode, threads, on_encoded);
}

namespace {

// The OCR models folio knows: the model_type values of a config.json and how such a directory
// loads. A new model is its own files plus one line here.
struct OcrModelKind {
  std::vector<std::string> model_types;
  std::unique_ptr<OcrModel> (*load)(const std::string& dir, const std::string& weights);
};

template <class Model>
std::unique_ptr<OcrModel> load_as(const std::string& dir, const std::string& weights) {
  return Model::load(dir, weights);
}

const std::vector<OcrModelKind>& ocr_model_kinds() {
  static const std::vector<OcrModelKind> kinds = {
      {{"unlimited-ocr", "deepseek-ocr", "deepseek_vl_v2"}, load_as<UnlimitedOcrModel>},
      {{"folio-mini-ocr"}, load_as<MiniOcrModel>},
      {{"folio-mini-ocr-2", "folio-mini-ocr-3"}, load_as<MiniOcr2Model>},  // one format, retrained
  };
  return kinds;
}

const OcrModelKind* ocr_model_kind(const std::string& type) {
  for (const OcrModelKind& k : ocr_model_kinds())
    if (std::find(k.model_types.begin(), k.model_types.end(), type) != k.model_types.end()) return &k;
  return nullptr;
}

std::string known_ocr_types() {
  std::string out;
  for (const OcrModelKind& k : ocr_model_kinds())
    for (const std::string& t : k.model_types) out += (out.empty() ? "" : ", ") + t;
  return out;
}

}  // namespace

bool is_ocr_model_dir(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path cfg = fs::path(path) / "config.json";
  if (!fs::is_directory(path, ec) || !fs::exists(cfg, ec)) return false;
  try {
    const nlohmann::json j = read_json_file(cfg.string());
    return j.is_object() && ocr_model_kind(j.value("model_type", std::string())) != nullptr;
  } catch (const std::exception&) {
    return false;
  }
}

std::unique_ptr<OcrModel> load_ocr_model(const std::string& dir, const std::string& weights, const std::string& mmproj) {
  namespace fs = std::filesystem;
  if (!fs::exists(dir)) throw_invalid("model directory '" + dir + "' does not exist");
  if (fs::is_regular_file(dir) && fs::path(dir).extension() == ".gguf") {
    if (mmproj.empty())
      throw_invalid("model '" + dir + "' is a GGUF text model: give its vision tower with --mmproj (llama.cpp's mmproj file)");
    return UnlimitedOcrModel::load_gguf(dir, mmproj, weights);
  }
  if (!mmproj.empty()) throw_invalid("--mmproj goes with a .gguf text model, not with the directory '" + dir + "'");
  if (!fs::is_directory(dir)) throw_invalid("model path '" + dir + "' is not a directory (an OCR model is a directory)");
  const fs::path cfg = fs::path(dir) / "config.json";
  if (!fs::exists(cfg)) throw_invalid("model directory '" + dir + "' has no config.json");
  const nlohmann::json j = read_json_file(cfg.string());
  const std::string type = j.is_object() ? j.value("model_type", std::string()) : std::string();
  // One line per OCR model family.
  if (const OcrModelKind* kind = ocr_model_kind(type)) return kind->load(dir, weights);
  throw Error(Error::Kind::Unsupported,
              cfg.string() + ": model_type '" + type + "' is not an OCR model folio knows (" + known_ocr_types() + ")");
}

}  // namespace folio
