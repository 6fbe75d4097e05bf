// The pure parts of the MCP client: JSON-RPC messages, the revision rules,
// tool names, tools/call results and the --mcp specs.

#include "runtime/mcp/detail/json_rpc.hpp"
#include "runtime/mcp/detail/protocol.hpp"
#include "runtime/mcp/detail/tool_adapter.hpp"
#include "runtime/mcp/server_config.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <regex>

using namespace troupe;
using namespace troupe::mcp;
namespace json = boost::json;

TEST_CASE("JSON-RPC messages from a server are read without trusting them") {
  SECTION("a result answers its request by id") {
    auto m = parse_rpc_message(R"({"jsonrpc":"2.0","id":7,"result":{"tools":[]}})");
    auto* r = std::get_if<rpc_response>(&m);
    REQUIRE(r);
    CHECK(std::get<std::int64_t>(r->id) == 7);
    CHECK(std::get<json::object>(r->outcome).contains("tools"));
  }
  SECTION("an error keeps its code, message and data") {
    auto m = parse_rpc_message(
        R"({"jsonrpc":"2.0","id":"a","error":{"code":-32022,"message":"Unsupported","data":{"supported":["2025-06-18"]}}})");
    const auto& e = std::get<rpc_error>(std::get<rpc_response>(m).outcome);
    CHECK(e.code == rpc_code::unsupported_protocol_version);
    CHECK(supported_versions(e) == std::vector<std::string>{"2025-06-18"});
  }
  SECTION("requests and notifications from the server are told apart") {
    CHECK(std::holds_alternative<rpc_request>(parse_rpc_message(R"({"jsonrpc":"2.0","id":1,"method":"ping"})")));
    auto n = parse_rpc_message(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    CHECK(std::get<rpc_notification>(n).method == "notifications/tools/list_changed");
  }
  SECTION("what is not a message says why, and names its request when it can") {
    CHECK(std::get<malformed_message>(parse_rpc_message("hello")).why.starts_with("not JSON"));
    CHECK(std::get<malformed_message>(parse_rpc_message(R"({"id":1,"result":{}})")).why.find("2.0") !=
          std::string::npos);
    auto m = std::get<malformed_message>(parse_rpc_message(R"({"jsonrpc":"2.0","id":4,"result":"text"})"));
    CHECK(m.id == rpc_id(std::int64_t{4}));
    CHECK(std::holds_alternative<malformed_message>(
        parse_rpc_message(R"({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}})")));
  }
  SECTION("requests and notifications are written as one line of JSON") {
    auto text = encode_request(3, "tools/list", json::object{{"cursor", "x"}});
    CHECK(text.find('\n') == std::string::npos);
    auto back = std::get<rpc_request>(parse_rpc_message(text));
    CHECK(back.method == "tools/list");
    CHECK(back.params.at("cursor") == "x");
  }
}

TEST_CASE("the revisions' rules") {
  SECTION("modern requests carry the protocol version and capabilities in _meta") {
    auto p = with_modern_meta(json::object{{"name", "echo"}});
    const auto& meta = p.at("_meta").as_object();
    CHECK(meta.at("io.modelcontextprotocol/protocolVersion") == "2026-07-28");
    CHECK(meta.at("io.modelcontextprotocol/clientCapabilities").is_object());
    CHECK(p.at("name") == "echo");
  }
  SECTION("legacy initialize asks for the newest legacy revision") {
    CHECK(initialize_params().at("protocolVersion") == "2025-11-25");
    CHECK(is_legacy_version("2025-06-18"));
    CHECK(is_legacy_version("2025-03-26"));
    CHECK_FALSE(is_legacy_version("2024-11-05"));
  }
  SECTION("an absent or complete resultType is fine; input_required and unknown ones are errors") {
    CHECK_FALSE(check_result_type(json::object{}, "s"));
    CHECK_FALSE(check_result_type(json::object{{"resultType", "complete"}}, "s"));
    CHECK(check_result_type(json::object{{"resultType", "input_required"}}, "s")->type ==
          mcp_error::unsupported_result);
    auto unknown = check_result_type(json::object{{"resultType", "frobnicate"}}, "s");
    CHECK(unknown->type == error_type::malformed_response);
    CHECK(unknown->message.find("frobnicate") != std::string::npos);
  }
  SECTION("only the codes MCP reserves mark a modern server") {
    CHECK(is_modern_error(rpc_code::unsupported_protocol_version));
    CHECK(is_modern_error(rpc_code::header_mismatch));
    CHECK_FALSE(is_modern_error(rpc_code::method_not_found));
    CHECK_FALSE(is_modern_error(-32000));
  }
}

TEST_CASE("the answer to server/discover decides the revision") {
  const auto verdict = [](rpc_reply r) { return judge_probe(r, "s"); };
  SECTION("a result is a modern server, unless it lists only other versions") {
    CHECK(std::holds_alternative<speak_modern>(verdict(json::object{{"capabilities", json::object{}}})));
    CHECK(std::holds_alternative<speak_modern>(
        verdict(json::object{{"supportedVersions", json::array{"2026-07-28", "2025-11-25"}}})));
    CHECK(
        std::holds_alternative<speak_legacy>(verdict(json::object{{"supportedVersions", json::array{"2025-11-25"}}})));
  }
  SECTION("an unknown method, an HTTP 4xx or silence is a legacy server") {
    CHECK(std::holds_alternative<speak_legacy>(verdict(rpc_error{rpc_code::method_not_found, "Method not found", {}})));
    CHECK(std::holds_alternative<speak_legacy>(verdict(rpc_error{-32000, "Bad Request: Server not initialized", {}})));
    error_info http_400 = error_info::of(mcp_error::unavailable, "HTTP 400");
    http_400.http_status = 400;
    CHECK(std::holds_alternative<speak_legacy>(verdict(http_400)));
    CHECK(std::holds_alternative<speak_legacy>(verdict(error_info::of(error_type::timeout, "no answer"))));
  }
  SECTION("UnsupportedProtocolVersion listing a legacy version leads to initialize; listing none we speak fails") {
    CHECK(std::holds_alternative<speak_legacy>(verdict(
        rpc_error{rpc_code::unsupported_protocol_version, "", json::parse(R"({"supported":["2025-06-18"]})")})));
    auto none =
        verdict(rpc_error{rpc_code::unsupported_protocol_version, "", json::parse(R"({"supported":["2030-01-01"]})")});
    CHECK(std::get<error_info>(none).type == mcp_error::unsupported_version);
    CHECK(std::get<error_info>(none).message.find("2030-01-01") != std::string::npos);
  }
  SECTION("other modern errors, a dead server or refused credentials end the attempt") {
    CHECK(std::get<error_info>(verdict(rpc_error{rpc_code::header_mismatch, "", {}})).type == mcp_error::rpc_error);
    CHECK(std::get<error_info>(verdict(error_info::of(mcp_error::server_exited, "gone"))).type ==
          mcp_error::server_exited);
    CHECK(std::get<error_info>(verdict(error_info::of("auth", "HTTP 401"))).type == "auth");
  }
}

TEST_CASE("MCP tools get names the model APIs accept") {
  const std::regex valid("^[a-zA-Z0-9_-]{1,64}$");
  SECTION("the server's name and the tool's, joined by two underscores") {
    CHECK(troupe_tool_name("everything", "echo") == "everything__echo");
    CHECK(troupe_tool_name("fs", "read-file") == "fs__read-file");
  }
  SECTION("other characters become underscores, and a hash keeps such names apart") {
    const auto a = troupe_tool_name("s", "a.b");
    const auto b = troupe_tool_name("s", "a/b");
    CHECK(std::regex_match(a, valid));
    CHECK(a != b);
  }
  SECTION("long names are cut to 64 characters and stay distinct") {
    const std::string long_a(80, 'a');
    const std::string long_b = std::string(79, 'a') + "b";
    CHECK(troupe_tool_name("srv", long_a).size() == 64);
    CHECK(std::regex_match(troupe_tool_name("srv", long_a), valid));
    CHECK(troupe_tool_name("srv", long_a) != troupe_tool_name("srv", long_b));
  }
}

TEST_CASE("a listed MCP tool becomes a tool spec") {
  SECTION("name, description and input schema") {
    auto t = decode_listed_tool(
        json::parse(R"({"name":"echo","description":"Echoes","inputSchema":{"type":"object"}})"), "everything");
    const auto& listed = std::get<listed_tool>(t);
    CHECK(listed.mcp_name == "echo");
    CHECK(listed.spec.name == "everything__echo");
    CHECK(listed.spec.description == "Echoes");
    CHECK(listed.spec.parameters.at("type") == "object");
  }
  SECTION("a tool without a name or an object schema is an mcp_invalid_tool") {
    auto no_name = decode_listed_tool(json::parse(R"({"inputSchema":{}})"), "s");
    CHECK(std::get<error_info>(no_name).type == mcp_error::invalid_tool);
    auto bad_schema = decode_listed_tool(json::parse(R"({"name":"x","inputSchema":"object"})"), "s");
    CHECK(std::get<error_info>(bad_schema).message.find("\"x\"") != std::string::npos);
  }
}

TEST_CASE("x-mcp-header parameters are found, checked and mirrored") {
  SECTION("annotated primitive properties, nested through properties, give Mcp-Param headers") {
    auto found = find_param_headers(json::parse(R"({"type":"object","properties":{
        "region":{"type":"string","x-mcp-header":"Region"},
        "opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}},
        "n":{"type":"integer","x-mcp-header":"N"}}})")
                                        .as_object());
    const auto& params = std::get<std::vector<param_header>>(found);
    REQUIRE(params.size() == 3);
    const auto headers =
        param_header_values(params, json::parse(R"({"region":"eu","opts":{"dry":true},"n":-7})").as_object());
    CHECK(headers == std::vector<std::pair<std::string, std::string>>{
                         {"Mcp-Param-Region", "eu"}, {"Mcp-Param-Dry-Run", "true"}, {"Mcp-Param-N", "-7"}});
  }
  SECTION("an absent or null value sends no header") {
    auto params = std::get<std::vector<param_header>>(
        find_param_headers(json::parse(R"({"properties":{"r":{"type":"string","x-mcp-header":"R"}}})").as_object()));
    CHECK(param_header_values(params, json::parse(R"({"r":null})").as_object()).empty());
    CHECK(param_header_values(params, json::object{}).empty());
  }
  SECTION("invalid annotations are refused with a reason") {
    const auto problem = [](const char* schema) {
      auto r = find_param_headers(json::parse(schema).as_object());
      return std::holds_alternative<std::string>(r);
    };
    CHECK(problem(R"({"properties":{"x":{"type":"number","x-mcp-header":"X"}}})"));
    CHECK(problem(R"({"properties":{"x":{"type":"string","x-mcp-header":"bad name"}}})"));
    CHECK(problem(
        R"({"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}})"));
    CHECK(problem(R"({"properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"L"}}}})"));
    CHECK_FALSE(problem(R"({"properties":{"x":{"type":"string"}}})"));
  }
}

TEST_CASE("a tools/call result becomes what the model reads") {
  SECTION("text content, joined") {
    auto o = outcome_of_call(
        json::parse(R"({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]})").as_object(), "s");
    CHECK(std::get<json::value>(o) == json::value("a\nb"));
  }
  SECTION("structured content wins over its text rendering") {
    auto o = outcome_of_call(
        json::parse(R"({"content":[{"type":"text","text":"{}"}],"structuredContent":{"n":1}})").as_object(), "s");
    CHECK(std::get<json::value>(o) == json::parse(R"({"n":1})"));
  }
  SECTION("images are named, not inlined") {
    auto o = outcome_of_call(
        json::parse(R"({"content":[{"type":"image","mimeType":"image/png","data":"AAAA"}]})").as_object(), "s");
    CHECK(std::get<json::value>(o) == json::value("[image image/png]"));
  }
  SECTION("isError makes an mcp_tool_error with the text") {
    auto o = outcome_of_call(
        json::parse(R"({"content":[{"type":"text","text":"no such file"}],"isError":true})").as_object(), "s");
    CHECK(std::get<error_info>(o).type == mcp_error::tool_error);
    CHECK(std::get<error_info>(o).message == "no such file");
  }
  SECTION("a JSON-RPC error is an mcp_error naming the code") {
    auto o = outcome_of_call(rpc_error{-32602, "unknown tool", nullptr}, "s");
    CHECK(std::get<error_info>(o).type == mcp_error::rpc_error);
    CHECK(std::get<error_info>(o).message.find("-32602") != std::string::npos);
  }
}

TEST_CASE("MCP servers as the command line names them (--mcp, --mcp-header)") {
  SECTION("NAME=COMMAND splits the command into words, quotes kept together") {
    mcp_server_config c;
    CHECK_FALSE(parse_mcp_server("fs=node 'my dir/server.js' /tmp", c));
    CHECK(c.name == "fs");
    CHECK(c.command == std::vector<std::string>{"node", "my dir/server.js", "/tmp"});
  }
  SECTION("NAME=URL is an HTTP server") {
    mcp_server_config c;
    CHECK_FALSE(parse_mcp_server("docs=https://example.com/mcp", c));
    CHECK(c.url == "https://example.com/mcp");
    CHECK(c.command.empty());
  }
  SECTION("bad names and empty targets are refused with a reason") {
    mcp_server_config a, b, d;
    CHECK(parse_mcp_server("no equals sign", a));
    CHECK(parse_mcp_server("bad.name=node x", b)->find("letters") != std::string::npos);
    CHECK(parse_mcp_server("x=", d));
  }
  SECTION("a header's value comes from the environment") {
    ::setenv("TROUPE_TEST_MCP_TOKEN", "Bearer secret", 1);
    std::vector<mcp_server_config> servers(1);
    servers[0].name = "docs";
    servers[0].url = "http://127.0.0.1:1/mcp";
    CHECK_FALSE(parse_mcp_header("docs:Authorization=TROUPE_TEST_MCP_TOKEN", servers));
    CHECK(servers[0].headers == std::vector<std::pair<std::string, std::string>>{{"Authorization", "Bearer secret"}});
    CHECK(parse_mcp_header("docs:Authorization=TROUPE_TEST_UNSET_VARIABLE", servers)->find("not set") !=
          std::string::npos);
    CHECK(parse_mcp_header("other:X=TROUPE_TEST_MCP_TOKEN", servers)->find("no --mcp") != std::string::npos);
  }
}
