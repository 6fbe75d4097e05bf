#include "strategy/react_machine.hpp"

#include "base/overloaded.hpp"
#include "context/projection.hpp"
#include "json/json_text.hpp"
#include "strategy/approvals.hpp"
#include "strategy/inner_pause.hpp"
#include "strategy/recorded_request.hpp"
#include "strategy/recovery.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

namespace troupe {

namespace json = boost::json;

namespace {

// How step() words its refusals of tool calls (refused_without_running).
constexpr std::string_view no_such_tool = "there is no tool named \"";
constexpr std::string_view not_an_object = "the arguments are not a JSON object: ";

// An observation's origin as its message's extras. A round's observations
// share one origin, so the last one made on this thread is handed out again
// (shared, not copied) while it matches.
json_extras origin_extras(const observation_origin& o) {
  thread_local observation_origin last;
  thread_local json_extras made;
  if (made.empty() || !(last == o)) {
    made = json_extras(boost::json::object{{"observation", to_json(o)}});
    last = o;
  }
  return made;
}

// One step of the machine: reads the inputs, accumulates the state, the
// entries and the directives, and hands them back as a step_result.
class stepper {
 public:
  // The state is copied once, here: the step returns its successor and
  // leaves the caller's as it was (a failed commit keeps the old one).
  stepper(const react_config& config, std::string_view system_prompt, const react_state& state,
          const thread_view& thread, std::int64_t now_ms, id_source& ids, std::string_view agent)
      : config_(config),
        system_prompt_(system_prompt),
        agent_(agent),
        state_(state),
        thread_(thread),
        now_ms_(now_ms),
        ids_(ids) {}

  step_result run(const signal& input) && {
    std::visit([this](const auto& s) { on(s); }, input);
    return {std::move(state_), std::move(entries_), std::move(directives_)};
  }

 private:
  void on(const query& q) {
    if (q.retry && !q.request_id.empty())
      if (const entry* newest = newest_entry_of_request(thread_, q.request_id))
        if (asked_again(q, *newest)) return;
    if (state_.busy()) {
      directives_.push_back(request_error{q.request_id, error_type::busy,
                                          "the thread is busy with request " + state_.request_id.str() + " (" +
                                              std::string(to_string(state_.status)) + ")"});
      return;
    }
    if (q.request_id.empty() ||
        std::all_of(q.text.begin(), q.text.end(), [](unsigned char c) { return std::isspace(c); })) {
      directives_.push_back(
          request_error{q.request_id, error_type::invalid_query,
                        q.request_id.empty() ? "a query needs a request_id" : "the question is empty"});
      return;
    }
    state_.request_id = q.request_id;
    state_.overrides = q.overrides;
    state_.request_started_at = now_ms_;
    state_.iteration = 1;
    state_.request_usage = {};
    state_.error.reset();
    state_.tool_calls.clear();
    // An observation is the user's turn too (it is what the model answers),
    // marked with its origin so the thread tells it from a person's words.
    json_extras origin;
    if (q.observation) origin = origin_extras(*q.observation);
    commit(message_payload{"user", q.text, {}, {}, std::move(origin)}, refs());
    start_llm_call();
  }

  // The thread holds the request already (its ask is a retry: the answer
  // was lost with the process that ran it). Its question is not committed
  // again: an ended request is answered as it ended, a paused one as
  // paused, and one cut off before its end goes on from where the thread
  // stands. A request that ended with `shutdown` was cut off too: its
  // agent stopped under it (a node draining a shard stops its agents), and
  // the retry is the caller asking for the answer it never got. False when
  // the thread is busy with another request (refused as any ask then).
  bool asked_again(const query& q, const entry& newest) {
    if (auto end = recorded_end(newest, q.request_id); end && !stopped_under_it(*end)) {
      directives_.push_back(std::move(*end));
      return true;
    }
    if (state_.busy() && state_.request_id == q.request_id && state_.status == react_status::awaiting_input) {
      directives_.push_back(still_paused());
      return true;
    }
    if (state_.busy()) return false;
    go_on_with(q, newest);
    return true;
  }

  // A request cut off before its end (its process died) goes on under this
  // ask. A tool call of it without a result gets an `interrupted` one, as a
  // load after a crash gives it (recovery.hpp): whether the tool ran, and
  // what it did, is unknown, and running it again could do it twice; the
  // model reads that the call was interrupted and decides what next. The
  // model is asked again from where the thread stands, within what is left
  // of the request's iterations. Other requests that went on in the thread
  // since would put their turns between its question and its answer: the
  // request ends `interrupted` instead.
  void go_on_with(const query& q, const entry& newest) {
    // Where the request stood: before the stop's error, if it was stopped.
    const entry* stood = &newest;
    if (newest.kind == entry_kind::error)
      for (std::uint64_t seq = newest.seq; seq-- > 0;)
        if (const entry* e = thread_.at_seq(seq); e && e->refs.request_id() == q.request_id) {
          stood = e;
          break;
        }
    state_.request_id = q.request_id;
    state_.overrides = q.overrides;
    state_.request_started_at = now_ms_;
    state_.iteration = static_cast<int>(std::max<std::int64_t>(1, stood->refs.iteration().value_or(1)));
    state_.request_usage = {};
    state_.error.reset();
    state_.tool_calls.clear();
    state_.call_id = stood->refs.call_id();
    for (entry_draft& result : interrupted_tool_results(thread_)) commit(std::move(result));
    for (const entry& e : thread_.slice(newest.seq + 1, thread_.size()))
      if (!e.refs.request_id().empty())
        return end_with_error(error_info::of(
            error_type::interrupted,
            "request " + q.request_id + " was cut off before its end, and other requests went on in its thread since"));
    const bool question_only = stood->kind == entry_kind::message && stood->payload.string("role") == "user";
    if (question_only)
      start_llm_call();
    else
      next_iteration();  // its last model turn's tools have their results
  }

  static bool stopped_under_it(const reply& end) {
    const auto* e = std::get_if<error_info>(&end.outcome);
    return e && e->type == error_type::shutdown;
  }

  void on(const llm_delta& d) { absorb_delta(state_, d); }

  void on(const llm_result& r) {
    if (!state_.summary_call_id.empty() && r.call_id == state_.summary_call_id) {
      on_summary(r);
      return;
    }
    if (state_.status != react_status::awaiting_llm || r.call_id != state_.call_id) return;
    std::visit(
        overloaded{[&](const llm_completion& c) { on_completion(c); }, [&](const error_info& e) { end_with_error(e); }},
        r.outcome);
  }

  void on(const tool_result& r) {
    if (!awaiting_calls() || r.call_id != state_.call_id) return;
    auto pending = std::find_if(state_.tool_calls.begin(), state_.tool_calls.end(),
                                [&](const pending_tool_call& p) { return p.call.id == r.tool_call_id && !p.outcome; });
    if (pending == state_.tool_calls.end()) return;  // unknown, or already answered
    if (const tool_spec* spec = find_tool(config_.tools, pending->call.name); spec && spec->relays_approvals)
      if (auto inner = read_inner_pause(r.outcome)) return wait_on_inner(*pending, *inner);
    pending->outcome = r.outcome;
    finish_tools_if_done();
  }

  // The agent the call asked paused for a person: each of its calls that
  // waits gets an approval_request here (under a relayed id, pointing at the
  // call there), and the call waits for them as a supervised call does. A
  // call it lists that was decided here already had the decision passed
  // down; one asked here before (that agent paused still) is not asked again.
  void wait_on_inner(pending_tool_call& p, const inner_pause& inner) {
    std::int64_t until = 0;
    for (const open_approval& a : inner.pending) {
      const std::string id = relayed_call_id(p.call.id, a.tool_call_id);
      if (find_decision(thread_, state_.request_id, id)) continue;
      until = until ? std::min(until, a.expires_at) : a.expires_at;
      if (asked_before(id)) continue;
      open_approval here = a;
      here.tool_call_id = id;
      here.inner = inner_approval{inner.agent_id, inner.thread_id, inner.request_id, a.tool_call_id};
      json::object payload = approval_payload(here);
      payload.emplace("inner", to_json(*here.inner));
      commit(entry_draft(std::string(entry_kind::approval_request), std::move(payload), refs(state_.call_id, id)));
      asked_now_.push_back(std::move(here));
    }
    if (!until) return;  // each was decided here: the answers to those decisions are on their way
    p.asked = true;
    p.awaiting_until = until;
    finish_tools_if_done();
  }

  bool asked_before(std::string_view id) const {
    for (const entry* e : thread_.of_kind(entry_kind::approval_request))
      if (e->refs.tool_call_id() == id && e->refs.request_id() == state_.request_id) return true;
    return false;
  }

  // Another agent's calls that wait under this request's call `p`: as the
  // thread lists them, less those decided in this step.
  std::vector<open_approval> relayed_open(const pending_tool_call& p) const {
    std::vector<open_approval> out;
    for (open_approval& a : pending_approvals(thread_, state_.request_id.str()))
      if (a.inner && relayed_through(a.tool_call_id, p.call.id) && !decided_now_.count(a.tool_call_id))
        out.push_back(std::move(a));
    for (const open_approval& a : asked_now_)
      if (relayed_through(a.tool_call_id, p.call.id) && !decided_now_.count(a.tool_call_id)) out.push_back(a);
    return out;
  }

  // The other agent's request a call waits on, when it asked one that paused.
  std::optional<inner_approval> relayed_request(const pending_tool_call& p) const {
    for (const entry* e : thread_.of_kind(entry_kind::approval_request))
      if (e->refs.request_id() == state_.request_id && relayed_through(e->refs.tool_call_id(), p.call.id))
        if (auto relayed = relayed_to(*e)) return std::move(relayed->inner);
    for (const open_approval& a : asked_now_)
      if (relayed_through(a.tool_call_id, p.call.id)) return a.inner;
    return std::nullopt;
  }

  // The call waits for what is left of the other agent's calls, or (none
  // left) for that agent's answer.
  void update_wait(pending_tool_call& p) {
    p.awaiting_until = 0;
    for (const open_approval& a : relayed_open(p))
      p.awaiting_until = p.awaiting_until ? std::min(p.awaiting_until, a.expires_at) : a.expires_at;
  }

  void on(const cancel& c) {
    if (!state_.busy() || c.request_id != state_.request_id) {
      if (c.answered)
        directives_.push_back(decision_answer{
            c.request_id,
            {},
            {},
            error_info::of(error_type::not_found, "request " + c.request_id + " is not running on this thread")});
      return;
    }
    // Before the request's end: the canceller follows the request to it.
    if (c.answered) directives_.push_back(decision_answer{c.request_id, {}, {}, std::nullopt, true});
    if (state_.status == react_status::awaiting_llm) {
      directives_.push_back(cancel_call{state_.call_id, {}});
    } else {
      // The model call is over; its tools are what still runs.
      for (pending_tool_call& p : state_.tool_calls) {
        if (p.outcome) continue;
        if (auto inner = relayed_request(p)) {            // the other agent's request ends too, wherever it stands
          for (const open_approval& a : relayed_open(p))  // nobody decides them here any more
            commit_relayed_decision(
                a, decision_payload(verdict::reject, "the request was cancelled before the call was decided", {},
                                    "cancel", {}, false, {}, false, a.tool));
          directives_.push_back(pass_down{inner->agent_id, inner->thread_id, state_.call_id.str(), p.call.id,
                                          p.call.name, cancel{inner->request_id, c.reason, {}, true}});
          p.awaiting_until = 0;
          p.outcome = error_info::of(error_type::cancelled, "the request was cancelled before the call was decided");
          continue;
        }
        if (p.awaiting_until) {  // it never started: nothing to stop, and nobody decides it any more
          take_decision(p, verdict::reject, "the request was cancelled before the call was decided", {}, "cancel", {},
                        false);
          p.outcome = error_info::of(error_type::cancelled, "the request was cancelled before the call was decided");
          continue;
        }
        directives_.push_back(cancel_call{state_.call_id, p.call.id});
        p.outcome = error_info::of(error_type::interrupted, "the request was cancelled before the tool finished");
      }
      commit_tool_results();
    }
    end_with_error(error_info::of(c.error_type.empty() ? error_type::cancelled : c.error_type,
                                  c.reason.empty() ? "the request was cancelled" : c.reason));
  }

  void on_completion(const llm_completion& c) {
    state_.request_usage += c.usage;
    state_.thread_usage += c.usage;
    const std::string& text = c.text.empty() ? state_.streamed_text : c.text;
    const std::string& thinking = c.thinking.empty() ? state_.streamed_thinking : c.thinking;
    if (c.tool_calls.empty()) {
      commit(message_payload{"assistant", text, thinking, c.finish_reason, {}}, refs(state_.call_id));
      directives_.push_back(reply{state_.request_id, text, state_.request_usage, state_.iteration});
      end_request(react_status::completed);
      clear_stream();
      return;
    }
    if (!text.empty() || !thinking.empty())
      commit(message_payload{"assistant", text, thinking, {}, {}}, refs(state_.call_id));
    clear_stream();
    dispatch_tools(c.tool_calls);
  }

  void dispatch_tools(const std::vector<tool_call>& calls) {
    state_.status = react_status::awaiting_tools;
    state_.tool_calls.clear();
    awaiting_input pause;
    for (const tool_call& requested : calls) {
      pending_tool_call p{requested, std::nullopt};
      // Results are matched by id, so every call of the turn needs its own.
      const bool taken = std::any_of(state_.tool_calls.begin(), state_.tool_calls.end(),
                                     [&](const auto& q) { return q.call.id == p.call.id; });
      if (p.call.id.empty() || taken) p.call.id = ids_.next("toolcall");

      commit(tool_call_payload::of(p.call.name, p.call.arguments, p.call.invalid_arguments),
             refs(state_.call_id, p.call.id));

      const tool_spec* spec = find_tool(config_.tools, p.call.name);
      if (!spec) {
        p.outcome = error_info::of(error_type::unknown_tool, unknown_tool_message(p.call.name));
      } else if (p.call.invalid_arguments) {
        p.outcome =
            error_info::of(error_type::invalid_arguments, std::string(not_an_object) + *p.call.invalid_arguments);
      } else if (spec->answered_by_person) {
        pause.pending.push_back(ask_approval(p, question_in(p.call), true));
      } else {
        approval_check check = check_approval(config_.approvals, p.call.name, p.call.arguments);
        // A person allowed the tool for the rest of the thread.
        if (check.what == approval_check::outcome::ask && allowed_on_thread(thread_, p.call.name)) check = {};
        switch (check.what) {
          case approval_check::outcome::run:
            run_tool(p, p.call.arguments);
            break;
          case approval_check::outcome::deny:
            p.outcome = error_info::of(error_type::denied, check.why);
            break;
          case approval_check::outcome::ask:
            pause.pending.push_back(ask_approval(p, check.why));
            break;
        }
      }
      state_.tool_calls.push_back(std::move(p));
    }
    if (!pause.pending.empty()) {
      pause.request_id = state_.request_id.str();
      pause.usage = state_.request_usage;
      pause.iterations = state_.iteration;
      directives_.push_back(std::move(pause));
    }
    finish_tools_if_done();
  }

  // The call waits for a decision: the request that it waits for is
  // committed with its deadline, and nothing of it runs.
  // A question's deadline and default come from the tool's rule too.
  open_approval ask_approval(pending_tool_call& p, const std::string& reason, bool question = false) {
    const approval_rule* rule = find_rule(config_.approvals, p.call.name);
    const std::int64_t timeout = rule ? rule->timeout_ms : approval_rule{}.timeout_ms;
    p.awaiting_until = timeout > 0 ? now_ms_ + timeout : std::numeric_limits<std::int64_t>::max();
    p.asked = true;
    open_approval a{p.call.id, p.call.name, p.call.arguments, reason, p.awaiting_until, question};
    if (rule) a.on_expiry = rule->on_expiry == verdict::approve ? verdict::approve : verdict::reject;
    commit(
        entry_draft(std::string(entry_kind::approval_request), approval_payload(a), refs(state_.call_id, p.call.id)));
    return a;
  }

  json::object approval_payload(const open_approval& a) const {
    json::object payload{
        {"tool", a.tool}, {"arguments", a.arguments}, {"reason", a.reason}, {"expires_at", a.expires_at}};
    if (a.question) payload.emplace("question", true);
    // Who asked: a runtime started again finds the pauses whose deadlines it keeps by it.
    if (!agent_.empty()) payload.emplace("agent", agent_);
    // What the deadline brings, for an agent that used this one as a tool.
    if (a.on_expiry == verdict::approve) payload.emplace("on_expiry", to_string(a.on_expiry));
    return payload;
  }

  // What a question call asks: its "question" argument, else its arguments as JSON.
  static std::string question_in(const tool_call& c) {
    if (const auto* q = c.arguments.if_contains("question"); q && q->is_string()) return std::string(q->as_string());
    return json_text(c.arguments);
  }

  bool is_question(const pending_tool_call& p) const {
    const tool_spec* spec = find_tool(config_.tools, p.call.name);
    return spec && spec->answered_by_person;
  }

  void run_tool(const pending_tool_call& p, const json::object& arguments) {
    directives_.push_back(tool_exec{state_.call_id, p.call.id, p.call.name, arguments, config_.tool_timeout_ms,
                                    state_.request_id, state_.iteration});
  }

  bool awaiting_calls() const {
    return state_.status == react_status::awaiting_tools || state_.status == react_status::awaiting_input;
  }

  // A turn where some call asked for approval may stay paused for hours:
  // its results go to the thread as they arrive, so that a restart finds
  // every finished tool's result and runs none of them again.
  bool turn_asks() const {
    return std::any_of(state_.tool_calls.begin(), state_.tool_calls.end(),
                       [](const pending_tool_call& p) { return p.asked; });
  }

  pending_tool_call* open_call(std::string_view request_id, std::string_view tool_call_id) {
    if (!awaiting_calls() || state_.request_id != request_id) return nullptr;
    for (pending_tool_call& p : state_.tool_calls)
      if (p.call.id == tool_call_id) return &p;
    return nullptr;
  }

  void on(const decision& d) {
    decision_answer answer{d.request_id, d.tool_call_id, d.idempotency_key, std::nullopt};
    auto refuse = [&](const char* type, std::string message) { refuse_decision(answer, type, std::move(message)); };
    if (!d.idempotency_key.empty() && find_decision(thread_, d.request_id, d.tool_call_id, d.idempotency_key)) {
      directives_.push_back(answer);  // the same decision again: it was taken
      return;
    }
    if (d.expire) return expire_asked(d, answer);
    if (auto relayed = open_relayed(d.request_id, d.tool_call_id))
      return decide_relayed(d, *relayed->first, relayed->second, answer);
    pending_tool_call* p = open_call(d.request_id, d.tool_call_id);
    if (!p || !p->awaiting_until) {
      if ((p && p->asked) || find_decision(thread_, d.request_id, d.tool_call_id))
        return refuse(error_type::already_decided,
                      "tool call " + d.tool_call_id + " of request " + d.request_id + " is decided already");
      return refuse(error_type::not_found,
                    "no tool call " + d.tool_call_id + " of request " + d.request_id + " waits for a decision");
    }
    decide_waiting(
        d, answer, p->awaiting_until, is_question(*p), [&] { expire(*p); },
        [&] {
          take_decision(*p, d.answer, d.message, d.arguments, d.decided_by, d.idempotency_key, false, d.response,
                        d.sticky);
        });
  }

  void refuse_decision(decision_answer& answer, const char* type, std::string message) {
    answer.error = error_info::of(type, std::move(message));
    directives_.push_back(answer);
  }

  // A decision for a call that waits: refused if it came past the deadline
  // (the default is taken then) or does not fit the call; otherwise answered
  // before `take` lets anything run, as a cancel's answer comes before the
  // request's end: the decider follows the request from here on.
  template <class Expire, class Take>
  void decide_waiting(const decision& d, decision_answer& answer, std::int64_t deadline, bool question, Expire expire,
                      Take take) {
    auto refuse = [&](const char* type, std::string message) { refuse_decision(answer, type, std::move(message)); };
    if (now_ms_ >= deadline) {
      expire();
      refuse(error_type::expired, "the approval of tool call " + d.tool_call_id + " expired before the decision");
      finish_tools_if_done();
      return;
    }
    if (question && (d.answer == verdict::edit || d.sticky))
      return refuse(error_type::invalid_decision,
                    "tool call " + d.tool_call_id + " is a question: answer it (approve with a response) or reject it");
    if (d.sticky && d.answer == verdict::reject)
      return refuse(error_type::invalid_decision, "a sticky decision allows a tool; a rejection cannot be sticky");
    answer.taken = true;
    directives_.push_back(std::move(answer));
    take();
    finish_tools_if_done();
  }

  // Another agent's call that waits under one of this request's calls, and that call.
  std::optional<std::pair<pending_tool_call*, open_approval>> open_relayed(std::string_view request_id,
                                                                           std::string_view tool_call_id) {
    if (!awaiting_calls() || state_.request_id != request_id) return std::nullopt;
    for (pending_tool_call& p : state_.tool_calls) {
      if (p.outcome || !relayed_through(tool_call_id, p.call.id)) continue;
      for (open_approval& a : relayed_open(p))
        if (a.tool_call_id == tool_call_id) return std::pair{&p, std::move(a)};
    }
    return std::nullopt;
  }

  // A decision for another agent's call: checked as one for this agent's
  // own, committed here (pointing at the call there), and passed down; that
  // agent commits its own decision entry, runs what it allows, and its
  // answer (or its next pause) comes back as the call's result.
  void decide_relayed(const decision& d, pending_tool_call& p, const open_approval& a, decision_answer& answer) {
    decide_waiting(
        d, answer, a.expires_at, a.question, [&] { expire_relayed(p, a); },
        [&] { pass_decision_down(p, a, d, false); });
  }

  void pass_decision_down(pending_tool_call& p, const open_approval& a, decision down, bool expired) {
    commit_relayed_decision(a, decision_payload(down.answer, down.message, down.arguments, down.decided_by,
                                                down.idempotency_key, expired, down.response, down.sticky, a.tool));
    decided_now_.insert(a.tool_call_id);
    decided_ = true;
    down.request_id = a.inner->request_id;
    down.tool_call_id = a.inner->tool_call_id;
    down.expire = expired;
    directives_.push_back(pass_down{a.inner->agent_id, a.inner->thread_id, state_.call_id.str(), p.call.id, p.call.name,
                                    std::move(down)});
    update_wait(p);
  }

  // A decision here for another agent's call names that call (relayed_to).
  void commit_relayed_decision(const open_approval& a, json::object payload) {
    payload.emplace("inner", to_json(*a.inner));
    commit(entry_draft(std::string(entry_kind::decision), std::move(payload), refs(state_.call_id, a.tool_call_id)));
  }

  // The deadline of another agent's call came: its default, as that agent's
  // rule says, is committed here and passed down, where that agent takes it
  // (if its own tick did not already) and answers with where it went on to.
  void expire_relayed(pending_tool_call& p, const open_approval& a) {
    decision d;
    d.answer = a.on_expiry;
    d.message = "no decision came before the deadline";
    d.decided_by = "expiry";
    pass_decision_down(p, a, std::move(d), true);
  }

  // A decision passed down at the deadline by the agent that used this one
  // as a tool. The default is taken as a tick would take it; the decider
  // follows the request from there, or from where the tick left it.
  void expire_asked(const decision& d, decision_answer& answer) {
    pending_tool_call* p = open_call(d.request_id, d.tool_call_id);
    if (p && p->awaiting_until && now_ms_ < p->awaiting_until) {
      answer.error = error_info::of(error_type::invalid_decision, "the deadline of tool call " + d.tool_call_id +
                                                                      " of request " + d.request_id + " has not come");
      directives_.push_back(std::move(answer));
      return;
    }
    if (p && p->awaiting_until) {
      answer.taken = true;
      directives_.push_back(std::move(answer));
      expire(*p);
      finish_tools_if_done();
      return;
    }
    const entry* taken = find_decision(thread_, d.request_id, d.tool_call_id);
    if (taken && state_.busy() && state_.request_id == d.request_id) {
      directives_.push_back(std::move(answer));  // taken by a tick: followed on from here
      return;
    }
    if (auto end = end_after_expiry(thread_, d.request_id, d.tool_call_id)) {
      answer.ended = std::move(end);
      directives_.push_back(std::move(answer));
      return;
    }
    answer.error = error_info::of(taken ? error_type::already_decided : error_type::not_found,
                                  "no tool call " + d.tool_call_id + " of request " + d.request_id +
                                      (taken ? " waits any more" : " waits for a decision"));
    directives_.push_back(std::move(answer));
  }

  void on(const approval_tick& t) {
    if (state_.status != react_status::awaiting_input || t.request_id != state_.request_id) return;
    bool any = false;
    for (pending_tool_call& p : state_.tool_calls) {
      if (!p.awaiting_until || now_ms_ < p.awaiting_until) continue;
      if (relayed_request(p)) {
        for (const open_approval& a : relayed_open(p))
          if (now_ms_ >= a.expires_at) expire_relayed(p, a);
      } else {
        expire(p);
      }
      any = true;
    }
    if (any) finish_tools_if_done();
  }

  // Nobody decided in time: the rule's default is committed as the decision.
  void expire(pending_tool_call& p) {
    const approval_rule* rule = find_rule(config_.approvals, p.call.name);
    const verdict v = rule && rule->on_expiry == verdict::approve ? verdict::approve : verdict::reject;
    take_decision(p, v, "no decision came before the deadline", {}, "expiry", {}, true);
  }

  static json::object decision_payload(verdict v, const std::string& message, const json::object& edited,
                                       const std::string& decided_by, const std::string& idempotency_key, bool expired,
                                       const std::string& response, bool sticky, const std::string& tool) {
    json::object payload{{"verdict", to_string(v)}, {"decided_by", decided_by}};
    if (!message.empty()) payload.emplace("message", message);
    if (v == verdict::edit) payload.emplace("arguments", edited);
    if (!idempotency_key.empty()) payload.emplace("idempotency_key", idempotency_key);
    if (expired) payload.emplace("expired", true);
    if (!response.empty()) payload.emplace("response", response);
    if (sticky) {  // what later calls are checked against (allowed_on_thread)
      payload.emplace("sticky", true);
      payload.emplace("tool", tool);
    }
    return payload;
  }

  void take_decision(pending_tool_call& p, verdict v, const std::string& message, const json::object& edited,
                     const std::string& decided_by, const std::string& idempotency_key, bool expired,
                     const std::string& response = {}, bool sticky = false) {
    commit(entry_draft(
        std::string(entry_kind::decision),
        decision_payload(v, message, edited, decided_by, idempotency_key, expired, response, sticky, p.call.name),
        refs(state_.call_id, p.call.id)));
    p.awaiting_until = 0;
    decided_ = true;
    if (v == verdict::approve && is_question(p)) {
      p.outcome = json::value(response);  // the person's answer is the call's result
      return;
    }
    switch (v) {
      case verdict::approve:
        run_tool(p, p.call.arguments);
        break;
      case verdict::edit:
        run_tool(p, edited);
        break;
      case verdict::reject:
        p.outcome = error_info::of(expired ? error_type::expired : error_type::rejected,
                                   message.empty() ? "a person rejected the call" : message);
        break;
    }
  }

  void finish_tools_if_done() {
    if (std::any_of(state_.tool_calls.begin(), state_.tool_calls.end(),
                    [](const pending_tool_call& p) { return !p.outcome; })) {
      const bool paused = std::any_of(state_.tool_calls.begin(), state_.tool_calls.end(),
                                      [](const pending_tool_call& p) { return p.awaiting_until != 0; });
      state_.status = paused ? react_status::awaiting_input : react_status::awaiting_tools;
      if (turn_asks()) commit_tool_results();
      // Some calls were decided (or expired) and others still wait: the
      // pause is said again, so that its owner ticks at the earliest
      // deadline left.
      if (paused && (decided_ || !asked_now_.empty())) directives_.push_back(still_paused());
      return;
    }
    commit_tool_results();
    next_iteration();
  }

  // The turn's tools have their results: the model is asked again, unless
  // the request used its iterations.
  void next_iteration() {
    if (state_.iteration >= max_iterations()) {
      end_with_error(error_info::of(error_type::max_iterations, "stopped after " + std::to_string(state_.iteration) +
                                                                    " iterations without a final answer"));
      return;
    }
    ++state_.iteration;
    start_llm_call();
  }

  // The calls that still wait, as their approval_request entries list them.
  awaiting_input still_paused() const {
    awaiting_input pause{state_.request_id.str(), {}, state_.request_usage, state_.iteration};
    for (open_approval& a : pending_approvals(thread_, state_.request_id.str()))
      for (const pending_tool_call& p : state_.tool_calls)
        if (p.call.id == a.tool_call_id && p.awaiting_until) pause.pending.push_back(std::move(a));
    for (const pending_tool_call& p : state_.tool_calls)
      if (p.awaiting_until)
        for (open_approval& a : relayed_open(p)) pause.pending.push_back(std::move(a));
    return pause;
  }

  // Results go to the thread in the order the model asked for the calls,
  // whatever order they finished in (but see turn_asks). The calls are
  // forgotten once every one has its result.
  void commit_tool_results() {
    bool all = true;
    for (pending_tool_call& p : state_.tool_calls) {
      if (!p.outcome) {
        all = false;
      } else if (!p.result_committed) {
        commit(tool_result_payload::of(p.call.name, *p.outcome), refs(state_.call_id, p.call.id));
        p.result_committed = true;
      }
    }
    if (all) state_.tool_calls.clear();
  }

  void start_llm_call() {
    state_.status = react_status::awaiting_llm;
    state_.call_id = ids_.next("call");
    clear_stream();
    const std::string_view system_prompt =
        state_.overrides->system_prompt ? std::string_view(*state_.overrides->system_prompt) : system_prompt_;
    const context_policy policy = resolve_policy(config_.context, *state_.context, state_.overrides->context);
    auto units = std::make_shared<unit_cache>();
    projection context = project(thread_, policy, entries_, system_prompt, state_.projection.value.get(), units.get());
    state_.projection.value = std::move(units);
    maybe_summarize(context.meta);
    directives_.push_back(llm_stream{state_.call_id, state_.overrides->model.value_or(config_.model),
                                     std::move(context.messages), config_.tools,
                                     generation_params::overlay(config_.params, state_.overrides->params),
                                     state_.request_id, state_.iteration, context.meta});
  }

  // When the window left something out and the policy asks for summaries,
  // one summary at a time is written beside the request, covering the thread
  // up to where the projection says (past the newest entry left out, so that
  // the next one is not due on the next turn), and folding in the previous
  // summary.
  void maybe_summarize(const context_meta& meta) {
    if (!meta.needs_summary || !meta.summarize_to_seq || !state_.summary_call_id.empty()) return;
    const entry* previous = thread_.latest_summary();
    const std::uint64_t from =
        previous ? static_cast<std::uint64_t>(previous->payload.integer("to_seq").value_or(0)) + 1 : 0;
    const std::uint64_t to = *meta.summarize_to_seq;
    if (to < from || to >= thread_.size()) return;

    std::string transcript;
    if (previous)
      transcript += "Earlier summary: " + std::string(previous->payload.string("content").value_or("")) + "\n\n";
    for (const entry& e : thread_.slice(from, to)) transcript += transcript_line(e);
    summarize s;
    s.call_id = ids_.next("summary");
    s.model = config_.summary_model.empty() ? state_.overrides->model.value_or(config_.model) : config_.summary_model;
    const std::string prompt =
        config_.summary_prompt.empty() ? std::string(default_summary_prompt) : config_.summary_prompt;
    s.messages = {llm_message{"system", prompt, {}, {}, {}}, llm_message{"user", transcript, {}, {}, {}}};
    s.from_seq = 0;
    s.to_seq = to;
    s.params.max_tokens = config_.summary_max_tokens;
    s.request_id = state_.request_id;
    state_.summary_call_id = s.call_id;
    state_.summary_to_seq = to;
    directives_.push_back(std::move(s));
  }

  static std::string transcript_line(const entry& e) {
    if (e.kind == entry_kind::message)
      return std::string(string_field(e.payload, "role").value_or("?")) + ": " +
             std::string(string_field(e.payload, "content").value_or("")) + "\n";
    if (e.kind == entry_kind::tool_call) {
      const auto* typed = e.payload.get_if<tool_call_payload>();
      return "assistant calls " + std::string(string_field(e.payload, "name").value_or("?")) + " " +
             (typed ? typed->arguments_text.str() : json_text(e.payload.value("arguments").value_or(json::value()))) +
             "\n";
    }
    if (e.kind == entry_kind::tool_result)
      return "tool " + std::string(string_field(e.payload, "name").value_or("?")) + " returned " +
             tool_result_text(e.payload) + "\n";
    return {};
  }

  // A summary's model call ended: commit it, or let a later projection ask again.
  void on_summary(const llm_result& r) {
    if (const auto* c = std::get_if<llm_completion>(&r.outcome); c && !c->text.empty()) {
      json::object payload(4);
      payload.emplace("from_seq", 0);
      payload.emplace("to_seq", state_.summary_to_seq);
      payload.emplace("content", c->text);
      payload.emplace("model", config_.summary_model.empty() ? config_.model : config_.summary_model);
      commit(entry_draft(std::string(entry_kind::summary), std::move(payload), {{"call_id", state_.summary_call_id}}));
    }
    state_.summary_call_id.clear();
  }

  void end_with_error(error_info e) {
    commit(entry_draft(std::string(entry_kind::error), to_json(e).as_object(), refs(state_.call_id)));
    directives_.push_back(reply{state_.request_id, e, state_.request_usage, state_.iteration});
    end_request(react_status::error);
    state_.error = std::move(e);
    state_.tool_calls.clear();
    clear_stream();
  }

  // A thread waits for its next request without the units of its last
  // context: the next request's first call walks the window and builds them
  // again. Measured when projections began to extend the window (bd489bf):
  // holding them would take a turn in thread_bench from 10.0 to 7.3 µs (155
  // to 107 allocations; 80 to 14 µs with long_context's 50-turn window), and
  // cost every idle agent 1.6 KB after one turn and 4.5 KB after three
  // (simulate, 20,000 agents). react_thread::abandon_request drops them too.
  void end_request(react_status how) {
    state_.status = how;
    state_.projection.value.reset();
  }

  void commit(entry_draft d) { entries_.push_back(std::move(d)); }
  template <class Payload>
  void commit(Payload p, entry_refs r) {
    entries_.push_back(entry_draft(std::move(p), std::move(r)));
  }

  entry_refs refs(std::string_view call_id = {}, std::string_view tool_call_id = {}) const {
    return entry_refs::of(state_.request_id, state_.iteration, call_id, tool_call_id);
  }

  void clear_stream() {
    state_.streamed_text.clear();
    state_.streamed_thinking.clear();
  }

  int max_iterations() const { return std::max(1, state_.overrides->max_iterations.value_or(config_.max_iterations)); }

  std::string unknown_tool_message(const std::string& name) const {
    std::string m = std::string(no_such_tool) + name + "\"";
    if (config_.tools && !config_.tools->empty()) {
      m += "; the available tools are:";
      for (const auto& t : *config_.tools) m += " " + t.name;
    } else {
      m += "; no tools are available";
    }
    return m;
  }

  const react_config& config_;
  const std::string_view system_prompt_;
  const std::string_view agent_;
  react_state state_;
  const thread_view& thread_;
  const std::int64_t now_ms_;
  id_source& ids_;
  bool decided_ = false;  // this step committed a decision
  // Another agent's calls asked (approval_request) and decided in this step,
  // by their ids here: the thread the step reads does not hold them yet.
  std::vector<open_approval> asked_now_;
  std::set<std::string, std::less<>> decided_now_;
  std::vector<entry_draft> entries_;
  std::vector<directive> directives_;
};

}  // namespace

step_result step(const react_config& config, const react_state& state, const thread_view& thread, const signal& input,
                 std::int64_t now_ms, id_source& ids, std::optional<std::string_view> system_prompt,
                 std::string_view agent) {
  return stepper(config, system_prompt.value_or(config.system_prompt), state, thread, now_ms, ids, agent).run(input);
}

bool absorb_delta(react_state& state, const llm_delta& d) {
  if (state.status != react_status::awaiting_llm || d.call_id != state.call_id) return false;
  state.streamed_text += d.text;
  state.streamed_thinking += d.thinking;
  return true;
}

bool refused_without_running(const error_info& e) {
  return (e.type == error_type::unknown_tool && e.message.starts_with(no_such_tool)) ||
         (e.type == error_type::invalid_arguments && e.message.starts_with(not_an_object));
}

}  // namespace troupe
