// The SSE parser: any bytes, split anywhere, give the same events as the
// same bytes fed at once.

#include "runtime/llm/wire/sse_parser.hpp"
#include "fuzz_input.hpp"

#include <string>
#include <vector>

using namespace troupe;

namespace {

struct parsed {
  std::vector<sse_event> events;
  std::optional<std::int64_t> retry_ms;
  bool mid_event = false;
};

bool same(const parsed& a, const parsed& b) {
  if (a.events.size() != b.events.size() || a.retry_ms != b.retry_ms || a.mid_event != b.mid_event) return false;
  for (std::size_t i = 0; i < a.events.size(); ++i)
    if (a.events[i].type != b.events[i].type || a.events[i].data != b.events[i].data ||
        a.events[i].last_event_id != b.events[i].last_event_id)
      return false;
  return true;
}

parsed parse(std::string_view input, std::size_t piece) {
  parsed out;
  sse_parser p;
  for (std::size_t at = 0; at < input.size(); at += piece)
    p.feed(input.substr(at, piece), [&](const sse_event& e) { out.events.push_back(e); });
  out.retry_ms = p.retry_ms();
  out.mid_event = p.mid_event();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::text(data, size);
  const parsed whole = parse(input, input.size() ? input.size() : 1);
  fuzz::require(same(whole, parse(input, fuzz::piece_size(input))), "events depend on how the bytes are split");
  return 0;
}
