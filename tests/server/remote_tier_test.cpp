// The reference tier replicas share through Redis: sealed values refuse every kind of damage, a
// stored pass fills only the pass it describes, and replicas on loopback against a real
// redis-server (Debian's, started here on a free port) reuse each other's encoded pages with the
// same answers, go on answering while Redis is down, pick it up again when it is back, and treat
// a corrupted value as a miss.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/content_hash.h"
#include "core/error.h"
#include "runtime/model_factory.h"
#include "runtime/sequence_request.h"
#include "server/remote_pass.h"
#include "server/remote_reference_tier.h"
#include "server/service.h"
#include "http_test_util.h"
#include "test_base64.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

TEST(RemoteValue, SealedValueOpensOnlyUnchanged) {
  const std::string payload(3000, 'x');
  const std::string sealed = seal_remote_value("pass", "model-a", payload);
  ASSERT_EQ(open_remote_value("pass", "model-a", sealed), payload);
  EXPECT_FALSE(open_remote_value("pass", "model-b", sealed)) << "another model's value";
  EXPECT_FALSE(open_remote_value("kv", "model-a", sealed)) << "another kind";
  for (size_t cut : {size_t{0}, size_t{5}, sealed.size() / 2, sealed.size() - 1})
    EXPECT_FALSE(open_remote_value("pass", "model-a", sealed.substr(0, cut))) << "truncated to " << cut;
  EXPECT_FALSE(open_remote_value("pass", "model-a", sealed + "y")) << "one byte more";
  // One flipped bit anywhere: header, fields, payload or checksum.
  for (size_t at = 0; at < sealed.size(); at += 97) {
    std::string bad = sealed;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    EXPECT_FALSE(open_remote_value("pass", "model-a", bad)) << "bit flipped at " << at;
  }
  EXPECT_EQ(open_remote_value("pass", "m", seal_remote_value("pass", "m", "")), std::string());
}

TEST(RemoteValue, RedisAddresses) {
  EXPECT_EQ(parse_redis_address("127.0.0.1:6380").port, 6380);
  EXPECT_EQ(parse_redis_address("redis://cache.internal:7000/").host, "cache.internal");
  EXPECT_EQ(parse_redis_address("redis-0").port, 6379);
  for (const char* bad : {"", ":6379", "host:0", "host:65536", "host:port", "http://host:6379"}) {
    try {
      parse_redis_address(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
      EXPECT_NE(std::string(e.what()).find("Redis address"), std::string::npos) << e.what();
    }
  }
}

// A pass of a token part, two pages of rows (hidden 4) and a tail, as a model prepares it.
OcrPass two_page_pass(float base) {
  OcrPass p;
  p.reference.push_back(ReferencePart::tokens({1, 2}));
  for (int page = 0; page < 2; ++page) {
    std::vector<float> rows(3 * 4);
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = base + static_cast<float>(page * 100 + static_cast<int>(i));
    p.reference.push_back(ReferencePart::lazy({9, 9, 9}, [rows] { return rows; }));
    p.reference.back().unit_starts = {1};
  }
  p.reference.push_back(ReferencePart::tokens({3}));
  return p;
}

TEST(RemotePass, RowsFillOnlyThePassTheyDescribe) {
  const std::string payload = encode_pass_rows(two_page_pass(0.5f), 4);
  OcrPass fresh = two_page_pass(-7.f);  // same layout, other rows: the stored ones must win
  ASSERT_TRUE(fill_pass_rows(fresh, payload, 4));
  OcrPass local = two_page_pass(0.5f);
  for (size_t i = 0; i < local.reference.size(); ++i) {
    produce_keyed(local.reference[i], 4);
    const ReferencePart &a = fresh.reference[i], &b = local.reference[i];
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.key, b.key) << "keyed as produce_keyed keys it";
    EXPECT_EQ(a.unit_starts, b.unit_starts);
    if (b.is_embedding()) {
      EXPECT_EQ(a.embeddings(), b.embeddings());
    }
  }
  // Anything else leaves the pass as it was: other ids, another width, a cut payload, a pass with
  // one page fewer.
  OcrPass other_ids = two_page_pass(0.f);
  other_ids.reference[1].ids = {9, 9, 8};
  EXPECT_FALSE(fill_pass_rows(other_ids, payload, 4));
  EXPECT_TRUE(other_ids.reference[1].key.empty());
  OcrPass same = two_page_pass(0.f);
  EXPECT_FALSE(fill_pass_rows(same, payload, 3));
  EXPECT_FALSE(fill_pass_rows(same, payload.substr(0, payload.size() - 1), 4));
  EXPECT_FALSE(fill_pass_rows(same, payload + "x", 4));
  OcrPass shorter = two_page_pass(0.f);
  shorter.reference.erase(shorter.reference.begin() + 2);
  EXPECT_FALSE(fill_pass_rows(shorter, payload, 4));
  for (const ReferencePart& part : same.reference) EXPECT_TRUE(part.key.empty());
  // Passes holding state beside their rows do not go to the remote tier.
  OcrPass writer = two_page_pass(0.f);
  EXPECT_TRUE(remote_pass_eligible(writer));
  writer.write_token = [](int32_t) { return std::string(); };
  EXPECT_FALSE(remote_pass_eligible(writer));
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// Debian's redis-server on a loopback port, in memory only, stopped with the object.
class RedisServer {
 public:
  explicit RedisServer(int port) : port_(port) { start(); }
  ~RedisServer() { stop(); }
  void start() {
    pid_ = fork();
    if (pid_ == 0) {
      const std::string p = std::to_string(port_);
      execlp("redis-server", "redis-server", "--port", p.c_str(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--loglevel", "warning", static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      if (ping()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "redis-server did not start on port " << port_ << " (is Debian's redis-server installed?)";
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Runs one command; the reply's text (status, string or error), "" for nil.
  std::string command(const std::vector<std::string>& args) const {
    redisContext* c = redisConnect("127.0.0.1", port_);
    std::string out = "(no connection)";
    if (c && !c->err) {
      std::vector<const char*> argv;
      std::vector<size_t> lens;
      for (const std::string& a : args) argv.push_back(a.data()), lens.push_back(a.size());
      auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data()));
      out = r && r->str ? std::string(r->str, r->len) : std::string();
      if (r && r->type == REDIS_REPLY_INTEGER) out = std::to_string(r->integer);
      if (r && r->type == REDIS_REPLY_ARRAY) {
        out.clear();
        for (size_t i = 0; i < r->elements; ++i) out += std::string(r->element[i]->str, r->element[i]->len) + "\n";
      }
      if (r) freeReplyObject(r);
    }
    if (c) redisFree(c);
    return out;
  }
  bool ping() const { return command({"PING"}) == "PONG"; }
  int port() const { return port_; }

 private:
  int port_;
  pid_t pid_ = -1;
};

TEST(RedisClientTest, DeadServerCostsOneTimeoutPerRetryPause) {
  const int port = free_port();  // nothing listens there
  RedisClient c({"127.0.0.1", port}, std::chrono::milliseconds(200), std::chrono::milliseconds(60000));
  EXPECT_TRUE(c.up());
  EXPECT_FALSE(c.get("k"));
  EXPECT_FALSE(c.up());
  const auto t0 = Clock::now();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(c.set("k", "v", 10));
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(100)) << "no attempt during the retry pause";
}

TEST(RedisClientTest, GetSetExpiryAndRecovery) {
  const int port = free_port();
  RedisServer redis(port);
  RedisClient c({"127.0.0.1", port}, std::chrono::milliseconds(500), std::chrono::milliseconds(0));
  std::optional<RedisClient::Got> g = c.get("missing");
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->found);
  const std::string big(3 << 20, '\x01');
  ASSERT_TRUE(c.set("big", big, 100));
  g = c.get("big");
  ASSERT_TRUE(g && g->found);
  EXPECT_EQ(g->value, big);
  const int ttl = std::stoi(redis.command({"TTL", "big"}));
  EXPECT_TRUE(ttl > 0 && ttl <= 100) << ttl;
  ASSERT_TRUE(c.set("forever", "v", 0));
  EXPECT_EQ(redis.command({"TTL", "forever"}), "-1");
  redis.stop();
  EXPECT_FALSE(c.get("big"));
  EXPECT_FALSE(c.up());
  redis.start();
  g = c.get("big");  // reconnects (retry pause 0); the restarted server is empty
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->found);
  EXPECT_TRUE(c.up());
}

// Replicas of an Unlimited-OCR-shaped random-weight model (its pages are encoded lazily, as the
// real model's are) sharing one Redis.
class RemoteTier : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("folio_remote_tier_test_" + std::to_string(getpid())));
    write_random_checkpoint(preset_config("unlimited-ocr", "tiny"), preset_vision_config("unlimited-ocr", "tiny"),
                            (*dir_ / "uocr").string(), 31, DType::F32);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static ServerConfig config(int redis_port, bool prefix_cache = false) {
    ServerConfig c;
    c.model.path = (*dir_ / "uocr").string();
    c.server.port = 0;
    c.server.access_log = "off";
    c.inference.kv_dtype = "f32";
    c.inference.threads = 1;
    if (!prefix_cache) c.inference.prefix_cache_bytes = 0;  // every pass prefills: the pages' tier alone
    if (redis_port > 0) c.remote.redis = "127.0.0.1:" + std::to_string(redis_port);
    c.remote.timeout_ms = 200;
    c.remote.retry_s = 0;
    return c;
  }
  static std::unique_ptr<Service> serve(const ServerConfig& c) { return serve_loaded(c); }
  static json ocr(const Service& s, const std::string& pdf, const std::string& pages = "") {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(120, 0);
    std::ifstream f(pdf, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), {});
    json body = {{"file", test_base64(bytes)}, {"filename", "doc.pdf"}, {"max_tokens", 12}};
    if (!pages.empty()) body["pages"] = pages;
    auto r = c.Post("/v1/ocr", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body, nullptr, false);
  }
  static double get(const Service& s, const std::string& series) {
    httplib::Client c("127.0.0.1", s.port());
    auto r = c.Get("/metrics");
    return r ? metric(r->body, series) : -1;
  }
  static std::string pdf(int pages) {
    return std::string(FOLIO_SOURCE_DIR) + (pages == 1 ? "/examples/sample-1page.pdf" : "/examples/sample-3page.pdf");
  }
  static fs::path* dir_;
};
fs::path* RemoteTier::dir_ = nullptr;

TEST_F(RemoteTier, ReplicasShareEncodedPagesWithTheSameAnswers) {
  const json alone = ocr(*serve(config(0)), pdf(3));  // one process, no remote tier
  ASSERT_TRUE(alone.contains("markdown"));
  const int port = free_port();
  RedisServer redis(port);
  auto a = serve(config(port));
  auto b = serve(config(port));
  const json from_a = ocr(*a, pdf(3));
  EXPECT_EQ(get(*a, "folio_reference_tier_misses_total{tier=\"remote\"}"), 1);
  EXPECT_EQ(get(*a, "folio_remote_tier_puts_total{kind=\"pass\"}"), 1);
  EXPECT_GT(get(*a, "folio_remote_tier_bytes_total{direction=\"written\"}"), 0);
  const json from_b = ocr(*b, pdf(3));
  EXPECT_EQ(get(*b, "folio_reference_tier_hits_total{tier=\"remote\"}"), 1) << "B encoded nothing";
  EXPECT_EQ(get(*b, "folio_remote_tier_puts_total{kind=\"pass\"}"), 0);
  EXPECT_EQ(get(*b, "folio_remote_tier_bytes_total{direction=\"read\"}"), get(*a, "folio_remote_tier_bytes_total{direction=\"written\"}"));
  EXPECT_EQ(get(*b, "folio_remote_tier_up"), 1);
  for (const json* j : {&from_a, &from_b}) {
    EXPECT_EQ((*j)["markdown"], alone["markdown"]);
    EXPECT_EQ((*j)["usage"]["completion_tokens"], alone["usage"]["completion_tokens"]);
  }
  // The pages' rows are reported as cached: they were not computed here.
  EXPECT_EQ(from_a["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_GT(from_b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0);
}

TEST_F(RemoteTier, RedisDownIsAMissNotAnErrorAndItsReturnIsPickedUp) {
  const json alone = ocr(*serve(config(0)), pdf(1));
  const int port = free_port();
  RedisServer redis(port);
  auto a = serve(config(port));
  redis.stop();
  const json down = ocr(*a, pdf(1));  // encoded here; the put fails quietly
  EXPECT_EQ(down["markdown"], alone["markdown"]);
  EXPECT_GE(get(*a, "folio_remote_tier_errors_total"), 2) << "the get and the put";
  EXPECT_EQ(get(*a, "folio_remote_tier_up"), 0);
  redis.start();
  auto b = serve(config(port));
  const json first = ocr(*b, pdf(1));  // Redis is back but empty: B encodes and stores
  EXPECT_EQ(get(*b, "folio_remote_tier_puts_total{kind=\"pass\"}"), 1);
  auto c = serve(config(port));
  const json second = ocr(*c, pdf(1));
  EXPECT_EQ(get(*c, "folio_reference_tier_hits_total{tier=\"remote\"}"), 1);
  EXPECT_EQ(get(*c, "folio_remote_tier_up"), 1);
  EXPECT_EQ(first["markdown"], alone["markdown"]);
  EXPECT_EQ(second["markdown"], alone["markdown"]);
}

TEST_F(RemoteTier, CorruptedValueIsCountedAndTreatedAsAMiss) {
  const json alone = ocr(*serve(config(0)), pdf(1));
  const int port = free_port();
  RedisServer redis(port);
  ocr(*serve(config(port)), pdf(1));
  const std::string keys = redis.command({"KEYS", "folio:pass:*"});
  ASSERT_EQ(std::count(keys.begin(), keys.end(), '\n'), 1) << keys;
  const std::string key = keys.substr(0, keys.size() - 1);
  std::string value = redis.command({"GET", key});
  ASSERT_GT(value.size(), 1000u);
  value[value.size() / 2] = static_cast<char>(value[value.size() / 2] ^ 1);  // one bit of one row
  ASSERT_EQ(redis.command({"SET", key, value}), "OK");
  auto b = serve(config(port));
  const json got = ocr(*b, pdf(1));
  EXPECT_EQ(got["markdown"], alone["markdown"]);
  EXPECT_EQ(get(*b, "folio_remote_tier_corrupt_total{kind=\"pass\"}"), 1);
  EXPECT_EQ(get(*b, "folio_reference_tier_hits_total{tier=\"remote\"}"), 0);
  EXPECT_EQ(get(*b, "folio_remote_tier_puts_total{kind=\"pass\"}"), 1) << "encoded again and the damaged value replaced";
  auto c = serve(config(port));
  ocr(*c, pdf(1));
  EXPECT_EQ(get(*c, "folio_reference_tier_hits_total{tier=\"remote\"}"), 1);
}

// The same document sent to two replicas at once: one claims it and encodes, the other waits for
// its value instead of encoding it too.
TEST_F(RemoteTier, SimultaneousRequestsEncodeTheDocumentOnce) {
  const json alone = ocr(*serve(config(0)), pdf(3));
  const int port = free_port();
  RedisServer redis(port);
  auto a = serve(config(port));
  auto b = serve(config(port));
  json from_a, from_b;
  std::thread ta([&] { from_a = ocr(*a, pdf(3)); });
  std::thread tb([&] { from_b = ocr(*b, pdf(3)); });
  ta.join();
  tb.join();
  EXPECT_EQ(get(*a, "folio_remote_tier_puts_total{kind=\"pass\"}") + get(*b, "folio_remote_tier_puts_total{kind=\"pass\"}"), 1)
      << "encoded once in all";
  EXPECT_EQ(get(*a, "folio_remote_tier_hits_total{kind=\"pass\"}") + get(*b, "folio_remote_tier_hits_total{kind=\"pass\"}"), 1);
  // 1 when the requests overlapped, 0 when one ended before the other asked (both encode once).
  EXPECT_LE(get(*a, "folio_remote_tier_waits_total") + get(*b, "folio_remote_tier_waits_total"), 1);
  EXPECT_EQ(from_a["markdown"], alone["markdown"]);
  EXPECT_EQ(from_b["markdown"], alone["markdown"]);
  EXPECT_EQ(redis.command({"KEYS", "folio:claim:*"}), "") << "claims released";
}

// With prefix caches too, the reference KV of a document sent to two replicas at once is prefilled
// once in all: one replica claims it and hands it on when its prefill ends (5 parts), the other
// waits for it (or, had the first already ended, finds it) and prefills nothing.
TEST_F(RemoteTier, SimultaneousRequestsPrefillTheDocumentOnce) {
  const json alone = ocr(*serve(config(0, true)), pdf(3));
  const int port = free_port();
  RedisServer redis(port);
  auto a = serve(config(port, true));
  auto b = serve(config(port, true));
  json from_a, from_b;
  std::thread ta([&] { from_a = ocr(*a, pdf(3)); });
  std::thread tb([&] { from_b = ocr(*b, pdf(3)); });
  ta.join();
  tb.join();
  const std::string puts = "folio_remote_tier_puts_total{kind=\"kv\"}", hits = "folio_remote_tier_hits_total{kind=\"kv\"}";
  for (int i = 0; i < 200 && get(*a, puts) + get(*b, puts) < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(get(*a, puts) + get(*b, puts), 5) << "one replica's reference KV, one value per part";
  // Taken whole by the other (a reader that came while the parts were being written counts the
  // ones it saw then, and all 5 again after its wait).
  EXPECT_GE(get(*a, hits) + get(*b, hits), 5) << "taken whole by the other";
  EXPECT_EQ(get(*a, "folio_prefix_cache_hits_total") + get(*b, "folio_prefix_cache_hits_total"), 1);
  EXPECT_EQ(from_a["markdown"], alone["markdown"]);
  EXPECT_EQ(from_b["markdown"], alone["markdown"]);
  for (int i = 0; i < 200 && !redis.command({"KEYS", "folio:claim:*"}).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(redis.command({"KEYS", "folio:claim:*"}), "") << "claims released";
}

// A claim lives while its replica does: renewed past its lease, it ends within about one lease once
// its replica is gone without releasing it (a SIGKILL mid-encode), so another replica waiting for
// it works alone after a lease, not after claim_wait_s (which held a killed replica's peers for
// minutes in the scale-out test).
TEST(RemoteClaims, ADeadReplicasClaimEndsWithItsLease) {
  const int port = free_port();
  RedisServer redis(port);
  RemoteReferenceTier::Options o;
  o.address = "127.0.0.1:" + std::to_string(port);
  o.fingerprint = "test";
  o.claim_wait_s = 60;
  o.claim_lease_s = 1;
  auto holder = std::make_unique<RemoteReferenceTier>(o);
  RemoteReferenceTier waiter(o);
  ASSERT_TRUE(holder->claim("pass", "doc"));
  EXPECT_FALSE(waiter.claim("pass", "doc"));
  const int ttl = std::stoi(redis.command({"TTL", "folio:claim:pass:doc"}));
  EXPECT_TRUE(ttl >= 0 && ttl <= 1) << ttl;
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(redis.command({"EXISTS", "folio:claim:pass:doc"}), "1") << "renewed while its replica lives";
  holder.reset();  // gone without releasing
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(waiter.wait_for("pass", "doc"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  // A released claim is gone at once, and no longer renewed.
  ASSERT_TRUE(waiter.claim("pass", "doc2"));
  waiter.release("pass", "doc2");
  EXPECT_EQ(redis.command({"EXISTS", "folio:claim:pass:doc2"}), "0");
}

// The claim, step by step: while another replica holds it, a replica waits (and encodes nothing);
// the value appearing ends the wait with a remote hit; a claim gone without a value (its holder
// died) ends it with a local encode.
TEST_F(RemoteTier, AClaimedPassIsWaitedForNotEncoded) {
  const int port = free_port(), other = free_port();
  RedisServer redis(port), source(other);
  ocr(*serve(config(other)), pdf(1));  // the pass's key and value, from another Redis
  const std::string keys = source.command({"KEYS", "folio:pass:*"});
  ASSERT_EQ(std::count(keys.begin(), keys.end(), '\n'), 1) << keys;
  const std::string key = keys.substr(0, keys.size() - 1), suffix = key.substr(std::string("folio:pass:").size());
  const std::string value = source.command({"GET", key});
  for (bool value_arrives : {true, false}) {
    SCOPED_TRACE(value_arrives ? "the holder stores its value" : "the holder dies");
    redis.command({"FLUSHALL"});
    ASSERT_EQ(redis.command({"SET", "folio:claim:pass:" + suffix, "1", "EX", "60"}), "OK");
    auto b = serve(config(port));
    json got;
    std::thread t([&] { got = ocr(*b, pdf(1)); });
    for (int i = 0; i < 500 && get(*b, "folio_remote_tier_waits_total") != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(get(*b, "folio_remote_tier_waits_total"), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(get(*b, "folio_remote_tier_puts_total{kind=\"pass\"}"), 0) << "nothing encoded while the claim is held";
    if (value_arrives) {
      ASSERT_EQ(redis.command({"SET", key, value}), "OK");
    }
    redis.command({"DEL", "folio:claim:pass:" + suffix});
    t.join();
    EXPECT_TRUE(got.contains("markdown"));
    EXPECT_EQ(get(*b, "folio_remote_tier_hits_total{kind=\"pass\"}"), value_arrives ? 1 : 0);
    EXPECT_EQ(get(*b, "folio_remote_tier_puts_total{kind=\"pass\"}"), value_arrives ? 0 : 1);
  }
}

// With prefix caches, a replica that reads a document hands its reference KV on, one value per
// part (the prompt's head, each page, the prompt's tail: 5 for 3 pages): another replica reading it
// encodes nothing and prefills nothing, and answers the same; one reading its first two pages takes
// their KV and prefills only the prompt's tail.
TEST_F(RemoteTier, ReferenceKVGoesToTheOtherReplicas) {
  const json alone = ocr(*serve(config(0, true)), pdf(3));
  const json alone_12 = ocr(*serve(config(0, true)), pdf(3), "1-2");
  const int port = free_port();
  RedisServer redis(port);
  auto a = serve(config(port, true));
  const json from_a = ocr(*a, pdf(3));
  // Written by the tier's writer thread after the pass ended.
  const std::string kv_puts = "folio_remote_tier_puts_total{kind=\"kv\"}";
  for (int i = 0; i < 200 && get(*a, kv_puts) != 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(get(*a, kv_puts), 5);
  auto b = serve(config(port, true));
  const json from_b = ocr(*b, pdf(3));
  EXPECT_EQ(get(*b, "folio_remote_tier_hits_total{kind=\"pass\"}"), 1);
  EXPECT_EQ(get(*b, "folio_remote_tier_hits_total{kind=\"kv\"}"), 5);
  EXPECT_EQ(get(*b, "folio_prefix_cache_offers_total{outcome=\"kept\"}"), 1);
  EXPECT_EQ(get(*b, "folio_prefix_cache_hits_total"), 1);
  EXPECT_EQ(get(*b, "folio_prefix_cache_reused_tokens_total"), from_b["usage"]["prompt_tokens"].get<double>()) << "nothing prefilled";
  EXPECT_EQ(from_b["usage"]["prompt_tokens_details"]["cached_tokens"], from_b["usage"]["prompt_tokens"]);
  for (const json* j : {&from_a, &from_b}) {
    EXPECT_EQ((*j)["markdown"], alone["markdown"]);
    EXPECT_EQ((*j)["usage"]["completion_tokens"], alone["usage"]["completion_tokens"]);
  }
  // Pages 1-2 on a fresh replica: the head and both pages chain as in the 3-page reference (3 parts
  // found), the tail does not (it follows page 2 here): that part alone is prefilled.
  auto d = serve(config(port, true));
  const json from_d = ocr(*d, pdf(3), "1-2");
  EXPECT_EQ(get(*d, "folio_remote_tier_hits_total{kind=\"kv\"}"), 3);
  EXPECT_EQ(get(*d, "folio_prefix_cache_hits_total"), 1);
  const double reused = get(*d, "folio_prefix_cache_reused_tokens_total");
  EXPECT_GT(reused, 0);
  EXPECT_LT(reused, from_d["usage"]["prompt_tokens"].get<double>());
  EXPECT_EQ(from_d["markdown"], alone_12["markdown"]);
  EXPECT_EQ(from_d["usage"]["completion_tokens"], alone_12["usage"]["completion_tokens"]);
  // A replica storing KV another way (q8) keys it apart: it finds no KV, prefills, answers alike.
  ServerConfig q8 = config(port, true);
  q8.inference.kv_dtype = "q8";
  auto c = serve(q8);
  ocr(*c, pdf(3));
  EXPECT_EQ(get(*c, "folio_remote_tier_hits_total{kind=\"kv\"}"), 0);
  EXPECT_EQ(get(*c, "folio_prefix_cache_hits_total"), 0);
}

}  // namespace
}  // namespace folio
