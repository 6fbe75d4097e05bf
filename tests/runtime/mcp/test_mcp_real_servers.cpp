// The MCP client against servers nobody here wrote: the reference servers
// @modelcontextprotocol/server-everything (over stdio and over Streamable
// HTTP) and @modelcontextprotocol/server-filesystem, pinned in
// tests/mcp/package-lock.json and installed by `npm ci` (scripts/test.sh).

#include "runtime/mcp/detail/server.hpp"

#include "support/mcp_servers.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

// Started, or the test stops with why not.
struct started : started_server {
  started(mcp_server_config c, tool_registry& tools) : started_server(std::move(c), tools) {
    INFO((status.error ? status.error->type + ": " + status.error->message : ""));
    REQUIRE(status.ok());
    // Real servers' schemas are all usable, recursive ones included.
    for (const auto& rejected : status.rejected) FAIL_CHECK(rejected.message);
  }
};

// What every transport must get right with server-everything.
void everything_works(tool_registry& tools, mcp::server& server) {
  CHECK(server.connection().spoken == mcp::era::legacy);
  CHECK(server.connection().protocol_version == "2025-11-25");
  CHECK(tools.find("everything__echo"));
  CHECK(tools.find("everything__get-sum"));
  CHECK(outcome_text(call_tool(tools, "everything__echo", {{"message", "hello"}})) == "Echo: hello");
  CHECK(outcome_text(call_tool(tools, "everything__get-sum", {{"a", 2}, {"b", 3}})) == "The sum of 2 and 3 is 5.");
  const auto weather = call_tool(tools, "everything__get-structured-content", {{"location", "New York"}});
  REQUIRE(std::holds_alternative<json::value>(weather));
  CHECK(std::get<json::value>(weather).as_object().contains("temperature"));
  CHECK(outcome_text(call_tool(tools, "everything__get-tiny-image")).find("[image image/png]") != std::string::npos);
  // Its own schema refuses this before anything is sent.
  CHECK(std::get<error_info>(call_tool(tools, "everything__get-sum", {{"a", "two"}})).type ==
        error_type::invalid_arguments);
  // A long operation stopped early: cancelled, and the server carries on.
  started_call slow = start_tool(tools, "everything__trigger-long-running-operation", {{"duration", 30}, {"steps", 3}});
  REQUIRE(slow.stop);
  slow.stop();
  CHECK(std::get<error_info>(slow.wait()).type == error_type::cancelled);
  CHECK(outcome_text(call_tool(tools, "everything__echo", {{"message", "still here"}})) == "Echo: still here");
}

}  // namespace

TEST_CASE("server-everything over stdio") {
  tool_registry tools;
  mcp_server_config c;
  c.name = "everything";
  c.command = {node_binary(), package_entry("server-everything"), "stdio"};
  started server(c, tools);
  everything_works(tools, *server.server);
}

TEST_CASE("server-everything over Streamable HTTP") {
  const std::string entry = package_entry("server-everything");
  const int port = free_port();
  background_server process({node_binary(), entry, "streamableHttp"}, "listening on port",
                            {"PORT=" + std::to_string(port)});
  tool_registry tools;
  mcp_server_config c;
  c.name = "everything";
  c.url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  c.headers = {{"Authorization", "Bearer not-checked-by-this-server"}};
  started server(c, tools);
  everything_works(tools, *server.server);
}

TEST_CASE("server-filesystem reads what it is allowed to, and refuses the rest as a tool error") {
  const auto dir = std::filesystem::temp_directory_path() / ("troupe-mcp-fs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "hello.txt") << "hello from a file\n";
  tool_registry tools;
  {
    mcp_server_config c;
    c.name = "fs";
    c.command = {node_binary(), package_entry("server-filesystem"), dir.string()};
    started server(c, tools);

    SECTION("a file inside the allowed directory") {
      const auto text = outcome_text(call_tool(tools, "fs__read_text_file", {{"path", (dir / "hello.txt").string()}}));
      CHECK(text.find("hello from a file") != std::string::npos);
    }
    SECTION("a directory listing") {
      const auto text = outcome_text(call_tool(tools, "fs__list_directory", {{"path", dir.string()}}));
      CHECK(text.find("hello.txt") != std::string::npos);
    }
    SECTION("a path outside it is an mcp_tool_error the model reads") {
      const auto e = std::get<error_info>(call_tool(tools, "fs__read_text_file", {{"path", "/etc/hostname"}}));
      CHECK(e.type == "mcp_tool_error");
      CHECK(e.message.find("denied") != std::string::npos);
    }
  }
  std::filesystem::remove_all(dir);
}
