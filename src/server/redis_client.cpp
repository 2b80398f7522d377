#include "server/redis_client.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <charconv>
#include <cstdarg>
#include <memory>

#include "core/error.h"

namespace folio {

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace

RedisAddress parse_redis_address(const std::string& text) {
  std::string rest = text;
  const std::string scheme = "redis://";
  if (rest.rfind(scheme, 0) == 0) rest = rest.substr(scheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const auto bad = [&](const std::string& why) { throw_invalid("Redis address '" + text + "': " + why + " (want host:port or redis://host:port)"); };
  if (rest.find("://") != std::string::npos) bad("only the redis:// scheme is supported");
  RedisAddress a;
  const size_t colon = rest.rfind(':');
  a.host = rest.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string port = rest.substr(colon + 1);
    int p = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535) bad("port '" + port + "' is not 1-65535");
    a.port = p;
  }
  if (a.host.empty()) bad("no host");
  return a;
}

RedisClient::RedisClient(RedisAddress address, std::chrono::milliseconds timeout, std::chrono::milliseconds retry_after)
    : address_(std::move(address)), timeout_(timeout), retry_after_(retry_after) {}

RedisClient::~RedisClient() {
  if (ctx_) redisFree(ctx_);
}

std::string RedisClient::describe() const { return address_.host + ":" + std::to_string(address_.port); }

bool RedisClient::up() const {
  std::lock_guard lk(mu_);
  return up_;
}

void RedisClient::fail_locked() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
  up_ = false;
  next_attempt_ = std::chrono::steady_clock::now() + retry_after_;
}

bool RedisClient::connected_locked() {
  if (ctx_) return true;
  if (std::chrono::steady_clock::now() < next_attempt_) return false;
  ctx_ = redisConnectWithTimeout(address_.host.c_str(), address_.port, to_timeval(timeout_));
  if (!ctx_ || ctx_->err || redisSetTimeout(ctx_, to_timeval(timeout_)) != REDIS_OK) {
    fail_locked();
    return false;
  }
  return true;
}

void RedisClient::ReplyDeleter::operator()(redisReply* r) const {
  if (r) freeReplyObject(r);
}

RedisClient::Reply RedisClient::command_locked(const char* format, ...) {
  if (!connected_locked()) return nullptr;
  va_list args;
  va_start(args, format);
  Reply r(static_cast<redisReply*>(redisvCommand(ctx_, format, args)));
  va_end(args);
  if (!r) fail_locked();
  return r;
}

std::optional<RedisClient::Got> RedisClient::get(std::string_view key) {
  std::lock_guard lk(mu_);
  Reply r = command_locked("GET %b", key.data(), key.size());
  if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)) return std::nullopt;  // failed, or an error reply
  up_ = true;
  Got g;
  if (r->type == REDIS_REPLY_STRING) {
    g.found = true;
    g.value.assign(r->str, r->len);
  }
  return g;
}

bool RedisClient::set(std::string_view key, std::string_view value, int64_t ttl_s) {
  std::lock_guard lk(mu_);
  Reply r = ttl_s > 0 ? command_locked("SET %b %b EX %lld", key.data(), key.size(), value.data(), value.size(), static_cast<long long>(ttl_s))
                      : command_locked("SET %b %b", key.data(), key.size(), value.data(), value.size());
  // An error reply (e.g. over maxmemory) fails the call; the connection stays.
  if (!r || r->type != REDIS_REPLY_STATUS) return false;
  up_ = true;
  return true;
}

bool RedisClient::set_if_absent(std::string_view key, std::string_view value, int64_t ttl_s, bool& failed) {
  std::lock_guard lk(mu_);
  failed = true;
  Reply r = command_locked("SET %b %b NX EX %lld", key.data(), key.size(), value.data(), value.size(), static_cast<long long>(ttl_s));
  if (!r || (r->type != REDIS_REPLY_STATUS && r->type != REDIS_REPLY_NIL)) return false;
  up_ = true;
  failed = false;
  return r->type == REDIS_REPLY_STATUS;  // OK: set; nil: the key existed
}

std::optional<bool> RedisClient::exists(std::string_view key) {
  std::lock_guard lk(mu_);
  Reply r = command_locked("EXISTS %b", key.data(), key.size());
  if (!r || r->type != REDIS_REPLY_INTEGER) return std::nullopt;
  up_ = true;
  return r->integer > 0;
}

bool RedisClient::del(std::string_view key) {
  std::lock_guard lk(mu_);
  Reply r = command_locked("DEL %b", key.data(), key.size());
  if (!r) return false;
  up_ = true;
  return r->type == REDIS_REPLY_INTEGER;
}

bool RedisClient::expire(std::string_view key, int64_t ttl_s) {
  std::lock_guard lk(mu_);
  Reply r = command_locked("EXPIRE %b %lld", key.data(), key.size(), static_cast<long long>(ttl_s));
  if (!r || r->type != REDIS_REPLY_INTEGER) return false;
  up_ = true;
  return r->integer == 1;
}

}  // namespace folio
