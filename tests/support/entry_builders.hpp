#pragma once
// Entry drafts in the shapes the strategy writes, for building threads in tests.

#include "thread/entry.hpp"

#include <boost/json.hpp>

#include <cstdint>
#include <string>

namespace troupe::testing {

inline entry_draft msg(std::string role, std::string content, std::string call_id = "") {
  boost::json::object refs;
  if (!call_id.empty()) refs["call_id"] = call_id;
  return {"message", {{"role", role}, {"content", content}}, std::move(refs)};
}

inline entry_draft tcall(const std::string& call_id, const std::string& id, const std::string& name = "lookup") {
  return {"tool_call", {{"name", name}, {"arguments", {{"k", id}}}}, {{"call_id", call_id}, {"tool_call_id", id}}};
}

// A result: with refs.call_id when `call_id` is given (as the machine writes
// it), without when empty (as other writers may).
inline entry_draft tresult(const std::string& call_id, const std::string& id, boost::json::value result,
                           const std::string& name = "lookup") {
  boost::json::object refs{{"tool_call_id", id}};
  if (!call_id.empty()) refs["call_id"] = call_id;
  return {"tool_result", {{"name", name}, {"result", std::move(result)}}, std::move(refs)};
}

inline entry_draft summary_of(std::uint64_t from, std::uint64_t to, std::string text) {
  return {"summary", {{"from_seq", from}, {"to_seq", to}, {"content", text}}, {}};
}

}  // namespace troupe::testing
