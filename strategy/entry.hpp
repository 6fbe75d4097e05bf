#pragma once
// One record of a thread. Kinds are open strings; these are the ones troupe
// writes and reads itself, with their payload conventions:
//
//   message      {role: "user"|"assistant"|"system", content}
//   tool_call    {name, arguments: {...}}              refs.tool_call_id
//   tool_result  {name, result} | {name, error: {type, message}}   refs.tool_call_id
//   summary      {from_seq, to_seq, content}
//   error        {type, message, ...}: why a request ended without an answer
//
// refs carry the correlation ids: request_id, call_id, tool_call_id, iteration.

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace troupe {

namespace entry_kind {
inline constexpr std::string_view message = "message";
inline constexpr std::string_view tool_call = "tool_call";
inline constexpr std::string_view tool_result = "tool_result";
inline constexpr std::string_view summary = "summary";
inline constexpr std::string_view note = "note";
inline constexpr std::string_view error = "error";
inline constexpr std::string_view checkpoint = "checkpoint";
}  // namespace entry_kind

// An entry before it is appended: the thread assigns id, seq and at.
struct entry_draft {
  std::string kind;
  boost::json::object payload;
  boost::json::object refs;

  friend bool operator==(const entry_draft&, const entry_draft&) = default;
};

struct entry {
  std::string id;
  std::uint64_t seq = 0;
  std::int64_t at = 0;  // Unix milliseconds
  std::string kind;
  boost::json::object payload;
  boost::json::object refs;
  // What the entry costs in a model's context (default_estimator), computed
  // once when it is appended and never again per projection.
  std::int64_t tokens = 0;

  friend bool operator==(const entry&, const entry&) = default;
};

// The thread's storage moves entries into place and relies on moves that
// cannot fail half-way.
static_assert(std::is_nothrow_move_constructible_v<entry>);

// The default estimate of an entry's tokens: its text (content, tool name and
// arguments, result) and the per-message overhead.
std::int64_t estimate_tokens(std::string_view kind, const boost::json::object& payload);

// Typed reads of refs and payload fields; nullopt when absent or of another type.
std::optional<std::string_view> string_field(const boost::json::object& o, std::string_view key);
std::optional<std::int64_t> int_field(const boost::json::object& o, std::string_view key);

}  // namespace troupe
