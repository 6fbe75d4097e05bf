// The caller's conversations: list, one with its last messages, its trace,
// archive, delete and fork. Another user's conversation is not found.

#include "apps/serve/route_context.hpp"

#include "apps/thread_output.hpp"
#include "runtime/clock.hpp"

#include <boost/json/array.hpp>

namespace troupe::serve {

namespace json = boost::json;

namespace {

void list(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  const std::size_t most = ctx.config.limits.max_listed;
  auto limit = count_param(ex, "limit", std::min<std::size_t>(20, most), most);
  if (!limit) return;
  auto offset = count_param(ex, "offset", 0, 1'000'000'000);
  if (!offset) return;
  auto found = ctx.agents.store().conversations->list_conversations(ex->user(), *limit, *offset);
  if (!found) return respond_store_error(ex, found.error());
  json::array data;
  for (const conversation& c : *found) data.push_back(to_json(c));
  ex->respond(json_response(http::status::ok, {{"data", std::move(data)}}));
}

void get_one(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto messages = count_param(ex, "messages", 20, ctx.config.limits.max_listed);
  if (!messages) return;
  auto c = owned_conversation(ctx, ex, ex->param("id"));
  if (!c) return;
  auto history = ctx.agents.store().conversations->history(c->id, *messages);
  if (!history) return respond_store_error(ex, history.error());
  json::array list;
  for (const entry& e : *history)
    list.push_back({{"seq", e.seq},
                    {"role", string_field(e.payload, "role").value_or("")},
                    {"content", string_field(e.payload, "content").value_or("")},
                    {"at", e.at}});
  json::object body = to_json(*c).as_object();
  body["messages"] = std::move(list);
  body["running_turns"] = ctx.turns.unfinished(c->id).size();
  ex->respond(json_response(http::status::ok, body));
}

void trace(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto c = owned_conversation(ctx, ex, ex->param("id"));
  if (!c) return;
  auto tr = ctx.agents.store().conversations->trace(c->id);
  if (!tr) return respond_store_error(ex, tr.error());
  ex->respond(json_response(http::status::ok, {{"conversation", to_json(tr->about)},
                                               {"totals", to_json(tr->totals)},
                                               {"entries", cli::entries_json(tr->log)}}));
}

void archive(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto c = owned_conversation(ctx, ex, ex->param("id"));
  if (!c) return;
  auto done = ctx.agents.store().conversations->archive_conversation(c->id);
  if (!done) return respond_store_error(ex, done.error());
  ex->respond(json_response(http::status::ok, to_json(*done)));
}

void remove(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto c = owned_conversation(ctx, ex, ex->param("id"));
  if (!c) return;
  // Turns still running would write to a thread that is gone.
  for (const auto& t : ctx.turns.unfinished(c->id)) t->cancel("the conversation was deleted");
  auto done = ctx.agents.store().conversations->delete_conversation(c->id);
  if (!done) return respond_store_error(ex, done.error());
  ex->respond(json_response(http::status::ok, {{"id", c->id}, {"deleted", true}}));
}

// A fork's answer: the conversation with where it was forked from.
http_response fork_answer(const conversation& child, const json::value& forked_from) {
  json::object out = to_json(child).as_object();
  out["forked_from"] = forked_from;
  return json_response(http::status::created, out);
}

// A new conversation of the same user and platform whose thread holds the
// original's entries up to at_seq; its chat id is the original's plus
// "~fork_…", so the original's chat keeps its own conversation. With an
// Idempotency-Key the chat id is made from the key, so a repeat finds the
// fork its first request made (its metadata says where from) and answers
// with it instead of forking again.
void fork(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto body = json_body(ex);
  if (!body) return;
  const json::value* at = body->if_contains("at_seq");
  if (!at || !at->is_number() || at->to_number<double>() < 0)
    return ex->respond(
        error_response(http::status::bad_request, "missing_field", "at_seq is required: a non-negative integer"));
  boost::system::error_code ec;
  const auto at_seq = at->to_number<std::uint64_t>(ec);
  if (ec)
    return ex->respond(
        error_response(http::status::bad_request, "missing_field", "at_seq is required: a non-negative integer"));
  const std::string idem(ex->request()["Idempotency-Key"]);
  if (!idem.empty() && !valid_idempotency_key(idem))
    return ex->respond(error_response(http::status::bad_request, "invalid_header", invalid_idempotency_key));
  auto c = owned_conversation(ctx, ex, ex->param("id"));
  if (!c) return;
  auto& convs = *ctx.agents.store().conversations;
  const std::string suffix = idem.empty() ? ids_of_this_thread().next("fork") : "fork-key_" + idem;
  auto child = convs.get_or_create_conversation({c->user_id, c->platform, c->platform_identifier + "~" + suffix});
  if (!child) return respond_store_error(ex, child.error());
  const json::value forked_from{{"conversation_id", c->id}, {"at_seq", at_seq}};
  // True once answered with the fork this key made already (or 422 for a
  // key used for another fork).
  auto made_already = [&](const conversation& existing) -> bool {
    const json::value* made = existing.metadata.if_contains("forked_from");
    if (!made) return false;
    if (*made != forked_from)
      ex->respond(error_response(http::status::unprocessable_entity, "idempotency_key_reused",
                                 "this Idempotency-Key was used for another fork"));
    else
      ex->respond(fork_answer(existing, forked_from));
    return true;
  };
  if (!idem.empty() && made_already(*child)) return;
  auto forked = ctx.agents.store().threads->fork(c->thread_id, at_seq, child->thread_id, wall_clock_ms());
  if (!forked) {
    // A request with the same key forked first: its answer, once it has
    // recorded where it forked from; else this one records it.
    const bool raced = !idem.empty() && forked.error().type == "conflict";
    if (raced) {
      auto now = convs.find_conversation(child->id);
      if (now && made_already(*now)) return;
    } else {
      (void)convs.delete_conversation(child->id);
      return respond_store_error(ex, forked.error());
    }
  }
  json::object metadata = c->metadata;
  metadata["forked_from"] = forked_from;
  auto fresh = convs.set_conversation_metadata(child->id, metadata);
  ex->respond(fork_answer(fresh ? *fresh : *child, forked_from));
}

using handler_fn = void (*)(route_context&, const std::shared_ptr<exchange>&);

route_handler on_worker_with(route_context& ctx, handler_fn f) {
  return [&ctx, f](const std::shared_ptr<exchange>& ex) {
    on_worker(ctx, ex, [&ctx, f](const std::shared_ptr<exchange>& e) { f(ctx, e); });
  };
}

}  // namespace

void add_conversation_routes(router& r, route_context& ctx) {
  r.add(http::verb::get, "/v1/conversations", on_worker_with(ctx, list));
  r.add(http::verb::get, "/v1/conversations/{id}", on_worker_with(ctx, get_one));
  r.add(http::verb::get, "/v1/conversations/{id}/trace", on_worker_with(ctx, trace));
  r.add(http::verb::post, "/v1/conversations/{id}/archive", on_worker_with(ctx, archive));
  r.add(http::verb::delete_, "/v1/conversations/{id}", on_worker_with(ctx, remove));
  r.add(http::verb::post, "/v1/conversations/{id}/fork", on_worker_with(ctx, fork));
}

}  // namespace troupe::serve
