#include "server/remote_pass.h"

#include <cstring>
#include <vector>

#include "runtime/sequence_request.h"

namespace folio {

namespace {

template <class T>
void append_array(std::string& out, const std::vector<T>& v) {
  const uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Reads an array append_array wrote; false past the end of the payload.
template <class T>
bool read_array(std::string_view& in, std::vector<T>& v) {
  uint64_t n;
  if (in.size() < sizeof n) return false;
  std::memcpy(&n, in.data(), sizeof n);
  in.remove_prefix(sizeof n);
  if (n > in.size() / sizeof(T)) return false;
  v.resize(static_cast<size_t>(n));
  std::memcpy(v.data(), in.data(), v.size() * sizeof(T));
  in.remove_prefix(v.size() * sizeof(T));
  return true;
}

}  // namespace

bool remote_pass_eligible(const OcrPass& pass) {
  return !pass.write_token && !pass.write_end && !pass.model_state && !pass.generation.rolling;
}

std::string encode_pass_rows(const OcrPass& pass, int64_t hidden) {
  std::string out;
  for (const ReferencePart& part : pass.reference) {
    if (!part.is_embedding()) continue;
    const std::vector<float> rows = part.embeddings();
    if (rows.size() != part.ids.size() * static_cast<size_t>(hidden)) return std::string();  // not a pass we can describe
    append_array(out, part.ids);
    append_array(out, rows);
  }
  return out;
}

bool fill_pass_rows(OcrPass& pass, std::string_view payload, int64_t hidden) {
  std::vector<std::vector<float>> rows;  // per embedding part, all checked before any is used
  for (const ReferencePart& part : pass.reference) {
    if (!part.is_embedding()) continue;
    std::vector<int32_t> ids;
    std::vector<float> r;
    if (!read_array(payload, ids) || !read_array(payload, r)) return false;
    if (ids != part.ids || r.size() != ids.size() * static_cast<size_t>(hidden)) return false;
    rows.push_back(std::move(r));
  }
  if (!payload.empty() || rows.empty()) return false;
  size_t k = 0;
  for (ReferencePart& part : pass.reference) {
    if (!part.is_embedding()) continue;
    auto shared = std::make_shared<std::vector<float>>(std::move(rows[k++]));
    part.embeddings = [shared] { return *shared; };
    produce_keyed(part, hidden);
  }
  return true;
}

}  // namespace folio
