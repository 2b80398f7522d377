#pragma once
// One HTTP request and its answer as the service's handlers see them, apart from the transport
// (http_server.h) that reads and writes them. The names follow cpp-httplib's, which the handlers
// were written against.

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace folio {

// Header names compare without case (RFC 9110).
struct HeaderNameLess {
  bool operator()(const std::string& a, const std::string& b) const;
};
using HttpHeaders = std::multimap<std::string, std::string, HeaderNameLess>;

// What a handler may ask of the connection its request came on, from any thread while the
// request is being answered.
class ClientConnection {
 public:
  virtual ~ClientConnection() = default;
  // True once the client has closed or reset the connection (its end sent FIN or RST), even while
  // nothing is being written to it. Cheap (one getsockopt): call it whenever a wait wakes.
  virtual bool gone() const = 0;
};

struct HttpRequest {
  std::string method;       // as sent; HEAD is routed as GET
  std::string path;         // percent-decoded, without the query
  std::string query;        // after '?', as sent
  std::string version;      // "HTTP/1.1"
  HttpHeaders headers;
  std::string body;
  std::string remote_addr;  // the peer's IP address
  std::vector<std::string> matches;  // a pattern route's whole match, then its groups
  std::shared_ptr<const ClientConnection> connection;  // null in requests made by hand (tests)

  bool has_header(const std::string& name) const { return headers.count(name) > 0; }
  // The first value of `name`, or "" when absent.
  std::string get_header_value(const std::string& name) const;
  // Content-Type is multipart/form-data (server/multipart.h parses the body).
  bool is_multipart_form_data() const;
  // See ClientConnection::gone; false without a connection.
  bool client_gone() const { return connection && connection->gone(); }
};

// Where a streamed answer's bytes go, on the thread that answers the request.
class DataSink {
 public:
  virtual ~DataSink() = default;
  // Sends `n` bytes as one chunk and waits until they are written. False when the client is gone
  // or the write timed out: the provider should then return false.
  virtual bool write(const char* data, size_t n) = 0;
  // Ends the stream (the last chunk). Call once, after the last write.
  virtual void done() = 0;
  // False once the client has gone (ClientConnection::gone), without writing anything.
  virtual bool is_writable() const = 0;
};

// Called again and again until it calls sink.done() (then returns true) or returns false (the
// stream is cut). `offset` is the number of bytes sent so far.
using ContentProvider = std::function<bool(size_t offset, DataSink& sink)>;
// Called once when the stream ends, with whether it ended by done(): to release what it held.
using ContentReleaser = std::function<void(bool success)>;

struct HttpResponse {
  int status = -1;  // -1: not set by the handler (200 once it has content)
  HttpHeaders headers;
  std::string body;
  ContentProvider provider;   // set: the answer is streamed with chunked transfer encoding
  ContentReleaser releaser;

  bool has_header(const std::string& name) const { return headers.count(name) > 0; }
  std::string get_header_value(const std::string& name) const;
  // Replaces any value `name` had.
  void set_header(const std::string& name, const std::string& value);
  void set_content(std::string content, const std::string& content_type);
  void set_chunked_content_provider(const std::string& content_type, ContentProvider p, ContentReleaser r = nullptr);
};

}  // namespace folio
