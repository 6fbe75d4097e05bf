#pragma once
// An entry's refs: the correlation ids the runtime reads (request_id,
// call_id, tool_call_id, iteration) as fields, and any other member kept as
// JSON. It reads and writes exactly the JSON object it was made from, member
// order included: the known ids may come in any order, followed by the
// others. A refs object that does not fit that shape (an id that is not a
// string, an unknown member before a known one) is kept whole as JSON, and
// the accessors read it from there.

#include "json/json_extras.hpp"
#include "thread/small_string.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_ref.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace troupe {

class entry_refs {
 public:
  entry_refs() = default;
  entry_refs(const boost::json::object& o);  // NOLINT: stands for the JSON object it reads
  entry_refs(std::initializer_list<std::pair<boost::json::string_view, boost::json::value_ref>> init)
      : entry_refs(boost::json::object(init)) {}

  // The refs the ReAct machine writes: request_id, iteration, then call_id
  // and tool_call_id when given.
  static entry_refs of(std::string_view request_id, std::int64_t iteration, std::string_view call_id = {},
                       std::string_view tool_call_id = {});

  // "" when absent (or not a string).
  std::string_view request_id() const { return id(known::request_id); }
  std::string_view call_id() const { return id(known::call_id); }
  std::string_view tool_call_id() const { return id(known::tool_call_id); }
  std::optional<std::int64_t> iteration() const;

  // Any member, by key; nullopt when absent or of another type.
  std::optional<std::string_view> string(std::string_view key) const;
  std::optional<std::int64_t> integer(std::string_view key) const;
  std::optional<boost::json::value> value(std::string_view key) const;
  bool contains(std::string_view key) const { return value(key).has_value(); }
  // Like boost::json::object::at, but by value: throws std::out_of_range when absent.
  boost::json::value at(std::string_view key) const;
  bool empty() const { return count_ == 0 && extras_.empty(); }

  // Members without a field of their own, in their order.
  const json_extras& extras() const { return extras_; }

  boost::json::object to_json() const;
  // Sets (or adds, at the end) one member.
  void set(std::string_view key, boost::json::value v);

  friend bool operator==(const entry_refs&, const entry_refs&) = default;
  friend bool operator==(const entry_refs& a, const boost::json::object& b) { return a.to_json() == b; }
  friend std::string json_text(const entry_refs& r);
  friend class entry_codec;  // writes and reads the fields as they are (entry_codec.hpp)

 private:
  enum class known : std::uint8_t { request_id, iteration, call_id, tool_call_id };
  static std::optional<known> known_key(std::string_view key);
  static std::string_view key_name(known k);

  bool has(known k) const;
  void add(known k) {
    order_ |= static_cast<std::uint8_t>(static_cast<unsigned>(k) << (2 * count_));
    ++count_;
  }
  std::string_view id(known k) const;

  small_string request_id_, call_id_, tool_call_id_;
  // 32 bits, beside the two bytes below, keep the refs (and an entry) 8 bytes
  // smaller; an iteration beyond them keeps the whole object as JSON.
  std::int32_t iteration_ = 0;
  std::uint8_t order_ = 0;  // the known members present, two bits each, in JSON order
  std::uint8_t count_ = 0;
  json_extras extras_;
};

// The refs as JSON text, as json_text(to_json()) writes it.
std::string json_text(const entry_refs& r);

// Typed reads of refs members, as for JSON objects; nullopt when absent or of another type.
inline std::optional<std::string_view> string_field(const entry_refs& r, std::string_view key) { return r.string(key); }
inline std::optional<std::int64_t> int_field(const entry_refs& r, std::string_view key) { return r.integer(key); }

}  // namespace troupe
