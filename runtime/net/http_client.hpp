#pragma once
// HTTP requests over libcurl's multi interface: one I/O thread drives every
// transfer, however many are in flight (no thread per request). TLS, and
// proxies from the usual environment variables (http_proxy, https_proxy,
// no_proxy), come from libcurl.
//
// Callbacks run on the I/O thread and must not block. One that throws fails
// its own transfer (on_done gets a callback_failed error; an exception from
// on_done itself is dropped) and never the thread. cancel() aborts a
// transfer at once: when it returns, none of that transfer's callbacks is
// running and none will start.

#include "signals/error_info.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe {

struct http_request {
  std::string method = "POST";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds first_byte_timeout{60'000};  // from the start to the first response byte
  std::chrono::milliseconds idle_timeout{60'000};        // between two received chunks
  std::chrono::milliseconds total_timeout{600'000};
  // The most body bytes taken (0: no limit); beyond, the transfer ends with
  // response_too_large.
  std::size_t max_response_bytes = 0;
};

struct http_response_head {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  // The value of a header (by lower-case name), or "".
  std::string_view header(std::string_view name) const;
};

struct http_callbacks {
  std::function<void(const http_response_head&)> on_head;  // once, before the body
  // Each chunk as it arrives. An error returned ends the transfer: on_done gets it.
  std::function<std::optional<error_info>(std::string_view)> on_body;
  // Once, last: nullopt when the response arrived whole, else why not
  // (types network, timeout, response_too_large, callback_failed, or what
  // on_body returned). Not called after cancel().
  std::function<void(std::optional<error_info>)> on_done;
};

class http_client {
 public:
  http_client();
  ~http_client();  // aborts what is in flight (no callbacks) and stops the I/O thread
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  std::uint64_t start(http_request request, http_callbacks callbacks);
  void cancel(std::uint64_t id);

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace troupe
