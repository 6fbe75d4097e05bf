#include "thread/thread_json.hpp"

#include "json/json_reader.hpp"

namespace troupe {

namespace json = boost::json;

json::value to_json(const entry& e) {
  return json::object{{"id", e.id.view()},
                      {"seq", e.seq},
                      {"at", e.at},
                      {"kind", e.kind.view()},
                      {"payload", e.payload.to_json()},
                      {"refs", e.refs.to_json()}};
}

json::value to_json(const thread_view& t) {
  const thread_stats stats = t.stats();
  json::object by_kind;
  for (const auto& [kind, n] : stats.by_kind) by_kind[kind] = n;
  json::array entries;
  entries.reserve(t.size());
  for (const entry& e : t.entries()) entries.push_back(to_json(e));
  return json::object{{"id", t.id()},
                      {"rev", t.rev()},
                      {"created_at", t.created_at()},
                      {"updated_at", t.updated_at()},
                      {"metadata", t.metadata()},
                      {"stats", json::object{{"entry_count", stats.entry_count}, {"by_kind", std::move(by_kind)}}},
                      {"entries", std::move(entries)}};
}

decoded<entry> decode_entry(const json::value& v, std::string path) {
  json_reader r(v, std::move(path));
  entry e;
  e.id = r.string("id");
  const std::int64_t seq = r.int64("seq");
  e.at = r.int64("at");
  e.kind = r.string("kind");
  json::object payload = r.object("payload");
  e.refs = entry_refs(r.optional_object("refs").value_or(json::object{}));
  e.payload = entry_payload::from_json(e.kind, std::move(payload));
  if (!r.ok()) return r.error();
  if (seq < 0) return decode_error{r.field_path("seq"), "must not be negative"};
  e.seq = static_cast<std::uint64_t>(seq);
  return e;
}

decoded<thread> decode_thread(const json::value& v) {
  json_reader r(v, "");
  std::string id = r.string("id");
  const std::int64_t rev = r.int64("rev");
  const std::int64_t created_at = r.int64("created_at");
  const std::int64_t updated_at = r.int64("updated_at");
  json::object metadata = r.optional_object("metadata").value_or(json::object{});
  const json::array items = r.array("entries");
  if (!r.ok()) return r.error();
  if (rev < 0) return decode_error{"rev", "must not be negative"};

  std::vector<entry> entries;
  entries.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto e = decode_entry(items[i], element_path("entries", i));
    if (!e) return e.error();
    entries.push_back(std::move(*e));
  }
  return thread::restore(std::move(id), static_cast<std::uint64_t>(rev), created_at, updated_at, std::move(metadata),
                         std::move(entries));
}

}  // namespace troupe
