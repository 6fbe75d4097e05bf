// Remote against local asks on loopback (actors/cluster/node.hpp): the same
// agent, the same scripted model, asked one request at a time, directly on
// the runtime that holds it and through a second runtime's node over TCP.
// Prints the latency's p50 and p99 of each kind per round, the medians over
// the rounds, and what crossing adds to a turn. With --tls DIR, a third path:
// the same over TLS, with DIR's ca.pem, node.pem and node.key
// (tests/fixtures/cluster-tls has such a set).
//
//   remote_ask_bench [--asks N] [--rounds R] [--tls DIR]

#include "actors/cluster/node.hpp"
#include "bench_support.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

// A turn: one model call that streams three deltas; with `tool`, a tool call
// first (a second model call, a tool, two stream events more).
std::shared_ptr<scripted_provider> model() {
  return std::make_shared<scripted_provider>([](const llm_stream& s) {
    const bool wants_tool = s.messages.back().content.rfind("tool", 0) == 0;
    if (wants_tool && s.messages.back().role == "user")
      return scripted_reply::tools({tool_call{"c1", "add", {{"a", 2}, {"b", 3}}, std::nullopt}});
    scripted_reply r = scripted_reply::text("");
    r.chunks = {"The sum ", "is ", "5."};
    return r;
  });
}

// Microseconds per ask, `n` asks one after another, each awaited.
std::vector<double> latencies(const std::function<request(const std::string&, ask_options)>& ask, std::size_t n,
                              bool tool, bool stream) {
  std::vector<double> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    ask_options o;
    o.thread_id = "bench-" + std::to_string(i % 64);  // short threads: the context stays small
    if (stream) o.on_event = [](const stream_event&) {};
    const auto start = clock_type::now();
    auto r = ask(tool ? "tool please" : "plain please", std::move(o)).await(std::chrono::seconds(30));
    const auto took = std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
    if (!r || !r->ok()) {
      std::fprintf(stderr, "an ask failed\n");
      std::exit(1);
    }
    out.push_back(took);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t asks = bench::flag(argc, argv, "--asks", 2000);
  const std::size_t rounds = bench::flag(argc, argv, "--rounds", 5);

  runtime holder({.provider = model(), .telemetry = std::make_shared<log_sink>(false)});
  tool add;
  add.spec = {"add", "Adds.", {{"type", "object"}}};
  add.blocking = false;
  add.run = [](const boost::json::object& a, const tool_context&) {
    return boost::json::value(a.at("a").as_int64() + a.at("b").as_int64());
  };
  holder.tools().add(add);
  agent local = holder.spawn_agent({.id = "helper", .model = "m", .tools = {"add"}});
  node server(holder, {.secret = "bench", .listen_port = 0});

  runtime caller_rt({.provider = model(), .telemetry = std::make_shared<log_sink>(false)});
  node caller(caller_rt, {.secret = "bench"});
  remote_agent far = caller.agent_at(*server.address(), "helper");

  std::optional<node_tls> tls;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--tls") == 0) {
      const std::string dir = std::string(argv[i + 1]) + "/";
      tls = node_tls{dir + "node.pem", dir + "node.key", dir + "ca.pem"};
    }
  std::unique_ptr<node> tls_server, tls_caller;
  std::optional<remote_agent> far_tls;
  if (tls) {
    tls_server = std::make_unique<node>(holder, node_options{.secret = "bench", .listen_port = 0, .tls = tls});
    tls_caller = std::make_unique<node>(caller_rt, node_options{.secret = "bench", .tls = tls});
    far_tls = tls_caller->agent_at(*tls_server->address(), "helper");
  }

  auto ask_local = [&](const std::string& q, ask_options o) { return local.ask(q, std::move(o)); };
  auto ask_remote = [&](const std::string& q, ask_options o) { return far.ask(q, std::move(o)); };
  auto ask_tls = [&](const std::string& q, ask_options o) { return far_tls->ask(q, std::move(o)); };
  latencies(ask_remote, 200, true, true);  // connect and warm up every path
  latencies(ask_local, 200, true, true);
  if (tls) latencies(ask_tls, 200, true, true);

  struct kind {
    const char* name;
    bool tool;
    bool stream;
  };
  const kind kinds[] = {{"text turn, streamed", false, true},
                        {"text turn, reply only", false, false},
                        {"tool turn, streamed", true, true}};
  std::printf("%zu asks per kind and path, %zu rounds; microseconds\n", asks, rounds);
  for (const kind& k : kinds) {
    std::vector<double> local50, local99, remote50, remote99, tls50, tls99;
    for (std::size_t round = 0; round < rounds; ++round) {
      bench::sorted_samples l(latencies(ask_local, asks, k.tool, k.stream));
      bench::sorted_samples r(latencies(ask_remote, asks, k.tool, k.stream));
      local50.push_back(l.at(0.5));
      local99.push_back(l.at(0.99));
      remote50.push_back(r.at(0.5));
      remote99.push_back(r.at(0.99));
      std::printf("  %-22s round %zu: local p50 %7.1f p99 %7.1f | remote p50 %7.1f p99 %7.1f", k.name, round, l.at(0.5),
                  l.at(0.99), r.at(0.5), r.at(0.99));
      if (tls) {
        bench::sorted_samples t(latencies(ask_tls, asks, k.tool, k.stream));
        tls50.push_back(t.at(0.5));
        tls99.push_back(t.at(0.99));
        std::printf(" | TLS p50 %7.1f p99 %7.1f", t.at(0.5), t.at(0.99));
      }
      std::printf("\n");
    }
    const double l50 = bench::median(local50), r50 = bench::median(remote50);
    std::printf("%-22s medians: local p50 %.1f p99 %.1f | remote p50 %.1f p99 %.1f | remote adds %.1f (x%.2f)\n",
                k.name, l50, bench::median(local99), r50, bench::median(remote99), r50 - l50, r50 / l50);
    if (tls)
      std::printf("%-22s medians: TLS p50 %.1f p99 %.1f | TLS adds %.1f to the plain remote ask\n", k.name,
                  bench::median(tls50), bench::median(tls99), bench::median(tls50) - r50);
  }
  if (tls) {
    tls_caller->close();
    tls_server->close();
  }
  caller.close();
  server.close();
}
