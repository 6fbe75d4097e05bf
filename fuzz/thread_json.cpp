// The thread JSON reader (what the stores and the command line load).

#include "strategy/thread_json.hpp"
#include "fuzz_input.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

using namespace troupe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(fuzz::text(data, size), ec);
  if (ec) return 0;
  const auto decoded = decode_thread(v);
  if (decoded) (void)boost::json::serialize(to_json(static_cast<const thread_view&>(*decoded)));
  return 0;
}
