#pragma once
// What crosses between nodes, and how CAF serialises it. Every message a
// node sends another carries only the envelopes below (and atoms, strings),
// each registered with add_message_type on both ends (register_wire_types).
//
// reply, decision, query and stream_event are CAF "unsafe" message types
// inside a process (actors/detail/protocols.hpp): a serialiser skips such a
// type silently. So they never appear whole in an inspect here; the
// envelopes inspect their fields one by one (reply_fields, …). JSON members
// (tool arguments, results) travel as their JSON text, which parse_json reads
// back to the same value, bit for bit.
//
// This header and every project header it includes are the wire's sources:
// the build id nodes compare (node.hpp) holds their digest, so nodes that
// could misread each other never talk.

#include "actors/stream_event.hpp"
#include "directives/reply.hpp"
#include "json/json_parse.hpp"
#include "json/json_text.hpp"
#include "signals/decision.hpp"
#include "signals/query.hpp"

#include <caf/all.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace troupe::wire {

// The messages between nodes, a caller's link to a gateway and back (the
// handshake and its token: handshake.hpp). Only these cross; what a node's
// own actors tell each other is local_messages.hpp.
//   hello, caller nonce                  -> gateway nonce, gateway proof
//   proof, gateway nonce, caller proof   -> accepted
//   rask, token, ask_envelope            -> error type, message, deadline
//   rcancel, token, key, reason
//   revent, token, event_envelope        (to the link)
using hello_atom = caf::atom_constant<caf::atom("hello")>;
using proof_atom = caf::atom_constant<caf::atom("proof")>;
using rask_atom = caf::atom_constant<caf::atom("rask")>;
using revent_atom = caf::atom_constant<caf::atom("revent")>;
using rcancel_atom = caf::atom_constant<caf::atom("rcancel")>;

// --- helpers for members CAF cannot inspect as they are ---------------------

// A JSON value (or object) as its text.
template <class Json>
struct json_ref {
  Json& value;
};

template <class Inspector, class Json>
typename Inspector::result_type inspect(Inspector& f, json_ref<Json>& x) {
  std::string text;
  if constexpr (Inspector::reads_state) {
    text = json_text(x.value);
    return f(text);
  } else {
    if (auto e = f(text)) return e;
    boost::system::error_code ec;
    auto v = parse_json(text, ec);
    if (ec) return caf::make_error(caf::sec::invalid_argument, "JSON member: " + ec.message());
    if constexpr (std::is_same_v<Json, boost::json::object>) {
      if (!v.is_object()) return caf::make_error(caf::sec::invalid_argument, "JSON member is not an object");
      x.value = std::move(v.as_object());
    } else {
      x.value = std::move(v);
    }
    return caf::none;
  }
}

// std::optional<T>: a flag, then the value when there is one.
template <class T>
struct optional_ref {
  std::optional<T>& value;
};

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, optional_ref<T>& x) {
  bool has = x.value.has_value();
  if constexpr (Inspector::reads_state) {
    if (!has) return f(has);
    return f(has, *x.value);
  } else {
    if (auto e = f(has)) return e;
    if (!has) {
      x.value.reset();
      return caf::none;
    }
    x.value.emplace();
    return f(*x.value);
  }
}

// std::variant<Ts...>: the alternative's index, then the alternative.
template <class Variant>
struct variant_ref {
  Variant& value;
};

template <class Variant, std::size_t... I>
bool emplace_index(Variant& v, std::size_t index, std::index_sequence<I...>) {
  return ((index == I ? (v.template emplace<I>(), true) : false) || ...);
}

template <class Inspector, class Variant>
typename Inspector::result_type inspect(Inspector& f, variant_ref<Variant>& x) {
  auto index = static_cast<std::uint8_t>(x.value.index());
  if constexpr (Inspector::reads_state) {
    return std::visit([&](auto& alternative) { return f(index, alternative); }, x.value);
  } else {
    if (auto e = f(index)) return e;
    if (!emplace_index(x.value, index, std::make_index_sequence<std::variant_size_v<Variant>>{}))
      return caf::make_error(caf::sec::invalid_argument, "unknown variant index " + std::to_string(index));
    return std::visit([&](auto& alternative) { return f(alternative); }, x.value);
  }
}

}  // namespace troupe::wire

// --- troupe's own types that are safe to inspect directly --------------------

namespace troupe {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_usage& x) {
  return f(caf::meta::type_name("token_usage"), x.input_tokens, x.output_tokens, x.calls_without_usage);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, error_info& x) {
  wire::optional_ref<int> status{x.http_status};
  wire::optional_ref<double> retry{x.retry_after_seconds};
  return f(caf::meta::type_name("error_info"), x.type, x.message, status, x.attempts, retry);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, open_approval& x) {
  wire::json_ref<boost::json::object> arguments{x.arguments};
  return f(caf::meta::type_name("open_approval"), x.tool_call_id, x.tool, arguments, x.reason, x.expires_at,
           x.question);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, observation_origin& x) {
  return f(caf::meta::type_name("observation_origin"), x.source, x.round);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delta_event& x) {
  return f(caf::meta::type_name("delta_event"), x.request_id, x.text, x.thinking, x.thread_seq);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tool_started_event& x) {
  wire::json_ref<boost::json::object> arguments{x.arguments};
  return f(caf::meta::type_name("tool_started_event"), x.request_id, x.tool_call_id, x.tool_name, arguments,
           x.thread_seq);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tool_finished_event& x) {
  // tool_outcome (variant<json value, error_info>) is an unsafe local
  // message type: it travels as an index and both alternatives' slots.
  std::uint8_t index = static_cast<std::uint8_t>(x.outcome.index());
  boost::json::value result = x.outcome.index() == 0 ? std::get<0>(x.outcome) : boost::json::value();
  error_info error = x.outcome.index() == 1 ? std::get<1>(x.outcome) : error_info{};
  wire::json_ref<boost::json::value> result_ref{result};
  auto rebuild = caf::meta::load_callback([&]() -> caf::error {
    if (index == 0)
      x.outcome = std::move(result);
    else if (index == 1)
      x.outcome = std::move(error);
    else
      return caf::make_error(caf::sec::invalid_argument, "unknown tool outcome");
    return caf::none;
  });
  return f(caf::meta::type_name("tool_finished_event"), x.request_id, x.tool_call_id, x.tool_name, index, result_ref,
           error, x.thread_seq, rebuild);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, approval_requested_event& x) {
  return f(caf::meta::type_name("approval_requested_event"), x.request_id, x.pending, x.thread_seq);
}

namespace wire {

// A reply's fields (reply itself is an unsafe local message type).
struct reply_fields {
  reply& value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reply_fields& x) {
  variant_ref<std::variant<std::string, error_info>> outcome{x.value.outcome};
  return f(caf::meta::type_name("reply"), x.value.request_id, outcome, x.value.usage, x.value.iterations,
           x.value.pending);
}

}  // namespace wire

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_finished_event& x) {
  wire::reply_fields result{x.result};
  return f(caf::meta::type_name("request_finished_event"), result);
}

namespace wire {

struct decision_fields {
  decision& value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, decision_fields& x) {
  auto& d = x.value;
  std::string answer{to_string(d.answer)};
  json_ref<boost::json::object> arguments{d.arguments};
  auto parse = caf::meta::load_callback([&]() -> caf::error {
    auto v = parse_verdict(answer);
    if (!v) return caf::make_error(caf::sec::invalid_argument, "unknown verdict " + answer);
    d.answer = *v;
    return caf::none;
  });
  return f(caf::meta::type_name("decision"), d.request_id, d.tool_call_id, answer, parse, d.message, arguments,
           d.decided_by, d.idempotency_key, d.response, d.sticky);
}

// --- the envelopes -----------------------------------------------------------

// An ask or a decide for an agent of the node that receives it. `key`
// names the request between the two nodes (the caller's own counter: a
// caller may reuse request ids, and nodes never share one).
struct ask_envelope {
  enum kind_t : std::uint8_t { ask = 0, decide = 1 };
  std::uint64_t key = 0;
  std::uint8_t kind = ask;
  std::string agent_id;
  std::string request_id;  // ask: empty makes one up; decide: the decision's
  std::string thread_id;
  std::string question;                             // ask
  boost::json::value overrides;                     // ask: query_overrides as JSON (signals/query.hpp)
  std::optional<observation_origin> observation{};  // ask
  decision decided{};                               // decide
  std::string traceparent;
  std::int64_t deadline_ms = 0;  // 0: the agent spec's
  bool stream = true;            // false: only the request_finished_event
  bool outlives_caller = false;  // ask: ask_options::outlives_caller
  bool retry = false;            // ask: ask_options::retry
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ask_envelope& x) {
  json_ref<boost::json::value> overrides{x.overrides};
  optional_ref<observation_origin> observation{x.observation};
  decision_fields decided{x.decided};
  return f(caf::meta::type_name("troupe_ask"), x.key, x.kind, x.agent_id, x.request_id, x.thread_id, x.question,
           overrides, observation, decided, x.traceparent, x.deadline_ms, x.stream, x.outlives_caller, x.retry);
}

// One stream event of the request `key`, from the node that runs it.
struct event_envelope {
  std::uint64_t key = 0;
  stream_event event;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_envelope& x) {
  variant_ref<stream_event> event{x.event};
  return f(caf::meta::type_name("troupe_event"), x.key, event);
}

// Every type a node puts in a message to another, on every node.
inline void register_wire_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<ask_envelope>("troupe_ask");
  cfg.add_message_type<event_envelope>("troupe_event");
}

}  // namespace wire
}  // namespace troupe
