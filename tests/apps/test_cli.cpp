// The troupe command as a user runs it, against a local OpenAI-compatible or
// Anthropic server.

#include "support/http_test_server.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/fixtures.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace troupe::testing;
namespace json = boost::json;

namespace {


struct run_result {
  int exit_code;
  std::string out;
};

// Runs troupe with the arguments (a shell fragment); stderr joins stdout when asked.
run_result run_troupe(const std::string& args, bool with_stderr = false) {
  const std::string command = std::string(TROUPE_BINARY) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  std::FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

struct key_in_env {
  key_in_env() { ::setenv("TROUPE_TEST_KEY", "sk-cli-secret", 1); }
};

}  // namespace

TEST_CASE("troupe ask against an OpenAI-compatible server") {
  key_in_env key;
  http_test_server server;
  const std::string common = "--model openai:test-model --base-url " + server.base_url() +
                             "/v1 --api-key-env TROUPE_TEST_KEY --retries 1 ";

  SECTION("the answer streams to stdout") {
    server.respond(scripted_http_response::sse(fixture("openai_text.sse"), 16));
    const run_result r = run_troupe("ask " + common + "'Say hello'");
    CHECK(r.exit_code == 0);
    CHECK(r.out == "Hello, world\n");
    const recorded_request req = server.requests().at(0);
    CHECK(req.header("authorization") == "Bearer sk-cli-secret");
    CHECK(json::parse(req.body).at("messages").at(0).at("content") == "Say hello");
  }
  SECTION("--json reports the thread and the usage") {
    server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
    const run_result r = run_troupe("ask --json " + common + "'Say hello'");
    CHECK(r.exit_code == 0);
    const json::value v = json::parse(r.out);
    CHECK(v.at("status") == "completed");
    CHECK(v.at("answer") == "Hello, world");
    CHECK(v.at("usage").at("input_tokens") == 12);
    CHECK(v.at("error").is_null());
    REQUIRE(v.at("entries").as_array().size() == 2);
    CHECK(v.at("entries").at(1).at("payload").at("content") == "Hello, world");
  }
  SECTION("an auth failure exits non-zero, typed, without the key") {
    server.respond(scripted_http_response::json(401, R"({"error":{"message":"Incorrect API key provided"}})"));
    const run_result r = run_troupe("ask --json " + common + "'hi'");
    CHECK(r.exit_code == 1);
    const json::value v = json::parse(r.out);
    CHECK(v.at("status") == "error");
    CHECK(v.at("error").at("type") == "auth");
    CHECK(v.at("error").at("http_status") == 401);
    CHECK(v.at("error").at("attempts") == 1);
    CHECK(r.out.find("sk-cli-secret") == std::string::npos);
  }
  SECTION("a rate limit is retried and the answer still arrives") {
    server.respond(scripted_http_response::json(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "0"}}));
    server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
    CHECK(run_troupe("ask " + common + "'hi'").out == "Hello, world\n");
    CHECK(server.request_count() == 2);
  }
}

TEST_CASE("troupe ask against an Anthropic server, with a tool the model may not use") {
  key_in_env key;
  http_test_server server;
  server.respond(scripted_http_response::sse(fixture("anthropic_tool_use.sse")));
  server.respond(scripted_http_response::sse(fixture("anthropic_text.sse")));
  const run_result r = run_troupe("ask --json --model anthropic:claude-test --base-url " + server.base_url() +
                              " --api-key-env TROUPE_TEST_KEY 'Weather in Lisbon?'");
  CHECK(r.exit_code == 0);
  const json::value v = json::parse(r.out);
  CHECK(v.at("answer") == "Hello!");
  // "weather" is not enabled: the model was told so and the loop went on.
  const json::value second = json::parse(server.requests().at(1).body);
  const json::array& messages = second.at("messages").as_array();
  const json::value& result = messages.back().at("content").at(0);
  CHECK(result.at("type") == "tool_result");
  CHECK_THAT(std::string(result.at("content").as_string()), Catch::Contains("unknown_tool"));
  CHECK(result.at("is_error") == true);
}

TEST_CASE("troupe chat keeps the conversation across questions") {
  key_in_env key;
  http_test_server server;
  server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
  server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
  const auto questions = std::filesystem::temp_directory_path() / ("troupe-chat-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(questions) << "first question\n/thread\nsecond question\n";
  const run_result r = run_troupe("chat --store memory: --model openai:m --base-url " + server.base_url() +
                                  "/v1 --api-key-env TROUPE_TEST_KEY < " + questions.string());
  std::filesystem::remove(questions);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "Hello, world\nthread cli:default: 2 entries\nHello, world\n");
  // The second request carries the whole conversation.
  const json::value second = json::parse(server.requests().at(1).body);
  CHECK(second.at("messages").as_array().size() == 3);
}

TEST_CASE("Ctrl-C in troupe chat cancels the answer, not the chat") {
  const auto script = std::filesystem::temp_directory_path() / ("troupe-slow-" + std::to_string(::getpid()) + ".json");
  std::ofstream(script) << R"([{"chunks": ["Once upon a time"], "delay_ms": 600000}, {"text": "short answer"}])";

  int to_child[2], from_child[2];
  REQUIRE(::pipe(to_child) == 0);
  REQUIRE(::pipe(from_child) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(from_child[1], STDOUT_FILENO);
    ::dup2(::open("/dev/null", O_WRONLY), STDERR_FILENO);  // its notes are not what is tested
    ::close(to_child[1]);
    ::close(from_child[0]);
    const std::string path = script.string();
    ::execl(TROUPE_BINARY, TROUPE_BINARY, "chat", "--store", "memory:", "--script", path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  auto say = [&](const std::string& line) { REQUIRE(::write(to_child[1], line.data(), line.size()) == static_cast<ssize_t>(line.size())); };
  std::string out;
  auto read_until = [&](const std::string& text) {
    char buf[256];
    while (out.find(text) == std::string::npos) {
      const ssize_t n = ::read(from_child[0], buf, sizeof buf);
      if (n <= 0) return false;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  };

  say("tell me a long story\n");
  REQUIRE(read_until("Once upon a time"));  // the answer is being written
  ::kill(pid, SIGINT);
  say("and now?\n");
  REQUIRE(read_until("short answer"));
  ::close(to_child[1]);
  char rest[256];
  while (::read(from_child[0], rest, sizeof rest) > 0) {
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(from_child[0]);
  std::filesystem::remove(script);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("troupe simulate against a model server") {
  key_in_env key;
  http_test_server server;
  for (int i = 0; i < 10; ++i) server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
  const run_result r = run_troupe("simulate --agents 5 --turns 2 --concurrency 2 --model openai:m --base-url " +
                                  server.base_url() + "/v1 --api-key-env TROUPE_TEST_KEY --question 'Hi from {agent}' --json");
  CHECK(r.exit_code == 0);
  const json::value v = json::parse(r.out);
  CHECK(v.at("turns_completed") == 10);
  CHECK(v.at("turns_failed") == 0);
  CHECK(v.at("errors_by_type").as_object().empty());
  CHECK(v.at("retries") == 0);
  CHECK(v.at("input_tokens") == 120);
  CHECK(v.at("output_tokens") == 30);
  for (const char* k : {"p50", "p90", "p99", "max"}) CHECK(v.at("turn_latency_ms").as_object().contains(k));
  CHECK(v.at("first_token_ms").as_object().contains("p99"));
  CHECK(server.max_in_flight() <= 2);
}

TEST_CASE("the context options cut each call's context, and /context shows it") {
  key_in_env key;
  http_test_server server;
  for (int i = 0; i < 3; ++i) server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
  const auto questions = std::filesystem::temp_directory_path() / ("troupe-ctx-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(questions) << "one\ntwo\nthree\n/context\n";
  const run_result r = run_troupe("chat --store memory: --model openai:m --base-url " + server.base_url() +
                                  "/v1 --api-key-env TROUPE_TEST_KEY --keep-last-turns 1 --max-input-tokens 500 < " +
                                  questions.string());
  std::filesystem::remove(questions);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("context: ") && Catch::Contains("of 375 tokens") && Catch::Contains("older entries left out"));
  // The third call carried only its own question.
  const json::value third = json::parse(server.requests().at(2).body);
  REQUIRE(third.at("messages").as_array().size() == 1);
  CHECK(third.at("messages").at(0).at("content") == "three");
  CHECK(run_troupe("ask --context-policy huge --script x.json hi").exit_code != 0);
}

TEST_CASE("with a SQLite store, a second troupe ask on the same thread continues the conversation") {
  key_in_env key;
  http_test_server server;
  server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
  server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
  const auto db = std::filesystem::temp_directory_path() / ("troupe-cli-" + std::to_string(::getpid()) + ".db");
  const std::string common = "--json --store sqlite:" + db.string() + " --thread trip-7 --model openai:m --base-url " +
                             server.base_url() + "/v1 --api-key-env TROUPE_TEST_KEY ";
  CHECK(run_troupe("ask " + common + "'My name is Ada.'").exit_code == 0);
  const run_result second = run_troupe("ask " + common + "'What is my name?'");
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
  CHECK(second.exit_code == 0);
  const json::value v = json::parse(second.out);
  CHECK(v.at("thread_id") == "trip-7");
  CHECK(v.at("entries").as_array().size() == 4);  // both turns
  const json::value body = json::parse(server.requests().at(1).body);
  CHECK(body.at("messages").at(0).at("content") == "My name is Ada.");
  CHECK(body.at("messages").as_array().size() == 3);
}

TEST_CASE("troupe refuses what it cannot do, clearly") {
  SECTION("no API key") {
    const run_result r = run_troupe("ask --model openai:gpt-4o-mini --api-key-env TROUPE_NO_SUCH_KEY hi", true);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("no API key: set TROUPE_NO_SUCH_KEY"));
  }
  SECTION("an unreachable server") {
    const run_result r = run_troupe("ask --model m --base-url http://127.0.0.1:1/v1 --retries 0 hi", true);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("network"));
  }
  SECTION("a bad flag") {
    CHECK(run_troupe("ask --frobnicate hi").exit_code != 0);
  }
  SECTION("a store it cannot use") {
    const run_result r = run_troupe("ask --store postgres://localhost/x --script " + std::string(TROUPE_EXAMPLES_DIR) +
                                    "/scripts/calculator.json hi", true);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("PostgreSQL store is not built yet"));
  }
  SECTION("an unknown tool") {
    const run_result r = run_troupe("ask --script " + std::string(TROUPE_EXAMPLES_DIR) + "/scripts/calculator.json --tool nope hi", true);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("unknown tools: nope"));
  }
}

TEST_CASE("troupe ask offline with a scripted model and the calculator") {
  const run_result r =
      run_troupe("ask --json --script " + std::string(TROUPE_EXAMPLES_DIR) + "/scripts/calculator.json --tool calculator 'What is 12.5 * 8 + 3?'");
  CHECK(r.exit_code == 0);
  const json::value v = json::parse(r.out);
  CHECK(v.at("answer") == "12.5 \xC3\x97 8 + 3 = 103.");
  const json::array& entries = v.at("entries").as_array();
  REQUIRE(entries.size() == 4);
  CHECK(entries[2].at("payload").at("result").at("value") == 103);
}
