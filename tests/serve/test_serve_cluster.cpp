// Two `troupe serve` servers in this process as two nodes of one cluster
// ([cluster], a throwaway PostgreSQL schema): either answers any
// conversation, asking each agent on the node that holds its shard; a
// decision goes through either; /metrics shows the node's shards and routed
// asks; a server that drains hands its shards to the other. Skipped,
// visibly, without a PostgreSQL server.

#include "support/cluster_nodes.hpp"
#include "support/serve_fixture.hpp"
#include "support/store_backends.hpp"
#include "support/store_cases.hpp"
#include "support/watched_store.hpp"

#include "actors/cluster/cluster_node.hpp"
#include "runtime/cluster/cluster_membership.hpp"
#include "runtime/cluster/shard_of.hpp"

#include <cstdlib>
#include <set>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

constexpr std::uint32_t shards = 8;

std::string str(const json::value& v) { return std::string(v.as_string()); }

// One agent per shard, so that each node holds some whatever its share.
std::vector<std::string> one_agent_per_shard() {
  std::vector<std::string> ids(shards);
  std::size_t found = 0;
  for (int i = 0; found < shards; ++i) {
    const std::string id = "agent-" + std::to_string(i);
    std::string& slot = ids[shard_of(id, shards)];
    if (slot.empty()) {
      slot = id;
      ++found;
    }
  }
  return ids;
}

std::string cluster_config_text(const std::string& database, const std::string& node_id,
                                const std::vector<std::string>& agent_ids) {
  const std::string model = "model = \"openai:test\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
  std::string text = "listen = \"127.0.0.1:0\"\ndrain_deadline_seconds = 5\n[cluster]\ndatabase = \"" + database +
                     "\"\nsecret_env = \"TROUPE_SERVE_TEST_CLUSTER_SECRET\"\nnode_id = \"" + node_id +
                     "\"\nlisten = \"127.0.0.1:0\"\nshards = " + std::to_string(shards) +
                     "\nheartbeat_interval_seconds = 0.05\ndead_after_seconds = 0.4\ndrain_timeout_seconds = 2\n";
  for (const std::string& id : agent_ids)
    text += "[[agents]]\nid = \"" + id + "\"\n" + model + "tools = [\"calculator\"]\n";
  text += "[[agents]]\nid = \"clerk\"\n" + model + "tools = [\"calculator\"]\napprovals = [\"calculator\"]\n";
  text += "[[keys]]\nkey = \"" + alice_key + "\"\nuser = \"alice\"\n[[keys]]\nkey = \"" + metrics_key +
          "\"\nuser = \"prometheus\"\nrole = \"metrics\"\n";
  return text;
}

// The value of one series in an exposition text, or -1 without it.
double series(const std::string& exposition, const std::string& name) {
  const auto at = exposition.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(exposition.substr(at + name.size() + 2));
}

struct cluster_fixture {
  postgres_backend db;
  std::shared_ptr<gate_provider> model = std::make_shared<gate_provider>();
  std::vector<std::string> agent_ids = one_agent_per_shard();
  std::unique_ptr<serve::server> a, b;

  using store_wrapper = std::function<std::shared_ptr<thread_store>(std::shared_ptr<thread_store>)>;

  // `wrap_a` wraps the thread store of server a.
  explicit cluster_fixture(store_wrapper wrap_a = {}) {
    if (!db.ready()) return;
    ::setenv("TROUPE_SERVE_TEST_CLUSTER_SECRET", "serve-cluster-test-secret", 1);
    a = start("a", std::move(wrap_a));
    b = start("b");
    // Each holds its share (4 of 8 shards), and says it is ready.
    REQUIRE(eventually([&] { return held(*a).size() == shards / 2 && held(*b).size() == shards / 2; }));
  }
  std::unique_ptr<serve::server> start(const std::string& node_id, store_wrapper wrap = {}) {
    serve::deployment_options o;
    o.wrap_threads = std::move(wrap);
    for (const std::string& id : agent_ids) o.providers[id] = model;
    o.providers["clerk"] = model;
    auto s = std::make_unique<serve::server>(
        serve::parse_config(cluster_config_text(db.uri(), node_id, agent_ids), "test.toml", ""), std::move(o));
    s->start();
    return s;
  }
  static std::set<std::uint32_t> held(serve::server& s) {
    std::set<std::uint32_t> out;
    for (const shard_lease& l : s.agents().node()->membership().shards_held()) out.insert(l.shard);
    return out;
  }
  // An agent whose shard `s` holds.
  std::string agent_held_by(serve::server& s) const { return agent_ids[*held(s).begin()]; }
};

http_reply ask(serve::server& s, const std::string& chat, const std::string& agent, const std::string& content) {
  http_client c(s.port());
  return c.send(http::verb::post, "/v1/conversations/web/" + chat + "/messages", message_body(agent, content),
                as_user(alice_key));
}

// A message to `agent` in chat `chat`, streamed through `s`; the stream is open.
void stream_message(http_client& c, const std::string& chat, const std::string& agent, const std::string& content) {
  REQUIRE(c.open_stream("/v1/conversations/web/" + chat + "/messages", message_body(agent, content), as_user(alice_key))
              .status == 200);
}

// A reconnect to the conversation's events from the start; the stream is open.
void reconnect_from_start(http_client& c, const std::string& conversation) {
  REQUIRE(
      c.open_stream("/v1/conversations/" + conversation + "/events?after=0", "", as_user(alice_key), http::verb::get)
          .status == 200);
}

std::string metrics_of(serve::server& s) {
  http_client c(s.port());
  const http_reply r = c.send(http::verb::get, "/metrics", {}, as_user(metrics_key));
  REQUIRE(r.status == 200);
  return r.body;
}

}  // namespace

TEST_CASE("serve --cluster: two servers, one cluster") {
  cluster_fixture f;
  REQUIRE_BACKEND(f.db);

  SECTION("a conversation begun through one server goes on through the other, on one thread") {
    const std::string agent = f.agent_held_by(*f.a);
    const http_reply first = ask(*f.a, "c1", agent, "hello");
    REQUIRE(first.status == 200);
    const http_reply second = ask(*f.b, "c1", agent, "again");
    REQUIRE(second.status == 200);
    CHECK(second.json().at("answer") == "echo: again");
    CHECK(second.json().at("conversation_id") == first.json().at("conversation_id"));
    CHECK(second.json().at("thread_id") == first.json().at("thread_id"));
    auto t = f.db.store->load(str(first.json().at("thread_id")));
    REQUIRE(t);
    std::vector<std::string> texts;
    std::set<std::string> ids;
    for (const entry& e : t->entries()) CHECK(ids.insert(std::string(e.id.view())).second);
    for (const entry* e : t->of_kind(entry_kind::message))
      if (e->payload.at("role") == "user") texts.emplace_back(e->payload.at("content").as_string());
    CHECK(texts == std::vector<std::string>{"hello", "again"});
  }
  SECTION("an ask through one server reaches the agent the other holds, and its metrics show it") {
    const std::string agent = f.agent_held_by(*f.b);
    const http_reply r = ask(*f.a, "c2", agent, "far away");
    REQUIRE(r.status == 200);
    CHECK(r.json().at("answer") == "echo: far away");
    const std::string a = metrics_of(*f.a);
    CHECK(series(a, "troupe_cluster_asks_total{where=\"remote\"}") >= 1);
    CHECK(series(a, "troupe_cluster_shards_held") == shards / 2);
    CHECK(series(a, "troupe_cluster_shard_handovers_total{event=\"acquired\"}") >= shards / 2);
    CHECK(series(a, "troupe_cluster_heartbeat_rounds_total") >= 1);
    CHECK(a.find("troupe_cluster_node{node=\"a\"} 1") != std::string::npos);
    const http_reply local = ask(*f.b, "c3", agent, "near");
    REQUIRE(local.status == 200);
    CHECK(series(metrics_of(*f.b), "troupe_cluster_asks_total{where=\"local\"}") >= 1);
  }
  SECTION("a turn streamed through one server is told again through the other, under the same event ids") {
    http_client c(f.a->port());
    stream_message(c, "c6", f.agent_held_by(*f.b), "tell me");
    const auto events = c.rest_of_stream();
    REQUIRE(events.size() >= 3);
    http_client other(f.b->port());
    reconnect_from_start(other, str(events[0].data.at("conversation_id")));
    const auto again = other.rest_of_stream();
    REQUIRE(again.size() == events.size());
    for (std::size_t i = 0; i < again.size(); ++i) {
      CHECK(again[i].name == events[i].name);
      CHECK(again[i].id == events[i].id);
    }
    CHECK(again.back().data.at("answer") == "echo: tell me");
  }
  SECTION("a turn still running through one server is followed through the other until it ends") {
    http_client live(f.a->port());
    stream_message(live, "c7", f.agent_held_by(*f.b), "hold-far");
    const auto opened = live.next_event();
    REQUIRE(opened);
    REQUIRE(f.model->wait_held("hold-far"));  // its question is committed: the model is asked after
    http_client other(f.b->port());
    reconnect_from_start(other, str(opened->data.at("conversation_id")));
    const auto first = other.next_event();
    REQUIRE(first);
    CHECK(first->name == "conversation");
    REQUIRE(f.model->release("hold-far"));
    const auto rest = other.rest_of_stream();
    REQUIRE_FALSE(rest.empty());
    CHECK(rest.back().name == "message.completed");
    CHECK(rest.back().data.at("answer") == "done: hold-far");
    const auto live_rest = live.rest_of_stream();
    REQUIRE_FALSE(live_rest.empty());
    // The same last event, under the same id, through either server.
    CHECK(live_rest.back().id == rest.back().id);
  }
  SECTION("a server that drains ends the turns it follows with shutdown, without waiting for them") {
    http_client live(f.a->port());
    stream_message(live, "c9", f.agent_held_by(*f.a), "hold-near");
    const auto opened = live.next_event();
    REQUIRE(opened);
    REQUIRE(f.model->wait_held("hold-near"));
    http_client other(f.b->port());
    reconnect_from_start(other, str(opened->data.at("conversation_id")));
    REQUIRE(other.next_event());  // the conversation event: the follower runs
    f.b->drain();
    const auto rest = other.rest_of_stream();
    REQUIRE_FALSE(rest.empty());
    CHECK(rest.back().name == "error");
    CHECK(rest.back().data.at("error").at("type") == "shutdown");
    REQUIRE(f.model->release("hold-near"));
    CHECK(live.rest_of_stream().back().data.at("answer") == "done: hold-near");
  }
  SECTION("both are ready") {
    for (serve::server* s : {f.a.get(), f.b.get()}) {
      http_client c(s->port());
      CHECK(c.send(http::verb::get, "/readyz").status == 200);
    }
  }
  SECTION("a turn paused through one server is decided through the other") {
    http_client c(f.a->port());
    REQUIRE(c.open_stream("/v1/conversations/web/c4/messages", message_body("clerk", "calc: 2 + 3"), as_user(alice_key))
                .status == 200);
    const auto events = c.rest_of_stream();
    REQUIRE(events.size() == 3);
    REQUIRE(events[1].name == "approval_request");
    const std::string conversation = str(events[0].data.at("conversation_id"));
    http_client other(f.b->port());
    const http_reply pending =
        other.send(http::verb::get, "/v1/conversations/" + conversation + "/pending", {}, as_user(alice_key));
    REQUIRE(pending.status == 200);
    REQUIRE(pending.json().at("data").as_array().size() == 1);
    const http_reply decided = other.send(
        http::verb::post, "/v1/conversations/" + conversation + "/decisions",
        json::serialize(json::object{{"tool_call_id", events[1].data.at("tool_call_id")}, {"verdict", "approve"}}),
        as_user(alice_key));
    REQUIRE(decided.status == 200);
    CHECK(decided.json().at("answer") == "result: {\"expression\":\"2 + 3\",\"value\":5}");
  }
  SECTION("a server that drains leaves the cluster: the other takes every shard and answers for them") {
    const std::string agent = f.agent_held_by(*f.a);
    REQUIRE(ask(*f.a, "c5", agent, "before").status == 200);
    f.a->drain();
    CHECK(eventually([&] { return f.held(*f.b).size() == shards; }));
    const http_reply after = ask(*f.b, "c5", agent, "after");
    REQUIRE(after.status == 200);
    CHECK(after.json().at("answer") == "echo: after");
    CHECK(series(metrics_of(*f.b), "troupe_cluster_shard_handovers_total{event=\"acquired\"}") >= shards);
  }
}

// The server that took a turn's message, and ran it (it held the agent),
// dies with the turn: its question committed, nothing after it. A reconnect
// through the other server, once it holds the agent, goes on with the turn
// and follows it to its answer, the question committed once.
TEST_CASE("serve --cluster: a reconnect through another server continues a turn whose server died under it") {
  std::shared_ptr<watched_store> dying;
  cluster_fixture f([&](std::shared_ptr<thread_store> s) -> std::shared_ptr<thread_store> {
    dying = std::make_shared<watched_store>(std::move(s));
    return dying;
  });
  REQUIRE_BACKEND(f.db);
  const std::string agent = f.agent_held_by(*f.a);
  std::string conversation;
  {
    http_client live(f.a->port());
    stream_message(live, "c8", agent, "hold-orphan");
    const auto opened = live.next_event();
    REQUIRE(opened);
    conversation = str(opened->data.at("conversation_id"));
    REQUIRE(f.model->wait_held("hold-orphan"));  // its question is committed: the model is asked after
    dying->refuse_commits = true;
    REQUIRE(f.model->release("hold-orphan"));
    const auto ended = live.rest_of_stream();
    REQUIRE_FALSE(ended.empty());
    REQUIRE(ended.back().name == "error");  // the answer could not be committed
  }
  f.a->drain();  // leaves the cluster: b takes every shard
  REQUIRE(eventually([&] { return cluster_fixture::held(*f.b).size() == shards; }));

  http_client other(f.b->port());
  reconnect_from_start(other, conversation);
  REQUIRE(f.model->wait_held("hold-orphan"));  // asked again, on b
  REQUIRE(f.model->release("hold-orphan"));
  const auto rest = other.rest_of_stream();
  REQUIRE_FALSE(rest.empty());
  CHECK(rest.back().name == "message.completed");
  CHECK(rest.back().data.at("answer") == "done: hold-orphan");

  const auto conv = f.db.store->find_conversation(conversation);
  REQUIRE(conv.has_value());
  auto t = f.db.store->load(conv->thread_id);
  REQUIRE(t.has_value());
  std::vector<std::string> questions;
  for (const entry* e : t->of_kind(entry_kind::message))
    if (e->payload.at("role") == "user") questions.emplace_back(e->payload.at("content").as_string());
  CHECK(questions == std::vector<std::string>{"hold-orphan"});
}

TEST_CASE("serve --cluster: an agent's unknown tool is refused at start, naming the field") {
  postgres_backend db;
  REQUIRE_BACKEND(db);
  ::setenv("TROUPE_SERVE_TEST_CLUSTER_SECRET", "serve-cluster-test-secret", 1);
  std::string text = cluster_config_text(db.uri(), "a", {"helper"});
  const std::string tools = "tools = [\"calculator\"]";
  text.replace(text.find(tools), tools.size(), "tools = [\"calculator\", \"x\"]");
  CHECK_THROWS_WITH(serve::server(serve::parse_config(text, "test.toml", "")),
                    Catch::Contains("agents[0].tools[1]: no tool named \"x\""));
}

namespace {

const std::string lost_answer_question = "calc-hold: 2 + 3";  // a tool call, then the model waits
const std::string lost_answer_path = "/v1/conversations/web/lost/messages";
const header_list lost_answer_key = as_user(alice_key, {{"Idempotency-Key", "lost-answer"}});

// The keyed message, streamed through `s`, until its turn waits for the model after its tool call.
void send_lost_answer(http_client& c, cluster_fixture& f, const std::string& agent) {
  REQUIRE(c.open_stream(lost_answer_path, message_body(agent, lost_answer_question), lost_answer_key).status == 200);
  REQUIRE(f.model->wait_held(lost_answer_question));  // the tool's result is committed: the model is asked after
}

// The keyed message again, streamed through `c`, once it follows the turn
// (the tool call its thread holds); its conversation's id.
std::string repeat_lost_answer(http_client& c, const std::string& agent) {
  REQUIRE(c.open_stream(lost_answer_path, message_body(agent, lost_answer_question), lost_answer_key).status == 200);
  const auto opened = c.next_event();
  REQUIRE(opened);
  CHECK(opened->name == "conversation");
  const auto started = c.next_event();
  REQUIRE(started);
  INFO(json::serialize(started->data));
  REQUIRE(started->name == "tool.started");
  const auto finished = c.next_event();
  REQUIRE(finished);
  REQUIRE(finished->name == "tool.finished");
  return str(opened->data.at("conversation_id"));
}

std::vector<std::string> questions_of(postgres_backend& db, const std::string& conversation_id) {
  const auto conv = db.store->find_conversation(conversation_id);
  REQUIRE(conv.has_value());
  auto t = db.store->load(conv->thread_id);
  REQUIRE(t.has_value());
  std::vector<std::string> questions;
  for (const entry* e : t->of_kind(entry_kind::message))
    if (e->payload.at("role") == "user") questions.emplace_back(e->payload.at("content").as_string());
  return questions;
}

}  // namespace

// A keyed message whose turn runs through one server, sent again through
// the other (its client lost the first answer: the node it went to died,
// or its connection broke): the request is running, so the repeat follows
// it, as a reconnect does, and gets its answer when it ends; a repeat
// after that gets the answer too. The question is asked once.
TEST_CASE("serve --cluster: a message repeated with its Idempotency-Key through the other server while its turn runs") {
  cluster_fixture f;
  REQUIRE_BACKEND(f.db);
  const std::string agent = f.agent_held_by(*f.a);
  http_client first(f.a->port());
  send_lost_answer(first, f, agent);

  http_client repeat(f.b->port());
  const std::string conversation = repeat_lost_answer(repeat, agent);
  REQUIRE(f.model->release(lost_answer_question));
  const auto rest = repeat.rest_of_stream();
  REQUIRE_FALSE(rest.empty());
  CHECK(rest.back().name == "message.completed");
  CHECK(str(rest.back().data.at("answer")) == "done: " + lost_answer_question);
  const auto first_rest = first.rest_of_stream();
  REQUIRE_FALSE(first_rest.empty());
  CHECK(first_rest.back().id == rest.back().id);  // the same turn, placed alike

  for (serve::server* s : {f.b.get(), f.a.get()}) {
    http_client later(s->port());
    const http_reply again =
        later.send(http::verb::post, lost_answer_path, message_body(agent, lost_answer_question), lost_answer_key);
    CHECK(again.status == 200);
    CHECK(again.body.find("done: " + lost_answer_question) != std::string::npos);
  }
  CHECK(questions_of(f.db, conversation) == std::vector<std::string>{lost_answer_question});
  CHECK(f.model->held_now() == 0);
}

// The server that runs a keyed turn dies under it while a repeat through
// the other server follows it: nothing runs the request then. The repeat
// does not wait for an end that will not come: it asks the request again
// (a retry), which goes on, once the other server holds the agent, from
// where its thread stands, to its answer.
TEST_CASE("serve --cluster: a repeat following a turn whose server died under it continues the turn") {
  std::shared_ptr<watched_store> dying;
  cluster_fixture f([&](std::shared_ptr<thread_store> s) -> std::shared_ptr<thread_store> {
    dying = std::make_shared<watched_store>(std::move(s));
    return dying;
  });
  REQUIRE_BACKEND(f.db);
  const std::string agent = f.agent_held_by(*f.a);
  http_client first(f.a->port());
  send_lost_answer(first, f, agent);
  http_client repeat(f.b->port());
  const std::string conversation = repeat_lost_answer(repeat, agent);

  dying->refuse_commits = true;  // a dies: nothing it does from now on reaches the thread
  REQUIRE(f.model->release(lost_answer_question));
  const auto ended = first.rest_of_stream();
  REQUIRE_FALSE(ended.empty());
  REQUIRE(ended.back().name == "error");  // the answer could not be committed
  f.a->drain();                           // leaves the cluster: b takes every shard
  REQUIRE(eventually([&] { return cluster_fixture::held(*f.b).size() == shards; }, std::chrono::seconds(20)));

  REQUIRE(f.model->wait_held(lost_answer_question));  // asked again, on b
  REQUIRE(f.model->release(lost_answer_question));
  const auto rest = repeat.rest_of_stream();
  REQUIRE_FALSE(rest.empty());
  CHECK(rest.back().name == "message.completed");
  CHECK(str(rest.back().data.at("answer")) == "done: " + lost_answer_question);
  CHECK(questions_of(f.db, conversation) == std::vector<std::string>{lost_answer_question});
}
