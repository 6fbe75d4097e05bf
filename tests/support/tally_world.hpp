#pragma once
// A world small enough to check by hand: one shared tally that agents add
// to. `add {n}` adds n (1..5; more is refused as too_much) at the round's
// end; an agent observes the tally and who added what since it last looked.

#include "runtime/tools/tool.hpp"
#include "simulation/run_scenario.hpp"
#include "world/world.hpp"

#include <boost/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace troupe::testing {

// What a run did to its tally world, kept past the run (which owns the world).
struct tally_record {
  std::int64_t tally = 0;
  std::vector<action_key> order;
};

class tally_world final : public world {
 public:
  explicit tally_world(std::shared_ptr<tally_record> record) : record_(std::move(record)) {}

  void populate(const std::vector<std::string>& ids) override {
    ids_ = ids;
    seen_until_.assign(ids.size(), 0);
  }

  std::vector<tool_spec> actions() const override {
    return {tool_spec{"add", "Adds n to the shared tally at the end of the round.",
                      boost::json::object{{"type", "object"},
                                          {"properties", {{"n", {{"type", "integer"}, {"minimum", 1}}}}},
                                          {"required", boost::json::array{"n"}},
                                          {"additionalProperties", false}}}};
  }

  boost::json::value check(const world_action& a) const override {
    const auto n = a.arguments.at("n").to_number<std::int64_t>();
    if (n > 5) throw tool_failure("too_much", "at most 5 at a time");
    return boost::json::object{{"will_add", n}, {"tally_now", tally_}};
  }

  world_observation observe(std::uint32_t agent, std::int64_t) const override {
    world_observation o;
    o.data = {{"tally", tally_}};
    std::string text = "The tally is " + std::to_string(tally_) + ".";
    for (const auto& [round, who, n] : history_)
      if (round > seen_until_[agent]) text += " " + who + " added " + std::to_string(n) + ".";
    o.text = text;
    o.empty = false;
    return o;
  }

  void apply(std::int64_t round, const std::vector<std::uint32_t>& activated,
             const std::vector<world_action>& actions) override {
    for (std::uint32_t a : activated) seen_until_[a] = round - 1;
    reached_.clear();
    for (const auto& a : actions) {
      const auto n = a.arguments.at("n").to_number<std::int64_t>();
      tally_ += n;
      record_->order.push_back(a.key);
      history_.push_back({round, a.key.agent == operator_agent ? "the operator" : ids_[a.key.agent], n});
      if (a.key.agent != operator_agent) reached_.push_back(a.key.agent);
    }
    record_->tally = tally_;
  }

  std::vector<std::uint32_t> reached() const override { return reached_; }
  boost::json::object round_figures() const override { return {{"tally", tally_}}; }

 private:
  struct added {
    std::int64_t round;
    std::string who;
    std::int64_t n;
  };
  std::vector<std::string> ids_;
  std::vector<std::int64_t> seen_until_;
  std::int64_t tally_ = 0;
  std::vector<added> history_;
  std::shared_ptr<tally_record> record_;
  std::vector<std::uint32_t> reached_;
};

// Agent i adds (i % 3) + 1 each round; one named in `greedy` asks for 9.
inline policy_function tally_policy(std::vector<std::uint32_t> greedy = {}) {
  return [greedy](const policy_input& in) {
    std::int64_t n = in.agent % 3 + 1;
    for (auto g : greedy)
      if (g == in.agent) n = 9;
    return std::vector<policy_action>{{"add", boost::json::object{{"n", n}}}};
  };
}

}  // namespace troupe::testing
