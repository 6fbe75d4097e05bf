// The stdio transport against servers that break their pipes on purpose: one
// that stops reading its stdin while troupe writes, one that exits while a
// process it started keeps its stdout or stderr open, one that closes its
// stdout or stdin and lives on. Calls fail at once with typed errors, the
// server is started again, and no caller (sending, closing) waits on it.
// Every request is made on a thread of its own, so that one that blocks its
// caller fails the test instead of hanging it.

#include "runtime/mcp/detail/client.hpp"
#include "runtime/mcp/detail/stdio_transport.hpp"
#include "runtime/mcp/detail/tool_adapter.hpp"

#include "support/detached.hpp"
#include "support/mcp_servers.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <signal.h>

#include <atomic>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;
using std::chrono::milliseconds;

namespace {

using reply_future = std::future<mcp::rpc_reply>;

// A client whose first start runs `first`, and every later one the
// well-behaved legacy fake: a restart is seen to work.
std::shared_ptr<mcp::client> client_first_running(std::vector<std::string> first, mcp::stdio_options base = {}) {
  mcp::client_options o;
  o.name = "hostile";
  o.probe_timeout = milliseconds(2'000);
  o.request_timeout = milliseconds(10'000);
  auto starts = std::make_shared<std::atomic<int>>(0);
  const auto later = fake_server({"legacy"});
  return mcp::client::create(o, [first, later, base, starts]() -> std::unique_ptr<mcp::transport> {
    mcp::stdio_options s = base;
    s.argv = starts->fetch_add(1) == 0 ? first : later;
    return std::make_unique<mcp::stdio_transport>(s);
  });
}

// Sends a request; the request() call itself must return (bounded), the reply
// may come later.
reply_future send(const std::shared_ptr<mcp::client>& c, std::string method, json::object params,
                  milliseconds timeout) {
  auto reply = std::make_shared<std::promise<mcp::rpc_reply>>();
  reply_future out = reply->get_future();
  auto sent = on_detached_thread([c, method = std::move(method), params = std::move(params), timeout, reply] {
    c->request(method, params, timeout, [reply](mcp::rpc_reply r) { reply->set_value(std::move(r)); });
  });
  INFO("request() returned");
  REQUIRE(finishes(sent));
  return out;
}

reply_future send_call(const std::shared_ptr<mcp::client>& c, const std::string& tool, json::object arguments,
                       milliseconds timeout = milliseconds(10'000)) {
  return send(c, "tools/call", json::object{{"name", tool}, {"arguments", std::move(arguments)}}, timeout);
}

tool_outcome outcome(reply_future f) {
  INFO("the reply came");
  REQUIRE(finishes(f));
  return mcp::outcome_of_call(f.get(), "hostile");
}

error_info failure(reply_future f) {
  const tool_outcome o = outcome(std::move(f));
  INFO(outcome_text(o));
  REQUIRE(std::holds_alternative<error_info>(o));
  return std::get<error_info>(o);
}

std::string call_text(const std::shared_ptr<mcp::client>& c, const std::string& tool, json::object arguments = {}) {
  return outcome_text(outcome(send_call(c, tool, std::move(arguments))));
}

// close() returns (bounded), and how long it took.
milliseconds close_time(const std::shared_ptr<mcp::client>& c) {
  auto closed = on_detached_thread([c] {
    const auto start = std::chrono::steady_clock::now();
    c->close();
    return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  });
  INFO("close() returned");
  REQUIRE(finishes(closed));
  return closed.get();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A request failed because the server is gone, for the reason given.
void gone(const error_info& e, const std::string& why) {
  CHECK(e.type == mcp::mcp_error::server_exited);
  CHECK(contains(e.message, why));
}

// The next call starts the server again (the well-behaved fake then), and
// closing the client is prompt.
void started_again(const std::shared_ptr<mcp::client>& c) {
  CHECK(call_text(c, "echo", {{"text", "again"}}) == "echo: again");
  CHECK(c->info().starts == 2);
  CHECK(close_time(c) < milliseconds(5'000));
}

}  // namespace

TEST_CASE("an MCP server that exits while a process it started holds its pipes is seen to exit, and started again") {
  const std::string leaves = GENERATE(as<std::string>{}, "stdout and stderr", "stderr", "stdout");
  INFO("it leaves a process on its " << leaves);
  const std::string redirect = leaves == "stderr" ? ">/dev/null" : leaves == "stdout" ? "2>/dev/null" : "";
  // The process left behind holds its stdin too (as fd 3: sh gives a
  // background command /dev/null for stdin), so writes to it still succeed.
  auto c = client_first_running({"sh", "-c", "echo going >&2; exec 3<&0; sleep 300 <&3 " + redirect + " & exit 3"});

  const error_info e = failure(send(c, "tools/list", {}, milliseconds(10'000)));
  gone(e, "exited with status 3");
  CHECK(contains(e.message, "going"));
  started_again(c);
}

TEST_CASE("with SIGCHLD ignored, so that children are reaped unasked, a server's exit is still seen") {
  struct ignoring_sigchld {
    struct sigaction before {};
    ignoring_sigchld() {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      ::sigaction(SIGCHLD, &ignore, &before);
    }
    ~ignoring_sigchld() { ::sigaction(SIGCHLD, &before, nullptr); }
  } ignoring;
  auto c = client_first_running({"sh", "-c", "exec 3<&0; sleep 300 <&3 & exit 3"});
  // Its status is lost with it.
  gone(failure(send(c, "tools/list", {}, milliseconds(10'000))), "the MCP server exited");
  started_again(c);
}

TEST_CASE("an MCP server that exits mid-call, leaving a process on its pipes, fails the call at once") {
  const std::string keep = GENERATE(as<std::string>{}, "both", "stderr", "stdout");
  INFO("the process left behind keeps " << keep);
  auto c = client_first_running(fake_server({"legacy", "--hostile"}));
  CHECK(call_text(c, "echo", {{"text", "first"}}) == "echo: first");

  // A deadline the failure must not wait for: the call would end as a timeout.
  const error_info e = failure(send_call(c, "orphan-exit", {{"keep", keep}}, milliseconds(15'000)));
  gone(e, "exited with status 3");
  CHECK(contains(e.message, "boom: leaving"));
  started_again(c);
}

TEST_CASE("an MCP server that closes its stdout and lives on is killed, and started again") {
  mcp::stdio_options o;
  o.stop_grace = milliseconds(300);

  SECTION("before it answers anything") {
    auto c = client_first_running({"sh", "-c", "exec >&-; exec sleep 300"}, o);
    const error_info e = failure(send(c, "tools/list", {}, milliseconds(10'000)));
    gone(e, "closed its stdout but kept running, so it was killed");
    started_again(c);
  }
  SECTION("in the middle of a call") {
    auto c = client_first_running(fake_server({"legacy", "--hostile"}), o);
    const pid_t pid = std::stoi(call_text(c, "pid"));
    const error_info e = failure(send_call(c, "close-stdout", {}, milliseconds(15'000)));
    gone(e, "closed its stdout but kept running, so it was killed");
    CHECK(::kill(pid, 0) == -1);  // killed and reaped
    started_again(c);
  }
}

TEST_CASE("an MCP server that closes its stdin and lives on is killed, and started again") {
  mcp::stdio_options o;
  o.stop_grace = milliseconds(300);
  auto c = client_first_running({"sh", "-c", "exec <&-; exec sleep 300"}, o);
  const error_info e = failure(send(c, "tools/list", {}, milliseconds(10'000)));
  gone(e, "closed its stdin but kept running, so it was killed");
  started_again(c);
}

TEST_CASE("an MCP server that stops reading its stdin holds up no caller") {
  mcp::stdio_options o;
  o.stop_grace = milliseconds(300);
  o.max_queued_bytes = 8 * 1024 * 1024;
  auto c = client_first_running(fake_server({"legacy", "--hostile"}), o);
  const pid_t pid = std::stoi(call_text(c, "pid"));

  SECTION("what it does not read times out, what would pass the queue's limit fails at once, and closing is prompt") {
    REQUIRE(call_text(c, "deafen") == "deaf");
    // Far more than a socket buffer: its write stops part way.
    auto stuck = send_call(c, "echo", {{"text", std::string(4 * 1024 * 1024, 'a')}}, milliseconds(500));
    // Behind it, none of it written.
    auto queued = send_call(c, "echo", {{"text", "small"}}, milliseconds(500));
    // Past the limit: refused before request() returns.
    auto refused = send_call(c, "echo", {{"text", std::string(5 * 1024 * 1024, 'b')}});
    REQUIRE(refused.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
    const error_info full = failure(std::move(refused));
    CHECK(full.type == error_type::queue_full);
    CHECK(contains(full.message, "not reading"));

    const error_info partly = failure(std::move(stuck));
    CHECK(partly.type == error_type::timeout);
    CHECK(contains(partly.message, "did not answer tools/call within 500 ms"));
    const error_info unread = failure(std::move(queued));
    CHECK(unread.type == error_type::timeout);
    CHECK(contains(unread.message, "did not read tools/call within 500 ms: it is not reading"));

    // Stdin closed, it reads nothing: stop_grace, then SIGTERM ends it.
    CHECK(close_time(c) < milliseconds(5'000));
    CHECK(::kill(pid, 0) == -1);  // stopped and reaped
  }
  SECTION("pings it sends meanwhile are answered without holding up what it says next") {
    // Far more answers than its stdin holds: they queue, and its answer to
    // deafen, behind its pings, still comes.
    CHECK(call_text(c, "deafen", {{"pings", 20'000}}) == "deaf");
    CHECK(close_time(c) < milliseconds(5'000));
    CHECK(::kill(pid, 0) == -1);
  }
}
