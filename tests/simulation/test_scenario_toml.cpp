// Scenario files that are valid read into the scenario they describe, with
// the documented defaults for what they leave out.

#include "context/context_choice.hpp"
#include "simulation/scenario_toml.hpp"

#include <catch2/catch.hpp>

using namespace troupe;

namespace {

const std::string fixtures = std::string(TROUPE_FIXTURES_DIR) + "/simulation";
const std::string examples = std::string(TROUPE_EXAMPLES_DIR) + "/scenarios/";

scenario parse(const std::string& text) { return parse_scenario(text, fixtures, "dir/town.toml"); }

const std::string one_group = "[[population]]\nname = \"residents\"\ncount = 10\n";

}  // namespace

TEST_CASE("a scenario file with only a population") {
  const scenario s = parse(one_group);
  SECTION("is named after its file") { CHECK(s.name == "town"); }
  SECTION("has one scripted group with the default policy") {
    REQUIRE(s.groups.size() == 1);
    population_group expected;
    expected.name = "residents";
    expected.count = 10;
    CHECK(s.groups[0] == expected);
    CHECK(s.groups[0].policy == scripted_policy{});
  }
  SECTION("takes every other default of scenario.hpp") {
    scenario expected;
    expected.name = "town";
    expected.groups = s.groups;
    expected.base_dir = fixtures;
    CHECK(s == expected);
  }
}

TEST_CASE("a scenario file that sets every key reads into the scenario it describes") {
  const std::string text = R"(
name = "town square"
seed = 7
concurrency = 500
activation_timeout_seconds = 30.5

[world]
kind = "social"
feed_size = 5
inbox_size = 3
graph = { kind = "watts_strogatz", k = 4, beta = 0.2 }
channels = [ { name = "news", description = "What the paper prints" }, { name = "gossip" } ]

[clock]
mode = "probability"
probability = 0.3
hourly = [0, 0, 0, 0, 0, 0, 0.5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.5, 0]
minutes_per_round = 30
start_hour = 6

[[population]]
name = "residents"
count = 20
policy = { post = 1, like = 2.5, do_nothing = 0 }
actions = ["post", "like", "do_nothing"]
persona = "You are {name}, {age}, from {city}; {{agent {id}}}."
profiles = "people.csv"
channels = ["news"]

[[population]]
name = "reporters"
count = 2
model = "gpt-4o-mini"
tools = ["calculator"]
context_policy = "short"
keep_last_turns = 5
max_iterations = 6
persona = "You report for {group}."

[[population.endpoints]]
url = "http://127.0.0.1:8000/v1"
api_key_env = "LOCAL_KEY"
max_concurrency = 64

[[population.endpoints]]
url = "https://api.example.com/v1"

[[workflow]]
run = 3

[[workflow]]
inject = { action = "post", as = "reporters-0", arguments = { text = "Breaking: the bridge is closed", tags = ["bridge", 1, 2.5, true], meta = { urgent = true } } }

[[workflow]]
interview = { question = "What do you think of the bridge?", sample = 5, group = "residents" }

[[workflow]]
checkpoint = true

[[workflow]]
run = 2

[prices]
"gpt-4o-mini" = { input = 0.15, output = 0.6 }
local = { input = 0, output = 0 }
)";

  scenario expected;
  expected.name = "town square";
  expected.seed = 7;
  expected.concurrency = 500;
  expected.activation_timeout_seconds = 30.5;
  expected.base_dir = fixtures;
  expected.world.feed_size = 5;
  expected.world.inbox_size = 3;
  expected.world.graph = {graph_kind::watts_strogatz};
  expected.world.graph.k = 4;
  expected.world.graph.beta = 0.2;
  expected.world.channels = {{"news", "What the paper prints"}, {"gossip", ""}};
  expected.clock.mode = activation_mode::probability;
  expected.clock.probability = 0.3;
  expected.clock.hourly =
      std::array<double, 24>{0, 0, 0, 0, 0, 0, 0.5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.5, 0};
  expected.clock.minutes_per_round = 30;
  expected.clock.start_hour = 6;

  population_group residents;
  residents.name = "residents";
  residents.count = 20;
  residents.policy.weights = {{"post", 1.0}, {"like", 2.5}, {"do_nothing", 0.0}};
  residents.actions = {"post", "like", "do_nothing"};
  residents.persona = "You are {name}, {age}, from {city}; {{agent {id}}}.";
  residents.profiles = "people.csv";
  residents.channels = {"news"};

  population_group reporters;
  reporters.name = "reporters";
  reporters.count = 2;
  reporters.model = "gpt-4o-mini";
  reporters.tools = {"calculator"};
  context_choice short_five;
  short_five.preset = "short";
  short_five.keep_last_turns = 5;
  reporters.context = resolve_context(short_five, "gpt-4o-mini");
  reporters.max_iterations = 6;
  reporters.persona = "You report for {group}.";
  reporters.endpoints = {{"http://127.0.0.1:8000/v1", "LOCAL_KEY", 64}, {"https://api.example.com/v1", "", 16}};
  expected.groups = {residents, reporters};

  inject_action inject{"post", "reporters-0"};
  inject.arguments = {{"text", "Breaking: the bridge is closed"},
                      {"tags", boost::json::array{"bridge", 1, 2.5, true}},
                      {"meta", boost::json::object{{"urgent", true}}}};
  expected.workflow = {run_rounds{3}, inject, interview{"What do you think of the bridge?", 5, "residents"},
                       checkpoint{}, run_rounds{2}};
  expected.prices = {{"gpt-4o-mini", {0.15, 0.6}}, {"local", {0, 0}}};

  const scenario s = parse(text);
  SECTION("the top-level keys") {
    CHECK(s.name == expected.name);
    CHECK(s.seed == expected.seed);
    CHECK(s.concurrency == expected.concurrency);
    CHECK(s.activation_timeout_seconds == expected.activation_timeout_seconds);
  }
  SECTION("the world") { CHECK(s.world == expected.world); }
  SECTION("the clock") { CHECK(s.clock == expected.clock); }
  SECTION("a scripted group") { CHECK(s.groups.at(0) == residents); }
  SECTION("a model group, its endpoints and its context policy as the command line resolves it") {
    CHECK(s.groups.at(1) == reporters);
    CHECK(s.groups.at(1).context.max_input_tokens == context_policy::short_context().max_input_tokens);
    CHECK(s.groups.at(1).context.keep_last_turns == 5);
  }
  SECTION("the workflow, step by step") { CHECK(s.workflow == expected.workflow); }
  SECTION("the prices") { CHECK(s.prices == expected.prices); }
  SECTION("all of it") { CHECK(s == expected); }
}

TEST_CASE("a scenario file's graph kinds") {
  const auto graph_of = [](const std::string& graph) {
    return parse("[world]\ngraph = " + graph + "\n" + one_group).world.graph;
  };
  SECTION("an edge list names a file beside the scenario") {
    const graph_spec g = graph_of("{ kind = \"edge_list\", path = \"edges.csv\" }");
    CHECK(g.kind == graph_kind::edge_list);
    CHECK(g.path == "edges.csv");
  }
  SECTION("Erdős–Rényi takes p") { CHECK(graph_of("{ kind = \"erdos_renyi\", p = 0.25 }").p == 0.25); }
  SECTION("Barabási–Albert takes m") {
    const graph_spec g = graph_of("{ kind = \"barabasi_albert\", m = 2 }");
    CHECK(g.kind == graph_kind::barabasi_albert);
    CHECK(g.m == 2);
  }
  SECTION("none is no graph") { CHECK(graph_of("{ kind = \"none\" }") == graph_spec{}); }
}

TEST_CASE("a scenario file's clock modes") {
  SECTION("events, with the probability of round 1") {
    const clock_spec c = parse("[clock]\nmode = \"events\"\nprobability = 0.1\n" + one_group).clock;
    CHECK(c.mode == activation_mode::events);
    CHECK(c.probability == 0.1);
  }
  SECTION("every_round") {
    CHECK(parse("[clock]\nmode = \"every_round\"\n" + one_group).clock.mode == activation_mode::every_round);
  }
}

TEST_CASE("a scenario file of a world other than the social one may name its own actions") {
  const scenario s = parse("[world]\nkind = \"market\"\n" + one_group +
                           "policy = { bid = 1, ask = 1 }\n[[workflow]]\ninject = { action = \"halt\" }\n");
  CHECK(s.world.kind == "market");
  CHECK(s.groups[0].policy.weights == std::map<std::string, double>{{"ask", 1}, {"bid", 1}});
  CHECK(std::get<inject_action>(s.workflow[0]).action == "halt");
}

TEST_CASE("a scenario file is read from disk with its folder as the base of its paths") {
  const scenario s = read_scenario(examples + "social.toml");
  CHECK(s.base_dir == std::string(TROUPE_EXAMPLES_DIR) + "/scenarios");
}

TEST_CASE("the example scenarios are valid") {
  SECTION("social.toml: a social network under an hourly clock") {
    const scenario s = read_scenario(examples + "social.toml");
    CHECK(s.world.kind == "social");
    CHECK(s.world.graph.kind == graph_kind::barabasi_albert);
    CHECK_FALSE(s.world.channels.empty());
    CHECK(s.clock.mode == activation_mode::probability);
    CHECK(s.clock.hourly.has_value());
    REQUIRE_FALSE(s.groups.empty());
    CHECK(s.groups[0].profiles == "profiles.csv");
    const auto has = [&](auto step) {
      return std::any_of(s.workflow.begin(), s.workflow.end(),
                         [](const workflow_step& w) { return std::holds_alternative<decltype(step)>(w); });
    };
    CHECK(has(run_rounds{}));
    CHECK(has(inject_action{}));
    CHECK(has(interview{}));
    CHECK(has(checkpoint{}));
  }
  SECTION("town_hall.toml: events, a small world and direct messages") {
    const scenario s = read_scenario(examples + "town_hall.toml");
    CHECK(s.clock.mode == activation_mode::events);
    CHECK(s.world.graph.kind == graph_kind::watts_strogatz);
    REQUIRE_FALSE(s.groups.empty());
    CHECK(
        std::all_of(s.groups.begin(), s.groups.end(), [](const population_group& g) { return g.model == "scripted"; }));
    const auto& w = s.groups[0].policy.weights;
    CHECK(w.at("send_message") > w.at("post"));
  }
}
