#include "runtime/store/postgres/detail/rows.hpp"

#include "json/json_parse.hpp"

namespace troupe::postgres {

namespace json = boost::json;

stored<json::object> parse_object(const std::string& text, const std::string& what) {
  boost::system::error_code ec;
  json::value v = parse_json(text, ec);
  if (ec || !v.is_object()) return store_error{"corrupt", what + " is not a JSON object"};
  return std::move(v.as_object());
}

stored<entry> read_entry(const result& r, int row, const std::string& thread_id) {
  entry e;
  e.seq = static_cast<std::uint64_t>(r.int64(row, 0));
  e.id = r.text(row, 1);
  e.at = r.int64(row, 2);
  e.kind = r.text(row, 3);
  const std::string what = "thread " + thread_id + ": entry " + std::to_string(e.seq);
  auto payload = parse_object(r.text(row, 4), what + " payload");
  if (!payload) return payload.error();
  auto refs = parse_object(r.text(row, 5), what + " refs");
  if (!refs) return refs.error();
  e.payload = entry_payload::from_json(e.kind, std::move(*payload));
  e.refs = entry_refs(*refs);
  e.tokens = estimate_tokens(e.kind, e.payload);
  return e;
}

stored<conversation> read_conversation(const result& r, int row) {
  conversation c;
  c.id = r.text(row, 0);
  c.user_id = r.text(row, 1);
  c.platform = r.text(row, 2);
  c.platform_identifier = r.text(row, 3);
  c.thread_id = r.text(row, 4);
  c.title = r.text(row, 5);
  auto metadata = parse_object(r.text(row, 6), "conversation " + c.id + " metadata");
  if (!metadata) return metadata.error();
  c.metadata = std::move(*metadata);
  c.created_at = r.int64(row, 7);
  c.updated_at = r.int64(row, 8);
  c.last_message_at = r.int64(row, 9);
  c.archived = r.boolean(row, 10);
  return c;
}

}  // namespace troupe::postgres
