#pragma once
// An entry's payload in memory: a struct per kind troupe writes and reads
// itself, and plain JSON for every other kind. Each struct reads and writes
// exactly the JSON object it was made from, member order included: its
// fields in the order below (optional ones only when not empty), followed by
// any other members, kept as JSON. A payload that does not fit its kind's
// shape (a member of another type, the known members in another order) is
// kept whole as JSON; the accessors of entry_payload read either form.
//
//   message      {role, content, thinking?, finish_reason?}
//   tool_call    {name, arguments: {...}, invalid_arguments?}   (invalid_arguments among the extras)
//   tool_result  {name, result} | {name, error: {...}}
//   summary      {from_seq, to_seq, content, model?}
//   error        {type, message, ...}

#include "json/json_extras.hpp"
#include "json/json_text.hpp"
#include "signals/error_info.hpp"
#include "signals/tool_result.hpp"
#include "thread/interned_name.hpp"
#include "thread/small_string.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_ref.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace troupe {

// The roles and finish reasons the providers troupe speaks write: a
// message's role and finish reason take 8 bytes when they are one of these.
inline constexpr std::array<std::string_view, 13> message_words = {
    "user",           "assistant",     "system",   "tool",     "stop",       "length",       "tool_calls",
    "content_filter", "function_call", "end_turn", "tool_use", "max_tokens", "stop_sequence"};
using message_word = interned_name<message_words>;

struct message_payload {
  message_word role;
  small_string content;
  small_string thinking;       // absent when empty
  message_word finish_reason;  // absent when empty
  json_extras extra;

  friend bool operator==(const message_payload&, const message_payload&) = default;
};

struct tool_call_payload {
  small_string name;
  small_string arguments_text;  // the arguments object as JSON text (json_text)
  // invalid_arguments, when the model's arguments were not a JSON object,
  // is one of these (the first, as the machine writes it; read from JSON,
  // where it was): a field of its own made every entry 8 bytes larger for a
  // member that is rarely there.
  json_extras extra;

  // The machine's tool call.
  static tool_call_payload of(std::string_view name, const boost::json::object& arguments,
                              const std::optional<std::string>& invalid_arguments);
  boost::json::object arguments() const;
  friend bool operator==(const tool_call_payload&, const tool_call_payload&) = default;
};

struct tool_result_payload {
  enum class form : std::uint8_t { result_string, result_json, error_json };
  small_string name;
  small_string outcome;  // a string result itself; otherwise the result or the error as JSON text
  form shape = form::result_json;
  json_extras extra;

  static tool_result_payload of(std::string_view name, const tool_outcome& outcome);
  bool is_error() const { return shape == form::error_json; }
  // The result or the error as JSON.
  boost::json::value outcome_json() const;
  friend bool operator==(const tool_result_payload&, const tool_result_payload&) = default;
};

struct summary_payload {
  std::int64_t from_seq = 0;
  std::int64_t to_seq = 0;
  small_string content;
  small_string model;  // absent when empty
  json_extras extra;

  friend bool operator==(const summary_payload&, const summary_payload&) = default;
};

struct error_payload {
  small_string type;
  small_string message;
  json_extras extra;  // http_status, attempts, retry_after_seconds, …

  friend bool operator==(const error_payload&, const error_payload&) = default;
};

// Any other kind, or a known kind in a shape its struct does not hold.
struct json_payload {
  boost::json::object fields;

  friend bool operator==(const json_payload&, const json_payload&) = default;
};

class entry_payload {
 public:
  using variant = std::variant<json_payload, message_payload, tool_call_payload, tool_result_payload, summary_payload,
                               error_payload>;

  entry_payload() = default;
  // JSON without a kind stays JSON until typed by normalize() (the thread
  // does that when an entry is appended or restored).
  entry_payload(boost::json::object o) : v_(json_payload{std::move(o)}) {}  // NOLINT
  entry_payload(std::initializer_list<std::pair<boost::json::string_view, boost::json::value_ref>> init)
      : entry_payload(boost::json::object(init)) {}
  entry_payload(message_payload p) : v_(std::move(p)) {}      // NOLINT
  entry_payload(tool_call_payload p) : v_(std::move(p)) {}    // NOLINT
  entry_payload(tool_result_payload p) : v_(std::move(p)) {}  // NOLINT
  entry_payload(summary_payload p) : v_(std::move(p)) {}      // NOLINT
  entry_payload(error_payload p) : v_(std::move(p)) {}        // NOLINT

  // The payload of an entry of `kind` read from JSON: typed when the kind
  // has a struct and the object fits it, JSON otherwise.
  static entry_payload from_json(std::string_view kind, boost::json::object o);
  // Types a payload still held as JSON, as from_json() would.
  void normalize(std::string_view kind);

  const variant& get() const { return v_; }
  template <class T>
  const T* get_if() const {
    return std::get_if<T>(&v_);
  }
  bool is_typed() const { return !std::holds_alternative<json_payload>(v_); }

  // Any member, by key, from either form; nullopt when absent or of another type.
  std::optional<std::string_view> string(std::string_view key) const;
  std::optional<std::int64_t> integer(std::string_view key) const;
  std::optional<boost::json::value> value(std::string_view key) const;
  bool contains(std::string_view key) const { return value(key).has_value(); }
  // Like boost::json::object::at, but by value: throws std::out_of_range when absent.
  boost::json::value at(std::string_view key) const;

  boost::json::object to_json() const;
  // json_text(to_json()), written without building the object.
  void append_text(std::string& out) const;
  std::string text() const;

  friend bool operator==(const entry_payload& a, const entry_payload& b);
  friend bool operator==(const entry_payload& a, const boost::json::object& b) { return a.to_json() == b; }

 private:
  variant v_;
};

// The payload as JSON text, as json_text(to_json()) writes it.
inline std::string json_text(const entry_payload& p) { return p.text(); }

// Typed reads of payload members, as for JSON objects.
inline std::optional<std::string_view> string_field(const entry_payload& p, std::string_view key) {
  return p.string(key);
}
inline std::optional<std::int64_t> int_field(const entry_payload& p, std::string_view key) { return p.integer(key); }

}  // namespace troupe
