// The CloudEvents envelope decoder: whatever it accepts, it can write back.

#include "signals/envelope.hpp"
#include "fuzz_input.hpp"

#include <boost/json/serialize.hpp>

using namespace troupe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto decoded = parse_envelope(fuzz::text(data, size));
  if (decoded) (void)boost::json::serialize(to_json(*decoded));
  return 0;
}
