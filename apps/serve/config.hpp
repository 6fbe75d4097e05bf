#pragma once
// What `troupe serve --config FILE` reads: the listen address, the store, the
// limits, the agents, the API keys and, for a cluster node, [cluster].
// Parsing checks everything a server needs before it starts, so a bad file is
// refused with the field named (agents[1].double_texting, keys[0].key_env, …)
// instead of failing on the first request.

#include "apps/model_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe::serve {

// What a second message to a conversation whose turn is still running does.
enum class double_texting {
  enqueue,    // runs after the turns before it (FIFO), up to max_queued_asks
  reject,     // 409 while a turn runs
  interrupt,  // cancels the running turn (its tool calls get results), then runs
};

struct agent_config {
  std::string id;
  std::string description;
  // Provider, model, base_url, api_key_env, script, system prompt, tools,
  // context policy, max_iterations and retries, resolved as `troupe ask`
  // resolves its flags.
  cli::model_options model;
  std::size_t max_queued_asks = 16;  // per conversation, beyond the running turn
  std::chrono::milliseconds request_deadline{std::chrono::minutes(5)};
  double_texting on_double_text = double_texting::enqueue;
  bool cancel_on_disconnect = false;  // a streaming client that goes away cancels its turn
  // The agent's loaded threads: idle ones are unloaded (the store keeps
  // them) beyond this many, or after this long unused.
  std::size_t max_loaded_threads = 10'000;
  std::chrono::milliseconds thread_idle_timeout{std::chrono::minutes(30)};
  // Tools of this agent whose every call waits for a person's decision
  // (POST …/decisions), for at most approval_timeout; then it is rejected.
  std::vector<std::string> approvals;
  std::chrono::milliseconds approval_timeout{std::chrono::hours(24)};
};

// What a key may read: a user's key the API, a metrics key /metrics alone
// (the counters span every user's traffic, which no user may see).
enum class key_role { user, metrics };

struct api_key {
  std::string key;  // never logged
  std::string user;
  key_role role = key_role::user;
};

struct serve_limits {
  std::size_t max_body_bytes = 1 << 20;
  std::size_t max_connections = 1024;
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};  // also the keep-alive idle time
  std::chrono::milliseconds body_timeout{std::chrono::seconds(30)};
  std::size_t max_stream_backlog_bytes = 8 << 20;  // unsent SSE bytes before a slow reader is dropped
  // How long a write to a client may go without a byte taken before the
  // connection is closed: a client that stops reading an answer or a stream
  // would otherwise hold its connection (and what is queued for it) forever.
  std::chrono::milliseconds write_timeout{std::chrono::seconds(30)};
  // An event stream silent this long (the model thinking, a tool running)
  // gets an SSE comment line, so proxies and load balancers in between do
  // not close it as idle.
  std::chrono::milliseconds stream_heartbeat{std::chrono::seconds(15)};
  std::size_t max_listed = 100;  // conversations per list, messages per conversation
  // Unfinished turns (running or queued) one user may have across all their
  // conversations: past it, 429 too_many_turns. Each conversation's own
  // queue is bounded by its agent's max_queued_asks besides.
  std::size_t max_turns_per_user = 64;
  // Requests per second one user may make on average, in bursts of up to
  // request_burst (a token bucket per user): past it, 429 rate_limited with
  // Retry-After. 0: no limit.
  double requests_per_second = 0;
  double request_burst = 0;  // 0: requests_per_second rounded up, at least 1
};

// [cluster]: the server as one node of a cluster of troupe nodes kept in
// PostgreSQL (docs/cluster.md). Every node has the same agents; any node
// answers any conversation, asking each agent on the node that holds its shard.
struct cluster_config {
  std::string database;  // postgres://…; empty: not a cluster node
  // The environment variable holding the secret every node shares (the file
  // names the variable only), and the secret read from it (never logged).
  std::string secret_env = "TROUPE_CLUSTER_SECRET";
  std::string secret;
  // Where the other nodes reach this one's transport: a host they can reach
  // (the node registers it), port 0 for any free one.
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 0;
  std::string node_id;  // empty: made up at start (host/pid/start/unique)
  std::uint32_t shards = 64;
  std::chrono::milliseconds heartbeat_interval{1'000};
  std::chrono::milliseconds dead_after{10'000};
  std::chrono::milliseconds drain_timeout{30'000};
  // TLS between nodes: PEM files, all three or none.
  std::string tls_certificate, tls_key, tls_ca_file;

  bool enabled() const { return !database.empty(); }
};

struct serve_config {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;
  std::size_t io_threads = 2;
  std::size_t worker_threads = 4;  // store calls and other blocking work, off the I/O threads
  std::string store;               // empty: the default SQLite file
  std::chrono::milliseconds drain_deadline{std::chrono::seconds(30)};
  serve_limits limits;
  std::vector<agent_config> agents;
  std::vector<api_key> keys;
  // MCP servers whose tools every agent may enable (as --mcp / --mcp-header).
  std::vector<std::string> mcp;
  std::vector<std::string> mcp_headers;
  double mcp_timeout_seconds = 60;
  double mcp_startup_timeout_seconds = 30;
  cluster_config cluster;
};

// A config that cannot be served; what() names the field and the file.
struct config_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `origin` names the text in messages; relative paths (scripts) are resolved
// against `base_dir`. Environment variables named by key_env are read here.
serve_config parse_config(const std::string& text, const std::string& origin, const std::string& base_dir);
serve_config load_config(const std::string& path);

// "HOST:PORT" (as --listen gives it) into the config; config_error if malformed.
void set_listen(serve_config& c, const std::string& host_port);

// The cluster's database (as --cluster gives it, over the file's): the
// server becomes a cluster node, its secret read from cluster.secret_env.
// config_error for what a node could not run with.
void set_cluster(serve_config& c, const std::string& database);

}  // namespace troupe::serve
