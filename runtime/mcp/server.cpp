#include "runtime/mcp/detail/server.hpp"

#include "base/overloaded.hpp"
#include "runtime/mcp/detail/http_transport.hpp"
#include "runtime/mcp/detail/stdio_transport.hpp"

namespace troupe::mcp {

namespace json = boost::json;

namespace {

// A server that pages forever (a cursor that never ends) is cut off here.
constexpr int max_pages = 100;

// For servers given no client: one I/O thread for all of them, never
// destroyed, since a server may be destroyed on that thread (in a callback).
std::shared_ptr<http_client> shared_http_client() {
  static auto* client = new std::shared_ptr<http_client>(std::make_shared<http_client>());
  return *client;
}

}  // namespace

std::shared_ptr<server> server::create(mcp_server_config config, tool_registry& registry,
                                       std::shared_ptr<http_client> http) {
  auto s = std::shared_ptr<server>(new server(std::move(config), registry, std::move(http)));
  std::weak_ptr<server> weak = s;
  s->client_->on_notification([weak](const rpc_notification& n) {
    if (n.method != "notifications/tools/list_changed") return;
    if (auto self = weak.lock()) self->relist();
  });
  // A restarted server may offer other tools than the one that died.
  s->client_->on_reconnected([weak] {
    if (auto self = weak.lock()) self->relist();
  });
  return s;
}

server::server(mcp_server_config config, tool_registry& registry, std::shared_ptr<http_client> http)
    : config_(std::move(config)), registry_(&registry), http_(std::move(http)) {
  if (!config_.url.empty() && !http_) http_ = shared_http_client();
  transport_factory factory;
  if (config_.url.empty()) {
    factory = [argv = config_.command]() -> std::unique_ptr<transport> {
      return std::make_unique<stdio_transport>(stdio_options{argv});
    };
  } else {
    factory = [url = config_.url, headers = config_.headers, http = http_]() -> std::unique_ptr<transport> {
      return std::make_unique<http_transport>(http_options{url, headers}, http);
    };
  }
  client_options o;
  o.name = config_.name;
  o.request_timeout = config_.request_timeout;
  o.probe_timeout = config_.probe_timeout;
  o.max_restarts = config_.max_restarts;
  o.restart_window = config_.restart_window;
  client_ = client::create(std::move(o), std::move(factory));
}

server::~server() { close(); }

std::vector<std::string> server::tool_names() const {
  std::lock_guard lock(mutex_);
  return {registered_.begin(), registered_.end()};
}

mcp_server_status server::start() {
  if (auto problem = check_mcp_server(config_))
    return mcp_server_status{{}, {}, error_info::of(mcp_error::unavailable, *problem)};
  {
    std::lock_guard lock(mutex_);
    listing_ = true;
  }
  std::promise<listing> listed;
  list_tools([&listed](listing l) { listed.set_value(std::move(l)); });
  listing l = listed.get_future().get();
  mcp_server_status status;
  if (auto* e = std::get_if<error_info>(&l))
    status.error = *e;
  else
    status = apply(std::get<std::vector<json::value>>(l));
  bool again;
  {
    std::lock_guard lock(mutex_);
    listing_ = false;
    again = std::exchange(list_again_, false);
  }
  if (again && status.ok()) relist();
  return status;
}

void server::list_tools(std::function<void(listing)> done) { list_page("", {}, 1, std::move(done)); }

void server::list_page(std::string cursor, std::vector<json::value> so_far, int page,
                       std::function<void(listing)> done) {
  json::object params;
  if (!cursor.empty()) params["cursor"] = cursor;
  std::weak_ptr<server> weak = weak_from_this();
  auto on_reply = [weak, so_far = std::move(so_far), page, done](rpc_reply reply) mutable {
    auto self = weak.lock();
    if (!self) return done(error_info::of(error_type::shutdown, "the MCP server was closed"));
    const std::string& name = self->config_.name;
    if (auto* e = std::get_if<rpc_error>(&reply)) return done(error_of(*e, name));
    if (auto* e = std::get_if<error_info>(&reply)) return done(std::move(*e));
    const json::object& result = std::get<json::object>(reply);
    const auto* tools = result.if_contains("tools");
    if (!tools || !tools->is_array())
      return done(error_info::of(error_type::malformed_response,
                                 "the MCP server " + name + " answered tools/list without a \"tools\" array"));
    for (const auto& t : tools->as_array()) so_far.push_back(t);
    const auto* next = result.if_contains("nextCursor");
    if (!next || !next->is_string() || next->as_string().empty()) return done(std::move(so_far));
    if (page >= max_pages)
      return done(error_info::of(error_type::malformed_response, "the MCP server " + name + " listed more than " +
                                                                     std::to_string(max_pages) + " pages of tools"));
    self->list_page(std::string(next->as_string()), std::move(so_far), page + 1, std::move(done));
  };
  client_->request("tools/list", std::move(params), config_.request_timeout, std::move(on_reply));
}

tool server::make_tool(const listed_tool& listed) {
  tool t;
  t.spec = listed.spec;
  t.timeout = config_.call_timeout;
  t.retry.max_attempts = 1;  // a call may have effects: never repeated blindly
  std::weak_ptr<client> weak_client = client_;
  const std::string server_name = config_.name;
  // A second deadline behind the executor's, for callers that run the tool
  // without one.
  const auto backstop = config_.call_timeout + std::chrono::seconds(5);
  t.start = [weak_client, server_name, mcp_name = listed.mcp_name, params = listed.param_headers, backstop](
                const json::object& arguments, const tool_context& ctx, tool_finish finish) -> std::function<void()> {
    auto c = weak_client.lock();
    if (!c) throw tool_failure(error_type::shutdown, "the MCP server " + server_name + " was closed");
    json::object call{{"name", mcp_name}, {"arguments", arguments}};
    auto headers = param_header_values(params, arguments);
    // The call's span goes on in the server: W3C trace context in _meta
    // (either transport) and as the traceparent header over HTTP.
    if (!ctx.traceparent.empty()) {
      call["_meta"] = json::object{{"traceparent", ctx.traceparent}};
      headers.emplace_back("traceparent", ctx.traceparent);
    }
    const std::int64_t id = c->request(
        "tools/call", std::move(call), backstop,
        [finish, server_name](rpc_reply reply) { finish(outcome_of_call(std::move(reply), server_name)); }, mcp_name,
        std::move(headers));
    if (id == 0) return {};
    return [weak_client, id] {
      if (auto c = weak_client.lock()) c->cancel(id, "the tool call was cancelled or timed out");
    };
  };
  return t;
}

mcp_server_status server::apply(const std::vector<json::value>& listed) {
  mcp_server_status status;
  std::set<std::string> now;
  std::lock_guard lock(mutex_);
  if (closed_) {
    status.error = error_info::of(error_type::shutdown, "the MCP server " + config_.name + " was closed");
    return status;
  }
  for (const auto& v : listed) {
    auto decoded = decode_listed_tool(v, config_.name, !config_.url.empty());
    if (auto* e = std::get_if<error_info>(&decoded)) {
      status.rejected.push_back(std::move(*e));
      continue;
    }
    const listed_tool& t = std::get<listed_tool>(decoded);
    if (now.count(t.spec.name)) {
      status.rejected.push_back(error_info::of(
          mcp_error::invalid_tool, "the MCP server " + config_.name + " listed \"" + t.mcp_name + "\" twice"));
      continue;
    }
    try {
      registry_->add(make_tool(t));
    } catch (const std::invalid_argument& e) {
      status.rejected.push_back(error_info::of(mcp_error::invalid_tool, e.what()));
      continue;
    }
    now.insert(t.spec.name);
  }
  for (const auto& old : registered_)
    if (!now.count(old)) registry_->remove(old);
  registered_ = now;
  status.tools.assign(now.begin(), now.end());
  return status;
}

void server::relist() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    if (listing_) {
      list_again_ = true;
      return;
    }
    listing_ = true;
  }
  std::weak_ptr<server> weak = weak_from_this();
  list_tools([weak](listing l) {
    auto self = weak.lock();
    if (!self) return;
    // A failed re-listing keeps the tools as they were.
    if (auto* tools = std::get_if<std::vector<json::value>>(&l)) self->apply(*tools);
    bool again;
    {
      std::lock_guard lock(self->mutex_);
      self->listing_ = false;
      again = std::exchange(self->list_again_, false);
    }
    if (again) self->relist();
  });
}

void server::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    for (const auto& name : registered_) registry_->remove(name);
    registered_.clear();
  }
  client_->close();
}

}  // namespace troupe::mcp
