#pragma once
// What the MCP tests need: node, the servers pinned in tests/mcp (installed
// by `npm ci` in scripts/test.sh), a background HTTP server that says on
// which port it listens, and a bounded way to call a registered tool.
// A missing node or package fails the test, saying how to install it.

#include "runtime/mcp/detail/server.hpp"
#include "runtime/tools/tool_registry.hpp"

#include <catch2/catch.hpp>

#include <boost/json/serialize.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <vector>

extern char** environ;

namespace troupe::testing {

inline std::string mcp_dir() { return TROUPE_MCP_DIR; }

inline std::string node_binary() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin"}) {
    const std::string p = std::string(dir) + "/node";
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  FAIL("node is not installed: scripts/test.sh installs it (Debian's nodejs)");
  return {};
}

// The entry point of a pinned npm package's server.
inline std::string package_entry(const std::string& package) {
  const std::string path = mcp_dir() + "/node_modules/@modelcontextprotocol/" + package + "/dist/index.js";
  if (!std::filesystem::exists(path))
    FAIL(package << " is not installed: run `npm ci --prefix tests/mcp` (scripts/test.sh does)");
  return path;
}

inline std::vector<std::string> fake_server(const std::vector<std::string>& args) {
  std::vector<std::string> argv{node_binary(), mcp_dir() + "/fake_server.mjs"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// A server process run for one test, stopped when the test ends. It is
// ready once a line of its output (stdout or stderr) contains `ready_text`.
class background_server {
 public:
  background_server(std::vector<std::string> argv, const std::string& ready_text,
                    std::vector<std::string> extra_env = {}) {
    int out[2];
    REQUIRE(::pipe(out) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    for (auto& e : extra_env) env_strings.push_back(e);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    // A pipe for its stdin too: the fake server exits when it closes.
    int in[2];
    REQUIRE(::pipe(in) == 0);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    REQUIRE(::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.data()) == 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(in[0]);
    stdin_ = in[1];
    output_ = out[0];
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    char buf[4096];
    while (log_.find(ready_text) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      pollfd p{output_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      const ssize_t n = ::read(output_, buf, sizeof buf);
      if (n <= 0) break;
      log_.append(buf, static_cast<std::size_t>(n));
    }
    INFO(log_);
    REQUIRE(log_.find(ready_text) != std::string::npos);
  }
  ~background_server() {
    ::close(stdin_);
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    ::close(output_);
  }
  // What it printed so far.
  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  int output_ = -1;
  int stdin_ = -1;
  std::string log_;
};

// A free TCP port on 127.0.0.1 (for servers that take one from $PORT).
inline int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

// An MCP server started for one test, closed when the test's scope ends
// (before the registry, which it must not outlive).
struct started_server {
  std::shared_ptr<mcp::server> server;
  mcp_server_status status;
  started_server(mcp_server_config c, tool_registry& tools)
      : server(mcp::server::create(std::move(c), tools)), status(server->start()) {}
  ~started_server() { server->close(); }
  mcp::server* operator->() const { return server.get(); }
};

// A registered tool started the way the tool executor starts one.
struct started_call {
  std::function<void()> stop;
  std::shared_future<tool_outcome> outcome;

  tool_outcome wait(std::chrono::seconds limit = std::chrono::seconds(30)) const {
    REQUIRE(outcome.wait_for(limit) == std::future_status::ready);
    return outcome.get();
  }
};

inline started_call start_tool(tool_registry& tools, const std::string& name, boost::json::object arguments,
                               std::string traceparent = {}) {
  auto t = tools.find(name);
  INFO("tool " << name);
  REQUIRE(t);
  auto promise = std::make_shared<std::promise<tool_outcome>>();
  auto once = std::make_shared<std::once_flag>();
  started_call call;
  call.outcome = promise->get_future().share();
  tool_context ctx{"agent", "thread", "request", "call-1", 1, nullptr};
  ctx.traceparent = std::move(traceparent);
  call.stop = t->start_once(arguments, ctx, [promise, once](tool_outcome o) {
    std::call_once(*once, [&] { promise->set_value(std::move(o)); });
  });
  return call;
}

inline tool_outcome call_tool(tool_registry& tools, const std::string& name, boost::json::object arguments = {},
                              std::string traceparent = {}) {
  return start_tool(tools, name, std::move(arguments), std::move(traceparent)).wait();
}

// The text a successful outcome holds, or "error TYPE: MESSAGE".
inline std::string outcome_text(const tool_outcome& o) {
  if (const auto* e = std::get_if<error_info>(&o)) return "error " + e->type + ": " + e->message;
  const auto& v = std::get<boost::json::value>(o);
  return v.is_string() ? std::string(v.as_string()) : boost::json::serialize(v);
}

}  // namespace troupe::testing
