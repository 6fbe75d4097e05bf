#pragma once
// "Stream this context to this model": one model call of a request.

#include "directives/context_meta.hpp"
#include "directives/llm_message.hpp"
#include "directives/tool_spec.hpp"
#include "signals/generation_params.hpp"

#include <string>
#include <vector>

namespace troupe {

struct llm_stream {
  std::string call_id;
  std::string model;
  message_list messages;
  tool_set tools;  // may be null: no tools
  generation_params params;
  std::string request_id;
  int iteration = 0;
  context_meta context;  // how `messages` was projected from the thread
  // The W3C traceparent of this call's span, for the provider to pass on;
  // set by the runtime when the call is traced (the strategy leaves it empty).
  std::string traceparent{};
};

}  // namespace troupe
