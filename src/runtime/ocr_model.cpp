#include "runtime/ocr_model.h"

#include <filesystem>
#include <nlohmann/json.hpp>

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

namespace {
bool is_ocr_type(const std::string& type) {
  return type == "unlimited-ocr" || type == "deepseek-ocr" || type == "deepseek_vl_v2" || type == "folio-mini-ocr" ||
         type == "folio-mini-ocr-2";
}
}  // namespace

bool is_ocr_model_dir(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path cfg = fs::path(path) / "config.json";
  if (!fs::is_directory(path, ec) || !fs::exists(cfg, ec)) return false;
  try {
    const nlohmann::json j = read_json_file(cfg.string());
    return j.is_object() && is_ocr_type(j.value("model_type", std::string()));
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
  if (type == "unlimited-ocr" || type == "deepseek-ocr" || type == "deepseek_vl_v2") return UnlimitedOcrModel::load(dir, weights);
  if (type == "folio-mini-ocr") return MiniOcrModel::load(dir, weights);
  if (type == "folio-mini-ocr-2") return MiniOcr2Model::load(dir, weights);
  throw Error(Error::Kind::Unsupported, cfg.string() + ": model_type '" + type +
                                            "' is not an OCR model folio knows (unlimited-ocr, deepseek-ocr, folio-mini-ocr, folio-mini-ocr-2)");
}

}  // namespace folio
