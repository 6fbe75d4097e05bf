#include "simulation/run_scenario.hpp"

#include "json/json_parse.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "runtime/random_ids.hpp"
#include "runtime/store/memory_store.hpp"
#include "runtime/store/sqlite/sqlite_store.hpp"
#include "support/sqlite_file.hpp"
#include "support/tally_world.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

scenario tally_scenario(std::size_t agents, std::int64_t rounds) {
  scenario s;
  s.name = "tally";
  s.seed = 7;
  population_group g;
  g.name = "counters";
  g.count = agents;
  s.groups = {g};
  s.world.kind = "tally";
  s.workflow = {run_rounds{rounds}};
  return s;
}

struct temp_log {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("troupe-events-" + random_ids().next("log") + ".jsonl");
  ~temp_log() { std::filesystem::remove(path); }
  std::string text() const {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::vector<json::object> events() const {
    std::vector<json::object> out;
    std::istringstream in(text());
    for (std::string line; std::getline(in, line);) {
      out.push_back(parse_json(line).as_object());
    }
    return out;
  }
};

struct tally_run {
  std::shared_ptr<tally_record> world;
  scenario_report report;
};

scenario_run_options tally_options(std::shared_ptr<tally_record>& out, policy_function policy = tally_policy()) {
  out = std::make_shared<tally_record>();
  scenario_run_options o;
  o.worlds["tally"] = [record = out](const scenario&) { return std::make_unique<tally_world>(record); };
  o.policies["tally"] = std::move(policy);
  o.scheduler_threads = 2;
  return o;
}

std::vector<json::object> of_kind(const std::vector<json::object>& events, std::string_view kind) {
  std::vector<json::object> out;
  for (const auto& e : events)
    if (e.at("event").as_string() == kind) out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("a round activates each agent once with what reached it and applies the actions at its end") {
  std::shared_ptr<tally_record> world;
  auto options = tally_options(world);
  auto store = std::make_shared<memory_store>();
  options.store = store;
  temp_log log;
  options.event_log = log.path.string();
  scenario_progress progress;
  const auto report = run_scenario(tally_scenario(6, 2), options, progress);

  SECTION("every agent acts in every round, and the world holds the sum") {
    CHECK(report.activations == 12);
    CHECK(report.activations_failed == 0);
    CHECK(report.rounds == 2);
    CHECK(world->tally == 2 * (1 + 2 + 3 + 1 + 2 + 3));
    CHECK(report.actions.at("add") == 12);
  }
  SECTION("the world applies a round's actions in agent order") {
    REQUIRE(world->order.size() == 12);
    for (std::size_t i = 0; i < 6; ++i) {
      INFO("action " << i << ": agent " << world->order[i].agent << ", seq " << world->order[i].seq);
      CHECK(world->order[i] == action_key{static_cast<std::uint32_t>(i), 0});
    }
  }
  SECTION("the observation is committed to the agent's thread as the user's turn, with its origin") {
    auto t = store->load("counters-1:default");
    REQUIRE(t.has_value());
    const entry& first = *t->entries().begin();
    CHECK(first.payload.at("role") == "user");
    CHECK(first.payload.at("observation") == json::object{{"source", "tally"}, {"round", 1}});
    CHECK_THAT(std::string(first.payload.at("content").as_string()), Catch::Contains("The tally is 0."));
  }
  SECTION("the second round's observation tells what the first one did") {
    const auto activations = of_kind(log.events(), "activation");
    REQUIRE(activations.size() == 12);
    CHECK(activations[6].at("round") == 2);
    CHECK(activations[6].at("observation") == json::object{{"tally", 12}});
  }
  SECTION("the event log has each round's actions and its end") {
    const auto events = log.events();
    CHECK(events.front().at("event") == "run");
    CHECK(of_kind(events, "action").size() == 12);
    const auto ends = of_kind(events, "round_end");
    REQUIRE(ends.size() == 2);
    CHECK(ends[1].at("world") == json::object{{"tally", 24}});
  }
}

TEST_CASE("a round with more agents than its concurrency asks them all, refilling as answers come back") {
  std::shared_ptr<tally_record> world;
  auto options = tally_options(world);
  auto s = tally_scenario(150, 2);
  s.concurrency = 40;  // refilled in steps of more than one
  scenario_progress progress;
  const auto report = run_scenario(s, options, progress);
  CHECK(report.activations == 300);
  CHECK(report.activations_failed == 0);
  CHECK(world->order.size() == 300);
}

TEST_CASE("two runs with the same seed write the same event log, byte for byte") {
  auto run_once = [](std::uint64_t seed) {
    std::shared_ptr<tally_record> world;
    auto options = tally_options(world);
    temp_log log;
    options.event_log = log.path.string();
    auto s = tally_scenario(40, 3);
    s.seed = seed;
    s.clock.mode = activation_mode::probability;
    s.clock.probability = 0.5;
    s.concurrency = 7;
    scenario_progress progress;
    run_scenario(s, options, progress);
    return log.text();
  };
  const std::string first = run_once(11);
  CHECK(first == run_once(11));
  CHECK(first != run_once(12));
}

TEST_CASE("an action the world refuses is the model's tool error and is not applied") {
  std::shared_ptr<tally_record> world;
  auto options = tally_options(world, tally_policy({0}));
  temp_log log;
  options.event_log = log.path.string();
  scenario_progress progress;
  const auto report = run_scenario(tally_scenario(3, 1), options, progress);

  CHECK(world->tally == 2 + 3);
  CHECK(report.activations_failed == 0);
  CHECK(report.per_round.at(0).refused == 1);
  const auto refused = of_kind(log.events(), "refused");
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].at("agent") == "counters-1");
  CHECK(refused[0].at("error").at("type") == "too_much");
}

TEST_CASE("a failed activation is recorded with its type and the round goes on") {
  std::shared_ptr<tally_record> world;
  auto options = tally_options(world);
  options.provider = std::make_shared<scripted_provider>(
      [](const llm_stream&) { return scripted_reply::failure(error_info::of("server", "the model is down")); });
  auto s = tally_scenario(4, 2);
  population_group broken;
  broken.name = "broken";
  broken.count = 2;
  broken.model = "m";
  s.groups.push_back(broken);
  temp_log log;
  options.event_log = log.path.string();
  scenario_progress progress;
  const auto report = run_scenario(s, options, progress);

  CHECK(report.rounds == 2);
  CHECK(report.activations == 12);
  CHECK(report.activations_failed == 4);
  CHECK(report.errors_by_type.at("server") == 4);
  CHECK(world->tally == 2 * (1 + 2 + 3 + 1));
  const auto activations = of_kind(log.events(), "activation");
  CHECK(activations[4].at("agent") == "broken-1");
  CHECK(activations[4].at("error").at("type") == "server");
}

TEST_CASE("an interview asks a sample on a thread of its own, and the world never sees it") {
  std::shared_ptr<tally_record> world;
  auto options = tally_options(world);
  auto store = std::make_shared<memory_store>();
  options.store = store;
  temp_log log;
  options.event_log = log.path.string();
  auto s = tally_scenario(10, 1);
  s.workflow = {run_rounds{1}, interview{"How do you feel about the tally?", 3, ""}, run_rounds{1}};
  scenario_progress progress;
  const auto report = run_scenario(s, options, progress);

  CHECK(report.interviews == 3);
  CHECK(world->tally == 2 * 19);
  const auto answers = of_kind(log.events(), "interview");
  REQUIRE(answers.size() == 3);
  for (const auto& a : answers) {
    CHECK(a.at("question") == "How do you feel about the tally?");
    CHECK(a.contains("answer"));
    CHECK(store->load(std::string(a.at("agent").as_string()) + ":interview").has_value());
  }
}

TEST_CASE("an intervention is applied at the end of the next round, after the agents' actions") {
  std::shared_ptr<tally_record> world;
  auto options = tally_options(world);
  auto s = tally_scenario(3, 1);
  s.workflow = {inject_action{"add", "", json::object{{"n", 5}}}, run_rounds{1}};
  scenario_progress progress;
  run_scenario(s, options, progress);

  CHECK(world->tally == 1 + 2 + 3 + 5);
  CHECK(world->order.back() == action_key{operator_agent, 0});
}

TEST_CASE("the events clock wakes only the agents something reached") {
  std::shared_ptr<tally_record> world;
  auto options = tally_options(world, tally_policy({0}));
  auto s = tally_scenario(4, 2);
  s.clock.mode = activation_mode::events;
  scenario_progress progress;
  const auto report = run_scenario(s, options, progress);

  REQUIRE(report.per_round.size() == 2);
  CHECK(report.per_round[0].active == 4);
  CHECK(report.per_round[1].active == 3);  // agent 0's action was refused: nothing of it reached anyone
}

TEST_CASE("a scenario naming a world nobody registered is refused before anything runs") {
  auto s = tally_scenario(2, 1);
  s.world.kind = "nowhere";
  scenario_progress progress;
  CHECK_THROWS_AS(run_scenario(s, {}, progress), scenario_run_error);
}

TEST_CASE("a resumed run continues from its last committed round and writes the log an uninterrupted one would") {
  temp_log whole;
  {
    std::shared_ptr<tally_record> world;
    auto options = tally_options(world);
    options.event_log = whole.path.string();
    scenario_progress progress;
    run_scenario(tally_scenario(5, 4), options, progress);
  }

  sqlite_file db;
  temp_log log;
  std::atomic<bool> stop{false};
  {
    std::shared_ptr<tally_record> world;
    // Stops the run while agents act in round 3: that round is never applied.
    auto options = tally_options(world, [&stop, inner = tally_policy()](const policy_input& in) {
      if (in.round == 3 && in.agent == 2) stop = true;
      return inner(in);
    });
    options.store = std::make_shared<sqlite_store>(db.path.string());
    options.event_log = log.path.string();
    options.stop = &stop;
    scenario_progress progress;
    const auto report = run_scenario(tally_scenario(5, 4), options, progress);
    CHECK(report.stopped);
    CHECK(report.rounds == 2);
  }
  std::shared_ptr<tally_record> world;
  auto options = tally_options(world);
  options.store = std::make_shared<sqlite_store>(db.path.string());
  options.event_log = log.path.string();
  options.resume = true;
  scenario_progress progress;
  const auto report = run_scenario(tally_scenario(5, 4), options, progress);

  CHECK(report.resumed_after == 2);
  CHECK(report.rounds == 4);
  CHECK(world->tally == 4 * (1 + 2 + 3 + 1 + 2));
  CHECK(log.text() == whole.text());
}
