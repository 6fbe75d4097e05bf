// The HTTP status serve answers a request's error with.

#include "apps/serve/http.hpp"
#include "signals/error_info.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::serve;

TEST_CASE("a cluster node lost while it ran the request is a 503: asked again, a survivor answers") {
  CHECK(status_of_error(error_type::node_lost) == http::status::service_unavailable);
}

TEST_CASE("a node that refused us or runs another build is a 502") {
  CHECK(status_of_error(error_type::node_refused) == http::status::bad_gateway);
  CHECK(status_of_error(error_type::incompatible_build) == http::status::bad_gateway);
}
