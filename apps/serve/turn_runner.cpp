#include "apps/serve/turn_runner.hpp"

#include "apps/serve/live_event_ids.hpp"
#include "apps/serve/turn_follower.hpp"
#include "apps/serve/turn_json.hpp"
#include "base/overloaded.hpp"

#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>

namespace troupe::serve {

namespace {

std::uint64_t seq_of_entry(const entry* e) { return e->seq; }
std::uint64_t seq_of_entry(const entry& e) { return e.seq; }

std::chrono::microseconds since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t);
}

// Ends `t` with `result` and its last event: the registry and the
// observers hear of it. `kept`: for repeats of the turn's key, which are
// answered from memory with this end from now on.
void end_turn(turn_context& ctx, const std::shared_ptr<turn>& t, const turn_result& result, std::string name,
              const boost::json::value& data, std::uint64_t last_id, bool kept) {
  // Unregistered first: whoever hears the answer finds the conversation free.
  ctx.turns.finished(t);
  t->finish(result, std::move(name), data, last_id);
  if (kept)
    ctx.turns.keep(t);
  else
    ctx.turns.forget(t);
  const auto first = t->first_agent_event();
  turn_record rec{t->ids().agent_id,
                  t->ids().conversation_id,
                  t->ids().request_id,
                  result.outcome.ok() ? "completed" : std::get<error_info>(result.outcome.outcome).type,
                  result.outcome.usage,
                  since(t->started()),
                  first ? std::chrono::duration_cast<std::chrono::microseconds>(*first - t->started())
                        : std::chrono::microseconds{0}};
  ctx.observers.each([&](serve_observer& o) { o.turn_finished(rec); });
}

bool failed_with(const reply& r, const char* type) {
  const auto* e = std::get_if<error_info>(&r.outcome);
  return e && e->type == type;
}

// The ends that say where the request got to, not how it ended: the node
// that ran it was lost and nothing answered in time, or it could not be
// followed to its end. Its thread may show the end later, or show it cut
// off (then a repeat continues it).
bool end_of_its_request(const turn_result& r) {
  return !failed_with(r.outcome, error_type::node_lost) && !failed_with(r.outcome, "turn_incomplete");
}

// The request runs already, asked by someone else: a node's ask that
// outlived the server that took the key's first POST, or a route's retry
// of it. A keyed turn is the request, wherever it runs: it follows it
// through the store, from the events this turn told already.
void follow_into(turn_context& ctx, const std::shared_ptr<turn>& t, const deployed_agent& a) {
  const turn_ids& ids = t->ids();
  const auto followed = follow_elsewhere(ctx, a, ids, stored_turn(ctx.agents.store(), ids.conversation_id, ids));
  auto last = std::make_shared<std::optional<sse_event>>();
  followed->subscribe(t->newest_event_id(), [t, last](const sse_event& e, bool end) {
    if (end)
      *last = e;
    else if (e.id != 0)  // the conversation event went out already
      t->push(e.name, boost::json::parse(e.data), e.id);
  });
  followed->when_finished([&ctx, t, last](const turn_result& r) {
    if (*last)
      return end_turn(ctx, t, r, (*last)->name, boost::json::parse((*last)->data), (*last)->id, end_of_its_request(r));
    auto [name, data] = final_event(r);
    end_turn(ctx, t, r, name, data, 0, end_of_its_request(r));
  });
}

void complete(turn_context& ctx, const std::shared_ptr<turn>& t, const deployed_agent& a, reply r,
              live_event_ids& ids) {
  if (!t->ids().idempotency_key.empty() && failed_with(r, error_type::duplicate_request)) return follow_into(ctx, t, a);
  const auto extent = entries_of_request(ctx.agents, a, t->ids().thread_id, t->ids().request_id);
  turn_result result{std::move(r), extent ? std::optional<std::size_t>(extent->entries) : std::nullopt, true};
  auto [name, data] = final_event(result);
  for (numbered_event& e : ids.held()) t->push("tool.finished", e.data, e.id);
  end_turn(ctx, t, result, name, data, ids.last(extent ? extent->last_seq : std::nullopt, result.outcome.paused()),
           t->ids().idempotency_key.empty() || end_of_its_request(result));
}

}  // namespace

std::optional<request_extent> entries_of_request(deployment& agents, const deployed_agent& a,
                                                 const std::string& thread_id, const std::string& request_id) {
  auto extent_of = [](const auto& entries) {
    request_extent out{entries.size(), std::nullopt};
    if (!entries.empty()) out.last_seq = seq_of_entry(entries.back());
    return out;
  };
  if (!agents.stopped())
    if (auto snap = a.handle.snapshot(thread_id, std::chrono::seconds(5)))
      return extent_of(snap->with_ref("request_id", boost::json::value(request_id)));
  if (auto stored = agents.store().threads->request_entries(thread_id, request_id)) return extent_of(*stored);
  return std::nullopt;
}

void run_turn(turn_context& ctx, const std::shared_ptr<turn>& t, const deployed_agent& a) {
  t->push("conversation", conversation_event(t->ids()), 0);
  ask_options o;
  o.thread_id = t->ids().thread_id;
  o.request_id = t->ids().request_id;
  o.overrides = t->ids().overrides;
  o.traceparent = t->ids().traceparent;
  o.deadline = a.config.request_deadline;
  o.retry = t->ids().continues;
  // On a cluster the turn belongs to its conversation, not to the node that
  // took its HTTP request: it goes on if that node is lost (unless the
  // agent cancels turns whose client goes away).
  o.outlives_caller = !a.config.cancel_on_disconnect;
  // The agent's events come one at a time, the last (request_finished) after every other.
  auto ids = std::make_shared<live_event_ids>();
  o.on_event = [&ctx, t, &a, ids](const stream_event& e) {
    std::visit(overloaded{[&](const delta_event& d) {
                            if (auto id = ids->delta(d.thread_seq, d.text.size() + d.thinking.size()))
                              t->push("message.delta", event_data(d), id);
                          },
                          [&](const tool_started_event& s) {
                            t->push("tool.started", event_data(s), ids->tool_started(s.thread_seq, s.tool_call_id));
                          },
                          [&](const tool_finished_event& f) {
                            for (numbered_event& n : ids->tool_finished(f.thread_seq, f.tool_call_id, event_data(f)))
                              t->push("tool.finished", n.data, n.id);
                          },
                          [&](const approval_requested_event& p) {
                            for (const open_approval& call : p.pending)
                              t->push("approval_request", event_data(p.request_id, call),
                                      ids->approval_requested(p.thread_seq));
                          },
                          [&](const request_finished_event& f) {
                            // Counting the entries asks the agent: not on its own thread.
                            boost::asio::post(ctx.workers, [&ctx, t, &a, r = f.result, ids]() mutable {
                              complete(ctx, t, a, std::move(r), *ids);
                            });
                          }},
               e);
  };
  turn_started_record started{t->ids().agent_id, t->ids().conversation_id, t->ids().request_id,
                              ctx.turns.unfinished(t->ids().conversation_id).size()};
  ctx.observers.each([&](serve_observer& ob) { ob.turn_started(started); });
  t->attach(a.handle.ask(t->ids().content, std::move(o)));
}

void ask_again(const deployed_agent& a, const turn_ids& ids) {
  ask_options o;
  o.thread_id = ids.thread_id;
  o.request_id = ids.request_id;
  o.overrides = ids.overrides;
  o.traceparent = ids.traceparent;
  o.deadline = a.config.request_deadline;
  o.retry = true;
  o.outlives_caller = true;
  (void)a.handle.ask(ids.content, std::move(o));
}

std::shared_ptr<turn> follow_elsewhere(turn_context& ctx, const deployed_agent& a, const turn_ids& ids,
                                       const std::optional<replayed_turn>& so_far) {
  follow_options o;
  o.stopping = &ctx.stopping;
  // Past the agent's deadline, and the time a lost node's shard takes to
  // move, the request is no longer running anywhere.
  o.give_up = std::chrono::steady_clock::now() + a.config.request_deadline + 2 * ctx.dead_after;
  o.ask_again = [&a, ids] { ask_again(a, ids); };
  o.ask_again_every = ctx.dead_after;
  const replayed_turn nothing_yet{{}, std::nullopt, ids.content, ids.request_id};
  return follow_stored_turn(ctx.workers, ctx.agents.store(), ids.conversation_id, ids, so_far ? *so_far : nothing_yet,
                            o);
}

}  // namespace troupe::serve
