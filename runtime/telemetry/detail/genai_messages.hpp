#pragma once
// Message content in the shape the GenAI conventions give the
// gen_ai.input.messages and gen_ai.output.messages attributes: JSON text of
// [{"role", "parts": [{"type": "text", "content"} | {"type": "tool_call", "id",
// "name", "arguments"} | {"type": "tool_call_response", "id", "response"}],
// "finish_reason"?}]. Built only when content capture is on: it may be private.

#include "directives/llm_message.hpp"
#include "signals/llm_result.hpp"

#include <string>

namespace troupe {

std::string genai_input_messages(const message_list& messages);
std::string genai_output_messages(const llm_completion& c);
// One message of text alone: a request's question or its answer.
std::string genai_text_message(const std::string& role, const std::string& text);

}  // namespace troupe
