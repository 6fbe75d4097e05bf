#pragma once
// Whether valijson 1.0 can compile a JSON Schema and validate against it
// without recursing forever or running out of stack. It follows a chain of
// $ref without noticing that it loops ({"$ref": "#"}, a -> b -> a), it
// applies allOf/anyOf/oneOf/not/if/dependencies to the same value however
// often they lead back to themselves, a relative "id" on a recursive part
// makes every pass look new to its cache, and it recurses once per level of
// nesting and per $ref it has not compiled yet. Any of these overflows the
// stack, so a schema showing one is refused before valijson sees it. A
// recursive schema whose cycles descend into the value (a tree node whose
// children's items $ref the node) is compiled and validated fine: it passes.

#include <boost/json/object.hpp>

#include <optional>
#include <string>

namespace troupe {

// Why the schema cannot be handed to valijson safely, or nullopt. It walks
// the schema without recursion, so any input is safe to ask about.
std::optional<std::string> schema_hazard(const boost::json::object& schema);

}  // namespace troupe
