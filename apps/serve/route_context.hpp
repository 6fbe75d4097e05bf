#pragma once
// What the server's own routes share, and the helpers they answer with.

#include "apps/serve/config.hpp"
#include "apps/serve/deployment.hpp"
#include "apps/serve/exchange.hpp"
#include "apps/serve/router.hpp"
#include "apps/serve/turn_registry.hpp"
#include "apps/serve/turn_runner.hpp"
#include "runtime/random_ids.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json/object.hpp>

#include <atomic>
#include <memory>
#include <optional>

namespace troupe::serve {

struct route_context {
  const serve_config& config;
  deployment& agents;
  turn_registry& turns;
  turn_context& runner;
  boost::asio::thread_pool& workers;
  const std::atomic<bool>& draining;
};

// Runs `f` on a worker (store calls block); an exception becomes a 500.
void on_worker(route_context& ctx, const std::shared_ptr<exchange>& ex,
               std::function<void(const std::shared_ptr<exchange>&)> f);

// The store's error as an HTTP answer: not_found 404, invalid 400, conflict 409, others 503.
// Ids made by the routes (requests, forks, seeded threads), from a source
// kept per thread.
random_ids& ids_of_this_thread();

void respond_store_error(const std::shared_ptr<exchange>& ex, const store_error& e);

// A user at limits.max_turns_per_user: the error's type and message (429).
inline constexpr std::string_view too_many_turns_type = "too_many_turns";
std::string too_many_turns(const route_context& ctx);

// When the client of `stream` goes away: `subscription` to `t` ends, and
// the turn is cancelled if the agent's policy says so.
void follow_disconnect(const std::shared_ptr<event_stream>& stream, const std::shared_ptr<turn>& t,
                       std::uint64_t subscription, bool cancel_on_disconnect);

// One agent answers a conversation (its thread has one writer): binds the
// conversation to `agent_id` the first time, or answers 409 (or the
// store's error) and returns false when another agent answers it.
bool bind_agent(route_context& ctx, const std::shared_ptr<exchange>& ex, const conversation& conv,
                const std::string& agent_id);

// An Idempotency-Key is 1 to 200 printable ASCII characters: it becomes
// part of request ids and stored identifiers.
bool valid_idempotency_key(std::string_view key);
inline constexpr std::string_view invalid_idempotency_key =
    "Idempotency-Key must be 1 to 200 printable ASCII characters";

// The body as a JSON object, or nullopt after answering 400.
std::optional<boost::json::object> json_body(const std::shared_ptr<exchange>& ex);

// A non-negative integer query parameter (`fallback` when absent), or
// nullopt after answering 400 naming it.
std::optional<std::uint64_t> count_param(const std::shared_ptr<exchange>& ex, std::string_view name,
                                         std::uint64_t fallback, std::uint64_t max);

// POST /v1/conversations/{platform}/{chat_id}/messages and GET /v1/conversations/{id}/events.
void add_message_routes(router& r, route_context& ctx);
// GET /v1/conversations/{id}/pending and POST /v1/conversations/{id}/decisions.
void add_approval_routes(router& r, route_context& ctx);
// List, get, trace, archive, delete and fork.
void add_conversation_routes(router& r, route_context& ctx);

// The user's conversation, or nullopt after answering 404 (another user's
// conversation is not found either) or the store's error.
std::optional<conversation> owned_conversation(route_context& ctx, const std::shared_ptr<exchange>& ex,
                                               const std::string& id);
// GET /v1/agents, /healthz, /readyz.
void add_service_routes(router& r, route_context& ctx);

}  // namespace troupe::serve
