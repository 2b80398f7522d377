#include "cmdline/kv_options.h"

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "kv/kv_dtype.h"

namespace folio::cli {

KVTypes KVOptions::types() const {
  KVTypes t = parse_kv_types(all, k, v, window);
  t.rotated = rotate;
  return t;
}

void KVOptions::apply(OcrOptions& opt) const {
  opt.kv_types = types();
  opt.kv_offload_dir = offload_dir;
  opt.kv_hot_bytes = hot_bytes;
  opt.kv_cold_bytes = cold_bytes;
}

void add_kv_options(CLI::App& app, KVOptions& o, bool tiers) {
  app.add_option("--kv-dtype", o.all, "KV storage: f32, f16, bf16, q8 or q4 (keys and values, reference and window)")
      ->capture_default_str();
  app.add_option("--kv-dtype-k", o.k, "Keys only: f32, f16, bf16, q8 or q4 (overrides --kv-dtype)");
  app.add_option("--kv-dtype-v", o.v, "Values only: f32, f16, bf16, q8 or q4 (overrides --kv-dtype)");
  app.add_option("--kv-dtype-window", o.window,
                 "Generated tokens of the window, keys and values (overrides the above for them)");
  app.add_flag("--kv-rotate", o.rotate,
               "Store keys and values rotated per head by a Walsh-Hadamard transform (queries and outputs rotated to match): "
               "spreads outlier channels before quantisation; the same attention in exact arithmetic");
  if (!tiers) return;
  app.add_option("--kv-offload", o.offload_dir,
                 "Tiered reference: complete pages leave the KV pool for RAM (--kv-hot-bytes) then a mapped file in this directory");
  app.add_option("--kv-hot-bytes", o.hot_bytes, "Tiered reference: RAM tier budget (0 = unlimited)")->capture_default_str();
  app.add_option("--kv-cold-bytes", o.cold_bytes, "Tiered reference: file tier budget")->capture_default_str();
}

KVPolicy PolicyOptions::policy() const {
  KVPolicy p = KVPolicy::parse(name, window);
  if (top_k < 1) throw_invalid("--sparse-top-k must be at least 1, got " + std::to_string(top_k));
  if (unit_tokens < 1) throw_invalid("--sparse-unit must be at least 1, got " + std::to_string(unit_tokens));
  if (focus_pages < 0) throw_invalid("--sparse-focus-pages must not be negative, got " + std::to_string(focus_pages));
  if (neighbour_pages < -1) throw_invalid("--sparse-neighbours must be -1 (any page) or more, got " + std::to_string(neighbour_pages));
  if (resident_pages < 1) throw_invalid("--resident-pages must be at least 1, got " + std::to_string(resident_pages));
  p.top_k = top_k;
  p.unit_tokens = unit_tokens;
  p.focus_pages = focus_pages;
  p.neighbour_pages = neighbour_pages;
  p.resident_pages = resident_pages;
  p.keep = keep;
  p.observe = observe;
  p.rules().validate(p);
  return p;
}

void add_policy_options(CLI::App& app, PolicyOptions& o) {
  app.add_option("--policy", o.name, "KV policy: rswa (reference sliding window), full, sparse or rolling")
      ->capture_default_str();
  app.add_option("--window", o.window, "Decode window W of rswa, sparse and rolling")->capture_default_str();
  app.add_option("--sparse-top-k", o.top_k, "sparse: reference units each layer and KV head reads")->capture_default_str();
  app.add_option("--sparse-unit", o.unit_tokens, "sparse: most tokens per reference unit")
      ->capture_default_str();
  app.add_option("--sparse-focus-pages", o.focus_pages,
                 "sparse: pages read whole from the one the model is reading (needs a model that writes page separators; 0 = none)")
      ->capture_default_str();
  app.add_option("--sparse-neighbours", o.neighbour_pages,
                 "sparse: top-k units only from the pages within this many of the one being read (needs page separators; -1 = any page)")
      ->capture_default_str();
  app.add_option("--resident-pages", o.resident_pages, "rolling: pages kept in the reference at once")
      ->capture_default_str();
  app.add_option("--kv-keep", o.keep,
                 "rswa, sparse: fraction of each page's reference rows kept per KV head once the reference is prefilled "
                 "(SnapKV: the rows the prompt's tail attends to most; the rest is dropped and its bytes freed)")
      ->capture_default_str();
  app.add_option("--kv-observe", o.observe, "--kv-keep: reference tokens at the end of the prompt whose attention scores the rows")
      ->capture_default_str();
}

}  // namespace folio::cli
