// Three clustered runtimes (cluster_node) in child processes on loopback,
// sharing a throwaway PostgreSQL: conversations asked through every node
// reach the node holding their agent; one node killed with SIGKILL mid-load
// and every conversation goes on through the survivors, with nothing lost
// or committed twice, the dead node fenced off its threads and its shards
// shared between the survivors. Then nodes in this process for the node's
// API: decisions and snapshots through any node, running, prepare and
// wrap_threads. Skipped, visibly, without a PostgreSQL server.

#include "actors/cluster/cluster_node.hpp"
#include "runtime/clock.hpp"
#include "runtime/cluster/cluster_membership.hpp"
#include "runtime/cluster/cluster_status.hpp"
#include "runtime/cluster/shard_of.hpp"
#include "runtime/store/postgres/postgres_store.hpp"
#include "support/cluster_nodes.hpp"
#include "support/memory_backed_store.hpp"
#include "support/runtime_harness.hpp"
#include "support/store_backends.hpp"
#include "support/store_cases.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
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

child start(const std::string& conninfo, const std::string& node_id) {
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
  CHECK(replies["r-cut-off"].text == "answer to: " + question);
  const thread_reading t = read_thread(store, "cut-off");
  CHECK(t.questions == std::map<std::string, int>{{"r-cut-off", 1}});
  CHECK(t.answers == std::map<std::string, std::vector<std::string>>{{"r-cut-off", {"answer to: " + question}}});
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
    n.local().tools().add(make_tool("send", [&sends](const boost::json::object& a, const tool_context&) {
      ++sends;
      return boost::json::value("sent to " + std::string(a.at("to").as_string()));
    }));
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

TEST_CASE("an agent of the cluster is running once a live node holds its shard; an unknown one never is") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  two_nodes n(db.uri());
  auto& [sends_a, sends_b, a, b, far] = n;
  CHECK(a.agent(far).running());
  CHECK(b.agent(far).running());
  CHECK(!a.agent("nobody").running());
}

TEST_CASE("prepare runs before the node joins; what it throws ends the constructor") {
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
