#pragma once
// Writes one JSON object's text member by member, without building a
// boost::json::object first: for typed records (an entry's payload, its
// refs) whose text is written at every commit. Strings and other values are
// written as json_text writes them, so the text is the same as
// json_text(record.to_json()).

#include "json/json_extras.hpp"
#include "json/json_text.hpp"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace troupe {

class json_object_writer {
 public:
  explicit json_object_writer(std::string& out) : out_(out) { out_ += '{'; }
  void string(std::string_view key, std::string_view v) {
    this->key(key);
    append_json_string(out_, v);
  }
  // `json` is already JSON text.
  void raw(std::string_view key, std::string_view json) {
    this->key(key);
    out_ += json;
  }
  void integer(std::string_view key, std::int64_t v) {
    this->key(key);
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
    out_.append(digits, end);
  }
  // Writes the members the record keeps as JSON, in their order, and ends
  // the object.
  void close(const json_extras& extra) {
    if (const boost::json::object* o = extra.get())
      for (const auto& kv : *o) {
        key(kv.key());
        append_json_text(out_, kv.value());
      }
    out_ += '}';
  }

 private:
  void key(std::string_view k) {
    if (!first_) out_ += ',';
    first_ = false;
    append_json_string(out_, k);
    out_ += ':';
  }
  std::string& out_;
  bool first_ = true;
};

}  // namespace troupe
