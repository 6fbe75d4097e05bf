#pragma once
// How many tokens a piece of context costs. The heuristic is about four bytes
// per token plus a fixed overhead per message; an exact tokenizer can be
// plugged in behind the same interface.

#include <cstdint>
#include <string_view>

namespace troupe {

class token_estimator {
 public:
  virtual ~token_estimator() = default;
  virtual std::int64_t text(std::string_view s) const = 0;
  virtual std::int64_t per_message() const = 0;
};

class heuristic_estimator final : public token_estimator {
 public:
  std::int64_t text(std::string_view s) const override { return static_cast<std::int64_t>((s.size() + 3) / 4); }
  std::int64_t per_message() const override { return 4; }
};

const token_estimator& default_estimator();

}  // namespace troupe
