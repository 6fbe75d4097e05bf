#pragma once
// An entry's kind in 8 bytes. Kinds are open strings, but nearly every entry
// has one of the few troupe writes itself: those point at a constant, and
// only another kind takes a heap block of its own (interned_name.hpp). In a
// small_string the kind took 24 bytes of every entry.

#include "thread/interned_name.hpp"

#include <array>
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
// A tool call waiting for a person, and the person's (or the deadline's) answer:
//   approval_request  {tool, arguments, reason, expires_at, question?, agent?}   refs.tool_call_id
//   decision          {verdict, decided_by, message?, arguments?, idempotency_key?, expired?}
// Rare beside the others, they are not interned.
inline constexpr std::string_view approval_request = "approval_request";
inline constexpr std::string_view decision = "decision";
inline constexpr std::array<std::string_view, 7> known = {message, tool_call, tool_result, summary,
                                                          note,    error,     checkpoint};
}  // namespace entry_kind

using kind_name = interned_name<entry_kind::known>;

static_assert(sizeof(kind_name) == 8);
static_assert(std::is_nothrow_move_constructible_v<kind_name>);

}  // namespace troupe
