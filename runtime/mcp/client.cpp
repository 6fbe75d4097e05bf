#include "runtime/mcp/detail/client.hpp"

#include "base/overloaded.hpp"

#include <algorithm>

namespace troupe::mcp {

namespace json = boost::json;
using std::chrono::milliseconds;

std::shared_ptr<client> client::create(client_options options, transport_factory make_transport) {
  return std::shared_ptr<client>(new client(std::move(options), std::move(make_transport)));
}

namespace {

timer_queue& shared_timers() {
  static auto* timers = new timer_queue;  // deliberately never destroyed
  return *timers;
}

}  // namespace

client::client(client_options options, transport_factory make_transport)
    : options_(std::move(options)), make_transport_(std::move(make_transport)), timers_(shared_timers()) {}

client::~client() { close(); }

void client::on_notification(std::function<void(const rpc_notification&)> handler) {
  std::lock_guard lock(mutex_);
  notification_handler_ = std::move(handler);
}

void client::on_reconnected(std::function<void()> handler) {
  std::lock_guard lock(mutex_);
  reconnected_handler_ = std::move(handler);
}

client::connection_info client::info() const {
  std::lock_guard lock(mutex_);
  return {phase_ == phase::ready, era_, version_, starts_};
}

void client::run(actions a) {
  // This may be the transport's own thread: its close() allows for that.
  for (auto& t : a.to_close) t->close();
  if (a.connect) connect();
  for (auto id : a.to_send) send_now(id);
  for (auto& [callback, reply] : a.replies)
    if (callback) callback(std::move(reply));
}

std::int64_t client::add_pending(std::unique_lock<std::mutex>&, pending p, actions& a) {
  const std::int64_t id = next_id_++;
  if (p.timeout) {
    std::weak_ptr<client> weak = weak_from_this();
    p.timer = timers_.schedule(*p.timeout, [weak, id] {
      if (auto self = weak.lock()) self->timed_out(id);
    });
  }
  const bool handshake = p.handshake;
  p.generation = generation_;
  pending_.emplace(id, std::move(p));
  if (handshake || phase_ == phase::ready) {
    a.to_send.push_back(id);
  } else {
    waiting_.push_back(id);
    if (phase_ == phase::idle) start_connection(a);
  }
  return id;
}

std::int64_t client::request(std::string method, json::object params, std::optional<milliseconds> timeout,
                             reply_callback on_reply, std::string name,
                             std::vector<std::pair<std::string, std::string>> headers) {
  actions a;
  std::int64_t id = 0;
  {
    std::unique_lock lock(mutex_);
    if (given_up_ && std::chrono::steady_clock::now() >= given_up_until_) {
      // The give-up is over: this request may start the server once more.
      given_up_.reset();
      recent_starts_.clear();
    }
    if (phase_ == phase::closed || given_up_) {
      error_info why = given_up_
                           ? *given_up_
                           : error_info::of(error_type::shutdown, "the MCP server " + options_.name + " was closed");
      lock.unlock();
      on_reply(std::move(why));
      return 0;
    }
    pending p{std::move(method), std::move(params), std::move(name), timeout, std::move(on_reply)};
    p.headers = std::move(headers);
    id = add_pending(lock, std::move(p), a);
  }
  run(std::move(a));
  return id;
}

void client::start_connection(actions& a) {
  const auto now = std::chrono::steady_clock::now();
  while (!recent_starts_.empty() && now - recent_starts_.front() > options_.restart_window) recent_starts_.pop_front();
  if (static_cast<int>(recent_starts_.size()) > options_.max_restarts) {
    give_up_for_ =
        give_up_for_.count() == 0 ? options_.restart_window : std::min(options_.max_give_up, give_up_for_ * 2);
    given_up_until_ = now + give_up_for_;
    given_up_ = error_info::of(mcp_error::unavailable, "the MCP server " + options_.name + " failed " +
                                                           std::to_string(recent_starts_.size()) + " times within " +
                                                           std::to_string(options_.restart_window.count()) +
                                                           " ms; it is started again on the first call after " +
                                                           std::to_string(give_up_for_.count()) + " ms");
    for (auto id : std::exchange(waiting_, {})) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      timers_.cancel(it->second.timer);
      a.replies.emplace_back(std::move(it->second.on_reply), *given_up_);
      pending_.erase(it);
    }
    return;
  }
  recent_starts_.push_back(now);
  phase_ = phase::connecting;
  ++generation_;
  ++starts_;
  a.connect = true;
}

void client::connect() {
  std::shared_ptr<transport> t;
  int generation;
  {
    std::lock_guard lock(mutex_);
    if (phase_ != phase::connecting) return;
    generation = generation_;
  }
  t = make_transport_();
  std::weak_ptr<client> weak = weak_from_this();
  transport_handlers h;
  h.on_message = [weak, generation](std::string_view text) {
    if (auto self = weak.lock()) self->handle_message(generation, text);
  };
  h.on_closed = [weak, generation](error_info why) {
    if (auto self = weak.lock()) self->handle_closed(generation, std::move(why));
  };
  if (auto failed = t->open(std::move(h))) {
    fail_connection(generation, std::move(*failed));
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (generation != generation_) {
      // closed meanwhile
    } else {
      transport_ = t;
      per_request_exchange_ = t->exchange_per_request();
      t.reset();
    }
  }
  if (t) {
    t->close();
    return;
  }
  std::optional<era> known;
  {
    std::lock_guard lock(mutex_);
    known = known_era_;
  }
  if (known == era::modern) return become_ready(generation, era::modern, std::string(modern_version));
  if (known == era::legacy) return initialize(generation);
  handshake_request(
      generation, "server/discover", with_modern_meta({}), options_.probe_timeout, [weak, generation](rpc_reply reply) {
        auto self = weak.lock();
        if (!self) return;
        std::visit(
            overloaded{[&](speak_modern) { self->become_ready(generation, era::modern, std::string(modern_version)); },
                       [&](speak_legacy) { self->initialize(generation); },
                       [&](error_info e) { self->fail_connection(generation, std::move(e)); }},
            judge_probe(reply, self->options_.name));
      });
}

void client::initialize(int generation) {
  std::weak_ptr<client> weak = weak_from_this();
  handshake_request(
      generation, "initialize", initialize_params(), options_.request_timeout, [weak, generation](rpc_reply reply) {
        auto self = weak.lock();
        if (!self) return;
        const std::string& name = self->options_.name;
        if (auto* e = std::get_if<rpc_error>(&reply)) return self->fail_connection(generation, error_of(*e, name));
        if (auto* e = std::get_if<error_info>(&reply)) {
          error_info why = *e;
          if (why.type == error_type::timeout)
            why.message = "the MCP server " + name + " did not answer initialize (nor server/discover)";
          return self->fail_connection(generation, std::move(why));
        }
        const json::object& result = std::get<json::object>(reply);
        const auto* v = result.if_contains("protocolVersion");
        const std::string version = v && v->is_string() ? std::string(v->as_string()) : "";
        if (!is_legacy_version(version))
          return self->fail_connection(
              generation,
              error_info::of(mcp_error::unsupported_version, "the MCP server " + name + " chose protocol version \"" +
                                                                 version + "\"; troupe speaks " + spoken_versions()));
        std::shared_ptr<transport> t;
        {
          std::lock_guard lock(self->mutex_);
          if (generation != self->generation_) return;
          t = self->transport_;
        }
        // The session is open once the server has the notification: over
        // HTTP each message is a request of its own, and a tools/list sent
        // beside it may reach a strict server first.
        outgoing_message initialized{
            encode_notification("notifications/initialized", {}), "notifications/initialized", "", version, {}};
        initialized.on_sent = [weak, generation, version](std::optional<error_info> failed) {
          auto self = weak.lock();
          if (!self) return;
          if (!failed) return self->become_ready(generation, era::legacy, version);
          failed->message =
              "the MCP server " + self->options_.name + " did not take notifications/initialized: " + failed->message;
          self->fail_connection(generation, std::move(*failed));
        };
        t->send(std::move(initialized));
      });
}

std::int64_t client::handshake_request(int generation, std::string method, json::object params, milliseconds timeout,
                                       reply_callback on_reply) {
  actions a;
  std::int64_t id;
  {
    std::unique_lock lock(mutex_);
    if (generation != generation_) return 0;
    pending p{std::move(method), std::move(params), "", timeout, std::move(on_reply)};
    p.handshake = true;
    id = add_pending(lock, std::move(p), a);
  }
  run(std::move(a));
  return id;
}

void client::become_ready(int generation, era spoken, std::string version) {
  actions a;
  std::function<void()> reconnected;
  {
    std::lock_guard lock(mutex_);
    if (generation != generation_ || phase_ != phase::connecting) return;
    phase_ = phase::ready;
    give_up_for_ = std::chrono::milliseconds(0);
    era_ = spoken;
    known_era_ = spoken;
    version_ = std::move(version);
    a.to_send = std::exchange(waiting_, {});
    if (starts_ > 1) reconnected = reconnected_handler_;
  }
  run(std::move(a));
  if (reconnected) reconnected();
}

void client::fail_connection(int generation, error_info why) {
  actions a;
  {
    std::lock_guard lock(mutex_);
    if (generation != generation_) return;
    // Failed before it was ready: what we knew of it may be wrong now.
    if (phase_ == phase::connecting) known_era_.reset();
    if (phase_ != phase::closed) phase_ = phase::idle;
    ++generation_;
    if (transport_) a.to_close.push_back(std::exchange(transport_, nullptr));
    for (auto it = pending_.begin(); it != pending_.end();) {
      timers_.cancel(it->second.timer);
      a.replies.emplace_back(std::move(it->second.on_reply), why);
      it = pending_.erase(it);
    }
    waiting_.clear();
  }
  run(std::move(a));
}

void client::send_now(std::int64_t id) {
  std::shared_ptr<transport> t;
  outgoing_message m;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    if (it == pending_.end() || !transport_) return;
    pending& p = it->second;
    t = transport_;
    json::object params = p.params;
    // Every modern request declares its revision; the probe already does.
    if (phase_ == phase::ready && era_ == era::modern) params = with_modern_meta(std::move(params));
    m.text = encode_request(id, p.method, std::move(params));
    m.method = p.method;
    m.name = p.name;
    m.headers = p.headers;
    m.protocol_version = p.method == "server/discover" ? std::string(modern_version)
                         : p.method == "initialize"    ? std::string()
                                                       : version_;
    p.sent = true;
  }
  std::weak_ptr<client> weak = weak_from_this();
  m.on_sent = [weak, id](std::optional<error_info> error) {
    if (auto self = weak.lock()) self->handle_sent(id, std::move(error));
  };
  const std::uint64_t handle = t->send(std::move(m));
  std::lock_guard lock(mutex_);
  if (auto it = pending_.find(id); it != pending_.end()) it->second.transport_handle = handle;
}

void client::handle_sent(std::int64_t id, std::optional<error_info> error) {
  reply_callback callback;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    // Over stdio a message that went out waits for its response; over HTTP
    // its exchange is over, and no response came.
    if (!error && !per_request_exchange_) return;
    if (!error)
      error =
          error_info::of(error_type::malformed_response, "the MCP server " + options_.name + " ended its response to " +
                                                             it->second.method + " without a JSON-RPC response");
    timers_.cancel(it->second.timer);
    callback = std::move(it->second.on_reply);
    pending_.erase(it);
  }
  if (callback) callback(std::move(*error));
}

void client::handle_message(int generation, std::string_view text) {
  if (auto batch = split_rpc_batch(text)) {
    for (const std::string& one : *batch) handle_message(generation, one);
    return;
  }
  rpc_message message = parse_rpc_message(text);
  actions a;
  std::shared_ptr<transport> t;
  std::string answer;
  std::function<void(const rpc_notification&)> on_note;
  {
    std::lock_guard lock(mutex_);
    if (generation != generation_) return;
    t = transport_;
    std::visit(overloaded{[&](rpc_response& r) {
                            const auto* id = std::get_if<std::int64_t>(&r.id);
                            auto it = id ? pending_.find(*id) : pending_.end();
                            if (it == pending_.end()) return;  // late: timed out or cancelled
                            timers_.cancel(it->second.timer);
                            rpc_reply reply;
                            if (auto* e = std::get_if<rpc_error>(&r.outcome)) {
                              reply = std::move(*e);
                            } else {
                              auto& result = std::get<json::object>(r.outcome);
                              if (auto bad = check_result_type(result, options_.name))
                                reply = std::move(*bad);
                              else
                                reply = std::move(result);
                            }
                            a.replies.emplace_back(std::move(it->second.on_reply), std::move(reply));
                            pending_.erase(it);
                          },
                          [&](rpc_request& r) {
                            // troupe offers the server nothing (no sampling, roots or
                            // elicitation); a ping gets its empty answer.
                            answer = r.method == "ping" ? encode_result(r.id, {})
                                                        : encode_error(r.id, rpc_code::method_not_found,
                                                                       "troupe does not provide " + r.method);
                          },
                          [&](rpc_notification& n) {
                            if (notification_handler_) on_note = notification_handler_;
                            (void)n;
                          },
                          [&](malformed_message& m) {
                            const error_info why =
                                error_info::of(error_type::malformed_response,
                                               "the MCP server " + options_.name +
                                                   " sent a malformed JSON-RPC message (" + m.why + ")");
                            const auto* id = m.id ? std::get_if<std::int64_t>(&*m.id) : nullptr;
                            // One that names its request fails that request; one that
                            // cannot be matched fails every request sent and waiting,
                            // since any of them may have been its intended answer.
                            for (auto it = pending_.begin(); it != pending_.end();) {
                              const bool hit = id ? it->first == *id : it->second.sent;
                              if (!hit) {
                                ++it;
                                continue;
                              }
                              timers_.cancel(it->second.timer);
                              a.replies.emplace_back(std::move(it->second.on_reply), why);
                              it = pending_.erase(it);
                            }
                          }},
               message);
  }
  if (!answer.empty() && t) t->send(outgoing_message{std::move(answer), "", "", version_now(), {}});
  if (on_note) on_note(std::get<rpc_notification>(message));
  run(std::move(a));
}

void client::handle_closed(int generation, error_info why) {
  {
    // Only a server that had been working is started again by the next call;
    // one that dies while starting fails the start, and says only that.
    std::lock_guard lock(mutex_);
    if (generation == generation_ && phase_ == phase::ready)
      why.message += " — it will be started again on the next call";
  }
  fail_connection(generation, std::move(why));
}

std::string client::version_now() const {
  std::lock_guard lock(mutex_);
  return version_;
}

bool client::notify_cancelled(const std::shared_ptr<transport>& t, std::int64_t id, std::uint64_t handle,
                              const std::string& reason) {
  if (!t) return false;
  // Still queued for a server that is not reading: it never saw the request.
  if (handle && t->withdraw(handle)) return true;
  bool modern_http, per_request;
  {
    std::lock_guard lock(mutex_);
    per_request = per_request_exchange_;
    modern_http = per_request && era_ == era::modern && phase_ == phase::ready;
  }
  // Over modern HTTP closing the response stream is the cancellation; over
  // stdio and legacy HTTP the server is told.
  if (!modern_http)
    t->send(outgoing_message{
        encode_notification("notifications/cancelled", json::object{{"requestId", id}, {"reason", reason}}),
        "notifications/cancelled",
        "",
        version_now(),
        {}});
  if (per_request && handle) t->abort(handle);
  return false;
}

void client::timed_out(std::int64_t id) {
  reply_callback callback;
  std::shared_ptr<transport> t;
  std::uint64_t handle = 0;
  bool sent = false;
  std::string method;
  milliseconds after{0};
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    callback = std::move(it->second.on_reply);
    sent = it->second.sent && it->second.generation == generation_;
    handle = it->second.transport_handle;
    method = it->second.method;
    after = it->second.timeout.value_or(milliseconds{0});
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
    pending_.erase(it);
    t = transport_;
  }
  const bool unwritten = sent && notify_cancelled(t, id, handle, "timeout");
  const std::string within = " within " + std::to_string(after.count()) + " ms";
  callback(error_info::of(error_type::timeout,
                          unwritten ? "the MCP server " + options_.name + " did not read " + method + within +
                                          ": it is not reading what troupe writes to it"
                          : sent ? "the MCP server " + options_.name + " did not answer " + method + within
                                 : "the MCP server " + options_.name + " was not ready for " + method + within +
                                       ": it did not answer initialize (nor server/discover) in time"));
}

void client::cancel(std::int64_t id, std::string reason) {
  reply_callback callback;
  std::shared_ptr<transport> t;
  std::uint64_t handle = 0;
  bool sent = false;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    timers_.cancel(it->second.timer);
    callback = std::move(it->second.on_reply);
    sent = it->second.sent && it->second.generation == generation_;
    handle = it->second.transport_handle;
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
    pending_.erase(it);
    t = transport_;
  }
  if (sent) notify_cancelled(t, id, handle, reason);
  callback(error_info::of(error_type::cancelled, reason));
}

void client::close() {
  actions a;
  std::vector<std::shared_ptr<transport>> to_close;
  {
    std::lock_guard lock(mutex_);
    if (phase_ == phase::closed) return;
    phase_ = phase::closed;
    ++generation_;
    if (transport_) to_close.push_back(std::exchange(transport_, nullptr));
    const error_info why = error_info::of(error_type::shutdown, "the MCP server " + options_.name + " was closed");
    for (auto& [id, p] : pending_) {
      timers_.cancel(p.timer);
      a.replies.emplace_back(std::move(p.on_reply), why);
    }
    pending_.clear();
    waiting_.clear();
  }
  for (auto& t : to_close) t->close();
  run(std::move(a));
}

}  // namespace troupe::mcp
