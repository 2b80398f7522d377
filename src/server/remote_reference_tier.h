// RemoteReferenceTier: prepared OCR references shared by replicas through Redis, behind each
// replica's local reference cache (server/reference_cache.h).
//
// What is stored: under "folio:pass:<key>" (the local cache's key: model, DPI, layout, each page's
// file SHA-256 and index), the encoder's rows of every page of a pass (server/remote_pass.h), so a
// replica that never saw the document skips rendering and encoding (seconds per page) when another
// replica did. Values expire after `ttl_s`; Redis's own maxmemory policy bounds the bytes.
//
// Every value is sealed: magic, format version, the kind, this model's fingerprint (a hash of its
// weight files, so replicas serving other weights never use each other's rows), the payload's
// length and a SHA-256 of all of it. open() refuses anything else, and a refused value is a miss
// (counted as corrupt), never a wrong answer.
//
// Degrades, never fails: Redis down, slow (past `timeout_ms`) or refusing is a miss on get and a
// dropped write on put, counted in stats(); RedisClient waits `retry_s` before trying again.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/redis_client.h"

namespace folio {

// Values the tier holds, by kind: "pass" (a pass's encoded pages, server/remote_pass.h) and "kv"
// (reference KV with its last logits, runtime/prefix_entry_codec.h).
struct RemoteKindStats {
  uint64_t hits = 0, misses = 0;  // gets that returned a usable value / found nothing usable
  uint64_t corrupt = 0;           // values refused by open() (also counted as misses)
  uint64_t puts = 0;              // values written
};

struct RemoteTierStats {
  RemoteKindStats pass, kv;
  uint64_t errors = 0;            // gets and puts that could not reach Redis
  uint64_t dropped = 0;           // put_later writes dropped because too many were waiting
  uint64_t waits = 0;             // values waited for because another replica had claimed them
  uint64_t bytes_read = 0, bytes_written = 0;
  bool up = true;
};

// The seal (exposed for tests): the bytes stored for `payload`.
std::string seal_remote_value(std::string_view kind, std::string_view fingerprint, std::string_view payload);
// The payload of a sealed value, or nullopt when anything disagrees (magic, version, kind,
// fingerprint, length, checksum).
std::optional<std::string> open_remote_value(std::string_view kind, std::string_view fingerprint, std::string_view sealed);

class RemoteReferenceTier {
 public:
  struct Options {
    std::string address;          // "host:port" or redis://host:port
    int64_t ttl_s = 86400;        // 0 = no expiry
    int64_t timeout_ms = 250;     // connect, send and receive, each
    double retry_s = 2;           // after a failure, no attempt for this long
    double claim_wait_s = 300;    // how long a replica waits for another's claimed value; 0 = no claims
    std::string fingerprint;      // the model's (model_fingerprint)
    int64_t claim_lease_s = kClaimLeaseS;  // a claim's life unless its replica renews it
  };
  // A claim expires this long after its replica last renewed it; a live replica renews the claims
  // it holds every third of it, so a replica that dies (SIGKILL) holds up the others' waits for at
  // most this long, not for claim_wait_s.
  static constexpr int64_t kClaimLeaseS = 6;
  explicit RemoteReferenceTier(Options options);
  // Drops writes still waiting and joins the writer; claims still held are no longer renewed (they
  // expire within the lease, as a dead replica's do).
  ~RemoteReferenceTier();

  // The payload stored under kind:key ("pass" or "kv"), checked; nullopt on a miss of any cause
  // (counted under its kind).
  std::optional<std::string> get(std::string_view kind, const std::string& key);
  // Stores payload under kind:key (failures counted, never thrown).
  void put(std::string_view kind, const std::string& key, std::string_view payload);
  // A job run on the tier's writer thread that stores values of one kind (a reference's parts)
  // through `put` (key, payload), one at a time, so only one of them is in memory at once
  // (serialising reference KV takes milliseconds the caller, the scheduler thread, must not spend).
  // At most kMaxPending jobs wait; more are dropped (stats().dropped).
  using PutOne = std::function<void(const std::string& key, std::string_view payload)>;
  void put_later(std::string kind, std::function<void(const PutOne& put)> job);
  static constexpr size_t kMaxPending = 8;
  // Encoding claims, so that replicas sent one document at once encode it once: claim() is true
  // for the one replica that may produce kind:key now (or when Redis cannot be asked: then every
  // replica works alone); the others wait_for() its value, which ends at the value (true), or at
  // `claim_wait_s`, or when the claim is gone without a value (its replica failed or died; false).
  // release() drops this replica's claim. A claim lives while this replica renews it (a thread of
  // the tier does, every claim_lease_s / 3) and at most kClaimTtlS in all.
  bool claim(std::string_view kind, const std::string& key);
  bool wait_for(std::string_view kind, const std::string& key);
  void release(std::string_view kind, const std::string& key);
  // release() on the writer thread after the writes queued before it (so a waiter finds the value
  // those write, not a claim gone without one); at once when the queue is full.
  void release_later(std::string kind, std::string key);
  static constexpr int64_t kClaimTtlS = 900;

  RemoteTierStats stats() const;
  std::string describe() const { return client_.describe(); }

 private:
  std::string redis_key(std::string_view kind, const std::string& key) const;

  void write_loop();
  // Renews the claims held_ names until renew_stop_.
  void renew_loop();
  std::string claim_key(std::string_view kind, const std::string& key) const;
  // Queues a job for the writer thread; false (nothing queued) when kMaxPending already wait.
  bool enqueue(std::string kind, std::function<void(const PutOne& put)> job);

  struct Pending {
    std::string kind;
    std::function<void(const PutOne& put)> job;
  };
  const Options options_;
  RedisClient client_;
  struct KindCounters {
    std::atomic<uint64_t> hits{0}, misses{0}, corrupt{0}, puts{0};
    RemoteKindStats read() const { return {hits, misses, corrupt, puts}; }
  };
  KindCounters& counters(std::string_view kind) { return kind == "kv" ? kv_ : pass_; }
  KindCounters pass_, kv_;
  std::atomic<uint64_t> errors_{0}, dropped_{0}, waits_{0}, bytes_read_{0}, bytes_written_{0};
  std::mutex wmu_;
  std::condition_variable wcv_;
  std::deque<Pending> pending_;  // guarded by wmu_
  bool wstop_ = false;           // guarded by wmu_
  std::thread writer_;
  std::mutex claims_mu_;
  std::condition_variable claims_cv_;
  // Claim keys this replica holds, and when it took each; guarded by claims_mu_.
  std::map<std::string, std::chrono::steady_clock::time_point> held_;
  bool renew_stop_ = false;      // guarded by claims_mu_
  std::thread renewer_;
};

// A fingerprint of the files a model is loaded from: each file's name, size and SHA-256 of its
// first and last MiB (weights differ there when they differ at all: headers and tensor data).
// A directory contributes its regular files, sorted. Throws Error(Io) if a file cannot be read.
std::string model_fingerprint(const std::vector<std::string>& paths);

}  // namespace folio
