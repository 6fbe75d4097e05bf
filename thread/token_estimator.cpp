#include "thread/token_estimator.hpp"

namespace troupe {

const token_estimator& default_estimator() {
  static const heuristic_estimator instance;
  return instance;
}

}  // namespace troupe
