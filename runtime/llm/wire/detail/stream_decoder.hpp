#pragma once
// Turns one provider's streamed events into troupe's signals: deltas as they
// come, and one llm_result at the end. Each wire format (OpenAI chat
// completions, Anthropic messages) is a subclass; what they share lives here.

#include "json/json_reader.hpp"
#include "runtime/llm/wire/sse_parser.hpp"
#include "signals/llm_delta.hpp"
#include "signals/llm_result.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

// Limits on what a response may claim, beyond which it is malformed. Token
// counts are summed over many calls and must never overflow; tool calls are
// kept by index, which must not make us allocate without bound.
inline constexpr std::int64_t max_token_count = 1'000'000'000'000;
inline constexpr std::size_t max_tool_calls = 1024;

class stream_decoder {
 public:
  stream_decoder(std::string call_id, std::function<void(llm_delta)> on_delta)
      : call_id_(std::move(call_id)), on_delta_(std::move(on_delta)) {}
  virtual ~stream_decoder() = default;

  virtual void on_event(const sse_event& e) = 0;
  // True once the stream's terminator or an error arrived: later events are ignored.
  bool done() const { return done_; }
  // What the call produced. A stream that ended before its terminator is a
  // malformed_response error, never a success.
  llm_result finish();

 protected:
  // A tool call assembled from its streamed pieces.
  struct partial_tool_call {
    std::string id;
    std::string name;
    std::string arguments;  // JSON text, concatenated from fragments
  };

  void text(std::string_view t);
  void thinking(std::string_view t);
  void fail(error_info e);
  void complete(std::string finish_reason);
  // Malformed JSON in a data line ends the call: the stream cannot be trusted.
  void malformed(std::string what);
  // Remembers the response's id and model (response_label) from the first
  // object that names them.
  void name_response(const json_reader& o, std::string_view id_key, std::string_view model_key);

  std::vector<partial_tool_call> tool_calls_;
  std::optional<token_usage> usage_;
  std::string finish_reason_;  // as the provider said it ("stop", "tool_use", …)
  std::string response_id_;
  std::string response_model_;

 private:
  std::string call_id_;
  std::function<void(llm_delta)> on_delta_;
  std::string text_;
  std::string thinking_;
  std::optional<error_info> error_;
  bool done_ = false;
};

// A response's id or model, as a server names them in `key`: only a string
// counts, cut to 256 bytes, else "". They only label spans, so a server that
// sends something else there does not fail the call.
std::string response_label(const json_reader& o, std::string_view key);

// Parses a tool call's argument text: an object is used as it is, empty
// text is {}, anything else is kept raw as invalid_arguments so that the
// model is told instead of the runtime crashing.
tool_call assemble_tool_call(std::string id, std::string name, const std::string& arguments);

}  // namespace troupe
