#pragma once
// The tool calls of one model turn: at most `limit` run at once, the rest
// wait in call order. Pure: the agent hands out what ready() returns.

#include "actors/detail/release_if_empty.hpp"
#include "directives/tool_exec.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace troupe {

class tool_parallelism {
 public:
  void add(tool_exec x) { waiting_.push_back(std::move(x)); }

  // The calls to start now, each counted as running.
  std::vector<tool_exec> ready(std::size_t limit) {
    std::vector<tool_exec> out;
    std::size_t taken = 0;
    while (taken < waiting_.size() && running_.size() < limit) {
      running_.push_back(waiting_[taken].tool_call_id);
      out.push_back(std::move(waiting_[taken]));
      ++taken;
    }
    waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(taken));
    release_if_empty(waiting_);
    return out;
  }

  // A call whose work goes on elsewhere (another agent a decision was passed
  // down to), counted as running until its result comes.
  void running_elsewhere(std::string tool_call_id) { running_.push_back(std::move(tool_call_id)); }
  // False if the call was not running (a late or stale result).
  bool finished(const std::string& tool_call_id) {
    auto it = std::find(running_.begin(), running_.end(), tool_call_id);
    if (it == running_.end()) return false;
    running_.erase(it);
    release_if_empty(running_);
    return true;
  }

  const std::vector<std::string>& running() const { return running_; }
  void clear() {
    waiting_.clear();
    running_.clear();
    release_if_empty(waiting_);
    release_if_empty(running_);
  }

 private:
  std::vector<tool_exec> waiting_;  // not a deque: an empty one allocates about 600 bytes
  std::vector<std::string> running_;
};

}  // namespace troupe
