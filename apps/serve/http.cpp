#include "apps/serve/http.hpp"

#include "json/json_text.hpp"
#include "signals/error_info.hpp"

namespace troupe::serve {

http_response json_response(http::status status, const boost::json::value& body) {
  http_response r{status, 11};
  r.set(http::field::content_type, "application/json");
  r.set(http::field::cache_control, "no-store");
  r.body() = json_text(body);
  r.body() += '\n';
  return r;
}

http_response error_response(http::status status, std::string_view type, std::string_view message) {
  return json_response(status, {{"error", {{"type", type}, {"message", message}}}});
}

http::status status_of_error(std::string_view type) {
  using s = http::status;
  namespace e = error_type;
  if (type == e::queue_full) return s::too_many_requests;
  if (type == e::busy || type == e::cancelled || type == e::duplicate_request) return s::conflict;
  if (type == e::deadline_exceeded) return s::gateway_timeout;
  if (type == e::invalid_query) return s::bad_request;
  if (type == e::shutdown || type == e::agent_stopped || type == e::store_timeout || type == e::store_failed ||
      type == e::thread_owned_elsewhere || type == e::lease_lost || type == e::node_lost)
    return s::service_unavailable;
  // Another node of the cluster refused us (its secret, its certificate) or
  // runs another build: an upstream that will not serve this one.
  if (type == e::node_refused || type == e::incompatible_build) return s::bad_gateway;
  if (type == e::callback_failed || type == e::agent_crashed || type == e::agent_failed ||
      type == e::executor_crashed || type == e::broker_crashed)
    return s::internal_server_error;
  // The rest come from the model (its HTTP errors, a malformed or endless
  // answer) or from what it asked for (max_iterations): the upstream failed.
  return s::bad_gateway;
}

}  // namespace troupe::serve
