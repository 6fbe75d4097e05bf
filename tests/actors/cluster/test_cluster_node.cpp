// Three clustered runtimes (cluster_node) in child processes on loopback,
// sharing a throwaway PostgreSQL: conversations asked through every node
// reach the node holding their agent; one node killed with SIGKILL mid-load
// and every conversation goes on through the survivors, with nothing lost
// or committed twice, the dead node fenced off its threads and its shards
// shared between the survivors. A node that leaves lets the requests it runs
// finish, while asks during its drain go to the next holder; every node
// restarted in turn under load, and no request fails. Then nodes in this
// process for the node's API: decisions and snapshots through any node,
// running, prepare and wrap_threads. Skipped, visibly, without a PostgreSQL
// server.

#include "actors/cluster/cluster_node.hpp"
#include "runtime/clock.hpp"
#include "runtime/cluster/cluster_membership.hpp"
#include "runtime/cluster/cluster_status.hpp"
#include "runtime/cluster/shard_of.hpp"
#include "runtime/store/postgres/postgres_store.hpp"
#include "serve/support/gate_provider.hpp"
#include "support/agent_stats.hpp"
#include "support/cluster_nodes.hpp"
#include "support/memory_backed_store.hpp"
#include "support/runtime_harness.hpp"
#include "support/store_backends.hpp"
#include "support/store_cases.hpp"
#include "support/watched_store.hpp"

#include <libpq-fe.h>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <deque>
#include <map>
#include <set>
#include <sstream>
#include <thread>

using namespace troupe;
using namespace troupe::testing;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t shards = 8;  // support/cluster_nodes.hpp's count
constexpr int agents = 12;           // support/cluster_join_child.cpp's
const char* const secret = "cluster-node-test-secret";

// A node process: its stdin takes asks, its stdout says what came of them.
struct child {
  std::string id;
  pid_t pid = -1;
  int in = -1, out = -1;
  std::string buffer;

  void send(const std::string& line) const {
    const std::string l = line + "\n";
    REQUIRE(::write(in, l.data(), l.size()) == static_cast<ssize_t>(l.size()));
  }
  // The next line within `timeout`, or none (the child ended, or was silent).
  std::optional<std::string> line(std::chrono::milliseconds timeout = 20s) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto nl = buffer.find('\n'); nl != std::string::npos) {
        std::string l = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        return l;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left <= 0ms) return std::nullopt;
      pollfd p{out, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char chunk[4096];
      const ssize_t n = ::read(out, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }
  void kill() {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(in);
    ::close(out);
  }
  void end() {
    ::close(in);  // the node leaves its loop and closes
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(out);
  }
};

// A node process started; it says "ready NODE_ID" once it joined.
child spawn(const std::string& conninfo, const std::string& node_id) {
  int to[2], from[2];
  // Close-on-exec: the other children must not hold this one's stdin open.
  REQUIRE(::pipe2(to, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(from, O_CLOEXEC) == 0);
  child c;
  c.id = node_id;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(to[0], STDIN_FILENO);
    ::dup2(from[1], STDOUT_FILENO);
    ::close(to[1]);
    ::close(from[0]);
    ::execl(TROUPE_CLUSTER_JOIN_CHILD, TROUPE_CLUSTER_JOIN_CHILD, conninfo.c_str(), node_id.c_str(), secret,
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  c.in = to[1];
  c.out = from[0];
  return c;
}

child start(const std::string& conninfo, const std::string& node_id) {
  child c = spawn(conninfo, node_id);
  const auto ready = c.line(30s);
  REQUIRE(ready);
  REQUIRE(*ready == "ready " + node_id);
  return c;
}

// The shards each live node holds, by node id, and whether every shard is held.
std::map<std::string, std::uint32_t> shares(const std::string& conninfo, bool* all_held = nullptr) {
  const cluster_status s = read_cluster_status(conninfo);
  std::map<std::string, std::uint32_t> out;
  for (const node_info& n : s.nodes)
    if (n.state == node_state::active) out[n.id] = n.shards_held;
  if (all_held) {
    *all_held = true;
    for (const shard_info& sh : s.shard_table)
      if (sh.holder.empty() || sh.lease_left <= 0ms) *all_held = false;
  }
  return out;
}

bool shares_are(const std::string& conninfo, std::multiset<std::uint32_t> expected) {
  bool all = false;
  std::multiset<std::uint32_t> got;
  for (const auto& [id, n] : shares(conninfo, &all)) got.insert(n);
  return all && got == expected;
}

struct outcome {
  bool ok = false;
  std::string text;  // the answer, or "TYPE MESSAGE"
};

// Reads replies from `c` until every one of `ids` came; fails after a
// reply's silence of 20 s.
void collect(child& c, std::set<std::string> ids, std::map<std::string, outcome>& out) {
  while (!ids.empty()) {
    const auto l = c.line();
    REQUIRE(l);
    std::istringstream in(*l);
    std::string word, id, status;
    in >> word >> id >> status;
    std::string rest;
    std::getline(in >> std::ws, rest);
    REQUIRE(word == "reply");
    out[id] = {status == "ok", rest};
    ids.erase(id);
  }
}

std::string agent_of(int conversation) { return "agent-" + std::to_string(conversation % agents); }
std::string thread_of(int conversation) { return "conv-" + std::to_string(conversation); }
std::string request_of(int conversation, int round) {
  return "r-" + std::to_string(conversation) + "-" + std::to_string(round);
}

// Asks round `round` of every conversation, conversation i through node
// (i + round) % nodes.size(), and collects the replies of the nodes alive.
void ask_round(std::vector<child*> nodes, int conversations, int round, std::map<std::string, outcome>& out) {
  std::vector<std::set<std::string>> sent(nodes.size());
  for (int i = 0; i < conversations; ++i) {
    const std::size_t via = static_cast<std::size_t>(i + round) % nodes.size();
    nodes[via]->send("ask " + agent_of(i) + " " + thread_of(i) + " " + request_of(i, round) + " question " +
                     std::to_string(i) + "." + std::to_string(round));
    sent[via].insert(request_of(i, round));
  }
  for (std::size_t n = 0; n < nodes.size(); ++n) collect(*nodes[n], sent[n], out);
}

// The user entries of `thread` by request id, and its assistant answers.
struct thread_reading {
  std::map<std::string, int> questions;
  std::map<std::string, std::vector<std::string>> answers;
  std::vector<std::string> order;  // request ids by their first entry
};

thread_reading read_thread(postgres_store& store, const std::string& id) {
  thread_reading r;
  auto t = store.load(id);
  REQUIRE(t.has_value());
  for (const entry& e : t->entries()) {
    const std::string request(e.refs.request_id());
    const auto* m = e.payload.get_if<message_payload>();
    if (!m) continue;
    if (r.order.empty() || r.order.back() != request) r.order.push_back(request);
    if (std::string_view(m->role) == "user") ++r.questions[request];
    if (std::string_view(m->role) == "assistant") r.answers[request].push_back(std::string(m->content));
  }
  return r;
}

}  // namespace

TEST_CASE("three clustered runtimes: one killed with SIGKILL, every conversation goes on through the survivors") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  // Ids sort a < b < c: the fair shares are 3, 3, 2.
  child a = start(db.uri(), "a-node"), b = start(db.uri(), "b-node"), c = start(db.uri(), "c-node");
  REQUIRE(eventually([&] { return shares_are(db.uri(), {3, 3, 2}); }, 15s));

  // The agents spread over the shards, so every node holds some.
  std::set<std::uint32_t> used;
  for (int i = 0; i < agents; ++i) used.insert(shard_of(agent_of(i), shards));
  REQUIRE(used.size() >= 5);

  constexpr int conversations = 24;
  std::map<std::string, outcome> replies;
  for (int round = 0; round < 3; ++round) ask_round({&a, &b, &c}, conversations, round, replies);
  for (const auto& [id, o] : replies) {
    INFO(id << ": " << o.text);
    CHECK(o.ok);
  }

  // An id no node was given is no agent anywhere: refused at once, not
  // looked for until the route's time is up.
  a.send("ask nobody conv-x r-x question");
  std::map<std::string, outcome> unknown;
  collect(a, {"r-x"}, unknown);
  CHECK(unknown["r-x"].text.rfind("not_found", 0) == 0);

  // The victim's grants, to show they are fenced once its shards moved.
  const cluster_status before = read_cluster_status(db.uri());
  std::vector<shard_info> victims_shards;
  for (const shard_info& s : before.shard_table)
    if (s.holder == c.id) victims_shards.push_back(s);
  REQUIRE(!victims_shards.empty());

  // Round 3 is asked through all three, and the victim killed while it runs.
  std::vector<std::set<std::string>> sent(3);
  std::vector<child*> nodes{&a, &b, &c};
  for (int i = 0; i < conversations; ++i) {
    const std::size_t via = static_cast<std::size_t>(i + 3) % 3;
    nodes[via]->send("ask " + agent_of(i) + " " + thread_of(i) + " " + request_of(i, 3) + " question " +
                     std::to_string(i) + ".3");
    sent[via].insert(request_of(i, 3));
  }
  const auto killed_at = std::chrono::steady_clock::now();
  c.kill();
  // Asks through the survivors to the victim's agents wait for their shards
  // to move, and are answered there, also those the victim had begun: the
  // retry goes on from where the thread stands, or is answered as the
  // request ended, and nothing of it is committed twice.
  std::map<std::string, outcome> round3;
  collect(a, sent[0], round3);
  collect(b, sent[1], round3);
  // Asked after the kill, an agent of the victim's: the first attempt goes
  // to the dead node (or finds its shard not yet moved), and the ask is
  // located again until a survivor holds the shard, which answers it.
  std::string moved_agent;
  for (int i = 0; i < agents && moved_agent.empty(); ++i)
    for (const shard_info& held : victims_shards)
      if (shard_of(agent_of(i), shards) == held.shard) moved_agent = agent_of(i);
  REQUIRE(!moved_agent.empty());
  a.send("ask " + moved_agent + " after-kill r-after-kill question after the kill");
  collect(a, {"r-after-kill"}, round3);
  CHECK(round3["r-after-kill"].ok);
  for (const auto& [id, o] : round3) {
    INFO(id << ": " << o.text);
    CHECK(o.ok);
  }
  REQUIRE(eventually([&] { return shares_are(db.uri(), {4, 4}); }, 15s));
  const auto moved_after = std::chrono::steady_clock::now() - killed_at;
  CHECK(moved_after < 400ms + 30 * 50ms + 2s);  // dead_after, a few rounds, the statements
  {
    const auto s = shares(db.uri());
    CHECK(s.count("a-node") == 1);
    CHECK(s.count("b-node") == 1);
    CHECK(s.count("c-node") == 0);
  }

  // Every conversation goes on, through either survivor.
  std::map<std::string, outcome> after;
  for (int round = 4; round < 6; ++round) ask_round({&a, &b}, conversations, round, after);
  for (const auto& [id, o] : after) {
    INFO(id << ": " << o.text);
    CHECK(o.ok);
  }

  // Each thread: every question at most once (exactly once when answered,
  // with one answer), in the order asked; nothing answered is missing.
  postgres_store& store = *db.store;
  for (int i = 0; i < conversations; ++i) {
    INFO("conversation " << i);
    const thread_reading t = read_thread(store, thread_of(i));
    for (const auto& [request, n] : t.questions) CHECK(n == 1);
    for (int round = 0; round < 6; ++round) {
      const std::string id = request_of(i, round);
      const auto answered = round == 3 ? round3.find(id) : (round < 3 ? replies.find(id) : after.find(id));
      const bool by_survivor = answered != (round == 3 ? round3.end() : (round < 3 ? replies.end() : after.end()));
      if (by_survivor && answered->second.ok) {
        REQUIRE(t.questions.count(id) == 1);
        REQUIRE(t.answers.count(id) == 1);
        CHECK(t.answers.at(id).size() == 1);
        CHECK(t.answers.at(id).front() == answered->second.text);
      }
    }
    std::vector<std::string> asked;
    for (const std::string& id : t.order) asked.push_back(id);
    std::vector<std::string> sorted = asked;
    std::sort(sorted.begin(), sorted.end(), [](const std::string& x, const std::string& y) {
      return std::stoi(x.substr(x.rfind('-') + 1)) < std::stoi(y.substr(y.rfind('-') + 1));
    });
    CHECK(asked == sorted);
    CHECK(std::set<std::string>(asked.begin(), asked.end()).size() == asked.size());
  }

  {
    const thread_reading t = read_thread(store, "after-kill");
    CHECK(t.questions == std::map<std::string, int>{{"r-after-kill", 1}});
    CHECK(t.answers ==
          std::map<std::string, std::vector<std::string>>{{"r-after-kill", {round3["r-after-kill"].text}}});
  }

  // Fencing: under its old grants the dead node can take no thread lease
  // again, and a thread lease it held commits nothing.
  for (const shard_info& s : victims_shards) {
    for (int i = 0; i < conversations; ++i) {
      if (shard_of(agent_of(i), shards) != s.shard) continue;
      const auto stale =
          store.acquire_lease_in_shard(thread_of(i), c.id, shard_lease{s.shard, c.id, s.epoch}, wall_clock_ms(), 1h);
      REQUIRE(!stale);
      CHECK(stale.error().type == "fenced");
    }
  }
  a.end();
  b.end();
}

TEST_CASE("a node killed after it committed a question: the caller's retry finishes the request there, asked once") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  child a = start(db.uri(), "a-node"), c = start(db.uri(), "c-node");
  REQUIRE(eventually([&] { return shares_are(db.uri(), {4, 4}); }, 15s));
  const cluster_status held = read_cluster_status(db.uri());
  std::string victims_agent;
  for (int i = 0; i < agents && victims_agent.empty(); ++i)
    for (const shard_info& s : held.shard_table)
      if (s.holder == c.id && s.shard == shard_of(agent_of(i), shards)) victims_agent = agent_of(i);
  REQUIRE(!victims_agent.empty());

  // Asked through a, run on c, whose model call never ends: the question is
  // committed, the answer is not, when c dies.
  const std::string question = "stall on c-node: what now?";
  a.send("ask " + victims_agent + " cut-off r-cut-off " + question);
  postgres_store& store = *db.store;
  REQUIRE(eventually(
      [&] {
        auto t = store.load("cut-off");
        return t && t->size() == 1;
      },
      15s));
  c.kill();

  // a takes c's shards, and the retry goes on with the request from its
  // question, which is not committed again.
  std::map<std::string, outcome> replies;
  collect(a, {"r-cut-off"}, replies);
  INFO(replies["r-cut-off"].text);
  REQUIRE(replies["r-cut-off"].ok);
  CHECK(replies["r-cut-off"].text == "answer to: " + question + " (by a-node)");
  const thread_reading t = read_thread(store, "cut-off");
  CHECK(t.questions == std::map<std::string, int>{{"r-cut-off", 1}});
  CHECK(t.answers ==
        std::map<std::string, std::vector<std::string>>{{"r-cut-off", {"answer to: " + question + " (by a-node)"}}});
  a.end();
}

// --- The node's API, on nodes in this process --------------------------------

namespace {

// Every agent sends a mail (a tool that waits for approval), then says what
// the tool answered; asked "ask AGENT: QUESTION", it asks AGENT instead
// (through its tool ask_AGENT).
std::shared_ptr<scripted_provider> mailing_model() {
  return std::make_shared<scripted_provider>([](const llm_stream& s) {
    const llm_message& last = s.messages.back();
    if (last.role == "tool") return scripted_reply::text("done: " + last.content);
    const std::string asked(last.content);
    if (asked.rfind("ask ", 0) == 0) {
      const auto colon = asked.find(": ");
      return scripted_reply::tools(
          {call("c1", "ask_" + asked.substr(4, colon - 4), {{"question", asked.substr(colon + 2)}})});
    }
    return scripted_reply::tools({call("s1", "send", {{"to", "bob"}})});
  });
}

// A node in this process with agent-0 … agent-11, whose "send" tool (added
// by `prepare`, counted in `sends`) waits for approval, and whose tools
// ask_agent-0 … ask_agent-11 (cluster_node::add_agent_tool) ask each other.
cluster_node_options in_process(const std::string& conninfo, const std::string& id, std::atomic<int>& sends) {
  cluster_node_options o;
  o.cluster = test_node(conninfo, id);
  o.transport.secret = secret;
  o.runtime.provider = mailing_model();
  o.runtime.telemetry = std::make_shared<log_sink>(false);
  o.prepare = [&sends](cluster_node& n) {
    n.local().tools().add(counted_send(sends));
    for (int i = 0; i < agents; ++i) n.add_agent_tool("ask_" + agent_of(i), agent_of(i), "Asks " + agent_of(i) + ".");
  };
  std::vector<std::string> tools{"send"};
  for (int i = 0; i < agents; ++i) tools.push_back("ask_" + agent_of(i));
  for (int i = 0; i < agents; ++i) {
    agent_spec spec{.id = agent_of(i), .model = "m", .tools = tools};
    spec.approvals["send"] = approval_rule{approval_mode::always, {}, "sends a mail", 3'600'000, verdict::reject};
    o.agents.push_back(std::move(spec));
  }
  return o;
}

// An agent whose shard `holder` holds (and runs), once every shard is held.
std::string agent_held_by(const std::string& conninfo, cluster_node& holder, std::multiset<std::uint32_t> shares) {
  REQUIRE(eventually([&] { return shares_are(conninfo, shares); }, 15s));
  for (const shard_lease& l : holder.membership().shards_held())
    for (int i = 0; i < agents; ++i)
      if (shard_of(agent_of(i), shards) == l.shard) {
        REQUIRE(eventually([&] { return holder.local().find_agent(agent_of(i)).has_value(); }, 10s));
        return agent_of(i);
      }
  FAIL("no agent in the shards of " << holder.id());
  return {};
}

// Nodes a and b, every shard held, and an agent b runs.
struct two_nodes {
  explicit two_nodes(const std::string& conninfo, std::chrono::milliseconds route_timeout = 30s)
      : a(with_route_timeout(in_process(conninfo, "a-node", sends_a), route_timeout)),
        b(in_process(conninfo, "b-node", sends_b)),
        far(agent_held_by(conninfo, b, {4, 4})) {}

  static cluster_node_options with_route_timeout(cluster_node_options o, std::chrono::milliseconds t) {
    o.route_timeout = t;
    return o;
  }

  std::atomic<int> sends_a{0}, sends_b{0};
  cluster_node a, b;
  std::string far;
};

}  // namespace

TEST_CASE("a decision through a node that does not hold the agent continues its paused request where it runs") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  two_nodes n(db.uri());
  auto& [sends_a, sends_b, a, b, far] = n;

  const reply paused = must_reply(a.agent(far).ask("mail bob", {.thread_id = "t"}));
  REQUIRE(paused.paused());
  REQUIRE(paused.pending.size() == 1);
  CHECK(sends_b == 0);
  const reply done = must_reply(
      a.agent(far).decide(decision{paused.request_id, "s1", verdict::approve, "", {}, "ana", ""}, {.thread_id = "t"}));
  CHECK(answer_of(done) == "done: sent to bob");
  CHECK(sends_b == 1);
  CHECK(sends_a == 0);
  CHECK(a.route_counters().remote_asks == 2);
}

TEST_CASE("a decision whose holder died is located again and taken where the paused request moved") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  std::atomic<int> sends_a{0}, sends_b{0};
  cluster_node a(in_process(db.uri(), "a-node", sends_a));
  auto b = std::make_unique<cluster_node>(in_process(db.uri(), "b-node", sends_b));
  const std::string far = agent_held_by(db.uri(), *b, {4, 4});
  // Asked where it runs: a node that closes cancels the requests it runs
  // for other nodes, paused ones too.
  const reply paused = must_reply(b->agent(far).ask("mail bob", {.thread_id = "t"}));
  REQUIRE(paused.paused());

  // Gone as a killed process goes, its shards still its own until it is
  // found dead: the decision goes there first, meets node_lost, and is sent
  // again (its thread holds its request's entries: that does not stop a
  // decision) once the survivor holds the shard and has loaded the pause.
  b.reset();
  const reply done = must_reply(
      a.agent(far).decide(decision{paused.request_id, "s1", verdict::approve, "", {}, "ana", ""}, {.thread_id = "t"}));
  CHECK(answer_of(done) == "done: sent to bob");
  CHECK(sends_a == 1);
  CHECK(sends_b == 0);
  CHECK(a.route_counters().retries >= 1);
}

TEST_CASE(
    "an agent used as a tool across nodes: its pause surfaces on the caller, the decision passed down reaches it") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  two_nodes n(db.uri());
  auto& [sends_a, sends_b, a, b, inner] = n;
  const std::string outer = agent_held_by(db.uri(), a, {4, 4});

  const reply paused = must_reply(a.agent(outer).ask("ask " + inner + ": mail bob", {.thread_id = "t"}));
  REQUIRE(paused.paused());
  REQUIRE(paused.pending.size() == 1);
  CHECK(paused.pending.front().tool_call_id == "c1/s1");  // the inner agent's call s1, through c1
  CHECK(sends_b == 0);

  const reply done = must_reply(a.agent(outer).decide(
      decision{paused.request_id, "c1/s1", verdict::approve, "", {}, "ana", ""}, {.thread_id = "t"}));
  CHECK(answer_of(done) == "done: done: sent to bob");
  CHECK(sends_b == 1);  // where the inner agent runs
  CHECK(sends_a == 0);
  // The inner agent's thread (one per calling agent) holds the decision.
  const auto inner_thread = a.agent(inner).snapshot(outer + "->" + inner, 10s);
  REQUIRE(inner_thread);
  int decisions = 0;
  for (const entry& e : inner_thread->entries()) decisions += std::string_view(e.kind) == "decision";
  CHECK(decisions == 1);
}

TEST_CASE("a program's thread that first reached a peer through the node does not keep the node from closing") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  std::atomic<int> sends_a{0}, sends_b{0};
  auto a = std::make_unique<cluster_node>(in_process(db.uri(), "a-node", sends_a));
  cluster_node b(in_process(db.uri(), "b-node", sends_b));
  const std::string far = agent_held_by(db.uri(), b, {4, 4});
  // The thread's ask is the node's first to b: the link to b is made on it.
  gate asked, closed;
  std::thread caller([&] {
    CHECK(must_reply(a->agent(far).ask("mail bob")).paused());
    asked.open();
    closed.wait();  // alive while the node closes, as a server's threads are
  });
  REQUIRE(asked.wait());
  const auto closing = std::chrono::steady_clock::now();
  a.reset();
  // Not held for the transport's patience (10 s) waiting for the thread.
  CHECK(std::chrono::steady_clock::now() - closing < 5s);
  closed.open();
  caller.join();
}

TEST_CASE("a decision the agent's holder refuses ends with that refusal at once, not looked for again") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  two_nodes n(db.uri(), std::chrono::minutes(5));  // a decision looked for again would not end within the await
  auto& [sends_a, sends_b, a, b, far] = n;
  const std::string near = agent_held_by(db.uri(), a, {4, 4});
  for (const std::string& agent : {far, near}) {
    INFO(agent);
    const reply r =
        must_reply(a.agent(agent).decide(decision{"no-such-request", "s1", verdict::approve, "", {}, "ana", ""}));
    CHECK(error_type_of(r) == error_type::not_found);
    CHECK_THAT(std::get<error_info>(r.outcome).message, Catch::Contains("waits for a decision"));
  }
  CHECK(a.route_counters().retries == 0);
}

TEST_CASE("a snapshot through any node is the thread as committed where the agent runs") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  two_nodes n(db.uri());
  auto& [sends_a, sends_b, a, b, far] = n;
  const reply paused = must_reply(a.agent(far).ask("mail bob"));  // on the agent's default thread
  REQUIRE(paused.paused());

  const auto through_a = a.agent(far).snapshot({}, 10s);
  const auto where_it_runs = b.local().find_agent(far)->snapshot({}, 10s);
  REQUIRE(through_a);
  REQUIRE(where_it_runs);
  CHECK(through_a->id() == far + ":default");
  CHECK(through_a->rev() == where_it_runs->rev());
  std::vector<std::string> seen, expected;
  for (const entry& e : through_a->entries()) seen.push_back(std::string(e.id));
  for (const entry& e : where_it_runs->entries()) expected.push_back(std::string(e.id));
  CHECK(!seen.empty());
  CHECK(seen == expected);

  // A thread never committed is empty; an agent none was given has none.
  const auto never = a.agent(far).snapshot("never-asked", 10s);
  REQUIRE(never);
  CHECK(never->id() == "never-asked");
  CHECK(never->entries().empty());
  CHECK(!a.agent("nobody").snapshot({}, 10s));
}

TEST_CASE("an agent of the cluster is running once a live node holds its shard, an unknown one never is") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  two_nodes n(db.uri());
  auto& [sends_a, sends_b, a, b, far] = n;
  CHECK(a.agent(far).running());
  CHECK(b.agent(far).running());
  CHECK(!a.agent("nobody").running());
}

TEST_CASE("prepare runs before the node joins, and what it throws ends the constructor") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  std::atomic<int> sends{0};
  auto o = in_process(db.uri(), "a-node", sends);
  bool joined_before = true;
  o.prepare = [&](cluster_node& n) {
    try {
      joined_before = !read_cluster_status(db.uri()).nodes.empty();
    } catch (const std::exception&) {
      joined_before = false;  // no node ever joined this database
    }
    CHECK(n.local().agent_ids().empty());
    throw std::runtime_error("no tools today");
  };
  CHECK_THROWS_WITH(cluster_node(std::move(o)), "no tools today");
  CHECK(!joined_before);
}

TEST_CASE("wrap_threads: the runtime commits through the wrapper it returns, given the cluster's store") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  std::atomic<int> sends{0};
  auto o = in_process(db.uri(), "a-node", sends);
  std::shared_ptr<thread_store> given;
  auto wrapper = std::make_shared<memory_backed_store>();
  o.wrap_threads = [&](std::shared_ptr<thread_store> cluster_store) {
    given = cluster_store;
    return wrapper;
  };
  cluster_node a(std::move(o));
  CHECK(given == a.store());
  REQUIRE(eventually([&] { return a.local().agent_ids().size() == static_cast<std::size_t>(agents); }, 15s));
  REQUIRE(must_reply(a.agent(agent_of(0)).ask("mail bob", {.thread_id = "t"})).paused());
  CHECK(wrapper->inner.load("t").has_value());
  CHECK(!a.store()->load("t").has_value());
}

namespace {

// A clustered runtime in the test's own process, with the agents of the
// child nodes and the test's model.
cluster_node_options in_process_node(const std::string& conninfo, const std::string& id,
                                     std::shared_ptr<llm_provider> model) {
  cluster_node_options o;
  o.cluster = test_node(conninfo, id);
  o.transport.secret = secret;
  o.runtime.provider = std::move(model);
  o.runtime.telemetry = std::make_shared<log_sink>(false);
  o.runtime.lease_ttl = 1h;
  for (int i = 0; i < agents; ++i) o.agents.push_back({.id = agent_of(i), .model = "m"});
  return o;
}

}  // namespace

TEST_CASE(
    "a node that leaves lets the request it runs finish, and an ask during its drain is answered by the next holder") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  auto model_a = std::make_shared<gate_provider>(), model_b = std::make_shared<gate_provider>();
  auto a = std::make_unique<cluster_node>(in_process_node(db.uri(), "a-node", model_a));
  cluster_node b(in_process_node(db.uri(), "b-node", model_b));
  REQUIRE(eventually([&] { return shares_are(db.uri(), {4, 4}); }, 15s));
  std::string moving;  // an agent of a shard a-node holds
  for (const shard_lease& held : a->membership().shards_held())
    for (int i = 0; i < agents && moving.empty(); ++i)
      if (shard_of(agent_of(i), shards) == held.shard) moving = agent_of(i);
  REQUIRE(!moving.empty());

  // Asked through b-node, it runs on a-node, whose model holds the answer.
  request running = b.agent(moving).ask("hold this one", {.thread_id = "held", .request_id = "r-held"});
  REQUIRE(model_a->wait_held("hold this one"));

  std::atomic<bool> left{false};
  std::thread leaving([&] { left = a->leave(15s); });
  REQUIRE(eventually([&] { return stats_of(a->local(), moving).draining; }, 10s));

  // Asked now, through either node: a-node turns them away before anything
  // of them is committed, and they are asked again until the shard moved.
  request via_b = b.agent(moving).ask("asked during the drain, via b", {.thread_id = "during-b", .request_id = "r-b"});
  request via_a = a->agent(moving).ask("asked during the drain, via a", {.thread_id = "during-a", .request_id = "r-a"});
  REQUIRE(eventually([&] { return b.route_counters().retries >= 1 && a->route_counters().retries >= 1; }, 10s));
  CHECK(!running.done());
  // The shard stays a-node's while the request runs: its commits land.
  const auto still_held = a->membership().shards_held();
  CHECK(std::any_of(still_held.begin(), still_held.end(),
                    [&](const shard_lease& l) { return l.shard == shard_of(moving, shards); }));

  REQUIRE(model_a->release("hold this one"));
  CHECK(answer_of(must_reply(running)) == "done: hold this one");
  CHECK(answer_of(must_reply(via_b)) == "echo: asked during the drain, via b");
  CHECK(answer_of(must_reply(via_a)) == "echo: asked during the drain, via a");
  leaving.join();
  CHECK(left);
  // The held request ran where it started; the asks made during the drain
  // ran on the next holder.
  CHECK(model_a->calls() == 1);
  CHECK(model_b->calls() == 2);
  CHECK(shares_are(db.uri(), {8}));

  postgres_store& store = *db.store;
  for (const auto& [thread_id, request_id, answer] :
       {std::tuple{"held", "r-held", "done: hold this one"},
        std::tuple{"during-b", "r-b", "echo: asked during the drain, via b"},
        std::tuple{"during-a", "r-a", "echo: asked during the drain, via a"}}) {
    INFO(thread_id);
    const thread_reading t = read_thread(store, thread_id);
    CHECK(t.questions == std::map<std::string, int>{{request_id, 1}});
    CHECK(t.answers == std::map<std::string, std::vector<std::string>>{{request_id, {answer}}});
  }
  a.reset();
}

namespace {

// The next line any of `nodes` says within `timeout`, with the node; or the
// end of a node's output (no line). Nothing if they were all silent.
std::optional<std::pair<child*, std::optional<std::string>>> hear(const std::vector<child*>& nodes,
                                                                  std::chrono::milliseconds timeout) {
  for (child* c : nodes)
    if (const auto nl = c->buffer.find('\n'); nl != std::string::npos) {
      std::string l = c->buffer.substr(0, nl);
      c->buffer.erase(0, nl + 1);
      return std::pair{c, std::optional{std::move(l)}};
    }
  std::vector<pollfd> fds;
  for (child* c : nodes) fds.push_back({c->out, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0) return std::nullopt;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (!fds[i].revents) continue;
    char chunk[4096];
    const ssize_t n = ::read(nodes[i]->out, chunk, sizeof chunk);
    if (n <= 0) return std::pair{nodes[i], std::optional<std::string>{}};
    nodes[i]->buffer.append(chunk, static_cast<std::size_t>(n));
  }
  return hear(nodes, 0ms);
}

// Each shard's epoch: how many grants it has had.
std::map<std::uint32_t, std::uint64_t> epochs(const std::string& conninfo) {
  std::map<std::uint32_t, std::uint64_t> out;
  for (const shard_info& s : read_cluster_status(conninfo).shard_table) out[s.shard] = s.epoch;
  return out;
}

// "answer to: … (by NODE)": the node whose model answered.
std::string writer_of(const std::string& answer) {
  const auto by = answer.rfind("(by ");
  return by == std::string::npos ? std::string() : answer.substr(by + 4, answer.size() - by - 5);
}

}  // namespace

TEST_CASE("a rolling restart under load, each node in turn leaving and a new one taking its place, fails no request") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  const auto began = std::chrono::steady_clock::now();
  std::deque<child> nodes;  // addresses stay put
  for (const char* id : {"n1", "n2", "n3"}) nodes.push_back(start(db.uri(), id));
  REQUIRE(eventually([&] { return shares_are(db.uri(), {3, 3, 2}); }, 15s));
  const auto epochs_before = epochs(db.uri());

  // Each conversation has one ask out at a time, asked again as soon as it
  // is answered, through the nodes that are up in turn.
  constexpr int conversations = 12;
  std::vector<int> asked(conversations, 0);
  std::vector<bool> waiting(conversations, false);
  std::map<std::string, outcome> replies;
  std::vector<child*> up{&nodes[0], &nodes[1], &nodes[2]};  // ready and not leaving
  std::vector<child*> listening = up;
  std::size_t turn = 0;
  bool asking = true;
  auto ask_next = [&](int i) {
    child* via = up[turn++ % up.size()];
    via->send("ask " + agent_of(i) + " " + thread_of(i) + " " + request_of(i, asked[i]) + " question " +
              std::to_string(i) + "." + std::to_string(asked[i]));
    ++asked[i];
    waiting[i] = true;
  };
  for (int i = 0; i < conversations; ++i) ask_next(i);

  // Each step: the old node is told to leave (SIGTERM) and a new one is
  // started; the step ends once the old one left and exited, the new one is
  // ready, and the shares are 3, 3, 2 again. Between steps, two answers a
  // conversation on the settled cluster.
  int replaced = 0;
  child* leaving = nullptr;
  child* joining = nullptr;
  bool exited = false, ready = false;
  std::vector<std::string> left_said;
  int answered_since = 0;
  std::vector<std::chrono::milliseconds> steps;
  auto step_began = std::chrono::steady_clock::now();
  auto checked_shares = step_began;
  for (;;) {
    if (std::chrono::steady_clock::now() - began >= 50s) {
      std::ostringstream state;
      state << "replaced " << replaced << ", leaving " << (leaving ? leaving->id : "-") << " (exited " << exited
            << "), joining " << (joining ? joining->id : "-") << " (ready " << ready << "), answers since "
            << answered_since << "; shares:";
      for (const auto& [id, n] : shares(db.uri())) state << " " << id << "=" << n;
      state << "; waiting:";
      for (int i = 0; i < conversations; ++i)
        if (waiting[i]) state << " " << request_of(i, asked[i] - 1);
      FAIL("stuck: " << state.str());
    }
    if (const auto heard = hear(listening, 20ms)) {
      child* from = heard->first;
      if (!heard->second) {  // its output ended: it exited
        std::erase(listening, from);
        int status = -1;
        REQUIRE(::waitpid(from->pid, &status, 0) == from->pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        ::close(from->in);
        ::close(from->out);
        CHECK(from == leaving);
        exited = true;
        continue;
      }
      std::istringstream in(*heard->second);
      std::string word, id, status;
      in >> word >> id >> status;
      if (word == "ready") {
        CHECK(from == joining);
        ready = true;
        up.push_back(from);
      } else if (word == "left") {
        left_said.push_back(id);
      } else {
        REQUIRE(word == "reply");
        std::string rest;
        std::getline(in >> std::ws, rest);
        replies[id] = {status == "ok", rest};
        const int i = std::stoi(id.substr(2, id.find('-', 2) - 2));
        waiting[i] = false;
        ++answered_since;
        if (asking) ask_next(i);
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (!leaving && asking && answered_since >= 2 * conversations) {
      if (replaced == 3) {
        asking = false;
      } else {
        leaving = &nodes[static_cast<std::size_t>(replaced)];
        std::erase(up, leaving);
        REQUIRE(::kill(leaving->pid, SIGTERM) == 0);
        nodes.push_back(spawn(db.uri(), "n" + std::to_string(4 + replaced)));
        joining = &nodes.back();
        listening.push_back(joining);
        step_began = now;
      }
    } else if (leaving && exited && ready && now - checked_shares >= 50ms) {
      checked_shares = now;
      if (shares_are(db.uri(), {3, 3, 2})) {
        steps.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(now - step_began));
        leaving = joining = nullptr;
        exited = ready = false;
        ++replaced;
        answered_since = 0;
      }
    }
    if (!asking && std::none_of(waiting.begin(), waiting.end(), [](bool w) { return w; })) break;
  }
  for (std::size_t n = 3; n < nodes.size(); ++n) nodes[n].end();
  const auto took = std::chrono::steady_clock::now() - began;
  INFO("the three steps took " << steps[0].count() << ", " << steps[1].count() << " and " << steps[2].count()
                               << " ms; the whole test "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  CHECK(took < 30s);

  // No request failed, and each node left with all its shards given up.
  for (const auto& [id, o] : replies) {
    INFO(id << ": " << o.text);
    CHECK(o.ok);
  }
  CHECK(left_said == std::vector<std::string>{"true", "true", "true"});

  // Every thread: each question and its answer once, in the order asked,
  // and written by one node at a time: the runs of requests answered by one
  // node are no more than the grants its shard had (a node wrote it only
  // while it held the shard, and nobody else did meanwhile). Every node it
  // started on left, so each moved at least once.
  const auto epochs_after = epochs(db.uri());
  postgres_store& store = *db.store;
  for (int i = 0; i < conversations; ++i) {
    INFO("conversation " << i);
    const thread_reading t = read_thread(store, thread_of(i));
    std::vector<std::string> expected;
    for (int round = 0; round < asked[i]; ++round) expected.push_back(request_of(i, round));
    CHECK(t.order == expected);
    std::vector<std::string> writers;
    for (const std::string& id : expected) {
      CHECK(t.questions.count(id) == 1);
      CHECK(t.questions.at(id) == 1);
      REQUIRE(t.answers.count(id) == 1);
      CHECK(t.answers.at(id) == std::vector<std::string>{replies.at(id).text});
      const std::string writer = writer_of(replies.at(id).text);
      if (writers.empty() || writers.back() != writer) writers.push_back(writer);
    }
    const std::uint32_t shard = shard_of(agent_of(i), shards);
    CHECK(writers.size() >= 2);
    CHECK(writers.size() <= epochs_after.at(shard) - epochs_before.at(shard) + 1);
  }
}

namespace {

// Something a callback holds, and a way to see when it was let go of.
struct sentinel {
  std::shared_ptr<int> held = std::make_shared<int>(0);
  std::weak_ptr<int> watch = held;
  // For a callback; the test's own reference goes with let_go().
  std::shared_ptr<int> share() const { return held; }
  void let_go() { held.reset(); }
  bool gone() const { return watch.expired(); }
};

// A paused ask of `agent` through `via`, then its decision there: the
// callbacks of both, each holding a sentinel of its own, and how often each
// heard its end.
struct ask_and_decide {
  sentinel asked, decided;
  std::atomic<int> asked_ends{0}, decided_ends{0};

  void run(cluster_node& via, const std::string& agent) {
    reply paused;
    {
      ask_options o{.thread_id = "t"};
      o.on_event = [keep = asked.share(), this](const stream_event& e) {
        asked_ends += std::holds_alternative<request_finished_event>(e);
      };
      o.on_reply = [keep = asked.share()](const reply&) {};
      paused = must_reply(via.agent(agent).ask("mail bob", std::move(o)));
    }
    REQUIRE(paused.paused());
    ask_options o{.thread_id = "t"};
    o.on_event = [keep = decided.share(), this](const stream_event& e) {
      decided_ends += std::holds_alternative<request_finished_event>(e);
    };
    o.on_reply = [keep = decided.share()](const reply&) {};
    const reply done =
        must_reply(via.agent(agent).decide(decision{paused.request_id, "s1", verdict::approve, "", {}, "ana", ""}, o));
    CHECK(answer_of(done) == "done: sent to bob");
    asked.let_go();
    decided.let_go();
  }
};

}  // namespace

TEST_CASE("a routed ask, here or elsewhere: its end told once, its callbacks let go of once it ended") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  two_nodes n(db.uri());
  const std::string near = agent_held_by(db.uri(), n.a, {4, 4});
  // A paused ask and its decision, to an agent here and to one elsewhere.
  auto each = [&](const std::function<void(ask_and_decide&)>& check) {
    for (const std::string& agent : {near, n.far}) {
      INFO("agent " << agent << (agent == near ? " (held here)" : " (held elsewhere)"));
      ask_and_decide run;
      run.run(n.a, agent);
      check(run);
    }
  };
  SECTION("its end is told to on_event once") {
    each([](ask_and_decide& run) {
      CHECK(run.asked_ends == 1);  // its pause
      CHECK(run.decided_ends == 1);
    });
  }
  SECTION("nothing holds its callbacks once it ended") {
    each([](ask_and_decide& run) {
      // The decision's request ended: nothing keeps what its callbacks hold.
      CHECK(eventually([&] { return run.decided.gone(); }, 5s));
      // The paused ask was ended by the decision: its callbacks go too (they
      // were kept for a cancel while it paused).
      CHECK(eventually([&] { return run.asked.gone(); }, 5s));
    });
  }
}

TEST_CASE("an agent still stopping when its lost shard is granted again runs again once it stopped") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  auto model = std::make_shared<scripted_provider>([](const llm_stream&) { return scripted_reply::text("hello"); });
  auto o = in_process_node(db.uri(), "a-node", model);
  o.route_timeout = 3s;
  std::shared_ptr<watched_store> stalling;
  o.wrap_threads = [&](std::shared_ptr<thread_store> s) {
    stalling = std::make_shared<watched_store>(std::move(s));
    return stalling;
  };
  cluster_node a(std::move(o));
  REQUIRE(eventually([&] { return a.local().agent_ids().size() == static_cast<std::size_t>(agents); }, 15s));
  const std::string agent = agent_of(0);
  const std::uint32_t shard = shard_of(agent, shards);
  auto holds = [&] {
    for (const shard_lease& l : a.membership().shards_held())
      if (l.shard == shard) return true;
    return false;
  };

  // A commit of the agent stalls, so its stop waits on it.
  stalling->hold_commits();
  struct release_at_exit {
    watched_store& s;
    ~release_at_exit() { s.release_commits(); }
  } released{*stalling};
  request stalled = a.agent(agent).ask("hi", {.thread_id = "stalled"});
  REQUIRE(eventually([&] { return stalling->commits_held() > 0; }, 10s));

  // The shard goes to another node, which then dies: a-node takes it back.
  // Its agent was told to stop meanwhile, and is still stopping.
  PGconn* c = PQconnectdb(db.uri().c_str());
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  auto sql = [&](const std::string& statement) {
    PGresult* r = PQexec(c, statement.c_str());
    INFO(statement << ": " << PQresultErrorMessage(r));
    CHECK(std::string(PQcmdTuples(r)) == "1");
    PQclear(r);
  };
  sql("INSERT INTO troupe_nodes (id, address, build_id, state, started_at, heartbeat_at) VALUES ('z', 'z:1', 'x', "
      "'active', now(), now() + interval '1 hour')");
  sql("UPDATE troupe_shards SET holder = 'z', epoch = epoch + 1, lease_until = now() + interval '1 hour' WHERE shard "
      "= " +
      std::to_string(shard));
  REQUIRE(eventually([&] { return !holds(); }, 10s));
  sql("UPDATE troupe_nodes SET state = 'dead', heartbeat_at = now() - interval '1 hour' WHERE id = 'z'");
  sql("UPDATE troupe_shards SET lease_until = now() WHERE shard = " + std::to_string(shard));
  PQfinish(c);
  REQUIRE(eventually(holds, 10s));
  // Longer than agent::stop waits: the stop gave up before the agent went.
  std::this_thread::sleep_for(11s);
  stalling->release_commits();
  (void)stalled.await(10s);

  const reply again = must_reply(a.agent(agent).ask("hi again", {.thread_id = "after"}));
  CHECK(answer_of(again) == "hello");
}
