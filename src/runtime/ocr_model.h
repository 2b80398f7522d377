// OcrModel: what the OCR pipeline needs from an OCR model, whatever its vision tower.
//
// A model turns a run of consecutive pages (one "pass") into a decoder reference (text tokens and
// image-embedding rows, ReferencePart) plus its decoding recipe (n-gram guard, an optional
// embed_token hook), and parses what its decoder writes back into pages. The pipeline
// (ocr_pipeline.h) owns everything else: passes, KV pool, generation, streaming, statistics,
// markdown and JSON. Implementations: UnlimitedOcrModel (ocr_unlimited.h), MiniOcrModel (ocr_mini.h),
// MiniOcr2Model (ocr_mini2.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"
#include "doc/ocr_output.h"
#include "doc/preprocess.h"
#include "kernels/cpu/matmul.h"
#include "model/decoder.h"
#include "runtime/generator.h"
#include "runtime/ocr_pages.h"
#include "text/tokenizer.h"

namespace folio {

// One pass ready for the generator.
struct OcrPass {
  std::vector<ReferencePart> reference;
  // The model's decoding recipe (no_repeat_ngram / window, embed_token, constrain, stop_at_eos); the
  // pipeline fills in policy, max_tokens and prefill_chunk.
  DecodingOptions generation;
  // When set, the text each generated token adds (instead of the tokenizer's bytes; <eos> included)
  // and what the pass still owes once generation ends: for models whose tokens are not text
  // (folio-mini-ocr 2 writes one action per line; its recognizer's readings become the text).
  std::function<std::string(int32_t token)> write_token;
  std::function<std::string()> write_end;
  // What the model keeps about the pass for fresh_decoding (opaque to everyone else).
  std::shared_ptr<const void> model_state;
};

// Called after each page of a pass is encoded: the page's index in OcrPages and the milliseconds
// its rendering, preprocessing and encoding took.
using PageEncodedFn = std::function<void(size_t page, double ms)>;

class OcrModel {
 public:
  virtual ~OcrModel() = default;

  virtual std::string name() const = 0;
  virtual Decoder& decoder() = 0;
  virtual const Tokenizer& tokenizer() const = 0;

  // The resolution PDF pages should be rendered at for this model (the official Unlimited-OCR
  // recipe: 300 DPI).
  virtual double pdf_dpi() const { return kDefaultPdfDpi; }

  // Most tokens a pass of `count` pages can need (the default when --max-tokens is not given), so a
  // model that never writes its end token still stops. Default: the decoder's whole context.
  virtual int64_t max_output_tokens(size_t count);

  // Image tokens page `i` of `pages` takes in the reference under `mode` (known from the page size
  // alone, before anything is encoded). InvalidInput if the model cannot run the page in that mode.
  virtual int64_t image_tokens(const OcrPages& pages, size_t i, VisionMode mode) const = 0;

  // Most pages one pass may hold under `mode` (1 when each page needs its own prompt).
  virtual size_t max_pages_per_pass(VisionMode mode) const = 0;

  // The reference and recipe for pages [first, first + count). Image parts must be lazy
  // (ReferencePart::lazy): each renders and encodes its page when prefill reaches it and reports it
  // through on_encoded, so one page's activations are alive at a time. `threads` outlives the pass.
  virtual OcrPass prepare(const OcrPages& pages, size_t first, size_t count, VisionMode mode, ThreadPool& threads,
                          const PageEncodedFn& on_encoded) = 0;

  // A rolling pass over pages [first, first + count) (KV policy `rolling`): the reference starts with
  // the first `resident` pages, and each page the decoder finishes leaves it while the next enters
  // (DecodingOptions::rolling), so any number of pages takes the KV of a few. Unsupported (an
  // Error naming the model) by models that do not read their pages separately.
  virtual bool can_roll() const { return false; }
  virtual OcrPass prepare_rolling(const OcrPages& pages, size_t first, size_t count, size_t resident, VisionMode mode,
                                  ThreadPool& threads, const PageEncodedFn& on_encoded);

  // A prepared pass ready for one more sequence (the server decodes one prepared pass for many
  // requests): hooks that keep decoding state get their own. Default: a copy.
  virtual OcrPass fresh_decoding(const OcrPass& prepared) const { return prepared; }

  // The arithmetic of the vision encoder's products (kernels::GemmPrecision; Bf16 runs only where the
  // CPU has AVX512-BF16). Returns false, changing nothing, for a model whose encoder has no bf16 path
  // (folio's mini models). Not to be called while a pass is being prepared.
  virtual bool set_encoder_precision(kernels::GemmPrecision) { return false; }
  // The precision the encoder's products actually run in ("f32" or "bf16").
  virtual const char* encoder_precision() const { return "f32"; }
  // The same for the decoder's prefill (Decoder::set_prefill_precision). Returns false, changing
  // nothing, for folio's mini models: their prefills are a few hundred rows, and their accuracy
  // figures are those of f32.
  virtual bool set_prefill_precision(kernels::GemmPrecision) { return false; }
  // The precision the decoder's prefill products actually run in ("f32" or "bf16").
  virtual const char* prefill_precision() const { return "f32"; }

  // The decoded text of one pass -> its pages (parse_ocr_output by default).
  virtual std::vector<OcrPage> parse(std::string_view text) const { return parse_ocr_output(text); }
};

// Throws InvalidInput unless pages [first, first + count) are a non-empty run of `pages` (the check
// every prepare makes).
void check_pass_pages(const OcrPages& pages, size_t first, size_t count);

// The pass of pages [first, first + count) as `policy` reads it: prepare_rolling with the policy's
// resident pages when it rolls, prepare otherwise (errors as theirs).
OcrPass prepare_ocr_pass(OcrModel& model, const OcrPages& pages, size_t first, size_t count, const KVPolicy& policy,
                         VisionMode mode, ThreadPool& threads, const PageEncodedFn& on_encoded);

// Opens the OCR model in directory `dir`, choosing the implementation from its config.json
// ("model_type": "unlimited-ocr", "deepseek-ocr", "deepseek_vl_v2"; "folio-mini-ocr"). InvalidInput naming the
// directory or file when something is missing, broken or of an unknown type. `weights`: as
// load_model's (the decoder's linears re-stored in a block format; the vision tower keeps its types).
// `mmproj`: with a .gguf text model instead of a directory, llama.cpp's vision-tower file for it
// (Unlimited-OCR / DeepSeek-OCR); a .gguf without one is InvalidInput.
std::unique_ptr<OcrModel> load_ocr_model(const std::string& dir, const std::string& weights = "",
                                         const std::string& mmproj = "");

// True when `path` is a directory whose config.json names an OCR model type load_ocr_model knows
// (false for anything else, including a missing or unreadable config).
bool is_ocr_model_dir(const std::string& path);

}  // namespace folio
