// GET /v1/conversations/{id}/pending: the tool calls of the conversation's
// thread that wait for a person; POST /v1/conversations/{id}/decisions: a
// person's decision on one of them. The pause is in the thread (approval
// requests and decisions are entries), so both read it there, and a
// decision's continuation is told from the thread once the request pauses
// again or ends.

#include "apps/serve/client_error.hpp"
#include "apps/serve/route_context.hpp"
#include "apps/serve/thread_replay.hpp"
#include "apps/serve/turn_json.hpp"

#include "runtime/tools/tool_registry.hpp"
#include "strategy/approvals.hpp"

#include <boost/json/parse.hpp>

#include <atomic>
#include <memory>

namespace troupe::serve {

namespace json = boost::json;

namespace {

// The agent that answers the conversation, or null (none has yet).
const deployed_agent* agent_of(route_context& ctx, const conversation& c) {
  const auto bound = string_field(c.metadata, "agent");
  return bound ? ctx.agents.find(std::string(*bound)) : nullptr;
}

std::optional<thread_view> thread_of(const std::shared_ptr<exchange>& ex, const deployed_agent& a,
                                     const conversation& c) {
  auto t = a.handle.snapshot(c.thread_id, std::chrono::seconds(5));
  if (!t)
    ex->respond(error_response(http::status::service_unavailable, error_type::agent_stopped,
                               "agent " + a.config.id + " did not show its thread in time"));
  return t;
}

void list_pending(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto conv = owned_conversation(ctx, ex, ex->param("id"));
  if (!conv) return;
  json::array data;
  if (const deployed_agent* a = agent_of(ctx, *conv)) {
    auto t = thread_of(ex, *a, *conv);
    if (!t) return;
    // A thread has one request at a time: its open approvals are one request's.
    const auto open = open_approval_requests(*t);
    if (!open.empty()) {
      const std::string request_id(open.front()->refs.request_id());
      for (const open_approval& call : pending_approvals(*t, request_id)) data.push_back(event_data(request_id, call));
    }
  }
  ex->respond(json_response(http::status::ok, {{"data", std::move(data)}}));
}

// A decision the runtime refused: nothing changed.
std::optional<http::status> status_of_refusal(std::string_view type) {
  if (type == error_type::not_found) return http::status::not_found;
  if (type == error_type::already_decided || type == error_type::duplicate_request) return http::status::conflict;
  if (type == error_type::expired) return http::status::gone;
  if (type == error_type::invalid_query) return http::status::bad_request;
  return std::nullopt;
}

// The request the decision went to, told from its thread: its events from
// the decision's own on (as a stream), or where it stands (as one object).
// `failure`: what ended the wait for the request, when the thread does not
// show it paused or ended (its deadline passed, the server stops).
void answer_from_thread(route_context& ctx, const std::shared_ptr<exchange>& ex, const turn_ids& ids,
                        const std::string& tool_call_id, const std::optional<error_info>& failure = std::nullopt) {
  auto r = stored_turn(ctx.agents.store(), ids.conversation_id, ids);
  if (!r || !r->result) {
    if (failure)
      return ex->respond(error_response(status_of_error(failure->type), failure->type,
                                        client_message(failure->type, failure->message)));
    return ex->respond(error_response(http::status::conflict, "turn_incomplete",
                                      "the request of this decision has not paused again or ended"));
  }
  auto t = finished_turn(*r, ids);
  // Reconnects (GET …/events) find the request with what its decisions added.
  ctx.turns.keep(t);
  if (!ex->wants_event_stream()) return ex->respond(answer_response(t->ids(), *t->result()));
  std::uint64_t after = 0;
  for (const sse_event& e : r->events)
    if (e.name == "approval_decision") {
      const json::value data = json::parse(e.data);
      if (const json::value* id = data.as_object().if_contains("tool_call_id");
          id && id->is_string() && id->as_string() == tool_call_id)
        after = e.id - 1;
    }
  auto stream = ex->open_stream();
  if (!stream) return;
  t->subscribe(after, [&stream](const sse_event& e, bool) { stream->send(e); });
  stream->close();
}

std::optional<std::string> optional_text(const std::shared_ptr<exchange>& ex, const json::object& body,
                                         const char* name, bool& ok) {
  const json::value* v = body.if_contains(name);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_string()) {
    ok = false;
    ex->respond(error_response(http::status::bad_request, "invalid_field", std::string(name) + " must be a string"));
    return std::nullopt;
  }
  return std::string(v->as_string());
}

void post_decision(route_context& ctx, const std::shared_ptr<exchange>& ex) {
  auto body = json_body(ex);
  if (!body) return;
  bool ok = true;
  const auto tool_call_id = optional_text(ex, *body, "tool_call_id", ok);
  if (!ok) return;
  const auto verdict_text = optional_text(ex, *body, "verdict", ok);
  if (!ok) return;
  const auto message = optional_text(ex, *body, "message", ok);
  if (!ok) return;
  const auto request_id = optional_text(ex, *body, "request_id", ok);
  if (!ok) return;
  if (!tool_call_id || tool_call_id->empty())
    return ex->respond(
        error_response(http::status::bad_request, "missing_field", "tool_call_id is required: a non-empty string"));
  const auto v = verdict_text ? parse_verdict(*verdict_text) : std::nullopt;
  if (!v)
    return ex->respond(
        error_response(http::status::bad_request, "invalid_field", "verdict is required: approve, reject or edit"));
  const json::value* arguments = body->if_contains("arguments");
  if (*v == verdict::edit && (!arguments || !arguments->is_object()))
    return ex->respond(
        error_response(http::status::bad_request, "missing_field", "arguments is required for edit: a JSON object"));
  if (*v != verdict::edit && arguments && !arguments->is_null())
    return ex->respond(error_response(http::status::bad_request, "invalid_field", "arguments go with edit only"));
  const std::string idem(ex->request()["Idempotency-Key"]);
  if (!idem.empty() && !valid_idempotency_key(idem))
    return ex->respond(error_response(http::status::bad_request, "invalid_header", invalid_idempotency_key));

  auto conv = owned_conversation(ctx, ex, ex->param("id"));
  if (!conv) return;
  const deployed_agent* a = agent_of(ctx, *conv);
  auto not_waiting = [&] {
    ex->respond(
        error_response(http::status::not_found, error_type::not_found,
                       "no tool call " + *tool_call_id + " of conversation " + conv->id + " was asked for a decision"));
  };
  if (!a) return not_waiting();
  auto t = thread_of(ex, *a, *conv);
  if (!t) return;
  // The approval request names the call's request and tool.
  const entry* asked = nullptr;
  for (const entry* e : t->of_kind(entry_kind::approval_request))
    if (string_field(e->refs, "tool_call_id") == *tool_call_id &&
        (!request_id || string_field(e->refs, "request_id") == *request_id))
      asked = e;
  if (!asked) return not_waiting();

  decision d;
  d.request_id = std::string(string_field(asked->refs, "request_id").value_or(""));
  d.tool_call_id = *tool_call_id;
  d.answer = *v;
  d.message = message.value_or("");
  if (*v == verdict::edit) d.arguments = arguments->as_object();
  d.decided_by = ex->user();
  d.idempotency_key = idem;
  turn_ids ids{d.request_id, conv->id, conv->thread_id, a->config.id, ex->user(), {}, idem};

  if (*v == verdict::edit) {
    const std::string tool_name(string_field(asked->payload, "tool").value_or(""));
    if (auto tool = ctx.agents.tool(tool_name))
      if (auto wrong = tool->validate(d.arguments))
        return ex->respond(error_response(http::status::unprocessable_entity, wrong->type,
                                          "the edited arguments do not fit tool " + tool_name + ": " + wrong->message));
  }
  if (!idem.empty())
    if (const entry* taken = find_decision(*t, d.request_id, d.tool_call_id, idem)) {
      const json::object p = taken->payload.to_json();
      const json::value* args = p.if_contains("arguments");
      if (string_field(p, "verdict") != *verdict_text || string_field(p, "message").value_or("") != d.message ||
          (*v == verdict::edit && (!args || *args != *arguments)))
        return ex->respond(error_response(http::status::unprocessable_entity, "idempotency_key_reused",
                                          "this Idempotency-Key was used for another decision"));
      // Taken already: answered as the first was, from where the request stands.
      if (auto r = stored_turn(ctx.agents.store(), conv->id, ids); r && r->result)
        return answer_from_thread(ctx, ex, ids, d.tool_call_id);
    }

  if (!ctx.turns.hold_continuation(ids.user, ctx.config.limits.max_turns_per_user)) {
    http_response r = error_response(http::status::too_many_requests, too_many_turns_type, too_many_turns(ctx));
    r.set(http::field::retry_after, "1");
    return ex->respond(std::move(r));
  }
  ask_options o;
  o.thread_id = conv->thread_id;
  o.deadline = a->config.request_deadline;
  // on_reply may come twice (a paused reply, then a cancel's): the hold ends once.
  o.on_reply = [&ctx, ex, ids, tool_call_id = d.tool_call_id,
                held = std::make_shared<std::atomic<bool>>(true)](const reply& r) {
    if (held->exchange(false)) ctx.turns.continuation_ended(ids.user);
    const auto* e = std::get_if<error_info>(&r.outcome);
    if (e && !r.paused())
      if (auto status = status_of_refusal(e->type)) return ex->respond(error_response(*status, e->type, e->message));
    // Reading the thread blocks: not on the runtime's thread.
    std::optional<error_info> failure;
    if (e) failure = *e;
    on_worker(ctx, ex, [&ctx, ids, tool_call_id, failure](const std::shared_ptr<exchange>& x) {
      answer_from_thread(ctx, x, ids, tool_call_id, failure);
    });
  };
  (void)a->handle.decide(std::move(d), std::move(o));
}

}  // namespace

void add_approval_routes(router& r, route_context& ctx) {
  r.add(http::verb::get, "/v1/conversations/{id}/pending",
        [&ctx](const std::shared_ptr<exchange>& ex) { on_worker(ctx, ex, [&ctx](auto& e) { list_pending(ctx, e); }); });
  r.add(http::verb::post, "/v1/conversations/{id}/decisions", [&ctx](const std::shared_ptr<exchange>& ex) {
    on_worker(ctx, ex, [&ctx](auto& e) { post_decision(ctx, e); });
  });
}

}  // namespace troupe::serve
