#include "apps/serve/config.hpp"

#include "config/detail/context_choice_toml.hpp"
#include "config/detail/toml_reader.hpp"
#include "config/file_text.hpp"
#include "runtime/store/postgres/postgres_store.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace troupe::serve {

namespace {

double_texting double_texting_of(table_reader& r, std::string_view key) {
  std::string v = "enqueue";
  r.text(key, v);
  if (v == "enqueue") return double_texting::enqueue;
  if (v == "reject") return double_texting::reject;
  if (v == "interrupt") return double_texting::interrupt;
  r.fail(key, "must be enqueue, reject or interrupt, not \"" + v + "\"");
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
  m.context = read_context_choice(r);
  r.count("max_iterations", m.max_iterations, 1, 1000);
  r.count("retries", m.retries, 0, 20);
  r.count("max_queued_asks", a.max_queued_asks, 0, 1'000'000);
  r.seconds("request_deadline_seconds", a.request_deadline);
  m.timeout_seconds = static_cast<double>(a.request_deadline.count()) / 1000;
  a.on_double_text = double_texting_of(r, "double_texting");
  r.flag("cancel_on_disconnect", a.cancel_on_disconnect);
  r.count("max_loaded_threads", a.max_loaded_threads, 1, 100'000'000);
  r.seconds("thread_idle_timeout_seconds", a.thread_idle_timeout);
  r.texts("approvals", a.approvals);
  for (const std::string& t : a.approvals)
    if (std::find(m.tools.begin(), m.tools.end(), t) == m.tools.end())
      r.fail("approvals", "\"" + t + "\" is not one of the agent's tools");
  r.seconds("approval_timeout_seconds", a.approval_timeout);
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
  std::string role = "user";
  r.text("role", role);
  if (role == "metrics")
    k.role = key_role::metrics;
  else if (role != "user")
    r.fail("role", "must be user or metrics, not \"" + role + "\"");
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

namespace {

struct host_port {
  std::string host;
  std::uint16_t port = 0;
};

// "HOST:PORT" ("[V6]:PORT" too); config_error naming `field` if malformed.
host_port split_host_port(const std::string& text, const std::string& field) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) throw config_error(field + ": expected HOST:PORT, got " + text);
  const std::string port = text.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p < 0 || p > 65535) throw config_error(field + ": bad port in " + text);
  host_port out{text.substr(0, colon), static_cast<std::uint16_t>(p)};
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  return out;
}

void read_cluster(table_reader& r, cluster_config& cc, const std::string& base_dir) {
  r.text("database", cc.database);
  if (r.has("secret"))
    r.fail("secret", "is not read from the file: name the environment variable that holds it with secret_env");
  r.text("secret_env", cc.secret_env);
  if (cc.secret_env.empty()) r.fail("secret_env", "must name an environment variable");
  std::string listen;
  r.text("listen", listen);
  if (!listen.empty()) {
    try {
      const host_port hp = split_host_port(listen, "listen");
      cc.listen_host = hp.host;
      cc.listen_port = hp.port;
    } catch (const config_error& e) {
      r.fail("listen", e.what());
    }
    // The node registers this address for the others to reach it at.
    if (cc.listen_host == "0.0.0.0" || cc.listen_host == "::")
      r.fail("listen",
             "the other nodes reach this node at this address: give one they can reach, not " + cc.listen_host);
  }
  r.text("node_id", cc.node_id);
  r.count("shards", cc.shards, 1, 65'536);
  r.seconds("heartbeat_interval_seconds", cc.heartbeat_interval);
  r.seconds("dead_after_seconds", cc.dead_after);
  if (cc.dead_after <= cc.heartbeat_interval)
    r.fail(r.has("dead_after_seconds") ? "dead_after_seconds" : "heartbeat_interval_seconds",
           "dead_after_seconds must be longer than heartbeat_interval_seconds (a live node would be declared "
           "dead between its heartbeats)");
  r.seconds("drain_timeout_seconds", cc.drain_timeout);
  r.text("tls_certificate", cc.tls_certificate);
  r.text("tls_key", cc.tls_key);
  r.text("tls_ca_file", cc.tls_ca_file);
  const int tls_files = !cc.tls_certificate.empty() + !cc.tls_key.empty() + !cc.tls_ca_file.empty();
  if (tls_files != 0 && tls_files != 3)
    r.fail(cc.tls_certificate.empty() ? "tls_certificate"
           : cc.tls_key.empty()       ? "tls_key"
                                      : "tls_ca_file",
           "give tls_certificate, tls_key and tls_ca_file, all three or none");
  for (std::string* path : {&cc.tls_certificate, &cc.tls_key, &cc.tls_ca_file}) *path = resolve_path(*path, base_dir);
  r.refuse_unknown();
}

// What a cluster node needs beyond its own table: a PostgreSQL database, the
// secret from the environment, and conversations in the same database.
void check_cluster(serve_config& c) {
  cluster_config& cc = c.cluster;
  if (!is_postgres_uri(cc.database))
    throw config_error("cluster.database: must be a PostgreSQL URI (postgres://…), not \"" + cc.database + "\"");
  const char* secret = std::getenv(cc.secret_env.c_str());
  if (!secret || !*secret)
    throw config_error("cluster.secret_env: the environment variable " + cc.secret_env +
                       " (the secret every node of the cluster shares) is not set");
  cc.secret = secret;
  // As API keys: a short secret can be guessed.
  if (cc.secret.size() < 16)
    throw config_error("cluster.secret_env: the secret in " + cc.secret_env + " must have at least 16 characters");
  if (!c.store.empty() && c.store != cc.database)
    throw config_error(
        "store: a cluster node keeps its conversations in the cluster's database: leave store out, or give "
        "cluster.database");
}

}  // namespace

void set_listen(serve_config& c, const std::string& host_port) {
  const auto hp = split_host_port(host_port, "listen");
  c.host = hp.host;
  c.port = hp.port;
}

void set_cluster(serve_config& c, const std::string& database) {
  c.cluster.database = database;
  check_cluster(c);
}

namespace {

serve_config read_config(const std::string& text, const std::string& origin, const std::string& base_dir) {
  const toml::table doc = parse_toml(text, origin);
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
    r.number("requests_per_second", c.limits.requests_per_second);
    r.number("request_burst", c.limits.request_burst);
    if (c.limits.request_burst > 0 && c.limits.request_burst < 1) r.fail("request_burst", "must be at least 1");
    if (c.limits.request_burst == 0) c.limits.request_burst = std::max(1.0, std::ceil(c.limits.requests_per_second));
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
  if (const toml::table* t = top.table("cluster")) {
    table_reader r(*t, "cluster", origin);
    read_cluster(r, c.cluster, base_dir);
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
  if (c.cluster.enabled()) {
    try {
      check_cluster(c);
    } catch (const config_error& e) {
      throw config_error(origin + ": " + e.what());
    }
  }
  return c;
}

}  // namespace

serve_config parse_config(const std::string& text, const std::string& origin, const std::string& base_dir) {
  try {
    return read_config(text, origin, base_dir);
  } catch (const field_error& e) {
    throw config_error(e.what());
  }
}

serve_config load_config(const std::string& path) {
  const std::optional<std::string> text = file_text(path);
  if (!text) throw config_error(path + ": cannot be read");
  return parse_config(*text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace troupe::serve
