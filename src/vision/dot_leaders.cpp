#include "vision/dot_leaders.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace folio {

namespace {

bool ink_between(const std::vector<uint8_t>& binary, int width, const InkBox& a, const InkBox& b) {
  for (int y = std::min(a.y0, b.y0); y < std::max(a.y1, b.y1); ++y)
    for (int x = a.x1; x < b.x0; ++x)
      if (binary[size_t(y) * width + x]) return true;
  return false;
}

bool is_dot(const InkBox& b, int page_width) {
  const int w = b.x1 - b.x0, h = b.y1 - b.y0;
  const int most = std::max(3, int(DotLeaderRule::kDotMax * page_width));
  return w <= most && h <= most && w <= h + 2 && h <= w + 2 && 2 * b.count >= w * h;
}

// Step 2. Chains stay open while a later dot could still reach them (dots come in order of x0, and
// a gap is at most `reach`); the open ones keep their order of creation, so
// ties go to the earlier chain as the reference's scan of all chains does.
std::vector<std::vector<InkBox>> chain_dots(std::vector<InkBox> dots, const std::vector<uint8_t>& binary, int width) {
  std::stable_sort(dots.begin(), dots.end(), [](const InkBox& a, const InkBox& b) {
    return a.x0 != b.x0 ? a.x0 < b.x0 : a.y0 < b.y0;
  });
  const int reach = int(DotLeaderRule::kGapMax * width);
  std::vector<std::vector<InkBox>> chains;
  std::vector<size_t> open;
  for (const InkBox& d : dots) {
    std::erase_if(open, [&](size_t c) { return chains[c].back().x1 + reach < d.x0; });
    std::optional<size_t> best;
    int best_gap = 0;
    for (size_t c : open) {
      const InkBox& last = chains[c].back();
      const int gap = d.x0 - last.x1;
      if (gap > 0 && gap <= reach &&
          std::abs((d.y0 + d.y1) - (last.y0 + last.y1)) <= 2 && (!best || gap < best_gap) &&
          !ink_between(binary, width, last, d))
        best = c, best_gap = gap;
    }
    if (best) {
      chains[*best].push_back(d);
    } else {
      open.push_back(chains.size());
      chains.push_back({d});
    }
  }
  return chains;
}

// Step 3: runs of a regular pitch; a dot may end one run and start the next.
void regular_runs(const std::vector<InkBox>& chain, std::vector<DotLeader>& out) {
  auto keep = [&](const std::vector<InkBox>& run) {
    if (run.size() < size_t(DotLeaderRule::kMinDots)) return;
    DotLeader l;
    l.box = {run.front().x0, run.front().y0, run.back().x1, run.front().y1, 0};
    for (const InkBox& d : run) l.box.y0 = std::min(l.box.y0, d.y0), l.box.y1 = std::max(l.box.y1, d.y1);
    l.dots = run;
    out.push_back(std::move(l));
  };
  std::vector<InkBox> cur = {chain[0]};
  int ref = -1;  // the run's first pitch; -1 before it
  for (size_t i = 1; i < chain.size(); ++i) {
    const int p = chain[i].x0 - chain[i - 1].x0;
    if (ref >= 0 && (2 * p < ref || 2 * p > 3 * ref)) {
      keep(cur);
      cur = {chain[i - 1]};
      ref = -1;
    }
    if (ref < 0) ref = p;
    cur.push_back(chain[i]);
  }
  keep(cur);
}

}  // namespace

std::vector<DotLeader> find_dot_leaders(const std::vector<uint8_t>& binary, int width, int height) {
  std::vector<InkBox> dots;
  for (const InkBox& b : ink_components(binary, width, height))
    if (is_dot(b, width)) dots.push_back(b);
  std::vector<DotLeader> out;
  for (const std::vector<InkBox>& chain : chain_dots(std::move(dots), binary, width)) regular_runs(chain, out);
  std::stable_sort(out.begin(), out.end(), [](const DotLeader& a, const DotLeader& b) {
    return a.box.y0 != b.box.y0 ? a.box.y0 < b.box.y0 : a.box.x0 < b.box.x0;
  });
  return out;
}

InkBox leader_bar(const DotLeader& l) {
  const int pitch = (l.dots.back().x0 - l.dots.front().x0) / int(l.dots.size() - 1);
  const int h = std::max(pitch, 3 * (l.box.y1 - l.box.y0));
  return {l.box.x0, std::max(0, l.box.y1 - h), l.box.x1, l.box.y1, 0};
}

ErasedLeaders erase_dot_leaders(InkPage& page) {
  const std::vector<DotLeader> leaders = find_dot_leaders(page.binary, page.width, page.height);
  ErasedLeaders out;
  for (const DotLeader& l : leaders) {
    out.boxes.push_back(l.box);
    out.bars.push_back(leader_bar(l));
    for (const InkBox& d : l.dots)
      for (int y = d.y0; y < d.y1; ++y) std::fill_n(page.binary.begin() + size_t(y) * page.width + d.x0, d.x1 - d.x0, uint8_t(0));
  }
  for (const DotLeader& l : leaders)
    for (const InkBox& d : l.dots)
      for (int y = std::max(0, d.y0 - 1); y < std::min(page.height, d.y1 + 1); ++y)
        for (int x = std::max(0, d.x0 - 1); x < std::min(page.width, d.x1 + 1); ++x)
          if (!page.binary[size_t(y) * page.width + x]) page.ink[size_t(y) * page.width + x] = 0.0f;
  return out;
}

}  // namespace folio
