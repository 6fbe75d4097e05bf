#include "actors/cluster/detail/wire.hpp"
#include "actors/cluster/node.hpp"

#ifndef TROUPE_CLUSTER_BUILD_TAG
#define TROUPE_CLUSTER_BUILD_TAG "unknown"
#endif
#ifndef TROUPE_VERSION
#define TROUPE_VERSION "0"
#endif

namespace troupe {

std::string cluster_build_id() {
  return std::string("troupe ") + TROUPE_VERSION + " wire " + std::to_string(wire::version) + " " +
         TROUPE_CLUSTER_BUILD_TAG;
}

}  // namespace troupe
