#include "runtime/prefix_entry_codec.h"

#include <cstring>
#include <type_traits>

namespace folio {

namespace {

// Little-endian, fixed widths: folio's own format between replicas of one build.
struct Writer {
  std::string out;
  template <class T>
  void pod(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <class T>
  void array(const std::vector<T>& v) {
    pod<uint64_t>(v.size());
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void text(const std::string& s) {
    pod<uint64_t>(s.size());
    out += s;
  }
};

struct Reader {
  std::string_view in;
  bool ok = true;
  template <class T>
  T pod() {
    T v{};
    if (in.size() < sizeof v) return ok = false, v;
    std::memcpy(&v, in.data(), sizeof v);
    in.remove_prefix(sizeof v);
    return v;
  }
  // A count of items of `size` bytes each that the remaining bytes can hold.
  size_t count(size_t size) {
    const uint64_t n = pod<uint64_t>();
    if (!ok || n > in.size() / size) return ok = false, 0;
    return static_cast<size_t>(n);
  }
  template <class T>
  std::vector<T> array() {
    std::vector<T> v(count(sizeof(T)));
    if (ok && !v.empty()) std::memcpy(v.data(), in.data(), v.size() * sizeof(T));
    in.remove_prefix(v.size() * sizeof(T));
    return v;
  }
  std::string text() {
    const size_t n = count(1);
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
};

bool valid_dtype(KVDType t) { return static_cast<uint8_t>(t) <= static_cast<uint8_t>(KVDType::Q4); }

}  // namespace

std::string encode_prefix_entry(const PrefixKVCache::Entry& e) {
  Writer w;
  w.pod<uint64_t>(e.keys.size());
  for (const std::string& k : e.keys) w.text(k);
  w.array(e.logits);
  const ReferenceSnapshot& s = *e.kv;
  w.pod(s.types.ref_k), w.pod(s.types.ref_v), w.pod(s.types.win_k), w.pod(s.types.win_v), w.pod<uint8_t>(s.types.rotated);
  w.pod(s.n_layers), w.pod(s.block_tokens);
  w.pod<uint64_t>(s.segments.size());
  for (const ReferenceSnapshot::Segment& seg : s.segments) {
    w.pod(seg.length);
    w.array(seg.unit_starts);
    w.pod<uint64_t>(seg.layers.size());
    for (const auto& layer : seg.layers) {
      w.pod<uint64_t>(layer.size());
      for (const ReferenceSnapshot::Block& b : layer) {
        w.pod(b.tokens), w.pod(b.k), w.pod(b.v);
        w.array(b.bytes);
      }
    }
  }
  return std::move(w.out);
}

std::optional<PrefixKVCache::Entry> decode_prefix_entry(std::string_view bytes) {
  Reader r{bytes};
  PrefixKVCache::Entry e;
  const size_t nkeys = r.count(8);
  for (size_t i = 0; i < nkeys && r.ok; ++i) e.keys.push_back(r.text());
  e.logits = r.array<float>();
  auto snap = std::make_shared<ReferenceSnapshot>();
  snap->types.ref_k = r.pod<KVDType>(), snap->types.ref_v = r.pod<KVDType>();
  snap->types.win_k = r.pod<KVDType>(), snap->types.win_v = r.pod<KVDType>();
  snap->types.rotated = r.pod<uint8_t>() != 0;
  snap->n_layers = r.pod<int64_t>(), snap->block_tokens = r.pod<int64_t>();
  const size_t nseg = r.count(8);
  for (size_t i = 0; i < nseg && r.ok; ++i) {
    ReferenceSnapshot::Segment seg;
    seg.length = r.pod<int64_t>();
    seg.unit_starts = r.array<int64_t>();
    seg.layers.resize(r.count(8));
    for (auto& layer : seg.layers) {
      layer.resize(r.count(8));
      for (ReferenceSnapshot::Block& b : layer) {
        b.tokens = r.pod<int64_t>(), b.k = r.pod<KVDType>(), b.v = r.pod<KVDType>();
        b.bytes = r.array<uint8_t>();
        if (!valid_dtype(b.k) || !valid_dtype(b.v)) r.ok = false;
        if (!r.ok) break;
      }
      if (!r.ok) break;
    }
    snap->segments.push_back(std::move(seg));
  }
  if (!r.ok || !r.in.empty() || e.keys.empty() || snap->segments.size() != e.keys.size()) return std::nullopt;
  for (KVDType t : {snap->types.ref_k, snap->types.ref_v, snap->types.win_k, snap->types.win_v})
    if (!valid_dtype(t)) return std::nullopt;
  e.bytes = snap->bytes() + e.logits.size() * sizeof(float);
  e.kv = std::move(snap);
  return e;
}

bool prefix_entry_fits(const PrefixKVCache::Entry& e, const KVBlockPool& pool, int64_t block_tokens, int64_t vocab) {
  const ReferenceSnapshot& s = *e.kv;
  const KVLayout& lay = pool.layout();
  if (s.n_layers != lay.n_layers || s.block_tokens != block_tokens) return false;
  if (s.types.ref_k != lay.types.ref_k || s.types.ref_v != lay.types.ref_v || s.types.rotated != lay.types.rotated) return false;
  if (!e.logits.empty() && static_cast<int64_t>(e.logits.size()) != vocab) return false;
  for (const ReferenceSnapshot::Segment& seg : s.segments) {
    if (seg.length <= 0 || static_cast<int64_t>(seg.layers.size()) != s.n_layers) return false;
    for (int64_t u : seg.unit_starts)
      if (u <= 0 || u >= seg.length) return false;
    for (const auto& layer : seg.layers) {
      int64_t rows = 0;
      for (const ReferenceSnapshot::Block& b : layer) {
        if (b.tokens <= 0 || b.tokens > block_tokens || b.bytes.size() != pool.block_bytes(b.tokens, b.k, b.v)) return false;
        rows += b.tokens;
      }
      if (rows < seg.length || rows - seg.length >= block_tokens) return false;
    }
  }
  return true;
}

}  // namespace folio
