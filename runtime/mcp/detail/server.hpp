#pragma once
// One configured MCP server and the troupe tools it provides. start() lists
// its tools (every page of tools/list) and registers each as an
// asynchronous tool: a call sends tools/call and returns, and the response,
// whenever it comes, finishes the tool call; a timeout or cancel stops the
// request (notifications/cancelled). When the server says its tools changed
// (notifications/tools/list_changed) they are listed again and the registry
// follows: new tools added, changed ones replaced, vanished ones removed.
// The same happens when a server that died has been started again.

#include "runtime/mcp/detail/client.hpp"
#include "runtime/mcp/detail/tool_adapter.hpp"
#include "runtime/mcp/server_config.hpp"
#include "runtime/net/http_client.hpp"
#include "runtime/tools/tool_registry.hpp"

#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace troupe {

namespace mcp {

class server : public std::enable_shared_from_this<server> {
 public:
  // Call close() before `registry` goes: the server may outlive its last
  // owner for as long as a callback runs. `http`: null for the process-wide
  // client (HTTP servers only).
  static std::shared_ptr<server> create(mcp_server_config config, tool_registry& registry,
                                        std::shared_ptr<http_client> http = nullptr);
  ~server();

  // Connects, lists and registers; returns once that is done or has failed
  // (every step has its own deadline, so it returns).
  mcp_server_status start();
  // Removes its tools, fails its running calls with `shutdown` and stops the
  // server process. Idempotent.
  void close();

  const mcp_server_config& config() const { return config_; }
  std::vector<std::string> tool_names() const;
  client::connection_info connection() const { return client_->info(); }

 private:
  server(mcp_server_config config, tool_registry& registry, std::shared_ptr<http_client> http);
  using listing = std::variant<std::vector<boost::json::value>, error_info>;
  void list_tools(std::function<void(listing)> done);
  void list_page(std::string cursor, std::vector<boost::json::value> so_far, int page,
                 std::function<void(listing)> done);
  mcp_server_status apply(const std::vector<boost::json::value>& tools);
  void relist();
  tool make_tool(const listed_tool& t);

  mcp_server_config config_;
  tool_registry* registry_;
  std::shared_ptr<http_client> http_;
  std::shared_ptr<client> client_;
  mutable std::mutex mutex_;
  std::set<std::string> registered_;
  bool closed_ = false;
  bool listing_ = false;     // a listing is under way...
  bool list_again_ = false;  // ...and another change came meanwhile
};

}  // namespace mcp
}  // namespace troupe
