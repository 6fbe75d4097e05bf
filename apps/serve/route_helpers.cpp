#include "apps/serve/route_context.hpp"

#include "apps/serve/client_error.hpp"
#include "json/json_parse.hpp"
#include "thread/entry.hpp"

#include <charconv>

namespace troupe::serve {

namespace json = boost::json;

void on_worker(route_context& ctx, const std::shared_ptr<exchange>& ex,
               std::function<void(const std::shared_ptr<exchange>&)> f) {
  boost::asio::post(ctx.workers, [ex, f = std::move(f)] {
    try {
      f(ex);
    } catch (const std::exception& e) {
      ex->respond(
          error_response(http::status::internal_server_error, "internal", client_message("internal", e.what())));
    }
  });
}

random_ids& ids_of_this_thread() {
  // Seeding a source reads std::random_device (a system call): one per
  // I/O or worker thread instead of one per request.
  thread_local random_ids ids;
  return ids;
}

void respond_store_error(const std::shared_ptr<exchange>& ex, const store_error& e) {
  // The caller's mistakes keep the store's type; the store's own failures
  // are a 503 named as such.
  http::status s = http::status::service_unavailable;
  if (e.type == "not_found") s = http::status::not_found;
  if (e.type == "invalid") s = http::status::bad_request;
  if (e.type == "conflict") s = http::status::conflict;
  const std::string type = s == http::status::service_unavailable ? "store_" + e.type : e.type;
  ex->respond(error_response(s, type, client_message(type, e.message)));
}

std::string too_many_turns(const route_context& ctx) {
  return "you have " + std::to_string(ctx.config.limits.max_turns_per_user) +
         " turns running or queued already (max_turns_per_user); wait for one to finish";
}

void follow_disconnect(const std::shared_ptr<event_stream>& stream, const std::shared_ptr<turn>& t,
                       std::uint64_t subscription, bool cancel_on_disconnect) {
  stream->on_disconnect([weak = std::weak_ptr<turn>(t), subscription, cancel_on_disconnect](const std::string& why) {
    auto t = weak.lock();
    if (!t) return;
    t->unsubscribe(subscription);
    if (cancel_on_disconnect) t->cancel(why);
  });
}

bool bind_agent(route_context& ctx, const std::shared_ptr<exchange>& ex, const conversation& conv,
                const std::string& agent_id) {
  std::optional<conversation> claimed;
  auto bound = string_field(conv.metadata, "agent");
  if (!bound) {
    // Claimed in the store, atomically: of two first messages naming
    // different agents at once (on this server or another), one binds it.
    auto c = ctx.agents.store().conversations->claim_conversation_metadata(conv.id, "agent", json::value(agent_id));
    if (!c) {
      respond_store_error(ex, c.error());
      return false;
    }
    claimed = std::move(*c);
    bound = string_field(claimed->metadata, "agent");
  }
  if (bound && *bound != agent_id) {
    ex->respond(error_response(http::status::conflict, "agent_mismatch",
                               "this conversation is answered by agent " + std::string(*bound) +
                                   "; start another chat to talk to " + agent_id));
    return false;
  }
  return true;
}

bool valid_idempotency_key(std::string_view key) {
  if (key.empty() || key.size() > 200) return false;
  for (unsigned char c : key)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

std::optional<json::object> json_body(const std::shared_ptr<exchange>& ex) {
  boost::system::error_code ec;
  json::value v = parse_json(ex->request().body(), ec);
  if (ec || !v.is_object()) {
    ex->respond(error_response(http::status::bad_request, "invalid_json",
                               ec ? "the body is not valid JSON: " + ec.message() : "the body must be a JSON object"));
    return std::nullopt;
  }
  return std::move(v.as_object());
}

std::optional<std::uint64_t> count_param(const std::shared_ptr<exchange>& ex, std::string_view name,
                                         std::uint64_t fallback, std::uint64_t max) {
  auto text = ex->query(name);
  if (!text) return fallback;
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc{} || end != text->data() + text->size() || text->empty() || v > max) {
    ex->respond(error_response(http::status::bad_request, "invalid_parameter",
                               std::string(name) + " must be an integer from 0 to " + std::to_string(max)));
    return std::nullopt;
  }
  return v;
}

std::optional<conversation> owned_conversation(route_context& ctx, const std::shared_ptr<exchange>& ex,
                                               const std::string& id) {
  auto found = ctx.agents.store().conversations->find_conversation(id);
  if (!found && found.error().type != "not_found") {
    respond_store_error(ex, found.error());
    return std::nullopt;
  }
  if (!found || found->user_id != ex->user()) {
    ex->respond(error_response(http::status::not_found, "not_found", "no conversation " + id));
    return std::nullopt;
  }
  return std::move(*found);
}

}  // namespace troupe::serve
