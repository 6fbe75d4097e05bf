#include "runtime/telemetry/trace_context.hpp"

namespace troupe {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

void append_hex(std::string& out, std::uint64_t v, int digits) {
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out.push_back(hex_digits[(v >> shift) & 15]);
}

// Lower-case hex only: W3C treats upper-case digits as an invalid header.
std::optional<std::uint64_t> read_hex(std::string_view s) {
  std::uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else
      return std::nullopt;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}

}  // namespace

std::optional<span_context> parse_traceparent(std::string_view h) {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2.
  constexpr std::size_t length = 55;
  if (h.size() < length || h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  const auto version = read_hex(h.substr(0, 2));
  if (!version || *version == 0xff) return std::nullopt;
  // Version 00 is exactly this long; a later version may append fields after a dash.
  if (*version == 0 ? h.size() != length : (h.size() > length && h[length] != '-')) return std::nullopt;
  const auto high = read_hex(h.substr(3, 16)), low = read_hex(h.substr(19, 16));
  const auto span = read_hex(h.substr(36, 16)), flags = read_hex(h.substr(53, 2));
  if (!high || !low || !span || !flags) return std::nullopt;
  span_context c{*high, *low, *span, static_cast<std::uint8_t>(*flags)};
  if (!c.valid()) return std::nullopt;
  return c;
}

std::string format_traceparent(const span_context& c) {
  std::string out;
  out.reserve(55);
  out += "00-";
  append_hex(out, c.trace_high, 16);
  append_hex(out, c.trace_low, 16);
  out.push_back('-');
  append_hex(out, c.span_id, 16);
  out.push_back('-');
  append_hex(out, c.flags, 2);
  return out;
}

std::uint64_t new_span_id(random_ids& ids) {
  std::uint64_t id;
  do id = ids.next_u64();
  while (id == 0);
  return id;
}

span_context child_span(const span_context& parent, random_ids& ids, bool sample_new) {
  if (parent.valid()) return {parent.trace_high, parent.trace_low, new_span_id(ids), parent.flags};
  span_context c{0, 0, new_span_id(ids), static_cast<std::uint8_t>(sample_new ? 1 : 0)};
  while (c.trace_high == 0 && c.trace_low == 0) {
    c.trace_high = ids.next_u64();
    c.trace_low = ids.next_u64();
  }
  return c;
}

std::string trace_id_hex(const span_context& c) {
  std::string out;
  out.reserve(32);
  append_hex(out, c.trace_high, 16);
  append_hex(out, c.trace_low, 16);
  return out;
}

std::string span_id_hex(std::uint64_t span_id) {
  std::string out;
  out.reserve(16);
  append_hex(out, span_id, 16);
  return out;
}

}  // namespace troupe
