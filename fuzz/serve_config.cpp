// The TOML of `troupe serve --config` (parse_config, toml++): a file is
// served or refused with a config_error naming the field, never anything
// else thrown, and the message is valid UTF-8. What is served keeps the
// checks parse_config promises: an agent and a key at least, agent ids and
// keys distinct, keys of 16 characters or more.
//
// Paths resolve against a directory that does not exist, so a script named
// relatively is never read; API keys come from the environment, as in
// production.

#include "apps/serve/config.hpp"
#include "fuzz_input.hpp"

#include <set>
#include <string>

using namespace troupe;
using namespace troupe::serve;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  serve_config c;
  try {
    c = parse_config(std::string(fuzz::text(data, size)), "fuzz.toml", "/nonexistent-troupe-fuzz");
  } catch (const config_error& e) {
    fuzz::require_valid_text(e.what(), "a config error's message is not valid UTF-8");
    return 0;
  }
  fuzz::require(!c.agents.empty() && !c.keys.empty(), "a config without an agent or a key accepted");
  std::set<std::string> ids, keys;
  for (const agent_config& a : c.agents)
    fuzz::require(!a.id.empty() && ids.insert(a.id).second, "an agent id empty or given twice accepted");
  for (const api_key& k : c.keys)
    fuzz::require(k.key.size() >= 16 && keys.insert(k.key).second, "a short or repeated key accepted");
  return 0;
}
