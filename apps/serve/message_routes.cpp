// POST /v1/conversations/{platform}/{chat_id}/messages: a user's message to
// an agent, answered as one JSON object or as an event stream; and
// GET /v1/conversations/{id}/events: a reconnect to a turn's stream.

#include "apps/serve/route_context.hpp"
#include "apps/serve/thread_replay.hpp"
#include "apps/serve/turn_json.hpp"

#include <charconv>

namespace troupe::serve {

namespace json = boost::json;

namespace {

// A turn's events to a stream from `after` on, or its result as one object.
void serve_turn(const std::shared_ptr<exchange>& ex, const std::shared_ptr<turn>& t, std::uint64_t after,
                bool as_stream, bool cancel_on_disconnect) {
  if (!as_stream) {
    t->when_finished([ex, ids = t->ids()](const turn_result& r) { ex->respond(answer_response(ids, r)); });
    return;
  }
  auto stream = ex->open_stream();
  if (!stream) return;
  const std::uint64_t sub = t->subscribe(after, [stream](const sse_event& e, bool last) {
    stream->send(e);
    if (last) stream->close();
  });
  // An ended turn read from past its last event has nothing more to send.
  if (sub == 0) return stream->close();
  follow_disconnect(stream, t, sub, cancel_on_disconnect);
}

// A turn told from its thread, to a stream from `after` on or as one object.
void serve_replay(const std::shared_ptr<exchange>& ex, const replayed_turn& r, const turn_ids& ids, std::uint64_t after,
                  bool as_stream) {
  if (!as_stream) {
    ex->respond(answer_response(ids, *r.result));
    return;
  }
  auto stream = ex->open_stream();
  if (!stream) return;
  // As a finished turn in memory tells them: a reader who saw part of a delta gets the rest of it.
  finished_turn(r, ids)->subscribe(after, [&stream](const sse_event& e, bool) { stream->send(e); });
  stream->close();
}

void post_message(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto body = json_body(ex);
  if (!body) return;
  auto text_field = [&](const char* name) -> std::optional<std::string> {
    const json::value* v = body->if_contains(name);
    if (!v || !v->is_string() || v->as_string().empty()) {
      ex->respond(error_response(http::status::bad_request, "missing_field",
                                 std::string(name) + " is required: a non-empty string"));
      return std::nullopt;
    }
    return std::string(v->as_string());
  };
  const auto agent_id = text_field("agent");
  if (!agent_id) return;
  const auto content = text_field("content");
  if (!content) return;
  const deployed_agent* a = ctx.agents.find(*agent_id);
  if (!a) return ex->respond(error_response(http::status::not_found, "unknown_agent", "no agent " + *agent_id));
  const std::string idem(ex->request()["Idempotency-Key"]);
  if (!idem.empty() && !valid_idempotency_key(idem))
    return ex->respond(error_response(http::status::bad_request, "invalid_header", invalid_idempotency_key));

  auto conv = ctx.agents.store().conversations->get_or_create_conversation(
      {ex->user(), ex->param("platform"), ex->param("chat_id")});
  if (!conv) return respond_store_error(ex, conv.error());
  if (!bind_agent(ctx, ex, *conv, *agent_id)) return;

  turn_ids ids{{}, conv->id, conv->thread_id, *agent_id, ex->user(), *content, idem};
  ids.traceparent = std::string(ex->request()["traceparent"]);
  // A retried POST finds its turn by a request id made from its key: in
  // memory while the server holds the turn, else in the thread.
  ids.request_id = idem.empty() ? ids_of_this_thread().next("req") : "idem-" + conv->id + "-" + idem;
  const bool as_stream = ex->wants_event_stream();
  auto reused = [&](const std::string& original) {
    if (original == *content) return false;
    ex->respond(error_response(http::status::unprocessable_entity, "idempotency_key_reused",
                               "this Idempotency-Key was used for another message"));
    return true;
  };
  if (!idem.empty() && !ctx.turns.by_request(ids.request_id)) {
    if (auto r = stored_turn(ctx.agents.store(), conv->id, ids)) {
      if (reused(r->content)) return;
      // Started and never ended: its process died under it (a crash, a
      // cluster node lost). The retry continues it from where its thread
      // stands, without committing the message again.
      if (!r->result) ids.continues = true;
      // A turn cut by a shutdown was never answered (its client was told
      // 503, retryable): the retry runs it, under the same request id.
      else if (!cut_by_shutdown(*r->result))
        return serve_replay(ex, *r, ids, 0, as_stream);
    }
  }

  auto admitted =
      ctx.turns.admit_turn(conv->id, ids.request_id, ids.user, a->config.on_double_text, a->config.max_queued_asks,
                           ctx.config.limits.max_turns_per_user, [&] { return std::make_shared<turn>(ids); });
  switch (admitted.verdict) {
    case admission_verdict::existing:
      if (reused(admitted.started->ids().content)) return;
      return serve_turn(ex, admitted.started, 0, as_stream, a->config.cancel_on_disconnect);
    case admission_verdict::busy:
      return ex->respond(error_response(
          http::status::conflict, "busy",
          "a turn of this conversation is still running, and agent " + *agent_id + " rejects messages meanwhile"));
    case admission_verdict::queue_full: {
      http_response r = error_response(
          http::status::too_many_requests, error_type::queue_full,
          "this conversation has " + std::to_string(a->config.max_queued_asks) + " messages waiting already");
      r.set(http::field::retry_after, "1");
      return ex->respond(std::move(r));
    }
    case admission_verdict::user_limit: {
      http_response r = error_response(http::status::too_many_requests, too_many_turns_type, too_many_turns(ctx));
      r.set(http::field::retry_after, "1");
      return ex->respond(std::move(r));
    }
    case admission_verdict::start_after_interrupt:
      for (const auto& old : admitted.to_interrupt) old->cancel("interrupted by a newer message");
      break;
    case admission_verdict::start:
      break;
  }
  // The answer is subscribed before the turn runs, so a fast turn cannot end unseen.
  serve_turn(ex, admitted.started, 0, as_stream, a->config.cancel_on_disconnect);
  run_turn(ctx.runner, admitted.started, *a);
}

void reconnect(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto conv = owned_conversation(ctx, ex, ex->param("id"));
  if (!conv) return;
  std::uint64_t after = 0;
  if (ex->query("after")) {
    auto n = count_param(ex, "after", 0, UINT64_MAX);
    if (!n) return;
    after = *n;
  } else if (const std::string last = std::string(ex->request()["Last-Event-ID"]); !last.empty()) {
    auto [end, ec] = std::from_chars(last.data(), last.data() + last.size(), after);
    if (ec != std::errc{} || end != last.data() + last.size())
      return ex->respond(error_response(http::status::bad_request, "invalid_header", "Last-Event-ID must be a number"));
  }
  std::string request_id = ex->query("request_id").value_or("");
  // The id a client saw last names its turn, whichever turn runs now.
  if (request_id.empty())
    if (auto r = request_of_event(ctx.agents.store(), conv->id, after)) request_id = std::move(*r);
  std::shared_ptr<turn> t = request_id.empty() ? ctx.turns.current(conv->id) : ctx.turns.by_request(request_id);
  if (t && t->ids().conversation_id == conv->id) {
    const deployed_agent* a = ctx.agents.find(t->ids().agent_id);
    return serve_turn(ex, t, after, true, a && a->config.cancel_on_disconnect);
  }
  turn_ids ids{request_id, conv->id, conv->thread_id, {}, ex->user(), {}, {}};
  auto stored = stored_turn(ctx.agents.store(), conv->id, ids);
  if (stored && stored->result) return serve_replay(ex, *stored, ids, after, true);
  // Unended in the thread, unknown here: in a cluster another node runs it
  // (or ran it, and may have died), and its entries reach this node through
  // the store they share.
  if (stored && ctx.agents.node()) {
    const auto bound = string_field(conv->metadata, "agent");
    const deployed_agent* a = bound ? ctx.agents.find(std::string(*bound)) : nullptr;
    if (a) {
      ids.agent_id = a->config.id;
      ids.request_id = stored->request_id;
      ids.content = stored->content;
      // If the node that ran it died with it, nothing runs it now: asked
      // again as a retry, it goes on wherever its agent runs, from where its
      // thread stands. If it still runs, the holder refuses the repeat
      // (duplicate_request) and nothing changes. Either way what it commits
      // reaches the follower through the store.
      ask_again(*a, ids);
      return serve_turn(ex, follow_elsewhere(ctx.runner, *a, ids, stored), after, true, false);
    }
  }
  ex->respond(
      error_response(http::status::not_found, "not_found", "no turn of conversation " + conv->id + " to replay"));
}

}  // namespace

void add_message_routes(router& r, route_context& ctx) {
  r.add(http::verb::post, "/v1/conversations/{platform}/{chat_id}/messages",
        [&ctx](const std::shared_ptr<exchange>& ex) { on_worker(ctx, ex, [&ctx](auto& e) { post_message(ctx, e); }); });
  r.add(http::verb::get, "/v1/conversations/{id}/events",
        [&ctx](const std::shared_ptr<exchange>& ex) { on_worker(ctx, ex, [&ctx](auto& e) { reconnect(ctx, e); }); });
}

}  // namespace troupe::serve
