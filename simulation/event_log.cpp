#include "simulation/event_log.hpp"

#include "json/json_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace troupe {

namespace {

std::runtime_error failure(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

event_log::~event_log() {
  if (fd_ < 0) return;
  try {
    write_out();
  } catch (const std::exception&) {
    // A destructor cannot report it; flush() did for every committed step.
  }
  ::close(fd_);
}

void event_log::open(const std::string& path, std::optional<std::uint64_t> keep) {
  path_ = path;
  bytes_ = keep.value_or(0);
  if (path.empty()) return;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (keep ? 0 : O_TRUNC), 0644);
  if (fd_ < 0) throw failure("cannot open the event log", path);
  if (keep) {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw failure("cannot read the event log", path);
    if (static_cast<std::uint64_t>(st.st_size) < *keep)
      throw std::runtime_error("the event log " + path + " holds " + std::to_string(st.st_size) +
                               " bytes, fewer than the " + std::to_string(*keep) +
                               " the store's last committed step wrote: it is not this run's log");
    if (::ftruncate(fd_, static_cast<off_t>(*keep)) != 0) throw failure("cannot cut back the event log", path);
  }
  if (::lseek(fd_, 0, SEEK_END) < 0) throw failure("cannot seek in the event log", path);
}

void event_log::write(const boost::json::object& event) {
  const std::size_t before = buffer_.size();
  buffer_ += json_text(event);
  buffer_ += '\n';
  bytes_ += buffer_.size() - before;
  if (buffer_.size() >= (1U << 20)) write_out();
}

void event_log::write_out() {
  if (fd_ < 0) {
    buffer_.clear();
    return;
  }
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw failure("cannot write the event log", path_);
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

void event_log::flush() {
  write_out();
  if (fd_ >= 0 && ::fdatasync(fd_) != 0) throw failure("cannot sync the event log", path_);
}

}  // namespace troupe
