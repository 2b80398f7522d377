#include "runtime/sequence_request.h"

#include <memory>

#include "core/content_hash.h"
#include "core/error.h"
#include "kv/sequence_kv.h"

namespace folio {

ReferencePart ReferencePart::tokens(std::vector<int32_t> ids) {
  ReferencePart p;
  p.ids = std::move(ids);
  return p;
}

ReferencePart ReferencePart::rows(std::vector<int32_t> ids, std::vector<float> rows) {
  // std::function needs a copyable target; share the rows instead of copying them per call.
  auto shared = std::make_shared<std::vector<float>>(std::move(rows));
  return lazy(std::move(ids), [shared] { return *shared; });
}

ReferencePart ReferencePart::lazy(std::vector<int32_t> ids, std::function<std::vector<float>()> produce) {
  ReferencePart p;
  p.ids = std::move(ids);
  p.embeddings = std::move(produce);
  return p;
}

void produce_keyed(ReferencePart& part, int64_t hidden) {
  if (!part.is_embedding()) return;
  std::vector<float> rows = part.embeddings();
  if (rows.size() != part.ids.size() * static_cast<size_t>(hidden))
    throw Error(Error::Kind::Internal, "the model prepared a reference part of the wrong size");
  Sha256 key;
  key.field(std::string_view(reinterpret_cast<const char*>(rows.data()), rows.size() * sizeof(float)));
  ReferencePart produced = ReferencePart::rows(std::move(part.ids), std::move(rows));
  produced.key = key.hex();
  produced.unit_starts = std::move(part.unit_starts);
  produced.page = part.page;
  part = std::move(produced);
}

void begin_reference_part(SequenceKV& kv, const ReferencePart& part) {
  kv.begin_segment();
  const auto n = static_cast<int64_t>(part.ids.size());
  for (int64_t off : part.unit_starts)
    if (off > 0 && off < n) kv.sparse().begin_unit(kv.length() + off);
}

namespace {
// The segments of pages [first, last] (counting the parts marked `page`, one segment per part).
std::vector<size_t> page_segments(std::span<const ReferencePart> reference, int64_t first, int64_t last) {
  std::vector<size_t> out;
  int64_t page = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    if (!reference[i].page) continue;
    if (page >= first && page <= last) out.push_back(i);
    ++page;
  }
  return out;
}
}  // namespace

std::vector<size_t> focus_segments(std::span<const ReferencePart> reference, size_t page_now, const KVPolicy& policy) {
  const auto now = static_cast<int64_t>(page_now);
  return page_segments(reference, now, now + policy.focus_pages - 1);
}

std::vector<size_t> neighbour_segments(std::span<const ReferencePart> reference, size_t page_now, const KVPolicy& policy) {
  if (policy.neighbour_pages < 0) return {};
  const auto now = static_cast<int64_t>(page_now);
  return page_segments(reference, now - policy.neighbour_pages, now + std::max<int64_t>(policy.focus_pages, 1) - 1 + policy.neighbour_pages);
}

}  // namespace folio
