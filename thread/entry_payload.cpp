#include "thread/entry_payload.hpp"

#include "base/overloaded.hpp"
#include "json/json_object_writer.hpp"
#include "json/json_parse.hpp"
#include "json/json_text.hpp"

#include <initializer_list>
#include <limits>
#include <stdexcept>

namespace troupe {

namespace json = boost::json;

namespace {

constexpr std::string_view message_kind = "message", tool_call_kind = "tool_call", tool_result_kind = "tool_result",
                           summary_kind = "summary", error_kind = "error";

std::optional<std::int64_t> integer_of(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return static_cast<std::int64_t>(v.get_uint64());
  return std::nullopt;
}

json::value parse_text(std::string_view text) {
  boost::system::error_code ec;
  json::value v = parse_json(text, ec);
  return ec ? json::value() : v;
}

// Reads an object's members in order: each field takes the next member if
// its key and type fit, and what is left over becomes the extras. A
// required field that does not fit fails the whole read.
class member_reader {
 public:
  explicit member_reader(const json::object& o) : it_(o.begin()), end_(o.end()) {}

  const json::value* take(std::string_view key) {
    if (!ok_ || it_ == end_ || it_->key() != key) return nullptr;
    return &(it_++)->value();
  }
  template <class S>
  requires std::is_base_of_v<string_like<S>, S>
  void required(std::string_view key, S& out) {
    if (auto s = take_string(key, false))
      out = *s;
    else
      ok_ = false;
  }
  void required(std::string_view key, std::int64_t& out) {
    std::optional<std::int64_t> n;
    if (ok_ && it_ != end_ && it_->key() == key) n = integer_of(it_->value());
    if (n) {
      out = *n;
      ++it_;
    } else {
      ok_ = false;
    }
  }
  // Present only when not empty: an empty one is left for the extras, where
  // finish() refuses it.
  template <class S>
  requires std::is_base_of_v<string_like<S>, S>
  void optional(std::string_view key, S& out) {
    if (auto s = take_string(key, true)) out = *s;
  }
  void fail() { ok_ = false; }
  // The members not taken become the extras, unless one of them has a field
  // of its own (then it was out of place, or of another type, and the
  // struct cannot hold the object).
  bool finish(std::initializer_list<std::string_view> fields, json_extras& out) const {
    if (!ok_) return false;
    json::object rest;
    for (auto r = it_; r != end_; ++r) {
      for (std::string_view f : fields)
        if (r->key() == f) return false;
      rest.emplace(r->key(), r->value());
    }
    out = json_extras(std::move(rest));
    return true;
  }

 private:
  std::optional<std::string_view> take_string(std::string_view key, bool non_empty) {
    if (!ok_ || it_ == end_ || it_->key() != key || !it_->value().is_string()) return std::nullopt;
    const json::string& s = it_->value().get_string();
    if (non_empty && s.empty()) return std::nullopt;
    ++it_;
    return std::string_view(s);
  }

  json::object::const_iterator it_, end_;
  bool ok_ = true;
};

std::optional<message_payload> read_message(const json::object& o) {
  member_reader r(o);
  message_payload p;
  r.required("role", p.role);
  r.required("content", p.content);
  r.optional("thinking", p.thinking);
  r.optional("finish_reason", p.finish_reason);
  if (!r.finish({"role", "content", "thinking", "finish_reason"}, p.extra)) return std::nullopt;
  return p;
}

std::optional<tool_call_payload> read_tool_call(const json::object& o) {
  member_reader r(o);
  tool_call_payload p;
  r.required("name", p.name);
  if (const json::value* args = r.take("arguments"); args && args->is_object())
    p.arguments_text = json_text(args->get_object());
  else
    r.fail();
  if (!r.finish({"name", "arguments"}, p.extra)) return std::nullopt;
  return p;
}

std::optional<tool_result_payload> read_tool_result(const json::object& o) {
  member_reader r(o);
  tool_result_payload p;
  r.required("name", p.name);
  if (const json::value* result = r.take("result")) {
    if (const json::string* s = result->if_string()) {
      p.outcome = std::string_view(*s);
      p.shape = tool_result_payload::form::result_string;
    } else {
      p.outcome = json_text(*result);
      p.shape = tool_result_payload::form::result_json;
    }
  } else if (const json::value* error = r.take("error"); error && error->is_object()) {
    p.outcome = json_text(error->get_object());
    p.shape = tool_result_payload::form::error_json;
  } else {
    r.fail();
  }
  if (!r.finish({"name", "result", "error"}, p.extra)) return std::nullopt;
  return p;
}

std::optional<summary_payload> read_summary(const json::object& o) {
  member_reader r(o);
  summary_payload p;
  r.required("from_seq", p.from_seq);
  r.required("to_seq", p.to_seq);
  r.required("content", p.content);
  r.optional("model", p.model);
  if (!r.finish({"from_seq", "to_seq", "content", "model"}, p.extra)) return std::nullopt;
  return p;
}

std::optional<error_payload> read_error(const json::object& o) {
  member_reader r(o);
  error_payload p;
  r.required("type", p.type);
  r.required("message", p.message);
  if (!r.finish({"type", "message"}, p.extra)) return std::nullopt;
  return p;
}

template <class T>
entry_payload typed_or_json(std::optional<T> typed, json::object& o) {
  if (typed) return entry_payload(std::move(*typed));
  return entry_payload(std::move(o));
}

std::optional<std::string_view> extra_string(const json_extras& x, std::string_view key) {
  if (const json::value* v = x.find(key))
    if (const json::string* s = v->if_string()) return std::string_view(*s);
  return std::nullopt;
}

}  // namespace

tool_call_payload tool_call_payload::of(std::string_view name, const json::object& arguments,
                                        const std::optional<std::string>& invalid_arguments) {
  tool_call_payload p;
  p.name = name;
  p.arguments_text = json_text(arguments);
  if (invalid_arguments) p.extra = json_extras(json::object{{"invalid_arguments", *invalid_arguments}});
  return p;
}

json::object tool_call_payload::arguments() const {
  json::value v = parse_text(arguments_text);
  return v.is_object() ? std::move(v.get_object()) : json::object();
}

tool_result_payload tool_result_payload::of(std::string_view name, const tool_outcome& outcome) {
  tool_result_payload p;
  p.name = name;
  std::visit(overloaded{[&](const json::value& v) {
                          if (const json::string* s = v.if_string()) {
                            p.outcome = std::string_view(*s);
                            p.shape = form::result_string;
                          } else {
                            p.outcome = json_text(v);
                            p.shape = form::result_json;
                          }
                        },
                        [&](const error_info& e) {
                          p.outcome = json_text(to_json(e));
                          p.shape = form::error_json;
                        }},
             outcome);
  return p;
}

json::value tool_result_payload::outcome_json() const {
  if (shape == form::result_string) return json::value(outcome.view());
  return parse_text(outcome);
}

entry_payload entry_payload::from_json(std::string_view kind, json::object o) {
  if (kind == message_kind) return typed_or_json(read_message(o), o);
  if (kind == tool_call_kind) return typed_or_json(read_tool_call(o), o);
  if (kind == tool_result_kind) return typed_or_json(read_tool_result(o), o);
  if (kind == summary_kind) return typed_or_json(read_summary(o), o);
  if (kind == error_kind) return typed_or_json(read_error(o), o);
  return entry_payload(std::move(o));
}

void entry_payload::normalize(std::string_view kind) {
  if (auto* j = std::get_if<json_payload>(&v_)) *this = from_json(kind, std::move(j->fields));
}

std::optional<std::string_view> entry_payload::string(std::string_view key) const {
  return std::visit(
      overloaded{[&](const json_payload& p) -> std::optional<std::string_view> {
                   if (const json::value* v = p.fields.if_contains(key))
                     if (const json::string* s = v->if_string()) return std::string_view(*s);
                   return std::nullopt;
                 },
                 [&](const message_payload& p) -> std::optional<std::string_view> {
                   if (key == "role") return p.role.view();
                   if (key == "content") return p.content.view();
                   if (key == "thinking") return p.thinking.empty() ? std::nullopt : std::optional(p.thinking.view());
                   if (key == "finish_reason")
                     return p.finish_reason.empty() ? std::nullopt : std::optional(p.finish_reason.view());
                   return extra_string(p.extra, key);
                 },
                 [&](const tool_call_payload& p) -> std::optional<std::string_view> {
                   if (key == "name") return p.name.view();
                   if (key == "arguments") return std::nullopt;
                   return extra_string(p.extra, key);
                 },
                 [&](const tool_result_payload& p) -> std::optional<std::string_view> {
                   if (key == "name") return p.name.view();
                   if (key == "result")
                     return p.shape == tool_result_payload::form::result_string ? std::optional(p.outcome.view())
                                                                                : std::nullopt;
                   if (key == "error") return std::nullopt;
                   return extra_string(p.extra, key);
                 },
                 [&](const summary_payload& p) -> std::optional<std::string_view> {
                   if (key == "content") return p.content.view();
                   if (key == "model") return p.model.empty() ? std::nullopt : std::optional(p.model.view());
                   if (key == "from_seq" || key == "to_seq") return std::nullopt;
                   return extra_string(p.extra, key);
                 },
                 [&](const error_payload& p) -> std::optional<std::string_view> {
                   if (key == "type") return p.type.view();
                   if (key == "message") return p.message.view();
                   return extra_string(p.extra, key);
                 }},
      v_);
}

std::optional<std::int64_t> entry_payload::integer(std::string_view key) const {
  if (const auto* s = std::get_if<summary_payload>(&v_)) {
    if (key == "from_seq") return s->from_seq;
    if (key == "to_seq") return s->to_seq;
  }
  const auto v = value(key);
  if (!v) return std::nullopt;
  boost::system::error_code ec;
  const auto n = v->to_number<std::int64_t>(ec);
  if (ec) return std::nullopt;
  return n;
}

std::optional<json::value> entry_payload::value(std::string_view key) const {
  if (const auto* j = std::get_if<json_payload>(&v_)) {
    if (const json::value* v = j->fields.if_contains(key)) return *v;
    return std::nullopt;
  }
  const json::object o = to_json();
  if (const json::value* v = o.if_contains(key)) return *v;
  return std::nullopt;
}

json::value entry_payload::at(std::string_view key) const {
  auto v = value(key);
  if (!v) throw std::out_of_range("entry_payload: no member \"" + std::string(key) + "\"");
  return std::move(*v);
}

json::object entry_payload::to_json() const {
  return std::visit(overloaded{[](const json_payload& p) { return p.fields; },
                               [](const message_payload& p) {
                                 json::object o(4);
                                 o.emplace("role", p.role.view());
                                 o.emplace("content", p.content.view());
                                 if (!p.thinking.empty()) o.emplace("thinking", p.thinking.view());
                                 if (!p.finish_reason.empty()) o.emplace("finish_reason", p.finish_reason.view());
                                 p.extra.write_to(o);
                                 return o;
                               },
                               [](const tool_call_payload& p) {
                                 json::object o(3);
                                 o.emplace("name", p.name.view());
                                 o.emplace("arguments", p.arguments());
                                 p.extra.write_to(o);
                                 return o;
                               },
                               [](const tool_result_payload& p) {
                                 json::object o(2);
                                 o.emplace("name", p.name.view());
                                 o.emplace(p.is_error() ? "error" : "result", p.outcome_json());
                                 p.extra.write_to(o);
                                 return o;
                               },
                               [](const summary_payload& p) {
                                 json::object o(4);
                                 o.emplace("from_seq", p.from_seq);
                                 o.emplace("to_seq", p.to_seq);
                                 o.emplace("content", p.content.view());
                                 if (!p.model.empty()) o.emplace("model", p.model.view());
                                 p.extra.write_to(o);
                                 return o;
                               },
                               [](const error_payload& p) {
                                 json::object o(2);
                                 o.emplace("type", p.type.view());
                                 o.emplace("message", p.message.view());
                                 p.extra.write_to(o);
                                 return o;
                               }},
                    v_);
}

void entry_payload::append_text(std::string& out) const {
  std::visit(overloaded{[&](const json_payload& p) { out += json_text(p.fields); },
                        [&](const message_payload& p) {
                          json_object_writer w(out);
                          w.string("role", p.role);
                          w.string("content", p.content);
                          if (!p.thinking.empty()) w.string("thinking", p.thinking);
                          if (!p.finish_reason.empty()) w.string("finish_reason", p.finish_reason);
                          w.close(p.extra);
                        },
                        [&](const tool_call_payload& p) {
                          json_object_writer w(out);
                          w.string("name", p.name);
                          w.raw("arguments", p.arguments_text);
                          w.close(p.extra);
                        },
                        [&](const tool_result_payload& p) {
                          json_object_writer w(out);
                          w.string("name", p.name);
                          if (p.shape == tool_result_payload::form::result_string)
                            w.string("result", p.outcome);
                          else
                            w.raw(p.is_error() ? "error" : "result", p.outcome);
                          w.close(p.extra);
                        },
                        [&](const summary_payload& p) {
                          json_object_writer w(out);
                          w.integer("from_seq", p.from_seq);
                          w.integer("to_seq", p.to_seq);
                          w.string("content", p.content);
                          if (!p.model.empty()) w.string("model", p.model);
                          w.close(p.extra);
                        },
                        [&](const error_payload& p) {
                          json_object_writer w(out);
                          w.string("type", p.type);
                          w.string("message", p.message);
                          w.close(p.extra);
                        }},
             v_);
}

std::string entry_payload::text() const {
  std::string out;
  append_text(out);
  return out;
}

bool operator==(const entry_payload& a, const entry_payload& b) {
  if (a.v_.index() == b.v_.index()) return a.v_ == b.v_;
  return a.to_json() == b.to_json();
}

}  // namespace troupe
