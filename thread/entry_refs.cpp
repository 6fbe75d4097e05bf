#include "thread/entry_refs.hpp"

#include "json/json_object_writer.hpp"
#include "json/json_text.hpp"

#include <limits>
#include <stdexcept>
#include <utility>

namespace troupe {

namespace json = boost::json;

namespace {

std::optional<std::int64_t> integer_of(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return static_cast<std::int64_t>(v.get_uint64());
  return std::nullopt;
}

}  // namespace

std::optional<entry_refs::known> entry_refs::known_key(std::string_view key) {
  if (key == "request_id") return known::request_id;
  if (key == "iteration") return known::iteration;
  if (key == "call_id") return known::call_id;
  if (key == "tool_call_id") return known::tool_call_id;
  return std::nullopt;
}

std::string_view entry_refs::key_name(known k) {
  switch (k) {
    case known::request_id:
      return "request_id";
    case known::iteration:
      return "iteration";
    case known::call_id:
      return "call_id";
    case known::tool_call_id:
      return "tool_call_id";
  }
  return {};
}

bool entry_refs::has(known k) const {
  for (std::uint8_t i = 0; i < count_; ++i)
    if (((order_ >> (2 * i)) & 3u) == static_cast<unsigned>(k)) return true;
  return false;
}

entry_refs::entry_refs(const json::object& o) {
  auto it = o.begin();
  for (; it != o.end(); ++it) {
    const auto k = known_key(it->key());
    if (!k || has(*k)) break;
    const json::value& v = it->value();
    if (*k == known::iteration) {
      const auto n = integer_of(v);
      if (!n || !std::in_range<std::int32_t>(*n)) break;
      iteration_ = static_cast<std::int32_t>(*n);
    } else {
      if (!v.is_string()) break;
      (*k == known::request_id ? request_id_
       : *k == known::call_id  ? call_id_
                               : tool_call_id_) = std::string_view(v.get_string());
    }
    add(*k);
  }
  if (it == o.end()) return;
  json::object rest;
  for (auto r = it; r != o.end(); ++r) {
    if (known_key(r->key())) {
      // A known member out of place: the whole object stays JSON.
      *this = entry_refs();
      extras_ = json_extras(o);
      return;
    }
    rest.emplace(r->key(), r->value());
  }
  extras_ = json_extras(std::move(rest));
}

entry_refs entry_refs::of(std::string_view request_id, std::int64_t iteration, std::string_view call_id,
                          std::string_view tool_call_id) {
  if (!std::in_range<std::int32_t>(iteration)) {  // kept as JSON, in the same order
    json::object o{{"request_id", request_id}, {"iteration", iteration}};
    if (!call_id.empty()) o.emplace("call_id", call_id);
    if (!tool_call_id.empty()) o.emplace("tool_call_id", tool_call_id);
    return entry_refs(o);
  }
  entry_refs r;
  r.request_id_ = request_id;
  r.add(known::request_id);
  r.iteration_ = static_cast<std::int32_t>(iteration);
  r.add(known::iteration);
  if (!call_id.empty()) {
    r.call_id_ = call_id;
    r.add(known::call_id);
  }
  if (!tool_call_id.empty()) {
    r.tool_call_id_ = tool_call_id;
    r.add(known::tool_call_id);
  }
  return r;
}

std::string_view entry_refs::id(known k) const {
  if (has(k))
    return k == known::request_id ? request_id_.view() : k == known::call_id ? call_id_.view() : tool_call_id_.view();
  if (const json::value* v = extras_.find(key_name(k)))
    if (const json::string* s = v->if_string()) return *s;
  return {};
}

std::optional<std::int64_t> entry_refs::iteration() const { return integer("iteration"); }

std::optional<std::string_view> entry_refs::string(std::string_view key) const {
  const auto k = known_key(key);
  if (k && *k != known::iteration && has(*k)) return id(*k);
  if (const json::value* v = extras_.find(key))
    if (const json::string* s = v->if_string()) return std::string_view(*s);
  return std::nullopt;
}

std::optional<std::int64_t> entry_refs::integer(std::string_view key) const {
  const auto k = known_key(key);
  if (k && *k == known::iteration && has(*k)) return iteration_;
  if (const json::value* v = extras_.find(key)) {
    boost::system::error_code ec;
    const auto n = v->to_number<std::int64_t>(ec);
    if (!ec) return n;
  }
  return std::nullopt;
}

std::optional<json::value> entry_refs::value(std::string_view key) const {
  if (const auto k = known_key(key); k && has(*k)) {
    if (*k == known::iteration) return json::value(iteration_);
    return json::value(id(*k));
  }
  if (const json::value* v = extras_.find(key)) return *v;
  return std::nullopt;
}

json::object entry_refs::to_json() const {
  json::object o(count_ + (extras_.get() ? extras_.get()->size() : 0));
  for (std::uint8_t i = 0; i < count_; ++i) {
    const auto k = static_cast<known>((order_ >> (2 * i)) & 3u);
    if (k == known::iteration)
      o.emplace(key_name(k), iteration_);
    else
      o.emplace(key_name(k), id(k));
  }
  extras_.write_to(o);
  return o;
}

json::value entry_refs::at(std::string_view key) const {
  auto v = value(key);
  if (!v) throw std::out_of_range("entry_refs: no member \"" + std::string(key) + "\"");
  return std::move(*v);
}

// Written member by member: an entry's refs are written at every commit to
// a durable store, and building the object first cost twice as much.
std::string json_text(const entry_refs& r) {
  std::string out;
  json_object_writer w(out);
  for (std::uint8_t i = 0; i < r.count_; ++i) {
    const auto k = static_cast<entry_refs::known>((r.order_ >> (2 * i)) & 3u);
    if (k == entry_refs::known::iteration)
      w.integer(entry_refs::key_name(k), r.iteration_);
    else
      w.string(entry_refs::key_name(k), r.id(k));
  }
  w.close(r.extras_);
  return out;
}

void entry_refs::set(std::string_view key, json::value v) {
  json::object o = to_json();
  o[key] = std::move(v);
  *this = entry_refs(o);
}

}  // namespace troupe
