#include "apps/serve/turn_runner.hpp"

#include "apps/serve/live_event_ids.hpp"
#include "apps/serve/turn_json.hpp"
#include "base/overloaded.hpp"

#include <boost/asio/post.hpp>

namespace troupe::serve {

namespace {

std::uint64_t seq_of_entry(const entry* e) { return e->seq; }
std::uint64_t seq_of_entry(const entry& e) { return e.seq; }

std::chrono::microseconds since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t);
}

void complete(turn_context& ctx, const std::shared_ptr<turn>& t, const deployed_agent& a, reply r,
              live_event_ids& ids) {
  const auto extent = entries_of_request(ctx.agents, a, t->ids().thread_id, t->ids().request_id);
  turn_result result{std::move(r), extent ? std::optional<std::size_t>(extent->entries) : std::nullopt, true};
  auto [name, data] = final_event(result);
  for (numbered_event& e : ids.held()) t->push("tool.finished", e.data, e.id);
  // Unregistered first: whoever hears the answer finds the conversation free.
  ctx.turns.finished(t);
  t->finish(result, name, data, ids.last(extent ? extent->last_seq : std::nullopt, result.outcome.paused()));
  ctx.turns.keep(t);
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

}  // namespace troupe::serve
