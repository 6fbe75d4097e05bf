#pragma once
// The closed set of inputs an agent reacts to. A new kind of signal is a new
// struct here and a new arm in every visitor: the compiler finds them all.

#include "signals/cancel.hpp"
#include "signals/decode_error.hpp"
#include "signals/llm_delta.hpp"
#include "signals/llm_result.hpp"
#include "signals/query.hpp"
#include "signals/tool_result.hpp"

#include <boost/json/value.hpp>

#include <string_view>
#include <variant>

namespace troupe {

using signal = std::variant<query, llm_delta, llm_result, tool_result, cancel>;

// Dotted CloudEvents type names: "troupe.agent.query", "troupe.llm.delta", …
std::string_view signal_type(const signal& s);

// The signal's fields as the envelope's `data`.
boost::json::value signal_data(const signal& s);

// Rebuilds a signal from its type name and data. Errors name the bad field,
// prefixed with `path` ("data" inside an envelope).
decoded<signal> decode_signal(std::string_view type, const boost::json::value& data, std::string path);

}  // namespace troupe
