// The endpoint pool over members the test drives by hand (each call waits
// until the test answers it), over scripted members with delays, and over
// two local HTTP servers, one of which answers 429.

#include "runtime/llm/endpoint_pool.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "support/fixtures.hpp"
#include "support/http_test_server.hpp"
#include "support/llm_call_probe.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

using namespace troupe;
using namespace troupe::testing;
using namespace std::chrono_literals;

namespace {

llm_stream request(std::string call_id) {
  llm_stream s;
  s.call_id = std::move(call_id);
  s.model = "test-model";
  s.messages = {llm_message{"user", "hi", {}, {}, {}}};
  return s;
}

error_info rate_limit(std::optional<double> retry_after) {
  error_info e = error_info::of("rate_limited", "slow down", 1);
  e.http_status = 429;
  e.retry_after_seconds = retry_after;
  return e;
}

llm_result ok(const std::string& call_id, std::string text = "fine") {
  llm_completion c;
  c.text = std::move(text);
  return {call_id, c};
}

// A member whose calls wait until the test answers them, on the test's
// thread: what the pool does next happens before answer() returns.
class held_provider final : public llm_provider {
 public:
  struct held {
    llm_stream request;
    llm_callbacks callbacks;
    bool cancelled = false;
    bool answered = false;
  };

  std::string_view name() const override { return "held"; }
  std::unique_ptr<llm_call> stream(const llm_stream& r, llm_callbacks cb) override {
    auto h = std::make_shared<held>(held{r, std::move(cb)});
    {
      std::lock_guard lock(mutex_);
      calls_.push_back(h);
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    }
    return std::make_unique<handle>(*this, h);
  }

  std::size_t calls() const {
    std::lock_guard lock(mutex_);
    return calls_.size();
  }
  std::size_t in_flight() const {
    std::lock_guard lock(mutex_);
    return in_flight_;
  }
  std::shared_ptr<held> call(std::size_t i) const {
    std::lock_guard lock(mutex_);
    return calls_.at(i);
  }
  std::vector<std::string> call_ids() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> ids;
    for (const auto& c : calls_) ids.push_back(c->request.call_id);
    return ids;
  }
  void delta(std::size_t i, std::string text) {
    auto h = call(i);
    h->callbacks.on_delta(llm_delta{h->request.call_id, std::move(text), ""});
  }
  // Answers call i (whether or not the pool still wants it: a late answer).
  void answer(std::size_t i, std::variant<llm_completion, error_info> outcome) {
    auto h = call(i);
    {
      std::lock_guard lock(mutex_);
      REQUIRE(!h->answered);
      h->answered = true;
      if (!h->cancelled) --in_flight_;
    }
    h->callbacks.on_result(llm_result{h->request.call_id, std::move(outcome)});
  }

 private:
  class handle final : public llm_call {
   public:
    handle(held_provider& p, std::shared_ptr<held> h) : p_(p), h_(std::move(h)) {}
    void cancel() override {
      std::lock_guard lock(p_.mutex_);
      if (h_->cancelled || h_->answered) return;
      h_->cancelled = true;
      --p_.in_flight_;
    }

   private:
    held_provider& p_;
    std::shared_ptr<held> h_;
  };

  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<held>> calls_;
  std::size_t in_flight_ = 0;
  std::size_t max_in_flight_ = 0;
};

llm_completion completion(std::string text = "fine") {
  return std::get<llm_completion>(ok("", std::move(text)).outcome);
}

// Counts the calls a member has going, to catch one beyond its cap. A call
// ends with its result or when it is cancelled, whichever comes first.
class counting_provider final : public llm_provider {
 public:
  explicit counting_provider(std::shared_ptr<llm_provider> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  std::unique_ptr<llm_call> stream(const llm_stream& r, llm_callbacks cb) override {
    const std::size_t now = ++in_flight_;
    for (std::size_t seen = max_.load(); now > seen && !max_.compare_exchange_weak(seen, now);) {
    }
    ++calls_;
    auto ended = std::make_shared<std::atomic<bool>>(false);
    auto end = [this, ended] {
      if (!ended->exchange(true)) --in_flight_;
    };
    auto on_result = std::move(cb.on_result);
    cb.on_result = [end, on_result](llm_result result) {
      end();
      on_result(std::move(result));
    };
    auto inner = inner_->stream(r, std::move(cb));
    if (!inner) return nullptr;
    return std::make_unique<counted_call>(std::move(inner), end);
  }
  std::size_t max_in_flight() const { return max_.load(); }
  std::size_t calls() const { return calls_.load(); }

 private:
  class counted_call final : public llm_call {
   public:
    counted_call(std::unique_ptr<llm_call> inner, std::function<void()> end)
        : inner_(std::move(inner)), end_(std::move(end)) {}
    void cancel() override {
      inner_->cancel();
      end_();
    }

   private:
    std::unique_ptr<llm_call> inner_;
    std::function<void()> end_;
  };

  std::shared_ptr<llm_provider> inner_;
  std::atomic<std::size_t> in_flight_{0}, max_{0}, calls_{0};
};

// Counts results, for a test to wait until all have come.
struct result_count {
  std::mutex m;
  std::condition_variable cv;
  std::size_t ok = 0, failed = 0;
  llm_callbacks callbacks() {
    return {{}, [this](llm_result r) {
              std::lock_guard lock(m);
              (r.ok() ? ok : failed)++;
              cv.notify_all();
            }};
  }
  bool wait_for(std::size_t n) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, 20s, [&] { return ok + failed >= n; });
  }
};

// A member that answers every call with "ok" after `d`.
std::shared_ptr<scripted_provider> delayed(std::chrono::milliseconds d) {
  return std::make_shared<scripted_provider>([d](const llm_stream&) {
    scripted_reply r = scripted_reply::text("ok");
    r.delay = d;
    return r;
  });
}

// Calls c0, c1, … into the pool, one a probe.
void stream_all(endpoint_pool& pool, std::vector<llm_call_probe>& probes) {
  for (std::size_t i = 0; i < probes.size(); ++i)
    probes[i].handle = pool.stream(request("c" + std::to_string(i)), probes[i].callbacks());
}

}  // namespace

TEST_CASE("an endpoint pool sends each call to the member with the most free slots") {
  auto a = std::make_shared<held_provider>();
  auto b = std::make_shared<held_provider>();
  endpoint_pool pool({{"a", a, 2}, {"b", b, 4}});
  std::vector<llm_call_probe> probes(6);
  stream_all(pool, probes);
  // b (4 free) twice; a tie at 2 each, a first; b (2 against 1); a tie at 1 each, a first; b.
  CHECK(b->call_ids() == std::vector<std::string>{"c0", "c1", "c3", "c5"});
  CHECK(a->call_ids() == std::vector<std::string>{"c2", "c4"});
  CHECK(pool.queued() == 0);
  const auto f = pool.figures();
  REQUIRE(f.size() == 2);
  CHECK(f[0].name == "a");
  CHECK(f[0].in_flight == 2);
  CHECK(f[1].in_flight == 4);
  CHECK(f[1].calls == 4);
  CHECK_FALSE(f[0].paused_until);
}

TEST_CASE("an endpoint pool takes members in turn when they have the same room") {
  auto a = std::make_shared<held_provider>();
  auto b = std::make_shared<held_provider>();
  endpoint_pool pool({{"a", a, 3}, {"b", b, 3}});
  std::vector<llm_call_probe> probes(4);
  stream_all(pool, probes);
  CHECK(a->call_ids() == std::vector<std::string>{"c0", "c2"});
  CHECK(b->call_ids() == std::vector<std::string>{"c1", "c3"});
}

TEST_CASE("an endpoint pool never has more calls going on a member than its cap") {
  auto a = std::make_shared<counting_provider>(delayed(1ms));
  auto b = std::make_shared<counting_provider>(delayed(3ms));
  endpoint_pool pool({{"a", a, 2}, {"b", b, 3}});
  result_count results;
  std::vector<std::unique_ptr<llm_call>> calls;
  for (int i = 0; i < 200; ++i) calls.push_back(pool.stream(request("c" + std::to_string(i)), results.callbacks()));
  REQUIRE(results.wait_for(200));
  CHECK(results.ok == 200);
  CHECK(a->max_in_flight() == 2);
  CHECK(b->max_in_flight() == 3);
  CHECK(a->calls() + b->calls() == 200);
  CHECK(pool.queued() == 0);
  for (const auto& f : pool.figures()) CHECK(f.in_flight == 0);
}

TEST_CASE("calls cancelled while waiting or running leave no slot taken") {
  auto a = std::make_shared<counting_provider>(delayed(1ms));
  auto b = std::make_shared<counting_provider>(delayed(2ms));
  endpoint_pool pool({{"a", a, 2}, {"b", b, 3}});
  result_count kept, cancelled;
  std::vector<std::unique_ptr<llm_call>> calls;
  for (int i = 0; i < 300; ++i) {
    const bool cancel = i % 3 == 0;
    auto call = pool.stream(request("c" + std::to_string(i)), (cancel ? cancelled : kept).callbacks());
    if (cancel && call) call->cancel();
    calls.push_back(std::move(call));
  }
  REQUIRE(kept.wait_for(200));
  CHECK(kept.ok == 200);
  CHECK(a->max_in_flight() <= 2);
  CHECK(b->max_in_flight() <= 3);
  CHECK(pool.queued() == 0);
  for (const auto& f : pool.figures()) CHECK(f.in_flight == 0);
}

TEST_CASE("calls wait for a slot in the order they came") {
  auto a = std::make_shared<held_provider>();
  endpoint_pool pool({{"a", a, 1}});
  std::vector<llm_call_probe> probes(4);
  stream_all(pool, probes);
  CHECK(a->calls() == 1);
  CHECK(pool.queued() == 3);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    a->answer(i, completion("answer " + std::to_string(i)));
    REQUIRE(probes[i].result);
    CHECK(std::get<llm_completion>(probes[i].result->outcome).text == "answer " + std::to_string(i));
  }
  CHECK(a->call_ids() == std::vector<std::string>{"c0", "c1", "c2", "c3"});
}

TEST_CASE("past its queue limit a call fails at once with queue_full") {
  auto a = std::make_shared<held_provider>();
  endpoint_pool_options o;
  o.max_queued = 2;
  endpoint_pool pool({{"a", a, 1}}, o);
  std::vector<llm_call_probe> probes(4);
  for (std::size_t i = 0; i < 3; ++i)
    probes[i].handle = pool.stream(request("c" + std::to_string(i)), probes[i].callbacks());
  CHECK(pool.stream(request("c3"), probes[3].callbacks()) == nullptr);
  REQUIRE(probes[3].result);
  CHECK(probes[3].result->call_id == "c3");
  CHECK(std::get<error_info>(probes[3].result->outcome).type == "queue_full");
  CHECK(pool.queued() == 2);
  CHECK(a->calls() == 1);
}

TEST_CASE("cancelling a waiting call takes it out of the queue without a result") {
  auto a = std::make_shared<held_provider>();
  endpoint_pool pool({{"a", a, 1}});
  llm_call_probe first, second, third;
  first.handle = pool.stream(request("c0"), first.callbacks());
  second.handle = pool.stream(request("c1"), second.callbacks());
  third.handle = pool.stream(request("c2"), third.callbacks());
  second.handle->cancel();
  CHECK(pool.queued() == 1);
  a->answer(0, completion());
  CHECK(a->call_ids() == std::vector<std::string>{"c0", "c2"});
  CHECK_FALSE(second.result);
}

TEST_CASE("cancelling a running call stops it on its member and frees its slot") {
  auto a = std::make_shared<held_provider>();
  endpoint_pool pool({{"a", a, 1}});
  llm_call_probe first, second;
  first.handle = pool.stream(request("c0"), first.callbacks());
  second.handle = pool.stream(request("c1"), second.callbacks());
  first.handle->cancel();
  CHECK(a->call(0)->cancelled);
  CHECK(a->call_ids() == std::vector<std::string>{"c0", "c1"});  // the freed slot went to the next
  CHECK(a->in_flight() == 1);
  CHECK(pool.figures()[0].in_flight == 1);
  a->answer(0, completion());  // an answer after the cancel is dropped
  CHECK_FALSE(first.result);
  CHECK(pool.figures()[0].in_flight == 1);
}

TEST_CASE("a 429 pauses its member and the call is sent again to another") {
  auto a = std::make_shared<held_provider>();
  auto b = std::make_shared<held_provider>();
  endpoint_pool pool({{"a", a, 1}, {"b", b, 1}});
  llm_call_probe first, second, third;
  first.handle = pool.stream(request("c0"), first.callbacks());
  second.handle = pool.stream(request("c1"), second.callbacks());
  REQUIRE(a->call_ids() == std::vector<std::string>{"c0"});
  REQUIRE(b->call_ids() == std::vector<std::string>{"c1"});
  third.handle = pool.stream(request("c2"), third.callbacks());
  CHECK(pool.queued() == 1);

  const auto before = std::chrono::steady_clock::now();
  a->answer(0, rate_limit(20.0));
  // a is paused: the refused call waits at the head of the queue, ahead of
  // c2, though a has a free slot now.
  CHECK(a->calls() == 1);
  CHECK(pool.queued() == 2);
  CHECK_FALSE(first.result);
  auto f = pool.figures();
  CHECK(f[0].rate_limited == 1);
  REQUIRE(f[0].paused_until);
  CHECK(*f[0].paused_until >= before + 20s);
  CHECK_FALSE(f[1].paused_until);

  b->answer(0, completion("second"));
  CHECK(b->call_ids() == std::vector<std::string>{"c1", "c0"});
  b->answer(1, completion("first"));
  REQUIRE(first.result);
  CHECK(std::get<llm_completion>(first.result->outcome).text == "first");
  CHECK(b->call_ids() == std::vector<std::string>{"c1", "c0", "c2"});
  CHECK(pool.retries() == 1);
}

TEST_CASE("a rate-limited member takes calls again once its Retry-After has passed") {
  std::mutex m;
  std::vector<std::chrono::steady_clock::time_point> sent;
  auto member = std::make_shared<scripted_provider>([&](const llm_stream&) {
    std::lock_guard lock(m);
    sent.push_back(std::chrono::steady_clock::now());
    return sent.size() == 1 ? scripted_reply::failure(rate_limit(0.2)) : scripted_reply::text("at last");
  });
  endpoint_pool pool({{"only", member, 4}});
  llm_call_probe p;
  p.handle = pool.stream(request("c0"), p.callbacks());
  CHECK(std::get<llm_completion>(p.wait().outcome).text == "at last");
  std::lock_guard lock(m);
  REQUIRE(sent.size() == 2);
  CHECK(sent[1] - sent[0] >= 200ms);
  CHECK(pool.figures()[0].rate_limited == 1);
}

TEST_CASE("a call that streamed text and then failed is not sent again") {
  auto a = std::make_shared<held_provider>();
  auto b = std::make_shared<held_provider>();
  endpoint_pool pool({{"a", a, 1}, {"b", b, 1}});
  llm_call_probe p;
  p.handle = pool.stream(request("c0"), p.callbacks());
  a->delta(0, "Half an ans");
  a->answer(0, rate_limit(1.0));
  REQUIRE(p.result);
  const auto& e = std::get<error_info>(p.result->outcome);
  CHECK(e.type == "rate_limited");
  CHECK(e.attempts == 1);
  CHECK(p.text == "Half an ans");
  CHECK(b->calls() == 0);
  CHECK(pool.retries() == 0);
  CHECK(pool.figures()[0].paused_until);  // the member is paused all the same
}

TEST_CASE("a server error is retried after a backoff, without pausing the member") {
  auto member = std::make_shared<scripted_provider>(std::vector<scripted_reply>{
      scripted_reply::failure(error_info::of("server", "oops", 1)), scripted_reply::text("recovered")});
  endpoint_pool_options o;
  o.retry = llm_retry_policy{2, 1ms, 5ms};
  endpoint_pool pool({{"only", member, 1}}, o);
  llm_call_probe p;
  p.handle = pool.stream(request("c0"), p.callbacks());
  CHECK(std::get<llm_completion>(p.wait().outcome).text == "recovered");
  CHECK(pool.retries() == 1);
  CHECK(pool.figures()[0].rate_limited == 0);
}

TEST_CASE("a call that meets more 429s than its limit fails with the last one") {
  auto a = std::make_shared<held_provider>();
  auto b = std::make_shared<held_provider>();
  endpoint_pool_options o;
  o.max_rate_limit_retries = 1;
  endpoint_pool pool({{"a", a, 1}, {"b", b, 1}}, o);
  llm_call_probe p;
  p.handle = pool.stream(request("c0"), p.callbacks());
  a->answer(0, rate_limit(20.0));
  b->answer(0, rate_limit(20.0));
  REQUIRE(p.result);
  const auto& e = std::get<error_info>(p.result->outcome);
  CHECK(e.type == "rate_limited");
  CHECK(e.attempts == 2);
}

TEST_CASE("a pool that goes cancels its running calls and drops the waiting ones") {
  auto a = std::make_shared<held_provider>();
  llm_call_probe first, second;
  {
    endpoint_pool pool({{"a", a, 1}});
    first.handle = pool.stream(request("c0"), first.callbacks());
    second.handle = pool.stream(request("c1"), second.callbacks());
    first.handle.reset();
    second.handle.reset();
  }
  CHECK(a->call(0)->cancelled);
  CHECK(a->calls() == 1);
  CHECK_FALSE(first.result);
  CHECK_FALSE(second.result);
}

TEST_CASE("a long queue behind a member that answers inside stream() is worked off without deepening the stack") {
  // The first answer comes late, so that the others wait; each after it
  // comes at once, inside stream(), and frees the slot for the next.
  std::atomic<int> n{0};
  auto member = std::make_shared<scripted_provider>([&](const llm_stream&) {
    scripted_reply r = scripted_reply::text("ok");
    if (n++ == 0) r.delay = 20ms;
    return r;
  });
  endpoint_pool pool({{"a", member, 1}});
  result_count results;
  constexpr std::size_t calls = 100'000;
  std::vector<std::unique_ptr<llm_call>> handles;
  for (std::size_t i = 0; i < calls; ++i) handles.push_back(pool.stream(request("c"), results.callbacks()));
  REQUIRE(results.wait_for(calls));
  CHECK(results.ok == calls);
}

TEST_CASE("an endpoint pool refuses members it cannot use") {
  CHECK_THROWS_AS(endpoint_pool({}), std::invalid_argument);
  CHECK_THROWS_AS(endpoint_pool({{"a", nullptr, 1}}), std::invalid_argument);
  CHECK_THROWS_AS(endpoint_pool({{"a", std::make_shared<held_provider>(), 0}}), std::invalid_argument);
}

TEST_CASE("an endpoint pool over two HTTP servers, one answering 429 with Retry-After") {
  http_test_server limited, open;
  limited.respond(scripted_http_response::json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "30"}}));
  for (int i = 0; i < 2; ++i) open.respond(scripted_http_response::sse(fixture("openai_text.sse")));
  http_settings settings;
  settings.retries = 3;  // the members' own retries are turned off all the same
  auto members = http_pool_members({{limited.base_url() + "/v1", "sk-a", 1}, {open.base_url() + "/v1", "sk-b", 1}},
                                   settings, std::make_shared<http_client>());
  endpoint_pool pool(std::move(members));

  llm_call_probe first;
  first.handle = pool.stream(request("c0"), first.callbacks());
  CHECK(std::get<llm_completion>(first.wait().outcome).text == "Hello, world");
  CHECK(limited.request_count() == 1);
  CHECK(open.request_count() == 1);
  CHECK(open.requests().at(0).header("authorization") == "Bearer sk-b");
  auto f = pool.figures();
  CHECK(f[0].name == limited.base_url() + "/v1");
  CHECK(f[0].rate_limited == 1);
  REQUIRE(f[0].paused_until);
  CHECK(*f[0].paused_until > std::chrono::steady_clock::now() + 20s);

  // Both members are free, but the limited one waits out its Retry-After.
  llm_call_probe second;
  second.handle = pool.stream(request("c1"), second.callbacks());
  CHECK(second.wait().ok());
  CHECK(limited.request_count() == 1);
  CHECK(open.request_count() == 2);
  CHECK(pool.retries() == 1);
}
