#include "apps/serve/metrics_route.hpp"

#include "apps/serve/exchange.hpp"
#include "apps/serve/router.hpp"
#include "apps/serve/serve_metrics.hpp"

namespace troupe::serve {

void add_metrics_route(router& r, std::shared_ptr<const serve_metrics> metrics) {
  r.add(http::verb::get, "/metrics",
        [metrics](const std::shared_ptr<exchange>& ex) {
          http_response res{http::status::ok, 11};
          res.set(http::field::content_type, exposition_content_type);
          res.body() = metrics->exposition();
          res.prepare_payload();
          ex->respond(std::move(res));
        },
        {.role = key_role::metrics});
}

}  // namespace troupe::serve
