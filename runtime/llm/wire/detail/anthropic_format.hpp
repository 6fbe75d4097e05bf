#pragma once
// Anthropic's Messages wire format.

#include "directives/llm_stream.hpp"
#include "runtime/llm/wire/detail/stream_decoder.hpp"

#include <boost/json/object.hpp>

namespace troupe {

class json_reader;

// The request body for POST {base}/v1/messages: system messages become the
// top-level system prompt; an assistant's tool calls become tool_use blocks;
// consecutive tool results become tool_result blocks of one user message (the
// API wants roles to alternate). max_tokens is required by the API: 4096 when
// the request sets none.
boost::json::object anthropic_request_body(const llm_stream& request, bool stream);

// Reads message_start (input usage), content_block_start (text, tool_use,
// thinking), content_block_delta (text_delta, input_json_delta,
// thinking_delta), content_block_stop, message_delta (stop_reason; its usage
// is cumulative), message_stop (the terminator), ping and error events.
class anthropic_stream_decoder final : public stream_decoder {
 public:
  using stream_decoder::stream_decoder;
  void on_event(const sse_event& e) override;

 private:
  void read_event(const json_reader& o, std::string_view sse_type);

  // Content block index -> position in tool_calls_, for tool_use blocks.
  std::vector<std::pair<std::size_t, std::size_t>> tool_blocks_;
};

// A non-streaming response body.
llm_result decode_anthropic_response(const std::string& call_id, std::string_view body);

}  // namespace troupe
