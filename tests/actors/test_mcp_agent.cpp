// MCP tools in a running runtime: registered by add_mcp_server, called by an
// agent through the tool executor, stopped by its timeout.

#include "actors/runtime.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include "support/mcp_servers.hpp"
#include "support/runtime_harness.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

TEST_CASE("an agent calls an MCP server's tools, and a call past its timeout is cancelled at the server") {
  auto model = std::make_shared<scripted_provider>(std::vector<scripted_reply>{
      scripted_reply::tools({call("1", "fake__slow")}), scripted_reply::text("gave up"),
      scripted_reply::tools({call("2", "fake__cancels")}), scripted_reply::text("checked")});
  runtime rt({.provider = model});
  mcp_server_config c;
  c.name = "fake";
  c.command = fake_server({"legacy"});
  c.call_timeout = std::chrono::milliseconds(300);
  const mcp_server_status status = rt.add_mcp_server(c);
  REQUIRE(status.ok());
  agent a = rt.spawn_agent({.id = "a", .model = "m", .tools = status.tools});

  CHECK(answer_of(must_reply(a.ask("call the slow one"))) == "gave up");
  CHECK(answer_of(must_reply(a.ask("what was cancelled?"))) == "checked");
  const auto results = a.snapshot()->of_kind(entry_kind::tool_result);
  REQUIRE(results.size() == 2);
  CHECK(results[0]->payload.at("error").at("type") == "timeout");
  // The server was told, with the id of the request it was working on.
  const json::value cancels = json::parse(std::string(results[1]->payload.at("result").as_string()));
  REQUIRE(cancels.as_array().size() == 1);
  CHECK(cancels.as_array()[0].at("requestId").is_int64());
  rt.shutdown();
  CHECK_FALSE(rt.tools().find("fake__echo"));  // stopped with the runtime
}
