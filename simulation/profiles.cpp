#include "simulation/profiles.hpp"

#include "config/file_text.hpp"
#include "json/json_parse.hpp"
#include "json/json_text.hpp"
#include "json/utf8.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

namespace troupe {

namespace {

std::string profile_message(const std::string& file, std::int64_t line, const std::string& reason) {
  return reason + " (" + file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ")";
}

bool ends_with_lower(std::string_view path, std::string_view suffix) {
  if (path.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), path.end() - static_cast<std::ptrdiff_t>(suffix.size()),
                    [](char s, char p) { return s == std::tolower(static_cast<unsigned char>(p)); });
}

// The line of the first byte that is not UTF-8, or 0.
std::int64_t first_invalid_line(std::string_view text) {
  std::int64_t line = 1;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = utf8_sequence_at(text, at);
    if (n == 0) return line;
    if (text[at] == '\n') ++line;
    at += n;
  }
  return 0;
}

void require_utf8(std::string_view text, const std::string& file) {
  if (const std::int64_t line = first_invalid_line(text)) throw profile_error(file, line, "not valid UTF-8");
}

// Reads a CSV file record by record (RFC 4180: fields separated by commas,
// records by CRLF or LF; a field in double quotes may hold commas, line
// breaks and doubled quotes).
class csv_reader {
 public:
  csv_reader(std::string_view text, const std::string& file) : text_(text), file_(file) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);  // a byte order mark
  }

  // False at the end of the text. Blank lines are skipped.
  bool next(std::vector<std::string>& fields) {
    while (line_end()) skip_line_end();
    if (pos_ >= text_.size()) return false;
    record_line_ = line_;
    fields.clear();
    for (;;) {
      fields.push_back(at('"') ? quoted() : plain());
      if (pos_ >= text_.size()) return true;
      if (at(',')) {
        ++pos_;
        continue;
      }
      skip_line_end();
      return true;
    }
  }

  std::int64_t record_line() const { return record_line_; }

 private:
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool line_end() const { return at('\n') || (at('\r') && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n'); }
  void skip_line_end() {
    if (at('\r')) ++pos_;
    ++pos_;
    ++line_;
  }

  std::string quoted() {
    const std::int64_t opened = line_;
    std::string field;
    for (++pos_;; ++pos_) {
      if (pos_ >= text_.size()) throw profile_error(file_, opened, "a quoted field is not closed");
      const char c = text_[pos_];
      if (c == '"') {
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
          field += '"';
          ++pos_;
          continue;
        }
        ++pos_;
        break;
      }
      if (c == '\n') ++line_;
      field += c;
    }
    if (pos_ < text_.size() && !at(',') && !line_end())
      throw profile_error(file_, line_, "text after a quoted field's closing quote (a comma must follow it)");
    return field;
  }

  std::string plain() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && !at(',') && !line_end()) {
      if (at('"'))
        throw profile_error(file_, line_,
                            "a quote inside an unquoted field (quote the whole field and double the quote)");
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  std::string_view text_;
  const std::string& file_;
  std::size_t pos_ = 0;
  std::int64_t line_ = 1;
  std::int64_t record_line_ = 1;
};

// A header's names: none empty, none twice.
std::vector<std::string> header_of(csv_reader& csv, const std::string& file) {
  std::vector<std::string> header;
  if (!csv.next(header)) throw profile_error(file, 0, "no header line (the names of the fields, comma-separated)");
  std::set<std::string_view> names;
  for (const std::string& name : header) {
    if (name.empty()) throw profile_error(file, csv.record_line(), "a field of the header has no name");
    if (!names.insert(name).second)
      throw profile_error(file, csv.record_line(), "the header names the field \"" + name + "\" twice");
  }
  return header;
}

// Calls on_text for the literal parts of a template and on_field for each
// {field}, in order.
template <class Text, class Field>
void scan_template(std::string_view tmpl, Text on_text, Field on_field) {
  std::size_t i = 0;
  while (i < tmpl.size()) {
    const std::size_t brace = tmpl.find_first_of("{}", i);
    if (brace == std::string_view::npos) {
      on_text(tmpl.substr(i));
      return;
    }
    on_text(tmpl.substr(i, brace - i));
    if (brace + 1 < tmpl.size() && tmpl[brace + 1] == tmpl[brace]) {
      on_text(tmpl.substr(brace, 1));
      i = brace + 2;
      continue;
    }
    if (tmpl[brace] == '}')
      throw persona_error(
          "", "a closing brace at " + std::to_string(brace) + " closes nothing (write }} for a brace of the text)");
    const std::size_t close = tmpl.find_first_of("{}", brace + 1);
    if (close == std::string_view::npos || tmpl[close] == '{')
      throw persona_error("",
                          "the brace at " + std::to_string(brace) + " is left open (write {{ for a brace of the text)");
    if (close == brace + 1) throw persona_error("", "an empty field {} at " + std::to_string(brace));
    on_field(tmpl.substr(brace + 1, close - brace - 1));
    i = close + 1;
  }
}

}  // namespace

profile_error::profile_error(std::string file_, std::int64_t line_, std::string reason_)
    : std::runtime_error(profile_message(file_, line_, reason_)),
      file(std::move(file_)),
      line(line_),
      reason(std::move(reason_)) {}

bool is_profiles_file(std::string_view path) {
  return ends_with_lower(path, ".csv") || ends_with_lower(path, ".jsonl");
}

std::vector<boost::json::object> parse_csv_profiles(std::string_view text, const std::string& file) {
  require_utf8(text, file);
  csv_reader csv(text, file);
  const std::vector<std::string> header = header_of(csv, file);
  std::vector<boost::json::object> profiles;
  std::vector<std::string> fields;
  while (csv.next(fields)) {
    if (fields.size() != header.size())
      throw profile_error(file, csv.record_line(),
                          "a record of " + std::to_string(fields.size()) + (fields.size() == 1 ? " field" : " fields") +
                              " where the header has " + std::to_string(header.size()));
    boost::json::object& p = profiles.emplace_back();
    for (std::size_t i = 0; i < header.size(); ++i) p[header[i]] = fields[i];
  }
  if (profiles.empty()) throw profile_error(file, 0, "no profiles after the header line");
  return profiles;
}

std::vector<boost::json::object> parse_jsonl_profiles(std::string_view text, const std::string& file) {
  std::vector<boost::json::object> profiles;
  std::int64_t line = 0;
  for (std::size_t start = 0; start < text.size();) {
    ++line;
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view one = text.substr(start, end - start);
    start = end + 1;
    if (one.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    boost::system::error_code ec;
    boost::json::value v = parse_json(one, ec);
    if (ec) throw profile_error(file, line, "not JSON: " + ec.message());
    if (!v.is_object()) throw profile_error(file, line, "not a JSON object (one profile a line)");
    profiles.push_back(std::move(v.as_object()));
  }
  if (profiles.empty()) throw profile_error(file, 0, "no profiles (one JSON object a line)");
  return profiles;
}

std::vector<boost::json::object> read_profiles(const std::string& path) {
  if (!is_profiles_file(path)) throw profile_error(path, 0, "a profiles file is .csv or .jsonl");
  const std::optional<std::string> text = file_text(path);
  if (!text) throw profile_error(path, 0, "cannot be read");
  if (ends_with_lower(path, ".csv")) return parse_csv_profiles(*text, path);
  return parse_jsonl_profiles(*text, path);
}

std::optional<std::vector<std::string>> profile_fields(const std::string& path) {
  if (!ends_with_lower(path, ".csv")) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw profile_error(path, 0, "cannot be read");
  // Lines up to the first that leaves no quote open: the header record, even
  // if a quoted name spans lines (blank lines before it are skipped).
  std::string text, line;
  while (std::getline(in, line)) {
    text += line;
    text += '\n';
    if (std::count(text.begin(), text.end(), '"') % 2 == 0 && text.find_first_not_of("\r\n") != std::string::npos)
      break;
  }
  require_utf8(text, path);
  csv_reader csv(text, path);
  return header_of(csv, path);
}

persona_error::persona_error(std::string field_, std::string reason_)
    : std::runtime_error(field_.empty() ? "persona: " + reason_ : "persona: {" + field_ + "}: " + reason_),
      field(std::move(field_)),
      reason(std::move(reason_)) {}

std::vector<std::string> persona_fields(std::string_view tmpl) {
  std::vector<std::string> fields;
  scan_template(
      tmpl, [](std::string_view) {}, [&](std::string_view f) { fields.emplace_back(f); });
  return fields;
}

std::string fill_persona(std::string_view tmpl, const boost::json::object& profile, const persona_agent& agent) {
  std::string out;
  out.reserve(tmpl.size() * 2);
  scan_template(
      tmpl, [&](std::string_view text) { out += text; },
      [&](std::string_view field) {
        if (const boost::json::value* v = profile.if_contains(field)) {
          if (v->is_string())
            out += v->get_string();
          else if (!v->is_null())
            out += json_text(*v);
        } else if (field == "id") {
          out += agent.id;
        } else if (field == "group") {
          out += agent.group;
        } else if (field == "index") {
          out += std::to_string(agent.index);
        } else {
          throw persona_error(std::string(field), "neither the profile nor the agent has this field");
        }
      });
  return out;
}

}  // namespace troupe
