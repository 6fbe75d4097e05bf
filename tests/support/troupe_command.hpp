#pragma once
// Runs the troupe binary the test was built with (TROUPE_BINARY), as a user
// would from a shell, and returns its exit code and what it printed.

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace troupe::testing {

struct run_result {
  int exit_code;
  std::string out;
};

// A shell command line's exit code and what it printed.
inline run_result run_shell(const std::string& command) {
  std::FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// `args` is a shell fragment; stderr joins stdout when asked.
inline run_result run_troupe(const std::string& args, bool with_stderr = false) {
  return run_shell(std::string(TROUPE_BINARY) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

}  // namespace troupe::testing
