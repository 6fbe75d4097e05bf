#pragma once
// The ids of a running turn's events (event_position.hpp), given as its
// agent's stream events come. A tool's end is held back until every call
// the model asked for before it has ended (the store keeps the results in
// that order, so a turn told again from it can only tell them so); what is
// still held when the turn ends is told then.

#include "apps/serve/event_position.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe::serve {

struct numbered_event {
  std::uint64_t id;
  boost::json::object data;
};

class live_event_ids {
 public:
  // A delta of `bytes` (thinking and text) placed after entry `seq`; 0 for
  // an empty one, which is not told.
  std::uint64_t delta(std::uint64_t seq, std::uint64_t bytes);
  std::uint64_t tool_started(std::uint64_t seq, const std::string& tool_call_id);
  // The tool ends that can be told now, in call order: this one, and those
  // held for it.
  std::vector<numbered_event> tool_finished(std::uint64_t seq, const std::string& tool_call_id,
                                            boost::json::object data);
  // A call that waits for a decision, told after the starts of the batch's
  // free calls and counted among its starts.
  std::uint64_t approval_requested(std::uint64_t seq);
  // The ends still held, in call order, when the turn ends.
  std::vector<numbered_event> held();
  // The last event's id: at the request's last entry, when known (a paused
  // turn's at the end of that entry's range: a decision's events follow it).
  std::uint64_t last(std::optional<std::uint64_t> last_seq, bool paused = false);

 private:
  void place(std::uint64_t seq);
  std::uint64_t told(std::uint64_t id);

  std::uint64_t seq_ = UINT64_MAX;
  std::uint64_t bytes_ = 0;
  std::uint64_t started_ = 0, finished_ = 0;
  std::vector<std::string> calls_;                        // started at seq_, in order
  std::vector<std::optional<boost::json::object>> ends_;  // beside calls_: those ended, not yet told
  std::size_t next_end_ = 0;                              // the first call whose end is not told
  std::uint64_t last_id_ = 0;
};

}  // namespace troupe::serve
