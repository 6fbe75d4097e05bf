#include "apps/serve/web_page.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace troupe::serve;

namespace {

http_request get_page(std::string if_none_match = "") {
  http_request r{http::verb::get, "/", 11};
  if (!if_none_match.empty()) r.set(http::field::if_none_match, if_none_match);
  return r;
}

}  // namespace

TEST_CASE("the chat page is served with its headers, or 304 when the browser has it", "[serve][web]") {
  const web_page& page = embedded_chat_page();

  SECTION("the embedded bytes are the page") {
    CHECK(page.html.starts_with("<!doctype html>"));
    CHECK(page.html.find("</html>") != std::string_view::npos);
  }

  SECTION("a first visit gets the page as HTML, with a CSP, no-cache and an ETag") {
    const http_response r = web_page_response(page, get_page());
    CHECK(r.result() == http::status::ok);
    CHECK(r[http::field::content_type] == "text/html; charset=utf-8");
    CHECK(r.body() == page.html);
    CHECK(r[http::field::cache_control] == "no-cache");
    CHECK(r[http::field::etag] == page.etag);
    CHECK(r["X-Content-Type-Options"] == "nosniff");
    const std::string csp(r["Content-Security-Policy"]);
    CHECK(csp.starts_with("default-src 'none'; script-src 'sha256-"));
    CHECK(csp.find("style-src 'sha256-") != std::string::npos);
    CHECK(csp.find("connect-src 'self'") != std::string::npos);
    CHECK(csp.find("unsafe-inline") == std::string::npos);
  }

  SECTION("the same ETag, alone, weak or in a list, answers 304 without a body") {
    for (const std::string& tag : {std::string(page.etag), "W/" + std::string(page.etag),
                                   "\"other\", " + std::string(page.etag), std::string("*")}) {
      const http_response r = web_page_response(page, get_page(tag));
      INFO(tag);
      CHECK(r.result() == http::status::not_modified);
      CHECK(r.body().empty());
      CHECK(r[http::field::etag] == page.etag);
    }
  }

  SECTION("another ETag gets the page again") {
    const http_response r = web_page_response(page, get_page("\"an-older-build\""));
    CHECK(r.result() == http::status::ok);
    CHECK(r.body() == page.html);
  }
}
