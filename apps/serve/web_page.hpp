#pragma once
// GET /: the chat page (apps/serve/web/index.html), compiled into the binary
// by cmake/embed_web_page.cmake so a deployment is one file.

#include "apps/serve/http.hpp"

#include <string_view>

namespace troupe::serve {

class router;

struct web_page {
  std::string_view html;
  std::string_view etag;  // quoted, as the header carries it
  // Allows the page's inline script and style by their hashes, and fetches
  // to this origin only.
  std::string_view content_security_policy;
};

// Generated at build time from the page's bytes.
const web_page& embedded_chat_page();

// The page, or 304 when the browser's copy (If-None-Match) is this one.
// Browsers revalidate every time (no-cache), so a new build is seen at once.
http_response web_page_response(const web_page& page, const http_request& request);

// GET / (public: the page asks for the key itself).
void add_web_routes(router& r);

}  // namespace troupe::serve
