#pragma once
// A model's streamed response through the SSE parser into a stream decoder,
// fed whole and in pieces: neither may throw or crash, and both must give
// the same result and the same deltas, all of it valid UTF-8.

#include "fuzz_input.hpp"
#include "runtime/llm/wire/detail/stream_decoder.hpp"
#include "runtime/llm/wire/sse_parser.hpp"

#include <string>

namespace troupe::fuzz {

struct stream_outcome {
  llm_result result;
  std::string deltas;
};

template <class Decoder>
stream_outcome decode_stream(std::string_view input, std::size_t piece) {
  stream_outcome out;
  Decoder d("fuzz-call", [&](llm_delta delta) { out.deltas += delta.text + '\x1f' + delta.thinking + '\x1e'; });
  sse_parser p;
  for (std::size_t at = 0; at < input.size(); at += piece)
    p.feed(input.substr(at, piece), [&](const sse_event& e) { d.on_event(e); });
  out.result = d.finish();
  return out;
}

template <class Decoder>
void check_stream(std::string_view input) {
  const stream_outcome whole = decode_stream<Decoder>(input, input.size() ? input.size() : 1);
  const stream_outcome split = decode_stream<Decoder>(input, piece_size(input));
  require(whole.result == split.result, "the result depends on how the bytes are split");
  require(whole.deltas == split.deltas, "the deltas depend on how the bytes are split");
  require_valid_text(whole.deltas, "a delta that is not UTF-8");
  require_valid_text(whole.result, "a result with text that is not UTF-8");
}

}  // namespace troupe::fuzz
