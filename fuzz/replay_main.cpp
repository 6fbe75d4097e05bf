// The main() of a fuzz target built without libFuzzer (gcc, the normal
// build): runs the target once over every file named on the command line or
// found under a directory named there, so that ctest replays each corpus —
// the seeds and every crash found and fixed since — in seconds.

#include "fuzz_input.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

int replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << file << "\n";
    return 1;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t inputs = 0;
  int failures = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path root(argv[i]);
    if (!fs::is_directory(root)) {
      failures += replay(root);
      ++inputs;
      continue;
    }
    for (const auto& entry : fs::recursive_directory_iterator(root))
      if (entry.is_regular_file()) {
        failures += replay(entry.path());
        ++inputs;
      }
  }
  std::cout << inputs << " inputs replayed\n";
  // A corpus that went missing must not pass as a clean replay.
  return failures || inputs == 0 ? 1 : 0;
}
