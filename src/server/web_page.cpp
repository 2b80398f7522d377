#include "server/web_page.h"

namespace folio {

std::string web_page(const nlohmann::json& config) {
  const std::string_view page = web_page_template();
  constexpr std::string_view kPlaceholder = "{{FOLIO_CONFIG}}";
  // "<" as \u003c: no "</script>" or "<!--" inside the JSON can close or confuse the element.
  std::string value;
  for (char c : config.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace)) {
    if (c == '<') value += "\\u003c";
    else value += c;
  }
  const size_t at = page.find(kPlaceholder);
  if (at == std::string_view::npos) return std::string(page);
  std::string out;
  out.reserve(page.size() + value.size());
  out.append(page.substr(0, at)).append(value).append(page.substr(at + kPlaceholder.size()));
  return out;
}

}  // namespace folio
