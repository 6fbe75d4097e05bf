// A JSON-RPC message (or batch) as an MCP server sends it, read the way the
// client reads it (mcp::client::handle_message): a batch split into its
// messages, each parsed; a result checked for its resultType and, as the
// answer to tools/call, made a tool outcome, and as the answer to the
// server/discover probe, judged; a request from the server answered. A
// server controls every byte, so: no exception, every refusal typed, every
// text valid UTF-8, and what we answer or re-encode reads back as sent.

#include "fuzz_input.hpp"
#include "json/json_text.hpp"
#include "runtime/mcp/detail/json_rpc.hpp"
#include "runtime/mcp/detail/protocol.hpp"
#include "runtime/mcp/detail/tool_adapter.hpp"

#include <initializer_list>

using namespace troupe;

namespace {

void require_type(const error_info& e, std::initializer_list<std::string_view> allowed, const char* what) {
  bool known = false;
  for (std::string_view t : allowed) known = known || e.type == t;
  fuzz::require(known, what);
  fuzz::require_valid_text(e.message, "an error's message is not valid UTF-8");
}

bool same_id(const mcp::rpc_message& m, const mcp::rpc_id& id) {
  const auto* r = std::get_if<mcp::rpc_response>(&m);
  return r && r->id == id;
}

void read_reply(const mcp::rpc_response& response) {
  mcp::rpc_reply reply;
  if (const auto* e = std::get_if<mcp::rpc_error>(&response.outcome)) {
    require_type(mcp::error_of(*e, "fuzz"), {mcp::mcp_error::rpc_error}, "a JSON-RPC error of another type");
    reply = *e;
  } else {
    const auto& result = std::get<boost::json::object>(response.outcome);
    // Re-encoded (as a peer would relay it), a result reads back the same.
    const auto back = mcp::parse_rpc_message(mcp::encode_result(response.id, result));
    fuzz::require(same_id(back, response.id), "an encoded result does not read back as a response to its id");
    fuzz::require(std::get<boost::json::object>(std::get<mcp::rpc_response>(back).outcome) == result,
                  "an encoded result does not read back as the same result");
    if (auto bad = mcp::check_result_type(result, "fuzz")) {
      require_type(*bad, {error_type::malformed_response, mcp::mcp_error::unsupported_result},
                   "a refused resultType of another type");
      reply = std::move(*bad);
    } else {
      reply = result;
    }
  }

  const auto verdict = mcp::judge_probe(reply, "fuzz");
  if (const auto* e = std::get_if<error_info>(&verdict))
    require_type(*e,
                 {mcp::mcp_error::rpc_error, mcp::mcp_error::unsupported_version, error_type::malformed_response,
                  mcp::mcp_error::unsupported_result},
                 "a probe refused with another type");

  const tool_outcome outcome = mcp::outcome_of_call(std::move(reply), "fuzz");
  if (const auto* e = std::get_if<error_info>(&outcome)) {
    require_type(*e,
                 {mcp::mcp_error::tool_error, mcp::mcp_error::rpc_error, error_type::malformed_response,
                  mcp::mcp_error::unsupported_result},
                 "a tool call failed with another type");
    return;
  }
  const auto& value = std::get<boost::json::value>(outcome);
  fuzz::require(value.is_string() || value.is_object(), "a tool outcome that is neither text nor an object");
  if (value.is_string()) fuzz::require_valid_text(std::string_view(value.as_string()), "a tool's text is not UTF-8");
}

void read(std::string_view text) {
  if (auto batch = mcp::split_rpc_batch(text)) {
    // parse_json's depth limit bounds how deep batches nest.
    for (const std::string& one : *batch) read(one);
    return;
  }
  const mcp::rpc_message message = mcp::parse_rpc_message(text);
  if (const auto* m = std::get_if<mcp::malformed_message>(&message)) {
    fuzz::require_valid_text(m->why, "a malformed message's reason is not valid UTF-8");
    fuzz::require(!m->why.empty(), "a malformed message without a reason");
  } else if (const auto* r = std::get_if<mcp::rpc_response>(&message)) {
    read_reply(*r);
  } else if (const auto* q = std::get_if<mcp::rpc_request>(&message)) {
    // The answer we send must be a response the server can match.
    const std::string answer = q->method == "ping" ? mcp::encode_result(q->id, {})
                                                   : mcp::encode_error(q->id, mcp::rpc_code::method_not_found,
                                                                       "troupe does not provide " + q->method);
    fuzz::require(same_id(mcp::parse_rpc_message(answer), q->id), "our answer to a request does not read back");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  read(fuzz::text(data, size));
  return 0;
}
