#pragma once
// One MCP server, as a JSON-RPC peer: requests matched to their responses,
// each with its deadline; the revision chosen on connecting; the server
// started again when it died. Asynchronous throughout: no caller's thread
// waits for the server (tests and program edges wait on the callbacks).
//
// Connecting (on the first request, and again after the server died):
// `server/discover` with modern `_meta` first; a result means modern; a
// recognised modern error (UnsupportedProtocolVersion listing a legacy
// version we speak) leads to `initialize`; any other error, or no answer
// within `probe_timeout`, means a legacy server, so `initialize` and
// `notifications/initialized` follow. Requests made meanwhile wait for the
// connection and fail with its error if it cannot be made. The revision found
// is kept for the server's restarts (the versioning page allows it): a
// restarted legacy server is asked to initialize at once, a modern one needs
// no handshake; a restart that then fails probes again the next time.
//
// A server that dies fails every request it had (`mcp_server_exited`), and
// the next request starts it again, at most `max_restarts` times within
// `restart_window`; past that the server is given up on for a while (the
// window at first, twice as long after each give-up that follows, at most
// `max_give_up`), and the first request after that starts it again. A server
// that becomes ready resets the back-off.

#include "runtime/mcp/detail/json_rpc.hpp"
#include "runtime/mcp/detail/protocol.hpp"
#include "runtime/mcp/detail/transport.hpp"
#include "runtime/net/timer_queue.hpp"

#include <boost/json/object.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

namespace troupe::mcp {

struct client_options {
  std::string name;                                   // the server's name in troupe, for messages
  std::chrono::milliseconds request_timeout{30'000};  // initialize, tools/list, …
  // How long a server that may not know server/discover gets to say so; a
  // legacy server that ignores it is then asked to initialize.
  std::chrono::milliseconds probe_timeout{5'000};
  int max_restarts = 5;
  std::chrono::milliseconds restart_window{60'000};
  std::chrono::milliseconds max_give_up{600'000};
};

using transport_factory = std::function<std::unique_ptr<transport>()>;

using reply_callback = std::function<void(rpc_reply)>;

class client : public std::enable_shared_from_this<client> {
 public:
  static std::shared_ptr<client> create(client_options options, transport_factory make_transport);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  // Sends a request once connected. `timeout` unset: the caller stops it
  // with cancel(). `name` is params.name for the HTTP headers. The callback
  // runs once, on some transport or timer thread. Returns the request's id.
  std::int64_t request(std::string method, boost::json::object params, std::optional<std::chrono::milliseconds> timeout,
                       reply_callback on_reply, std::string name = {},
                       std::vector<std::pair<std::string, std::string>> headers = {});
  // Stops waiting for the request and tells the server (notifications/cancelled
  // over stdio and legacy HTTP; over modern HTTP, closing the stream is the
  // cancellation). Its callback gets `cancelled`. Nothing if it already ended.
  void cancel(std::int64_t id, std::string reason);

  // Notifications from the server (tools/list_changed, …), on a transport thread.
  void on_notification(std::function<void(const rpc_notification&)> handler);

  // Called each time a connection is ready again after the first (the server
  // was restarted), on a transport or timer thread.
  void on_reconnected(std::function<void()> handler);

  // Fails what is pending with `shutdown` and stops the server. Idempotent.
  void close();

  struct connection_info {
    bool connected = false;
    era spoken = era::legacy;
    std::string protocol_version;
    int starts = 0;  // how many times it was started (or connected to)
  };
  connection_info info() const;

 private:
  client(client_options options, transport_factory make_transport);

  struct pending {
    std::string method;
    boost::json::object params;
    std::string name;
    std::optional<std::chrono::milliseconds> timeout;
    reply_callback on_reply;
    std::uint64_t timer = 0;
    bool handshake = false;
    bool sent = false;
    std::uint64_t transport_handle = 0;
    int generation = 0;
    std::vector<std::pair<std::string, std::string>> headers{};
  };
  enum class phase { idle, connecting, ready, closed };

  // What a locked section decided to do once the lock is released.
  struct actions {
    std::vector<std::pair<reply_callback, rpc_reply>> replies;
    std::vector<std::int64_t> to_send;
    std::vector<std::shared_ptr<transport>> to_close;
    bool connect = false;
  };

  std::int64_t add_pending(std::unique_lock<std::mutex>& lock, pending p, actions& a);
  void run(actions a);
  void start_connection(actions& a);  // lock held
  void connect();
  void initialize(int generation);
  void become_ready(int generation, era spoken, std::string version);
  void fail_connection(int generation, error_info why);
  void send_now(std::int64_t id);
  void handle_message(int generation, std::string_view text);
  void handle_closed(int generation, error_info why);
  void handle_sent(std::int64_t id, std::optional<error_info> error);
  void timed_out(std::int64_t id);
  std::string version_now() const;
  // Tells the server a request is off; true if it never got any of it.
  bool notify_cancelled(const std::shared_ptr<transport>& t, std::int64_t id, std::uint64_t handle,
                        const std::string& reason);
  std::int64_t handshake_request(int generation, std::string method, boost::json::object params,
                                 std::chrono::milliseconds timeout, reply_callback on_reply);

  client_options options_;
  transport_factory make_transport_;
  // Shared by every client and never destroyed: a client may be destroyed
  // on the timer thread, inside one of its callbacks.
  timer_queue& timers_;
  mutable std::mutex mutex_;
  phase phase_ = phase::idle;
  int generation_ = 0;
  int starts_ = 0;
  std::shared_ptr<transport> transport_;
  bool per_request_exchange_ = false;  // HTTP: a response stream per request
  era era_ = era::legacy;
  std::optional<era> known_era_;  // from the last connection that worked
  std::string version_;
  std::int64_t next_id_ = 1;
  std::map<std::int64_t, pending> pending_;
  std::vector<std::int64_t> waiting_;  // for the connection
  std::deque<std::chrono::steady_clock::time_point> recent_starts_;
  std::optional<error_info> given_up_;
  std::chrono::steady_clock::time_point given_up_until_{};
  std::chrono::milliseconds give_up_for_{0};  // the last give-up's length; 0: none since the server was ready
  std::function<void(const rpc_notification&)> notification_handler_;
  std::function<void()> reconnected_handler_;
};

}  // namespace troupe::mcp
