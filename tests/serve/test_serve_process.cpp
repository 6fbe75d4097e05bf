// `troupe serve` as a user runs it: a bad config is refused naming the
// field, SIGTERM drains with a stream open and exits 0, and an MCP server
// named in the config lends its tools to an agent.

#include "support/http_client.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace troupe::testing;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir() {
  fs::path d = fs::temp_directory_path() / ("troupe-serve-process-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

const std::string key_line = "[[keys]]\nkey = \"sk-process-test-0123456789\"\nuser = \"alice\"\n";

// `troupe serve` with a config it is expected to refuse: its exit status and what it printed.
std::pair<int, std::string> run_to_exit(const fs::path& config, const std::string& more_args = "") {
  const std::string command =
      std::string(TROUPE_BINARY) + " serve --config " + config.string() + " " + more_args + " 2>&1";
  std::FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[512];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  return {WEXITSTATUS(::pclose(p)), out};
}

// The server, started with its stdout on a pipe: the first line says its port.
struct serve_process {
  pid_t pid = -1;
  unsigned short port = 0;
  // max_files: the soft and hard RLIMIT_NOFILE the server runs under (0: this process's).
  explicit serve_process(const fs::path& config, rlim_t max_files = 0) {
    int out[2];
    REQUIRE(::pipe(out) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      if (max_files > 0) {
        const rlimit limit{max_files, max_files};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(126);
      }
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::execl(TROUPE_BINARY, TROUPE_BINARY, "serve", "--config", config.c_str(), "--listen", "127.0.0.1:0",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    char c;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(out[0]);
    const auto colon = line.rfind(':');
    REQUIRE(colon != std::string::npos);
    port = static_cast<unsigned short>(std::stoi(line.substr(colon + 1)));
  }
  int wait_exit() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // A test that failed before it stopped the server does not leave it running.
  ~serve_process() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

}  // namespace

TEST_CASE("troupe serve: a bad config is refused at start, naming the field") {
  const fs::path dir = scratch_dir();
  write_file(dir / "bad.toml",
             "[[agents]]\nid = \"a\"\nprovider = \"scripted\"\nscript = \"s.json\"\n"
             "double_texting = \"sometimes\"\n" +
                 key_line);
  const auto [status, out] = run_to_exit(dir / "bad.toml");
  CHECK(status == 2);
  CHECK_THAT(out, Catch::Contains("agents[0].double_texting"));
  fs::remove_all(dir);
}

TEST_CASE("troupe serve: an agent's unknown tool is refused at start (exit 2), naming the field") {
  const fs::path dir = scratch_dir();
  write_file(dir / "hi.json", "[{\"text\": \"hi\"}]");
  write_file(
      dir / "tools.toml",
      "[[agents]]\nid = \"a\"\nprovider = \"scripted\"\nscript = \"hi.json\"\ntools = [\"calculator\", \"x\"]\n" +
          key_line);
  const auto [status, out] = run_to_exit(dir / "tools.toml");
  CHECK(status == 2);
  CHECK_THAT(out, Catch::Contains("agents[0].tools[1]: no tool named \"x\""));
  fs::remove_all(dir);
}

TEST_CASE("troupe serve --cluster: a database that is not PostgreSQL, or cannot be reached, is refused (exit 2)") {
  const fs::path dir = scratch_dir();
  write_file(dir / "hi.json", "[{\"text\": \"hi\"}]");
  write_file(dir / "node.toml", "[[agents]]\nid = \"a\"\nprovider = \"scripted\"\nscript = \"hi.json\"\n" + key_line);
  ::setenv("TROUPE_CLUSTER_SECRET", "process-test-cluster-secret", 1);
  SECTION("not PostgreSQL: the field is named") {
    const auto [status, out] = run_to_exit(dir / "node.toml", "--cluster sqlite:/tmp/x.db");
    CHECK(status == 2);
    CHECK_THAT(out, Catch::Contains("cluster.database: must be a PostgreSQL URI"));
  }
  SECTION("a server that does not answer: the cluster's error") {
    const auto [status, out] = run_to_exit(dir / "node.toml", "--cluster postgres://troupe@127.0.0.1:1/none");
    CHECK(status == 2);
    CHECK_THAT(out, Catch::Contains("refused: cluster: "));
  }
  ::unsetenv("TROUPE_CLUSTER_SECRET");
  fs::remove_all(dir);
}

TEST_CASE("troupe serve: SIGTERM with a stream open ends its turn with a shutdown error and exits 0") {
  const fs::path dir = scratch_dir();
  // The model takes a minute: longer than the drain deadline.
  write_file(dir / "slow.json", "[{\"text\": \"late\", \"delay_ms\": 60000}]");
  write_file(dir / "serve.toml", "store = \"sqlite:" + (dir / "serve.db").string() +
                                     "\"\ndrain_deadline_seconds = 0.2\n[[agents]]\nid = \"slow\"\n"
                                     "provider = \"scripted\"\nscript = \"slow.json\"\n" +
                                     key_line);
  serve_process server(dir / "serve.toml");
  http_client c(server.port);
  const http_reply head = c.open_stream("/v1/conversations/web/c1/messages", "{\"agent\":\"slow\",\"content\":\"hi\"}",
                                        {{"Authorization", "Bearer sk-process-test-0123456789"}});
  REQUIRE(head.status == 200);
  REQUIRE(c.next_event()->name == "conversation");
  ::kill(server.pid, SIGTERM);
  const auto rest = c.rest_of_stream();
  REQUIRE_FALSE(rest.empty());
  CHECK(rest.back().name == "error");
  CHECK(rest.back().data.at("error").at("type") == "shutdown");
  CHECK(server.wait_exit() == 0);
  fs::remove_all(dir);
}

namespace {

int connect_to(unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(port);
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) == 0);
  return fd;
}

}  // namespace

TEST_CASE("troupe serve: out of file descriptors, a new client is refused with 503 and the server recovers") {
  const fs::path dir = scratch_dir();
  write_file(dir / "hi.json", "[{\"text\": \"hi\"}]");
  write_file(dir / "serve.toml", "store = \"sqlite:" + (dir / "serve.db").string() +
                                     "\"\n[[agents]]\nid = \"a\"\nprovider = \"scripted\"\nscript = \"hi.json\"\n" +
                                     key_line);
  // Far below max_connections: the process runs out of descriptors first.
  serve_process server(dir / "serve.toml", 64);
  std::vector<int> clients;
  for (int i = 0; i < 100; ++i) clients.push_back(connect_to(server.port));
  // The clients the server took wait for their request's head and send
  // nothing; those it could not take are answered at once.
  std::vector<pollfd> watch;
  for (int fd : clients) watch.push_back({fd, POLLIN, 0});
  std::size_t refused = 0;
  std::string first;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (refused == 0 && std::chrono::steady_clock::now() < until) {
    REQUIRE(::poll(watch.data(), watch.size(), 100) >= 0);
    for (auto& w : watch) {
      if (!(w.revents & POLLIN)) continue;
      char buf[512];
      const ssize_t n = ::recv(w.fd, buf, sizeof buf, 0);
      w.events = 0;
      if (n <= 0) continue;
      if (first.empty()) first.assign(buf, static_cast<std::size_t>(n));
      ++refused;
    }
  }
  CHECK(refused > 0);
  CHECK_THAT(first, Catch::StartsWith("HTTP/1.1 503"));
  CHECK_THAT(first, Catch::Contains("too_many_connections"));
  for (int fd : clients) ::close(fd);
  // The server learns of the closes on its own time: asked again until it answers.
  unsigned status = 0;
  const auto again = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (status != 200 && std::chrono::steady_clock::now() < again) {
    http_client c(server.port);
    status = c.send(http::verb::post, "/v1/conversations/web/c1/messages", "{\"agent\":\"a\",\"content\":\"hi\"}",
                    {{"Authorization", "Bearer sk-process-test-0123456789"}})
                 .status;
  }
  CHECK(status == 200);
  ::kill(server.pid, SIGTERM);
  CHECK(server.wait_exit() == 0);
  fs::remove_all(dir);
}

TEST_CASE("troupe serve: the example config runs offline") {
  ::setenv("TROUPE_BOB_KEY", "sk-example-bob-0123456789", 1);
  const fs::path dir = scratch_dir();
  // The example keeps its store next to where the server runs: run it here.
  const fs::path before = fs::current_path();
  fs::current_path(dir);
  serve_process server(fs::path(TROUPE_EXAMPLES_DIR) / "serve.toml");
  fs::current_path(before);
  http_client c(server.port);
  const http_reply r = c.send(http::verb::post, "/v1/conversations/web/c1/messages",
                              "{\"agent\":\"calculator\",\"content\":\"What is 12.5 * 8 + 3?\"}",
                              {{"Authorization", "Bearer sk-example-alice-0123456789"}});
  CHECK(r.status == 200);
  CHECK(r.json().at("answer") == "12.5 × 8 + 3 = 103.");
  ::kill(server.pid, SIGINT);
  CHECK(server.wait_exit() == 0);
  fs::remove_all(dir);
}

TEST_CASE("troupe serve: an agent calls a tool of the MCP server its config names") {
  const std::string entry =
      std::string(TROUPE_MCP_DIR) + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  if (!fs::exists(entry))
    FAIL("server-everything is not installed: run `npm ci --prefix tests/mcp` (scripts/test.sh does)");
  const fs::path dir = scratch_dir();
  write_file(dir / "echo.json", R"([
    {"tool_calls": [{"id": "call-1", "name": "everything__echo", "arguments": {"message": "through serve"}}]},
    {"text": "It echoed."}])");
  write_file(dir / "serve.toml", "store = \"sqlite:" + (dir / "serve.db").string() +
                                     "\"\n[mcp]\nservers = [\"everything=node " + entry +
                                     " stdio\"]\n[[agents]]\nid = \"echoer\"\nprovider = \"scripted\"\n"
                                     "script = \"echo.json\"\ntools = [\"everything__echo\"]\n" +
                                     key_line);
  serve_process server(dir / "serve.toml");
  const header_list alice{{"Authorization", "Bearer sk-process-test-0123456789"}};
  http_client c(server.port);
  const http_reply r = c.send(http::verb::post, "/v1/conversations/web/c1/messages",
                              "{\"agent\":\"echoer\",\"content\":\"echo\"}", alice);
  REQUIRE(r.status == 200);
  CHECK(r.json().at("answer") == "It echoed.");
  const std::string id(r.json().at("conversation_id").as_string());
  const http_reply trace = c.send(http::verb::get, "/v1/conversations/" + id + "/trace", "", alice);
  REQUIRE(trace.status == 200);
  const boost::json::value v = trace.json();
  const auto& entries = v.at("entries").as_array();
  REQUIRE(entries.size() == 4);
  CHECK(entries[2].at("kind") == "tool_result");
  CHECK(entries[2].at("payload").at("result") == "Echo: through serve");
  ::kill(server.pid, SIGTERM);
  CHECK(server.wait_exit() == 0);
  fs::remove_all(dir);
}
