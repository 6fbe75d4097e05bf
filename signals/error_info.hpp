#pragma once
// A typed error as a value. Errors travel as data through troupe: a failed
// tool becomes a tool result the model reads, a failed LLM call ends its
// request with one of these in the reply.

#include "json/decode_error.hpp"

#include <boost/json/value.hpp>

#include <optional>
#include <string>

namespace troupe {

// The error types troupe itself produces. `type` stays an open string so a
// tool can report its own ("not_found", "quota"), which the model then reads.
namespace error_type {
// request lifecycle
inline constexpr const char* busy = "busy";
inline constexpr const char* cancelled = "cancelled";
inline constexpr const char* max_iterations = "max_iterations";
inline constexpr const char* invalid_query = "invalid_query";
// an ask whose request id names a request of the same agent that is still running
inline constexpr const char* duplicate_request = "duplicate_request";
// tool calls
inline constexpr const char* unknown_tool = "unknown_tool";
inline constexpr const char* invalid_arguments = "invalid_arguments";
inline constexpr const char* interrupted = "interrupted";
inline constexpr const char* timeout = "timeout";
inline constexpr const char* tool_failed = "tool_failed";
inline constexpr const char* overloaded = "overloaded";  // also a model error
// approvals: a call a person rejected, or that its rule denied outright; a
// decision too late, or for a call decided already
inline constexpr const char* rejected = "rejected";
inline constexpr const char* denied = "denied";
inline constexpr const char* expired = "expired";
inline constexpr const char* already_decided = "already_decided";
// a decision that does not fit its call: an edit or a sticky decision for a
// question, a sticky rejection
inline constexpr const char* invalid_decision = "invalid_decision";
inline constexpr const char* awaiting_input = "awaiting_input";  // a reply's: the request paused for decisions
// the runtime
inline constexpr const char* shutdown = "shutdown";
inline constexpr const char* queue_full = "queue_full";
inline constexpr const char* deadline_exceeded = "deadline_exceeded";
inline constexpr const char* callback_failed = "callback_failed";
inline constexpr const char* not_found = "not_found";
inline constexpr const char* agent_crashed = "agent_crashed";
inline constexpr const char* agent_stopped = "agent_stopped";
inline constexpr const char* agent_failed = "agent_failed";
inline constexpr const char* executor_crashed = "executor_crashed";
inline constexpr const char* broker_crashed = "broker_crashed";
inline constexpr const char* store_failed = "store_failed";
inline constexpr const char* store_timeout = "store_timeout";  // the store did not answer within its deadline
// one writer per thread, across processes (runtime/store/thread_lease.hpp)
inline constexpr const char* thread_owned_elsewhere = "thread_owned_elsewhere";
inline constexpr const char* lease_lost = "lease_lost";
// another node (actors/cluster/node.hpp): its connection dropped or it died
// while a request ran there (or it could not be reached); it refused us
// (authentication); it runs a different build, whose messages we cannot read
inline constexpr const char* node_lost = "node_lost";
inline constexpr const char* node_refused = "node_refused";
inline constexpr const char* incompatible_build = "incompatible_build";
// model calls (see runtime/llm/llm_errors.hpp for the HTTP ones)
inline constexpr const char* provider_failed = "provider_failed";
inline constexpr const char* network = "network";
inline constexpr const char* malformed_response = "malformed_response";
inline constexpr const char* response_too_large = "response_too_large";
inline constexpr const char* script_exhausted = "script_exhausted";
}  // namespace error_type

struct error_info {
  std::string type;
  std::string message;
  std::optional<int> http_status;             // for errors that came over HTTP
  int attempts = 0;                           // model calls made, when retried
  std::optional<double> retry_after_seconds;  // what the server asked for

  // The way to make one: error_info::of(error_type::timeout, "…"), with the
  // number of attempts when the failing call was tried more than once.
  static error_info of(std::string type, std::string message, int attempts = 0) {
    return error_info{std::move(type), std::move(message), std::nullopt, attempts, std::nullopt};
  }

  friend bool operator==(const error_info&, const error_info&) = default;
};

boost::json::value to_json(const error_info& e);
decoded<error_info> decode_error_info(const boost::json::value& v, std::string path);

}  // namespace troupe
