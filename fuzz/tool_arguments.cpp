// A model's tool-call argument text as the runtime takes it: parsed into
// JSON (assemble_tool_call) and, when it is an object, validated against
// the tool's JSON Schema (valijson, through the tool registry).

#include "fuzz_input.hpp"
#include "runtime/llm/wire/detail/stream_decoder.hpp"
#include "runtime/tools/tool_registry.hpp"

#include <boost/json/parse.hpp>

using namespace troupe;

namespace {

// A schema that uses the keywords tools use: types, required, enum, ranges,
// lengths, nested objects and arrays, alternatives.
const registered_tool& weather_tool() {
  static const registered_tool t = [] {
    tool w;
    w.spec.name = "weather";
    w.spec.description = "Weather for a city";
    w.spec.parameters = boost::json::parse(R"({
      "type": "object",
      "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 100},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "at": {"type": "array", "items": {"type": "number", "multipleOf": 0.5}, "maxItems": 8, "uniqueItems": true},
        "where": {"oneOf": [{"type": "string"},
                            {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                             "required": ["lat", "lon"], "additionalProperties": false}]}
      },
      "required": ["city"],
      "additionalProperties": false
    })")
                            .as_object();
    w.run = [](const boost::json::object&, const tool_context&) { return boost::json::value(nullptr); };
    return registered_tool(std::move(w));
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const tool_call call = assemble_tool_call("call-1", "weather", std::string(fuzz::text(data, size)));
  if (call.invalid_arguments) {
    fuzz::require(call.arguments.empty(), "invalid arguments that were kept as arguments too");
    return 0;
  }
  if (auto invalid = weather_tool().validate(call.arguments))
    fuzz::require(invalid->type == "invalid_arguments", "a schema violation of another type");
  return 0;
}
