// GET /v1/agents (what a client may talk to), /healthz (the process
// answers) and /readyz (the store answers and every agent runs).

#include "apps/serve/client_error.hpp"
#include "apps/serve/route_context.hpp"

#include <boost/json/array.hpp>

namespace troupe::serve {

namespace json = boost::json;

void add_service_routes(router& r, route_context& ctx) {
  r.add(http::verb::get, "/v1/agents", [&ctx](const std::shared_ptr<exchange>& ex) {
    json::array data;
    for (const deployed_agent& a : ctx.agents.agents()) {
      json::array tools;
      for (const auto& t : a.tools) tools.emplace_back(t);
      json::object o{{"id", a.config.id}, {"model", a.model}, {"tools", std::move(tools)}};
      if (!a.config.description.empty()) o["description"] = a.config.description;
      data.emplace_back(std::move(o));
    }
    ex->respond(json_response(http::status::ok, {{"data", std::move(data)}}));
  });
  r.add(http::verb::get, "/healthz",
        [](const std::shared_ptr<exchange>& ex) {
          ex->respond(json_response(http::status::ok, {{"status", "ok"}}));
        },
        {.public_route = true});
  r.add(http::verb::get, "/readyz",
        [&ctx](const std::shared_ptr<exchange>& ex) {
          on_worker(ctx, ex, [&ctx](const std::shared_ptr<exchange>& ex) {
            // A cheap read that goes to the database.
            auto probe = ctx.agents.store().conversations->list_conversations("", 1, 0);
            const bool agents = ctx.agents.agents_up();
            const bool draining = ctx.draining.load();
            const bool ready = probe && agents && !draining;
            json::object body{
                {"status", ready ? "ready" : "not_ready"},
                {"store", probe ? "ok" : client_message("store_" + probe.error().type, probe.error().message)},
                {"agents", agents ? "ok" : "not running"},
                {"draining", draining}};
            ex->respond(json_response(ready ? http::status::ok : http::status::service_unavailable, body));
          });
        },
        {.public_route = true});
}

}  // namespace troupe::serve
