#include "apps/serve/router.hpp"

#include <stdexcept>

namespace troupe::serve {

namespace {

std::vector<std::string> split_pattern(const std::string& pattern) {
  if (pattern.empty() || pattern.front() != '/')
    throw std::invalid_argument("a route pattern starts with /: " + pattern);
  std::vector<std::string> out;
  std::size_t at = 1;
  while (at <= pattern.size()) {
    const std::size_t slash = pattern.find('/', at);
    const std::size_t end = slash == std::string::npos ? pattern.size() : slash;
    out.push_back(pattern.substr(at, end - at));
    at = end + 1;
  }
  if (out.size() == 1 && out[0].empty()) out.clear();  // "/"
  return out;
}

bool is_param(const std::string& s) { return s.size() > 2 && s.front() == '{' && s.back() == '}'; }

}  // namespace

void router::add(http::verb method, std::string pattern, route_handler handler, route_options options) {
  auto segments = split_pattern(pattern);
  routes_.push_back({method, std::move(pattern), std::move(segments), std::move(handler), options});
}

router::match router::find(http::verb method, const std::vector<std::string>& segments) const {
  match m;
  for (const route& r : routes_) {
    if (r.segments.size() != segments.size()) continue;
    path_params params;
    bool fits = true;
    for (std::size_t i = 0; i < segments.size() && fits; ++i) {
      if (is_param(r.segments[i])) {
        fits = !segments[i].empty();
        params.emplace_back(r.segments[i].substr(1, r.segments[i].size() - 2), segments[i]);
      } else {
        fits = r.segments[i] == segments[i];
      }
    }
    if (!fits) continue;
    m.path_known = true;
    if (r.method != method) continue;
    m.found = &r;
    m.params = std::move(params);
    return m;
  }
  return m;
}

}  // namespace troupe::serve
