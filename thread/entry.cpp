#include "thread/entry.hpp"

#include "base/overloaded.hpp"
#include "json/json_text.hpp"
#include "thread/token_estimator.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <variant>

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

namespace {

// The size of a tool call's or result's JSON text (entry_payload::append_text)
// without writing it; none for other kinds, for members kept as JSON, and
// for text that is not UTF-8.
std::optional<std::size_t> json_text_size(const entry_payload& payload) {
  using size = std::optional<std::size_t>;
  return std::visit(overloaded{[](const tool_call_payload& p) -> size {
                                 const size name = json_string_size(p.name.view());
                                 if (p.extra.get() || !name) return std::nullopt;
                                 return std::string_view(R"({"name":,"arguments":})").size() + *name +
                                        p.arguments_text.size();
                               },
                               [](const tool_result_payload& p) -> size {
                                 const size name = json_string_size(p.name.view());
                                 const size outcome = p.shape == tool_result_payload::form::result_string
                                                          ? json_string_size(p.outcome.view())
                                                          : size(p.outcome.size());
                                 if (p.extra.get() || !name || !outcome) return std::nullopt;
                                 const std::string_view key = p.is_error() ? R"("error":)" : R"("result":)";
                                 return std::string_view(R"({"name":,})").size() + *name + key.size() + *outcome;
                               },
                               [](const auto&) -> size { return std::nullopt; }},
                    payload.get());
}

}  // namespace

std::int64_t estimate_tokens(std::string_view kind, const entry_payload& payload) {
  const token_estimator& e = default_estimator();
  std::int64_t n = e.per_message();
  if (kind == entry_kind::message || kind == entry_kind::summary) {
    n += e.text(payload.string("content").value_or(""));
  } else {
    // Tool calls and results are sent as their JSON: measured without
    // writing it where it can be (a thread read back estimates every entry),
    // else written into a buffer kept for the next estimate.
    const auto size = json_text_size(payload);
    if (const auto tokens = size ? e.text_of_size(*size) : std::nullopt) {
      n += *tokens;
    } else {
      thread_local std::string as_json;
      as_json.clear();
      payload.append_text(as_json);
      n += e.text(as_json);
      if (as_json.capacity() > 64 * 1024) std::string().swap(as_json);
    }
  }
  return n;
}

}  // namespace troupe
