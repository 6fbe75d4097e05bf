#pragma once
// A simulation's event log: one JSON object a line (docs/simulations.md has
// the events and their fields). Written in the run's deterministic order,
// so two seeded runs write the same bytes; flushed to disk at every
// committed step, so the log is never behind the store, and cut back to the
// last committed step when a run resumes.

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace troupe {

class event_log {
 public:
  event_log() = default;
  ~event_log();
  event_log(const event_log&) = delete;
  event_log& operator=(const event_log&) = delete;

  // Opens (creating or emptying) the file at `path`; with `keep`, keeps
  // that many bytes of it and appends after them. Empty path: a log that
  // only counts. Throws std::runtime_error naming the file.
  void open(const std::string& path, std::optional<std::uint64_t> keep = std::nullopt);
  void write(const boost::json::object& event);
  // Writes what is buffered and waits for the disk. Throws on failure (a
  // full disk): a step is not committed past a log that lost its events.
  void flush();
  // Bytes in the log so far, buffered ones included.
  std::uint64_t bytes() const { return bytes_; }

 private:
  void write_out();

  int fd_ = -1;
  std::string path_;
  std::string buffer_;
  std::uint64_t bytes_ = 0;
};

}  // namespace troupe
