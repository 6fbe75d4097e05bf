#pragma once
// Sampling parameters for a model call. Every field is optional: an unset
// field means "the provider's default", and a per-request value overrides the
// agent's (see overlay).

#include "json/decode_error.hpp"

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct generation_params {
  std::optional<int> max_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::vector<std::string> stop;

  // The fields set in `over` replace those of `base`.
  static generation_params overlay(const generation_params& base, const generation_params& over);
  friend bool operator==(const generation_params&, const generation_params&) = default;
};

boost::json::value to_json(const generation_params& p);
decoded<generation_params> decode_generation_params(const boost::json::value& v, std::string path);

}  // namespace troupe
