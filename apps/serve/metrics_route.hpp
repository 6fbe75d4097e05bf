#pragma once
// GET /metrics: the server's metrics in the Prometheus text format. Behind
// a key like every API route (a Prometheus scrape config sets it with
// `authorization: {credentials: KEY}`).

#include <memory>

namespace troupe::serve {

class router;
class serve_metrics;

void add_metrics_route(router& r, std::shared_ptr<const serve_metrics> metrics);

}  // namespace troupe::serve
