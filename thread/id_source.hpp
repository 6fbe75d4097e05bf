#pragma once
// Where new ids come from. The strategy never invents an id itself: the caller
// hands it an id_source, so that a replay with the same source reproduces the
// same entries and directives byte for byte. The runtime supplies random ids;
// tests and examples use sequential_ids.

#include <cstdint>
#include <string>
#include <string_view>

namespace troupe {

class id_source {
 public:
  virtual ~id_source() = default;
  // A new id for a thing of this kind ("entry", "call", …).
  virtual std::string next(std::string_view kind) = 0;
};

// "call-1", "entry-2", …: one counter shared by all kinds, so ids stay unique
// across kinds too.
class sequential_ids final : public id_source {
 public:
  explicit sequential_ids(std::uint64_t first = 1) : next_(first) {}
  std::string next(std::string_view kind) override {
    std::string id(kind);
    id += '-';
    id += std::to_string(next_++);
    return id;
  }

 private:
  std::uint64_t next_;
};

}  // namespace troupe
