#include "sse_load_client.hpp"

// GCC 12 mistakes the coroutine frame's own sized operator delete (Asio's
// awaitable_frame_base, which pairs with its operator new) for a mismatch
// once the coroutine is inlined into its caller.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

namespace troupe::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using clock_type = std::chrono::steady_clock;

double quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto at = static_cast<std::size_t>(q * static_cast<double>(v.size()));
  return v[std::min(v.size() - 1, at)];
}

namespace {

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct shared_run {
  const load_target& target;
  const load_plan& plan;
  clock_type::time_point started;
  clock_type::time_point stop_starting;
  std::mutex mutex;
  load_result result;

  void completed(const turn_sample& s) {
    std::lock_guard lock(mutex);
    result.turns.push_back(s);
  }
  void failed(std::string why) {
    std::lock_guard lock(mutex);
    ++result.failed;
    if (result.failures.size() < 10) result.failures.push_back(std::move(why));
  }
};

// The name of an SSE event ("event: NAME" among its lines).
std::string_view event_name(std::string_view block) {
  std::size_t at = 0;
  while (at < block.size()) {
    const std::size_t end = std::min(block.find('\n', at), block.size());
    const std::string_view line = block.substr(at, end - at);
    if (line.starts_with("event:")) {
      std::string_view name = line.substr(6);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      return name;
    }
    at = end + 1;
  }
  return {};
}

asio::awaitable<void> conversation(shared_run& run, std::size_t index) {
  const auto executor = co_await asio::this_coro::executor;
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(run.target.host), run.target.port);
  // Made anew for each connection: a stream is not reassignable.
  std::optional<beast::tcp_stream> stream;
  bool connected = false;
  beast::flat_buffer buffer;
  const std::string chat = "/v1/conversations/bench/" + run.plan.chat_prefix + "-" + std::to_string(index);
  for (std::size_t turn = 0; turn < run.plan.turns && clock_type::now() < run.stop_starting; ++turn) {
    const char* step = "connecting";
    const std::string target = run.plan.turns_per_chat == 0
                                   ? chat + "/messages"
                                   : chat + "-" + std::to_string(turn / run.plan.turns_per_chat) + "/messages";
    try {
      if (!connected) {
        stream.emplace(executor);
        co_await stream->async_connect(endpoint, asio::use_awaitable);
        buffer.clear();
        connected = true;
      }
      http::request<http::string_body> req{http::verb::post, target, 11};
      req.set(http::field::host, run.target.host);
      req.set(http::field::authorization, "Bearer " + run.target.key);
      req.set(http::field::content_type, "application/json");
      req.set(http::field::accept, "text/event-stream");
      req.body() = "{\"agent\":\"" + run.target.agent + "\",\"content\":\"turn " + std::to_string(turn) + "\"}";
      req.prepare_payload();
      req.keep_alive(true);

      step = "writing the request";
      const auto sent = clock_type::now();
      stream->expires_at(run.started + run.plan.deadline);
      co_await http::async_write(*stream, req, asio::use_awaitable);
      step = "reading the head";
      http::response_parser<http::string_body> parser;
      parser.body_limit(boost::none);
      co_await http::async_read_header(*stream, buffer, parser, asio::use_awaitable);
      const unsigned status = parser.get().result_int();
      step = "reading the events";

      turn_sample sample;
      bool seen_event = false, seen_delta = false, completed = false;
      std::string error_event;
      std::size_t scanned = 0;
      while (!parser.is_done()) {
        co_await http::async_read_some(*stream, buffer, parser, asio::use_awaitable);
        const std::string& body = parser.get().body();
        for (std::size_t end; status == 200 && (end = body.find("\n\n", scanned)) != std::string::npos;) {
          const std::string_view block(body.data() + scanned, end - scanned);
          scanned = end + 2;
          const auto now = clock_type::now();
          const std::string_view name = event_name(block);
          if (!seen_event) sample.first_event_ms = ms_between(sent, now), seen_event = true;
          if (name == "message.delta" && !seen_delta) sample.first_delta_ms = ms_between(sent, now), seen_delta = true;
          if (name == "message.completed") {
            sample.latency_ms = ms_between(sent, now);
            sample.end_ms = ms_between(run.started, now);
            completed = true;
          }
          if (name == "error") error_event = std::string(block);
        }
      }
      if (!parser.keep_alive()) {
        beast::error_code ignored;
        stream->socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        stream->close();
        connected = false;
      }
      if (completed)
        run.completed(sample);
      else
        run.failed("turn " + std::to_string(turn) + " of " + target + ": status " + std::to_string(status) + " " +
                   (error_event.empty() ? parser.get().body().substr(0, 200) : error_event));
    } catch (const std::exception& e) {
      run.failed("turn " + std::to_string(turn) + " of " + target + ", " + step + ": " + e.what());
      beast::error_code ignored;
      if (stream) stream->socket().close(ignored);
      connected = false;
    }
  }
}

}  // namespace

load_result run_load(const load_target& target, const load_plan& plan) {
  asio::io_context io(static_cast<int>(plan.threads));
  shared_run run{target, plan, clock_type::now(), {}, {}, {}};
  run.stop_starting = run.started + plan.duration;
  for (std::size_t i = 0; i < plan.conversations; ++i) asio::co_spawn(io, conversation(run, i), asio::detached);
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < plan.threads; ++t) threads.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : threads) t.join();
  run.result.seconds = ms_between(run.started, clock_type::now()) / 1000;
  return std::move(run.result);
}

}  // namespace troupe::bench
