// RedisClient: GET and SET with expiry against one Redis server, through hiredis (Debian's
// libhiredis), for the shared reference tier of replicas (server/remote_reference_tier.h).
//
// Promises: every call returns within about `timeout` (connect, send and receive each bounded);
// a server that is down, slow or answers with an error makes the call fail (nullopt from get,
// false from set) and never throws. After a failure no connection is attempted for `retry_after`,
// so a dead server costs one timeout per retry_after, not one per request. get() of a missing key
// is a successful call that found nothing (found = false), not a failure.
// Thread-safe: one connection, calls serialised by a mutex (values are page references, megabytes
// each; loopback or LAN round trips are short next to encoding a page).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

struct redisContext;
struct redisReply;

namespace folio {

struct RedisAddress {
  std::string host;
  int port = 6379;
};

// "host:port", "redis://host:port" or "host" (port 6379). Throws Error(InvalidInput) naming the
// text for anything else (an empty host, a port outside 1-65535, another scheme).
RedisAddress parse_redis_address(const std::string& text);

class RedisClient {
 public:
  struct Got {
    bool found = false;
    std::string value;
  };

  RedisClient(RedisAddress address, std::chrono::milliseconds timeout, std::chrono::milliseconds retry_after);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // nullopt: the server could not be asked (down, slow, error reply).
  std::optional<Got> get(std::string_view key);
  // SET key value EX ttl_s (ttl_s > 0) or without expiry; false when it failed.
  bool set(std::string_view key, std::string_view value, int64_t ttl_s);
  // SET key value NX EX ttl_s: true when this call created the key; false when it existed or the
  // call failed (`failed` tells which).
  bool set_if_absent(std::string_view key, std::string_view value, int64_t ttl_s, bool& failed);
  // EXISTS key; nullopt when the call failed.
  std::optional<bool> exists(std::string_view key);
  // DEL key; false when the call failed.
  bool del(std::string_view key);
  // EXPIRE key ttl_s: true when the key exists and now expires in ttl_s; false when it is gone or
  // the call failed.
  bool expire(std::string_view key, int64_t ttl_s);
  // Whether the last call reached the server (true before any call).
  bool up() const;
  std::string describe() const;  // "host:port"

 private:
  struct ReplyDeleter {
    void operator()(redisReply* r) const;
  };
  using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

  bool connected_locked();  // connects if needed and allowed; false when not connected
  void fail_locked();       // drops the connection and starts the retry pause
  // One command (redisCommand's format): its reply, or null when not connected or the I/O failed
  // (timeout, reset, closed: the connection is then dropped). An error reply is a reply.
  Reply command_locked(const char* format, ...);

  const RedisAddress address_;
  const std::chrono::milliseconds timeout_, retry_after_;
  mutable std::mutex mu_;
  redisContext* ctx_ = nullptr;
  bool up_ = true;
  std::chrono::steady_clock::time_point next_attempt_{};
};

}  // namespace folio
