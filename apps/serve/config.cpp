#include "apps/serve/config.hpp"

#include <toml++/toml.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace troupe::serve {

namespace {

// Reads one TOML table, naming each field by its path, and refuses the keys
// it did not read (a misspelt field would otherwise be silently ignored).
class table_reader {
 public:
  table_reader(const toml::table& t, std::string path, const std::string& origin)
      : t_(t), path_(std::move(path)), origin_(origin) {}

  std::string name(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  [[noreturn]] void fail(std::string_view key, const std::string& why) const {
    throw config_error(origin_ + ": " + name(key) + ": " + why);
  }

  const toml::node* find(std::string_view key) {
    read_.insert(std::string(key));
    return t_.get(key);
  }

  bool has(std::string_view key) const { return t_.contains(key); }

  void text(std::string_view key, std::string& out, bool required = false) {
    const toml::node* n = find(key);
    if (!n) {
      if (required) fail(key, "is required");
      return;
    }
    if (!n->is_string()) fail(key, "must be a string");
    out = n->as_string()->get();
    if (required && out.empty()) fail(key, "must not be empty");
  }

  template <class Int>
  void count(std::string_view key, Int& out, std::int64_t min, std::int64_t max) {
    const toml::node* n = find(key);
    if (!n) return;
    if (!n->is_integer()) fail(key, "must be an integer");
    const std::int64_t v = n->as_integer()->get();
    if (v < min || v > max) fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    out = static_cast<Int>(v);
  }

  // An integer or a float, positive and at most `max`.
  bool positive(std::string_view key, double& out, double max, const char* what) {
    const toml::node* n = find(key);
    if (!n) return false;
    if (n->is_integer())
      out = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point())
      out = n->as_floating_point()->get();
    else
      fail(key, std::string("must be ") + what);
    if (!(out > 0) || out > max) fail(key, std::string("must be ") + what + ", positive");
    return true;
  }

  void seconds(std::string_view key, std::chrono::milliseconds& out) {
    double v = 0;
    if (positive(key, v, 86'400.0 * 365, "a number of seconds"))
      out = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(v * 1000)));
  }

  void number(std::string_view key, double& out) { positive(key, out, 1e12, "a number"); }

  void flag(std::string_view key, bool& out) {
    const toml::node* n = find(key);
    if (!n) return;
    if (!n->is_boolean()) fail(key, "must be true or false");
    out = n->as_boolean()->get();
  }

  void texts(std::string_view key, std::vector<std::string>& out) {
    const toml::node* n = find(key);
    if (!n) return;
    if (!n->is_array()) fail(key, "must be an array of strings");
    out.clear();
    for (const toml::node& item : *n->as_array()) {
      if (!item.is_string()) fail(key, "must be an array of strings");
      out.push_back(item.as_string()->get());
    }
  }

  const toml::table* table(std::string_view key) {
    const toml::node* n = find(key);
    if (!n) return nullptr;
    if (!n->is_table()) fail(key, "must be a table");
    return n->as_table();
  }

  // [[key]]: an array of tables.
  std::vector<const toml::table*> tables(std::string_view key) {
    std::vector<const toml::table*> out;
    const toml::node* n = find(key);
    if (!n) return out;
    if (!n->is_array_of_tables()) fail(key, "must be an array of tables ([[" + std::string(key) + "]])");
    for (const toml::node& item : *n->as_array()) out.push_back(item.as_table());
    return out;
  }

  void refuse_unknown() const {
    for (const auto& [key, value] : t_)
      if (!read_.count(std::string(key.str()))) fail(key.str(), "is not a known field");
  }

 private:
  const toml::table& t_;
  std::string path_;
  const std::string& origin_;
  std::set<std::string> read_;
};

double_texting double_texting_of(table_reader& r, std::string_view key) {
  std::string v = "enqueue";
  r.text(key, v);
  if (v == "enqueue") return double_texting::enqueue;
  if (v == "reject") return double_texting::reject;
  if (v == "interrupt") return double_texting::interrupt;
  r.fail(key, "must be enqueue, reject or interrupt, not \"" + v + "\"");
}

std::string resolve_path(const std::string& path, const std::string& base_dir) {
  if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

agent_config read_agent(table_reader& r, const std::string& base_dir) {
  agent_config a;
  r.text("id", a.id, true);
  r.text("description", a.description);
  cli::model_options& m = a.model;
  r.text("provider", m.provider);
  if (!m.provider.empty() && m.provider != "openai" && m.provider != "anthropic" && m.provider != "scripted")
    r.fail("provider", "must be openai, anthropic or scripted");
  r.text("model", m.model);
  r.text("base_url", m.base_url);
  r.text("api_key_env", m.api_key_env);
  r.text("script", m.script);
  m.script = resolve_path(m.script, base_dir);
  r.text("system", m.system);
  r.texts("tools", m.tools);
  r.text("context_policy", m.context_policy_name);
  if (!m.context_policy_name.empty() && m.context_policy_name != "short" && m.context_policy_name != "long" &&
      m.context_policy_name != "tool" && m.context_policy_name != "auto")
    r.fail("context_policy", "must be short, long, tool or auto");
  if (r.has("max_input_tokens")) {
    std::int64_t v = 0;
    r.count("max_input_tokens", v, 1, std::int64_t{1} << 40);
    m.max_input_tokens = v;
  }
  if (r.has("keep_last_turns")) {
    std::size_t v = 0;
    r.count("keep_last_turns", v, 0, 1'000'000);
    m.keep_last_turns = v;
  }
  r.flag("summarize", m.summarize);
  r.count("max_iterations", m.max_iterations, 1, 1000);
  r.count("retries", m.retries, 0, 20);
  r.count("max_queued_asks", a.max_queued_asks, 0, 1'000'000);
  r.seconds("request_deadline_seconds", a.request_deadline);
  m.timeout_seconds = static_cast<double>(a.request_deadline.count()) / 1000;
  a.on_double_text = double_texting_of(r, "double_texting");
  r.flag("cancel_on_disconnect", a.cancel_on_disconnect);
  r.refuse_unknown();
  // The model is resolved now so that a missing key or script stops the start.
  try {
    (void)cli::resolve_model(m);
  } catch (const cli::usage_error& e) {
    r.fail("model", e.what());
  }
  return a;
}

api_key read_key(table_reader& r) {
  api_key k;
  std::string env;
  r.text("key", k.key);
  r.text("key_env", env);
  r.text("user", k.user, true);
  if (k.key.empty() == env.empty()) r.fail("key", "give key or key_env, one of them");
  if (!env.empty()) {
    const char* v = std::getenv(env.c_str());
    if (!v || !*v) r.fail("key_env", "the environment variable " + env + " is not set");
    k.key = v;
  }
  // Short keys can be guessed; the server compares keys in constant time,
  // which does not help against guessing.
  if (k.key.size() < 16) r.fail(env.empty() ? "key" : "key_env", "a key must have at least 16 characters");
  r.refuse_unknown();
  return k;
}

}  // namespace

void set_listen(serve_config& c, const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0) throw config_error("listen: expected HOST:PORT, got " + host_port);
  const std::string port = host_port.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p < 0 || p > 65535) throw config_error("listen: bad port in " + host_port);
  c.host = host_port.substr(0, colon);
  if (c.host.size() > 2 && c.host.front() == '[' && c.host.back() == ']') c.host = c.host.substr(1, c.host.size() - 2);
  c.port = static_cast<std::uint16_t>(p);
}

serve_config parse_config(const std::string& text, const std::string& origin, const std::string& base_dir) {
  toml::table doc;
  try {
    doc = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw config_error(origin + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  serve_config c;
  table_reader top(doc, "", origin);
  std::string listen;
  top.text("listen", listen);
  if (!listen.empty()) {
    try {
      set_listen(c, listen);
    } catch (const config_error& e) {
      top.fail("listen", e.what());
    }
  }
  top.count("io_threads", c.io_threads, 1, 256);
  top.count("worker_threads", c.worker_threads, 1, 256);
  top.text("store", c.store);
  top.seconds("drain_deadline_seconds", c.drain_deadline);
  if (const toml::table* t = top.table("limits")) {
    table_reader r(*t, "limits", origin);
    r.count("max_body_bytes", c.limits.max_body_bytes, 1, std::int64_t{1} << 32);
    r.count("max_connections", c.limits.max_connections, 1, 1'000'000);
    r.seconds("header_timeout_seconds", c.limits.header_timeout);
    r.seconds("body_timeout_seconds", c.limits.body_timeout);
    r.seconds("write_timeout_seconds", c.limits.write_timeout);
    r.seconds("stream_heartbeat_seconds", c.limits.stream_heartbeat);
    r.count("max_stream_backlog_bytes", c.limits.max_stream_backlog_bytes, 1024, std::int64_t{1} << 32);
    r.count("max_listed", c.limits.max_listed, 1, 100'000);
    r.count("max_turns_per_user", c.limits.max_turns_per_user, 1, 1'000'000);
    r.refuse_unknown();
  }
  if (const toml::table* t = top.table("mcp")) {
    table_reader r(*t, "mcp", origin);
    r.texts("servers", c.mcp);
    r.texts("headers", c.mcp_headers);
    r.number("timeout_seconds", c.mcp_timeout_seconds);
    r.number("startup_timeout_seconds", c.mcp_startup_timeout_seconds);
    r.refuse_unknown();
  }
  const auto agents = top.tables("agents");
  if (agents.empty()) top.fail("agents", "at least one [[agents]] entry is required");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < agents.size(); ++i) {
    table_reader r(*agents[i], "agents[" + std::to_string(i) + "]", origin);
    agent_config a = read_agent(r, base_dir);
    if (!ids.insert(a.id).second) r.fail("id", "another agent is already named " + a.id);
    c.agents.push_back(std::move(a));
  }
  const auto keys = top.tables("keys");
  if (keys.empty()) top.fail("keys", "at least one [[keys]] entry is required (every API route needs a key)");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    table_reader r(*keys[i], "keys[" + std::to_string(i) + "]", origin);
    api_key k = read_key(r);
    if (!seen.insert(k.key).second) r.fail("key", "the same key is given twice");
    c.keys.push_back(std::move(k));
  }
  top.refuse_unknown();
  if (!c.mcp.empty() || !c.mcp_headers.empty()) {
    cli::model_options m;
    m.mcp = c.mcp;
    m.mcp_headers = c.mcp_headers;
    m.mcp_timeout_seconds = c.mcp_timeout_seconds;
    m.mcp_startup_timeout_seconds = c.mcp_startup_timeout_seconds;
    try {
      (void)cli::mcp_servers_for(m);
    } catch (const cli::usage_error& e) {
      throw config_error(origin + ": mcp: " + e.what());
    }
  }
  return c;
}

serve_config load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw config_error(path + ": cannot be read");
  std::stringstream s;
  s << in.rdbuf();
  return parse_config(s.str(), path, std::filesystem::path(path).parent_path().string());
}

}  // namespace troupe::serve
