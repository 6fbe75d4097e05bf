#include "config/detail/toml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

namespace troupe {

toml::table parse_toml(std::string_view text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw field_error(file, "", static_cast<std::int64_t>(e.source().begin.line),
                      "not valid TOML: " + std::string(e.description()));
  }
}

std::string resolve_path(const std::string& path, const std::string& base_dir) {
  if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

std::optional<double> number_of(const toml::node& n) {
  if (n.is_integer()) return static_cast<double>(n.as_integer()->get());
  if (n.is_floating_point()) return n.as_floating_point()->get();
  return std::nullopt;
}

table_reader::table_reader(const toml::table& t, std::string path, const std::string& file)
    : t_(t), path_(std::move(path)), file_(file) {}

std::string table_reader::name(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

std::int64_t table_reader::line(std::string_view key) const {
  const toml::node* n = t_.get(key);
  return static_cast<std::int64_t>((n ? n->source() : t_.source()).begin.line);
}

void table_reader::fail(std::string_view key, const std::string& why) const {
  throw field_error(file_, name(key), line(key), why);
}

namespace {

// Optimal string alignment distance, for short keys only.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

void table_reader::fail_missing(std::string_view key) const {
  // A required key is most often missing because it is misspelt: the
  // unknown key that is nearly it is named, with its own line.
  for (const auto& [other, value] : t_) {
    const std::string_view k = other.str();
    if (read_.count(k) || k.size() > 64 || key.size() > 64 || edit_distance(k, key) > 2) continue;
    throw field_error(file_, name(key), static_cast<std::int64_t>(value.source().begin.line),
                      "is required; " + std::string(k) + " (line " + std::to_string(value.source().begin.line) +
                          ") is not a known field: is it " + std::string(key) + " misspelt?");
  }
  fail(key, "is required");
}

void table_reader::fail_table(const std::string& why) const {
  throw field_error(file_, path_, static_cast<std::int64_t>(t_.source().begin.line), why);
}

void table_reader::fail_at(const toml::node& n, std::string_view key, const std::string& suffix,
                           const std::string& why) const {
  throw field_error(file_, name(key) + suffix, static_cast<std::int64_t>(n.source().begin.line), why);
}

const toml::node* table_reader::find(std::string_view key) {
  read_.insert(std::string(key));
  return t_.get(key);
}

void table_reader::text(std::string_view key, std::string& out, bool required) {
  const toml::node* n = find(key);
  if (!n) {
    if (required) fail_missing(key);
    return;
  }
  if (!n->is_string()) fail(key, "must be a string");
  out = n->as_string()->get();
  if (required && out.empty()) fail(key, "must not be empty");
}

std::int64_t table_reader::integer(std::string_view key, std::int64_t fallback, std::int64_t min, std::int64_t max) {
  const toml::node* n = find(key);
  if (!n) return fallback;
  if (!n->is_integer()) fail(key, "must be an integer");
  const std::int64_t v = n->as_integer()->get();
  if (v < min || v > max) fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return v;
}

bool table_reader::positive(std::string_view key, double& out, double max, const char* what) {
  const toml::node* n = find(key);
  if (!n) return false;
  const std::optional<double> v = number_of(*n);
  if (!v) fail(key, std::string("must be ") + what);
  if (!(*v > 0) || *v > max) fail(key, std::string("must be ") + what + ", positive");
  out = *v;
  return true;
}

void table_reader::seconds(std::string_view key, std::chrono::milliseconds& out) {
  double v = 0;
  if (positive(key, v, 86'400.0 * 365, "a number of seconds"))
    out = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(v * 1000)));
}

namespace {

// "between 0 and 1", with the bounds as a person writes them.
std::string range(double min, double max) {
  const auto shown = [](double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  };
  return "between " + shown(min) + " and " + shown(max);
}

}  // namespace

bool table_reader::number_in(std::string_view key, double& out, double min, double max) {
  const toml::node* n = find(key);
  if (!n) return false;
  const std::optional<double> v = number_of(*n);
  if (!v) fail(key, "must be a number");
  if (!(*v >= min && *v <= max)) fail(key, "must be " + range(min, max));
  out = *v;
  return true;
}

void table_reader::flag(std::string_view key, bool& out) {
  const toml::node* n = find(key);
  if (!n) return;
  if (!n->is_boolean()) fail(key, "must be true or false");
  out = n->as_boolean()->get();
}

void table_reader::texts(std::string_view key, std::vector<std::string>& out) {
  const toml::node* n = find(key);
  if (!n) return;
  if (!n->is_array()) fail(key, "must be an array of strings");
  out.clear();
  for (const toml::node& item : *n->as_array()) {
    if (!item.is_string()) fail(key, "must be an array of strings");
    out.push_back(item.as_string()->get());
  }
}

void table_reader::numbers(std::string_view key, std::vector<double>& out, double min, double max) {
  const toml::node* n = find(key);
  if (!n) return;
  if (!n->is_array()) fail(key, "must be an array of numbers");
  out.clear();
  for (const toml::node& item : *n->as_array()) {
    const std::string at = "[" + std::to_string(out.size()) + "]";
    const std::optional<double> v = number_of(item);
    if (!v) fail_at(item, key, at, "must be a number");
    if (!(*v >= min && *v <= max)) fail_at(item, key, at, "must be " + range(min, max));
    out.push_back(*v);
  }
}

const toml::table* table_reader::table(std::string_view key) {
  const toml::node* n = find(key);
  if (!n) return nullptr;
  if (!n->is_table()) fail(key, "must be a table");
  return n->as_table();
}

std::vector<const toml::table*> table_reader::tables(std::string_view key) {
  std::vector<const toml::table*> out;
  const toml::node* n = find(key);
  if (!n || (n->is_array() && n->as_array()->empty())) return out;
  if (!n->is_array_of_tables()) fail(key, "must be an array of tables ([[" + std::string(key) + "]])");
  for (const toml::node& item : *n->as_array()) out.push_back(item.as_table());
  return out;
}

void table_reader::refuse_unknown() const {
  for (const auto& [key, value] : t_)
    if (!read_.count(key.str())) fail(key.str(), "is not a known field");
}

}  // namespace troupe
