#include "thread/entry.hpp"

#include "base/overloaded.hpp"
#include "thread/token_estimator.hpp"

#include <string>

namespace troupe {

entry_draft::entry_draft(std::string kind_, boost::json::object payload_, entry_refs refs_)
    : kind(std::move(kind_)), payload(entry_payload::from_json(kind, std::move(payload_))), refs(std::move(refs_)) {}

entry_draft::entry_draft(message_payload p, entry_refs r)
    : kind(entry_kind::message), payload(std::move(p)), refs(std::move(r)) {}
entry_draft::entry_draft(tool_call_payload p, entry_refs r)
    : kind(entry_kind::tool_call), payload(std::move(p)), refs(std::move(r)) {}
entry_draft::entry_draft(tool_result_payload p, entry_refs r)
    : kind(entry_kind::tool_result), payload(std::move(p)), refs(std::move(r)) {}
entry_draft::entry_draft(summary_payload p, entry_refs r)
    : kind(entry_kind::summary), payload(std::move(p)), refs(std::move(r)) {}
entry_draft::entry_draft(error_payload p, entry_refs r)
    : kind(entry_kind::error), payload(std::move(p)), refs(std::move(r)) {}

entry_draft entry_draft::of(std::string kind, entry_payload payload, entry_refs refs) {
  entry_draft d;
  payload.normalize(kind);
  d.kind = std::move(kind);
  d.payload = std::move(payload);
  d.refs = std::move(refs);
  return d;
}

std::string_view kind_of(const entry_payload& p) {
  return std::visit(overloaded{[](const json_payload&) { return std::string_view(); },
                               [](const message_payload&) { return entry_kind::message; },
                               [](const tool_call_payload&) { return entry_kind::tool_call; },
                               [](const tool_result_payload&) { return entry_kind::tool_result; },
                               [](const summary_payload&) { return entry_kind::summary; },
                               [](const error_payload&) { return entry_kind::error; }},
                    p.get());
}

std::optional<std::string_view> string_field(const boost::json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key))
    if (const auto* s = v->if_string()) return std::string_view(*s);
  return std::nullopt;
}

std::optional<std::int64_t> int_field(const boost::json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key)) {
    boost::system::error_code ec;
    const auto n = v->to_number<std::int64_t>(ec);
    if (!ec) return n;
  }
  return std::nullopt;
}

std::int64_t estimate_tokens(std::string_view kind, const entry_payload& payload) {
  const token_estimator& e = default_estimator();
  std::int64_t n = e.per_message();
  if (kind == entry_kind::message || kind == entry_kind::summary) {
    n += e.text(payload.string("content").value_or(""));
  } else {
    // Tool calls and results are sent as their JSON: written into a buffer
    // kept for the next estimate (a thread read back estimates every entry).
    thread_local std::string as_json;
    as_json.clear();
    payload.append_text(as_json);
    n += e.text(as_json);
    if (as_json.capacity() > 64 * 1024) std::string().swap(as_json);
  }
  return n;
}

}  // namespace troupe
