// The OpenAI chat-completions stream decoder.

#include "runtime/llm/wire/detail/openai_format.hpp"
#include "stream_decoding.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  troupe::fuzz::check_stream<troupe::openai_stream_decoder>(troupe::fuzz::text(data, size));
  return 0;
}
