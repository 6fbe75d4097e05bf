#pragma once
// Drives a react_thread one signal at a time with a deterministic clock and
// id source, and picks directives out of what a step returned.

#include "strategy/react_thread.hpp"

#include <boost/json.hpp>

#include <string>
#include <vector>

namespace troupe::testing {

inline tool_spec simple_tool(std::string name) {
  return {std::move(name), "a test tool", boost::json::object{{"type", "object"}}};
}

inline react_config config_with_tools(std::vector<std::string> names, int max_iterations = 10) {
  react_config c;
  c.system_prompt = "be brief";
  c.model = "test-model";
  std::vector<tool_spec> tools;
  for (auto& n : names) tools.push_back(simple_tool(std::move(n)));
  c.tools = make_tool_set(std::move(tools));
  c.max_iterations = max_iterations;
  return c;
}

inline tool_call call(std::string id, std::string name, boost::json::object args = {}) {
  return {std::move(id), std::move(name), std::move(args), std::nullopt};
}

inline llm_result answer(std::string call_id, std::string text, std::optional<token_usage> u = std::nullopt) {
  return {std::move(call_id), llm_completion{std::move(text), "", {}, u, "stop"}};
}

inline llm_result wants_tools(std::string call_id, std::vector<tool_call> calls,
                              std::optional<token_usage> u = std::nullopt) {
  return {std::move(call_id), llm_completion{"", "", std::move(calls), u, "tool_calls"}};
}

inline tool_result result_of(const tool_exec& t, boost::json::value v) {
  return {t.call_id, t.tool_call_id, t.tool_name, std::move(v)};
}

template <class T>
std::vector<T> all_of_type(const std::vector<directive>& ds) {
  std::vector<T> out;
  for (const auto& d : ds)
    if (const T* x = std::get_if<T>(&d)) out.push_back(*x);
  return out;
}

template <class T>
T only(const std::vector<directive>& ds) {
  auto xs = all_of_type<T>(ds);
  if (xs.size() != 1)
    throw std::runtime_error("expected exactly one " + std::string(typeid(T).name()) + ", got " +
                             std::to_string(xs.size()) + " of " + std::to_string(ds.size()));
  return xs.front();
}

struct harness {
  explicit harness(react_config c = config_with_tools({"search", "lookup"})) : config(std::move(c)) {}

  std::vector<directive> feed(const signal& s) {
    last = rt.apply(config, s, now += 10, ids);
    return last.directives;
  }
  // Asks a question and returns the llm_stream it starts.
  llm_stream ask(std::string request_id, std::string text) {
    return only<llm_stream>(feed(query{std::move(request_id), "t", std::move(text), {}}));
  }

  const thread& history() const { return rt.history(); }
  const react_state& state() const { return rt.state(); }

  react_config config;
  sequential_ids ids;
  react_thread rt{thread("t", 0)};
  std::int64_t now = 1000;
  applied last;
  std::vector<summarize> pending_summaries;
};

}  // namespace troupe::testing
