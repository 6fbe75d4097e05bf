// Two runtimes as two nodes on loopback: a remote ask is a local ask that
// travels (the same events, reply and errors; cancel and the trace context
// go with it), and what a local ask never meets ends with a typed error:
// a node killed mid-request (node_lost), a node without the secret
// (node_refused), a node of another build (incompatible_build).

#include "actors/cluster/detail/wire.hpp"
#include "actors/cluster/node.hpp"
#include "actors/detail/runtime_impl.hpp"
#include "support/cluster_nodes.hpp"
#include "support/freezing_proxy.hpp"
#include "support/runtime_harness.hpp"

#include <caf/io/all.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

using namespace troupe;
using namespace troupe::testing;

namespace {

const std::string secret = "correct horse battery staple";

// The same conversation every time: a tool call, then an answer in three deltas.
std::shared_ptr<scripted_provider> scripted(std::atomic<int>* calls = nullptr) {
  return std::make_shared<scripted_provider>([calls](const llm_stream& s) {
    if (calls) ++*calls;
    if (s.messages.back().role == "tool") {
      scripted_reply r = scripted_reply::text("", token_usage{30, 3});
      r.chunks = {"The sum ", "is ", "5."};
      return r;
    }
    return scripted_reply::tools({call("c1", "add", {{"a", 2}, {"b", 3}})}, token_usage{20, 5});
  });
}

tool adder() {
  return make_tool("add", [](const boost::json::object& a, const tool_context&) {
    return boost::json::value(a.at("a").as_int64() + a.at("b").as_int64());
  });
}

// A runtime with one agent "helper" that uses the adder.
struct peer_runtime {
  explicit peer_runtime(std::shared_ptr<llm_provider> model, std::shared_ptr<telemetry_sink> sink = nullptr)
      : rt({.provider = std::move(model), .telemetry = sink ? sink : std::make_shared<log_sink>(false)}) {
    rt.tools().add(adder());
    rt.spawn_agent({.id = "helper", .model = "m", .tools = {"add"}});
  }
  runtime rt;
};

// Collects a request's stream events, serialised as they would cross: equal
// bytes, equal events.
struct event_log {
  std::mutex mutex;
  std::vector<std::vector<char>> events;
  std::vector<std::size_t> kinds;

  ask_options options(std::string request_id) {
    ask_options o;
    o.request_id = std::move(request_id);
    o.on_event = [this](const stream_event& e) {
      wire::event_envelope copy{0, e};
      std::vector<char> bytes;
      caf::binary_serializer sink{nullptr, bytes};
      REQUIRE(!sink(copy));
      std::lock_guard lock(mutex);
      events.push_back(std::move(bytes));
      kinds.push_back(e.index());
    };
    return o;
  }
};

node_options caller_options(std::string s = secret) { return node_options{.secret = std::move(s)}; }
node_options listening(std::string s = secret) { return node_options{.secret = std::move(s), .listen_port = 0}; }

}  // namespace

TEST_CASE("a remote ask streams the same events and reply as a local ask", "[cluster]") {
  peer_runtime local(scripted());
  event_log here;
  const reply local_reply = must_reply(local.rt.find_agent("helper")->ask("2 + 3?", here.options("r1")));

  peer_runtime far(scripted());
  node server(far.rt, listening());
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, caller_options());
  event_log there;
  const reply remote_reply =
      must_reply(caller.agent_at(*server.address(), "helper").ask("2 + 3?", there.options("r1")));

  CHECK(answer_of(remote_reply) == "The sum is 5.");
  CHECK(remote_reply == local_reply);
  CHECK(there.kinds == here.kinds);
  CHECK(there.events == here.events);
  CHECK(there.kinds.back() == 3);  // request_finished_event
}

TEST_CASE("a remote ask without on_event gets the reply and on_reply", "[cluster]") {
  peer_runtime far(scripted());
  node server(far.rt, listening());
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, caller_options());
  gate replied;
  ask_options o;
  o.on_reply = [&](const reply& r) {
    if (r.ok()) replied.open();
  };
  const reply r = must_reply(caller.agent_at(*server.address(), "helper").ask("2 + 3?", o));
  CHECK(answer_of(r) == "The sum is 5.");
  CHECK(replied.wait());
}

TEST_CASE("a remote ask marked as a retry is a retry on the node that runs it", "[cluster]") {
  std::atomic<int> calls{0};
  peer_runtime far(scripted(&calls));
  node server(far.rt, listening());
  REQUIRE(answer_of(must_reply(far.rt.find_agent("helper")->ask("2 + 3?", {.request_id = "r1"}))) == "The sum is 5.");
  REQUIRE(calls == 2);
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, caller_options());
  const reply again =
      must_reply(caller.agent_at(*server.address(), "helper").ask("2 + 3?", {.request_id = "r1", .retry = true}));
  CHECK(answer_of(again) == "The sum is 5.");
  CHECK(calls == 2);  // answered from the thread, not asked again
}

TEST_CASE("a remote ask for an agent the node does not hold fails as a local one does", "[cluster]") {
  peer_runtime far(scripted());
  node server(far.rt, listening());
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, caller_options());
  ask_options o;
  o.request_id = "r9";
  const reply remote = must_reply(caller.agent_at(*server.address(), "nobody").ask("hi", o));
  const reply local = must_reply(far.rt.internals().ask("nobody", "hi", o));
  CHECK(error_type_of(remote) == error_type::not_found);
  CHECK(remote == local);
}

TEST_CASE("cancelling a remote request cancels it on the node that runs it", "[cluster]") {
  gate started, release;
  std::atomic<int> tool_runs{0};
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("finished");
    return scripted_reply::tools({call("c1", "block")});
  });
  runtime far({.provider = model, .telemetry = std::make_shared<log_sink>(false)});
  far.tools().add(make_tool("block", [&](const boost::json::object&, const tool_context&) {
    ++tool_runs;
    release.wait();
    return boost::json::value("late");
  }));
  far.spawn_agent({.id = "helper", .model = "m", .tools = {"block"}});
  node server(far, listening());
  runtime caller_rt({.provider = model});
  node caller(caller_rt, caller_options());

  ask_options o;
  o.on_event = [&](const stream_event& e) {
    if (std::holds_alternative<tool_started_event>(e)) started.open();
  };
  request r = caller.agent_at(*server.address(), "helper").ask("go", o);
  REQUIRE(started.wait());
  r.cancel("the caller changed its mind");
  const reply got = must_reply(r);
  release.open();
  CHECK(error_type_of(got) == error_type::cancelled);
  CHECK(std::get<error_info>(got.outcome).message == "the caller changed its mind");
  CHECK(tool_runs == 1);
}

namespace {

// A node in a child process (support/cluster_peer_child.cpp) whose agent
// "slow" is stuck in a tool call once asked.
struct child_node {
  pid_t pid = -1;
  std::uint16_t port = 0;

  // With no arguments, a node that listens; with {"ask", PORT}, a caller of
  // the node listening at PORT (support/cluster_peer_child.cpp).
  explicit child_node(std::vector<std::string> args = {}) {
    int out[2];
    REQUIRE(::pipe(out) == 0);
    args.insert(args.begin(), {TROUPE_CLUSTER_PEER_CHILD, secret});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid = ::fork();
    if (pid == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::execv(TROUPE_CLUSTER_PEER_CHILD, argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    char c = 0;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
    ::close(out[0]);
    if (args.size() > 2) {
      REQUIRE(line == "asked");
      return;
    }
    REQUIRE(line.rfind("port ", 0) == 0);
    port = static_cast<std::uint16_t>(std::stoi(line.substr(5)));
  }
  ~child_node() { kill(); }
  void kill() {
    if (pid < 0) return;
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
  }
  node_address address() const { return {"127.0.0.1", port}; }
};

ask_options open_on_tool_start(gate& g) {
  ask_options o;
  o.on_event = [&g](const stream_event& e) {
    if (std::holds_alternative<tool_started_event>(e)) g.open();
  };
  return o;
}

}  // namespace

TEST_CASE("a node killed mid-request ends the request with node_lost at once", "[cluster]") {
  child_node peer;
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, caller_options());
  gate started;
  request r = caller.agent_at(peer.address(), "slow").ask("go", open_on_tool_start(started));
  REQUIRE(started.wait());
  peer.kill();
  const auto killed = std::chrono::steady_clock::now();
  const reply got = must_reply(r);
  const auto took = std::chrono::steady_clock::now() - killed;
  CHECK(error_type_of(got) == error_type::node_lost);
  CHECK(std::get<error_info>(got.outcome).message.find(peer.address().to_string()) != std::string::npos);
  // Long before the request's deadline (ten minutes) or the reply grace (ten seconds).
  CHECK(took < std::chrono::seconds(3));

  // The next ask to the dead node fails too, at once, with the same type.
  CHECK(error_type_of(must_reply(caller.agent_at(peer.address(), "slow").ask("again"))) == error_type::node_lost);
}

TEST_CASE("a request goes on where it runs when its caller's node dies only if it outlives its caller", "[cluster]") {
  // Both of the caller's asks reach the blocking tool; after the caller is
  // killed the tied one is cancelled, and only then is the tool let go.
  std::mutex m;
  std::condition_variable changed;
  int started = 0;
  bool released = false;
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("finished");
    return scripted_reply::tools({call("c1", "block")});
  });
  runtime far({.provider = model, .telemetry = std::make_shared<log_sink>(false)});
  far.tools().add(make_tool("block", [&](const boost::json::object&, const tool_context& ctx) {
    std::unique_lock lock(m);
    ++started;
    changed.notify_all();
    // A cancel sets a flag and notifies nobody: looked at every few ms.
    while (!released && !ctx.is_cancelled()) changed.wait_for(lock, std::chrono::milliseconds(5));
    return boost::json::value("released");
  }));
  agent helper = far.spawn_agent({.id = "helper", .model = "m", .tools = {"block"}});
  node server(far, listening());
  child_node caller({"ask", std::to_string(server.address()->port)});
  {
    std::unique_lock lock(m);
    REQUIRE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return started == 2; }));
  }
  caller.kill();

  // How the thread's request ended: its answer, or its error; empty while it runs.
  auto end_of = [&](const std::string& thread) -> std::string {
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         std::chrono::steady_clock::now() < until; std::this_thread::yield()) {
      auto t = helper.snapshot(thread, std::chrono::seconds(5));
      if (!t || t->entries().empty()) continue;
      const entry& last = t->entries().back();
      if (const auto* e = last.payload.get_if<error_payload>())
        return "error " + std::string(e->type) + ": " + std::string(e->message);
      if (const auto* msg = last.payload.get_if<message_payload>(); msg && msg->role == "assistant")
        return "answer " + std::string(msg->content);
    }
    return {};
  };
  const std::string tied = end_of("tied");
  CHECK(tied.rfind("error cancelled", 0) == 0);
  CHECK(tied.find("the asking node is gone") != std::string::npos);
  {
    std::lock_guard lock(m);
    released = true;
    changed.notify_all();
  }
  CHECK(end_of("outliving") == "answer finished");
}

TEST_CASE("a node that stops answering ends the request with node_lost after its deadline and grace", "[cluster]") {
  child_node peer;
  runtime caller_rt({.provider = scripted()});
  node_options o = caller_options();
  o.reply_grace = std::chrono::milliseconds(300);
  node caller(caller_rt, o);
  gate started;
  ask_options ask = open_on_tool_start(started);
  ask.deadline = std::chrono::milliseconds(300);
  request r = caller.agent_at(peer.address(), "slow").ask("go", ask);
  REQUIRE(started.wait());
  // Frozen, not dead: the connection stays open, nothing more comes over it.
  ::kill(peer.pid, SIGSTOP);
  const reply got = must_reply(r);
  CHECK(error_type_of(got) == error_type::node_lost);
  CHECK(std::get<error_info>(got.outcome).message.find("deadline") != std::string::npos);
}

TEST_CASE("a node that closes ends the requests it runs for others with node_lost", "[cluster]") {
  gate started, release;
  auto model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("finished");
    return scripted_reply::tools({call("c1", "block")});
  });
  runtime far({.provider = model, .telemetry = std::make_shared<log_sink>(false)});
  far.tools().add(make_tool("block", [&](const boost::json::object&, const tool_context&) {
    release.wait();
    return boost::json::value("late");
  }));
  far.spawn_agent({.id = "helper", .model = "m", .tools = {"block"}});
  auto server = std::make_unique<node>(far, listening());
  runtime caller_rt({.provider = model});
  node caller(caller_rt, caller_options());
  request r = caller.agent_at(*server->address(), "helper").ask("go", open_on_tool_start(started));
  REQUIRE(started.wait());
  std::thread closing([&] { server->close(); });
  const reply got = must_reply(r);
  release.open();
  closing.join();
  CHECK(error_type_of(got) == error_type::node_lost);
  CHECK(std::get<error_info>(got.outcome).message == "the node that ran the request closed");
}

TEST_CASE("an ask to an address where no node listens ends with node_lost", "[cluster]") {
  std::uint16_t free_port = 0;
  {
    // A port that was free a moment ago: a node listened there and is gone.
    peer_runtime gone(scripted());
    node closed(gone.rt, listening());
    free_port = closed.address()->port;
  }
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, caller_options());
  const reply r = must_reply(caller.agent_at({"127.0.0.1", free_port}, "helper").ask("2 + 3?"));
  CHECK(error_type_of(r) == error_type::node_lost);
  CHECK(std::get<error_info>(r.outcome).message.find("cannot reach") != std::string::npos);
}

TEST_CASE("a node without the cluster's secret is refused and its asks reach no agent", "[cluster]") {
  std::atomic<int> model_calls{0};
  peer_runtime far(scripted(&model_calls));
  node server(far.rt, listening());
  runtime caller_rt({.provider = scripted()});
  node intruder(caller_rt, caller_options("a guess"));
  const reply r = must_reply(intruder.agent_at(*server.address(), "helper").ask("2 + 3?"));
  CHECK(error_type_of(r) == error_type::node_refused);
  CHECK(std::get<error_info>(r.outcome).message.find("secret") != std::string::npos);
  CHECK(model_calls == 0);
}

TEST_CASE("the gateway refuses an ask from a node that skipped the handshake", "[cluster]") {
  std::atomic<int> model_calls{0};
  peer_runtime far(scripted(&model_calls));
  node server(far.rt, listening());
  // A bare CAF node of the same build that sends an ask straight away.
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  wire::register_wire_types(cfg);
  cfg.set("logger.console", caf::atom("none"));
  cfg.set("middleman.app-identifiers", std::vector<std::string>{cluster_build_id()});
  caf::actor_system sys{cfg};
  auto gateway = sys.middleman().remote_actor("127.0.0.1", server.address()->port);
  REQUIRE(gateway);
  wire::ask_envelope ask;
  ask.key = 1;
  ask.agent_id = "helper";
  ask.question = "2 + 3?";
  ask.overrides = boost::json::object{};
  std::string type;
  {
    caf::scoped_actor self{sys};
    self->request(*gateway, patience, wire::rask_atom::value, std::string(), ask)
        .receive([&](std::string& t, std::string&, std::int64_t) { type = t; },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
  }
  CHECK(type == error_type::node_refused);
  CHECK(model_calls == 0);
}

TEST_CASE("a node of another build cannot connect, and says so", "[cluster]") {
  peer_runtime far(scripted());
  node_options other = listening();
  other.build_id = "troupe 0.0.0 wire 0 elsewhere";
  node server(far.rt, other);
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, caller_options());
  const reply r = must_reply(caller.agent_at(*server.address(), "helper").ask("2 + 3?"));
  CHECK(error_type_of(r) == error_type::incompatible_build);
  CHECK(std::get<error_info>(r.outcome).message.find("another build") != std::string::npos);
}

namespace {

// Keeps the trace ids of the spans a runtime ends.
class span_recorder final : public telemetry_sink {
 public:
  void emit(const telemetry_event& e) override {
    if (!e.span.valid()) return;
    std::lock_guard lock(mutex_);
    spans_.push_back(e.span);
  }
  bool records_spans() const override { return true; }
  std::vector<span_context> spans() const {
    std::lock_guard lock(mutex_);
    return spans_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<span_context> spans_;
};

}  // namespace

TEST_CASE("a remote ask carries the caller's trace context: the other node's spans join its trace", "[cluster]") {
  auto spans = std::make_shared<span_recorder>();
  peer_runtime far(scripted(), spans);
  node server(far.rt, listening());
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, caller_options());
  ask_options o;
  o.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  CHECK(answer_of(must_reply(caller.agent_at(*server.address(), "helper").ask("2 + 3?", o))) == "The sum is 5.");
  const auto seen = spans->spans();
  REQUIRE(!seen.empty());
  for (const auto& s : seen) {
    CHECK(s.trace_high == 0x4bf92f3577b34da6ull);
    CHECK(s.trace_low == 0xa3ce929d0e0e4736ull);
  }
}

namespace {

// A runtime whose agent "helper" mails through a "send" tool (counted in
// `sends`) that waits for approval, then answers "done: " and the result.
struct approving_runtime {
  approving_runtime() {
    rt.tools().add(make_tool("send", [this](const boost::json::object& a, const tool_context&) {
      ++sends;
      return boost::json::value("sent to " + std::string(a.at("to").as_string()));
    }));
    agent_spec spec{.id = "helper", .model = "m", .tools = {"send"}};
    spec.approvals["send"] = approval_rule{approval_mode::always, {}, "sends an email", 3'600'000, verdict::reject};
    rt.spawn_agent(spec);
  }
  std::shared_ptr<scripted_provider> model = std::make_shared<scripted_provider>([](const llm_stream& s) {
    if (s.messages.back().role == "tool") return scripted_reply::text("done: " + s.messages.back().content);
    return scripted_reply::tools({call("s1", "send", {{"to", "bob"}})});
  });
  std::atomic<int> sends{0};
  runtime rt{{.provider = model, .telemetry = std::make_shared<log_sink>(false)}};
};

}  // namespace

TEST_CASE("a remote decide continues a paused request as a local one does", "[cluster]") {
  approving_runtime far;
  std::atomic<int>& sends = far.sends;
  node server(far.rt, listening());
  runtime caller_rt({.provider = far.model});
  node caller(caller_rt, caller_options());
  remote_agent helper = caller.agent_at(*server.address(), "helper");

  ask_options in_thread;
  in_thread.thread_id = "t";
  request asked = helper.ask("mail bob", in_thread);
  const reply paused = must_reply(asked);
  REQUIRE(paused.paused());
  CHECK(asked.pending().size() == 1);
  CHECK(paused.pending.front().tool_call_id == "s1");
  CHECK(sends == 0);

  std::vector<std::size_t> kinds;
  std::mutex kinds_mutex;
  ask_options decided = in_thread;
  decided.on_event = [&](const stream_event& e) {
    std::lock_guard lock(kinds_mutex);
    kinds.push_back(e.index());
  };
  const reply done =
      must_reply(helper.decide(decision{paused.request_id, "s1", verdict::approve, "", {}, "ana", "k1"}, decided));
  CHECK(answer_of(done) == "done: sent to bob");
  CHECK(sends == 1);
  std::lock_guard lock(kinds_mutex);
  REQUIRE(!kinds.empty());
  CHECK(std::count(kinds.begin(), kinds.end(), 2) == 1);  // the send's tool_finished_event
  CHECK(kinds.back() == 3);
}

TEST_CASE("a decided pause leaves the tables of both nodes", "[cluster]") {
  approving_runtime far;
  node server(far.rt, listening());
  runtime caller_rt({.provider = far.model});
  node caller(caller_rt, caller_options());
  remote_agent helper = caller.agent_at(*server.address(), "helper");

  const reply paused = must_reply(helper.ask("mail bob", {.thread_id = "t"}));
  REQUIRE(paused.paused());
  CHECK(server.counts().requests == 1);  // kept for a cancel
  CHECK(answer_of(must_reply(helper.decide(decision{paused.request_id, "s1", verdict::approve, "", {}, "ana", "k1"},
                                           {.thread_id = "t"}))) == "done: sent to bob");
  CHECK(eventually([&] { return server.counts().requests == 0; }, std::chrono::seconds(10)));
}

TEST_CASE("an ask's deadline runs from when it is sent, also while the link still connects", "[cluster]") {
  peer_runtime far(scripted());
  node server(far.rt, listening());
  // Connections through the proxy are taken and never answered: the
  // handshake waits for its connect_timeout, longer than the ask may take.
  freezing_proxy proxy("127.0.0.1", server.address()->port);
  proxy.freeze();
  runtime caller_rt({.provider = scripted()});
  node_options o = caller_options();
  o.connect_timeout = std::chrono::minutes(10);
  o.reply_grace = std::chrono::milliseconds(100);
  node caller(caller_rt, o);
  request r = caller.agent_at({"127.0.0.1", static_cast<std::uint16_t>(proxy.port())}, "helper")
                  .ask("2 + 3?", {.deadline = std::chrono::milliseconds(200)});
  const reply got = must_reply(r);
  CHECK(error_type_of(got) == error_type::node_lost);
  CHECK(std::get<error_info>(got.outcome).message.find("deadline") != std::string::npos);
}

TEST_CASE("a link whose connection ended leaves the node's table, and the next ask there connects again", "[cluster]") {
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, caller_options());
  for (int i = 0; i < 3; ++i) {
    // A node restarted listens on another port each time.
    peer_runtime far(scripted());
    node server(far.rt, listening());
    CHECK(answer_of(must_reply(caller.agent_at(*server.address(), "helper").ask("2 + 3?"))) == "The sum is 5.");
    CHECK(caller.counts().links == 1);
    server.close();
    CHECK(eventually([&] { return caller.counts().links == 0; }, std::chrono::seconds(10)));
  }
  peer_runtime far(scripted());
  node server(far.rt, listening());
  remote_agent helper = caller.agent_at(*server.address(), "helper");
  CHECK(answer_of(must_reply(helper.ask("2 + 3?"))) == "The sum is 5.");
  server.close();
  REQUIRE(eventually([&] { return caller.counts().links == 0; }, std::chrono::seconds(10)));
  // Nothing listens there now: the new link says so.
  CHECK(error_type_of(must_reply(helper.ask("2 + 3?"))) == error_type::node_lost);
}

namespace {

node_tls certificate(const std::string& name) {
  const std::string dir = std::string(TROUPE_FIXTURES_DIR) + "/cluster-tls/";
  return node_tls{dir + name + ".pem", dir + name + ".key", dir + "ca.pem"};
}

node_options with_tls(node_options o, const std::string& name) {
  o.tls = certificate(name);
  return o;
}

}  // namespace

TEST_CASE("nodes whose certificates the cluster's CA signed talk over TLS", "[cluster]") {
  peer_runtime far(scripted());
  node server(far.rt, with_tls(listening(), "node"));
  runtime caller_rt({.provider = scripted()});
  node caller(caller_rt, with_tls(caller_options(), "node"));
  CHECK(answer_of(must_reply(caller.agent_at(*server.address(), "helper").ask("2 + 3?"))) == "The sum is 5.");
}

TEST_CASE("a node whose certificate another CA signed is refused, and its asks reach no agent", "[cluster]") {
  std::atomic<int> model_calls{0};
  peer_runtime far(scripted(&model_calls));
  node server(far.rt, with_tls(listening(), "node"));
  runtime caller_rt({.provider = scripted()});
  node stranger(caller_rt, with_tls(caller_options(), "stranger"));
  const reply r = must_reply(stranger.agent_at(*server.address(), "helper").ask("2 + 3?"));
  CHECK(error_type_of(r) == error_type::node_refused);
  CHECK(std::get<error_info>(r.outcome).message.find("TLS handshake") != std::string::npos);
  CHECK(model_calls == 0);
}

TEST_CASE("a node refuses to start with a TLS file it cannot read", "[cluster]") {
  runtime rt({.provider = scripted()});
  node_options o = with_tls(listening(), "node");
  o.tls->key = "/nonexistent/node.key";
  CHECK_THROWS_WITH(node(rt, o), Catch::Contains("/nonexistent/node.key"));
}

TEST_CASE("a node needs a secret", "[cluster]") {
  runtime rt({.provider = scripted()});
  CHECK_THROWS_AS(node(rt, node_options{}), std::invalid_argument);
}
