#pragma once
// A model for the serve tests that answers without a network and without
// blocking any thread: a question starting with "hold" streams "partial"
// at once and then waits until the test releases it (or the call is
// cancelled; "hold-firehose" streams 16 MiB first); "calc: EXPR" asks the calculator tool, then answers with its
// result ("calc-words: EXPR" too, its answer streamed in three deltas); anything else is answered at once with
// "echo: QUESTION".

#include "runtime/llm/llm_provider.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe::testing {

class gate_provider final : public llm_provider {
 public:
  std::string_view name() const override { return "gate"; }

  std::unique_ptr<llm_call> stream(const llm_stream& request, llm_callbacks cb) override {
    calls_.fetch_add(1);
    {
      std::lock_guard lock(m_);
      last_traceparent_ = request.traceparent;
    }
    const llm_message* last = nullptr;
    for (const llm_message& m : request.messages) last = &m;
    const std::string question = last ? last->content : "";
    if (last && last->role == "tool") {
      const llm_message* asked = nullptr;
      for (const llm_message& m : request.messages)
        if (m.role == "user") asked = &m;
      if (asked && asked->content.rfind("calc-words: ", 0) == 0)
        answer_in_pieces(cb, request.call_id, {"result", ": ", question});
      else if (asked && asked->content.rfind("calc-hold: ", 0) == 0)
        return hold(asked->content, request.call_id, std::move(cb));
      else
        answer(cb, request.call_id, "result: " + question);
      return nullptr;
    }
    if (question.rfind("calc: ", 0) == 0 || question.rfind("calc-words: ", 0) == 0 ||
        question.rfind("calc-hold: ", 0) == 0) {
      llm_completion c;
      c.tool_calls.push_back({"tc-" + request.call_id,
                              "calculator",
                              {{"expression", question.substr(question.find(": ") + 2)}},
                              std::nullopt});
      c.usage = token_usage{7, 3, 0};
      cb.on_result({request.call_id, std::move(c)});
      return nullptr;
    }
    if (question.rfind("hold", 0) != 0) {
      answer(cb, request.call_id, "echo: " + question);
      return nullptr;
    }
    if (question.rfind("hold-firehose", 0) == 0) {
      // 16 MiB of deltas, more than loopback's socket buffers hold, before it holds.
      const std::string piece(16 * 1024, 'f');
      for (int i = 0; i < 1024; ++i) cb.on_delta({request.call_id, piece, ""});
    } else {
      cb.on_delta({request.call_id, "partial", ""});
    }
    return hold(question, request.call_id, std::move(cb));
  }

  // Waits (bounded) until a call for `question` is held; false if none came.
  bool wait_held(const std::string& question, std::size_t count = 1) {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return held_count(question) >= count; });
  }
  // Answers the oldest held call for `question` with "done: QUESTION".
  bool release(const std::string& question) {
    std::shared_ptr<held> h;
    {
      std::lock_guard lock(m_);
      for (auto it = held_.begin(); it != held_.end(); ++it)
        if ((*it)->question == question) {
          h = *it;
          held_.erase(it);
          break;
        }
    }
    if (!h) return false;
    answer(h->cb, h->call_id, "done: " + question);
    return true;
  }
  bool wait_cancelled(const std::string& question) {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] {
      for (const auto& q : cancelled_)
        if (q == question) return true;
      return false;
    });
  }
  std::size_t held_now() {
    std::lock_guard lock(m_);
    return held_.size();
  }
  std::size_t calls() const { return calls_.load(); }
  // The trace context the latest model call was made in.
  std::string last_traceparent() {
    std::lock_guard lock(m_);
    return last_traceparent_;
  }

 private:
  struct held {
    std::string question;
    std::string call_id;
    llm_callbacks cb;
    bool cancelled;
  };
  struct held_call final : llm_call {
    held_call(gate_provider* p, std::shared_ptr<held> h) : p_(p), h_(std::move(h)) {}
    void cancel() override { p_->cancel(h_); }
    gate_provider* p_;
    std::shared_ptr<held> h_;
  };

  // Holds the call until release(question) answers it (or it is cancelled).
  std::unique_ptr<llm_call> hold(const std::string& question, const std::string& call_id, llm_callbacks cb) {
    auto h = std::make_shared<held>(held{question, call_id, std::move(cb), false});
    {
      std::lock_guard lock(m_);
      held_.push_back(h);
    }
    cv_.notify_all();
    return std::make_unique<held_call>(this, h);
  }

  // Streams `pieces` as deltas, and answers with what they make together.
  static void answer_in_pieces(llm_callbacks& cb, const std::string& call_id, const std::vector<std::string>& pieces) {
    llm_completion c;
    for (const std::string& p : pieces) {
      cb.on_delta({call_id, p, ""});
      c.text += p;
    }
    c.usage = token_usage{5, 2, 0};
    cb.on_result({call_id, std::move(c)});
  }

  static void answer(llm_callbacks& cb, const std::string& call_id, const std::string& text) {
    cb.on_delta({call_id, text, ""});
    llm_completion c;
    c.text = text;
    c.usage = token_usage{5, 2, 0};
    cb.on_result({call_id, std::move(c)});
  }

  void cancel(const std::shared_ptr<held>& h) {
    {
      std::lock_guard lock(m_);
      for (auto it = held_.begin(); it != held_.end(); ++it)
        if (*it == h) {
          held_.erase(it);
          cancelled_.push_back(h->question);
          break;
        }
    }
    cv_.notify_all();
  }

  std::size_t held_count(const std::string& question) const {
    std::size_t n = 0;
    for (const auto& h : held_) n += h->question == question;
    return n;
  }

  std::mutex m_;
  std::string last_traceparent_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<held>> held_;
  std::vector<std::string> cancelled_;
  std::atomic<std::size_t> calls_{0};
};

}  // namespace troupe::testing
