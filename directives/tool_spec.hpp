#pragma once
// A tool as a model sees it: a name, what it does, and a JSON Schema for its
// arguments.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

struct tool_spec {
  std::string name;
  std::string description;
  boost::json::object parameters;  // a JSON Schema object
  // A question for a person (ask_human): a call never runs; it waits for a
  // decision, as a call that needs approval does, and the person's response
  // is its result.
  bool answered_by_person = false;
  // Its calls ask another agent (an agent used as a tool): when that agent
  // pauses for a person, the call's result says so (strategy/inner_pause.hpp)
  // and the call waits here for the same decisions, passed down to it.
  bool relays_approvals = false;

  friend bool operator==(const tool_spec&, const tool_spec&) = default;
};

// The tools of an agent, shared immutably between its configuration and every
// llm_stream directive, so that a model call never deep-copies the schemas.
using tool_set = std::shared_ptr<const std::vector<tool_spec>>;

inline tool_set make_tool_set(std::vector<tool_spec> tools) {
  return std::make_shared<const std::vector<tool_spec>>(std::move(tools));
}

// The spec with that name, or nullptr.
inline const tool_spec* find_tool(const tool_set& tools, std::string_view name) {
  if (!tools) return nullptr;
  for (const auto& t : *tools)
    if (t.name == name) return &t;
  return nullptr;
}

boost::json::value to_json(const tool_spec& t);

}  // namespace troupe
