#pragma once
// What the plain benchmark programs share: running a measurement in a child
// process (so that one's memory does not flatter or burden the next), and
// medians.

#include "simulation/percentile.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace troupe::bench {

// Runs `fn` in a child process and returns the numbers it produced.
inline std::vector<double> in_child(const std::function<std::vector<double>()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::vector<double> out = fn();
    const auto n = static_cast<ssize_t>(out.size() * sizeof(double));
    if (write(fds[1], out.data(), out.size() * sizeof(double)) != n) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  std::vector<double> out(32);
  const ssize_t n = read(fds[0], out.data(), out.size() * sizeof(double));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  out.resize(n > 0 ? static_cast<std::size_t>(n) / sizeof(double) : 0);
  return out;
}

// A sample sorted once, to read as many quantiles of it as wanted.
class sorted_samples {
 public:
  explicit sorted_samples(std::vector<double> v) : v_(std::move(v)) { std::sort(v_.begin(), v_.end()); }
  // The value at quantile q (0..1), ranked as every figure troupe reports
  // is (simulation/percentile.hpp); 0 when empty.
  double at(double q) const { return v_.empty() ? 0 : v_[quantile_rank(v_.size(), q)]; }

 private:
  std::vector<double> v_;
};

inline double median(std::vector<double> v) { return sorted_samples(std::move(v)).at(0.5); }

// CPU time this process has used, all its threads (a database server's is not counted).
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

inline std::size_t flag(int argc, char** argv, const char* name, std::size_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtoul(argv[i + 1], nullptr, 10);
  return fallback;
}

}  // namespace troupe::bench
