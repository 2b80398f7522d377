#include "runtime/ocr_pass_reader.h"

#include <algorithm>

#include "core/error.h"
#include "runtime/ocr_pipeline.h"

namespace folio {

OcrPassReader::OcrPassReader(OcrModel& model, OcrPass& pass, size_t first, size_t count)
    : model_(model),
      first_(first),
      count_(count),
      skip_eos_(pass.generation.stop_at_eos),
      eos_(model.decoder().config().eos_id),
      write_token_(std::move(pass.write_token)),
      write_end_(std::move(pass.write_end)) {
  if (!write_token_) detok_.emplace(model.tokenizer());
}

std::string OcrPassReader::push(int32_t token) {
  if (ended_) throw Error(Error::Kind::Internal, "OcrPassReader: a token after the pass ended");
  tokens_.push_back(token);
  std::string piece;
  if (write_token_) piece = write_token_(token);
  else if (!(skip_eos_ && token == eos_)) piece = detok_->push(token);
  // A page boundary can only appear where a marker ends ('>' of "<page>" / "<PAGE>").
  if (piece.find('>') != std::string::npos) marker_seen_ = true;
  text_ += piece;
  return piece;
}

std::string OcrPassReader::end() {
  if (ended_) throw Error(Error::Kind::Internal, "OcrPassReader: the pass ended twice");
  std::string rest = write_end_ ? write_end_() : detok_ ? detok_->flush() : std::string();
  text_ += rest;
  ended_ = true;
  return rest;
}

std::vector<std::pair<size_t, OcrPage>> OcrPassReader::take_final_pages(std::vector<std::string>& warnings) {
  std::vector<std::pair<size_t, OcrPage>> out;
  if (given_ == count_) return out;
  std::vector<OcrPage> pages;
  size_t complete = 0;
  if (ended_) {
    pages = fit_ocr_pages(model_.parse(text_), count_, first_, warnings);
    complete = count_;
  } else if (marker_seen_ && count_ > 1) {
    // Pages before the one being written: fitting only ever changes the last page.
    pages = model_.parse(text_);
    complete = std::min(pages.empty() ? 0 : pages.size() - 1, count_ - 1);
  }
  marker_seen_ = false;
  for (; given_ < complete; ++given_) out.emplace_back(first_ + given_, std::move(pages[given_]));
  return out;
}

std::string OcrTextInOrder::take(size_t passes, const std::function<const OcrPassReader*(size_t)>& pass) {
  std::string out;
  while (current_ < passes) {
    const OcrPassReader* r = pass(current_);
    if (!r) break;
    if (!opened_ && current_ > 0) out += "\n\n";
    opened_ = true;
    out.append(r->text(), taken_);
    taken_ = r->text().size();
    if (!r->ended()) break;
    ++current_;
    taken_ = 0;
    opened_ = false;
  }
  return out;
}

}  // namespace folio
