// HttpServer: HTTP/1.1 (and HTTPS) connections, read and written without a thread per connection.
//
// Why not cpp-httplib, which the service used before: it gives each connection a thread from a
// fixed pool for as long as the connection lives, and its read timeout restarts with every byte, so
// clients that send one header line every few seconds (or simply keep idle connections) hold every
// thread and the server stops answering, /healthz included. Here one I/O thread (Boost.Asio,
// Boost.Beast's parser) owns every socket: a connection waiting for bytes costs a few kilobytes and
// no thread, and each phase has a deadline of its own:
//   idle_timeout_s    from the end of an answer (or the accept) to a request's first byte,
//   header_timeout_s  from that first byte to the end of its headers (TLS: the handshake too),
//   body_timeout_s    for its body,
//   write_timeout_s   for each write of an answer.
// A connection past its deadline is closed. Over max_connections (or max_connections_per_client
// for one peer address) a new connection gets 503 `too_many_connections` and is closed.
//
// A complete request goes to `Hooks::handle`: on the I/O thread itself when `Hooks::quick` says so
// (probes and metrics: answered at once whatever the workers are doing; they must never block),
// otherwise on one of `worker_threads` workers, which also runs the answer's stream provider and
// `Hooks::complete`, all on that one thread. While a worker answers, the request's
// `client_gone()` tells whether the client has closed its end, so handlers can cancel work
// whether or not they are writing.
//
// Errors before a handler (a malformed request: 400, a body over max_body_bytes: 413, headers
// over 64 KiB: 431) are answered through `Hooks::transport_error` and the connection is closed.
// Expect: 100-continue is honoured; HEAD is answered as GET without the body.
//
// Threads: bind/start/stop/wait from one controlling thread. stop() closes the listener and every
// connection (handlers still running see client_gone()), waits for the workers, then the I/O
// thread.
#pragma once

#include "server/http_message.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace folio {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                  // 0: any free port (bind() returns it)
  std::string tls_cert_file;     // both set: HTTPS only
  std::string tls_key_file;
  size_t max_body_bytes = 16 << 20;
  double idle_timeout_s = 60;
  double header_timeout_s = 10;
  double body_timeout_s = 300;
  double write_timeout_s = 30;
  size_t max_connections = 10000;
  size_t max_connections_per_client = 0;  // 0: no cap per address
  size_t worker_threads = 16;
};

class HttpServer {
 public:
  struct Hooks {
    std::function<void(HttpRequest&, HttpResponse&)> handle;
    std::function<bool(const HttpRequest&)> quick;  // null: every request goes to a worker
    // Fills `res` for a request the transport refused with `status` (the request may be partial).
    std::function<void(int status, const HttpRequest&, HttpResponse&)> transport_error;
    // After the answer's last byte was written, or the write failed.
    std::function<void(const HttpRequest&, const HttpResponse&)> complete;
  };

  // Throws Error(InvalidInput) naming server.tls_cert_file / server.tls_key_file when only one is
  // given, one cannot be read, or OpenSSL refuses them.
  HttpServer(HttpServerOptions options, Hooks hooks);
  ~HttpServer();  // stop(), then wait()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Listens (SO_REUSEADDR, not SO_REUSEPORT: a port in use is an error); returns the port.
  // Throws Error(Io) naming server.host / server.port.
  int bind();
  // Starts the I/O thread and the workers; raises the process's open-file limit to its maximum.
  void start();
  void stop();
  // Blocks until stop() has finished.
  void wait();

  size_t open_connections() const;
  uint64_t refused_connections() const;  // over max_connections or max_connections_per_client

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace folio
