#pragma once
// What the server tells whoever watches it (metrics, logs): each HTTP
// exchange when it ends, each turn when it starts and ends, each event
// stream when it opens and closes. Callbacks run on I/O or runtime threads,
// possibly at the same time: keep them short and thread-safe. Observers are
// added before the server starts.

#include "signals/token_usage.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace troupe::serve {

struct request_record {
  std::string method;
  std::string route;  // the route's pattern ("/v1/conversations/{id}"), or "unmatched"
  unsigned status = 0;
  std::chrono::microseconds duration{0};  // head read to last byte queued
  bool streamed = false;
};

struct turn_started_record {
  std::string agent;
  std::string conversation_id;
  std::string request_id;
  std::size_t unfinished_in_conversation = 0;  // this turn included
};

struct turn_record {
  std::string agent;
  std::string conversation_id;
  std::string request_id;
  std::string outcome;  // "completed", or the error's type
  token_usage usage;
  std::chrono::microseconds latency{0};              // ask to last event
  std::chrono::microseconds time_to_first_event{0};  // ask to the first event from the agent (0: none)
};

class serve_observer {
 public:
  virtual ~serve_observer() = default;
  virtual void request_finished(const request_record&) {}
  virtual void turn_started(const turn_started_record&) {}
  virtual void turn_finished(const turn_record&) {}
  virtual void stream_opened() {}
  virtual void stream_closed() {}
};

class observer_list {
 public:
  void add(std::shared_ptr<serve_observer> o) { list_.push_back(std::move(o)); }
  template <class F>
  void each(F&& f) const {
    for (const auto& o : list_) f(*o);
  }

 private:
  std::vector<std::shared_ptr<serve_observer>> list_;
};

}  // namespace troupe::serve
