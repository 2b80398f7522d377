#include "server/http_server.h"

#include "core/error.h"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace folio {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = beast::error_code;

namespace {

constexpr size_t kHeaderLimit = 64 << 10;

std::chrono::steady_clock::duration after(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes undone (a malformed escape is kept as it is).
std::string percent_decoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The request as the handlers see it (the body moved out of `msg`).
HttpRequest to_request(http::request<http::string_body>& msg) {
  HttpRequest req;
  req.method = std::string(msg.method_string());
  const std::string_view target = msg.target();
  const size_t q = target.find('?');
  req.path = percent_decoded(target.substr(0, q));
  if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
  req.version = msg.version() == 10 ? "HTTP/1.0" : "HTTP/1.1";
  for (const auto& f : msg) req.headers.emplace(std::string(f.name_string()), std::string(f.value()));
  req.body = std::move(msg.body());
  return req;
}

template <class Message>
void copy_headers(const HttpResponse& res, Message& msg) {
  for (const auto& [name, value] : res.headers) msg.insert(name, value);
}

int status_of(const HttpResponse& res) { return res.status < 0 ? 200 : res.status; }

// What a refused connection reads before it is closed.
std::string too_many_connections() {
  const std::string body =
      R"json({"error":{"message":"too many connections (server.max_connections / server.max_connections_per_client)",)json"
      R"json("type":"server_error","param":null,"code":"too_many_connections"}})json";
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n"
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

// One connection's life, on the I/O thread except where a method says otherwise.
class SessionBase : public ClientConnection {
 public:
  // Stops reading and shuts the socket both ways (I/O thread).
  virtual void close_now() = 0;
};

struct HttpServer::Impl {
  HttpServerOptions opt;
  Hooks hooks;
  // Declared before the io_context: a session still queued in it when it is destroyed releases its
  // counts here, and reads the TLS context.
  std::mutex mu;  // guards the two maps
  std::map<std::string, size_t> per_client;
  std::map<uint64_t, std::weak_ptr<SessionBase>> sessions;
  uint64_t next_id = 0;
  std::atomic<size_t> open{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<bool> stopping{false};
  bool started = false, stopped = false;
  std::optional<net::ssl::context> tls;

  net::io_context io;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> keep_running;
  tcp::acceptor acceptor{io};
  std::unique_ptr<net::thread_pool> workers;
  std::thread io_thread;
  std::mutex join_mu;

  void accept();
  void on_accept(error_code ec, tcp::socket socket);
  void refuse(tcp::socket socket);
  // Counts a connection from `addr`; false (and nothing counted) when over a cap.
  bool admit(const std::string& addr);
  void release(uint64_t id, const std::string& addr);
  uint64_t enroll(std::weak_ptr<SessionBase> s);
};

namespace {

template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(HttpServer::Impl& srv, Stream stream, std::string remote, int fd)
      : srv_(srv), stream_(std::move(stream)), remote_(std::move(remote)), fd_(fd) {}
  ~Session() override { srv_.release(id_, remote_); }

  void run(uint64_t id) {
    id_ = id;
    if constexpr (kTls) {
      lowest().expires_after(after(srv_.opt.header_timeout_s));
      stream_.async_handshake(net::ssl::stream_base::server, [self = this->shared_from_this()](error_code ec) {
        if (ec) return self->close_now();
        self->await_request();
      });
    } else {
      await_request();
    }
  }

  bool gone() const override {
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return true;
    return info.tcpi_state != TCP_ESTABLISHED;
  }

  void close_now() override {
    error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().cancel();
  }

  // Worker thread: writes through the I/O thread and waits. False when the write failed.
  template <class Start>
  bool write_blocking(Start start) {
    std::promise<error_code> done;
    std::future<error_code> result = done.get_future();
    net::post(srv_.io, [this, &start, &done] {
      lowest().expires_after(after(srv_.opt.write_timeout_s));
      start([&done](error_code ec, size_t) { done.set_value(ec); });
    });
    return !result.get();
  }

  Stream& stream() { return stream_; }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  // Idle: waits for a request's first byte (unless one is buffered already).
  void await_request() {
    if (srv_.stopping) return close_now();
    if (buffer_.size() > 0) return read_header();
    lowest().expires_after(after(srv_.opt.idle_timeout_s));
    stream_.async_read_some(buffer_.prepare(4096), [self = this->shared_from_this()](error_code ec, size_t n) {
      if (ec) return self->close_now();
      self->buffer_.commit(n);
      self->read_header();
    });
  }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(srv_.opt.max_body_bytes);
    lowest().expires_after(after(srv_.opt.header_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_, [self = this->shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
  }

  // The status a read error is answered with, or 0 to close without an answer.
  static int refusal(error_code ec) {
    if (ec == http::error::body_limit) return 413;
    if (ec == http::error::header_limit) return 431;
    if (ec.category() == http::make_error_code(http::error::bad_target).category() && ec != http::error::end_of_stream &&
        ec != http::error::partial_message)
      return 400;
    return 0;
  }

  void on_header(error_code ec) {
    if (ec) return fail_read(ec);
    auto& h = parser_->get();
    if (beast::iequals(h[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, h.version());
      http::async_write(stream_, *cont, [self = this->shared_from_this(), cont](error_code e, size_t) {
        if (e) return self->close_now();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    if (parser_->is_done()) return on_body({});
    lowest().expires_after(after(srv_.opt.body_timeout_s));
    http::async_read(stream_, buffer_, *parser_, [self = this->shared_from_this()](error_code ec, size_t) { self->on_body(ec); });
  }

  void fail_read(error_code ec) {
    const int status = refusal(ec);
    if (status == 0) return close_now();
    HttpRequest req;
    if (parser_ && parser_->is_header_done()) {
      http::request<http::string_body> partial(parser_->get().base(), std::string());
      req = to_request(partial);
    }
    req.remote_addr = remote_;
    auto res = std::make_shared<HttpResponse>();
    res->status = status;
    if (srv_.hooks.transport_error) srv_.hooks.transport_error(status, req, *res);
    if (srv_.hooks.complete) srv_.hooks.complete(req, *res);
    write_async(res, false, false);
  }

  void on_body(error_code ec) {
    if (ec) return fail_read(ec);
    http::request<http::string_body> msg = parser_->release();
    keep_alive_ = msg.keep_alive();
    head_ = msg.method() == http::verb::head;
    auto req = std::make_shared<HttpRequest>(to_request(msg));
    req->remote_addr = remote_;
    req->connection = std::static_pointer_cast<const ClientConnection>(this->shared_from_this());
    if (head_) req->method = "GET";
    if (srv_.hooks.quick && srv_.hooks.quick(*req)) return answer_inline(req);
    net::post(*srv_.workers, [self = this->shared_from_this(), req] { self->answer_on_worker(*req); });
  }

  void run_handler(HttpRequest& req, HttpResponse& res) {
    try {
      srv_.hooks.handle(req, res);
    } catch (const std::exception& e) {
      res = HttpResponse{};
      res.status = 500;
      if (srv_.hooks.transport_error) srv_.hooks.transport_error(500, req, res);
    }
  }

  void answer_inline(const std::shared_ptr<HttpRequest>& req) {
    auto res = std::make_shared<HttpResponse>();
    run_handler(*req, *res);
    res->provider = nullptr;  // a quick route does not stream
    if (srv_.hooks.complete) srv_.hooks.complete(*req, *res);
    write_async(res, keep_alive_ && !srv_.stopping, head_);
  }

  // I/O thread: writes a whole answer, then reads the next request or closes.
  void write_async(const std::shared_ptr<HttpResponse>& res, bool keep, bool head) {
    auto msg = whole_message(*res, keep, head);
    http::async_write(stream_, *msg, [self = this->shared_from_this(), msg, keep](error_code ec, size_t) {
      if (ec || !keep) return self->close_now();
      self->await_request();
    });
  }

  static std::shared_ptr<http::response<http::string_body>> whole_message(const HttpResponse& res, bool keep, bool head) {
    auto msg = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status_of(res)), 11);
    copy_headers(res, *msg);
    msg->keep_alive(keep);
    if (head) {
      msg->content_length(res.body.size());
    } else {
      msg->body() = res.body;
      msg->prepare_payload();
    }
    return msg;
  }

  // Worker thread: the handler, the answer (whole or streamed), the completion hook.
  void answer_on_worker(HttpRequest& req) {
    HttpResponse res;
    run_handler(req, res);
    const bool keep = keep_alive_ && !srv_.stopping;
    bool ok;
    if (res.provider) {
      ok = stream_answer(res, keep);
    } else {
      auto msg = whole_message(res, keep, head_);
      ok = write_blocking([this, &msg](auto done) { http::async_write(stream_, *msg, done); });
    }
    if (srv_.hooks.complete) srv_.hooks.complete(req, res);
    net::post(srv_.io, [self = this->shared_from_this(), again = ok && keep] {
      if (!again) return self->close_now();
      self->await_request();
    });
  }

  class ChunkSink final : public DataSink {
   public:
    explicit ChunkSink(Session& s) : s_(s) {}
    bool write(const char* data, size_t n) override {
      if (failed || finished) return false;
      if (n == 0) return true;
      auto chunk = http::make_chunk(net::const_buffer(data, n));
      failed = !s_.write_blocking([this, &chunk](auto done) { net::async_write(s_.stream(), chunk, done); });
      offset += failed ? 0 : n;
      return !failed;
    }
    void done() override {
      if (failed || finished) return;
      auto last = http::make_chunk_last();
      failed = !s_.write_blocking([this, &last](auto done) { net::async_write(s_.stream(), last, done); });
      finished = true;
    }
    bool is_writable() const override { return !failed && !s_.gone(); }
    size_t offset = 0;
    bool failed = false, finished = false;

   private:
    Session& s_;
  };

  // Worker thread: the header, then the provider's chunks. True when the stream ended by done().
  bool stream_answer(HttpResponse& res, bool keep) {
    auto head = std::make_shared<http::response<http::empty_body>>(static_cast<http::status>(status_of(res)), 11);
    copy_headers(res, *head);
    head->keep_alive(keep);
    head->chunked(true);
    http::response_serializer<http::empty_body> sr(*head);
    ChunkSink sink(*this);
    sink.failed = !write_blocking([this, &sr](auto done) { http::async_write_header(stream_, sr, done); });
    if (head_ && !sink.failed) sink.done();
    while (!sink.failed && !sink.finished)
      if (!res.provider(sink.offset, sink)) break;
    const bool ok = sink.finished && !sink.failed;
    if (res.releaser) res.releaser(ok);
    return ok;
  }

  HttpServer::Impl& srv_;
  Stream stream_;
  std::string remote_;
  int fd_;
  uint64_t id_ = 0;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = true;
  bool head_ = false;
};

}  // namespace

bool HttpServer::Impl::admit(const std::string& addr) {
  std::lock_guard lk(mu);
  if (open >= opt.max_connections) return false;
  size_t& n = per_client[addr];
  if (opt.max_connections_per_client > 0 && n >= opt.max_connections_per_client) return false;
  ++n;
  ++open;
  return true;
}

uint64_t HttpServer::Impl::enroll(std::weak_ptr<SessionBase> s) {
  std::lock_guard lk(mu);
  sessions[++next_id] = std::move(s);
  return next_id;
}

void HttpServer::Impl::release(uint64_t id, const std::string& addr) {
  std::lock_guard lk(mu);
  sessions.erase(id);
  if (--per_client[addr] == 0) per_client.erase(addr);
  --open;
}

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void HttpServer::Impl::refuse(tcp::socket socket) {
  ++refused;
  auto s = std::make_shared<tcp::socket>(std::move(socket));
  if (tls) return;  // a TLS client could not read a plain answer: the socket just closes
  static const std::string answer = too_many_connections();
  net::async_write(*s, net::buffer(answer), [s](error_code, size_t) {
    error_code ec;
    s->shutdown(tcp::socket::shutdown_send, ec);
  });
}

void HttpServer::Impl::on_accept(error_code ec, tcp::socket socket) {
  if (stopping) return;
  if (ec) return accept();  // e.g. out of file descriptors: the next accept may succeed
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  const tcp::endpoint peer = socket.remote_endpoint(ignored);
  const std::string addr = peer.address().to_string();
  if (!admit(addr)) {
    refuse(std::move(socket));
    return accept();
  }
  const int fd = socket.native_handle();
  if (tls) {
    using TlsStream = beast::ssl_stream<beast::tcp_stream>;
    auto s = std::make_shared<Session<TlsStream>>(*this, TlsStream(beast::tcp_stream(std::move(socket)), *tls), addr, fd);
    s->run(enroll(s));
  } else {
    auto s = std::make_shared<Session<beast::tcp_stream>>(*this, beast::tcp_stream(std::move(socket)), addr, fd);
    s->run(enroll(s));
  }
  accept();
}

namespace {

net::ssl::context make_tls_context(const std::string& cert, const std::string& key) {
  if (cert.empty() || key.empty())
    throw_invalid("server.tls_cert_file and server.tls_key_file: TLS needs both, got only " +
                  std::string(cert.empty() ? "server.tls_key_file" : "server.tls_cert_file"));
  for (const auto& [name, path] : {std::pair{"server.tls_cert_file", cert}, std::pair{"server.tls_key_file", key}})
    if (!std::ifstream(path)) throw_invalid(std::string(name) + ": cannot read " + path);
  net::ssl::context ctx(net::ssl::context::tls_server);
  ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 | net::ssl::context::no_sslv3 |
                  net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
  error_code ec;
  ctx.use_certificate_chain_file(cert, ec);
  if (!ec) ctx.use_private_key_file(key, net::ssl::context::pem, ec);
  if (!ec && SSL_CTX_check_private_key(ctx.native_handle()) != 1) ec = net::error::invalid_argument;
  if (ec)
    throw_invalid("server.tls_cert_file / server.tls_key_file: OpenSSL cannot use " + cert + " with " + key +
                  " (not PEM, or the key does not match the certificate)");
  return ctx;
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, Hooks hooks) : impl_(std::make_unique<Impl>()) {
  impl_->opt = std::move(options);
  impl_->hooks = std::move(hooks);
  if (!impl_->opt.tls_cert_file.empty() || !impl_->opt.tls_key_file.empty())
    impl_->tls.emplace(make_tls_context(impl_->opt.tls_cert_file, impl_->opt.tls_key_file));
}

HttpServer::~HttpServer() {
  stop();
  wait();
}

int HttpServer::bind() {
  Impl& m = *impl_;
  error_code ec;
  const auto addr = net::ip::make_address(m.opt.host == "localhost" ? "127.0.0.1" : m.opt.host, ec);
  const std::string where = m.opt.host + ":" + std::to_string(m.opt.port);
  if (ec) throw Error(Error::Kind::Io, "server.host / server.port: cannot listen on " + where + " (not an IP address)");
  const tcp::endpoint ep(addr, static_cast<unsigned short>(m.opt.port));
  m.acceptor.open(ep.protocol(), ec);
  if (!ec) m.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(ep, ec);
  if (!ec) m.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw Error(Error::Kind::Io, "server.host / server.port: cannot listen on " + where +
                                     " (port in use, or not an address of this machine): " + ec.message());
  return m.acceptor.local_endpoint().port();
}

void HttpServer::start() {
  Impl& m = *impl_;
  // Each connection is a file descriptor: allow as many as the hard limit does.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  m.workers = std::make_unique<net::thread_pool>(std::max<size_t>(1, m.opt.worker_threads));
  m.keep_running.emplace(m.io.get_executor());
  m.accept();
  m.started = true;
  m.io_thread = std::thread([&m] { m.io.run(); });
}

void HttpServer::stop() {
  Impl& m = *impl_;
  if (m.stopped) return;
  m.stopped = true;
  m.stopping = true;
  if (!m.started) return;
  net::post(m.io, [&m] {
    error_code ec;
    m.acceptor.close(ec);
    std::vector<std::shared_ptr<SessionBase>> live;
    {
      std::lock_guard lk(m.mu);
      for (auto& [id, w] : m.sessions)
        if (auto s = w.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live) s->close_now();
  });
  // Handlers end (their clients are gone; the caller has stopped what they wait for), their
  // writes fail through the still-running I/O thread; then the I/O thread stops.
  m.workers->join();
  m.keep_running.reset();
  m.io.stop();
}

void HttpServer::wait() {
  std::lock_guard lk(impl_->join_mu);
  if (impl_->io_thread.joinable()) impl_->io_thread.join();
}

size_t HttpServer::open_connections() const { return impl_->open; }
uint64_t HttpServer::refused_connections() const { return impl_->refused; }

}  // namespace folio
