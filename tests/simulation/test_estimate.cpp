#include "simulation/estimate.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
namespace json = boost::json;

namespace {

// Sizes easy to add up by hand: a tool's schema (JSON text) counts 100
// tokens, any other text a token a byte, a message 1 more.
class counting_estimator final : public token_estimator {
 public:
  std::int64_t text(std::string_view s) const override {
    return !s.empty() && s.front() == '{' ? 100 : static_cast<std::int64_t>(s.size());
  }
  std::int64_t per_message() const override { return 1; }
};

tool_spec action(std::string name) { return tool_spec{std::move(name), "an action", json::object{{"type", "object"}}}; }

// 10 scripted agents and 4 on model "m" ($2 in, $10 out per million), a
// probability clock (0.5, weighted 1 at 8:00, 0.5 at 9:00, 2 at 10:00),
// 2 rounds, an interview of 7 agents drawn from all 14, then 1 round.
scenario small_scenario() {
  scenario s;
  s.name = "small";
  population_group crowd;
  crowd.name = "crowd";
  crowd.count = 10;
  population_group experts;
  experts.name = "experts";
  experts.count = 4;
  experts.model = "m";
  experts.persona = "You are {name}.";  // 15 bytes
  experts.actions = {"post", "like"};
  experts.context.max_input_tokens = 1000;
  experts.context.reserve_output_tokens = 200;
  experts.context.keep_last_turns = 2;
  s.groups = {crowd, experts};
  s.world.feed_size = 2;
  s.world.inbox_size = 1;
  s.clock.mode = activation_mode::probability;
  s.clock.probability = 0.5;
  std::array<double, 24> hourly{};
  hourly.fill(1.0);
  hourly[9] = 0.5;
  hourly[10] = 2.0;
  s.clock.hourly = hourly;
  s.clock.start_hour = 8;
  s.clock.minutes_per_round = 60;
  s.workflow = {run_rounds{2}, interview{"How are you?", 7, ""}, run_rounds{1}};  // the question: 12 bytes
  s.prices["m"] = model_price{2.0, 10.0};
  return s;
}

counting_estimator counting;

estimate_inputs small_inputs() {
  estimate_inputs in;
  in.world_actions = {action("post"), action("like"), action("repost")};
  in.observation_overhead_tokens = 10;
  in.tokens_per_post = 20;
  in.tokens_per_message = 5;
  in.action_call_tokens = 7;
  in.tool_result_tokens = 3;
  in.answer_tokens = 6;
  in.interview_answer_tokens = 50;
  in.estimator = &counting;
  return in;
}

}  // namespace

// By hand, for the experts: tools 2 x 100 = 200; persona 15 + 1 = 16;
// observation 10 + 2 x 20 + 1 x 5 + 1 = 56; acting (call 7 + 1, result 3 + 1)
// = 12; an earlier turn 56 + 12 + 6 + 1 = 75, at most 1 kept (keep_last_turns
// 2 counts the current one). Probabilities 0.5, 0.25, 1; an agent's expected
// earlier activations 0, 0.5, 0.75.
//   round 1: 2 activations x (272 + 284)           = 1112 in, 2 x 13 out
//   round 2: 1 activation  x (309.5 + 321.5)       =  631 in, 13 out
//   round 3: 4 activations x (328.25 + 340.25)     = 2674 in, 52 out
//   interview: 7 x 4/14 = 2 asked x (200 + 16 + 12 + 1) = 458 in, 2 x 50 out
TEST_CASE("estimate: a probability clock with hourly weights, by hand") {
  const auto e = estimate_scenario(small_scenario(), small_inputs());
  REQUIRE(e.groups.size() == 2);
  const auto& crowd = e.groups[0];
  const auto& experts = e.groups[1];

  SECTION("the clock's probability per round follows the hour's weight, capped at 1") {
    CHECK(e.rounds == 3);
    REQUIRE(e.activation_probability.size() == 3);
    CHECK(e.activation_probability[0] == Approx(0.5));
    CHECK(e.activation_probability[1] == Approx(0.25));
    CHECK(e.activation_probability[2] == Approx(1.0));
    CHECK_FALSE(e.upper_bound);
  }
  SECTION("a scripted group is activated but makes no model call and costs nothing") {
    CHECK(crowd.scripted);
    CHECK(crowd.activations == Approx(17.5));
    CHECK(crowd.model_calls == 0);
    CHECK(crowd.input_tokens == 0);
    CHECK(crowd.cost == 0);
  }
  SECTION("a model group: two calls an activation, one an interview") {
    CHECK(experts.activations == Approx(7));
    CHECK(experts.interview_calls == Approx(2));
    CHECK(experts.model_calls == Approx(16));
  }
  SECTION("a model group's tokens: persona, tools, observation, kept history") {
    CHECK(experts.first_call_input_tokens == 272);
    CHECK(experts.max_call_input_tokens == 340);
    CHECK(experts.input_tokens == Approx(1112 + 631 + 2674 + 458));
    CHECK(experts.output_tokens == Approx(26 + 13 + 52 + 100));
  }
  SECTION("cost from the price table") {
    CHECK(experts.priced);
    CHECK(experts.cost == Approx((4875 * 2.0 + 191 * 10.0) / 1e6));
  }
  SECTION("the total adds the groups") {
    CHECK(e.total.agents == 14);
    CHECK(e.total.activations == Approx(24.5));
    CHECK(e.total.model_calls == Approx(16));
    CHECK(e.total.input_tokens == Approx(4875));
    CHECK(e.total.cost == Approx(experts.cost));
  }
}

TEST_CASE("estimate: the conversation is cut to the context's budget, the schemas come on top") {
  auto s = small_scenario();
  s.groups[1].context.max_input_tokens = 300;  // a budget of 100 for persona, observation and history
  const auto e = estimate_scenario(s, small_inputs());
  const auto& experts = e.groups[1];
  CHECK(experts.first_call_input_tokens == 272);  // 72 fits
  CHECK(experts.max_call_input_tokens == 300);    // 140.25 is cut to 100
}

TEST_CASE("estimate: keep_last_turns 0 keeps every earlier turn") {
  auto s = small_scenario();
  s.groups[1].context.keep_last_turns = 0;
  s.workflow = {run_rounds{3}};
  s.clock.mode = activation_mode::every_round;
  const auto e = estimate_scenario(s, small_inputs());
  // Round 3: two earlier turns of 75: 200 + 16 + 56 + 12 + 150.
  CHECK(e.groups[1].max_call_input_tokens == 434);
  CHECK(e.groups[1].activations == Approx(12));
}

TEST_CASE("estimate: an events clock is an upper bound, every agent after round 1") {
  auto s = small_scenario();
  s.clock.mode = activation_mode::events;
  const auto e = estimate_scenario(s, small_inputs());
  CHECK(e.upper_bound);
  REQUIRE(e.activation_probability.size() == 3);
  CHECK(e.activation_probability[0] == Approx(0.5));
  CHECK(e.activation_probability[1] == 1.0);
  CHECK(e.activation_probability[2] == 1.0);
  CHECK(e.groups[0].activations == Approx(25));
  const std::string text = format_estimate(e);
  CHECK_THAT(text, Catch::Contains("an upper bound"));
}

TEST_CASE("estimate: an empty workflow is one round") {
  auto s = small_scenario();
  s.workflow.clear();
  const auto e = estimate_scenario(s, small_inputs());
  CHECK(e.rounds == 1);
  CHECK(e.groups[1].activations == Approx(2));
}

TEST_CASE("estimate: a model without a price costs 0 and the estimate says so") {
  auto s = small_scenario();
  s.prices.clear();
  const auto e = estimate_scenario(s, small_inputs());
  CHECK_FALSE(e.groups[1].priced);
  CHECK(e.groups[1].cost == 0);
  const std::string text = format_estimate(e);
  CHECK_THAT(text, Catch::Contains("no price"));
  CHECK_THAT(text, Catch::Contains("No price for the model \"m\""));
}

TEST_CASE("estimate: a tool the inputs do not hold is an error naming it") {
  auto s = small_scenario();
  s.groups[1].tools = {"web_search"};
  CHECK_THROWS_MATCHES(
      estimate_scenario(s, small_inputs()), estimate_error,
      Catch::Message("group \"experts\" names the tool \"web_search\", which the estimate was not given"));
  s.groups[1].tools.clear();
  s.groups[1].actions = {"shout"};
  CHECK_THROWS_AS(estimate_scenario(s, small_inputs()), estimate_error);
}

TEST_CASE("estimate: a group that lists no actions sends every world action's schema") {
  auto s = small_scenario();
  s.groups[1].actions.clear();
  const auto e = estimate_scenario(s, small_inputs());
  CHECK(e.groups[1].first_call_input_tokens == 372);  // three schemas of 100
}

TEST_CASE("estimate: the table and the JSON form") {
  const auto e = estimate_scenario(small_scenario(), small_inputs());
  const std::string text = format_estimate(e);
  SECTION("the table has a row per group and the total, with grouped figures and dollars") {
    CHECK_THAT(text, Catch::Contains("Estimate for \"small\": 14 agents, 3 rounds, probability clock\n"));
    CHECK_THAT(text, Catch::Contains("Expected activations per round: 7 4 14\n"));
    CHECK_THAT(text, Catch::Matches("(.|\n)*\ncrowd +10 +scripted +18 +scripted +0 +0 +\\$0\n(.|\n)*"));
    CHECK_THAT(text, Catch::Matches("(.|\n)*\nexperts +4 +m +7 +16 +4,875 +191 +\\$0.0117\n(.|\n)*"));
    CHECK_THAT(text, Catch::Matches("(.|\n)*\ntotal +14 +25 +16 +4,875 +191 +\\$0.0117\n(.|\n)*"));
    CHECK_THAT(text, Catch::Contains("2 model calls per activation"));
    CHECK_THAT(text, Catch::Contains("Scripted groups make no model calls"));
  }
  SECTION("the JSON form holds the same figures") {
    const json::object j = estimate_json(e);
    CHECK(j.at("clock") == "probability");
    CHECK(j.at("agents") == 14);
    CHECK(j.at("groups").as_array().size() == 2);
    CHECK(j.at("groups").at(1).at("model_calls").as_double() == Approx(16));
    CHECK(j.at("total").at("input_tokens").as_double() == Approx(4875));
    CHECK(j.at("activation_probability").as_array().size() == 3);
    CHECK_FALSE(j.at("notes").as_array().empty());
  }
}
