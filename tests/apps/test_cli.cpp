// The troupe command as a user runs it, against a local OpenAI-compatible or
// Anthropic server.

#include "support/http_test_server.hpp"
#include "support/otlp_receiver.hpp"

#include "support/troupe_command.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/fixtures.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

using namespace troupe::testing;
namespace json = boost::json;

namespace {

struct key_in_env {
  key_in_env() { ::setenv("TROUPE_TEST_KEY", "sk-cli-secret", 1); }
};

}  // namespace

TEST_CASE("troupe ask against an OpenAI-compatible server") {
  key_in_env key;
  http_test_server server;
  const std::string common =
      "--model openai:test-model --base-url " + server.base_url() + "/v1 --api-key-env TROUPE_TEST_KEY --retries 1 ";

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
  SECTION("--json says how many model calls reported no usage instead of counting zero tokens") {
    server.respond(scripted_http_response::sse(
        "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"));
    const run_result r = run_troupe("ask --json " + common + "'Say hello'");
    CHECK(r.exit_code == 0);
    const json::value v = json::parse(r.out);
    CHECK(v.at("answer") == "Hi");
    CHECK(v.at("usage").at("calls_without_usage") == 1);
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
  const auto questions =
      std::filesystem::temp_directory_path() / ("troupe-chat-" + std::to_string(::getpid()) + ".txt");
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
    ::execl(TROUPE_BINARY, TROUPE_BINARY, "chat", "--store", "memory:", "--script", path.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  auto say = [&](const std::string& line) {
    REQUIRE(::write(to_child[1], line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  };
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
  const run_result r =
      run_troupe("simulate --agents 5 --turns 2 --concurrency 2 --model openai:m --base-url " + server.base_url() +
                 "/v1 --api-key-env TROUPE_TEST_KEY --question 'Hi from {agent}' --json");
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

TEST_CASE("troupe prints numbers in JSON as plain decimals") {
  // Offline, with the built-in scripted model: seconds, rates and latencies are doubles.
  const run_result r = run_troupe("simulate --agents 3 --turns 2 --tools-per-turn 1 --json");
  REQUIRE(r.exit_code == 0);
  INFO(r.out);
  const json::value v = json::parse(r.out);
  CHECK(v.at("seconds").is_double());
  CHECK(v.at("turns_per_second").is_double());
  // Boost.JSON's own serializer wrote 2.4E1 and 3.0335854E-2.
  CHECK(r.out.find_first_of("E") == std::string::npos);
  const std::size_t at = r.out.find("\"turns_per_second\":");
  REQUIRE(at != std::string::npos);
  const std::string number = r.out.substr(at + 19, r.out.find_first_of(",}", at) - at - 19);
  CHECK(number.find_first_not_of("0123456789.") == std::string::npos);
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
  CHECK_THAT(r.out, Catch::Contains("context: ") && Catch::Contains("of 375 tokens") &&
                        Catch::Contains("older entries left out"));
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
  SECTION("a bad flag") { CHECK(run_troupe("ask --frobnicate hi").exit_code != 0); }
  SECTION("a store it cannot use") {
    const run_result r = run_troupe("ask --store postgres://troupe@127.0.0.1:1/x --script " +
                                        std::string(TROUPE_EXAMPLES_DIR) + "/scripts/calculator.json hi",
                                    true);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("cannot connect to PostgreSQL"));
    const run_result unknown = run_troupe("threads list --store mysql://x", true);
    CHECK(unknown.exit_code == 2);
    CHECK_THAT(unknown.out, Catch::Contains("unknown store mysql://x"));
  }
  SECTION("an unknown tool") {
    const run_result r = run_troupe(
        "ask --script " + std::string(TROUPE_EXAMPLES_DIR) + "/scripts/calculator.json --tool nope hi", true);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("unknown tools: nope"));
  }
}

TEST_CASE("troupe ask offline with a scripted model and the calculator") {
  const run_result r = run_troupe("ask --json --script " + std::string(TROUPE_EXAMPLES_DIR) +
                                  "/scripts/calculator.json --tool calculator 'What is 12.5 * 8 + 3?'");
  CHECK(r.exit_code == 0);
  const json::value v = json::parse(r.out);
  CHECK(v.at("answer") == "12.5 \xC3\x97 8 + 3 = 103.");
  const json::array& entries = v.at("entries").as_array();
  REQUIRE(entries.size() == 4);
  CHECK(entries[2].at("payload").at("result").at("value") == 103);
}

namespace {

// A temporary SQLite file for one test, removed with its WAL files.
struct temp_db {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("troupe-cli-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".db");
  std::string uri() const { return "sqlite:" + path.string(); }
  ~temp_db() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  }
  static inline int counter = 0;
};

// A scripted model that answers every question with one line.
struct echo_script {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("troupe-cli-script-" + std::to_string(::getpid()) + ".json");
  echo_script() { std::ofstream(path) << R"([{"text": "Noted."}])"; }
  ~echo_script() { std::filesystem::remove(path); }
  std::string flags() const { return "--script " + path.string(); }
};

json::value run_json(const std::string& args) {
  const run_result r = run_troupe(args);
  INFO("troupe " << args << "\n" << r.out);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("troupe ask --user continues that user's conversation on a durable store") {
  temp_db db;
  echo_script script;
  const std::string as_ana =
      "ask --json --store " + db.uri() + " " + script.flags() + " --user ana --platform telegram --chat-id 42 ";
  const json::value first = run_json(as_ana + "'Remember the number 7.'");
  const json::value second = run_json(as_ana + "'Which number?'");
  CHECK(second.at("conversation_id") == first.at("conversation_id"));
  CHECK(second.at("thread_id") == first.at("thread_id"));
  CHECK(second.at("entries").as_array().size() == 4);  // both turns

  SECTION("another chat of the same user is another conversation") {
    const json::value other = run_json("ask --json --store " + db.uri() + " " + script.flags() +
                                       " --user ana --platform telegram --chat-id 43 hi");
    CHECK(other.at("conversation_id") != first.at("conversation_id"));
    CHECK(other.at("entries").as_array().size() == 2);
  }
  SECTION("--thread and --user together are refused") {
    const run_result r = run_troupe(as_ana + "--thread t1 hi", true);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("not both"));
  }
}

TEST_CASE("a question in another locale's bytes is committed mended, and the thread goes on") {
  temp_db db;
  echo_script script;
  const std::string ask = "ask --json --store " + db.uri() + " " + script.flags() + " --thread t-latin1 ";
  // Latin-1 bytes, as a terminal in that locale passes them.
  const json::value first = run_json(ask + "\"$(printf 'caf\\351 cr\\350me')\"");
  CHECK(first.at("entries").at(0).at("payload").at("content") == "caf\xEF\xBF\xBD cr\xEF\xBF\xBDme");
  const json::value second = run_json(ask + "again");
  CHECK(second.at("entries").as_array().size() == 4);
}

TEST_CASE("a telemetry collector that never answers delays troupe ask's end by about a second") {
  http_test_server collector;
  collector.respond_always(scripted_http_response::never());
  struct endpoint_in_env {
    explicit endpoint_in_env(const std::string& url) { ::setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url.c_str(), 1); }
    ~endpoint_in_env() { ::unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT"); }
  } traced(collector.base_url());
  echo_script script;
  const auto start = std::chrono::steady_clock::now();
  const json::value answer = run_json("ask --json " + script.flags() + " hi");
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(answer.at("answer") == "Noted.");
  CHECK(collector.requests().size() >= 1);  // the spans went out, and were never answered
  // A flush of one second, then no second wait at the exporter's end (it
  // was ten seconds, five for each).
  CHECK(took < std::chrono::seconds(5));
}

TEST_CASE("troupe threads and troupe conversations manage what is stored") {
  temp_db db;
  echo_script script;
  const std::string store = " --store " + db.uri() + " --json";
  const json::value asked = run_json("ask --json --store " + db.uri() + " " + script.flags() +
                                     " --user bo --chat-id c1 'Plan a trip to Lisbon'");
  run_json("ask --json --store " + db.uri() + " " + script.flags() + " --user bo --chat-id c1 'In May'");
  const std::string thread_id(asked.at("thread_id").as_string());
  const std::string conv_id(asked.at("conversation_id").as_string());

  SECTION("threads list and show, in the entries shape of ask --json") {
    CHECK(run_json("threads list" + store).at("threads") == json::array{json::value(thread_id)});
    const json::value shown = run_json("threads show " + thread_id + store);
    CHECK(shown.at("thread_id").as_string() == thread_id);
    const json::array& entries = shown.at("entries").as_array();
    REQUIRE(entries.size() == 4);
    CHECK(entries[0].at("payload").at("content") == "Plan a trip to Lisbon");
    CHECK(entries[0].at("seq") == 0);
    CHECK(entries[0].at("kind") == "message");
    for (const char* key : {"seq", "kind", "payload", "refs"})
      CHECK(entries[1].as_object().contains(key) == asked.at("entries").at(1).as_object().contains(key));
    const run_result text = run_troupe("threads show " + thread_id + " --store " + db.uri());
    CHECK_THAT(text.out, Catch::Contains("user: Plan a trip to Lisbon"));
  }
  SECTION("threads fork keeps entries up to --at, and delete removes a thread") {
    const json::value forked = run_json("threads fork " + thread_id + " --at 1 --as alt" + store);
    CHECK(forked.at("entries") == 2);
    const json::value alt = run_json("threads show alt" + store);
    CHECK(alt.at("entries").as_array().size() == 2);
    CHECK(alt.at("metadata").at("forked_from").at("thread_id").as_string() == thread_id);
    CHECK(run_json("threads delete alt" + store).at("deleted") == "alt");
    const run_result gone = run_troupe("threads show alt --store " + db.uri(), true);
    CHECK(gone.exit_code == 1);
    CHECK_THAT(gone.out, Catch::Contains("not_found"));
  }
  SECTION("conversations list, show and trace") {
    const json::value listed = run_json("conversations list --user bo" + store);
    REQUIRE(listed.at("conversations").as_array().size() == 1);
    const json::value& c = listed.at("conversations").at(0);
    CHECK(c.at("id").as_string() == conv_id);
    CHECK(c.at("title") == "Plan a trip to Lisbon");
    CHECK(c.at("platform") == "cli");
    const json::value shown = run_json("conversations show " + conv_id + " --limit 2" + store);
    REQUIRE(shown.at("history").as_array().size() == 2);
    CHECK(shown.at("history").at(0).at("payload").at("content") == "In May");
    const json::value traced = run_json("conversations trace " + conv_id + store);
    CHECK(traced.at("totals").at("messages") == 4);
    CHECK(traced.at("totals").at("user_messages") == 2);
    CHECK(traced.at("entries").as_array().size() == 4);
  }
  SECTION("an archived conversation leaves the list, and its chat starts afresh") {
    CHECK(run_json("conversations archive " + conv_id + store).at("conversation").at("archived") == true);
    CHECK(run_json("conversations list --user bo" + store).at("conversations").as_array().empty());
    const json::value next =
        run_json("ask --json --store " + db.uri() + " " + script.flags() + " --user bo --chat-id c1 hi");
    CHECK(next.at("conversation_id").as_string() != conv_id);
    CHECK(next.at("entries").as_array().size() == 2);
  }
  SECTION("conversations delete removes the conversation and its thread") {
    CHECK(run_json("conversations delete " + conv_id + store).at("deleted").as_string() == conv_id);
    CHECK(run_json("threads list" + store).at("threads").as_array().empty());
    CHECK(run_troupe("conversations show " + conv_id + store).exit_code == 1);
  }
}

TEST_CASE("troupe ask continues a conversation kept in PostgreSQL") {
  const char* server = std::getenv("TROUPE_TEST_POSTGRES");
  if (!server) {
    std::cout << "troupe-skip: no PostgreSQL server (TROUPE_TEST_POSTGRES is unset)" << std::endl;
    return;
  }
  echo_script script;
  const std::string user = "pg-" + std::to_string(::getpid());
  const std::string as_user =
      "ask --json --store " + std::string(server) + " " + script.flags() + " --user " + user + " ";
  const json::value first = run_json(as_user + "'First question'");
  const json::value second = run_json(as_user + "'Second question'");
  CHECK(second.at("conversation_id") == first.at("conversation_id"));
  CHECK(second.at("entries").as_array().size() == 4);
  const json::value listed = run_json("conversations list --json --user " + user + " --store " + server);
  CHECK(listed.at("conversations").at(0).at("title") == "First question");
}

// One writer per thread across processes: real troupe processes on one store.

namespace {

// The thread as the store holds it, read by a third process.
json::array stored_entries(const std::string& store, const std::string& thread_id) {
  const json::value shown = run_json("threads show " + thread_id + " --json --store " + store);
  return shown.at("entries").as_array();
}

// Every entry in seq order from 0, each id once.
void check_contiguous(const json::array& entries) {
  std::set<std::string> ids;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    CHECK(entries[i].at("seq").to_number<std::int64_t>() == static_cast<std::int64_t>(i));
    CHECK(ids.insert(std::string(entries[i].at("id").as_string())).second);
  }
}

// `n` troupe asks on one thread at once; the JSON each printed.
std::vector<json::value> concurrent_asks(const std::string& store, const std::string& script_flags, int n) {
  const auto dir = std::filesystem::temp_directory_path() / ("troupe-cli-race-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string command;
  for (int i = 0; i < n; ++i)
    command += std::string(TROUPE_BINARY) + " ask --json --timeout 60 --thread shared --store '" + store + "' " +
               script_flags + " 'question " + std::to_string(i) + "' > " + (dir / std::to_string(i)).string() +
               " 2>/dev/null & ";
  command += "wait";
  REQUIRE(std::system(command.c_str()) == 0);
  std::vector<json::value> out;
  for (int i = 0; i < n; ++i) {
    std::ifstream in(dir / std::to_string(i));
    std::stringstream text;
    text << in.rdbuf();
    INFO("ask " << i << " printed: " << text.str());
    boost::system::error_code ec;
    out.push_back(json::parse(text.str(), ec));
    REQUIRE(!ec);
  }
  std::filesystem::remove_all(dir);
  return out;
}

void check_race(const std::string& store, const std::string& script_flags) {
  const std::vector<json::value> results = concurrent_asks(store, script_flags, 12);
  int answered = 0;
  for (const json::value& r : results) {
    if (r.at("status") == "completed") {
      ++answered;
      continue;
    }
    // Every conflict is a typed error, and says who holds the thread.
    CHECK(r.at("error").at("type") == "thread_owned_elsewhere");
  }
  CHECK(answered >= 1);
  const json::array entries = stored_entries(store, "shared");
  check_contiguous(entries);
  CHECK(entries.size() == static_cast<std::size_t>(2 * answered));  // each answered ask: its question and answer
}

}  // namespace

TEST_CASE("troupe processes asking on one thread at once: one writes at a time, the others are told who") {
  echo_script script;
  SECTION("on one SQLite file") {
    temp_db db;
    check_race(db.uri(), script.flags());
  }
  SECTION("on one PostgreSQL database") {
    const char* server = std::getenv("TROUPE_TEST_POSTGRES");
    if (!server) {
      std::cout << "troupe-skip: no PostgreSQL server (TROUPE_TEST_POSTGRES is unset)" << std::endl;
      return;
    }
    // A schema of this test's own, so that the thread starts empty.
    const std::string schema = "troupe_race_" + std::to_string(::getpid());
    REQUIRE(std::system(
                ("psql -q '" + std::string(server) + "' -c 'CREATE SCHEMA " + schema + "' >/dev/null").c_str()) == 0);
    const std::string separator = std::string(server).find('?') == std::string::npos ? "?" : "&";
    check_race(std::string(server) + separator + "options=-csearch_path%3D" + schema, script.flags());
    std::system(
        ("psql -q '" + std::string(server) + "' -c 'DROP SCHEMA " + schema + " CASCADE' >/dev/null 2>&1").c_str());
  }
}

// Its lease is live for another minute, but it names a process of this
// host that is gone: the next process need not wait it out.
TEST_CASE("a troupe process killed mid-turn: the next process on this host takes its thread over at once") {
  temp_db db;
  echo_script script;
  const auto slow =
      std::filesystem::temp_directory_path() / ("troupe-cli-slow-" + std::to_string(::getpid()) + ".json");
  std::ofstream(slow) << R"([{"text": "never", "delay_ms": 600000}])";

  // The owner: its question is committed, then it waits for a model that never answers.
  const pid_t owner = ::fork();
  if (owner == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::execl(TROUPE_BINARY, TROUPE_BINARY, "ask", "--lease-ttl", "60", "--thread", "t", "--store", db.uri().c_str(),
            "--script", slow.c_str(), "first question", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  REQUIRE(owner > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (run_troupe("threads show t --json --store " + db.uri()).exit_code != 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  }
  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);

  const run_result r =
      run_troupe("ask --json --thread t --store " + db.uri() + " " + script.flags() + " 'second question'");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.out).at("answer") == "Noted.");
  const json::array entries = stored_entries(db.uri(), "t");
  check_contiguous(entries);
  REQUIRE(entries.size() == 3);  // the killed owner's question, then the new turn
  CHECK(entries[0].at("payload").at("content") == "first question");
  CHECK(entries[1].at("payload").at("content") == "second question");
  std::filesystem::remove(slow);
}

namespace {

// Sets environment variables for the commands a test runs, and removes them after.
struct scoped_env {
  std::vector<std::string> names;
  scoped_env(std::initializer_list<std::pair<std::string, std::string>> vars) {
    for (const auto& [k, v] : vars) {
      ::setenv(k.c_str(), v.c_str(), 1);
      names.push_back(k);
    }
  }
  ~scoped_env() {
    for (const auto& k : names) ::unsetenv(k.c_str());
  }
};

}  // namespace

TEST_CASE("troupe sends traces to the collector OTEL_EXPORTER_OTLP_ENDPOINT names") {
  key_in_env key;
  otlp_receiver collector;
  const std::string endpoint = collector.server().base_url();

  SECTION("ask: the request and its model call, with the model server given the call's traceparent") {
    http_test_server server;
    server.respond(scripted_http_response::sse(fixture("openai_text.sse")));
    scoped_env env{{"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint}, {"OTEL_SERVICE_NAME", "cli-test"}};
    const run_result r = run_troupe("ask --model openai:test-model --base-url " + server.base_url() +
                                    "/v1 --api-key-env TROUPE_TEST_KEY 'Say hello'");
    CHECK(r.exit_code == 0);
    REQUIRE(collector.server().request_count() >= 1);
    const auto body = json::parse(collector.server().requests().at(0).body);
    CHECK(body.at("resourceSpans").at(0).at("resource").at("attributes").at(0).at("value").at("stringValue") ==
          "cli-test");
    const auto chats = collector.spans_named("chat test-model");
    REQUIRE(chats.size() == 1);
    const auto requests = collector.spans_named("invoke_agent cli");
    REQUIRE(requests.size() == 1);
    CHECK(chats[0].at("parentSpanId") == requests[0].at("spanId"));
    const std::string traceparent = server.requests().at(0).header("traceparent");
    CHECK(traceparent.find(std::string(chats[0].at("spanId").as_string())) != std::string::npos);
  }
  SECTION("simulate: one invoke_agent span per turn") {
    scoped_env env{{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint + "/v1/traces"}};
    const run_result r = run_troupe("simulate --agents 3 --turns 2 --tools-per-turn 1 --json");
    CHECK(r.exit_code == 0);
    std::size_t requests = 0, tools = 0;
    for (const auto& s : collector.spans()) {
      const std::string name(s.at("name").as_string());
      requests += name.rfind("invoke_agent ", 0) == 0;
      tools += name.rfind("execute_tool ", 0) == 0;
    }
    CHECK(requests == 6);
    CHECK(tools == 6);
  }
  SECTION("OTEL_SDK_DISABLED=true sends nothing") {
    scoped_env env{{"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint}, {"OTEL_SDK_DISABLED", "true"}};
    CHECK(run_troupe("simulate --agents 2 --turns 1 --json").exit_code == 0);
    CHECK(collector.server().request_count() == 0);
  }
}

namespace {

// A scripted model's replies, in a file for --script.
struct script_file {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("troupe-cli-mcp-" + std::to_string(::getpid()) + ".json");
  explicit script_file(const std::string& replies) { std::ofstream(path) << replies; }
  ~script_file() { std::filesystem::remove(path); }
};

std::string mcp_package(const std::string& name) {
  const std::string entry =
      std::string(TROUPE_MCP_DIR) + "/node_modules/@modelcontextprotocol/" + name + "/dist/index.js";
  if (!std::filesystem::exists(entry))
    FAIL(name << " is not installed: run `npm ci --prefix tests/mcp` (scripts/test.sh does)");
  return entry;
}

}  // namespace

TEST_CASE("troupe chat asks y/n/edit when a call waits for approval, and asks ask_human's question inline") {
  temp_db db;
  script_file script(R"([
    {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "2+2"}}]},
    {"text": "ran it"},
    {"tool_calls": [{"id": "c2", "name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "left it"},
    {"tool_calls": [{"id": "c3", "name": "calculator", "arguments": {"expression": "1+1"}}]},
    {"text": "ran the edit"},
    {"tool_calls": [{"id": "q1", "name": "ask_human", "arguments": {"question": "Which day?"}}]},
    {"text": "booked"}])");
  // What the user types, a line at a time: an edit that does not fit the
  // schema and one that is not JSON are asked again.
  const auto typed = std::filesystem::temp_directory_path() / ("troupe-chat-typed-" + std::to_string(::getpid()));
  std::ofstream(typed) << "add\ny\nmultiply\nn\nadd again\nedit\n{\"expression\": 5}\nedit\nnot json\nedit\n"
                          "{\"expression\": \"3*3\"}\nbook\nTuesday\n";
  const std::string command = "cat " + typed.string() + " | " + TROUPE_BINARY + " chat --store " + db.uri() +
                              " --script " + script.path.string() +
                              " --approve calculator --tool ask_human 2>/dev/null";
  const run_result r = run_shell(command);
  std::filesystem::remove(typed);
  const std::string& out = r.out;
  INFO(out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(out,
             Catch::Contains(
                 R"([approval] calculator {"expression":"2+2"} (calculator requires approval): run it? y/n/edit)"));
  CHECK_THAT(out, Catch::Contains("ran it\n"));
  CHECK_THAT(out, Catch::Contains("left it\n"));
  CHECK_THAT(out, Catch::Contains("[invalid_arguments: "));
  CHECK_THAT(out, Catch::Contains("[invalid_arguments: not a JSON object] run it? y/n/edit"));
  CHECK_THAT(out, Catch::Contains("ran the edit\n"));
  CHECK_THAT(out, Catch::Contains("[question] Which day?\n"));
  CHECK_THAT(out, Catch::Contains("booked\n"));

  // The thread holds what was decided and what ran.
  const json::value shown = run_json("threads show cli:default --store " + db.uri() + " --json");
  std::map<std::string, json::value> results;
  int decisions = 0;
  for (const json::value& e : shown.at("entries").as_array()) {
    if (e.at("kind") == "decision") ++decisions;
    if (e.at("kind") == "tool_result") {
      const json::object& payload = e.at("payload").as_object();
      results[std::string(e.at("refs").at("tool_call_id").as_string())] =
          payload.contains("result") ? payload.at("result") : payload.at("error").at("type");
    }
  }
  CHECK(decisions == 4);
  CHECK(results["c1"].at("value") == 4);
  CHECK(results["c2"] == "rejected");
  CHECK(results["c3"].at("value") == 9);  // the edited arguments, not the model's
  CHECK(results["q1"] == "Tuesday");
}

TEST_CASE("troupe ask calls a tool of an MCP server, and the result lands in the thread") {
  SECTION("server-everything's echo, over stdio") {
    script_file script(R"([
      {"tool_calls": [{"id": "call-1", "name": "everything__echo", "arguments": {"message": "from the model"}}]},
      {"text": "The server echoed it."}])");
    const run_result r =
        run_troupe("ask --json --provider scripted --script " + script.path.string() + " --mcp 'everything=node " +
                   mcp_package("server-everything") + " stdio' 'Echo something'");
    CHECK(r.exit_code == 0);
    const json::value v = json::parse(r.out);
    CHECK(v.at("answer") == "The server echoed it.");
    const json::array& entries = v.at("entries").as_array();
    REQUIRE(entries.size() == 4);
    CHECK(entries[1].at("payload").at("name") == "everything__echo");
    CHECK(entries[2].at("kind") == "tool_result");
    CHECK(entries[2].at("payload").at("result") == "Echo: from the model");
  }
  SECTION("a server that dies mid-call: the model reads mcp_server_exited and the question is still answered") {
    script_file script(R"([
      {"tool_calls": [{"id": "call-1", "name": "fake__crash", "arguments": {}}]},
      {"text": "The tool failed."}])");
    const run_result r =
        run_troupe("ask --json --provider scripted --script " + script.path.string() + " --mcp 'fake=node " +
                   std::string(TROUPE_MCP_DIR) + "/fake_server.mjs legacy' 'Crash it'");
    CHECK(r.exit_code == 0);
    const json::value v = json::parse(r.out);
    CHECK(v.at("answer") == "The tool failed.");
    CHECK(v.at("entries").as_array()[2].at("payload").at("error").at("type") == "mcp_server_exited");
  }
  SECTION("a server that cannot be started is a usage error naming it") {
    const run_result r = run_troupe(
        "ask --script " + std::string(TROUPE_EXAMPLES_DIR) + "/scripts/calculator.json --mcp 'gone=/nonexistent/x' hi",
        true);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("the MCP server gone could not be used: mcp_unavailable"));
  }
  SECTION("a header from an unset variable is a usage error, and the variable's value is never printed") {
    ::setenv("TROUPE_TEST_MCP_SECRET", "s3cr3t-value", 1);
    const run_result unset = run_troupe("ask --script " + std::string(TROUPE_EXAMPLES_DIR) +
                                            "/scripts/calculator.json --mcp 'web=http://127.0.0.1:1/mcp' "
                                            "--mcp-header 'web:Authorization=TROUPE_TEST_NO_SUCH_VAR' hi",
                                        true);
    CHECK(unset.exit_code == 2);
    CHECK_THAT(unset.out, Catch::Contains("TROUPE_TEST_NO_SUCH_VAR"));
    const run_result unreachable = run_troupe("ask --script " + std::string(TROUPE_EXAMPLES_DIR) +
                                                  "/scripts/calculator.json --mcp 'web=http://127.0.0.1:1/mcp' "
                                                  "--mcp-header 'web:Authorization=TROUPE_TEST_MCP_SECRET' hi",
                                              true);
    CHECK(unreachable.exit_code == 2);
    CHECK_THAT(unreachable.out, Catch::Contains("the MCP server web could not be used"));
    CHECK(unreachable.out.find("s3cr3t-value") == std::string::npos);
  }
}
