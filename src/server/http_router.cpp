#include "server/http_router.h"

namespace folio {

bool HttpRouter::Route::matches(const std::string& p, std::vector<std::string>* groups) const {
  if (!pattern) return p == path;
  std::smatch m;
  if (!std::regex_match(p, m, *pattern)) return false;
  if (groups) groups->assign(m.begin(), m.end());
  return true;
}

void HttpRouter::add(const std::string& method, const std::string& path, Handler handler) {
  Route r{method, path, std::nullopt, std::move(handler)};
  if (path.find('(') != std::string::npos) r.pattern.emplace(path);
  routes_.push_back(std::move(r));
}

HttpRouter::Found HttpRouter::find(const std::string& method, const std::string& path, std::vector<std::string>& matches) const {
  Found f;
  for (const Route& r : routes_) {
    if (r.method != method || !r.matches(path, &matches)) continue;
    f.handler = &r.handler;
    return f;
  }
  f.allow = allowed(path);
  if (!f.allow.empty()) f.status = 405;
  return f;
}

std::string HttpRouter::allowed(const std::string& path) const {
  std::string allow;
  for (const Route& r : routes_)
    if (r.matches(path, nullptr) && allow.find(r.method) == std::string::npos) allow += (allow.empty() ? "" : ", ") + r.method;
  return allow;
}

}  // namespace folio
