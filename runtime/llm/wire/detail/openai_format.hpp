#pragma once
// The OpenAI chat-completions wire format, as OpenAI and the servers that
// copy it speak it (llama.cpp server, vLLM, Ollama, OpenRouter, …).

#include "directives/llm_stream.hpp"
#include "runtime/llm/wire/detail/stream_decoder.hpp"

#include <boost/json/object.hpp>

namespace troupe {

class json_reader;

// The request body for POST {base}/chat/completions. Streaming asks for the
// final usage chunk (stream_options.include_usage).
boost::json::object openai_request_body(const llm_stream& request, bool stream);

// Reads "data:" chunks: choices[0].delta.content (and reasoning_content,
// which some servers send), tool_calls assembled by index from fragments,
// finish_reason, the usage chunk (choices empty, null or missing), an error
// object inside the stream, and the [DONE] terminator.
class openai_stream_decoder final : public stream_decoder {
 public:
  using stream_decoder::stream_decoder;
  void on_event(const sse_event& e) override;

 private:
  void read_chunk(const json_reader& chunk);
};

// A non-streaming response body.
llm_result decode_openai_response(const std::string& call_id, std::string_view body);

}  // namespace troupe
