// Whole response bodies: both formats' non-streaming decoders, and the typed
// error made from a failed call's body and its Retry-After header (the
// input's first line).

#include "fuzz_input.hpp"
#include "runtime/llm/llm_errors.hpp"
#include "runtime/llm/wire/anthropic_format.hpp"
#include "runtime/llm/wire/openai_format.hpp"

#include <boost/json/parse.hpp>

using namespace troupe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body = fuzz::text(data, size);
  (void)decode_openai_response("fuzz-call", body);
  (void)decode_anthropic_response("fuzz-call", body);

  const std::string_view header = body.substr(0, body.find('\n'));
  const error_info e = classify_http_error(400 + static_cast<int>(size % 200), body, header, 1'763'700'000'000);
  fuzz::require(!e.type.empty(), "an HTTP error without a type");
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(body, ec);
  if (!ec) fuzz::require(!classify_stream_error(v).type.empty(), "a stream error without a type");
  return 0;
}
