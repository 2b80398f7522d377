// OcrPassReader: what one OCR pass's generated tokens become (its text, then its pages), the same
// for every door.
//
// `folio ocr` (runtime/ocr_pipeline.cpp) decodes passes with a Generator on the calling thread; the
// server and Python (server/ocr_job.cpp) with the scheduler on its own thread. Both hand each pass's
// tokens, in order, to a reader, which:
//  - turns them into text: the model's write_token when its tokens are not text (OcrPass), the
//    tokenizer's bytes otherwise (complete UTF-8 pieces), the end token left out when generation
//    stops at it; end() adds what the pass still owes (write_end, or the detokenizer's held bytes);
//  - turns the text into pages: while the pass decodes, a page is final once the model has started
//    the next one (a page marker, which ends in '>', was written); once the pass has ended, exactly
//    `count` pages (fit_ocr_pages: missing pages empty, extra ones merged into the last, a warning).
//    Each page is given out once.
// OcrTextInOrder streams several passes' text as reading one pass after another would.
// Not thread-safe: one reader per pass, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "doc/ocr_output.h"
#include "runtime/ocr_model.h"
#include "text/tokenizer.h"

namespace folio {

class OcrPassReader {
 public:
  // The pass of pages [first, first + count) of a document; `pass`'s write_token and write_end are
  // moved out of it (its reference and recipe stay, for decoding). `model` outlives the reader.
  OcrPassReader(OcrModel& model, OcrPass& pass, size_t first, size_t count);

  // The text `token` adds (empty for the end token, or while a UTF-8 sequence is incomplete).
  // Precondition: !ended().
  std::string push(int32_t token);
  // Generation ended (any stop reason): the text the pass still owes. Precondition: !ended().
  std::string end();

  // Pages that became final since the last call, in order, as (index among the document's pages,
  // page). After end(): every page not given yet, fitted to `count`; `warnings` gets what fitting
  // changed.
  std::vector<std::pair<size_t, OcrPage>> take_final_pages(std::vector<std::string>& warnings);

  bool ended() const { return ended_; }
  const std::string& text() const { return text_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  size_t first() const { return first_; }
  size_t count() const { return count_; }

 private:
  OcrModel& model_;
  size_t first_, count_;
  bool skip_eos_;
  int32_t eos_;
  std::function<std::string(int32_t)> write_token_;
  std::function<std::string()> write_end_;
  std::optional<StreamingDetokenizer> detok_;  // when the tokens are text
  std::string text_;
  std::vector<int32_t> tokens_;
  bool ended_ = false;
  bool marker_seen_ = false;  // a page marker may have ended since the last take_final_pages
  size_t given_ = 0;          // pages given out, from first_
};

// The text of a document's passes in pass order, as one pass after another streams it: the current
// pass's text as it grows, then "\n\n" and the next pass's once the current one has ended. Passes
// may decode side by side and end in any order; a later pass's text waits for the earlier ones.
class OcrTextInOrder {
 public:
  // What the passes added since the last call. `pass(k)` is pass k's reader, or null while pass k
  // has not started; a pass the stream has moved past is not asked for again.
  std::string take(size_t passes, const std::function<const OcrPassReader*(size_t)>& pass);
  // The pass whose text streams now (== passes once every pass was taken whole).
  size_t current() const { return current_; }

 private:
  size_t current_ = 0;
  size_t taken_ = 0;     // bytes of the current pass's text taken
  bool opened_ = false;  // the current pass's separator was taken
};

}  // namespace folio
