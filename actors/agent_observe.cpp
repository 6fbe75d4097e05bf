#include "actors/detail/agent_observe.hpp"

#include "base/overloaded.hpp"
#include "strategy/inner_pause.hpp"

namespace troupe {

namespace {

std::string_view error_type_of(const llm_result& r) { return std::get<error_info>(r.outcome).type; }

}  // namespace

std::optional<observation> observe(const react_state& state, const signal& s, bool with_event) {
  return std::visit(
      overloaded{
          [&](const llm_delta& d) -> std::optional<observation> {
            if (state.status != react_status::awaiting_llm || d.call_id != state.call_id) return std::nullopt;
            observation seen{telemetry_kind::llm_delta, d.call_id, {}, state.iteration, {}, false, std::nullopt};
            if (with_event) seen.event = stream_event{delta_event{state.request_id, d.text, d.thinking}};
            return seen;
          },
          [&](const llm_result& r) -> std::optional<observation> {
            if (!state.summary_call_id.empty() && r.call_id == state.summary_call_id)
              return observation{
                  r.ok() ? telemetry_kind::summary_completed : telemetry_kind::summary_failed,
                  r.call_id,
                  {},
                  0,
                  r.ok() ? std::string_view{} : std::string_view(std::get<error_info>(r.outcome).message),
                  false,
                  std::nullopt};
            if (state.status != react_status::awaiting_llm || r.call_id != state.call_id) return std::nullopt;
            return observation{r.ok() ? telemetry_kind::llm_completed : telemetry_kind::llm_error,
                               r.call_id,
                               {},
                               state.iteration,
                               r.ok() ? std::string_view{} : error_type_of(r),
                               true,
                               std::nullopt};
          },
          [&](const tool_result& r) -> std::optional<observation> {
            if ((state.status != react_status::awaiting_tools && state.status != react_status::awaiting_input) ||
                r.call_id != state.call_id)
              return std::nullopt;
            observation seen{r.ok() ? telemetry_kind::tool_completed : telemetry_kind::tool_error,
                             r.call_id,
                             r.tool_call_id,
                             state.iteration,
                             r.tool_name,
                             false,
                             std::nullopt};
            // An agent used as a tool that paused has not finished: the
            // approval_requested_event that follows says what it waits for.
            if (with_event && !read_inner_pause(r.outcome))
              seen.event = stream_event{tool_finished_event{state.request_id, r.tool_call_id, r.tool_name, r.outcome}};
            return seen;
          },
          // A query's start and a cancel's end are reported where the
          // request starts and finishes, with the caller's timing.
          [](const query&) -> std::optional<observation> { return std::nullopt; },
          [](const cancel&) -> std::optional<observation> { return std::nullopt; },
          [](const decision&) -> std::optional<observation> { return std::nullopt; },
          [](const approval_tick&) -> std::optional<observation> { return std::nullopt; }},
      s);
}

}  // namespace troupe
