#pragma once
// The tools a runtime knows, by name. Each tool's JSON Schema is compiled once
// when it is added; arguments are validated against it before every call.
// Safe to use from several threads.

#include "runtime/tools/tool.hpp"

#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace troupe {

class registered_tool;

class tool_registry {
 public:
  tool_registry();
  ~tool_registry();

  // Adds or replaces a tool. A schema valijson cannot read, or could not
  // compile or apply without recursing forever or too deep (schema_hazard),
  // is refused with std::invalid_argument naming the tool.
  void add(tool t);
  bool remove(std::string_view name);
  std::shared_ptr<const registered_tool> find(std::string_view name) const;
  std::vector<std::string> names() const;

  // The specs of the named tools, for an agent's configuration. Unknown names
  // are reported as an invalid_argument listing them.
  tool_set specs(const std::vector<std::string>& names) const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const registered_tool>> tools_;
};

// The outcome of one attempt, and whether it may be tried again.
struct tool_attempt {
  tool_outcome outcome;
  bool retryable = false;
};

class registered_tool {
 public:
  explicit registered_tool(tool t);
  ~registered_tool();

  const tool& definition() const { return tool_; }
  // An invalid_arguments error describing the first violation, or nullopt.
  std::optional<error_info> validate(const boost::json::object& arguments) const;
  // Validates, then runs the function once. Never throws: exceptions become
  // typed errors (tool_failure keeps its type, anything else is tool_failed).
  tool_attempt run_once(const boost::json::object& arguments, const tool_context& ctx) const;
  // For an asynchronous tool: validates, then starts it. Never throws:
  // invalid arguments and exceptions from start() reach `finish` as errors.
  // Returns what stops the work, or an empty function.
  std::function<void()> start_once(const boost::json::object& arguments, const tool_context& ctx,
                                   tool_finish finish) const;
  bool is_async() const { return static_cast<bool>(tool_.start); }

 private:
  struct compiled_schema;
  tool tool_;
  std::unique_ptr<compiled_schema> schema_;
};

}  // namespace troupe
