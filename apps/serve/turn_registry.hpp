#pragma once
// The turns the server knows: those still running or queued, per
// conversation, and the last finished ones (bounded), by request id, so
// that a retried POST or a reconnect finds its turn. Admission applies the
// agent's double-texting policy atomically with registering the turn.

#include "apps/serve/config.hpp"
#include "apps/serve/turn.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe::serve {

enum class admission_verdict { start, start_after_interrupt, busy, queue_full, user_limit, existing };

// What a new message does to a conversation with `unfinished` turns (the
// running one and those queued after it).
admission_verdict admit(double_texting policy, std::size_t unfinished, std::size_t max_queued);

class turn_registry {
 public:
  // Finished turns are kept for late readers and retries: at most
  // `keep_finished` of them, holding at most `keep_finished_bytes` of events.
  explicit turn_registry(std::size_t keep_finished = 4096, std::size_t keep_finished_bytes = 64 << 20)
      : keep_finished_(keep_finished), keep_finished_bytes_(keep_finished_bytes) {}

  struct admitted {
    admission_verdict verdict;
    std::shared_ptr<turn> started;                    // set when the verdict starts one
    std::vector<std::shared_ptr<turn>> to_interrupt;  // the turns the new one replaces
  };
  // Registers a turn made by `make` if the policy lets it start and its
  // user has fewer than `max_per_user` unfinished turns; a turn with
  // `request_id` already known is returned instead (verdict existing).
  admitted admit_turn(const std::string& conversation_id, const std::string& request_id, const std::string& user,
                      double_texting policy, std::size_t max_queued, std::size_t max_per_user,
                      const std::function<std::shared_ptr<turn>()>& make);
  // The turn has ended: it no longer holds up its conversation.
  void finished(const std::shared_ptr<turn>& t);
  // A request a decision continues runs as a turn does, though no message
  // started it: it counts among its user's unfinished turns, and a drain
  // waits for it until continuation_ended. False, and nothing counted,
  // when the user has `max_per_user` unfinished already.
  bool hold_continuation(const std::string& user, std::size_t max_per_user);
  void continuation_ended(const std::string& user);
  // Keeps an ended turn (its events coalesced by now) among the finished
  // ones, the oldest giving way past either bound; one with the request id
  // of a turn kept before (a paused turn, told again after a decision)
  // replaces it for readers.
  void keep(const std::shared_ptr<turn>& t);
  // Forgets an ended turn whose end is not its request's (its node was
  // lost, its request could not be followed to its end): a repeat of its
  // key reads the thread again rather than hear this end.
  void forget(const std::shared_ptr<turn>& t);
  std::size_t finished_bytes() const;

  std::shared_ptr<turn> by_request(const std::string& request_id) const;
  // The oldest unfinished turn of the conversation, else its newest finished one still kept.
  std::shared_ptr<turn> current(const std::string& conversation_id) const;
  std::vector<std::shared_ptr<turn>> unfinished(const std::string& conversation_id) const;
  std::size_t unfinished_count() const;
  // Waits until no turn is unfinished, up to `until`; true if none is.
  bool wait_idle(std::chrono::steady_clock::time_point until) const;

 private:
  std::size_t keep_finished_;
  std::size_t keep_finished_bytes_;
  mutable std::mutex mutex_;
  mutable std::condition_variable idle_;
  std::map<std::string, std::vector<std::shared_ptr<turn>>> unfinished_;  // by conversation, oldest first
  std::map<std::string, std::shared_ptr<turn>> by_request_;
  std::map<std::string, std::shared_ptr<turn>> last_finished_;          // by conversation
  std::deque<std::pair<std::shared_ptr<turn>, std::size_t>> finished_;  // oldest first, with their bytes
  std::size_t finished_bytes_ = 0;
  std::size_t unfinished_count_ = 0;
  std::map<std::string, std::size_t> unfinished_by_user_;
};

}  // namespace troupe::serve
