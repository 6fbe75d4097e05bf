// A tools/list response as an MCP server sends it: read as a JSON-RPC
// message, each listed tool decoded and registered, its input schema
// compiled by the tool registry (valijson), and arguments validated against
// it. A server controls all of it, so nothing it sends may crash us.

#include "fuzz_input.hpp"
#include "runtime/mcp/detail/json_rpc.hpp"
#include "runtime/mcp/detail/tool_adapter.hpp"
#include "runtime/tools/tool_registry.hpp"

#include <stdexcept>

using namespace troupe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::text(data, size);
  auto message = mcp::parse_rpc_message(input);
  const auto* response = std::get_if<mcp::rpc_response>(&message);
  const auto* result = response ? std::get_if<boost::json::object>(&response->outcome) : nullptr;
  const auto* tools = result ? result->if_contains("tools") : nullptr;
  if (!tools || !tools->is_array()) return 0;
  // Validated against every schema taken: nothing, and the response's own
  // "arguments" when it has an object there (a place for the fuzzer to grow
  // values that recurse through a schema).
  boost::json::object arguments;
  if (const auto* a = result->if_contains("arguments"); a && a->is_object()) arguments = a->as_object();

  tool_registry registry;
  for (const auto& listed : tools->as_array()) {
    auto decoded = mcp::decode_listed_tool(listed, "fuzz", !input.empty() && input.back() == '\n');
    auto* t = std::get_if<mcp::listed_tool>(&decoded);
    if (!t) {
      fuzz::require(std::get<error_info>(decoded).type == "mcp_invalid_tool",
                    "a listed tool refused with another type");
      continue;
    }
    tool wrapped;
    wrapped.spec = t->spec;
    wrapped.run = [](const boost::json::object&, const tool_context&) { return boost::json::value(nullptr); };
    try {
      registry.add(std::move(wrapped));
    } catch (const std::invalid_argument&) {
      continue;
    }
    const auto taken = registry.find(t->spec.name);
    fuzz::require(taken != nullptr, "a tool added without an error is not in the registry");
    for (const auto& args : {arguments, boost::json::object{}})
      if (auto invalid = taken->validate(args))
        fuzz::require(invalid->type == "invalid_arguments", "a schema violation of another type");
  }
  return 0;
}
