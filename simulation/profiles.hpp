#pragma once
// The profiles a population's personas are filled from, one per agent: a CSV
// file (a header line naming the fields, then one profile a record, RFC 4180
// quoting) or a JSONL file (one JSON object a line), chosen by the file's
// extension, .csv or .jsonl. And the persona template, whose {field}s the
// profile fills.

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

// A profiles file that cannot be read; what() reads "REASON (FILE:LINE)".
struct profile_error : std::runtime_error {
  profile_error(std::string file, std::int64_t line, std::string reason);
  std::string file;
  std::int64_t line = 0;  // 0: the file as a whole
  std::string reason;
};

// True for a name ending in .csv or .jsonl (in any case).
bool is_profiles_file(std::string_view path);

// Every profile, in file order. CSV values are strings; a record must have as
// many fields as the header, and blank lines are skipped. JSONL lines must be
// objects; blank lines are skipped. A file without a profile is an error.
std::vector<boost::json::object> read_profiles(const std::string& path);
// The fields every profile of the file has, reading no further than a CSV
// file's header line, so a persona can be checked before a run reads the
// whole file; nothing for JSONL, whose objects may differ line to line.
std::optional<std::vector<std::string>> profile_fields(const std::string& path);
// The same, from text already read; `file` names it in errors.
std::vector<boost::json::object> parse_csv_profiles(std::string_view text, const std::string& file);
std::vector<boost::json::object> parse_jsonl_profiles(std::string_view text, const std::string& file);

// A persona template that cannot be filled: a brace left open or a stray
// one, or a {field} neither the profile nor the agent has.
struct persona_error : std::runtime_error {
  persona_error(std::string field, std::string reason);
  std::string field;  // empty when the template itself is malformed
  std::string reason;
};

// The fields a template names, in order, repeats included. Throws
// persona_error if a brace is left open, one closes nothing or a field is
// empty ({}); "{{" and "}}" stand for literal braces.
std::vector<std::string> persona_fields(std::string_view tmpl);

// What names the agent beyond its profile: {id}, {group} and {index}.
struct persona_agent {
  std::string_view id;
  std::string_view group;
  std::size_t index = 0;  // within its group
};

// `tmpl` with each {field} replaced by the profile's value (strings as they
// are, other values as JSON text, null as nothing) or, if the profile has no
// such field, by the agent's id, group or index. The profile comes first: a
// profile's own "id" is what its author meant.
std::string fill_persona(std::string_view tmpl, const boost::json::object& profile, const persona_agent& agent = {});

}  // namespace troupe
