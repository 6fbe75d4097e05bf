#include "actors/cluster/node.hpp"

#include <caf/config.hpp>

#include "troupe_wire_digest.hpp"  // generated: cmake/wire_digest.cmake

#ifndef TROUPE_CLUSTER_BUILD_TAG
#define TROUPE_CLUSTER_BUILD_TAG ""
#endif
#ifndef TROUPE_VERSION
#define TROUPE_VERSION "0"
#endif

namespace troupe {

// CAF's version is part of it: its binary serialisation of strings,
// integers and optionals is what carries the fields the digest covers.
std::string cluster_build_id() {
  std::string id =
      std::string("troupe ") + TROUPE_VERSION + " caf " + std::to_string(CAF_VERSION) + " wire " + TROUPE_WIRE_DIGEST;
  if (const std::string tag = TROUPE_CLUSTER_BUILD_TAG; !tag.empty()) id += " " + tag;
  return id;
}

}  // namespace troupe
