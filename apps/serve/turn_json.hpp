#pragma once
// The JSON a turn is told in: the data of each SSE event, and the one
// object a client that did not ask for a stream gets when the turn ends.

#include "apps/serve/http.hpp"
#include "apps/serve/turn.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace troupe::serve {

boost::json::object conversation_event(const turn_ids& ids);
boost::json::object event_data(const delta_event& e);
boost::json::object event_data(const tool_started_event& e);
boost::json::object event_data(const tool_finished_event& e);
// An approval_request event's data: a call of the request that waits for a decision.
boost::json::object event_data(const std::string& request_id, const open_approval& a);
// What a paused reply lists: each call that waits, as its approval_request event tells it.
boost::json::array pending_json(const reply& r);
boost::json::object usage_json(const turn_result& r);

// The last event: message.completed or error, with its data (a paused
// turn's error, awaiting_input, lists the calls that wait in `pending`).
std::pair<std::string, boost::json::object> final_event(const turn_result& r);

// The non-streaming answer: 200 with the answer, 202 with `pending` for a
// turn that paused for decisions, or the error's status.
http_response answer_response(const turn_ids& ids, const turn_result& r);

}  // namespace troupe::serve
