#include "doc/ocr_prompt.h"

#include <string>

#include "core/error.h"

namespace folio {

std::string_view default_ocr_prompt(size_t page_count) {
  return page_count > 1 ? kMultiPagePrompt : kSinglePagePrompt;
}

std::vector<uint8_t> OcrPrompt::image_mask() const {
  std::vector<uint8_t> mask(ids.size(), 0);
  for (const ImageSpan& s : pages) {
    for (int64_t i = 0; i < s.count; ++i) mask[static_cast<size_t>(s.start + i)] = 1;
  }
  return mask;
}

OcrPrompt build_ocr_prompt(const Tokenizer& tokenizer, std::span<const int64_t> image_tokens_per_page,
                           std::string_view prompt_template, const OcrPromptOptions& options) {
  constexpr std::string_view kImage = "<image>";
  const std::string quoted = "prompt '" + std::string(prompt_template) + "'";
  const size_t at = prompt_template.find(kImage);
  FOLIO_CHECK_INPUT(at != std::string_view::npos, quoted + " has no <image>");
  FOLIO_CHECK_INPUT(prompt_template.find(kImage, at + kImage.size()) == std::string_view::npos,
                    quoted + " has more than one <image>; all pages go at a single <image>");
  FOLIO_CHECK_INPUT(!image_tokens_per_page.empty(), "OCR prompt needs at least one page");

  const std::optional<int32_t> bos = options.bos_id ? options.bos_id : tokenizer.bos_id();
  FOLIO_CHECK_INPUT(bos.has_value(), "the tokenizer has no BOS token; the OCR prompt must start with one");
  int32_t image_id = kImageTokenId;
  if (options.image_token_id) {
    image_id = *options.image_token_id;
  } else if (auto id = tokenizer.token_to_id(kImage)) {
    image_id = *id;
  }
  const int32_t vocab = tokenizer.vocab_size();
  FOLIO_CHECK_INPUT(*bos >= 0 && *bos < vocab, "BOS id " + std::to_string(*bos) + " is outside the vocabulary");
  FOLIO_CHECK_INPUT(image_id >= 0 && image_id < vocab,
                    "image token id " + std::to_string(image_id) + " is outside the vocabulary of " +
                        std::to_string(vocab) + " ids");

  OcrPrompt p;
  p.ids.push_back(*bos);
  for (int32_t id : tokenizer.encode(prompt_template.substr(0, at))) p.ids.push_back(id);
  for (size_t i = 0; i < image_tokens_per_page.size(); ++i) {
    const int64_t n = image_tokens_per_page[i];
    FOLIO_CHECK_INPUT(n > 0, "page " + std::to_string(i + 1) + " has " + std::to_string(n) + " image tokens");
    p.pages.push_back({static_cast<int64_t>(p.ids.size()), n});
    p.ids.insert(p.ids.end(), static_cast<size_t>(n), image_id);
  }
  for (int32_t id : tokenizer.encode(prompt_template.substr(at + kImage.size()))) p.ids.push_back(id);
  return p;
}

}  // namespace folio
