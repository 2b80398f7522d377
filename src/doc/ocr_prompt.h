// Token layout of an Unlimited-OCR prompt (docs/deepencoder.md 5.2).
//
// Promises: ids = [BOS] + tokens(text before "<image>") + [image id] * (sum of the pages' image
// tokens) + tokens(text after "<image>"), exactly as the official code builds it: each text piece
// is encoded on its own with no BOS/EOS, BOS is prepended once, and all pages' placeholders sit
// at the single "<image>", page after page, with nothing between pages. `pages` tells where each
// page's image embeddings go (a masked scatter in sequence order fills exactly these positions).
// The template must contain "<image>" exactly once (InvalidInput otherwise, naming it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace folio {

inline constexpr std::string_view kSinglePagePrompt = "<image>document parsing.";
inline constexpr std::string_view kMultiPagePrompt = "<image>Multi page parsing.";
inline constexpr int32_t kImageTokenId = 128815;

// The official prompt for this many pages.
std::string_view default_ocr_prompt(size_t page_count);

struct ImageSpan {
  int64_t start = 0;  // position of the page's first placeholder in ids
  int64_t count = 0;  // its number of image tokens
};

struct OcrPrompt {
  std::vector<int32_t> ids;
  std::vector<ImageSpan> pages;  // one per page, in order, contiguous
  int64_t image_tokens() const { return pages.empty() ? 0 : pages.back().start + pages.back().count - pages.front().start; }
  // True at placeholder positions (the official images_seq_mask).
  std::vector<uint8_t> image_mask() const;
};

struct OcrPromptOptions {
  // Default: the tokenizer's BOS (InvalidInput if it has none).
  std::optional<int32_t> bos_id;
  // Default: the tokenizer's "<image>" token if it has one, else kImageTokenId.
  std::optional<int32_t> image_token_id;
};

// image_tokens_per_page: e.g. 273 per Base page (image_token_count in preprocess.h). Every count
// must be positive and there must be at least one page.
OcrPrompt build_ocr_prompt(const Tokenizer& tokenizer, std::span<const int64_t> image_tokens_per_page,
                           std::string_view prompt_template, const OcrPromptOptions& options = {});

}  // namespace folio
