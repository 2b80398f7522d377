#include "server/stop_strings.h"

#include <algorithm>

namespace folio {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}

std::string StopStrings::push(std::string_view text) {
  if (stopped_) return "";
  held_ += text;
  // The earliest complete stop string ends the output there.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of a stop string.
  size_t keep = 0;
  for (const std::string& s : stops_)
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStrings::finish() {
  std::string out;
  if (!stopped_) out.swap(held_);
  return out;
}

}  // namespace folio
