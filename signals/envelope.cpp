#include "signals/envelope.hpp"

#include "json/json_parse.hpp"
#include "json/json_reader.hpp"

#include <charconv>
#include <chrono>
#include <cstdio>

namespace troupe {

namespace json = boost::json;
using namespace std::chrono;

std::string format_rfc3339(std::int64_t unix_ms) {
  const sys_time<milliseconds> t{milliseconds{unix_ms}};
  const sys_days day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss<milliseconds> hms{t - day};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", int(ymd.year()), unsigned(ymd.month()),
                unsigned(ymd.day()), int(hms.hours().count()), int(hms.minutes().count()), int(hms.seconds().count()),
                int(hms.subseconds().count()));
  return buf;
}

namespace {

// Reads exactly `width` digits at `pos`, advancing it.
bool read_digits(std::string_view s, std::size_t& pos, int width, int& out) {
  if (pos + width > s.size()) return false;
  auto [end, ec] = std::from_chars(s.data() + pos, s.data() + pos + width, out);
  if (ec != std::errc{} || end != s.data() + pos + width) return false;
  pos += width;
  return true;
}

bool expect(std::string_view s, std::size_t& pos, std::string_view chars) {
  if (pos >= s.size() || chars.find(s[pos]) == std::string_view::npos) return false;
  ++pos;
  return true;
}

}  // namespace

std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
  std::size_t p = 0;
  int y, mo, d, h, mi, sec;
  if (!read_digits(s, p, 4, y) || !expect(s, p, "-") || !read_digits(s, p, 2, mo) || !expect(s, p, "-") ||
      !read_digits(s, p, 2, d) || !expect(s, p, "Tt ") || !read_digits(s, p, 2, h) || !expect(s, p, ":") ||
      !read_digits(s, p, 2, mi) || !expect(s, p, ":") || !read_digits(s, p, 2, sec))
    return std::nullopt;
  const year_month_day ymd{year{y}, month{unsigned(mo)}, day{unsigned(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || sec > 60) return std::nullopt;

  std::int64_t ms = 0;
  if (p < s.size() && s[p] == '.') {
    ++p;
    int digits = 0;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
      if (digits < 3) ms = ms * 10 + (s[p] - '0');
      ++digits;
      ++p;
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 3; ++digits) ms *= 10;
  }

  std::int64_t offset_minutes = 0;
  if (p < s.size() && (s[p] == 'Z' || s[p] == 'z')) {
    ++p;
  } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    const int sign = s[p++] == '-' ? -1 : 1;
    int oh, om;
    if (!read_digits(s, p, 2, oh) || !expect(s, p, ":") || !read_digits(s, p, 2, om) || oh > 23 || om > 59)
      return std::nullopt;
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return std::nullopt;
  }
  if (p != s.size()) return std::nullopt;

  const auto t = sys_days{ymd} + hours{h} + minutes{mi} + seconds{sec} + milliseconds{ms} - minutes{offset_minutes};
  return duration_cast<milliseconds>(t.time_since_epoch()).count();
}

json::value to_json(const envelope& e) {
  json::object o{{"specversion", "1.0"}, {"id", e.id}, {"source", e.source}, {"type", signal_type(e.data)}};
  if (!e.subject.empty()) o["subject"] = e.subject;
  if (e.time_ms) o["time"] = format_rfc3339(*e.time_ms);
  o["datacontenttype"] = "application/json";
  o["data"] = signal_data(e.data);
  return o;
}

decoded<envelope> decode_envelope(const json::value& v) {
  json_reader r(v, "");
  const std::string specversion = r.string("specversion");
  envelope e{r.string("id"), r.string("source"), r.optional_string("subject").value_or(""), std::nullopt, {}};
  const std::string type = r.string("type");
  const auto time = r.optional_string("time");
  const auto content_type = r.optional_string("datacontenttype");
  const json::value& data = r.value("data");
  if (!r.ok()) return r.error();

  if (specversion != "1.0") return decode_error{"specversion", "must be \"1.0\""};
  if (e.id.empty()) return decode_error{"id", "must not be empty"};
  if (e.source.empty()) return decode_error{"source", "must not be empty"};
  if (content_type && *content_type != "application/json")
    return decode_error{"datacontenttype", "must be application/json"};
  if (time) {
    e.time_ms = parse_rfc3339(*time);
    if (!e.time_ms) return decode_error{"time", "expected an RFC 3339 timestamp"};
  }
  auto s = decode_signal(type, data, "data");
  if (!s) return s.error();
  e.data = std::move(*s);
  return e;
}

decoded<envelope> parse_envelope(std::string_view text) {
  boost::system::error_code ec;
  json::value v = parse_json(text, ec);
  if (ec) return decode_error{"", "malformed JSON: " + ec.message()};
  return decode_envelope(v);
}

}  // namespace troupe
