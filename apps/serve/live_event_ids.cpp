#include "apps/serve/live_event_ids.hpp"

#include <algorithm>

namespace troupe::serve {

void live_event_ids::place(std::uint64_t seq) {
  if (seq == seq_) return;
  seq_ = seq;
  bytes_ = 0;
  started_ = finished_ = 0;
  calls_.clear();
  ends_.clear();
  next_end_ = 0;
}

std::uint64_t live_event_ids::told(std::uint64_t id) {
  last_id_ = std::max(last_id_, id);
  return id;
}

std::uint64_t live_event_ids::delta(std::uint64_t seq, std::uint64_t bytes) {
  if (bytes == 0) return 0;
  place(seq);
  bytes_ += bytes;
  return told(event_id(seq, bytes_));
}

std::uint64_t live_event_ids::tool_started(std::uint64_t seq, const std::string& tool_call_id) {
  place(seq);
  calls_.push_back(tool_call_id);
  ends_.emplace_back();
  return told(event_id(seq, tool_offset(++started_, finished_)));
}

std::vector<numbered_event> live_event_ids::tool_finished(std::uint64_t seq, const std::string& tool_call_id,
                                                          boost::json::object data) {
  place(seq);
  std::vector<numbered_event> out;
  const auto call = std::find(calls_.begin() + static_cast<std::ptrdiff_t>(next_end_), calls_.end(), tool_call_id);
  if (call == calls_.end()) {
    // A tool this turn did not see start: told at once.
    out.push_back({told(event_id(seq, tool_offset(started_, ++finished_))), std::move(data)});
    return out;
  }
  ends_[static_cast<std::size_t>(call - calls_.begin())] = std::move(data);
  for (; next_end_ < ends_.size() && ends_[next_end_]; ++next_end_)
    out.push_back({told(event_id(seq, tool_offset(started_, ++finished_))), std::move(*ends_[next_end_])});
  return out;
}

std::uint64_t live_event_ids::approval_requested(std::uint64_t seq) {
  place(seq);
  return told(event_id(seq, tool_offset(++started_, finished_)));
}

std::vector<numbered_event> live_event_ids::held() {
  std::vector<numbered_event> out;
  for (; next_end_ < ends_.size(); ++next_end_)
    if (ends_[next_end_])
      out.push_back({told(event_id(seq_, tool_offset(started_, ++finished_))), std::move(*ends_[next_end_])});
  return out;
}

std::uint64_t live_event_ids::last(std::optional<std::uint64_t> last_seq, bool paused) {
  return told(last_seq ? std::max(event_id(*last_seq, paused ? max_offset : 0), last_id_ + 1) : last_id_ + 1);
}

}  // namespace troupe::serve
