#pragma once
// The closed set of inputs an agent reacts to. A new kind of signal is a new
// struct here and a new arm in every visitor: the compiler finds them all.

#include "json/decode_error.hpp"
#include "signals/cancel.hpp"
#include "signals/decision.hpp"
#include "signals/llm_delta.hpp"
#include "signals/llm_result.hpp"
#include "signals/query.hpp"
#include "signals/tool_result.hpp"

#include <boost/json/value.hpp>

#include <string_view>
#include <variant>

namespace troupe {

using signal = std::variant<query, llm_delta, llm_result, tool_result, cancel, decision, approval_tick>;

// Dotted CloudEvents type names: "troupe.agent.query", "troupe.llm.delta", …
std::string_view signal_type(const signal& s);

// The signal's fields as the envelope's `data`.
boost::json::value signal_data(const signal& s);

// Replaces what is not UTF-8 in the text a signal brings in (a question,
// what a model or a tool said, an error's message, a cancel's reason) with
// U+FFFD, so that nothing committed from it breaks a later load: true if
// anything was replaced. A query's ids are left as they are: ids are refused
// when they are not UTF-8 (utf8.hpp), never changed.
bool repair_utf8(signal& s);
bool repair_utf8(query& q);

// Rebuilds a signal from its type name and data. Errors name the bad field,
// prefixed with `path` ("data" inside an envelope).
decoded<signal> decode_signal(std::string_view type, const boost::json::value& data, std::string path);

}  // namespace troupe
