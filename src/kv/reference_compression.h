// Reference compression (KVPolicy::keep, SnapKV): which reference rows a sequence keeps once its
// reference is prefilled.
//
// ObservedQueries: the decoder hands it the query of every reference token it stores; it keeps the
// last `capacity` per layer (the prompt's tail when the reference ends with the prompt). Those
// queries are the observation window: what the model asks of the reference right before it writes.
//
// attention_mass(): for one layer and KV head, the attention every reference row receives from the
// observed queries of the query heads sharing that KV head: softmax(q . k / sqrt(d)) over the rows a
// query sees (positions <= its own), summed over queries and heads.
//
// select_rows(): the rows of one segment to keep: scores max-pooled over `radius` neighbours each
// side (a kept row keeps its context, as SnapKV's pooling does), then the `count` best, ties to the
// earlier row, returned in row order.
//
// ReferenceCompressor: one sequence's compression state (what SequenceKV delegates): the observed
// queries, whether it has compressed, the rows each segment kept and the rows dropped. compress()
// chooses the rows; reading and rewriting a segment's blocks is the caller's (it knows where they
// live), through the two callbacks.
//
// Pure functions and plain containers: no threads, no pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace folio {

class ObservedQueries {
 public:
  // width: floats of one token's queries (n_heads * head_dim).
  ObservedQueries(int64_t layers, int64_t capacity, int64_t width);
  // Keeps q (width floats) of the token at `pos` in `layer`, replacing the oldest when full.
  void add(int64_t layer, int64_t pos, const float* q);
  int64_t count(int64_t layer) const;  // at most capacity
  int64_t position(int64_t layer, int64_t i) const { return pos_[slot(layer, i)]; }
  const float* query(int64_t layer, int64_t i) const { return q_.data() + slot(layer, i) * static_cast<size_t>(width_); }
  int64_t width() const { return width_; }
  // The lowest position observed in any layer (INT64_MAX when nothing was).
  int64_t first_position() const;

 private:
  size_t slot(int64_t layer, int64_t i) const { return static_cast<size_t>(layer * capacity_ + i); }
  int64_t layers_, capacity_, width_;
  std::vector<int64_t> added_;  // [layer] -> queries ever added
  std::vector<int64_t> pos_;    // [layer][capacity]
  std::vector<float> q_;        // [layer][capacity][width]
};

// keys: [rows][head_dim] f32 of KV head `kv_head`; positions[rows]: each row's position. Query head
// g of the group reads its query at kv_head * group + g in the observed rows. Returns [rows].
std::vector<float> attention_mass(const ObservedQueries& obs, int64_t layer, int64_t kv_head, int64_t group,
                                  int64_t head_dim, const float* keys, std::span<const int64_t> positions);

// Precondition: 0 < count <= scores.size(), radius >= 0.
std::vector<int64_t> select_rows(std::span<const float> scores, int64_t count, int64_t radius);

class ReferenceCompressor {
 public:
  // keep: fraction of each segment's rows before the observed ones kept; observe: queries kept per
  // layer; head_dim and n_kv_heads as the layout's.
  ReferenceCompressor(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, double keep, int64_t observe);

  // Keeps q ([n_heads * head_dim]) of the reference token at `pos` in `layer`.
  void observe(int64_t layer, int64_t pos, const float* q, int64_t n_heads);
  bool done() const { return done_; }
  // Rows segment i keeps per KV head once compressed; -1: all of them, one per position.
  int64_t kept_rows(size_t segment) const { return segment < kept_.size() ? kept_[segment] : -1; }
  // Reference rows per layer and KV head dropped so far.
  int64_t dropped_rows() const { return dropped_; }

  struct Segment {
    int64_t first, length;
    bool live;
  };
  // Segment i's rows in `layer`, head-major f32 k and v ([H][length][D]).
  using ReadRows = std::function<void(size_t segment, size_t layer, std::vector<float>& k, std::vector<float>& v)>;
  // Replaces segment i's rows in `layer` by, per KV head h, the rows keep[h] of k and v (ReadRows' arrays).
  using KeepRows = std::function<void(size_t segment, size_t layer, const std::vector<std::vector<int64_t>>& keep,
                                      const std::vector<float>& k, const std::vector<float>& v)>;
  // Once, when generation starts: each segment without observed tokens keeps its best
  // ceil(keep * rows) rows per KV head (observed rows all stay). Returns the segments rewritten.
  // Nothing observed (a reference restored whole): nothing changes.
  std::vector<size_t> compress(std::span<const Segment> segments, const ReadRows& read, const KeepRows& write);

 private:
  int64_t n_layers_, n_kv_heads_, head_dim_, capacity_;
  double keep_;
  std::unique_ptr<ObservedQueries> observed_;
  bool done_ = false;
  std::vector<int64_t> kept_;  // [segment]
  int64_t dropped_ = 0;
};

}  // namespace folio
