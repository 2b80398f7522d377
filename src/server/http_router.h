// HttpRouter: which handler answers a method and path; 404 for an unknown path, 405 with the
// methods it takes for a known path asked with another method (RFC 9110).
// Routes are added before serving starts; find() is then safe from any thread.
#pragma once

#include "server/http_message.h"

#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace folio {

class HttpRouter {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;

  // `path` is matched exactly, or as a whole-path regex when it holds '(' (its groups go to
  // HttpRequest::matches after the whole match).
  void add(const std::string& method, const std::string& path, Handler handler);

  struct Found {
    const Handler* handler = nullptr;  // null: `status` says why
    int status = 404;
    std::string allow;                 // for 405: "GET, POST"
  };
  Found find(const std::string& method, const std::string& path, std::vector<std::string>& matches) const;
  // The methods `path` takes, joined by ", " ("" when it is no route's path).
  std::string allowed(const std::string& path) const;

 private:
  struct Route {
    std::string method, path;
    std::optional<std::regex> pattern;
    Handler handler;
    bool matches(const std::string& p, std::vector<std::string>* groups) const;
  };
  std::vector<Route> routes_;
};

}  // namespace folio
