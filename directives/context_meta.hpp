#pragma once
// What a projection of the thread did to make a model call's context; an
// llm_stream carries it for tracing, telemetry and `/context`.

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>

namespace troupe {

struct context_meta {
  std::int64_t estimated_tokens = 0;
  std::int64_t budget = 0;  // the input budget it was made for
  bool truncated = false;   // older entries (after the summary) were left out
  bool oversized = false;   // the newest unit alone exceeds the budget: it was sent alone
  std::size_t entries_included = 0;
  std::size_t entries_total = 0;  // entries in the thread
  bool summary_used = false;
  std::uint64_t basis_rev = 0;
  std::optional<std::uint64_t> basis_last_seq;
  std::size_t pending_count = 0;
  bool needs_summary = false;
  // The newest entry left out (what a new summary should cover up to).
  std::optional<std::uint64_t> dropped_to_seq;
  // With needs_summary: the seq a new summary should cover up to so that what
  // follows it fills at most the policy's summarize_to of the window.
  std::optional<std::uint64_t> summarize_to_seq;

  friend bool operator==(const context_meta&, const context_meta&) = default;
};

boost::json::value to_json(const context_meta& m);

}  // namespace troupe
