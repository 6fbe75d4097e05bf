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
//
// In memory, payload and refs are typed (entry_payload.hpp, entry_refs.hpp);
// as JSON (thread_json.hpp, the stores, the command line) they are exactly
// the objects they were made from.

#include "thread/entry_payload.hpp"
#include "thread/entry_refs.hpp"
#include "thread/kind_name.hpp"
#include "thread/small_string.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace troupe {

// An entry before it is appended: the thread assigns id, seq and at. Made
// from a kind and JSON (typed on the way in when the kind has a struct), or
// from a typed payload, which names its kind.
struct entry_draft {
  std::string kind;
  entry_payload payload;
  entry_refs refs;

  entry_draft() = default;
  entry_draft(std::string kind, boost::json::object payload, entry_refs refs = {});
  entry_draft(message_payload p, entry_refs refs = {});      // NOLINT
  entry_draft(tool_call_payload p, entry_refs refs = {});    // NOLINT
  entry_draft(tool_result_payload p, entry_refs refs = {});  // NOLINT
  entry_draft(summary_payload p, entry_refs refs = {});      // NOLINT
  entry_draft(error_payload p, entry_refs refs = {});        // NOLINT

  // Any payload, typed or not, for an entry of `kind`.
  static entry_draft of(std::string kind, entry_payload payload, entry_refs refs);

  friend bool operator==(const entry_draft&, const entry_draft&) = default;
};

struct entry {
  small_string id;
  std::uint64_t seq = 0;
  std::int64_t at = 0;  // Unix milliseconds
  kind_name kind;
  entry_payload payload;
  entry_refs refs;
  // What the entry costs in a model's context (default_estimator), computed
  // once when it is appended and never again per projection.
  std::int64_t tokens = 0;

  friend bool operator==(const entry&, const entry&) = default;
};

// The thread's storage moves entries into place and relies on moves that
// cannot fail half-way.
static_assert(std::is_nothrow_move_constructible_v<entry>);

// A thread's first four entries are one block (append_log's first segment):
// up to 224 bytes an entry keep it in jemalloc's 896-byte class, and a field
// more moves every thread to the 1,024-byte one. The 8-byte kind, role and
// finish reason (interned_name.hpp) and the tool call's invalid_arguments
// among its extras brought an entry there from 256 bytes.
#ifndef _GLIBCXX_DEBUG  // its containers are larger
static_assert(sizeof(void*) != 8 || sizeof(entry) <= 224,
              "entry grew past 224 bytes: every thread's first entries move to a larger size class");
#endif

// The kind a typed payload is written for; empty for JSON.
std::string_view kind_of(const entry_payload& p);

// The default estimate of an entry's tokens: its text (content, tool name and
// arguments, result) and the per-message overhead.
std::int64_t estimate_tokens(std::string_view kind, const entry_payload& payload);

// Typed reads of JSON object members; nullopt when absent or of another type.
std::optional<std::string_view> string_field(const boost::json::object& o, std::string_view key);
std::optional<std::int64_t> int_field(const boost::json::object& o, std::string_view key);

}  // namespace troupe
