#pragma once
// A finished span, as an exporter sends it: ids, name, kind, times,
// attributes and status, with nothing left to compute. The OTLP data model's
// shape, reduced to what troupe's spans use.

#include "runtime/telemetry/trace_context.hpp"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace troupe {

// OTLP's numbering.
enum class span_kind { internal = 1, server = 2, client = 3 };
enum class span_status { unset = 0, ok = 1, error = 2 };

using attribute_value = std::variant<std::string, std::int64_t, double, bool, std::vector<std::string>>;

struct span_attribute {
  std::string key;
  attribute_value value;
  friend bool operator==(const span_attribute&, const span_attribute&) = default;
};

struct span {
  span_context context;
  std::uint64_t parent_span_id = 0;  // 0: a root span
  std::string name;
  span_kind kind = span_kind::internal;
  std::int64_t start_unix_ns = 0;
  std::int64_t end_unix_ns = 0;
  std::vector<span_attribute> attributes;
  span_status status = span_status::unset;
  std::string status_message;  // with an error status only

  // The attribute's value, or null.
  const attribute_value* attribute(std::string_view key) const {
    for (const auto& a : attributes)
      if (a.key == key) return &a.value;
    return nullptr;
  }
};

}  // namespace troupe
