#pragma once
// A user's question to an agent: starts a request on a thread.

#include "json/decode_error.hpp"
#include "signals/generation_params.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace troupe {

// Per-request changes to the agent's context policy (see context/context_policy.hpp).
struct context_overrides {
  std::optional<std::int64_t> max_input_tokens;
  std::optional<std::int64_t> reserve_output_tokens;
  std::optional<std::int64_t> max_messages;
  std::optional<std::int64_t> keep_last_turns;
  std::optional<bool> summarize;       // true: request summaries; false: use existing ones only
  std::optional<double> summarize_to;  // in (0, 1]: what a new summary leaves of the window

  bool empty() const {
    return !max_input_tokens && !reserve_output_tokens && !max_messages && !keep_last_turns && !summarize &&
           !summarize_to;
  }
  friend bool operator==(const context_overrides&, const context_overrides&) = default;
};

boost::json::value to_json(const context_overrides& o);
decoded<context_overrides> decode_context_overrides(const boost::json::value& v, std::string path);

// Per-request settings that take precedence over the agent's configuration.
struct query_overrides {
  std::optional<std::string> model;
  std::optional<std::string> system_prompt;
  std::optional<int> max_iterations;
  generation_params params;
  context_overrides context;

  friend bool operator==(const query_overrides&, const query_overrides&) = default;
};

boost::json::value to_json(const query_overrides& o);
decoded<query_overrides> decode_query_overrides(const boost::json::value& v, std::string path);

// Where a question came from when it is not a person's: what a simulation's
// world delivered to an agent it activated (its observation), in which
// round. The text is what the model reads; the origin is committed with it,
// so a thread tells an observation from a user's message.
struct observation_origin {
  std::string source;  // the world that made the observation ("social", …)
  std::int64_t round = 0;

  friend bool operator==(const observation_origin&, const observation_origin&) = default;
};

boost::json::value to_json(const observation_origin& o);
decoded<observation_origin> decode_observation_origin(const boost::json::value& v, std::string path);

struct query {
  std::string request_id;
  std::string thread_id;  // empty: the agent's default thread
  std::string text;
  query_overrides overrides;
  // The caller's W3C trace context (a traceparent header's value): the
  // request's spans join that trace. Empty: none.
  std::string traceparent{};
  // Set: the text is an observation, not a user's question.
  std::optional<observation_origin> observation{};
  // The ask repeats one whose answer was lost, under the same request id
  // (ask_options::retry): the thread may hold the request already. Only
  // then does the machine look for it there (a walk of the thread's refs).
  bool retry = false;

  friend bool operator==(const query&, const query&) = default;
};

}  // namespace troupe
