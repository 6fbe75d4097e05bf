#include "runtime/store/detail/lease_holder.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

namespace troupe {

namespace {

// This host as owner ids name it: its name, and its pid namespace unless
// that is the initial one. A container's pids are not the host's, and
// containers on the host's network share its name as well.
std::string host_id() {
  char host[256] = {};
  std::string out = gethostname(host, sizeof host - 1) == 0 ? host : "host";
  char link[64] = {};
  const ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link - 1);
  const std::string_view ns(link, n > 0 ? static_cast<std::size_t>(n) : 0);  // pid:[inode]
  const auto open = ns.find('['), close = ns.rfind(']');
  constexpr std::string_view initial = "4026531836";  // PROC_PID_INIT_INO
  if (open != std::string_view::npos && close != std::string_view::npos && close > open) {
    const std::string_view inode = ns.substr(open + 1, close - open - 1);
    if (inode != initial) out += "~" + std::string(inode);
  }
  return out;
}

const std::string& this_host() {
  static const std::string host = host_id();
  return host;
}

std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t out = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return out;
}

// /proc/<pid>/stat's fields after the command name (which may hold spaces
// and parentheses, so it is cut at its last ')'): state first (field 3).
std::optional<std::vector<std::string>> stat_fields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(std::move(f));
  return fields;
}

constexpr std::size_t state_field = 0;   // field 3
constexpr std::size_t start_field = 19;  // field 22

}  // namespace

std::optional<std::uint64_t> process_start_time(pid_t pid) {
  const auto fields = stat_fields(pid);
  if (!fields || fields->size() <= start_field) return std::nullopt;
  return number((*fields)[start_field]);
}

std::string process_owner_id(pid_t pid, const std::string& unique) {
  const auto start = process_start_time(pid);
  return this_host() + "/" + std::to_string(pid) + "/" + (start ? std::to_string(*start) + "/" : "") + unique;
}

bool holder_is_gone(const std::string& owner) {
  std::vector<std::string_view> parts;
  for (std::string_view rest = owner;;) {
    const auto slash = rest.find('/');
    parts.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (parts.size() != 3 && parts.size() != 4) return false;
  const auto pid = number(parts[1]);
  const auto recorded_start = parts.size() == 4 ? number(parts[2]) : std::nullopt;
  if (!pid || *pid == 0 || *pid > INT32_MAX || (parts.size() == 4 && !recorded_start)) return false;
  if (parts[0] != this_host()) return false;
  const auto p = static_cast<pid_t>(*pid);
  if (const auto fields = stat_fields(p); fields && fields->size() > start_field) {
    const std::string& state = (*fields)[state_field];
    if (state == "Z" || state == "X") return true;  // exited, not yet reaped
    return recorded_start && number((*fields)[start_field]) != recorded_start;
  }
  // No /proc entry: gone if the kernel says so; EPERM means it runs.
  return kill(p, 0) != 0 && errno == ESRCH;
}

}  // namespace troupe
