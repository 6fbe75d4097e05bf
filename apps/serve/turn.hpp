#pragma once
// One turn of a conversation as the server sees it: the events it has sent
// so far (kept, so that a client can reconnect and miss none) and, once it
// has ended, its result. Subscribers get the kept events after the one they
// saw last, then every new one, in order. Event ids are places in the
// thread (event_position.hpp); a delta's id counts its model call's bytes,
// so that a reader who saw part of a delta's text gets the rest of it. Once
// the turn has ended, each run of message.delta events of one model call is
// kept as one (the run's text, under its last delta's id).

#include "apps/serve/sse.hpp"

#include "actors/runtime.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace troupe::serve {

struct turn_result {
  reply outcome;
  std::optional<std::size_t> entries_appended;
  bool usage_known = true;  // false for a turn read back from its thread
};

struct turn_ids {
  std::string request_id;
  std::string conversation_id;
  std::string thread_id;
  std::string agent_id;
  std::string user;
  std::string content;  // the user's message
  std::string idempotency_key;
  query_overrides overrides{};   // system prompt and sampling for this turn (the OpenAI endpoint's)
  std::string traceparent{};     // the caller's W3C trace context: the turn's spans continue its trace
  std::int64_t asked_at_ms = 0;  // wall clock; an OpenAI answer's `created` (a repeat's too)
  // The thread holds this request, unended (a retried Idempotency-Key whose
  // process died under it): it is asked as a retry (ask_options::retry).
  bool continues = false;
};

class turn {
 public:
  using sink = std::function<void(const sse_event&, bool last)>;

  explicit turn(turn_ids ids) : ids_(std::move(ids)) {}
  const turn_ids& ids() const { return ids_; }

  // `s` gets the kept events with id > after, then each new one, under the
  // turn's lock (keep it short and never call back into the turn). Returns
  // 0 if nothing follows (the turn has ended and the last event was sent).
  std::uint64_t subscribe(std::uint64_t after, sink s);
  void unsubscribe(std::uint64_t subscription);
  // `f` gets the result once the turn has ended (at once if it has).
  void when_finished(std::function<void(const turn_result&)> f);
  bool finished() const;
  std::optional<turn_result> result() const;

  // The running request, once asked; a cancel that came first is applied then.
  void attach(request r);
  void cancel(const std::string& reason);

  // The producer's side: an event with its id (0 for the conversation
  // event, which has none), then finally the last one with the result.
  void push(std::string name, const boost::json::value& data, std::uint64_t id);
  void finish(turn_result r, std::string name, const boost::json::value& data, std::uint64_t id);

  // The id of the newest event pushed (0: none has one yet).
  std::uint64_t newest_event_id() const;

  // What the kept events hold, in bytes (their text, and a little per event).
  std::size_t kept_bytes() const;

  std::chrono::steady_clock::time_point started() const { return started_; }
  // When the first event from the agent came (not the server's own first one).
  std::optional<std::chrono::steady_clock::time_point> first_agent_event() const;

 private:
  void deliver(const sse_event& e, bool last);
  void coalesce_deltas();

  turn_ids ids_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  mutable std::mutex mutex_;
  std::vector<sse_event> events_;
  // Where the turn's ids begin (event_position.hpp): a reader from before
  // it gets the conversation event; 0 until the first id.
  std::uint64_t start_ = 0;
  std::size_t kept_bytes_ = 0;
  std::map<std::uint64_t, sink> sinks_;
  std::uint64_t next_sink_ = 1;
  std::optional<turn_result> result_;
  std::vector<std::function<void(const turn_result&)>> waiting_;
  std::optional<request> request_;
  std::optional<std::string> cancel_reason_;
  std::optional<std::chrono::steady_clock::time_point> first_agent_event_;
};

}  // namespace troupe::serve
