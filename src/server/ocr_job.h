// OcrJob: one OCR request (POST /v1/ocr, or a chat message with images) run through the scheduler.
//
// start() does, in order, on the calling (HTTP) thread:
//   1. writes the uploaded files into a private temporary directory (removed with the job: figures
//      are cropped from the pages once they are read) and opens them as OcrPages (the
//      same checks as `folio ocr`: a corrupt PDF, an undecodable image, a page range outside the
//      documents are ApiError 400 naming the client's file name, never a temporary path);
//   2. refuses more than `max_pages` pages and a max_tokens above `max_output_length` (400);
//   3. splits the pages into passes as run_ocr does (plan_ocr_passes), and for each pass takes the
//      prepared reference from the ReferenceCache or prepares it (rendering and encoding the pages on
//      the engine's encoder threads, one request at a time, so the scheduler thread never waits for
//      an encoder), then submits it as one scheduler sequence with the model's recipe (embed_token
//      hook, n-gram guard). Passes of one request decode concurrently, batched with everything else.
//      A rejection (queue full, KV budget) cancels the passes already submitted and is an ApiError.
// poll() then reports pages as they become final: a page is final when the model has started the
// next page of its pass, or when its pass has ended; pages are reported in order. Each pass's text is
// parsed as run_ocr parses it (OcrModel::parse, then fit_ocr_pages), so the pages equal `folio ocr`'s
// for the same input. The destructor cancels unfinished passes (freeing their KV at the next step).
// Not thread-safe: one HTTP thread drives a job.
#pragma once

#include <chrono>
#include <map>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "runtime/ocr_model.h"
#include "runtime/ocr_pages.h"
#include "runtime/ocr_pass_reader.h"
#include "runtime/scheduler.h"
#include "server/api_error.h"
#include "server/ocr_request.h"
#include "server/reference_cache.h"
#include "server/remote_reference_tier.h"

namespace folio {

// What a job runs on: the Service's model, scheduler, cache and encoder threads.
struct OcrEngine {
  OcrModel* model = nullptr;
  Scheduler* scheduler = nullptr;
  ReferenceCache* cache = nullptr;
  RemoteReferenceTier* remote = nullptr;                  // null: no tier shared with other replicas
  ThreadPool* encode_threads = nullptr;
  std::mutex* encode_mu = nullptr;                        // held while encoding (encode_threads is not re-entrant)
  std::function<void(const SequenceResult&)> on_pass_done;  // e.g. metrics; runs on the scheduler thread
  std::string model_id;
};

struct OcrJobLimits {
  size_t max_pages = 100;
  int64_t max_output_length = 4096;    // generated tokens per pass at most
  int64_t max_reference_length = 0;    // reference tokens per pass at most; 0 = the model's context
  double timeout_s = 600;
};

class OcrJob {
 public:
  // Throws ApiError (400 for bad input, 503 / 400 for rejections by the scheduler). page_images:
  // every page is also rendered as a PNG for page_json's "image".
  static std::unique_ptr<OcrJob> start(const OcrEngine& engine, std::vector<UploadedFile> files, const std::string& pages,
                                       std::optional<int64_t> max_tokens, const OcrJobLimits& limits, bool page_images = false);
  ~OcrJob();
  OcrJob(const OcrJob&) = delete;
  OcrJob& operator=(const OcrJob&) = delete;

  struct Progress {
    std::vector<size_t> pages;  // pages that became final since the last poll, in order
    bool done = false;          // every pass has ended (then every page has been reported)
  };
  // Waits up to `wait` for news from the scheduler.
  Progress poll(std::chrono::milliseconds wait);
  // Polls until done.
  void wait();
  // Cancels every unfinished pass.
  void cancel();

  size_t page_count() const { return pages_.size(); }
  // Page i (final once poll() reported it) as `folio ocr --json` writes it: page, width, height,
  // markdown, blocks, source (the client's file name) and source_page; with page_images, "image":
  // the page as rendered for the model, a PNG data URI at most kPageImageWidth pixels wide. Each
  // figure (an image block) is cropped when its page is reported: its block has "file"
  // (page-P-figure-K.png, what the markdown links: "![caption](page-P-figure-K.png)") and "data"
  // (the PNG as a data URI).
  nlohmann::json page_json(size_t i) const;
  std::string page_markdown(size_t i) const;
  // What page i adds to markdown(): pieces 0..n-1 concatenated are markdown() (document_markdown),
  // so a stream of pieces reads as the whole document.
  std::string markdown_piece(size_t i) const;
  // After done: the first pass that did not end normally, as the error to answer with.
  std::optional<ApiError> failure() const;
  // After done: {"object": "ocr", "model", "mode", "markdown", "pages": [page_json...], "usage",
  // "stats": {pages, passes, reference_tokens, decode_tokens, queue_to_first_token_ms (submission to
  // the first token of any pass), decode_ms (first to last token of the longest pass), stop_reasons},
  // "warnings"?}.
  // page_images false: the pages without their images (a stream has sent them already).
  nlohmann::json result(bool page_images = true) const;
  // OpenAI usage over all passes; cached_tokens counts reference rows taken from the cache.
  nlohmann::json usage() const;
  std::string markdown() const;
  // Generated ids of all passes, in order (for return_token_ids).
  std::vector<int32_t> tokens() const;
  // The text the model wrote since the last call, in pass order as `folio ocr --stream` prints it
  // (a pass's text while it decodes, the next pass's once it has ended; "\n\n" between passes).
  // Grows as poll() absorbs tokens.
  std::string take_text();

 private:
  struct Shared;
  struct Pass;
  OcrJob() = default;
  // Opens the staged uploads at `paths` (errors through invalid_document) and checks the page limit.
  void open_pages(const std::vector<std::string>& paths, const std::string& page_range,
                  const std::function<ApiError(const Error&)>& invalid_document);
  // Submits pass k (pages p.first..) from its prepared reference; ApiError when refused.
  void submit_pass(size_t k, Pass& p, std::shared_ptr<const CachedPass> cached, std::optional<int64_t> max_tokens,
                   std::chrono::steady_clock::time_point deadline);
  void absorb(Pass& p, const std::vector<int32_t>& fresh, const std::optional<SequenceResult>& result);
  // Crops page i's figures (final, reported now) into figures_, naming them in its blocks.
  void add_figures(size_t i);
  // Renders every selected page to page_images_ (errors through invalid_document).
  void render_page_images(const std::function<ApiError(const Error&)>& invalid_document);

  OcrEngine engine_;
  OcrJobLimits limits_;
  std::string tmp_dir_;
  OcrPages ocr_pages_;
  std::vector<std::string> sources_;  // per selected page: the client's file name
  std::vector<std::unique_ptr<Pass>> passes_;
  std::shared_ptr<Shared> shared_;
  std::vector<OcrPage> pages_;
  std::vector<bool> final_;
  size_t reported_ = 0;
  std::vector<std::string> warnings_;
  std::vector<std::string> page_images_;  // data URIs, when asked for
  std::vector<std::map<std::string, std::string>> figures_;  // [page]: figure file name -> PNG data URI
  size_t figures_numbered_ = 0;
  OcrTextInOrder text_order_;  // take_text's place
};

// The widest page image a job returns: enough to read a page on a screen, a few hundred KB per page.
inline constexpr int kPageImageWidth = 1000;

}  // namespace folio
