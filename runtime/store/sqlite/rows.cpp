#include "runtime/store/sqlite/detail/rows.hpp"

#include "json/json_parse.hpp"
#include "json/utf8.hpp"

namespace troupe::sqlite {

namespace json = boost::json;

json::value parse_stored(std::string_view text, std::size_t& repaired) {
  boost::system::error_code ec;
  json::value v = parse_json(text, ec);
  if (!ec) return v;
  if (is_valid_utf8(text)) return nullptr;
  v = parse_json(valid_utf8(text), ec);
  if (ec) return nullptr;
  ++repaired;
  return v;
}

std::string repaired_texts(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " stored record holds" : " stored records hold") +
         " bytes that are not UTF-8, read with U+FFFD in their place";
}

stored<entry> read_entry(const statement& s, const std::string& thread_id, std::size_t& repaired) {
  entry e;
  e.seq = static_cast<std::uint64_t>(s.int64(0));
  e.id = s.text(1);
  e.at = s.int64(2);
  e.kind = s.text(3);
  std::size_t mended = 0;
  json::value payload = parse_stored(s.text(4), mended);
  json::value refs = parse_stored(s.text(5), mended);
  if (!payload.is_object() || !refs.is_object())
    return store_error{"corrupt", "thread " + thread_id + ": entry " + std::to_string(e.seq) + " is not valid JSON"};
  repaired += mended > 0;
  e.payload = entry_payload::from_json(e.kind, std::move(payload.as_object()));
  e.refs = entry_refs(refs.as_object());
  e.tokens = estimate_tokens(e.kind, e.payload);
  return e;
}

std::optional<store_error> delete_thread(connection& c, const std::string& thread_id, bool& existed) {
  statement e(c, "DELETE FROM entries WHERE thread_id = ?");
  statement t(c, "DELETE FROM threads WHERE id = ?");
  statement conv(c, "DELETE FROM conversations WHERE thread_id = ?");
  if (!e || !t || !conv) return c.io_error("delete " + thread_id);
  e.bind(1, thread_id);
  t.bind(1, thread_id);
  conv.bind(1, thread_id);
  if (e.step() != SQLITE_DONE || t.step() != SQLITE_DONE) return c.io_error("delete " + thread_id);
  existed = sqlite3_changes(c.db()) > 0;
  if (conv.step() != SQLITE_DONE) return c.io_error("delete " + thread_id);
  return std::nullopt;
}

}  // namespace troupe::sqlite
