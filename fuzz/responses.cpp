// Whole response bodies: both formats' non-streaming decoders, and the typed
// error made from a failed call's body and its Retry-After header (the
// input's first line).

#include "fuzz_input.hpp"
#include "runtime/llm/llm_errors.hpp"
#include "runtime/llm/wire/detail/anthropic_format.hpp"
#include "runtime/llm/wire/detail/openai_format.hpp"

#include <boost/json/parse.hpp>

using namespace troupe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body = fuzz::text(data, size);
  fuzz::require_valid_text(decode_openai_response("fuzz-call", body), "an OpenAI response with text that is not UTF-8");
  fuzz::require_valid_text(decode_anthropic_response("fuzz-call", body),
                           "an Anthropic response with text that is not UTF-8");

  const std::string_view header = body.substr(0, body.find('\n'));
  const error_info e = classify_http_error(400 + static_cast<int>(size % 200), body, header, 1'763'700'000'000);
  fuzz::require(!e.type.empty(), "an HTTP error without a type");
  fuzz::require_valid_text(e.message, "an HTTP error quoting bytes that are not UTF-8");
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(body, ec);
  if (!ec) {
    const error_info stream_error = classify_stream_error(v);
    fuzz::require(!stream_error.type.empty(), "a stream error without a type");
    fuzz::require_valid_text(stream_error.message, "a stream error that is not UTF-8");
  }
  return 0;
}
