#include "vision/ink_components.h"

#include <algorithm>
#include <numeric>

namespace folio {

namespace {

std::vector<InkRun> ink_runs(const std::vector<uint8_t>& binary, int width, int height) {
  std::vector<InkRun> runs;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = binary.data() + size_t(y) * width;
    for (int x = 0; x < width;) {
      if (!row[x]) { ++x; continue; }
      const int s = x;
      while (x < width && row[x]) ++x;
      runs.push_back({y, s, x});
    }
  }
  return runs;
}

size_t find_root(std::vector<size_t>& parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

}  // namespace

InkComponents label_ink_components(const std::vector<uint8_t>& binary, int width, int height) {
  InkComponents out;
  out.runs = ink_runs(binary, width, height);
  const std::vector<InkRun>& runs = out.runs;
  std::vector<size_t> parent(runs.size());
  std::iota(parent.begin(), parent.end(), size_t(0));
  // Runs of consecutive rows touch (8-connected) when they overlap with a pixel of slack.
  size_t prev_begin = 0, prev_end = 0;
  int prev_y = -2;
  for (size_t cur = 0; cur < runs.size();) {
    const int y = runs[cur].y;
    size_t cur_end = cur;
    while (cur_end < runs.size() && runs[cur_end].y == y) ++cur_end;
    for (size_t i = prev_begin, j = cur; prev_y == y - 1 && i < prev_end && j < cur_end;) {
      if (runs[i].x0 <= runs[j].x1 && runs[j].x0 <= runs[i].x1) {
        const size_t ri = find_root(parent, i), rj = find_root(parent, j);
        if (ri != rj) parent[std::max(ri, rj)] = std::min(ri, rj);
      }
      if (runs[i].x1 < runs[j].x1) ++i; else ++j;
    }
    prev_begin = cur, prev_end = cur_end, prev_y = y;
    cur = cur_end;
  }
  std::vector<size_t> index_of_root(runs.size(), size_t(-1));
  out.component.resize(runs.size());
  for (size_t k = 0; k < runs.size(); ++k) {
    const size_t r = find_root(parent, k);
    const InkRun& run = runs[k];
    if (index_of_root[r] == size_t(-1)) {
      index_of_root[r] = out.boxes.size();  // roots are each set's first run: boxes come in root order
      out.boxes.push_back({run.x0, run.y, run.x1, run.y + 1, run.x1 - run.x0});
    } else {
      InkBox& b = out.boxes[index_of_root[r]];
      b.x0 = std::min(b.x0, run.x0), b.y0 = std::min(b.y0, run.y);
      b.x1 = std::max(b.x1, run.x1), b.y1 = std::max(b.y1, run.y + 1);
      b.count += run.x1 - run.x0;
    }
    out.component[k] = static_cast<uint32_t>(index_of_root[r]);
  }
  return out;
}

std::vector<InkBox> ink_components(const std::vector<uint8_t>& binary, int width, int height) {
  return label_ink_components(binary, width, height).boxes;
}

}  // namespace folio
