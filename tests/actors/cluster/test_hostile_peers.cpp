// A node holds against peers that do not know the secret: bare CAF actor
// systems in the test that know only the build id (all the middleman asks
// for) connect to a real node's port and send what they like. Whatever
// they send, the node stays up, what it runs for a trusted node goes on,
// and no agent runs for them; a process that relays the handshake between
// two real nodes is refused too.

#include "actors/cluster/detail/handshake.hpp"
#include "actors/cluster/detail/local_messages.hpp"
#include "actors/cluster/detail/wire.hpp"
#include "actors/cluster/node.hpp"
#include "actors/detail/protocols.hpp"
#include "support/runtime_harness.hpp"

#include <caf/io/all.hpp>

#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <sstream>

using namespace troupe;
using namespace troupe::testing;

namespace {

const std::string secret = "correct horse battery staple";

// A runtime with one agent "helper": asked "go" it calls the tool "block",
// which returns once released or cancelled; asked anything else it adds.
struct far_runtime {
  far_runtime()
      : model(std::make_shared<scripted_provider>([this](const llm_stream& s) {
          ++model_calls;
          if (s.messages.back().role == "tool") return scripted_reply::text("finished " + s.messages.back().content);
          if (s.messages.back().content == "go") return scripted_reply::tools({call("c1", "block")});
          return scripted_reply::tools({call("c1", "add", {{"a", 2}, {"b", 3}})});
        })),
        rt({.provider = model, .telemetry = std::make_shared<log_sink>(false)}) {
    rt.tools().add(make_tool("block", [this](const boost::json::object&, const tool_context& ctx) {
      std::unique_lock lock(m);
      ++started;
      changed.notify_all();
      // A cancel sets a flag and notifies nobody: looked at every few ms.
      while (!released && !ctx.is_cancelled()) changed.wait_for(lock, std::chrono::milliseconds(5));
      if (ctx.is_cancelled()) ++cancelled;
      return boost::json::value("released");
    }));
    rt.tools().add(make_tool("add", [](const boost::json::object& a, const tool_context&) {
      return boost::json::value(a.at("a").as_int64() + a.at("b").as_int64());
    }));
    rt.spawn_agent({.id = "helper", .model = "m", .tools = {"block", "add"}});
  }
  bool wait_started(int n) {
    std::unique_lock lock(m);
    return changed.wait_for(lock, patience, [&] { return started >= n; });
  }
  void release() {
    std::lock_guard lock(m);
    released = true;
    changed.notify_all();
  }

  std::atomic<int> model_calls{0};
  std::shared_ptr<scripted_provider> model;
  runtime rt;
  std::mutex m;
  std::condition_variable changed;
  int started = 0;
  int cancelled = 0;
  bool released = false;
};

node_options caller_options() { return node_options{.secret = secret}; }
node_options listening() { return node_options{.secret = secret, .listen_port = 0}; }

// A CAF actor system of the same build that is no troupe node: it knows
// the build id, nothing of the secret unless a test hands it over.
struct bare_system {
  bare_system() : system(configured(config)) {}
  // The actor system waits for its actors when it ends: the ones spawned here end first.
  ~bare_system() {
    for (auto& a : spawned) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  static caf::actor_system_config& configured(caf::actor_system_config& cfg) {
    cfg.load<caf::io::middleman>();
    wire::register_wire_types(cfg);
    cfg.set("logger.console", caf::atom("none"));
    cfg.set("middleman.app-identifiers", std::vector<std::string>{cluster_build_id()});
    return cfg;
  }
  caf::actor connect(std::uint16_t port) {
    auto gateway = system.middleman().remote_actor("127.0.0.1", port);
    REQUIRE(gateway);
    return *gateway;
  }
  template <class... Ts>
  caf::actor spawn(Ts&&... xs) {
    return spawned.emplace_back(system.spawn(std::forward<Ts>(xs)...));
  }
  std::uint16_t publish(const caf::actor& a) {
    auto port = system.middleman().publish(a, 0, "127.0.0.1", true);
    REQUIRE(port);
    return *port;
  }
  caf::actor_system_config config;
  caf::actor_system system;
  std::vector<caf::actor> spawned;
};

// Its hello's answer, or the error that refused it.
struct hello_answer {
  std::string gateway_nonce, proof;
  std::optional<caf::error> refused;
};

hello_answer say_hello(caf::scoped_actor& self, const caf::actor& gateway, const std::string& nonce) {
  hello_answer a;
  self->request(gateway, patience, wire::hello_atom::value, nonce)
      .receive(
          [&](std::string& n, std::string& p) {
            a.gateway_nonce = std::move(n);
            a.proof = std::move(p);
          },
          [&](caf::error& e) { a.refused = std::move(e); });
  return a;
}

// The handshake of a link, done by `self` with the secret: the token its asks name.
std::string prove(caf::scoped_actor& self, const caf::actor& gateway) {
  const std::string ours = handshake::nonce();
  const hello_answer a = say_hello(self, gateway, ours);
  REQUIRE(!a.refused);
  const std::string me = caf::to_string(self->home_system().node()), there = caf::to_string(gateway.node());
  const handshake::transcript t{me, there, ours, a.gateway_nonce};
  REQUIRE(a.proof == handshake::gateway_proof(secret, t));
  bool accepted = false;
  self->request(gateway, patience, wire::proof_atom::value, a.gateway_nonce, handshake::caller_proof(secret, t))
      .receive([&](bool ok) { accepted = ok; }, [&](caf::error& e) { FAIL(self->system().render(e)); });
  REQUIRE(accepted);
  return handshake::session_token(secret, t);
}

wire::ask_envelope question(std::uint64_t key, std::string text) {
  wire::ask_envelope e;
  e.key = key;
  e.agent_id = "helper";
  e.question = std::move(text);
  e.overrides = boost::json::object{};
  e.stream = false;
  return e;
}

// The gateway's answer to an ask: its error type, empty when it took it.
std::string ask_type(caf::scoped_actor& self, const caf::actor& gateway, const std::string& token,
                     wire::ask_envelope e) {
  std::string type = "no answer";
  self->request(gateway, patience, wire::rask_atom::value, token, std::move(e))
      .receive([&](std::string& t, std::string&, std::int64_t) { type = t; },
               [&](caf::error& e) { type = self->system().render(e); });
  return type;
}

// Waits until the gateway has handled everything `self`'s system sent it
// so far: a connection delivers in order, and a hello is answered.
void handled_so_far(caf::scoped_actor& self, const caf::actor& gateway) {
  self->request(gateway, patience, wire::hello_atom::value, handshake::nonce())
      .receive([](std::string&, std::string&) {}, [](caf::error&) {});
}

std::string answer_or_error(const reply& r) {
  if (r.ok()) return answer_of(r);
  return "error " + error_type_of(r);
}

// A trusted node's ask to `server`, as its answer (or error).
std::string quick_answer(node& caller, const node& server) {
  return answer_or_error(
      must_reply(caller.agent_at(*server.address(), "helper").ask("2 + 3?", {.thread_id = "quick"})));
}

// The request `far` holds running ends as it would have: released, not cancelled.
void ends_unharmed(far_runtime& far, const request& running) {
  far.release();
  CHECK(answer_or_error(must_reply(running)) == "finished released");
  CHECK(far.cancelled == 0);
}

}  // namespace

TEST_CASE("an anonymous hello or proof leaves the node standing", "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  bare_system stranger;
  caf::actor gateway = stranger.connect(server.address()->port);
  caf::anon_send(gateway, wire::hello_atom::value, handshake::nonce());
  caf::anon_send(gateway, wire::proof_atom::value, handshake::nonce(), std::string("a guess"));
  {
    caf::scoped_actor self{stranger.system};
    handled_so_far(self, gateway);
  }
  runtime caller_rt({.provider = far.model});
  node caller(caller_rt, caller_options());
  CHECK(quick_answer(caller, server) == "finished 5");
}

TEST_CASE("a peer without the secret cannot close a node or end what it runs for a trusted node",
          "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  runtime caller_rt({.provider = far.model});
  node caller(caller_rt, caller_options());
  request running =
      caller.agent_at(*server.address(), "helper").ask("go", {.thread_id = "running", .outlives_caller = true});
  REQUIRE(far.wait_started(1));

  bare_system stranger;
  caf::actor gateway = stranger.connect(server.address()->port);
  caf::scoped_actor self{stranger.system};
  SECTION("with the atoms a node's own actors once used") {
    self->send(gateway, shutdown_atom::value);
    self->send(gateway, done_atom::value, caf::actor_cast<caf::actor_addr>(self), std::uint64_t{1});
    self->send(gateway, done_atom::value, caf::actor_addr(), std::uint64_t{1});
  }
  SECTION("with the local messages of a node, which cross no network") {
    self->send(gateway, local::gateway_close{});
    self->send(gateway, local::gateway_stop{});
    self->send(gateway, local::caller_gone{});
    self->send(gateway, local::request_ended{});
  }
  handled_so_far(self, gateway);

  // The node still takes a trusted node's asks, and the running one ends as it would.
  CHECK(quick_answer(caller, server) == "finished 5");
  ends_unharmed(far, running);
}

TEST_CASE("an ask reaches an agent only from the actor that proved itself, with its token", "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  bare_system peer;
  caf::actor gateway = peer.connect(server.address()->port);
  caf::scoped_actor prover{peer.system};
  const std::string token = prove(prover, gateway);

  SECTION("an actor that did not say hello") {
    caf::scoped_actor other{peer.system};
    CHECK(ask_type(other, gateway, token, question(1, "2 + 3?")) == error_type::node_refused);
    CHECK(ask_type(other, gateway, "", question(2, "2 + 3?")) == error_type::node_refused);
  }
  SECTION("an actor that said hello and did not prove") {
    caf::scoped_actor other{peer.system};
    REQUIRE(!say_hello(other, gateway, handshake::nonce()).refused);
    CHECK(ask_type(other, gateway, token, question(1, "2 + 3?")) == error_type::node_refused);
  }
  SECTION("the prover with another token") {
    CHECK(ask_type(prover, gateway, std::string(token.size(), '0'), question(1, "2 + 3?")) == error_type::node_refused);
  }
  CHECK(far.model_calls == 0);
  // And with its token, the prover's ask runs.
  CHECK(ask_type(prover, gateway, token, question(3, "2 + 3?")).empty());
}

TEST_CASE("once the actor that proved is gone its token is worth nothing", "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  bare_system peer;
  caf::actor gateway = peer.connect(server.address()->port);
  std::string token;
  {
    caf::scoped_actor prover{peer.system};
    token = prove(prover, gateway);
  }
  // A new actor of the same node, on the same connection, with the old token.
  caf::scoped_actor next{peer.system};
  CHECK(ask_type(next, gateway, token, question(1, "2 + 3?")) == error_type::node_refused);
  CHECK(far.model_calls == 0);
  // It proves itself, and then it is trusted.
  const std::string fresh = prove(next, gateway);
  CHECK(fresh != token);
  CHECK(ask_type(next, gateway, fresh, question(2, "2 + 3?")).empty());
}

TEST_CASE("a node keeps at most four handshakes of one node open", "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  bare_system stranger;
  caf::actor gateway = stranger.connect(server.address()->port);
  caf::scoped_actor self{stranger.system};
  std::vector<hello_answer> open;
  for (int i = 0; i < 4; ++i) open.push_back(say_hello(self, gateway, handshake::nonce()));
  for (const auto& a : open) CHECK(!a.refused);
  // The fifth is refused, from any actor of that node.
  CHECK(say_hello(self, gateway, handshake::nonce()).refused);
  caf::scoped_actor other{stranger.system};
  CHECK(say_hello(other, gateway, handshake::nonce()).refused);
  // Another node's handshake goes on as before.
  runtime caller_rt({.provider = far.model});
  node caller(caller_rt, caller_options());
  CHECK(quick_answer(caller, server) == "finished 5");
  // A wrong proof closes the handshake it answers: the node may open one again.
  self->request(gateway, patience, wire::proof_atom::value, open.front().gateway_nonce, std::string("a guess"))
      .receive([](bool accepted) { CHECK(!accepted); }, [&](caf::error& e) { FAIL(stranger.system.render(e)); });
  CHECK(!say_hello(self, gateway, handshake::nonce()).refused);
}

TEST_CASE("a hello without a proper nonce is refused", "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  bare_system stranger;
  caf::actor gateway = stranger.connect(server.address()->port);
  caf::scoped_actor self{stranger.system};
  CHECK(say_hello(self, gateway, "short").refused);
  CHECK(say_hello(self, gateway, std::string(63, 'a') + "\n").refused);
}

namespace {

// Passes every message it gets on to `target`, as from its sender: what
// reaches the target looks as if it came from the relayed node itself.
caf::behavior relay(caf::event_based_actor* self, caf::actor target) {
  self->set_default_handler([target](caf::scheduled_actor* s, caf::message_view& x) -> caf::result<caf::message> {
    auto promise = s->make_response_promise();
    promise.delegate(target, x.move_content_to_message());
    return promise;
  });
  return {[](int) {}};
}

}  // namespace

TEST_CASE("a handshake relayed between two real nodes is refused and the relayed ask runs no agent",
          "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  bare_system middle;
  caf::actor gateway = middle.connect(server.address()->port);
  const std::uint16_t relay_port = middle.publish(middle.spawn(relay, gateway));

  runtime caller_rt({.provider = far.model});
  node caller(caller_rt, caller_options());
  const reply r = must_reply(caller.agent_at({"127.0.0.1", relay_port}, "helper").ask("2 + 3?"));
  CHECK(error_type_of(r) == error_type::node_refused);
  CHECK(far.model_calls == 0);
  // The real node itself is still asked as before.
  CHECK(quick_answer(caller, server) == "finished 5");
}

TEST_CASE("an exit, down or error message from another node does not stop a gateway", "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  runtime caller_rt({.provider = far.model});
  node caller(caller_rt, caller_options());
  request running = caller.agent_at(*server.address(), "helper").ask("go", {.thread_id = "running"});
  REQUIRE(far.wait_started(1));

  bare_system stranger;
  caf::actor gateway = stranger.connect(server.address()->port);
  caf::scoped_actor self{stranger.system};
  SECTION("exit_reason::kill") { caf::anon_send_exit(gateway, caf::exit_reason::kill); }
  SECTION("another exit reason, with a sender") { self->send_exit(gateway, caf::exit_reason::user_shutdown); }
  SECTION("a down message") { caf::anon_send(gateway, caf::down_msg{self.address(), caf::exit_reason::kill}); }
  SECTION("an error") { caf::anon_send(gateway, caf::make_error(caf::sec::runtime_error, "stop")); }
  handled_so_far(self, gateway);

  CHECK(quick_answer(caller, server) == "finished 5");
  ends_unharmed(far, running);
}

namespace {

// A "gateway" that answers a link's hello by telling the link to stop, in
// every way a peer could, then with a proof that is no proof.
caf::behavior hostile_gateway(caf::event_based_actor* self) {
  self->set_default_handler(caf::drop);
  return {[self](wire::hello_atom, const std::string&) -> std::tuple<std::string, std::string> {
    auto link = caf::actor_cast<caf::actor>(self->current_sender());
    self->send_exit(link, caf::exit_reason::user_shutdown);
    self->send(link, shutdown_atom::value);
    self->send(link, timeout_atom::value, std::uint64_t{1});
    self->send(link, caf::down_msg{self->address(), caf::exit_reason::kill});
    self->send(link, local::link_close{});
    self->send_exit(link, caf::exit_reason::kill);
    return {handshake::nonce(), std::string(64, '0')};
  }};
}

}  // namespace

TEST_CASE("a link survives what the node it connects to sends it", "[cluster][hostile]") {
  bare_system stranger;
  const std::uint16_t port = stranger.publish(stranger.spawn(hostile_gateway));
  runtime caller_rt({.provider = std::make_shared<scripted_provider>(
                         [](const llm_stream&) { return scripted_reply::text("unused"); })});
  node caller(caller_rt, caller_options());
  remote_agent there = caller.agent_at({"127.0.0.1", port}, "helper");
  const reply first = must_reply(there.ask("2 + 3?"));
  INFO(std::get<error_info>(first.outcome).message);
  CHECK(error_type_of(first) == error_type::node_refused);
  // The link is still there: the next ask ends too, the same way.
  const reply second = must_reply(there.ask("2 + 3?"));
  INFO(std::get<error_info>(second.outcome).message);
  CHECK(error_type_of(second) == error_type::node_refused);
}

namespace {

// A "gateway" that only notes which node said hello, and refuses it.
caf::behavior noting_gateway(caf::event_based_actor* self, std::shared_ptr<std::promise<caf::node_id>> seen) {
  self->set_default_handler(caf::drop);
  return {[self, seen](wire::hello_atom, const std::string&) mutable -> caf::result<std::string, std::string> {
    if (seen) {
      seen->set_value(self->current_sender()->node());
      seen.reset();
    }
    return caf::make_error(caf::sec::runtime_error, "no");
  }};
}

// Handles, in `b`'s system, for the actors `first`..`last` of `node`, as
// a peer makes them up: actor ids are small counters, and CAF 0.17 takes
// a sender or an address from another node on that node's word.
std::vector<caf::actor> made_up(bare_system& b, const caf::node_id& node, caf::actor_id first, caf::actor_id last) {
  auto broker = b.system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  std::promise<std::vector<caf::actor>> made;
  b.system.middleman().run_later([&] {
    auto* basp = caf::actor_cast<caf::io::basp_broker*>(broker);
    // Not inside a message from another node: no last hop to learn a route from.
    basp->set_last_hop(nullptr);
    auto& proxies = basp->instance.proxies();
    std::vector<caf::actor> out;
    for (auto id = first; id <= last; ++id)
      if (auto p = proxies.get_or_put(node, id)) out.push_back(caf::actor_cast<caf::actor>(p));
    made.set_value(std::move(out));
  });
  return made.get_future().get();
}

}  // namespace

TEST_CASE("a peer that names a trusted node's link, as sender or in a down message, ends none of its requests",
          "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  runtime caller_rt({.provider = far.model});
  node caller(caller_rt, caller_options());
  request running = caller.agent_at(*server.address(), "helper").ask("go", {.thread_id = "running"});
  REQUIRE(far.wait_started(1));

  // The caller's node id, from a hello the caller sends the peer.
  bare_system stranger;
  auto seen = std::make_shared<std::promise<caf::node_id>>();
  auto caller_node = seen->get_future();
  const std::uint16_t port = stranger.publish(stranger.spawn(noting_gateway, seen));
  CHECK(!must_reply(caller.agent_at({"127.0.0.1", port}, "helper").ask("hi")).ok());
  REQUIRE(caller_node.wait_for(patience) == std::future_status::ready);
  caf::actor gateway = stranger.connect(server.address()->port);
  // Among these is the caller's link to the server.
  const std::vector<caf::actor> links = made_up(stranger, caller_node.get(), 1, 64);
  REQUIRE(!links.empty());
  caf::scoped_actor self{stranger.system};

  SECTION("down messages that name them") {
    for (const auto& l : links) {
      caf::anon_send(gateway, caf::down_msg{l.address(), caf::exit_reason::kill});
      caf::send_as(l, gateway, caf::down_msg{l.address(), caf::exit_reason::kill});
    }
  }
  SECTION("asks and cancels sent as them") {
    for (const auto& l : links) {
      caf::send_as(l, gateway, wire::rask_atom::value, question(1, "2 + 3?"));
      caf::send_as(l, gateway, wire::rask_atom::value, std::string(), question(1, "2 + 3?"));
      caf::send_as(l, gateway, wire::rcancel_atom::value, std::uint64_t{1}, std::string("forged"));
      caf::send_as(l, gateway, wire::rcancel_atom::value, std::string(), std::uint64_t{1}, std::string("forged"));
    }
  }
  handled_so_far(self, gateway);
  ends_unharmed(far, running);
}

namespace {

// Ends this process's TCP connections to `port` on 127.0.0.1 as a network
// would: their sockets are shut down (not closed: CAF still owns the fds).
// Returns how many there were.
int cut_connections_to(std::uint16_t port) {
  std::set<std::string> inodes;
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // the header
  char wanted[8];
  std::snprintf(wanted, sizeof wanted, ":%04X", static_cast<unsigned>(port));
  while (std::getline(tcp, line)) {
    std::istringstream in(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    in >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (state == "01" && remote.size() > 5 && remote.substr(remote.size() - 5) == wanted) inodes.insert(inode);
  }
  int cut = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (ec || target.rfind("socket:[", 0) != 0) continue;
    if (inodes.count(target.substr(8, target.size() - 9)) &&
        ::shutdown(std::stoi(fd.path().filename().string()), SHUT_RDWR) == 0)
      ++cut;
  }
  return cut;
}

}  // namespace

TEST_CASE("a connection that drops and comes back proves itself again", "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  bare_system peer;
  caf::actor gateway = peer.connect(server.address()->port);
  caf::scoped_actor prover{peer.system};
  const std::string token = prove(prover, gateway);
  REQUIRE(ask_type(prover, gateway, token, question(1, "2 + 3?")).empty());
  REQUIRE(eventually([&] { return far.model_calls == 2; }));  // the tool call, then the answer

  // The peer's connection (the only one to the node's port here) drops.
  bool lost = false;
  caf::actor_cast<caf::abstract_actor*>(gateway)->attach_functor([&] { lost = true; });
  REQUIRE(cut_connections_to(server.address()->port) == 1);
  REQUIRE(eventually([&] { return lost; }));

  // Connected again, the same actor of the same node with its old token is
  // refused (once the node has seen the drop: asked meanwhile for an agent
  // it does not hold, which runs nothing).
  caf::actor again = peer.connect(server.address()->port);
  wire::ask_envelope nobody = question(2, "2 + 3?");
  nobody.agent_id = "nobody";
  CHECK(eventually([&] { return ask_type(prover, again, token, nobody) == error_type::node_refused; }));
  CHECK(ask_type(prover, again, token, question(3, "2 + 3?")) == error_type::node_refused);
  CHECK(far.model_calls == 2);
  const std::string fresh = prove(prover, again);
  CHECK(ask_type(prover, again, fresh, question(4, "2 + 3?")).empty());
}

TEST_CASE("a node keeps at most 1,024 handshakes open in all", "[cluster][hostile]") {
  far_runtime far;
  node server(far.rt, listening());
  bare_system stranger;
  caf::actor gateway = stranger.connect(server.address()->port);
  // Four hellos from an actor of each of 256 made-up nodes (a routed
  // message names any source node; the answers go nowhere).
  caf::node_id::default_data::host_id_type host;
  host.fill(0xab);
  for (std::uint32_t pid = 1; pid <= 256; ++pid) {
    const auto made = made_up(stranger, caf::make_node_id(pid, host), 1, 1);
    REQUIRE(made.size() == 1);
    for (int i = 0; i < 4; ++i) caf::send_as(made.front(), gateway, wire::hello_atom::value, handshake::nonce());
  }
  // A hello of a node that opened none is refused now.
  caf::scoped_actor self{stranger.system};
  CHECK(say_hello(self, gateway, handshake::nonce()).refused);
  runtime caller_rt({.provider = far.model});
  node caller(caller_rt, caller_options());
  CHECK(!must_reply(caller.agent_at(*server.address(), "helper").ask("2 + 3?")).ok());
  CHECK(far.model_calls == 0);
}
