#include "json/json_text.hpp"

#include "json/utf8.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <string_view>

namespace troupe {

namespace json = boost::json;

namespace {

// For each byte, how Boost.JSON's serializer escapes it: 0 when it does not,
// the letter of the quote, the backslash and the five control characters
// that have one, 'u' for every other control character (\u00xx, in lower
// case); 'v' for a byte past ASCII, whose sequence is checked (what is not
// UTF-8 is written as U+FFFD: see utf8.hpp). A table, so that the bytes
// between two escapes are found a byte a lookup and copied at once.
constexpr std::array<char, 256> escapes = [] {
  std::array<char, 256> e{};
  for (int c = 0; c < 0x20; ++c) e[static_cast<std::size_t>(c)] = 'u';
  for (int c = 0x80; c < 0x100; ++c) e[static_cast<std::size_t>(c)] = 'v';
  e['"'] = '"';
  e['\\'] = '\\';
  e['\b'] = 'b';
  e['\f'] = 'f';
  e['\n'] = 'n';
  e['\r'] = 'r';
  e['\t'] = 't';
  return e;
}();

void append_escaped(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::size_t run = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const char letter = escapes[c];
    if (!letter) continue;
    if (letter == 'v') {
      if (const std::size_t length = utf8_sequence_at(s, i)) {
        i += length - 1;
        continue;
      }
      // Rare: the rest is repaired once and written from the copy.
      out.append(s.data() + run, i - run);
      append_escaped(out, valid_utf8(s.substr(i)));
      return;
    }
    out.append(s.data() + run, i - run);
    run = i + 1;
    if (letter != 'u') {
      const char escaped[2] = {'\\', letter};
      out.append(escaped, 2);
    } else {
      const char escaped[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
      out.append(escaped, 6);
    }
  }
  out.append(s.data() + run, s.size() - run);
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  append_escaped(out, s);
  out.push_back('"');
}

std::optional<std::size_t> json_string_size(std::string_view s) noexcept {
  std::size_t n = 2;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char letter = escapes[static_cast<unsigned char>(s[i])];
    if (!letter) {
      ++n;
    } else if (letter == 'v') {
      const std::size_t length = utf8_sequence_at(s, i);
      if (!length) return std::nullopt;
      n += length;
      i += length - 1;
    } else {
      n += letter == 'u' ? 6 : 2;
    }
  }
  return n;
}

namespace {

template <class Number>
void append_number(std::string& out, Number n) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, r.ptr);
}

}  // namespace

void append_json_double(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out.append("null");
    return;
  }
  const std::size_t start = out.size();
  append_number(out, d);  // the shortest form that round-trips, fixed or scientific
  if (out.find_first_of(".e", start) == std::string::npos) out.append(".0");
}

namespace {

void append_value(std::string& out, const json::value& v);

void append_object(std::string& out, const json::object& o) {
  out.push_back('{');
  bool first = true;
  for (const auto& kv : o) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, kv.key());
    out.push_back(':');
    append_value(out, kv.value());
  }
  out.push_back('}');
}

void append_array(std::string& out, const json::array& a) {
  out.push_back('[');
  bool first = true;
  for (const json::value& x : a) {
    if (!first) out.push_back(',');
    first = false;
    append_value(out, x);
  }
  out.push_back(']');
}

void append_value(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      out.append("null");
      break;
    case json::kind::bool_:
      out.append(v.get_bool() ? "true" : "false");
      break;
    case json::kind::int64:
      append_number(out, v.get_int64());
      break;
    case json::kind::uint64:
      append_number(out, v.get_uint64());
      break;
    case json::kind::double_:
      append_json_double(out, v.get_double());
      break;
    case json::kind::string:
      append_json_string(out, v.get_string());
      break;
    case json::kind::array:
      append_array(out, v.get_array());
      break;
    case json::kind::object:
      append_object(out, v.get_object());
      break;
  }
}

template <class Json>
std::string text_of(const Json& x, void (*append)(std::string&, const Json&)) {
  std::string out;
  append(out, x);
  return out;
}

void append_string_value(std::string& out, const json::string& s) { append_json_string(out, std::string_view(s)); }

}  // namespace

void append_json_text(std::string& out, const json::value& v) { append_value(out, v); }

std::string json_text(const json::value& v) { return text_of(v, append_value); }
std::string json_text(const json::object& o) { return text_of(o, append_object); }
std::string json_text(const json::array& a) { return text_of(a, append_array); }
std::string json_text(const json::string& s) { return text_of(s, append_string_value); }

}  // namespace troupe
