#pragma once
// POST /v1/chat/completions (OpenAI-compatible; see openai_routes.cpp).

namespace troupe::serve {

class router;
struct route_context;

void add_openai_routes(router& r, route_context& ctx);

}  // namespace troupe::serve
