#pragma once
// The HTTP message types of the server and the JSON answers every route
// gives: a body, or {"error": {"type", "message"}} with its status.

#include <boost/beast/http.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace troupe::serve {

namespace http = boost::beast::http;
using http_request = http::request<http::string_body>;
using http_response = http::response<http::string_body>;

http_response json_response(http::status status, const boost::json::value& body);
http_response error_response(http::status status, std::string_view type, std::string_view message);

// The status a turn's error answers with (deadline_exceeded 504, a model's
// failure 502, queue_full 429, shutdown 503, …).
http::status status_of_error(std::string_view type);

}  // namespace troupe::serve
