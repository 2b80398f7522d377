#include "server/remote_reference_tier.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/content_hash.h"
#include "core/error.h"

namespace folio {

namespace {

constexpr std::string_view kMagic = "FOLIOREF";
constexpr uint32_t kVersion = 1;

void put_u64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);  // little-endian machines only: the format is folio's own, x86-64
  out.append(b, 8);
}

void put_field(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

// Reads what put_u64 / put_field wrote, refusing to run past the end.
struct Reader {
  std::string_view in;
  bool ok = true;
  uint64_t u64() {
    if (in.size() < 8) return ok = false, 0;
    uint64_t v;
    std::memcpy(&v, in.data(), 8);
    in.remove_prefix(8);
    return v;
  }
  std::string_view field() {
    const uint64_t n = u64();
    if (!ok || n > in.size()) return ok = false, std::string_view();
    std::string_view s = in.substr(0, n);
    in.remove_prefix(n);
    return s;
  }
};

std::string checksum(std::string_view bytes) { return sha256_hex(bytes); }

}  // namespace

std::string seal_remote_value(std::string_view kind, std::string_view fingerprint, std::string_view payload) {
  std::string out(kMagic);
  put_u64(out, kVersion);
  put_field(out, kind);
  put_field(out, fingerprint);
  put_field(out, payload);
  out += checksum(out);  // 64 hex characters over everything before
  return out;
}

std::optional<std::string> open_remote_value(std::string_view kind, std::string_view fingerprint, std::string_view sealed) {
  constexpr size_t kSum = 64;
  if (sealed.size() < kMagic.size() + kSum || sealed.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  const std::string_view body = sealed.substr(0, sealed.size() - kSum);
  if (checksum(body) != sealed.substr(body.size())) return std::nullopt;
  Reader r{body.substr(kMagic.size())};
  if (r.u64() != kVersion || !r.ok) return std::nullopt;
  if (r.field() != kind || !r.ok) return std::nullopt;
  if (r.field() != fingerprint || !r.ok) return std::nullopt;
  const std::string_view payload = r.field();
  if (!r.ok || !r.in.empty()) return std::nullopt;
  return std::string(payload);
}

RemoteReferenceTier::RemoteReferenceTier(Options options)
    : options_(std::move(options)),
      client_(parse_redis_address(options_.address), std::chrono::milliseconds(options_.timeout_ms),
              std::chrono::milliseconds(static_cast<int64_t>(options_.retry_s * 1000))),
      writer_([this] { write_loop(); }),
      renewer_([this] { renew_loop(); }) {}

RemoteReferenceTier::~RemoteReferenceTier() {
  {
    std::lock_guard lk(wmu_);
    wstop_ = true;
    pending_.clear();
  }
  wcv_.notify_all();
  writer_.join();
  {
    std::lock_guard lk(claims_mu_);
    renew_stop_ = true;
  }
  claims_cv_.notify_all();
  renewer_.join();
}

void RemoteReferenceTier::renew_loop() {
  const auto period = std::chrono::milliseconds(options_.claim_lease_s * 1000 / 3);
  std::unique_lock lk(claims_mu_);
  while (!claims_cv_.wait_for(lk, period, [this] { return renew_stop_; })) {
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::string> keys;
    for (const auto& [key, since] : held_)
      if (now - since < std::chrono::seconds(kClaimTtlS)) keys.push_back(key);
    lk.unlock();
    for (const std::string& key : keys) client_.expire(key, options_.claim_lease_s);
    lk.lock();
  }
}

std::string RemoteReferenceTier::claim_key(std::string_view kind, const std::string& key) const {
  return "folio:claim:" + std::string(kind) + ":" + key;
}

bool RemoteReferenceTier::enqueue(std::string kind, std::function<void(const PutOne& put)> job) {
  {
    std::lock_guard lk(wmu_);
    if (pending_.size() >= kMaxPending) return false;
    pending_.push_back({std::move(kind), std::move(job)});
  }
  wcv_.notify_one();
  return true;
}

void RemoteReferenceTier::put_later(std::string kind, std::function<void(const PutOne& put)> job) {
  if (!enqueue(std::move(kind), std::move(job))) ++dropped_;
}

void RemoteReferenceTier::write_loop() {
  for (;;) {
    Pending p;
    {
      std::unique_lock lk(wmu_);
      wcv_.wait(lk, [&] { return wstop_ || !pending_.empty(); });
      if (wstop_) return;
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    p.job([&](const std::string& key, std::string_view payload) { put(p.kind, key, payload); });
  }
}

std::string RemoteReferenceTier::redis_key(std::string_view kind, const std::string& key) const {
  return "folio:" + std::string(kind) + ":" + key;
}

std::optional<std::string> RemoteReferenceTier::get(std::string_view kind, const std::string& key) {
  KindCounters& c = counters(kind);
  const std::optional<RedisClient::Got> got = client_.get(redis_key(kind, key));
  if (!got) {
    ++errors_;
    ++c.misses;
    return std::nullopt;
  }
  if (!got->found) {
    ++c.misses;
    return std::nullopt;
  }
  bytes_read_ += got->value.size();
  std::optional<std::string> payload = open_remote_value(kind, options_.fingerprint, got->value);
  if (!payload) {
    ++c.corrupt;
    ++c.misses;
    return std::nullopt;
  }
  ++c.hits;
  return payload;
}

void RemoteReferenceTier::put(std::string_view kind, const std::string& key, std::string_view payload) {
  const std::string sealed = seal_remote_value(kind, options_.fingerprint, payload);
  if (!client_.set(redis_key(kind, key), sealed, options_.ttl_s)) {
    ++errors_;
    return;
  }
  ++counters(kind).puts;
  bytes_written_ += sealed.size();
}

bool RemoteReferenceTier::claim(std::string_view kind, const std::string& key) {
  if (options_.claim_wait_s <= 0) return true;
  bool failed = false;
  const std::string claimed = claim_key(kind, key);
  const bool mine = client_.set_if_absent(claimed, "1", options_.claim_lease_s, failed);
  if (failed) ++errors_;
  if (mine) {
    std::lock_guard lk(claims_mu_);
    held_[claimed] = std::chrono::steady_clock::now();
  }
  return mine || failed;
}

bool RemoteReferenceTier::wait_for(std::string_view kind, const std::string& key) {
  ++waits_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.claim_wait_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    // The claim first: its holder stores the value before it drops the claim, so a claim seen gone
    // and then no value means it failed.
    const std::optional<bool> claimed = client_.exists(claim_key(kind, key));
    const std::optional<bool> value = client_.exists(redis_key(kind, key));
    if (!claimed || !value) return false;  // Redis went away: work alone
    if (*value) return true;
    if (!*claimed) return false;
  }
  return false;
}

void RemoteReferenceTier::release(std::string_view kind, const std::string& key) {
  if (options_.claim_wait_s <= 0) return;
  const std::string claimed = claim_key(kind, key);
  {
    std::lock_guard lk(claims_mu_);
    held_.erase(claimed);
  }
  client_.del(claimed);
}

void RemoteReferenceTier::release_later(std::string kind, std::string key) {
  if (!enqueue(kind, [this, kind, key](const PutOne&) { release(kind, key); })) release(kind, key);
}

RemoteTierStats RemoteReferenceTier::stats() const {
  RemoteTierStats s;
  s.pass = pass_.read(), s.kv = kv_.read();
  s.errors = errors_, s.dropped = dropped_, s.waits = waits_, s.bytes_read = bytes_read_, s.bytes_written = bytes_written_;
  s.up = client_.up();
  return s;
}

std::string model_fingerprint(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file()) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.emplace_back(p);
    }
  }
  constexpr std::streamoff kEdge = 1 << 20;
  Sha256 h;
  std::string buf;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw Error(Error::Kind::Io, "cannot read " + f.string() + " to fingerprint the model");
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    h.field(f.filename().string()).field(std::to_string(size));
    for (std::streamoff at : {std::streamoff{0}, std::max<std::streamoff>(0, size - kEdge)}) {
      buf.resize(static_cast<size_t>(std::min(kEdge, size - at)));
      in.seekg(at);
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (!in) throw Error(Error::Kind::Io, "cannot read " + f.string() + " to fingerprint the model");
      h.field(buf);
    }
  }
  return h.hex();
}

}  // namespace folio
