#pragma once
// Collects what a model call delivers (deltas, then the result) and lets a
// test wait for it.

#include "runtime/llm/llm_provider.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace troupe::testing {

struct llm_call_probe {
  std::mutex m;
  std::condition_variable cv;
  std::vector<llm_delta> deltas;
  std::string text;  // the deltas' text, joined
  std::optional<llm_result> result;
  std::unique_ptr<llm_call> handle;

  llm_callbacks callbacks() {
    return {[this](llm_delta d) {
              std::lock_guard lock(m);
              text += d.text;
              deltas.push_back(std::move(d));
              cv.notify_all();
            },
            [this](llm_result r) {
              std::lock_guard lock(m);
              result = std::move(r);
              cv.notify_all();
            }};
  }
  const llm_result& wait() {
    std::unique_lock lock(m);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return result.has_value(); }));
    return *result;
  }
  bool wait_for_text() {
    std::unique_lock lock(m);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return !text.empty(); });
  }
};

}  // namespace troupe::testing
