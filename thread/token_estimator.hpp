#pragma once
// How many tokens a piece of context costs. The heuristic is about four bytes
// per token plus a fixed overhead per message; an exact tokenizer can be
// plugged in behind the same interface.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace troupe {

class token_estimator {
 public:
  virtual ~token_estimator() = default;
  virtual std::int64_t text(std::string_view s) const = 0;
  virtual std::int64_t per_message() const = 0;
  // The estimate of a text from its size alone, for an estimator that needs
  // nothing else (a caller that can measure a text without writing it then
  // need not write it); none for one that reads the text.
  virtual std::optional<std::int64_t> text_of_size(std::size_t) const { return std::nullopt; }
};

class heuristic_estimator final : public token_estimator {
 public:
  std::int64_t text(std::string_view s) const override { return *text_of_size(s.size()); }
  std::int64_t per_message() const override { return 4; }
  std::optional<std::int64_t> text_of_size(std::size_t size) const override {
    return static_cast<std::int64_t>((size + 3) / 4);
  }
};

const token_estimator& default_estimator();

}  // namespace troupe
