#include "runtime/base64.hpp"

#include <boost/archive/iterators/base64_from_binary.hpp>
#include <boost/archive/iterators/transform_width.hpp>

namespace troupe {

std::string base64_encoded(std::string_view bytes) {
  // Boost.Archive's iterators are header-only and public, unlike Beast's
  // detail::base64. They read 6 bits at a time and zero-fill the last group;
  // the '=' padding that makes the length a multiple of 4 is ours to add.
  namespace it = boost::archive::iterators;
  using encoder = it::base64_from_binary<it::transform_width<const char*, 6, 8>>;
  std::string out(encoder(bytes.data()), encoder(bytes.data() + bytes.size()));
  out.append((3 - bytes.size() % 3) % 3, '=');
  return out;
}

}  // namespace troupe
