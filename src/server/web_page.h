// The page `folio serve` answers at / (src/server/web/index.html, compiled into the binary by
// cmake/embed_text.cmake): a person chooses or drops a PDF or an image and sees each page's image
// beside its markdown as it streams from POST /v1/ocr, with its numbers and figures and the document's
// .md and .json to download. It loads nothing from the network.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace folio {

// index.html as shipped, with the placeholder {{FOLIO_CONFIG}}.
std::string_view web_page_template();

// The page with `config` in place of the placeholder: {"model": name, "keys": whether requests need
// an API key, "reads_documents": whether the model is an OCR model}. The JSON is written so no
// string in it can end the page's <script> element.
std::string web_page(const nlohmann::json& config);

}  // namespace folio
