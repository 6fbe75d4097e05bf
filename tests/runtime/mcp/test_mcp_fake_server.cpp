// The MCP client against tests/mcp/fake_server.mjs: each revision it speaks,
// and each way a server can misbehave. Every wait is bounded.

#include "runtime/mcp/detail/server.hpp"

#include "support/mcp_servers.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <signal.h>

#include <thread>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

mcp_server_config fake(std::vector<std::string> args) {
  mcp_server_config c;
  c.name = "fake";
  c.command = fake_server(args);
  c.probe_timeout = std::chrono::milliseconds(2'000);
  c.request_timeout = std::chrono::milliseconds(10'000);
  c.call_timeout = std::chrono::milliseconds(10'000);
  return c;
}

// Waits, bounded, for the registry to hold (or no longer hold) a tool of that
// name: a re-listing runs on the client's threads, not the test's.
bool registered_within(tool_registry& tools, const std::string& name, bool wanted) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    if (static_cast<bool>(tools.find(name)) == wanted) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}
bool appears(tool_registry& tools, const std::string& name) { return registered_within(tools, name, true); }
bool disappears(tool_registry& tools, const std::string& name) { return registered_within(tools, name, false); }

// The fake's MCP endpoint, from the "listening PORT" line it printed.
std::string endpoint_of(const background_server& http) {
  const auto at = http.log().find("listening ") + 10;
  return "http://127.0.0.1:" + http.log().substr(at, http.log().find('\n', at) - at) + "/mcp";
}

// A server config for the fake served over HTTP.
mcp_server_config over_http(const background_server& http, std::string name = "web") {
  mcp_server_config c;
  c.name = std::move(name);
  c.url = endpoint_of(http);
  return c;
}

}  // namespace

TEST_CASE("a legacy stdio server: initialize, every page of tools/list, tools/call") {
  tool_registry tools;
  started_server server(fake({"legacy", "--page-size", "2"}), tools);
  const mcp_server_status& status = server.status;
  INFO((status.error ? status.error->message : ""));
  REQUIRE(status.ok());

  SECTION("server/discover is unknown to it, so initialize picks 2025-11-25") {
    CHECK(server->connection().spoken == mcp::era::legacy);
    CHECK(server->connection().protocol_version == "2025-11-25");
  }
  SECTION("every page of tools is registered under the server's name") {
    CHECK(status.tools.size() == 14);
    CHECK(tools.find("fake__echo"));
    CHECK(tools.find("fake__image"));
    CHECK(tools.find("fake__echo")->definition().spec.description == "Echoes its text");
  }
  SECTION("a call's text content is the result") {
    CHECK(outcome_text(call_tool(tools, "fake__echo", {{"text", "hi"}})) == "echo: hi");
  }
  SECTION("structured content is the result when there is some") {
    CHECK(outcome_text(call_tool(tools, "fake__structured")) == R"({"answer":42})");
  }
  SECTION("isError becomes an mcp_tool_error the model reads") {
    CHECK(outcome_text(call_tool(tools, "fake__fail")) == "error mcp_tool_error: it went wrong on purpose");
  }
  SECTION("arguments are validated against the listed schema before anything is sent") {
    auto o = call_tool(tools, "fake__echo", {{"text", 5}});
    CHECK(std::get<error_info>(o).type == error_type::invalid_arguments);
  }
  SECTION("a cancelled call sends notifications/cancelled naming the request") {
    started_call slow = start_tool(tools, "fake__slow", {});
    REQUIRE(slow.stop);
    // The server reads in order: once a later call is answered it has read
    // the slow one, which is then cancelled at the server rather than taken
    // back unsent.
    CHECK(outcome_text(call_tool(tools, "fake__echo", {{"text", "after"}})) == "echo: after");
    slow.stop();
    CHECK(std::get<error_info>(slow.wait()).type == error_type::cancelled);
    const auto cancels = json::parse(outcome_text(call_tool(tools, "fake__cancels")));
    REQUIRE(cancels.as_array().size() == 1);
    CHECK(cancels.as_array()[0].as_object().at("requestId").is_int64());
    CHECK(cancels.as_array()[0].as_object().at("reason").as_string().find("cancelled") != json::string::npos);
  }
  SECTION("notifications/tools/list_changed lists the tools again") {
    CHECK_FALSE(tools.find("fake__extra"));
    CHECK(outcome_text(call_tool(tools, "fake__change")) == "changed");
    CHECK(appears(tools, "fake__extra"));
  }
  SECTION("close removes its tools and stops the process") {
    const pid_t pid = std::stoi(outcome_text(call_tool(tools, "fake__pid")));
    REQUIRE(::kill(pid, 0) == 0);
    server->close();
    CHECK_FALSE(tools.find("fake__echo"));
    CHECK(::kill(pid, 0) == -1);  // gone, and reaped
  }
}

TEST_CASE("a modern stdio server: server/discover, and _meta on every request") {
  tool_registry tools;
  started_server server(fake({"modern"}), tools);
  const mcp_server_status& status = server.status;
  INFO((status.error ? status.error->message : ""));
  REQUIRE(status.ok());

  SECTION("it is spoken to in 2026-07-28") {
    CHECK(server->connection().spoken == mcp::era::modern);
    CHECK(server->connection().protocol_version == "2026-07-28");
  }
  SECTION("calls carry the version (the fake refuses any without it)") {
    CHECK(outcome_text(call_tool(tools, "fake__echo", {{"text", "modern"}})) == "echo: modern");
  }
  SECTION("an unknown resultType is a malformed_response naming it") {
    auto e = std::get<error_info>(call_tool(tools, "fake__bad-result"));
    CHECK(e.type == error_type::malformed_response);
    CHECK(e.message.find("frobnicate") != std::string::npos);
  }
}

TEST_CASE("a modern server that supports only an older revision is spoken to in that one") {
  tool_registry tools;
  started_server server(fake({"downgrade"}), tools);
  REQUIRE(server.status.ok());
  CHECK(server->connection().spoken == mcp::era::legacy);
  CHECK(server->connection().protocol_version == "2025-06-18");
  CHECK(outcome_text(call_tool(tools, "fake__echo", {{"text", "old"}})) == "echo: old");
}

TEST_CASE("servers that misbehave give typed errors, and nothing hangs") {
  tool_registry tools;

  SECTION("one that never answers: a timeout saying so") {
    auto c = fake({"silent"});
    c.probe_timeout = std::chrono::milliseconds(200);
    c.request_timeout = std::chrono::milliseconds(500);
    started_server server(c, tools);
    const auto& status = server.status;
    REQUIRE(status.error);
    CHECK(status.error->type == error_type::timeout);
    CHECK(status.error->message.find("did not answer initialize") != std::string::npos);
  }
  SECTION("one that answers with what is not JSON-RPC: malformed_response") {
    started_server server(fake({"garbage"}), tools);
    const auto& status = server.status;
    REQUIRE(status.error);
    CHECK(status.error->type == error_type::malformed_response);
    CHECK(status.error->message.find("not JSON") != std::string::npos);
  }
  SECTION("one that picks a revision troupe does not speak: mcp_unsupported_version") {
    started_server server(fake({"bad-version"}), tools);
    const auto& status = server.status;
    REQUIRE(status.error);
    CHECK(status.error->type == "mcp_unsupported_version");
    CHECK(status.error->message.find("1999-01-01") != std::string::npos);
  }
  SECTION("a command that does not exist: mcp_unavailable") {
    mcp_server_config c;
    c.name = "missing";
    c.command = {"/nonexistent/troupe-mcp-server"};
    started_server server(c, tools);
    const auto& status = server.status;
    REQUIRE(status.error);
    CHECK(status.error->type == "mcp_unavailable");
  }
  SECTION("tools with schemas troupe cannot use are left out, each with a reason; the others work") {
    started_server server(fake({"legacy", "--bad-schema"}), tools);
    const auto& status = server.status;
    REQUIRE(status.ok());
    REQUIRE(status.rejected.size() == 4);
    for (const auto& e : status.rejected) CHECK(e.type == "mcp_invalid_tool");
    CHECK(status.rejected[0].message.find("number-type") != std::string::npos);
    CHECK(status.rejected[1].message.find("string-schema") != std::string::npos);
    CHECK_FALSE(tools.find("fake__number-type"));
    CHECK(outcome_text(call_tool(tools, "fake__echo", {{"text", "still"}})) == "echo: still");
  }
  SECTION("tools whose schemas are reference cycles are left out, saying so; a recursive tree schema works") {
    started_server server(fake({"legacy", "--bad-schema"}), tools);
    const auto& status = server.status;
    REQUIRE(status.ok());
    REQUIRE(status.rejected.size() == 4);
    CHECK_THAT(status.rejected[2].message, Catch::Contains("self-ref") && Catch::Contains("cycle of \"$ref\""));
    CHECK_THAT(status.rejected[3].message, Catch::Contains("ref-cycle") && Catch::Contains("cycle of \"$ref\""));
    CHECK_FALSE(tools.find("fake__self-ref"));
    const json::object tree =
        json::parse(R"({"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}})").as_object();
    CHECK(outcome_text(call_tool(tools, "fake__tree", tree)) == "3 nodes");
    CHECK(std::get<error_info>(call_tool(tools, "fake__tree", {{"root", {{"children", json::array{}}}}})).type ==
          "invalid_arguments");
  }
  SECTION("one that exits mid-call: the call fails with mcp_server_exited, and the next call starts it again") {
    started_server server(fake({"legacy"}), tools);
    REQUIRE(server.status.ok());
    auto e = std::get<error_info>(call_tool(tools, "fake__crash"));
    CHECK(e.type == "mcp_server_exited");
    CHECK(e.message.find("status 3") != std::string::npos);
    CHECK(e.message.find("boom") != std::string::npos);
    CHECK(outcome_text(call_tool(tools, "fake__echo", {{"text", "again"}})) == "echo: again");
    CHECK(server->connection().starts == 2);
    // The restarted process was known to be legacy: asked to initialize at once.
    CHECK(outcome_text(call_tool(tools, "fake__discovers")) == "0");
  }
  SECTION("a restarted server's tools are listed again") {
    started_server server(fake({"legacy"}), tools);
    REQUIRE(server.status.ok());
    CHECK(outcome_text(call_tool(tools, "fake__change")) == "changed");
    REQUIRE(appears(tools, "fake__extra"));
    CHECK(std::get<error_info>(call_tool(tools, "fake__crash")).type == "mcp_server_exited");
    CHECK(outcome_text(call_tool(tools, "fake__echo", {{"text", "new process"}})) == "echo: new process");
    // The new process has not been asked to add "extra".
    CHECK(disappears(tools, "fake__extra"));
  }
  SECTION("one that keeps dying is given up on") {
    started_server server(fake({"legacy"}), tools);
    REQUIRE(server.status.ok());
    // The first start and five restarts are allowed within the window.
    for (int i = 0; i < 6; ++i)
      CHECK(std::get<error_info>(call_tool(tools, "fake__crash")).type == "mcp_server_exited");
    auto e = std::get<error_info>(call_tool(tools, "fake__echo", {{"text", "x"}}));
    CHECK(e.type == "mcp_unavailable");
    CHECK(e.message.find("started again on the first call after 60000 ms") != std::string::npos);
  }
  SECTION("one given up on is started again once its pause is over") {
    mcp_server_config c = fake({"legacy"});
    c.max_restarts = 1;
    // Long enough that the call right after the give-up falls inside the
    // pause on a loaded machine too; short enough to wait out below.
    c.restart_window = std::chrono::milliseconds(2'000);
    started_server server(c, tools);
    REQUIRE(server.status.ok());
    for (int i = 0; i < 2; ++i)
      CHECK(std::get<error_info>(call_tool(tools, "fake__crash")).type == "mcp_server_exited");
    CHECK(std::get<error_info>(call_tool(tools, "fake__echo", {{"text", "x"}})).type == "mcp_unavailable");
    // The pause is the window (2 s) at first: ask until it is over, bounded.
    std::string answer;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((answer = outcome_text(call_tool(tools, "fake__echo", {{"text", "back"}}))) != "echo: back" &&
           std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(answer == "echo: back");
    CHECK(server->connection().starts == 3);
  }
  SECTION("one that dies while starting fails the start without promising a restart") {
    mcp_server_config c = fake({"legacy"});
    c.command = {"sh", "-c", "echo 'no config' >&2; exit 3"};
    started_server server(c, tools);
    REQUIRE(server.status.error);
    INFO(server.status.error->message);
    CHECK(server.status.error->message.find("started again") == std::string::npos);
  }
}

TEST_CASE("a modern Streamable HTTP server: JSON and SSE responses") {
  const bool sse = GENERATE(false, true);
  std::vector<std::string> args{"modern", "--http", "--param-headers"};
  if (sse) args.push_back("--sse");
  background_server http(fake_server(args), "listening ");
  tool_registry tools;
  started_server server(over_http(http), tools);
  const auto& status = server.status;
  INFO("sse " << sse << ": " << (status.error ? status.error->message : ""));
  REQUIRE(status.ok());
  CHECK(server->connection().spoken == mcp::era::modern);
  // The fake checks that MCP-Protocol-Version and Mcp-Method match the body.
  CHECK(outcome_text(call_tool(tools, "web__echo", {{"text", "over http"}})) == "echo: over http");
  CHECK(outcome_text(call_tool(tools, "web__fail")) == "error mcp_tool_error: it went wrong on purpose");
  // x-mcp-header: the region goes out as Mcp-Param-Region too (the fake checks it)...
  CHECK(outcome_text(call_tool(tools, "web__weather", {{"region", "us-west1"}})) == "sunny in us-west1");
  // ...and a tool whose annotation is invalid is not offered.
  CHECK_FALSE(tools.find("web__bad-header"));
  REQUIRE(status.rejected.size() == 1);
  CHECK(status.rejected[0].message.find("bad-header") != std::string::npos);
}

TEST_CASE("a legacy Streamable HTTP server's session") {
  background_server http(fake_server({"legacy", "--http"}), "listening ");
  tool_registry tools;
  mcp_server_config c;
  c.name = "web";
  c.url = endpoint_of(http);
  auto server = std::make_unique<started_server>(c, tools);
  REQUIRE(server->status.ok());
  CHECK((*server)->connection().spoken == mcp::era::legacy);

  SECTION("calls carry the session the server opened") {
    CHECK(outcome_text(call_tool(tools, "web__echo", {{"text", "in session"}})) == "echo: in session");
  }
  SECTION("a session the server forgot (404) fails what used it, and the next call opens a new one") {
    CHECK(outcome_text(call_tool(tools, "web__end-session")) == "forgotten");
    const auto e = std::get<error_info>(call_tool(tools, "web__echo", {{"text", "lost"}}));
    CHECK(e.message.find("ended the session") != std::string::npos);
    CHECK(outcome_text(call_tool(tools, "web__echo", {{"text", "new session"}})) == "echo: new session");
    CHECK((*server)->connection().starts == 2);
  }
  SECTION("closing ends the session with a DELETE") {
    server.reset();
    tool_registry other_tools;
    mcp_server_config o = c;
    o.name = "other";
    started_server other(o, other_tools);
    REQUIRE(other.status.ok());
    // The DELETE is not waited for: ask until it has arrived (bounded).
    std::string deletes;
    for (int i = 0; i < 200 && (deletes = outcome_text(call_tool(other_tools, "other__deletes"))) == "0"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(deletes == "1");
  }
}

TEST_CASE("a server of revision 2025-03-26, over stdio and HTTP, batches included") {
  const bool over_http = GENERATE(false, true);
  std::unique_ptr<background_server> http;
  mcp_server_config c = fake({"legacy-2025-03-26"});
  if (over_http) {
    http = std::make_unique<background_server>(fake_server({"legacy-2025-03-26", "--http"}), "listening ");
    c.command.clear();
    c.url = endpoint_of(*http);
  }
  tool_registry tools;
  started_server server(c, tools);
  INFO("http " << over_http << ": " << (server.status.error ? server.status.error->message : ""));
  REQUIRE(server.status.ok());
  CHECK(server->connection().protocol_version == "2025-03-26");
  CHECK(outcome_text(call_tool(tools, "fake__echo", {{"text", "march"}})) == "echo: march");
  // The answer comes as one element of a JSON-RPC batch, beside a notification.
  CHECK(outcome_text(call_tool(tools, "fake__batch")) == "answered in a batch");
}

TEST_CASE("over HTTP, notifications/initialized is taken before any other request is sent") {
  // The fake refuses a session's requests until it has accepted the
  // notification, which it takes 300 ms to do.
  background_server http(fake_server({"legacy", "--http", "--strict-init"}), "listening ");
  tool_registry tools;
  started_server server(over_http(http), tools);
  INFO((server.status.error ? server.status.error->message : ""));
  REQUIRE(server.status.ok());
  CHECK(outcome_text(call_tool(tools, "web__echo", {{"text", "after initialized"}})) == "echo: after initialized");
}

TEST_CASE("a traced tool call carries its trace context to the MCP server") {
  const std::string traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  SECTION("over stdio, in params._meta") {
    tool_registry tools;
    started_server server(fake({"legacy"}), tools);
    REQUIRE(server.status.ok());
    const json::value seen = json::parse(outcome_text(call_tool(tools, "fake__trace", {}, traceparent)));
    CHECK(seen.at("meta") == json::value(traceparent));
  }
  SECTION("over HTTP, in params._meta and as the traceparent header") {
    background_server http(fake_server({"legacy", "--http"}), "listening ");
    tool_registry tools;
    started_server server(over_http(http), tools);
    REQUIRE(server.status.ok());
    const json::value seen = json::parse(outcome_text(call_tool(tools, "web__trace", {}, traceparent)));
    CHECK(seen.at("meta") == json::value(traceparent));
    CHECK(seen.at("header") == json::value(traceparent));
  }
  SECTION("an untraced call carries none") {
    tool_registry tools;
    started_server server(fake({"legacy"}), tools);
    REQUIRE(server.status.ok());
    CHECK(json::parse(outcome_text(call_tool(tools, "fake__trace"))).at("meta").is_null());
  }
}
