// What crosses between nodes reads back as it was written: every
// stream_event alternative, a reply with an error and one with an answer,
// an ask and a decide envelope, through CAF's binary serialiser.

#include "actors/cluster/detail/wire.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::wire;

namespace {

template <class T>
std::vector<char> bytes_of(T& x) {
  std::vector<char> buffer;
  caf::binary_serializer sink{nullptr, buffer};
  REQUIRE(!sink(x));
  return buffer;
}

template <class T>
T read_back(T& x) {
  auto buffer = bytes_of(x);
  T out;
  caf::binary_deserializer source{nullptr, buffer};
  REQUIRE(!source(out));
  return out;
}

// Every field of a stream event, as text: stream events have no operator==.
std::string described(const stream_event& e) {
  auto usage = [](const token_usage& u) {
    return std::to_string(u.input_tokens) + "/" + std::to_string(u.output_tokens) + "/" +
           std::to_string(u.calls_without_usage);
  };
  auto error = [](const error_info& x) {
    return x.type + "|" + x.message + "|" + (x.http_status ? std::to_string(*x.http_status) : "-") + "|" +
           std::to_string(x.attempts) + "|" + (x.retry_after_seconds ? std::to_string(*x.retry_after_seconds) : "-");
  };
  auto approvals = [](const std::vector<open_approval>& pending) {
    std::string out;
    for (const auto& a : pending)
      out += a.tool_call_id + "|" + a.tool + "|" + json_text(a.arguments) + "|" + a.reason + "|" +
             std::to_string(a.expires_at) + "|" + (a.question ? "q" : "a") + ";";
    return out;
  };
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, delta_event>) {
          return "delta " + x.request_id + "|" + x.text + "|" + x.thinking + "|" + std::to_string(x.thread_seq);
        } else if constexpr (std::is_same_v<T, tool_started_event>) {
          return "started " + x.request_id + "|" + x.tool_call_id + "|" + x.tool_name + "|" + json_text(x.arguments) +
                 "|" + std::to_string(x.thread_seq);
        } else if constexpr (std::is_same_v<T, tool_finished_event>) {
          return "finished " + x.request_id + "|" + x.tool_call_id + "|" + x.tool_name + "|" +
                 (x.outcome.index() == 0 ? json_text(std::get<0>(x.outcome)) : error(std::get<1>(x.outcome))) + "|" +
                 std::to_string(x.thread_seq);
        } else if constexpr (std::is_same_v<T, approval_requested_event>) {
          return "approval " + x.request_id + "|" + approvals(x.pending) + "|" + std::to_string(x.thread_seq);
        } else {
          const reply& r = x.result;
          return "end " + r.request_id + "|" +
                 (r.ok() ? std::get<std::string>(r.outcome) : error(std::get<1>(r.outcome))) + "|" + usage(r.usage) +
                 "|" + std::to_string(r.iterations) + "|" + approvals(r.pending);
        }
      },
      e);
}

open_approval an_approval() {
  return open_approval{"call-7",          "deploy", {{"env", "prod"}, {"n", 2.5}}, "ships to production",
                       1'790'000'000'123, true};
}

std::vector<stream_event> every_alternative() {
  error_info throttled{"overloaded", "slow down", 429, 3, 1.5};
  return {
      delta_event{"r1", "Hel", "hmm", 4},
      tool_started_event{"r1", "c1", "add", {{"a", 2}, {"b", 14.127156320378683}, {"s", "é\n\"x\""}}, 5},
      tool_finished_event{"r1", "c1", "add", boost::json::value(boost::json::array{1, "two", nullptr}), 6},
      tool_finished_event{"r1", "c2", "fetch", throttled, 7},
      request_finished_event{reply{"r1", std::string("Hello"), token_usage{12, 34, 1}, 3}},
      request_finished_event{reply{"r2", error_info::of(error_type::node_lost, "gone"), token_usage{}, 1}},
      request_finished_event{
          reply{"r3", error_info::of(error_type::awaiting_input, "paused"), token_usage{5, 6, 0}, 2, {an_approval()}}},
      approval_requested_event{"r3", {an_approval(), open_approval{"call-8", "ask_human", {}, "why?", 0, false}}, 9},
  };
}

}  // namespace

TEST_CASE("every stream_event alternative reads back as it was written", "[cluster]") {
  for (const auto& e : every_alternative()) {
    INFO(described(e));
    event_envelope in{42, e};
    auto out = read_back(in);
    CHECK(out.key == 42);
    CHECK(out.event.index() == e.index());
    CHECK(described(out.event) == described(e));
  }
}

TEST_CASE("the event alternatives cover the whole variant", "[cluster]") {
  std::set<std::size_t> kinds;
  for (const auto& e : every_alternative()) kinds.insert(e.index());
  CHECK(kinds.size() == std::variant_size_v<stream_event>);
}

TEST_CASE("an ask envelope reads back with its overrides, observation, trace context and retry mark", "[cluster]") {
  query_overrides overrides;
  overrides.model = "m2";
  overrides.max_iterations = 4;
  overrides.params.temperature = 0.25;
  overrides.context.keep_last_turns = 3;
  ask_envelope in;
  in.key = 7;
  in.agent_id = "helper";
  in.request_id = "req-1";
  in.thread_id = "t";
  in.question = "What is 2 + 2?";
  in.overrides = to_json(overrides);
  in.observation = observation_origin{"social", 12};
  in.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  in.deadline_ms = 1500;
  in.stream = false;
  in.retry = true;
  auto out = read_back(in);
  CHECK(out.key == 7);
  CHECK(out.kind == ask_envelope::ask);
  CHECK(out.agent_id == "helper");
  CHECK(out.request_id == "req-1");
  CHECK(out.thread_id == "t");
  CHECK(out.question == in.question);
  auto decoded = decode_query_overrides(out.overrides, "overrides");
  REQUIRE(decoded.has_value());
  CHECK(*decoded == overrides);
  CHECK(out.observation == in.observation);
  CHECK(out.traceparent == in.traceparent);
  CHECK(out.deadline_ms == 1500);
  CHECK_FALSE(out.stream);
  CHECK(out.retry);
}

TEST_CASE("a decide envelope reads back with every field of its decision", "[cluster]") {
  ask_envelope in;
  in.kind = ask_envelope::decide;
  in.decided = decision{"req-1", "call-7", verdict::edit, "no", {{"env", "staging"}}, "ana", "key-1", "yes", true};
  auto out = read_back(in);
  CHECK(out.kind == ask_envelope::decide);
  CHECK(out.decided == in.decided);
}

TEST_CASE("a message that names an unknown alternative is refused, not misread", "[cluster]") {
  event_envelope in{1, delta_event{"r", "x", "", 0}};
  auto buffer = bytes_of(in);
  // The key (8 bytes), then the alternative's index.
  buffer.at(8) = 17;
  event_envelope out;
  caf::binary_deserializer source{nullptr, buffer};
  CHECK(source(out));
}
