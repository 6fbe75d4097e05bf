// POST /v1/chat/completions: OpenAI's chat completions API, where `model`
// names a troupe agent. Stateless by default: the caller's messages seed a
// fresh thread (written to the store before the turn, so the agent loads
// it as it loads any thread, and removed once the turn has ended). With
// `user` and an X-Troupe-Conversation header the turn continues the
// caller's stored conversation for that chat instead, whose thread is the
// history (only the last message is new).

#include "apps/serve/openai_routes.hpp"
#include "apps/serve/client_error.hpp"
#include "apps/serve/openai_chat.hpp"
#include "apps/serve/route_context.hpp"
#include "apps/serve/thread_replay.hpp"
#include "apps/serve/turn_json.hpp"
#include "json/json_parse.hpp"

#include "runtime/clock.hpp"

namespace troupe::serve {

namespace json = boost::json;

namespace {

constexpr std::string_view conversation_header = "X-Troupe-Conversation";
constexpr std::size_t max_conversation_header = 200;

http_response completion_response(const std::string& body) {
  http_response r{http::status::ok, 11};
  r.set(http::field::content_type, "application/json");
  r.body() = body;
  r.prepare_payload();
  return r;
}

// One data-only SSE line, as OpenAI streams them (no event name, no id).
sse_event data_line(std::string data) { return {0, {}, std::move(data)}; }

// Tells a turn's events to an OpenAI client as chunks: the role first, text
// deltas as content, then the finish (and the usage when asked) and
// [DONE]; an error ends the stream with an error object, as OpenAI does.
// Tool calls run inside troupe and are not shown.
// Where a paused turn's decisions go: its conversation, or none for a
// stateless request (whose turn is keyed by its own seeded thread).
std::optional<std::string> decided_at(const turn& t) {
  if (t.ids().conversation_id.empty() || t.ids().conversation_id == t.ids().thread_id) return std::nullopt;
  return t.ids().conversation_id;
}

void stream_chunks(const std::shared_ptr<exchange>& ex, const std::shared_ptr<turn>& t, completion_header h,
                   bool include_usage, bool cancel_on_disconnect) {
  auto stream = ex->open_stream();
  if (!stream) return;
  const std::uint64_t sub =
      t->subscribe(0, [stream, h, include_usage, conversation_id = decided_at(*t)](const sse_event& e, bool last) {
        if (e.name == "conversation") {
          stream->send(data_line(role_chunk_json(h, include_usage)));
        } else if (e.name == "message.delta") {
          const json::value data = parse_json(e.data);
          const json::string* text = data.as_object().if_contains("text") ? data.at("text").if_string() : nullptr;
          if (text && !text->empty()) stream->send(data_line(content_chunk_json(h, *text, include_usage)));
        } else if (e.name == "message.completed") {
          stream->send(data_line(finish_chunk_json(h, include_usage)));
          if (include_usage) {
            token_usage u;
            const json::value data = parse_json(e.data);
            if (const json::value* usage = data.as_object().if_contains("usage"); usage && usage->is_object()) {
              u.input_tokens = usage->at("input_tokens").to_number<std::int64_t>();
              u.output_tokens = usage->at("output_tokens").to_number<std::int64_t>();
            }
            stream->send(data_line(usage_chunk_json(h, u)));
          }
          stream->send(data_line("[DONE]"));
        } else if (e.name == "error") {
          const json::value data = parse_json(e.data);
          if (const json::value* pending = data.as_object().if_contains("pending"); pending && pending->is_array()) {
            stream->send(data_line(json_text(paused_error_json(conversation_id, pending->as_array()))));
          } else {
            const json::object& err = data.at("error").as_object();
            const openai_error oe = turn_error(err.at("type").as_string(), err.at("message").as_string());
            stream->send(data_line(to_json_text(oe)));
          }
        }
        if (last) stream->close();
      });
  if (sub == 0) return;
  follow_disconnect(stream, t, sub, cancel_on_disconnect);
}

// `forget` (the seeded thread's removal) runs before the answer goes out,
// so a client that has its answer finds the store without that thread.
void answer_once(const std::shared_ptr<exchange>& ex, const std::shared_ptr<turn>& t, completion_header h,
                 std::function<void()> forget) {
  t->when_finished([ex, h, forget = std::move(forget), conversation_id = decided_at(*t)](const turn_result& r) {
    if (forget) forget();
    if (const auto* answer = std::get_if<std::string>(&r.outcome.outcome))
      return ex->respond(completion_response(completion_json(h, *answer, r.outcome.usage)));
    if (r.outcome.paused()) return ex->respond(paused_response(conversation_id, pending_json(r.outcome)));
    const auto& e = std::get<error_info>(r.outcome.outcome);
    ex->respond(openai_response(turn_error(e.type, client_message(e.type, e.message))));
  });
}

completion_header header_of(const turn& t, const chat_request& req) {
  return {"chatcmpl-" + t.ids().request_id, t.ids().asked_at_ms / 1000, req.model};
}

// A repeated Idempotency-Key: the first request's turn, answered again
// (joined while it runs), unless the key came with another question.
void answer_again(const std::shared_ptr<exchange>& ex, const std::shared_ptr<turn>& t, const std::string& question,
                  const chat_request& req, bool cancel_on_disconnect) {
  if (t->ids().content != question)
    return ex->respond(openai_response({422,
                                        "invalid_request_error",
                                        "this Idempotency-Key was used for another message",
                                        {},
                                        "idempotency_key_reused"}));
  if (req.stream) return stream_chunks(ex, t, header_of(*t, req), req.include_usage, cancel_on_disconnect);
  answer_once(ex, t, header_of(*t, req), {});
}

// A fresh thread holding the caller's earlier messages, in the store the
// agents load from; its id, or nullopt after answering the store's error.
std::optional<std::string> seed_thread(route_context& ctx, const std::shared_ptr<exchange>& ex,
                                       std::vector<entry_draft> history) {
  random_ids& ids = ids_of_this_thread();
  const std::string id = ids.next("openai");
  const std::int64_t now = wall_clock_ms();
  thread t(id, now, json::object{{"source", "openai_chat_completions"}});
  t.append(std::move(history), now, ids);
  if (auto stored = ctx.agents.store().threads->append(t, 0); !stored) {
    respond_store_error(ex, stored.error());
    return std::nullopt;
  }
  return id;
}

void post_chat_completion(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto parsed = parse_chat_request(ex->request().body());
  if (auto* e = std::get_if<openai_error>(&parsed)) return ex->respond(openai_response(*e));
  const chat_request& req = std::get<chat_request>(parsed);
  const deployed_agent* a = ctx.agents.find(req.model);
  if (!a)
    return ex->respond(openai_response({404, "invalid_request_error",
                                        "The model `" + req.model + "` does not exist: no agent has that id", "model",
                                        "model_not_found"}));
  auto made = to_turn(req);
  if (auto* e = std::get_if<openai_error>(&made)) return ex->respond(openai_response(*e));
  chat_turn& turn_in = std::get<chat_turn>(made);

  const std::string chat(ex->request()[conversation_header]);
  const std::string idem(ex->request()["Idempotency-Key"]);
  if (!idem.empty() && !valid_idempotency_key(idem))
    return ex->respond(openai_response(invalid_request("Idempotency-Key", std::string(invalid_idempotency_key))));
  turn_ids ids;
  ids.request_id = ids_of_this_thread().next("req");
  ids.asked_at_ms = wall_clock_ms();
  ids.agent_id = a->config.id;
  ids.user = ex->user();
  ids.traceparent = std::string(ex->request()["traceparent"]);
  ids.content = std::move(turn_in.question);
  ids.overrides.system_prompt = std::move(turn_in.system_prompt);
  ids.overrides.params = req.params;
  const bool stateless = chat.empty();
  if (stateless) {
    // A repeated key finds its turn by a request id made from the caller
    // and the key, before a thread is seeded for it.
    if (!idem.empty()) {
      ids.request_id = "idem-openai/" + conversation_identifier(ex->user(), idem);
      if (auto t = ctx.turns.by_request(ids.request_id))
        return answer_again(ex, t, ids.content, req, a->config.cancel_on_disconnect);
    }
    auto thread_id = seed_thread(ctx, ex, std::move(turn_in.history));
    if (!thread_id) return;
    ids.thread_id = *thread_id;
    // A key of its own: the turn queues behind nothing.
    ids.conversation_id = *thread_id;
  } else {
    if (chat.size() > max_conversation_header)
      return ex->respond(openai_response(invalid_request(
          std::string(conversation_header), std::string(conversation_header) + " must be at most 200 characters")));
    if (req.user.empty())
      return ex->respond(openai_response(
          invalid_request("user", "user is required with X-Troupe-Conversation: the conversation is the user's")));
    auto conv = ctx.agents.store().conversations->get_or_create_conversation(
        {ex->user(), "openai", conversation_identifier(req.user, chat)});
    if (!conv) return respond_store_error(ex, conv.error());
    if (!bind_agent(ctx, ex, *conv, a->config.id)) return;
    ids.conversation_id = conv->id;
    ids.thread_id = conv->thread_id;
    // As the conversations route makes it, so a key is one request on a conversation whichever route it came by.
    if (!idem.empty()) {
      ids.request_id = "idem-" + conv->id + "-" + idem;
      ids.idempotency_key = idem;
      // Not in memory (the server restarted, or the turn is long over): read back from the thread.
      if (!ctx.turns.by_request(ids.request_id))
        if (auto r = stored_turn(ctx.agents.store(), ids.conversation_id, ids)) {
          // Started and never ended (its process died under it): continued,
          // as the conversations route does.
          if (!r->result)
            ids.continues = true;
          else
            return answer_again(ex, finished_turn(*r, ids), ids.content, req, a->config.cancel_on_disconnect);
        }
    }
  }

  auto admitted = ctx.turns.admit_turn(ids.conversation_id, ids.request_id, ids.user, a->config.on_double_text,
                                       a->config.max_queued_asks, ctx.config.limits.max_turns_per_user,
                                       [&] { return std::make_shared<turn>(ids); });
  switch (admitted.verdict) {
    case admission_verdict::busy:
      return ex->respond(openai_response(
          {409,
           "conflict_error",
           "a turn of this conversation is still running, and agent " + req.model + " rejects messages meanwhile",
           {},
           "busy"}));
    case admission_verdict::queue_full:
      return ex->respond(openai_response(
          {429,
           "rate_limit_error",
           "this conversation has " + std::to_string(a->config.max_queued_asks) + " messages waiting already",
           {},
           std::string(error_type::queue_full)}));
    case admission_verdict::user_limit:
      return ex->respond(
          openai_response({429, "rate_limit_error", too_many_turns(ctx), {}, std::string(too_many_turns_type)}));
    case admission_verdict::start_after_interrupt:
      for (const auto& old : admitted.to_interrupt) old->cancel("interrupted by a newer message");
      break;
    case admission_verdict::existing:  // the same Idempotency-Key, raced or on a stored conversation
      if (stateless) ctx.agents.store().threads->remove(ids.thread_id);
      return answer_again(ex, admitted.started, ids.content, req, a->config.cancel_on_disconnect);
    case admission_verdict::start:
      break;
  }
  const std::shared_ptr<turn>& t = admitted.started;
  const completion_header h = header_of(*t, req);
  // The answer is subscribed before the turn runs, so a fast turn cannot end unseen.
  // A turn ends on a worker (turn_runner's complete), where a store call may block.
  std::function<void()> forget;
  if (stateless) forget = [&ctx, thread_id = ids.thread_id] { ctx.agents.store().threads->remove(thread_id); };
  if (req.stream) {
    stream_chunks(ex, t, h, req.include_usage, a->config.cancel_on_disconnect);
    if (forget) t->when_finished([forget](const turn_result&) { forget(); });
  } else {
    answer_once(ex, t, h, std::move(forget));
  }
  run_turn(ctx.runner, t, *a);
}

// OpenAI's model object for an agent (no creation time is kept: 0).
json::object model_object(const deployed_agent& a) {
  return {{"id", a.config.id}, {"object", "model"}, {"created", 0}, {"owned_by", "troupe"}};
}

}  // namespace

void add_openai_routes(router& r, route_context& ctx) {
  r.add(http::verb::get, "/v1/models",
        [&ctx](const std::shared_ptr<exchange>& ex) {
          json::array data;
          for (const deployed_agent& a : ctx.agents.agents()) data.emplace_back(model_object(a));
          ex->respond(json_response(http::status::ok, {{"object", "list"}, {"data", std::move(data)}}));
        },
        {.openai_errors = true});
  r.add(http::verb::get, "/v1/models/{model}",
        [&ctx](const std::shared_ptr<exchange>& ex) {
          const deployed_agent* a = ctx.agents.find(ex->param("model"));
          if (!a)
            return ex->respond(
                openai_response({404, "invalid_request_error",
                                 "The model `" + ex->param("model") + "` does not exist: no agent has that id", "model",
                                 "model_not_found"}));
          ex->respond(json_response(http::status::ok, model_object(*a)));
        },
        {.openai_errors = true});
  r.add(http::verb::post, "/v1/chat/completions",
        [&ctx](const std::shared_ptr<exchange>& ex) {
          on_worker(ctx, ex, [&ctx](auto& e) { post_chat_completion(ctx, e); });
        },
        {.openai_errors = true});
}

}  // namespace troupe::serve
