#include "sse_load_client.hpp"

// GCC 12 mistakes the coroutine frame's own sized operator delete (Asio's
// awaitable_frame_base, which pairs with its operator new) for a mismatch
// once the coroutine is inlined into its caller.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include "runtime/llm/wire/sse_parser.hpp"

#include <boost/asio/as_tuple.hpp>
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
#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

namespace troupe::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using clock_type = std::chrono::steady_clock;

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

asio::awaitable<void> conversation(shared_run& run, std::size_t index) {
  const auto executor = co_await asio::this_coro::executor;
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(run.target.host), run.target.port);
  // Made anew for each connection: a stream is not reassignable.
  std::optional<beast::tcp_stream> stream;
  bool connected = false;
  beast::flat_buffer buffer;
  std::array<char, 16 * 1024> chunk;
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
      // The body is read a chunk at a time into `chunk` and fed to the shared
      // SSE parser: a whole stream is never held, however long it runs.
      http::response_parser<http::buffer_body> parser;
      parser.body_limit(boost::none);
      co_await http::async_read_header(*stream, buffer, parser, asio::use_awaitable);
      const unsigned status = parser.get().result_int();
      step = "reading the events";

      turn_sample sample;
      bool seen_event = false, seen_delta = false, completed = false;
      std::string error_event;
      std::string refusal;  // the start of a non-200 body, for the failure message
      sse_parser events;
      while (!parser.is_done()) {
        parser.get().body().data = chunk.data();
        parser.get().body().size = chunk.size();
        auto [ec, ignored_bytes] = co_await http::async_read(*stream, buffer, parser, as_tuple(asio::use_awaitable));
        if (ec == http::error::need_buffer) ec = {};
        if (ec) throw boost::system::system_error(ec);
        const std::string_view got(chunk.data(), chunk.size() - parser.get().body().size);
        if (status != 200) {
          refusal.append(got.substr(0, 200 - std::min<std::size_t>(200, refusal.size())));
          continue;
        }
        events.feed(got, [&](const sse_event& e) {
          const auto now = clock_type::now();
          if (!seen_event) sample.first_event_ms = ms_between(sent, now), seen_event = true;
          if (e.type == "message.delta" && !seen_delta)
            sample.first_delta_ms = ms_between(sent, now), seen_delta = true;
          if (e.type == "message.completed") {
            sample.latency_ms = ms_between(sent, now);
            sample.end_ms = ms_between(run.started, now);
            completed = true;
          }
          if (e.type == "error") error_event = e.data;
        });
        if (events.overflowed()) throw std::runtime_error("an SSE event past the parser's limit");
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
                   (error_event.empty() ? refusal : error_event));
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
