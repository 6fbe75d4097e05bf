#include "apps/serve/web_page.hpp"

#include "apps/serve/exchange.hpp"
#include "apps/serve/router.hpp"

#include <memory>

namespace troupe::serve {

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// If-None-Match is "*" or a comma-separated list of entity tags, weak ones
// prefixed W/ (a weak comparison is what RFC 9110 asks for here).
bool matches(std::string_view if_none_match, std::string_view etag) {
  while (!if_none_match.empty()) {
    const auto comma = if_none_match.find(',');
    std::string_view tag = trimmed(if_none_match.substr(0, comma));
    if_none_match = comma == std::string_view::npos ? std::string_view() : if_none_match.substr(comma + 1);
    if (tag == "*") return true;
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == etag) return true;
  }
  return false;
}

}  // namespace

http_response web_page_response(const web_page& page, const http_request& request) {
  http_response r;
  r.version(request.version());
  r.set(http::field::etag, page.etag);
  r.set(http::field::cache_control, "no-cache");
  r.set("Content-Security-Policy", page.content_security_policy);
  r.set("X-Content-Type-Options", "nosniff");
  r.set("Referrer-Policy", "no-referrer");
  if (matches(request[http::field::if_none_match], page.etag)) {
    r.result(http::status::not_modified);
  } else {
    r.result(http::status::ok);
    r.set(http::field::content_type, "text/html; charset=utf-8");
    r.body() = page.html;
  }
  r.prepare_payload();
  return r;
}

void add_web_routes(router& r) {
  r.add(
      http::verb::get, "/",
      [](const std::shared_ptr<exchange>& ex) { ex->respond(web_page_response(embedded_chat_page(), ex->request())); },
      {.public_route = true});
}

}  // namespace troupe::serve
