// troupe serve under load, on 127.0.0.1. The server is the real `troupe
// serve` in a process of its own (its RSS is the server's alone), with one
// agent on a scripted model that serve replays in a cycle: each call streams
// four chunks and answers after --model-ms. The store is a SQLite file, the
// default. This process is the load generator: coroutines on
// --client-threads threads.
//
//   serve_bench [--conversations 1000] [--turns 10] [--model-ms 0]
//               [--overhead-turns 300] [--soak-seconds 0] [--soak-conversations 20]
//               [--io-threads 2] [--client-threads 2]
//
// 1. overhead: one conversation, turns one after another (low load): the
//    client's turn latency (request written → message.completed read) minus
//    the model's time per turn, read from the server's own /metrics.
// 2. load: --conversations at once, --turns each: turns/s, time to first
//    event and turn latency (p50/p99), failed requests, the server's peak RSS.
// 3. soak (with --soak-seconds): --soak-conversations at once, each moving to
//    a new chat every 10 turns, until the time is up; the server's RSS is
//    sampled every 10 s.
// Bounded: every phase has a deadline; a server that stops answering ends
// the run with failures, never a hang.

#include "bench_support.hpp"
#include "sse_load_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>

namespace {

using namespace troupe;
using namespace troupe::bench;
namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;

const std::string key = "bench-key-0123456789abcdef";
const std::string metrics_key = "bench-metrics-key-0123456789";

// kB of the process's resident set: now (VmRSS) or at its peak (VmHWM).
long status_kb(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(field)) return std::strtol(line.c_str() + std::strlen(field) + 1, nullptr, 10);
  return -1;
}

// GET /metrics, as one string ("" if it failed).
std::string scrape(std::uint16_t port) {
  try {
    asio::io_context io;
    beast::tcp_stream s(io);
    s.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    http::request<http::empty_body> req{http::verb::get, "/metrics", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::authorization, "Bearer " + metrics_key);
    http::write(s, req);
    beast::flat_buffer b;
    http::response<http::string_body> res;
    http::read(s, b, res);
    return res.body();
  } catch (const std::exception& e) {
    std::cerr << "scrape failed: " << e.what() << "\n";
    return {};
  }
}

// The value of one series in an exposition ("name{labels}" or "name"); 0 if absent.
double series(const std::string& text, const std::string& name) {
  const std::string at = "\n" + name + " ";
  const auto pos = text.find(at);
  return pos == std::string::npos ? 0 : std::strtod(text.c_str() + pos + at.size(), nullptr);
}

struct server_child {
  pid_t pid = -1;
  std::uint16_t port = 0;
};

// Starts `troupe serve` on a free port and reads the port from the line it
// prints once it listens.
server_child start_server(const std::string& troupe, const std::string& config) {
  int out[2];
  if (pipe(out) != 0) std::abort();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    execl(troupe.c_str(), troupe.c_str(), "serve", "--config", config.c_str(), "--listen", "127.0.0.1:0",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string line;
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
  close(out[0]);
  const auto at = line.find("127.0.0.1:");
  if (at == std::string::npos) {
    std::cerr << "troupe serve did not start: " << line << "\n";
    std::exit(1);
  }
  return {pid, static_cast<std::uint16_t>(std::strtoul(line.c_str() + at + 10, nullptr, 10))};
}

int stop_server(const server_child& s) {
  kill(s.pid, SIGTERM);
  int status = 0;
  waitpid(s.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The config and script of the benchmark's server, in `dir`.
std::string write_config(const std::string& dir, std::size_t model_ms, std::size_t io_threads) {
  std::ofstream(dir + "/script.json") << R"([{"chunks": ["Hello", ", ", "world", "!"], "delay_ms": )" << model_ms
                                      << R"(, "usage": {"input_tokens": 20, "output_tokens": 4}}])";
  const std::string path = dir + "/serve.toml";
  std::ofstream(path) << "io_threads = " << io_threads << "\nstore = \"sqlite:" << dir
                      << "/bench.db\"\n"
                      // Every conversation is the one bench user's.
                      << "[limits]\nmax_connections = 20000\nmax_turns_per_user = 1000000\n"
                      << "[[agents]]\nid = \"bench\"\nprovider = \"scripted\"\nscript = \"" << dir << "/script.json\"\n"
                      << "[[keys]]\nkey = \"" << key << "\"\nuser = \"bench\"\n"
                      << "[[keys]]\nkey = \"" << metrics_key << "\"\nuser = \"prometheus\"\nrole = \"metrics\"\n";
  return path;
}

void print_failures(const load_result& r) {
  for (const std::string& f : r.failures) std::cout << "    failure: " << f << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t conversations = flag(argc, argv, "--conversations", 1000);
  const std::size_t turns = flag(argc, argv, "--turns", 10);
  const std::size_t model_ms = flag(argc, argv, "--model-ms", 0);
  const std::size_t overhead_turns = flag(argc, argv, "--overhead-turns", 300);
  const std::size_t soak_seconds = flag(argc, argv, "--soak-seconds", 0);
  const std::size_t soak_conversations = flag(argc, argv, "--soak-conversations", 20);
  const std::size_t client_threads = flag(argc, argv, "--client-threads", 2);

  const std::size_t io_threads = flag(argc, argv, "--io-threads", 2);
  char dir_template[] = "/tmp/troupe-serve-bench-XXXXXX";
  if (!mkdtemp(dir_template)) return 1;
  const std::string dir = dir_template;
  const server_child server = start_server(TROUPE_BINARY, write_config(dir, model_ms, io_threads));
  std::cout << "serve_bench: troupe serve pid " << server.pid << " on 127.0.0.1:" << server.port << ", " << io_threads
            << " I/O threads, model " << model_ms << " ms per call, store sqlite in " << dir << "\n";
  load_target target{"127.0.0.1", server.port, key, "bench"};
  bool ok = true;

  if (overhead_turns > 0) {  // 1. overhead at low load
    const std::string before = scrape(server.port);
    load_plan p;
    p.conversations = 1;
    p.turns = overhead_turns;
    p.duration = std::chrono::minutes(5);
    p.deadline = std::chrono::minutes(6);
    p.chat_prefix = "overhead";
    p.threads = 1;
    load_result r = run_load(target, p);
    const std::string after = scrape(server.port);
    const double model_s = series(after, "troupe_model_call_duration_seconds_sum{agent=\"bench\"}") -
                           series(before, "troupe_model_call_duration_seconds_sum{agent=\"bench\"}");
    const double model_calls = series(after, "troupe_model_call_duration_seconds_count{agent=\"bench\"}") -
                               series(before, "troupe_model_call_duration_seconds_count{agent=\"bench\"}");
    std::vector<double> latency;
    for (const auto& t : r.turns) latency.push_back(t.latency_ms);
    const double mean_latency =
        latency.empty() ? 0 : std::accumulate(latency.begin(), latency.end(), 0.0) / latency.size();
    const double model_ms_per_turn = r.turns.empty() ? 0 : model_s * 1000 / static_cast<double>(r.turns.size());
    const sorted_samples latency_q(latency);
    const double p50 = latency_q.at(0.5);
    std::cout << "overhead: " << r.turns.size() << " turns one after another, " << r.failed << " failed\n"
              << "  turn latency p50 " << p50 << " ms, p99 " << latency_q.at(0.99) << " ms, mean " << mean_latency
              << " ms\n"
              << "  model time per turn " << model_ms_per_turn << " ms (" << model_calls << " calls, from /metrics)\n"
              << "  server overhead per turn: p50 " << p50 - model_ms_per_turn << " ms, mean "
              << mean_latency - model_ms_per_turn << " ms\n";
    print_failures(r);
    ok = ok && r.failed == 0;
  }

  if (conversations > 0) {  // 2. many conversations at once
    load_plan p;
    p.conversations = conversations;
    p.turns = turns;
    p.duration = std::chrono::minutes(10);
    p.deadline = std::chrono::minutes(12);
    p.chat_prefix = "load";
    p.threads = client_threads;
    const long rss_before = status_kb(server.pid, "VmRSS:");
    load_result r = run_load(target, p);
    std::vector<double> first_v, delta_v, latency_v;
    for (const auto& t : r.turns) {
      first_v.push_back(t.first_event_ms);
      delta_v.push_back(t.first_delta_ms);
      latency_v.push_back(t.latency_ms);
    }
    const sorted_samples first(std::move(first_v)), delta(std::move(delta_v)), latency(std::move(latency_v));
    std::cout << "load: " << conversations << " SSE conversations at once, " << turns
              << " turns each: " << r.turns.size() << " turns completed, " << r.failed << " failed, in " << r.seconds
              << " s\n"
              << "  turns/s " << static_cast<double>(r.turns.size()) / r.seconds << "\n"
              << "  time to first event p50 " << first.at(0.5) << " ms, p99 " << first.at(0.99) << " ms\n"
              << "  time to first delta p50 " << delta.at(0.5) << " ms, p99 " << delta.at(0.99) << " ms\n"
              << "  turn latency p50 " << latency.at(0.5) << " ms, p99 " << latency.at(0.99) << " ms\n"
              << "  server RSS before " << rss_before / 1024 << " MiB, peak " << status_kb(server.pid, "VmHWM:") / 1024
              << " MiB\n";
    print_failures(r);
    ok = ok && r.failed == 0 && r.turns.size() == conversations * turns;
  }

  if (soak_seconds > 0) {  // 3. memory over time
    load_plan p;
    p.conversations = soak_conversations;
    p.turns = std::numeric_limits<std::size_t>::max();
    p.turns_per_chat = 10;
    p.duration = std::chrono::seconds(soak_seconds);
    p.deadline = std::chrono::seconds(soak_seconds + 120);
    p.chat_prefix = "soak";
    p.threads = client_threads;
    std::atomic<bool> done{false};
    std::vector<std::pair<std::size_t, long>> samples;
    std::thread sampler([&] {
      const auto start = std::chrono::steady_clock::now();
      for (std::size_t s = 0; !done; ++s) {
        samples.emplace_back(s * 10, status_kb(server.pid, "VmRSS:"));
        while (!done && std::chrono::steady_clock::now() < start + std::chrono::seconds(10 * (s + 1)))
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    load_result r = run_load(target, p);
    done = true;
    sampler.join();
    samples.emplace_back(static_cast<std::size_t>(r.seconds), status_kb(server.pid, "VmRSS:"));
    std::cout << "soak: " << soak_seconds << " s, " << soak_conversations << " conversations at once (a new chat every "
              << "10 turns): " << r.turns.size() << " turns, " << r.failed << " failed, "
              << static_cast<double>(r.turns.size()) / r.seconds << " turns/s\n  server RSS (MiB) by second:";
    for (const auto& [s, kb] : samples) std::cout << " " << s << ":" << kb / 1024;
    std::cout << "\n";
    print_failures(r);
    ok = ok && r.failed == 0;
  }

  const int exit_status = stop_server(server);
  std::cout << "server exit status " << exit_status << "\n";
  std::filesystem::remove_all(dir);
  return ok && exit_status == 0 ? 0 : 1;
}
