#include "apps/thread_output.hpp"

#include "json/json_text.hpp"
#include "runtime/detail/text.hpp"

#include <boost/json.hpp>

#include <ctime>
#include <iomanip>

namespace troupe::cli {

namespace json = boost::json;

json::object entry_json(const entry& e) {
  return {{"seq", e.seq}, {"kind", e.kind.view()}, {"payload", e.payload.to_json()}, {"refs", e.refs.to_json()},
          {"at", e.at},   {"id", e.id.view()}};
}

json::array entries_json(const thread_view& t) {
  json::array out;
  out.reserve(t.size());
  for (const entry& e : t.entries()) out.push_back(entry_json(e));
  return out;
}

std::string iso_time(std::int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

namespace {

std::string text_of(const entry_payload& p, std::string_view key) {
  if (const auto s = p.string(key)) return std::string(*s);
  const auto v = p.value(key);
  return v ? json_text(*v) : std::string();
}

// One line, at most `max` bytes, cut at a character boundary.
std::string one_line(std::string s, std::size_t max = 160) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return shortened(s, max);
}

}  // namespace

void print_entry(std::ostream& out, const entry& e) {
  std::string what;
  if (e.kind == entry_kind::message) {
    what = text_of(e.payload, "role") + ": " + text_of(e.payload, "content");
  } else if (e.kind == entry_kind::tool_call) {
    what = text_of(e.payload, "name") + " " + text_of(e.payload, "arguments");
  } else if (e.kind == entry_kind::tool_result) {
    what = text_of(e.payload, "name") + " -> " +
           (e.payload.contains("error") ? "error " + text_of(e.payload, "error") : text_of(e.payload, "result"));
  } else if (e.kind == entry_kind::summary || e.kind == entry_kind::error) {
    what = e.payload.contains("content") ? text_of(e.payload, "content")
                                         : text_of(e.payload, "type") + ": " + text_of(e.payload, "message");
  } else {
    what = json_text(e.payload);
  }
  out << std::setw(5) << e.seq << "  " << std::left << std::setw(12) << e.kind << std::right << "  " << one_line(what)
      << "\n";
}

void print_conversation(std::ostream& out, const conversation& c) {
  out << c.id << "  " << c.platform << "/" << c.platform_identifier << "  last message " << iso_time(c.last_message_at)
      << (c.archived ? "  (archived)" : "") << "  " << (c.title.empty() ? "(untitled)" : one_line(c.title, 80)) << "\n";
}

}  // namespace troupe::cli
