#include "simulation/event_log_digest.hpp"

#include "json/json_parse.hpp"
#include "json/json_text.hpp"

#include <boost/json/object.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace troupe {

namespace json = boost::json;

namespace {

// Calls `on_line(number, line)` for every line of the file (numbered from 1).
void for_each_line(const std::string& path, const std::function<void(std::size_t, const std::string&)>& on_line) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw event_log_error("cannot open the event log " + path);
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    on_line(number, line);
  }
  if (in.bad()) throw event_log_error("cannot read the event log " + path + " after line " + std::to_string(number));
}

// The event's name, read off the line's start as event_log writes it
// ({"event":"…",…}); empty when the line starts otherwise, and it has to be parsed.
std::string_view quick_event(std::string_view line) {
  constexpr std::string_view prefix = "{\"event\":\"";
  if (!line.starts_with(prefix)) return {};
  const auto end = line.find('"', prefix.size());
  if (end == std::string_view::npos) return {};
  return line.substr(prefix.size(), end - prefix.size());
}

// A JSON text can hold `needle` (a key followed by its value's first
// character) only as structure: inside a string its quotes are escaped. A
// line without it can be skipped unparsed.
bool mentions(std::string_view line, std::string_view needle) { return line.find(needle) != std::string_view::npos; }

class line_reader {
 public:
  explicit line_reader(const std::string& path) : path_(path) {}

  json::object parse(std::size_t number, std::string_view line) const {
    boost::system::error_code ec;
    json::value v = parse_json(line, ec);
    if (ec) throw failure(number, "not JSON (" + ec.message() + ")");
    if (!v.is_object()) throw failure(number, "not a JSON object");
    json::object& o = v.as_object();
    const auto* event = o.if_contains("event");
    if (!event || !event->is_string()) throw failure(number, "no \"event\" name");
    return std::move(o);
  }

  event_log_error failure(std::size_t number, const std::string& what) const {
    return event_log_error("event log " + path_ + ", line " + std::to_string(number) + ": " + what);
  }

 private:
  std::string path_;
};

// A field as text: a string as it is, anything else as JSON; empty when absent.
std::string text_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v || v->is_null()) return {};
  if (v->is_string()) return std::string(v->as_string());
  return json_text(*v);
}

std::int64_t number_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return 0;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  if (v->is_double()) return static_cast<std::int64_t>(v->as_double());
  return 0;
}

const json::object* object_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_object() ? &v->as_object() : nullptr;
}

std::string event_name(const json::object& o) { return std::string(o.at("event").as_string()); }

// The id of the post an action or intervention made ("id", or "post_id" in its result).
std::string made_post(const json::object& o) {
  const auto* result = object_of(o, "result");
  if (!result) return {};
  std::string id = text_of(*result, "id");
  return id.empty() ? text_of(*result, "post_id") : id;
}

// The original post a repost spreads: the result's root, else the post reposted.
std::string root_of(const json::object& repost) {
  if (const auto* result = object_of(repost, "result"))
    if (std::string root = text_of(*result, "root"); !root.empty()) return root;
  if (const auto* args = object_of(repost, "arguments")) return text_of(*args, "post_id");
  return {};
}

// Misra–Gries: at most `capacity` counters; a new key finding the table full
// takes one from every counter instead, so a key seen more than
// n / (capacity + 1) times out of n is still there at the end.
class heavy_hitters {
 public:
  explicit heavy_hitters(std::size_t capacity) : capacity_(std::max<std::size_t>(1, capacity)) {}

  void add(const std::string& key) {
    if (auto it = counts_.find(key); it != counts_.end()) {
      ++it->second;
      return;
    }
    if (counts_.size() < capacity_) {
      counts_.emplace(key, 1);
      return;
    }
    overflowed_ = true;
    for (auto it = counts_.begin(); it != counts_.end();) it = --it->second == 0 ? counts_.erase(it) : std::next(it);
  }

  bool overflowed() const { return overflowed_; }
  const std::unordered_map<std::string, std::size_t>& counts() const { return counts_; }

 private:
  std::size_t capacity_;
  std::unordered_map<std::string, std::size_t> counts_;
  bool overflowed_ = false;
};

// The `n` keys counted most, most first (ties by id, so a log gives one order).
std::vector<std::string> top_keys(const std::unordered_map<std::string, std::size_t>& counts, std::size_t n) {
  std::vector<std::pair<std::string, std::size_t>> all(counts.begin(), counts.end());
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < all.size() && i < n; ++i) out.push_back(all[i].first);
  return out;
}

// One line at a time, the whole log: everything but the spread's details.
class first_pass {
 public:
  first_pass(const std::string& path, const digest_limits& limits, event_log_digest& out)
      : reader_(path), limits_(limits), out_(out), candidates_(limits.candidate_posts) {}

  void line(std::size_t number, const std::string& line) {
    ++out_.lines;
    std::string_view name = quick_event(line);
    std::optional<json::object> parsed;
    std::string parsed_name;
    if (name.empty()) {
      parsed = reader_.parse(number, line);
      parsed_name = event_name(*parsed);
      name = parsed_name;
    }
    const auto event = [&]() -> const json::object& {
      if (!parsed) parsed = reader_.parse(number, line);
      return *parsed;
    };
    if (name == "activation") {
      ++out_.activations;
      if (mentions(line, "\"error\":{")) activation_error(event());
    } else if (name == "action") {
      if (mentions(line, "\"action\":\"repost\"") && text_of(event(), "action") == "repost") {
        ++out_.reposts;
        if (std::string root = root_of(event()); !root.empty()) candidates_.add(root);
      }
    } else if (name == "run") {
      const auto& e = event();
      out_.name = text_of(e, "name");
      out_.world = text_of(e, "world");
      out_.seed = static_cast<std::uint64_t>(number_of(e, "seed"));
      out_.agents = static_cast<std::size_t>(number_of(e, "agents"));
    } else if (name == "refused") {
      const auto* error = object_of(event(), "error");
      ++out_.refusals[text_of(event(), "action") + ": " + (error ? text_of(*error, "type") : std::string("?"))];
    } else if (name == "interview") {
      interview(event());
    } else if (name == "intervention") {
      intervention(event());
    } else if (name == "checkpoint") {
      ++out_.checkpoints;
    }
  }

  const heavy_hitters& candidates() const { return candidates_; }

 private:
  void activation_error(const json::object& e) {
    const auto* error = object_of(e, "error");
    if (!error) return;  // the observation held an "error" key
    auto& d = out_.activation_errors[text_of(*error, "type")];
    if (d.count++ == 0) d.example = text_of(*error, "message");
  }

  void interview(const json::object& e) {
    const std::int64_t step = number_of(e, "step");
    if (out_.interviews.empty() || out_.interviews.back().step != step) {
      interview_digest d;
      d.step = step;
      d.round = number_of(e, "round");
      d.question = text_of(e, "question");
      out_.interviews.push_back(std::move(d));
    }
    interview_digest& d = out_.interviews.back();
    interview_answer a;
    a.agent = text_of(e, "agent");
    if (const auto* error = object_of(e, "error")) {
      ++d.errors;
      a.error_type = text_of(*error, "type");
      a.text = text_of(*error, "message");
    } else {
      ++d.answers;
      a.text = text_of(e, "answer");
    }
    if (d.shown.size() < limits_.answers_per_interview) d.shown.push_back(std::move(a));
  }

  void intervention(const json::object& e) {
    if (out_.interventions_total++ >= limits_.interventions) return;
    intervention_digest d;
    d.step = number_of(e, "step");
    d.round = number_of(e, "round");
    d.action = text_of(e, "action");
    d.as = text_of(e, "as");
    if (const auto* args = e.if_contains("arguments")) d.arguments = json_text(*args);
    if (const auto* result = e.if_contains("result")) d.result = json_text(*result);
    if (const auto* error = object_of(e, "error"))
      d.error = text_of(*error, "type") + ": " + text_of(*error, "message");
    out_.interventions.push_back(std::move(d));
  }

  line_reader reader_;
  const digest_limits& limits_;
  event_log_digest& out_;
  heavy_hitters candidates_;
};

// The lines that make or spread posts, parsed; the rest skipped.
void for_each_post_event(const std::string& path, const std::function<void(const json::object&)>& on_event) {
  const line_reader reader(path);
  for_each_line(path, [&](std::size_t number, const std::string& line) {
    std::string_view name = quick_event(line);
    if (!name.empty() && name != "action" && name != "intervention") return;
    if (name == "action" && !mentions(line, "\"action\":\"repost\"") && !mentions(line, "\"action\":\"post\"")) return;
    const json::object e = reader.parse(number, line);
    const std::string event = event_name(e);
    if (event == "action" || event == "intervention") on_event(e);
  });
}

// The exact count of every candidate, when the table overflowed and its counts are not.
std::unordered_map<std::string, std::size_t> exact_counts(const std::string& path,
                                                          const std::unordered_map<std::string, std::size_t>& keys) {
  std::unordered_map<std::string, std::size_t> counts;
  for (const auto& [key, n] : keys) counts.emplace(key, 0);
  for_each_post_event(path, [&](const json::object& e) {
    if (event_name(e) != "action" || text_of(e, "action") != "repost") return;
    if (auto it = counts.find(root_of(e)); it != counts.end()) ++it->second;
  });
  return counts;
}

// The chosen posts' spread: who made each, and who reposted from whom, round by round.
std::vector<spread_digest> spread_of(const std::string& path, const std::vector<std::string>& roots,
                                     const digest_limits& limits) {
  std::vector<spread_digest> out(roots.size());
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < roots.size(); ++i) {
    out[i].root = roots[i];
    index.emplace(roots[i], i);
  }
  // Per post: who made each post of its cascade (the original and every repost), and who reposted it.
  std::vector<std::unordered_map<std::string, std::string>> authors(roots.size());
  std::vector<std::unordered_set<std::string>> reposters(roots.size());
  for_each_post_event(path, [&](const json::object& e) {
    const std::string action = text_of(e, "action");
    if (action == "post") {
      auto it = index.find(made_post(e));
      if (it == index.end()) return;
      const bool intervention = event_name(e) == "intervention";
      spread_digest& d = out[it->second];
      d.author = text_of(e, intervention ? "as" : "agent");
      d.posted_round = number_of(e, "round");
      authors[it->second][d.root] = d.author;
    } else if (action == "repost" && event_name(e) == "action") {
      auto it = index.find(root_of(e));
      if (it == index.end()) return;
      spread_digest& d = out[it->second];
      const std::int64_t round = number_of(e, "round");
      const std::string agent = text_of(e, "agent");
      ++d.reposts;
      ++d.per_round[round];
      reposters[it->second].insert(agent);
      if (d.edges.size() < limits.reposts_per_post) {
        const auto* args = object_of(e, "arguments");
        const auto& known = authors[it->second];
        const auto from = args ? known.find(text_of(*args, "post_id")) : known.end();
        d.edges.push_back(repost_edge{round, from == known.end() ? std::string() : from->second, agent});
      }
      if (std::string made = made_post(e); !made.empty()) authors[it->second][made] = agent;
    }
  });
  for (std::size_t i = 0; i < out.size(); ++i) out[i].reposters = reposters[i].size();
  return out;
}

}  // namespace

event_log_digest digest_event_log(const std::string& path, const digest_limits& limits) {
  event_log_digest out;
  first_pass pass(path, limits, out);
  for_each_line(path, [&](std::size_t number, const std::string& line) { pass.line(number, line); });
  if (out.reposts == 0 || limits.top_posts == 0) return out;
  out.spread_exact = !pass.candidates().overflowed();
  if (!out.spread_exact)
    out.spread_missing_at_most = out.reposts / (std::max<std::size_t>(1, limits.candidate_posts) + 1);
  const auto top = top_keys(
      out.spread_exact ? pass.candidates().counts() : exact_counts(path, pass.candidates().counts()), limits.top_posts);
  out.spread = spread_of(path, top, limits);
  return out;
}

}  // namespace troupe
