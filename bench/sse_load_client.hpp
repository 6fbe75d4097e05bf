#pragma once
// The client side of troupe serve's load benchmark: many conversations at
// once, each on its own keep-alive connection, each sending its turns one
// after another as POST /v1/conversations/{platform}/{chat}/messages with
// Accept: text/event-stream and reading the SSE answer to its end. All of
// them run as coroutines on a few threads, never a thread per connection.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe::bench {

struct load_target {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string key;    // Authorization: Bearer KEY
  std::string agent;  // the agent every turn asks
};

struct load_plan {
  std::size_t conversations = 1000;
  std::size_t turns = 10;  // per conversation, at most
  // Nothing starts after this (a soak runs until it); turns running then finish.
  std::chrono::milliseconds duration{std::chrono::minutes(10)};
  // The whole run is abandoned past this (a server that stopped answering).
  std::chrono::milliseconds deadline{std::chrono::minutes(15)};
  std::string chat_prefix = "c";  // chat ids are PREFIX-N: a run's own conversations
  // Non-zero: each conversation moves to a new chat (PREFIX-N-G) after this
  // many turns, so that old threads go idle as in a long-lived service.
  std::size_t turns_per_chat = 0;
  std::size_t threads = 2;
};

struct turn_sample {
  double first_event_ms = 0;  // request written → first SSE event (the "conversation" event)
  double first_delta_ms = 0;  // request written → first message.delta
  double latency_ms = 0;      // request written → message.completed read
  double end_ms = 0;          // when the turn ended, from the run's start
};

struct load_result {
  std::vector<turn_sample> turns;     // completed turns, in the order they ended
  std::size_t failed = 0;             // requests that did not end in message.completed
  std::vector<std::string> failures;  // the first few, described
  double seconds = 0;
};

load_result run_load(const load_target& target, const load_plan& plan);

}  // namespace troupe::bench
