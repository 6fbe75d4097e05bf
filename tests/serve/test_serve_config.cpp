// The serve config is refused at start, naming the field, for every
// mistake a user can make in it; and the small pure parts of the server.

#include "apps/serve/auth.hpp"
#include "apps/serve/config.hpp"
#include "apps/serve/rate_limiter.hpp"
#include "apps/serve/router.hpp"
#include "apps/serve/turn_registry.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace troupe::serve;

namespace {

const std::string agent = "[[agents]]\nid = \"a\"\nmodel = \"openai:m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
const std::string key = "[[keys]]\nkey = \"sk-0123456789abcdef\"\nuser = \"u\"\n";

std::string refusal(const std::string& text) {
  try {
    parse_config(text, "serve.toml", "");
  } catch (const config_error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a serve config") {
  SECTION("with an agent and a key is read with its defaults") {
    const serve_config c = parse_config(agent + key, "serve.toml", "");
    CHECK(c.host == "127.0.0.1");
    CHECK(c.port == 8080);
    REQUIRE(c.agents.size() == 1);
    CHECK(c.agents[0].id == "a");
    CHECK(c.agents[0].on_double_text == double_texting::enqueue);
    CHECK_FALSE(c.agents[0].cancel_on_disconnect);
    REQUIRE(c.keys.size() == 1);
    CHECK(c.keys[0].user == "u");
  }
  SECTION("reads an agent's thread cache: how many threads it keeps loaded, and for how long unused") {
    const serve_config c =
        parse_config(agent + "max_loaded_threads = 5\nthread_idle_timeout_seconds = 60\n" + key, "serve.toml", "");
    REQUIRE(c.agents.size() == 1);
    CHECK(c.agents[0].max_loaded_threads == 5);
    CHECK(c.agents[0].thread_idle_timeout == std::chrono::seconds(60));
  }
  SECTION("reads an agent's approvals: tools of its own whose calls wait for a person, and for how long") {
    const serve_config c = parse_config(
        agent + "tools = [\"calculator\"]\napprovals = [\"calculator\"]\napproval_timeout_seconds = 60\n" + key,
        "serve.toml", "");
    REQUIRE(c.agents.size() == 1);
    CHECK(c.agents[0].approvals == std::vector<std::string>{"calculator"});
    CHECK(c.agents[0].approval_timeout == std::chrono::seconds(60));
    CHECK_THAT(refusal(agent + "tools = [\"calculator\"]\napprovals = [\"send\"]\n" + key),
               Catch::Contains("agents[0].approvals: \"send\" is not one of the agent's tools"));
  }
  SECTION("reads the listen address, limits, deadlines and policies") {
    const serve_config c = parse_config(
        "listen = \"0.0.0.0:9000\"\nio_threads = 3\ndrain_deadline_seconds = 2.5\n[limits]\nmax_body_bytes = 100\n"
        "max_connections = 7\nheader_timeout_seconds = 1\n" +
            agent + "double_texting = \"interrupt\"\ncancel_on_disconnect = true\nrequest_deadline_seconds = 9\n" +
            "max_queued_asks = 3\n" + key,
        "serve.toml", "");
    CHECK(c.host == "0.0.0.0");
    CHECK(c.port == 9000);
    CHECK(c.io_threads == 3);
    CHECK(c.drain_deadline == std::chrono::milliseconds(2500));
    CHECK(c.limits.max_body_bytes == 100);
    CHECK(c.limits.max_connections == 7);
    CHECK(c.limits.header_timeout == std::chrono::seconds(1));
    CHECK(c.agents[0].on_double_text == double_texting::interrupt);
    CHECK(c.agents[0].cancel_on_disconnect);
    CHECK(c.agents[0].request_deadline == std::chrono::seconds(9));
    CHECK(c.agents[0].max_queued_asks == 3);
  }
  SECTION("reads an agent's context policy in the command line's keys, summarize_to among them") {
    const serve_config c = parse_config(agent +
                                            "context_policy = \"short\"\nmax_input_tokens = 3000\nkeep_last_turns = 4\n"
                                            "summarize = true\nsummarize_to = 0.25\n" +
                                            key,
                                        "serve.toml", "");
    const troupe::context_choice& m = c.agents[0].model.context;
    CHECK(m.preset == "short");
    CHECK(m.max_input_tokens == 3000);
    CHECK(m.keep_last_turns == 4u);
    CHECK(m.summarize);
    CHECK(m.summarize_to == 0.25);
    CHECK_THAT(refusal(agent + "summarize_to = 0\n" + key),
               Catch::Contains("agents[0].summarize_to: must be more than 0"));
  }
  SECTION("takes a key from the environment variable it names") {
    ::setenv("TROUPE_SERVE_TEST_KEY", "sk-from-the-environment-1", 1);
    const serve_config c =
        parse_config(agent + "[[keys]]\nkey_env = \"TROUPE_SERVE_TEST_KEY\"\nuser = \"v\"\n", "serve.toml", "");
    CHECK(c.keys[0].key == "sk-from-the-environment-1");
  }
  SECTION("that is not TOML is refused with its line") {
    CHECK_THAT(refusal("listen = \n"), Catch::Contains("serve.toml:1"));
  }
  SECTION("without agents or keys is refused") {
    CHECK_THAT(refusal(key), Catch::Contains("agents: at least one"));
    CHECK_THAT(refusal(agent), Catch::Contains("keys: at least one"));
  }
  SECTION("with a bad field is refused naming it") {
    CHECK_THAT(refusal(agent + "double_texting = \"later\"\n" + key),
               Catch::Contains("agents[0].double_texting: must be enqueue, reject or interrupt"));
    CHECK_THAT(refusal(agent + "max_queued_asks = -1\n" + key), Catch::Contains("agents[0].max_queued_asks"));
    CHECK_THAT(refusal(agent + "tools = \"calculator\"\n" + key), Catch::Contains("agents[0].tools: must be an array"));
    CHECK_THAT(refusal(agent + "request_deadline_seconds = 0\n" + key),
               Catch::Contains("agents[0].request_deadline_seconds"));
    CHECK_THAT(refusal("[limits]\nmax_body_bytes = \"big\"\n" + agent + key),
               Catch::Contains("limits.max_body_bytes: must be an integer"));
    CHECK_THAT(refusal("listen = \"nowhere\"\n" + agent + key), Catch::Contains("listen:"));
    CHECK_THAT(refusal("io_threads = 0\n" + agent + key), Catch::Contains("io_threads: must be between"));
  }
  SECTION("with a misspelt field is refused naming it") {
    CHECK_THAT(refusal(agent + "max_iteration = 3\n" + key),
               Catch::Contains("agents[0].max_iteration: is not a known"));
    CHECK_THAT(refusal("lisen = \"127.0.0.1:1\"\n" + agent + key), Catch::Contains("lisen: is not a known field"));
  }
  SECTION("with an agent the CLI could not run is refused naming the agent") {
    CHECK_THAT(refusal("[[agents]]\nid = \"s\"\nprovider = \"scripted\"\n" + key),
               Catch::Contains("agents[0].model: --provider scripted needs --script"));
    CHECK_THAT(refusal("[[agents]]\nmodel = \"openai:m\"\n" + key), Catch::Contains("agents[0].id: is required"));
    CHECK_THAT(refusal(agent + agent + key), Catch::Contains("agents[1].id: another agent is already named a"));
  }
  SECTION("with a bad key is refused naming it, without showing the key") {
    CHECK_THAT(refusal(agent + "[[keys]]\nkey = \"short\"\nuser = \"u\"\n"),
               Catch::Contains("keys[0].key: a key must have at least 16 characters"));
    CHECK_THAT(refusal(agent + "[[keys]]\nkey = \"short\"\nuser = \"u\"\n"), !Catch::Contains("\"short\""));
    CHECK_THAT(refusal(agent + "[[keys]]\nkey_env = \"TROUPE_SERVE_TEST_UNSET\"\nuser = \"u\"\n"),
               Catch::Contains("keys[0].key_env: the environment variable TROUPE_SERVE_TEST_UNSET is not set"));
    CHECK_THAT(refusal(agent + "[[keys]]\nuser = \"u\"\n"), Catch::Contains("keys[0].key: give key or key_env"));
    CHECK_THAT(refusal(agent + "[[keys]]\nkey = \"sk-0123456789abcdef\"\n"),
               Catch::Contains("keys[0].user: is required"));
    CHECK_THAT(refusal(agent + key + key), Catch::Contains("keys[1].key: the same key is given twice"));
  }
  SECTION("with a non-ASCII character where toml++ 3.3.0 asks if it is whitespace is read as TOML says") {
    // A line-ending backslash in a multi-line string, then U+00A7; a key with U+01D4.
    CHECK_THAT(refusal("s = \"\"\"\\\n\u00a7\"\"\"\n" + agent + key),
               Catch::Contains("s: is not a known field (serve.toml:1)"));
    CHECK_THAT(refusal("a\u01d4 = 1\n" + agent + key),
               Catch::Contains("not valid TOML: ") && Catch::Contains("(serve.toml:1)"));
  }
  SECTION("a key's role is user or metrics") {
    CHECK_THAT(refusal(agent + "[[keys]]\nkey = \"sk-0123456789abcdef\"\nuser = \"u\"\nrole = \"admin\"\n"),
               Catch::Contains("keys[0].role: must be user or metrics, not \"admin\""));
  }
}

TEST_CASE("a serve config's [cluster] table") {
  const std::string db = "postgres://troupe@db.internal:5432/agents";
  ::setenv("TROUPE_SERVE_TEST_CLUSTER_SECRET", "cluster-secret-0123456789", 1);
  const std::string cluster = "[cluster]\nsecret_env = \"TROUPE_SERVE_TEST_CLUSTER_SECRET\"\n";
  SECTION("without one, or without a database, the server is not a cluster node") {
    CHECK_FALSE(parse_config(agent + key, "serve.toml", "").cluster.enabled());
    CHECK_FALSE(parse_config(agent + key + cluster, "serve.toml", "").cluster.enabled());
  }
  SECTION("is read with the secret taken from the environment variable it names") {
    const serve_config c = parse_config(agent + key + cluster + "database = \"" + db +
                                            "\"\nlisten = \"10.0.0.2:4100\"\nnode_id = \"n1\"\nshards = 16\n"
                                            "heartbeat_interval_seconds = 0.5\ndead_after_seconds = 4\n"
                                            "drain_timeout_seconds = 20\n",
                                        "serve.toml", "");
    REQUIRE(c.cluster.enabled());
    CHECK(c.cluster.database == db);
    CHECK(c.cluster.secret == "cluster-secret-0123456789");
    CHECK(c.cluster.listen_host == "10.0.0.2");
    CHECK(c.cluster.listen_port == 4100);
    CHECK(c.cluster.node_id == "n1");
    CHECK(c.cluster.shards == 16);
    CHECK(c.cluster.heartbeat_interval == std::chrono::milliseconds(500));
    CHECK(c.cluster.dead_after == std::chrono::seconds(4));
    CHECK(c.cluster.drain_timeout == std::chrono::seconds(20));
  }
  SECTION("TLS files are resolved against the config's folder, all three or none") {
    const serve_config c = parse_config(agent + key + cluster + "database = \"" + db +
                                            "\"\ntls_certificate = \"node.pem\"\ntls_key = \"node.key\"\n"
                                            "tls_ca_file = \"/etc/troupe/ca.pem\"\n",
                                        "serve.toml", "/etc/troupe/node1");
    CHECK(c.cluster.tls_certificate == "/etc/troupe/node1/node.pem");
    CHECK(c.cluster.tls_key == "/etc/troupe/node1/node.key");
    CHECK(c.cluster.tls_ca_file == "/etc/troupe/ca.pem");
    CHECK_THAT(refusal(agent + key + cluster + "tls_certificate = \"node.pem\"\n"),
               Catch::Contains("cluster.tls_key: give tls_certificate, tls_key and tls_ca_file, all three or none"));
  }
  SECTION("a secret in the file is refused: the file names the variable only") {
    CHECK_THAT(refusal(agent + key + "[cluster]\ndatabase = \"" + db + "\"\nsecret = \"cluster-secret-0123456789\"\n"),
               Catch::Contains("cluster.secret: is not read from the file") && !Catch::Contains("0123456789"));
  }
  SECTION("a secret variable that is not set, or a short secret, is refused naming secret_env") {
    CHECK_THAT(refusal(agent + key + "[cluster]\ndatabase = \"" + db +
                       "\"\nsecret_env = \"TROUPE_SERVE_TEST_CLUSTER_UNSET\"\n"),
               Catch::Contains("cluster.secret_env: the environment variable TROUPE_SERVE_TEST_CLUSTER_UNSET"));
    ::setenv("TROUPE_SERVE_TEST_CLUSTER_SHORT", "short", 1);
    CHECK_THAT(
        refusal(agent + key + "[cluster]\ndatabase = \"" + db +
                "\"\nsecret_env = \"TROUPE_SERVE_TEST_CLUSTER_SHORT\"\n"),
        Catch::Contains("cluster.secret_env: the secret in TROUPE_SERVE_TEST_CLUSTER_SHORT must have at least 16") &&
            !Catch::Contains("\"short\""));
  }
  SECTION("a database that is not PostgreSQL, or a store elsewhere, is refused naming the field") {
    CHECK_THAT(refusal(agent + key + cluster + "database = \"sqlite:/tmp/x.db\"\n"),
               Catch::Contains("cluster.database: must be a PostgreSQL URI"));
    CHECK_THAT(refusal("store = \"sqlite:/tmp/x.db\"\n" + agent + key + cluster + "database = \"" + db + "\"\n"),
               Catch::Contains("store: a cluster node keeps its conversations in the cluster's database"));
    CHECK(parse_config("store = \"" + db + "\"\n" + agent + key + cluster + "database = \"" + db + "\"\n", "serve.toml",
                       "")
              .cluster.enabled());
  }
  SECTION("bad timings, shards, addresses and unknown fields are refused naming the field") {
    const std::string base = agent + key + cluster + "database = \"" + db + "\"\n";
    CHECK_THAT(refusal(base + "heartbeat_interval_seconds = 0\n"),
               Catch::Contains("cluster.heartbeat_interval_seconds: must be a number of seconds, positive"));
    CHECK_THAT(refusal(base + "heartbeat_interval_seconds = 5\ndead_after_seconds = 5\n"),
               Catch::Contains("cluster.dead_after_seconds: dead_after_seconds must be longer"));
    CHECK_THAT(refusal(base + "heartbeat_interval_seconds = 20\n"),
               Catch::Contains("cluster.heartbeat_interval_seconds: dead_after_seconds must be longer"));
    CHECK_THAT(refusal(base + "shards = 0\n"), Catch::Contains("cluster.shards: must be between"));
    CHECK_THAT(refusal(base + "listen = \"nowhere\"\n"), Catch::Contains("cluster.listen:"));
    CHECK_THAT(refusal(base + "listen = \"0.0.0.0:4100\"\n"),
               Catch::Contains("cluster.listen: the other nodes reach this node at this address"));
    CHECK_THAT(refusal(base + "drain_timeout_seconds = -1\n"), Catch::Contains("cluster.drain_timeout_seconds"));
    CHECK_THAT(refusal(base + "heartbeat = 1\n"), Catch::Contains("cluster.heartbeat: is not a known field"));
  }
  SECTION("--cluster sets the database over the file's, and is checked as the file's") {
    serve_config c = parse_config(agent + key + cluster + "database = \"" + db + "\"\n", "serve.toml", "");
    set_cluster(c, "postgresql://other/agents");
    CHECK(c.cluster.database == "postgresql://other/agents");
    serve_config plain = parse_config(agent + key, "serve.toml", "");
    ::setenv("TROUPE_CLUSTER_SECRET", "default-variable-secret-0123", 1);
    set_cluster(plain, db);
    CHECK(plain.cluster.secret == "default-variable-secret-0123");
    ::unsetenv("TROUPE_CLUSTER_SECRET");
    serve_config unset = parse_config(agent + key, "serve.toml", "");
    CHECK_THROWS_WITH(set_cluster(unset, db), Catch::Contains("cluster.secret_env: the environment variable "
                                                              "TROUPE_CLUSTER_SECRET"));
    CHECK_THROWS_WITH(set_cluster(c, "mysql://x"), Catch::Contains("cluster.database: must be a PostgreSQL URI"));
    serve_config stored = parse_config("store = \"memory:\"\n" + agent + key, "serve.toml", "");
    ::setenv("TROUPE_CLUSTER_SECRET", "default-variable-secret-0123", 1);
    CHECK_THROWS_WITH(set_cluster(stored, db), Catch::Contains("store: a cluster node keeps its conversations"));
    ::unsetenv("TROUPE_CLUSTER_SECRET");
  }
}

TEST_CASE("keys") {
  key_table keys({{"sk-0123456789abcdef", "u"}, {"sk-fedcba9876543210", "v"}});
  SECTION("a known bearer key names its user") {
    CHECK(keys.user_of("Bearer sk-0123456789abcdef") == "u");
    CHECK(keys.user_of("bearer sk-fedcba9876543210") == "v");
  }
  SECTION("an unknown, truncated or extended key, or another scheme, names nobody") {
    CHECK_FALSE(keys.user_of("Bearer sk-0123456789abcde"));
    CHECK_FALSE(keys.user_of("Bearer sk-0123456789abcdef0"));
    CHECK_FALSE(keys.user_of("Basic sk-0123456789abcdef"));
    CHECK_FALSE(keys.user_of("Bearer "));
    CHECK_FALSE(keys.user_of(""));
  }
  SECTION("the comparison needs the whole key") {
    CHECK(constant_time_equal("abc", "abc"));
    CHECK_FALSE(constant_time_equal("abd", "abc"));
    CHECK_FALSE(constant_time_equal("", "abc"));
    CHECK_FALSE(constant_time_equal("abcabc", "abc"));
  }
}

TEST_CASE("the router") {
  router r;
  int hit = 0;
  r.add(http::verb::get, "/v1/conversations/{id}", [&](const auto&) { hit = 1; });
  r.add(http::verb::post, "/v1/conversations/{platform}/{chat_id}/messages", [&](const auto&) { hit = 2; });
  SECTION("matches a pattern and reads its parameters") {
    auto m = r.find(http::verb::post, {"v1", "conversations", "web", "c 1", "messages"});
    REQUIRE(m.found);
    CHECK(m.params == path_params{{"platform", "web"}, {"chat_id", "c 1"}});
  }
  SECTION("tells a path with another method from an unknown path") {
    auto m = r.find(http::verb::put, {"v1", "conversations", "x"});
    CHECK_FALSE(m.found);
    CHECK(m.path_known);
    CHECK_FALSE(r.find(http::verb::get, {"v1", "nothing"}).path_known);
  }
  SECTION("does not match an empty parameter") {
    CHECK_FALSE(r.find(http::verb::get, {"v1", "conversations", ""}).found);
  }
}

TEST_CASE("double texting") {
  SECTION("a conversation without a running turn starts one under every policy") {
    for (auto p : {double_texting::enqueue, double_texting::reject, double_texting::interrupt})
      CHECK(admit(p, 0, 0) == admission_verdict::start);
  }
  SECTION("enqueue queues up to the bound, then is full") {
    CHECK(admit(double_texting::enqueue, 1, 2) == admission_verdict::start);
    CHECK(admit(double_texting::enqueue, 2, 2) == admission_verdict::start);
    CHECK(admit(double_texting::enqueue, 3, 2) == admission_verdict::queue_full);
  }
  SECTION("reject refuses while a turn runs; interrupt replaces it") {
    CHECK(admit(double_texting::reject, 1, 10) == admission_verdict::busy);
    CHECK(admit(double_texting::interrupt, 1, 0) == admission_verdict::start_after_interrupt);
  }
}

TEST_CASE("a rate limiter's buckets") {
  using namespace std::chrono_literals;
  const auto t0 = rate_limiter::clock::time_point{} + 1h;
  SECTION("a burst is taken whole, then the next token is waited for") {
    rate_limiter r(2, 3);
    for (int i = 0; i < 3; ++i) CHECK_FALSE(r.take("u", t0));
    CHECK(r.take("u", t0) == 1s);
    CHECK_FALSE(r.take("u", t0 + 500ms));
    CHECK(r.take("u", t0 + 500ms) == 1s);
  }
  SECTION("the wait is rounded up to whole seconds") {
    rate_limiter r(0.1, 1);
    CHECK_FALSE(r.take("u", t0));
    CHECK(r.take("u", t0 + 1500ms) == 9s);
  }
  SECTION("tokens come back no further than the burst") {
    rate_limiter r(1, 2);
    CHECK_FALSE(r.take("u", t0));
    CHECK_FALSE(r.take("u", t0 + 1h));
    CHECK_FALSE(r.take("u", t0 + 1h));
    CHECK(r.take("u", t0 + 1h));
  }
  SECTION("each user has their own bucket") {
    rate_limiter r(1, 1);
    CHECK_FALSE(r.take("u", t0));
    CHECK(r.take("u", t0));
    CHECK_FALSE(r.take("v", t0));
  }
  SECTION("a rate of 0 is no limit") {
    rate_limiter r(0, 0);
    for (int i = 0; i < 100; ++i) CHECK_FALSE(r.take("u", t0));
  }
}
