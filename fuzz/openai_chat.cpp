// The body of POST /v1/chat/completions as `troupe serve` reads it
// (parse_chat_request), then made a turn (to_turn). Any caller with a key
// sends it, so: no exception, every refusal a 400 invalid_request_error
// naming a top-level field, whose JSON answer parses; and a turn keeps the
// promise of to_turn that every tool call in its history has exactly one
// result.

#include "apps/serve/openai_chat.hpp"
#include "fuzz_input.hpp"
#include "json/json_parse.hpp"

#include <map>
#include <string>

using namespace troupe;
using namespace troupe::serve;

namespace {

void require_refusal(const openai_error& e) {
  fuzz::require(e.status == 400 && e.type == "invalid_request_error", "a refusal that is not a 400 invalid request");
  fuzz::require(!e.message.empty(), "a refusal without a message");
  fuzz::require_valid_text(e.message, "a refusal's message is not valid UTF-8");
  fuzz::require(e.param.find_first_of(".[") == std::string::npos, "a refusal's param is not a top-level field");
  boost::system::error_code ec;
  const auto answer = parse_json(to_json_text(e), ec);
  fuzz::require(!ec && answer.is_object(), "a refusal's JSON does not parse");
}

void require_answered_calls(const chat_turn& turn) {
  std::map<std::string, int, std::less<>> open;  // tool_call_id → calls less results
  for (const entry_draft& d : turn.history) {
    const std::string id(d.refs.tool_call_id());
    if (d.kind == entry_kind::tool_call) ++open[id];
    if (d.kind == entry_kind::tool_result) --open[id];
  }
  for (const auto& [id, balance] : open)
    fuzz::require(balance == 0, "a turn whose tool calls and results do not pair up");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto parsed = parse_chat_request(fuzz::text(data, size));
  if (const auto* e = std::get_if<openai_error>(&parsed)) {
    require_refusal(*e);
    return 0;
  }
  const chat_request& request = std::get<chat_request>(parsed);
  fuzz::require(!request.messages.empty(), "a request without messages accepted");
  auto turn = to_turn(request);
  if (const auto* e = std::get_if<openai_error>(&turn)) {
    require_refusal(*e);
    return 0;
  }
  const chat_turn& t = std::get<chat_turn>(turn);
  fuzz::require_valid_text(t.question, "a question that is not valid UTF-8");
  if (t.system_prompt) fuzz::require_valid_text(*t.system_prompt, "a system prompt that is not valid UTF-8");
  require_answered_calls(t);
  return 0;
}
