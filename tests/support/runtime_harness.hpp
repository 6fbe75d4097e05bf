#pragma once
// Helpers for tests that run the whole actor runtime: gates that tools wait
// on (so tests decide the order things finish in, without sleeping), tool
// builders and reply accessors.

#include "actors/runtime.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace troupe::testing {

using namespace std::chrono_literals;

// Generous: only reached when something is broken.
inline constexpr auto patience = 10s;

// Whether `holds` comes true within the patience: for what the agent does
// with nobody waiting for it (a result committed while paused, an expiry),
// seen in its snapshots.
template <class Condition>
inline bool eventually(Condition holds) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (!holds()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::yield();
  }
  return true;
}

class gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = patience) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return open_; });
  }
  bool is_open() {
    std::lock_guard lock(mutex_);
    return open_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

inline boost::json::object object_schema(std::initializer_list<std::pair<const char*, const char*>> props) {
  boost::json::object properties;
  boost::json::array required;
  for (const auto& [name, type] : props) {
    properties[name] = {{"type", type}};
    required.push_back(boost::json::string(name));
  }
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

inline tool make_tool(std::string name, tool_function run, bool blocking = true,
                      boost::json::object schema = {{"type", "object"}}) {
  tool t;
  t.spec = tool_spec{std::move(name), "a test tool", std::move(schema)};
  t.run = std::move(run);
  t.blocking = blocking;
  return t;
}

// "send" ({"to": a string}): counts its runs in `sends` and answers "sent to TO".
inline tool counted_send(std::atomic<int>& sends) {
  return make_tool(
      "send",
      [&sends](const boost::json::object& a, const tool_context&) {
        ++sends;
        return boost::json::value("sent to " + std::string(a.at("to").as_string()));
      },
      true, object_schema({{"to", "string"}}));
}

inline tool_call call(std::string id, std::string name, boost::json::object args = {}) {
  return {std::move(id), std::move(name), std::move(args), std::nullopt};
}

inline reply must_reply(const request& r) {
  auto got = r.await(patience);
  REQUIRE(got.has_value());
  return *got;
}

inline std::string answer_of(const reply& r) {
  INFO("reply: " << (r.ok() ? std::get<std::string>(r.outcome)
                            : std::get<error_info>(r.outcome).type + ": " + std::get<error_info>(r.outcome).message));
  REQUIRE(r.ok());
  return std::get<std::string>(r.outcome);
}

inline std::string error_type_of(const reply& r) {
  REQUIRE(!r.ok());
  return std::get<error_info>(r.outcome).type;
}

// Ask options that open `g` when the first delta of the answer streams in:
// from then on the model call is in flight.
inline ask_options open_on_first_delta(gate& g) {
  ask_options o;
  o.on_event = [&g](const stream_event& e) {
    if (std::holds_alternative<delta_event>(e)) g.open();
  };
  return o;
}

// The latest question in a model call's context.
inline std::string question_in(const llm_stream& s) {
  for (auto m = s.messages.rbegin(); m != s.messages.rend(); ++m)
    if (m->role == "user") return m->content;
  return {};
}

// A reply whose deltas go out at once and whose result waits a long time:
// the call is "mid-stream" until cancelled.
inline scripted_reply stalls(std::string first_words = "thinking...") {
  scripted_reply r = scripted_reply::text(std::move(first_words));
  r.delay = std::chrono::minutes(10);
  return r;
}

// Every tool_call in the thread has exactly one tool_result.
inline bool every_call_answered(const thread_view& t) {
  for (const entry* c : t.of_kind(entry_kind::tool_call)) {
    std::size_t results = 0;
    for (const entry* r : t.with_ref("tool_call_id", c->refs.at("tool_call_id")))
      if (r->kind == entry_kind::tool_result && r->refs.at("call_id") == c->refs.at("call_id")) ++results;
    if (results != 1) return false;
  }
  return true;
}

}  // namespace troupe::testing
