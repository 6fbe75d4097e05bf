#pragma once
// Runs a callback on a thread that serves others too (curl's I/O thread, the
// timer thread, an actor): an exception must not escape into that thread,
// where it would end the process or every other caller's work. What the
// callback threw comes back as text, for the caller to turn into a typed error.

#include <exception>
#include <optional>
#include <string>

namespace troupe {

template <class F>
std::optional<std::string> thrown_by(F&& f) {
  try {
    f();
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  } catch (...) {
    return std::string("an exception that is not a std::exception");
  }
}

}  // namespace troupe
