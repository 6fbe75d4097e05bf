#pragma once
// Reads a TOML file field by field: each field is checked as it is read,
// every error is a field_error naming the dotted key, the file and the line,
// and a key that was not read is refused (a misspelt field would otherwise be
// silently ignored). `troupe serve --config` and scenario files read this way.

#include "config/detail/toml.hpp"
#include "config/field_error.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

// The document in `text`; a syntax error is a field_error with no key.
toml::table parse_toml(std::string_view text, const std::string& file);

// `path` as written in a file in `base_dir`: relative paths resolve against
// the file's folder, not the working directory.
std::string resolve_path(const std::string& path, const std::string& base_dir);

class table_reader {
 public:
  // `path`: the table's dotted key ("" for the document, "population[1]").
  table_reader(const toml::table& t, std::string path, const std::string& file);

  std::string name(std::string_view key) const;
  const std::string& file() const { return file_; }

  // The key's line, or the table's when the key is absent.
  std::int64_t line(std::string_view key) const;
  [[noreturn]] void fail(std::string_view key, const std::string& why) const;
  // An error about the table as a whole, on its first line.
  [[noreturn]] void fail_table(const std::string& why) const;
  // An error about one node under the key (an array's item, say): named
  // `key` + `suffix` ("hourly" + "[3]"), on the node's line.
  [[noreturn]] void fail_at(const toml::node& n, std::string_view key, const std::string& suffix,
                            const std::string& why) const;

  const toml::node* find(std::string_view key);
  bool has(std::string_view key) const { return t_.contains(key); }
  const toml::table& table() const { return t_; }

  void text(std::string_view key, std::string& out, bool required = false);

  template <class Int>
  void count(std::string_view key, Int& out, std::int64_t min, std::int64_t max) {
    out = static_cast<Int>(integer(key, static_cast<std::int64_t>(out), min, max));
  }
  std::int64_t integer(std::string_view key, std::int64_t fallback, std::int64_t min, std::int64_t max);

  // An integer or a float, positive and at most `max`; false when absent.
  bool positive(std::string_view key, double& out, double max, const char* what);
  void seconds(std::string_view key, std::chrono::milliseconds& out);
  void number(std::string_view key, double& out) { positive(key, out, 1e12, "a number"); }
  // An integer or a float in [min, max]; false when absent.
  bool number_in(std::string_view key, double& out, double min, double max);

  void flag(std::string_view key, bool& out);
  void texts(std::string_view key, std::vector<std::string>& out);
  // Numbers in [min, max], each; an item out of range is named by its index.
  void numbers(std::string_view key, std::vector<double>& out, double min, double max);

  const toml::table* table(std::string_view key);
  // [[key]]: an array of tables (inline ones too).
  std::vector<const toml::table*> tables(std::string_view key);

  // Throws field_error: the key is required and absent (naming a misspelling of it, if the table has one).
  [[noreturn]] void fail_missing(std::string_view key) const;
  void refuse_unknown() const;

 private:
  const toml::table& t_;
  std::string path_;
  const std::string& file_;
  std::set<std::string, std::less<>> read_;
};

// An integer or a float as a double; nothing for other nodes.
std::optional<double> number_of(const toml::node& n);

}  // namespace troupe
