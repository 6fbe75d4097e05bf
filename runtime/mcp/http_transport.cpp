#include "runtime/mcp/detail/http_transport.hpp"

#include "runtime/base64.hpp"
#include "runtime/detail/text.hpp"
#include "runtime/llm/wire/sse_parser.hpp"
#include "runtime/mcp/detail/json_rpc.hpp"
#include "runtime/mcp/detail/protocol.hpp"

namespace troupe::mcp {

namespace {

// A header value as 2026-07-28's Streamable HTTP binding wants it: as is when
// it is plain visible ASCII, else in the "=?base64?…?=" form.
std::string header_value(std::string_view v) {
  bool plain = !v.empty() && v.front() != ' ' && v.back() != ' ';
  for (unsigned char c : v) plain = plain && c >= 0x20 && c <= 0x7e;
  if (v.starts_with("=?base64?") && v.ends_with("?=")) plain = false;
  if (plain) return std::string(v);
  return "=?base64?" + base64_encoded(v) + "?=";
}

error_info http_failure(int status, std::string_view body) {
  std::string message = "the MCP endpoint answered HTTP " + std::to_string(status);
  if (!body.empty()) message += ": " + shortened(body, 200);
  error_info e = error_info::of(status == 401 || status == 403 ? "auth" : mcp_error::unavailable, message);
  e.http_status = status;
  return e;
}

}  // namespace

// One POST and what came back for it.
struct http_transport::exchange {
  int status = 0;
  bool in_session = false;  // it named a session (a 404 then says the session is gone)
  bool event_stream = false;
  std::string body;
  sse_parser events;
};

http_transport::http_transport(http_options options, std::shared_ptr<http_client> client)
    : options_(std::move(options)), client_(std::move(client)) {}

http_transport::~http_transport() { close(); }

std::optional<error_info> http_transport::open(transport_handlers handlers) {
  handlers_ = std::move(handlers);
  if (!options_.url.starts_with("http://") && !options_.url.starts_with("https://"))
    return error_info::of(mcp_error::unavailable, "not an http(s) URL: " + options_.url);
  return std::nullopt;
}

std::uint64_t http_transport::send(outgoing_message message) {
  http_request r;
  r.method = "POST";
  r.url = options_.url;
  r.headers = options_.headers;
  r.headers.emplace_back("Content-Type", "application/json");
  r.headers.emplace_back("Accept", "application/json, text/event-stream");
  if (!message.method.empty()) r.headers.emplace_back("Mcp-Method", header_value(message.method));
  if (!message.name.empty()) r.headers.emplace_back("Mcp-Name", header_value(message.name));
  for (const auto& [name, value] : message.headers) r.headers.emplace_back(name, header_value(value));
  if (!message.protocol_version.empty()) r.headers.emplace_back("MCP-Protocol-Version", message.protocol_version);
  r.body = std::move(message.text);
  r.connect_timeout = options_.connect_timeout;
  // The client above keeps every deadline; a tool call may stream nothing
  // for as long as it runs.
  r.first_byte_timeout = std::chrono::hours(24);
  r.idle_timeout = std::chrono::hours(24);
  r.total_timeout = std::chrono::hours(24);
  r.max_response_bytes = options_.max_response_bytes;

  auto x = std::make_shared<exchange>();
  auto on_sent = std::move(message.on_sent);
  http_callbacks c;
  c.on_head = [this, x](const http_response_head& head) {
    x->status = head.status;
    x->event_stream = head.header("content-type").starts_with("text/event-stream");
    if (auto id = head.header("mcp-session-id"); !id.empty() && head.status < 300) {
      std::lock_guard lock(mutex_);
      session_id_ = std::string(id);
    }
  };
  c.on_body = [this, x](std::string_view chunk) -> std::optional<error_info> {
    if (!x->event_stream || x->status >= 300) {
      x->body.append(chunk);
      return std::nullopt;
    }
    x->events.feed(chunk, [&](const sse_event& e) {
      if ((e.type == "message") && !e.data.empty()) handlers_.on_message(e.data);
    });
    if (x->events.overflowed())
      return error_info::of(error_type::response_too_large, "an SSE event from the MCP server is too large");
    return std::nullopt;
  };
  auto id_holder = std::make_shared<std::uint64_t>(0);
  c.on_done = [this, x, on_sent, id_holder](std::optional<error_info> error) {
    bool session_gone = false;
    {
      std::lock_guard lock(mutex_);
      in_flight_.erase(*id_holder);
      if (closed_) return;
      // A legacy server forgets sessions (it restarted, it expired them):
      // everything waiting fails, and the next request opens a new one.
      if (!error && x->status == 404 && x->in_session && !session_id_.empty()) {
        session_id_.clear();
        session_gone = true;
      }
    }
    if (session_gone && handlers_.on_closed) {
      error_info why = error_info::of(mcp_error::unavailable, "the MCP server ended the session (HTTP 404)");
      why.http_status = 404;
      handlers_.on_closed(std::move(why));
      return;
    }
    if (!error && x->status >= 300) {
      // A modern server answers a request it refuses with 4xx and a JSON-RPC
      // error carrying the request's id: that is the response. Anything
      // else is an HTTP failure (and, for the probe, a sign of a legacy server).
      if (!x->body.empty()) handlers_.on_message(x->body);
      error = http_failure(x->status, x->body);
    } else if (!error && !x->event_stream && !x->body.empty()) {
      handlers_.on_message(x->body);
    }
    if (on_sent) on_sent(std::move(error));
  };
  std::lock_guard lock(mutex_);
  if (closed_) return 0;
  if (!session_id_.empty()) {
    r.headers.emplace_back("Mcp-Session-Id", session_id_);
    x->in_session = true;
  }
  // Under the lock: on_done cannot erase the id before it is recorded.
  const std::uint64_t id = client_->start(std::move(r), std::move(c));
  *id_holder = id;
  in_flight_.insert(id);
  return id;
}

void http_transport::abort(std::uint64_t handle) {
  {
    std::lock_guard lock(mutex_);
    if (!in_flight_.erase(handle)) return;
  }
  client_->cancel(handle);
}

void http_transport::close() {
  std::set<std::uint64_t> ids;
  std::string session;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    ids.swap(in_flight_);
    session.swap(session_id_);
  }
  for (auto id : ids) client_->cancel(id);
  if (session.empty()) return;
  // A legacy session is ended with a DELETE, as its revision asks; nothing
  // waits for the answer.
  http_request r;
  r.method = "DELETE";
  r.url = options_.url;
  r.headers = options_.headers;
  r.headers.emplace_back("Mcp-Session-Id", session);
  r.connect_timeout = std::chrono::seconds(2);
  r.first_byte_timeout = r.idle_timeout = r.total_timeout = std::chrono::seconds(5);
  client_->start(std::move(r), {});
}

}  // namespace troupe::mcp
