#pragma once
// The route table. Another file adds its routes before the server starts:
//
//   void add_my_routes(router& r, my_state& s) {
//     r.add(http::verb::get, "/v1/things/{id}", [&s](const std::shared_ptr<exchange>& ex) {
//       ex->respond(json_response(http::status::ok, {{"id", ex->param("id")}}));
//     });
//   }
//
// A pattern's {name} matches one path segment (percent-decoded). Handlers run
// on an I/O thread and must not block: blocking work goes to the server's
// workers (server::workers()). Routes need `Authorization: Bearer KEY`
// unless added with route_options{.public_route = true}; the exchange then
// carries the key's user. A route needs a user's key unless its options
// name another role (/metrics: key_role::metrics).

#include "apps/serve/config.hpp"
#include "apps/serve/http.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe::serve {

class exchange;
using route_handler = std::function<void(const std::shared_ptr<exchange>&)>;

struct route_options {
  bool public_route = false;  // no key needed
  // The server's own refusals (401, 413, 408, …) in OpenAI's error shape
  // {"error":{"message","type","param","code"}}, as OpenAI clients read them.
  bool openai_errors = false;
  key_role role = key_role::user;  // the key's role it needs; another is 403
};

using path_params = std::vector<std::pair<std::string, std::string>>;

class router {
 public:
  void add(http::verb method, std::string pattern, route_handler handler, route_options options = {});

  struct route {
    http::verb method;
    std::string pattern;
    std::vector<std::string> segments;
    route_handler handler;
    route_options options;
  };
  struct match {
    const route* found = nullptr;
    bool path_known = false;  // some route has this path, with another method (405)
    path_params params;
  };
  match find(http::verb method, const std::vector<std::string>& segments) const;

 private:
  std::vector<route> routes_;
};

}  // namespace troupe::serve
