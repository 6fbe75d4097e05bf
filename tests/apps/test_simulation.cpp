#include "apps/simulation.hpp"

#include "json/json_text.hpp"
#include "runtime/store/memory_store.hpp"
#include "thread/thread_json.hpp"

#include <catch2/catch.hpp>

using namespace troupe;

TEST_CASE("a simulation of 1,000 agents completes every turn") {
  simulation_progress progress;
  const simulation_report r = run_simulation({.agents = 1'000, .turns = 3, .tools_per_turn = 2}, progress);
  CHECK(r.agents == 1'000);
  CHECK(r.turns_completed == 3'000);
  CHECK(r.turns_failed == 0);
  CHECK(r.llm_calls == 6'000);   // a tool turn and an answer per turn
  CHECK(r.tool_calls == 6'000);  // two per turn
  CHECK(r.seconds > 0);
  CHECK(r.turns_per_second > 0);
  CHECK(r.peak_rss_bytes > 0);
}

TEST_CASE("a simulation without tools answers at once") {
  simulation_progress progress;
  const simulation_report r = run_simulation({.agents = 20, .turns = 2, .tools_per_turn = 0}, progress);
  CHECK(r.turns_completed == 40);
  CHECK(r.llm_calls == 40);
  CHECK(r.tool_calls == 0);
}

TEST_CASE("a simulation of no turns ends at once, however many agents") {
  simulation_progress progress;
  const simulation_report r = run_simulation({.agents = 2'000, .turns = 0}, progress);
  CHECK(r.agents == 2'000);
  CHECK(r.turns_completed == 0);
  CHECK(r.turns_failed == 0);
  CHECK(r.llm_calls == 0);
}

namespace {

// Every agent's thread, as the JSON the CLI prints, one after another.
std::string threads_of(memory_store& store, std::size_t agents) {
  std::string out;
  for (std::size_t i = 0; i < agents; ++i) {
    auto t = store.load("sim-" + std::to_string(i) + ":default");
    REQUIRE(t.has_value());
    out += json_text(to_json(thread_view(*t))) + "\n";
  }
  return out;
}

std::string seeded_run(std::optional<std::uint64_t> seed) {
  auto store = std::make_shared<memory_store>();
  simulation_options o{.agents = 30, .turns = 2, .tools_per_turn = 1};
  o.store = store;
  o.seed = seed;
  simulation_progress progress;
  const simulation_report r = run_simulation(o, progress);
  REQUIRE(r.turns_completed == 60);
  return threads_of(*store, 30);
}

}  // namespace

TEST_CASE("a seeded simulation repeats to the byte") {
  const std::string first = seeded_run(7);
  SECTION("the same seed: the same ids, times and contents") { CHECK(seeded_run(7) == first); }
  SECTION("another seed: other ids") { CHECK(seeded_run(8) != first); }
  SECTION("no seed: other ids and times") { CHECK(seeded_run(std::nullopt) != first); }
}

TEST_CASE("a simulation reports its spawn and teardown times and the memory its agents hold") {
  simulation_progress progress;
  const simulation_report r = run_simulation({.agents = 500, .turns = 1}, progress);
  CHECK(progress.spawned == 500);
  CHECK(r.spawn_seconds > 0);
  CHECK(r.teardown_seconds > 0);
  CHECK(r.rss_bytes_after > 0);
}

// Against a model server: the test suite's local HTTP server.

#include "runtime/llm/http_llm_provider.hpp"
#include "support/fixtures.hpp"
#include "support/http_test_server.hpp"

using namespace troupe::testing;

namespace {

std::shared_ptr<http_llm_provider> provider_for(const http_test_server& server, int retries) {
  http_provider_options o;
  o.base_url = server.base_url() + "/v1";
  o.retry = llm_retry_policy{retries, std::chrono::milliseconds(1), std::chrono::milliseconds(5)};
  return std::make_shared<http_llm_provider>(o, std::make_shared<http_client>());
}

simulation_options against(std::shared_ptr<llm_provider> p, std::size_t agents, std::size_t turns) {
  simulation_options o;
  o.agents = agents;
  o.turns = turns;
  o.provider = std::move(p);
  o.model = "test-model";
  o.question = "Turn {turn} of agent {agent}";
  return o;
}

}  // namespace

TEST_CASE("50 agents x 3 turns against a local model server") {
  http_test_server server;
  for (int i = 0; i < 150; ++i) server.respond(scripted_http_response::sse(fixture("openai_text.sse"), 64));
  simulation_progress progress;
  const simulation_report r = run_simulation(against(provider_for(server, 0), 50, 3), progress);

  CHECK(r.turns_completed == 150);
  CHECK(r.turns_failed == 0);
  CHECK(r.llm_calls == 150);
  CHECK(r.turn_latency.samples == 150);
  CHECK(r.turn_latency.p50 > 0);
  CHECK(r.turn_latency.p50 <= r.turn_latency.p90);
  CHECK(r.turn_latency.p90 <= r.turn_latency.p99);
  CHECK(r.turn_latency.p99 <= r.turn_latency.max);
  CHECK(r.first_token.samples == 150);
  CHECK(r.first_token.p50 <= r.turn_latency.max);
  CHECK(r.own_time.samples == 150);
  CHECK(r.input_tokens == 150 * 12);
  CHECK(r.output_tokens == 150 * 3);
  CHECK(r.errors_by_type.empty());
  // Each turn's question went out with its placeholders filled in.
  bool saw = false;
  for (const auto& req : server.requests()) saw = saw || req.body.find("Turn 3 of agent 49") != std::string::npos;
  CHECK(saw);
}

TEST_CASE("a server that answers some requests with 429 or 500") {
  http_test_server server;
  auto refuse = [&] {
    for (int i = 0; i < 5; ++i)
      server.respond(scripted_http_response::json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "0"}}));
    for (int i = 0; i < 5; ++i) server.respond(scripted_http_response::json(500, R"({"error":{"message":"oops"}})"));
  };

  SECTION("without retries the failures are counted by type and the run goes on") {
    refuse();
    for (int i = 0; i < 30; ++i) server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
    simulation_progress progress;
    const simulation_report r = run_simulation(against(provider_for(server, 0), 10, 4), progress);
    CHECK(r.turns_completed == 30);
    CHECK(r.turns_failed == 10);
    CHECK(r.errors_by_type == std::map<std::string, std::size_t>{{"rate_limited", 5}, {"server", 5}});
    CHECK(r.retries == 0);
  }
  SECTION("with retries every turn completes and the retries are counted") {
    refuse();
    for (int i = 0; i < 40; ++i) server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
    simulation_progress progress;
    const simulation_report r = run_simulation(against(provider_for(server, 3), 10, 4), progress);
    CHECK(r.turns_completed == 40);
    CHECK(r.turns_failed == 0);
    CHECK(r.retries == 10);
    CHECK(server.request_count() == 50);
  }
}

TEST_CASE("the concurrency bound limits the turns in flight across all agents") {
  http_test_server server;
  for (int i = 0; i < 20; ++i) {
    auto slow = scripted_http_response::sse("");
    slow.chunks = {"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", "data: [DONE]\n\n"};
    slow.pause = std::chrono::milliseconds(20);  // keeps each answer in flight for a moment
    server.respond(slow);
  }
  simulation_options o = against(provider_for(server, 0), 10, 2);
  o.concurrency = 3;
  simulation_progress progress;
  const simulation_report r = run_simulation(o, progress);
  CHECK(r.turns_completed == 20);
  CHECK(server.max_in_flight() <= 3);
  CHECK(server.max_in_flight() >= 1);
}

TEST_CASE("stopping a run ends it cleanly with the totals so far") {
  http_test_server server;
  for (int i = 0; i < 8; ++i) {
    auto stalled = scripted_http_response::sse("data: {\"choices\":[{\"delta\":{\"content\":\"thinking\"}}]}\n\n");
    stalled.stall = true;
    server.respond(stalled);
  }
  std::atomic<bool> stop{false};
  simulation_options o = against(provider_for(server, 0), 8, 5);
  o.stop = &stop;
  simulation_progress progress;
  // The first progress tick stands for the user pressing Ctrl-C.
  const simulation_report r = run_simulation(o, progress, [&] { stop = true; });
  CHECK(r.stopped);
  CHECK(r.turns_completed == 0);
  CHECK(r.turns_failed == 8);  // the turns in flight, cancelled; no new ones started
  CHECK(r.errors_by_type == std::map<std::string, std::size_t>{{"cancelled", 8}});
}
