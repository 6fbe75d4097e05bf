#pragma once
// When a tool call waits for a person before it runs. The rules are part of
// the agent's configuration: the machine asks them with the call's arguments
// and nothing else, so the answer is a pure function of the call.

#include "signals/decision.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace troupe {

enum class approval_mode { never, always, predicate };

struct approval_rule {
  approval_mode mode = approval_mode::never;
  // For `predicate`: true when the call needs approval. One that throws
  // denies the call outright (fail closed): it never runs and never asks.
  std::function<bool(const boost::json::object& arguments)> needs_approval{};
  std::string reason{};  // shown with the request; empty: "<tool> requires approval"
  std::int64_t timeout_ms = 24 * 3'600'000;
  // What a pause becomes when nobody decided before its deadline: reject
  // (deny) unless the rule says approve. An edit is not a default.
  verdict on_expiry = verdict::reject;
};

// By tool name; shared and compared by identity, like the tool set.
using approval_rules = std::shared_ptr<const std::map<std::string, approval_rule, std::less<>>>;

// The rule for a tool, or nullptr when it has none.
inline const approval_rule* find_rule(const approval_rules& rules, std::string_view tool) {
  if (!rules) return nullptr;
  const auto it = rules->find(tool);
  return it == rules->end() ? nullptr : &it->second;
}

// What a rule says of one call's arguments.
struct approval_check {
  enum class outcome { run, ask, deny } what = outcome::run;
  std::string why;  // for ask: the reason shown; for deny: why the rule denied
};

inline approval_check check_approval(const approval_rules& rules, std::string_view tool,
                                     const boost::json::object& arguments) {
  const approval_rule* rule = find_rule(rules, tool);
  if (!rule || rule->mode == approval_mode::never) return {};
  const approval_check ask{approval_check::outcome::ask,
                           rule->reason.empty() ? std::string(tool) + " requires approval" : rule->reason};
  if (rule->mode == approval_mode::always) return ask;
  const std::string failed = "the approval rule of " + std::string(tool) + " failed";
  try {
    if (!rule->needs_approval) return {approval_check::outcome::deny, failed + ": it has no predicate"};
    return rule->needs_approval(arguments) ? ask : approval_check{};
  } catch (const std::exception& e) {
    return {approval_check::outcome::deny, failed + ": " + e.what()};
  } catch (...) {
    return {approval_check::outcome::deny, failed};
  }
}

}  // namespace troupe
