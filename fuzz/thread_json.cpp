// The thread JSON reader (what the stores and the command line load), and
// the JSON round trip under it: any text that parses is written back
// (json_text) and read again to the very same value, numbers bit for bit,
// and a thread reads back as the thread that was written.

#include "thread/thread_json.hpp"
#include "fuzz_input.hpp"
#include "json/json_parse.hpp"
#include "json/json_text.hpp"

using namespace troupe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  boost::system::error_code ec;
  const boost::json::value v = parse_json(fuzz::text(data, size), ec);
  if (ec) return 0;
  const std::string text = json_text(v);
  const boost::json::value back = parse_json(text, ec);
  fuzz::require(!ec, "written JSON does not parse");
  fuzz::require(back == v && json_text(back) == text, "JSON does not read back as it was written");

  const auto decoded = decode_thread(v);
  if (!decoded) return 0;
  const std::string thread_text = json_text(to_json(static_cast<const thread_view&>(*decoded)));
  const auto again = decode_thread(parse_json(thread_text));
  fuzz::require(static_cast<bool>(again), "a written thread does not read back");
  fuzz::require(json_text(to_json(static_cast<const thread_view&>(*again))) == thread_text,
                "a thread does not read back as it was written");
  return 0;
}
