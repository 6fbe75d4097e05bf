#pragma once
// POST /v1/chat/completions in OpenAI's shapes, as pure functions: the
// request read and checked into a troupe turn, and the answer written back
// as one completion object or as the chunks of a stream. Nothing here does
// I/O or touches the runtime, so every shape is unit-tested on its own.
//
// The caller's messages are the conversation: its system (or developer)
// messages become the turn's system prompt, everything before the last
// message becomes the entries a fresh thread starts with (messages, the
// assistant's tool calls and their results), and the last message, which
// must be the user's, becomes the question.

#include "apps/serve/http.hpp"

#include "signals/generation_params.hpp"
#include "signals/token_usage.hpp"
#include "thread/entry.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace troupe::serve {

// An error in OpenAI's shape, {"error":{"message","type","param","code"}},
// with the HTTP status it goes out with.
struct openai_error {
  int status = 400;
  std::string type;     // invalid_request_error, not_found_error, …
  std::string message;  // names the field: "messages[2].role: expected one of …"
  std::string param;    // the field, empty when none
  std::string code;     // e.g. model_not_found; empty when none

  friend bool operator==(const openai_error&, const openai_error&) = default;
};

openai_error invalid_request(std::string param, std::string message);
// OpenAI's error type for an HTTP status (invalid_request_error for 4xx
// but 409 and 429, server_error, upstream_error, timeout_error, …).
std::string_view openai_error_type(int status);
std::string to_json_text(const openai_error& e);
// The error as an HTTP answer (429 with Retry-After: 1).
http_response openai_response(const openai_error& e);

struct chat_tool_call {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, as OpenAI sends it

  friend bool operator==(const chat_tool_call&, const chat_tool_call&) = default;
};

struct chat_message {
  std::string role;  // system, developer, user, assistant, tool
  std::string content;
  std::vector<chat_tool_call> tool_calls;  // assistant
  std::string tool_call_id;                // tool

  friend bool operator==(const chat_message&, const chat_message&) = default;
};

struct chat_request {
  std::string model;  // a troupe agent's id
  std::vector<chat_message> messages;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string user;
  generation_params params;  // max_tokens / max_completion_tokens, temperature, top_p, stop

  friend bool operator==(const chat_request&, const chat_request&) = default;
};

// Reads and checks a request body. Fields troupe cannot honour are refused
// rather than ignored (n > 1, caller-defined tools, non-text content).
std::variant<chat_request, openai_error> parse_chat_request(std::string_view body);

// What a troupe turn needs from a request.
struct chat_turn {
  std::optional<std::string> system_prompt;  // the system messages joined; none: the agent's own
  std::vector<entry_draft> history;          // what the thread starts with
  std::string question;                      // the last (user) message
};

// Fails when the messages cannot form a turn: the last one is not the
// user's, a tool message answers no earlier tool call, an assistant's tool
// call is left unanswered or shares its id with another, or its arguments
// are not a JSON object.
std::variant<chat_turn, openai_error> to_turn(const chat_request& r);

// What every chunk and the completion share.
struct completion_header {
  std::string id;            // chatcmpl-…
  std::int64_t created = 0;  // Unix seconds
  std::string model;
};

// OpenAI names tokens differently: prompt_tokens, completion_tokens, total_tokens.
std::string completion_json(const completion_header& h, std::string_view answer, const token_usage& usage);

// One SSE data line's JSON each. `with_usage_field` (include_usage) adds
// "usage": null to the chunks before the usage chunk, as OpenAI does.
std::string role_chunk_json(const completion_header& h, bool with_usage_field);
std::string content_chunk_json(const completion_header& h, std::string_view text, bool with_usage_field);
std::string finish_chunk_json(const completion_header& h, bool with_usage_field);
std::string usage_chunk_json(const completion_header& h, const token_usage& usage);

// The stored conversation's identifier for a caller's `user` and chat (the
// X-Troupe-Conversation header): the two joined by '/', each with '%' and
// '/' escaped as %25 and %2F, so that no two pairs share a conversation. A
// pair with neither character keeps the plain "USER/CHAT" form.
std::string conversation_identifier(std::string_view user, std::string_view chat);

// The status and OpenAI error a failed turn answers with, from the
// runtime's error type (queue_full 429, deadline_exceeded 504, a model's
// failure 502, …).
openai_error turn_error(std::string_view type, std::string_view message);

// A turn that paused for a person's decisions: no completion, and no
// failure either. OpenAI's error shape with status 409, type
// conflict_error, code awaiting_input, and two members of troupe's own:
// `pending` (the calls that wait, as GET /v1/conversations/{id}/pending
// lists them) and `conversation_id`, where POST …/decisions continues the
// turn. Null without a conversation (a request without
// X-Troupe-Conversation): its thread, and the pause with it, are gone.
boost::json::object paused_error_json(const std::optional<std::string>& conversation_id, boost::json::array pending);
http_response paused_response(const std::optional<std::string>& conversation_id, boost::json::array pending);

}  // namespace troupe::serve
