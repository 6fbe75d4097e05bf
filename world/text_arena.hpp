#pragma once
// Texts stored end to end in blocks of 1 MiB, each named by its position: a
// million posts cost their bytes and no header each (a std::string is 32
// bytes before its text), and growing never copies what is stored nor
// holds twice the bytes the way a doubling buffer does.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace troupe {

class text_arena {
 public:
  static constexpr std::size_t block_size = std::size_t{1} << 20;

  // Where the text now lives; a text longer than a block gets a block of
  // its own size.
  std::uint64_t append(std::string_view text) {
    if (blocks_.empty() || used_ + text.size() > capacity_) {
      capacity_ = text.size() > block_size ? text.size() : block_size;
      blocks_.push_back(std::make_unique<char[]>(capacity_));
      used_ = 0;
      bytes_ += capacity_;
    }
    const std::uint64_t at = (std::uint64_t{blocks_.size() - 1} << 32) | used_;
    text.copy(blocks_.back().get() + used_, text.size());
    used_ += text.size();
    return at;
  }

  std::string_view at(std::uint64_t position, std::size_t size) const {
    return {blocks_[position >> 32].get() + (position & 0xffffffffu), size};
  }

  std::size_t memory_bytes() const { return bytes_ + blocks_.capacity() * sizeof(blocks_[0]); }

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t capacity_ = 0;  // of the last block
  std::size_t used_ = 0;      // of the last block
  std::size_t bytes_ = 0;
};

}  // namespace troupe
