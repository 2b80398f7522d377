#include "server/metrics.h"

#include <charconv>
#include <cstdio>

#include "core/memory_stats.h"

namespace folio {

std::string shortest_number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void gauge(std::string& out, const char* name, const char* help, double v) {
  header(out, name, "gauge", help);
  out += std::string(name) + " " + shortest_number(v) + "\n";
}

// Prepared references by tier (this replica's cache, then the one shared through Redis), and the
// remote tier itself: reference KV it gave, values refused, calls that failed, bytes.
void render_remote_tier(std::string& out, const ReferenceCacheStats& local, const RemoteTierStats& r) {
  header(out, "folio_reference_tier_hits_total", "counter", "OCR passes whose prepared reference was found, by tier");
  out += "folio_reference_tier_hits_total{tier=\"local\"} " + std::to_string(local.hits) + "\n";
  out += "folio_reference_tier_hits_total{tier=\"remote\"} " + std::to_string(r.pass.hits) + "\n";
  header(out, "folio_reference_tier_misses_total", "counter", "OCR passes not found in a tier (remote: asked after a local miss)");
  out += "folio_reference_tier_misses_total{tier=\"local\"} " + std::to_string(local.misses) + "\n";
  out += "folio_reference_tier_misses_total{tier=\"remote\"} " + std::to_string(r.pass.misses) + "\n";
  // Per kind (pass: encoded pages; kv: reference KV), one family at a time.
  const std::pair<const char*, RemoteKindStats> kinds[] = {{"pass", r.pass}, {"kv", r.kv}};
  auto per_kind = [&](const char* name, const char* help, uint64_t RemoteKindStats::*field) {
    header(out, name, "counter", help);
    for (const auto& [kind, k] : kinds) out += std::string(name) + "{kind=\"" + kind + "\"} " + std::to_string(k.*field) + "\n";
  };
  per_kind("folio_remote_tier_hits_total", "remote values used, by kind (pass: encoded pages; kv: reference KV)", &RemoteKindStats::hits);
  per_kind("folio_remote_tier_misses_total", "remote values asked for and not usable, by kind", &RemoteKindStats::misses);
  per_kind("folio_remote_tier_corrupt_total", "remote values refused by their checks (length, checksum, model) and treated as misses",
           &RemoteKindStats::corrupt);
  per_kind("folio_remote_tier_puts_total", "values written to the remote tier, by kind", &RemoteKindStats::puts);
  header(out, "folio_remote_tier_errors_total", "counter", "remote reads and writes that could not reach Redis (down, slow, refused)");
  out += "folio_remote_tier_errors_total " + std::to_string(r.errors) + "\n";
  header(out, "folio_remote_tier_dropped_total", "counter", "remote writes dropped because too many were waiting");
  out += "folio_remote_tier_dropped_total " + std::to_string(r.dropped) + "\n";
  header(out, "folio_remote_tier_waits_total", "counter", "passes waited for because another replica was encoding them");
  out += "folio_remote_tier_waits_total " + std::to_string(r.waits) + "\n";
  header(out, "folio_remote_tier_bytes_total", "counter", "bytes moved to and from the remote tier");
  out += "folio_remote_tier_bytes_total{direction=\"read\"} " + std::to_string(r.bytes_read) + "\n";
  out += "folio_remote_tier_bytes_total{direction=\"written\"} " + std::to_string(r.bytes_written) + "\n";
  gauge(out, "folio_remote_tier_up", "1 when the last call to Redis succeeded", r.up ? 1 : 0);
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  counts_[i]++;
  sum_ += v;
  count_++;
}

void Histogram::render(const std::string& name, std::string& out) const {
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{le=\"" + shortest_number(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + shortest_number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

ServerMetrics::ServerMetrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      tpot_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}),
      queue_({0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60}) {}

void ServerMetrics::count_request(const std::string& path, int status) {
  std::lock_guard lk(mu_);
  requests_[{path, status}]++;
}

void ServerMetrics::count_rejection(const std::string& reason) {
  std::lock_guard lk(mu_);
  rejections_[reason]++;
}

void ServerMetrics::count_cancelled_by_client() {
  std::lock_guard lk(mu_);
  cancelled_by_client_++;
}

void ServerMetrics::record_generation(const SequenceResult& r) {
  std::lock_guard lk(mu_);
  finished_[std::string(r.stop_reason.name())]++;
  prompt_tokens_ += static_cast<uint64_t>(r.prompt_tokens);
  completion_tokens_ += r.tokens.size();
  queue_.observe(r.queue_ms / 1000.0);
  if (!r.tokens.empty()) ttft_.observe(r.ttft_ms / 1000.0);
  if (r.tokens.size() >= 2) tpot_.observe(r.decode_ms / 1000.0 / static_cast<double>(r.tokens.size() - 1));
}

std::string ServerMetrics::render(const SchedulerStats* s, bool ready, const ReferenceCacheStats* cache,
                                  const ConnectionStats* connections, const RemoteTierStats* remote) const {
  std::string out;
  std::lock_guard lk(mu_);
  header(out, "folio_http_requests_total", "counter", "HTTP requests answered, by path and status");
  for (const auto& [k, v] : requests_)
    out += "folio_http_requests_total{path=\"" + k.first + "\",status=\"" + std::to_string(k.second) + "\"} " + std::to_string(v) + "\n";
  header(out, "folio_rejected_requests_total", "counter", "requests refused before generation, by reason");
  for (const auto& [k, v] : rejections_) out += "folio_rejected_requests_total{reason=\"" + k + "\"} " + std::to_string(v) + "\n";
  header(out, "folio_generations_total", "counter", "generations finished, by stop reason");
  for (const auto& [k, v] : finished_) out += "folio_generations_total{reason=\"" + k + "\"} " + std::to_string(v) + "\n";
  header(out, "folio_client_disconnects_total", "counter", "requests cancelled because their client went away");
  out += "folio_client_disconnects_total " + std::to_string(cancelled_by_client_) + "\n";
  header(out, "folio_prompt_tokens_total", "counter", "prompt tokens of finished generations");
  out += "folio_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  header(out, "folio_generation_tokens_total", "counter", "tokens generated by finished generations");
  out += "folio_generation_tokens_total " + std::to_string(completion_tokens_) + "\n";
  header(out, "folio_time_to_first_token_seconds", "histogram", "request arrival to first generated token");
  ttft_.render("folio_time_to_first_token_seconds", out);
  header(out, "folio_time_per_output_token_seconds", "histogram", "mean time between generated tokens of a request");
  tpot_.render("folio_time_per_output_token_seconds", out);
  header(out, "folio_queue_time_seconds", "histogram", "request arrival to admission into the running batch");
  queue_.render("folio_queue_time_seconds", out);
  gauge(out, "folio_ready", "1 when the model is loaded and requests are accepted", ready ? 1 : 0);
  gauge(out, "folio_process_rss_bytes", "resident set size of the server process now", static_cast<double>(current_rss_bytes()));
  gauge(out, "folio_process_rss_peak_bytes", "largest resident set size of the server process", static_cast<double>(peak_rss_bytes()));
  if (connections) {
    gauge(out, "folio_http_connections", "open client connections", static_cast<double>(connections->open));
    header(out, "folio_http_connections_refused_total", "counter", "connections refused over server.max_connections(_per_client)");
    out += "folio_http_connections_refused_total " + std::to_string(connections->refused) + "\n";
  }
  if (cache) {
    header(out, "folio_reference_cache_hits_total", "counter", "OCR passes whose prepared reference was reused");
    out += "folio_reference_cache_hits_total " + std::to_string(cache->hits) + "\n";
    header(out, "folio_reference_cache_misses_total", "counter", "OCR passes not in this replica's cache (encoded here, or found in the remote tier)");
    out += "folio_reference_cache_misses_total " + std::to_string(cache->misses) + "\n";
    header(out, "folio_reference_cache_evictions_total", "counter", "prepared references dropped to stay within the budget");
    out += "folio_reference_cache_evictions_total " + std::to_string(cache->evictions) + "\n";
    gauge(out, "folio_reference_cache_bytes", "bytes of prepared references kept", static_cast<double>(cache->bytes));
    gauge(out, "folio_reference_cache_entries", "prepared references kept", static_cast<double>(cache->entries));
    gauge(out, "folio_reference_cache_capacity_bytes", "inference.reference_cache_bytes", static_cast<double>(cache->capacity));
  }
  if (cache && remote) render_remote_tier(out, *cache, *remote);
  if (s) {
    gauge(out, "folio_running_sequences", "sequences in the running batch", static_cast<double>(s->running));
    gauge(out, "folio_queued_sequences", "requests waiting for admission", static_cast<double>(s->queued));
    header(out, "folio_kv_bytes", "gauge", "KV cache bytes in use, from the pool's counters, by tier");
    out += "folio_kv_bytes{tier=\"ram\"} " + std::to_string(s->kv_bytes_in_use) + "\n";
    // Reference KV kept after its requests ended, for reuse (outside the pool and its budget).
    out += "folio_kv_bytes{tier=\"prefix_cache\"} " + std::to_string(s->prefix_cache.bytes) + "\n";
    // The tiered reference (inference.kv_offload_dir): each tier of the store by its name.
    if (s->reference_store)
      for (const TierStats& t : s->reference_store->tiers) out += "folio_kv_bytes{tier=\"offload_" + t.name + "\"} " + std::to_string(t.bytes) + "\n";
    gauge(out, "folio_kv_capacity_bytes", "KV pool capacity (0 = unlimited)", static_cast<double>(s->kv_bytes_capacity));
    gauge(out, "folio_kv_peak_bytes", "most KV bytes in use at once", static_cast<double>(s->kv_bytes_peak));
    gauge(out, "folio_kv_reserved_bytes", "KV bytes running sequences may still claim", static_cast<double>(s->kv_bytes_reserved));
    gauge(out, "folio_reference_tokens", "reference tokens cached by running sequences", static_cast<double>(s->reference_tokens));
    gauge(out, "folio_window_tokens", "generated tokens cached by running sequences", static_cast<double>(s->window_tokens));
    header(out, "folio_scheduler_steps_total", "counter", "decoder forward passes");
    out += "folio_scheduler_steps_total " + std::to_string(s->steps) + "\n";
    header(out, "folio_scheduler_sequence_steps_total", "counter", "sequences summed over forward passes (/ steps = mean batch)");
    out += "folio_scheduler_sequence_steps_total " + std::to_string(s->sequence_steps) + "\n";
    const PrefixKVStats& p = s->prefix_cache;
    header(out, "folio_prefix_cache_hits_total", "counter", "sequences that started from reused reference KV");
    out += "folio_prefix_cache_hits_total " + std::to_string(p.hits) + "\n";
    header(out, "folio_prefix_cache_misses_total", "counter", "sequences with a reusable reference that found none kept");
    out += "folio_prefix_cache_misses_total " + std::to_string(p.misses) + "\n";
    header(out, "folio_prefix_cache_evictions_total", "counter", "reference KV copies dropped to stay within the budget");
    out += "folio_prefix_cache_evictions_total " + std::to_string(p.evictions) + "\n";
    header(out, "folio_prefix_cache_reused_tokens_total", "counter", "reference tokens not prefilled thanks to reused KV");
    out += "folio_prefix_cache_reused_tokens_total " + std::to_string(p.tokens_reused) + "\n";
    header(out, "folio_prefix_cache_offers_total", "counter", "reference KV offered by other replicas (remote tier): kept, or refused (another layout, already held)");
    out += "folio_prefix_cache_offers_total{outcome=\"kept\"} " + std::to_string(p.offers_kept) + "\n";
    out += "folio_prefix_cache_offers_total{outcome=\"refused\"} " + std::to_string(p.offers_refused) + "\n";
    gauge(out, "folio_prefix_cache_entries", "reference KV copies kept", static_cast<double>(p.entries));
    gauge(out, "folio_prefix_cache_capacity_bytes", "inference.prefix_cache_bytes", static_cast<double>(p.capacity));
    gauge(out, "folio_batch_size_max", "most sequences in one forward pass", static_cast<double>(s->max_batch_seen));
    if (s->reference_store) {
      header(out, "folio_kv_offload_acquires_total", "counter", "offloaded reference blocks pinned for reading");
      out += "folio_kv_offload_acquires_total " + std::to_string(s->reference_store->acquires) + "\n";
      header(out, "folio_kv_offload_misses_total", "counter", "of those, not served from RAM (read from the file tier)");
      out += "folio_kv_offload_misses_total " + std::to_string(s->reference_store->misses) + "\n";
    }
  }
  return out;
}

}  // namespace folio
