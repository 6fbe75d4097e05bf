#include "apps/serve/turn_runner.hpp"

#include "apps/serve/turn_json.hpp"
#include "signals/overloaded.hpp"

#include <boost/asio/post.hpp>

namespace troupe::serve {

namespace {

std::chrono::microseconds since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t);
}

void complete(turn_context& ctx, const std::shared_ptr<turn>& t, const deployed_agent& a, reply r) {
  turn_result result{std::move(r), entries_of_request(ctx.agents, a, t->ids().thread_id, t->ids().request_id), true};
  auto [name, data] = final_event(result);
  // Unregistered first: whoever hears the answer finds the conversation free.
  ctx.turns.finished(t);
  t->finish(result, name, data);
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

std::optional<std::size_t> entries_of_request(deployment& agents, const deployed_agent& a, const std::string& thread_id,
                                              const std::string& request_id) {
  const boost::json::value id(request_id);
  if (!agents.stopped())
    if (auto snap = a.handle.snapshot(thread_id, std::chrono::seconds(5)))
      return snap->with_ref("request_id", id).size();
  if (auto stored = agents.store().threads->request_entries(thread_id, request_id)) return stored->size();
  return std::nullopt;
}

void run_turn(turn_context& ctx, const std::shared_ptr<turn>& t, const deployed_agent& a) {
  t->push("conversation", conversation_event(t->ids()));
  ask_options o;
  o.thread_id = t->ids().thread_id;
  o.request_id = t->ids().request_id;
  o.overrides = t->ids().overrides;
  o.traceparent = t->ids().traceparent;
  o.deadline = a.config.request_deadline;
  o.on_event = [&ctx, t, &a](const stream_event& e) {
    std::visit(overloaded{[&](const delta_event& d) { t->push("message.delta", event_data(d)); },
                          [&](const tool_started_event& s) { t->push("tool.started", event_data(s)); },
                          [&](const tool_finished_event& f) { t->push("tool.finished", event_data(f)); },
                          [&](const request_finished_event& f) {
                            // Counting the entries asks the agent: not on its own thread.
                            boost::asio::post(ctx.workers, [&ctx, t, &a, r = f.result]() mutable {
                              complete(ctx, t, a, std::move(r));
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
