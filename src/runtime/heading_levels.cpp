#include "runtime/heading_levels.h"

#include <algorithm>
#include <cmath>

namespace folio {

bool alike(const LineStyle& a, const LineStyle& b) {
  const bool placed_alike = a.centred || b.centred ? a.centred && b.centred : std::abs(a.indent - b.indent) <= kIndentTolerance;
  return std::abs(std::log(a.size / b.size)) <= kSizeTolerance && std::abs(std::log(a.weight / b.weight)) <= kWeightTolerance &&
         a.caps == b.caps && placed_alike;
}

const std::pair<LineStyle, int>* HeadingLevels::known(const LineStyle& style) const {
  for (const auto& k : known_)
    if (alike(k.first, style)) return &k;
  return nullptr;
}

int HeadingLevels::level(const LineStyle& style, int proposed) const {
  if (const auto* k = known(style)) return k->second;
  return last_ ? std::min(proposed, last_ + 1) : proposed;
}

void HeadingLevels::note(const LineStyle& style, int level) {
  if (!known(style)) known_.emplace_back(style, level);
  last_ = level;
}

}  // namespace folio
