#pragma once
// A troupe server in the test process, on a free port, whose agents all
// talk to one gate_provider the test controls. Three agents differ in their
// double-texting policy: helper (enqueue), strict (reject) and urgent
// (interrupt, cancel_on_disconnect). Two users: alice and bob; and a key
// that reads /metrics only.

#include "apps/serve/server.hpp"
#include "support/gate_provider.hpp"
#include "support/http_client.hpp"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

namespace troupe::testing {

inline const std::string alice_key = "sk-test-alice-0123456789";
inline const std::string bob_key = "sk-test-bob-0123456789ab";
inline const std::string metrics_key = "sk-test-metrics-0123456789";

inline header_list as_user(const std::string& key, header_list more = {}) {
  more.emplace_back("Authorization", "Bearer " + key);
  return more;
}

inline std::string serve_config_text(const std::string& store, const std::string& extra_top = "",
                                     const std::string& limits = "") {
  // The agents name a local model they never call: the test's provider replaces it.
  const std::string model = "model = \"openai:test\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
  return "listen = \"127.0.0.1:0\"\nstore = \"" + store + "\"\n" + extra_top + "\n[limits]\n" + limits +
         "\n[[agents]]\nid = \"helper\"\n" + model + "max_queued_asks = 64\ntools = [\"calculator\"]\n" +
         "[[agents]]\nid = \"strict\"\n" + model + "double_texting = \"reject\"\n" + "[[agents]]\nid = \"urgent\"\n" +
         model + "double_texting = \"interrupt\"\ncancel_on_disconnect = true\n" + "[[agents]]\nid = \"tiny\"\n" +
         model + "max_queued_asks = 1\n" + "[[keys]]\nkey = \"" + alice_key + "\"\nuser = \"alice\"\n" +
         "[[keys]]\nkey = \"" + bob_key + "\"\nuser = \"bob\"\n" + "[[keys]]\nkey = \"" + metrics_key +
         "\"\nuser = \"prometheus\"\nrole = \"metrics\"\n";
}

// Counts the streams the server has closed, so a test can wait for the
// server to notice a client that went away.
struct stream_counter : serve::serve_observer {
  std::mutex m;
  std::condition_variable cv;
  std::size_t closed = 0;
  std::size_t turns_finished = 0;
  void stream_closed() override {
    std::lock_guard lock(m);
    ++closed;
    cv.notify_all();
  }
  void turn_finished(const serve::turn_record&) override {
    std::lock_guard lock(m);
    ++turns_finished;
    cv.notify_all();
  }
  bool wait_closed(std::size_t n) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return closed >= n; });
  }
  bool wait_turns(std::size_t n) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return turns_finished >= n; });
  }
};

struct serve_fixture {
  std::shared_ptr<gate_provider> model = std::make_shared<gate_provider>();
  std::shared_ptr<stream_counter> counter = std::make_shared<stream_counter>();
  std::unique_ptr<serve::server> server;

  using store_wrapper = std::function<std::shared_ptr<thread_store>(std::shared_ptr<thread_store>)>;

  explicit serve_fixture(const std::string& store = "memory:", const std::string& extra_top = "",
                         const std::string& limits = "", store_wrapper wrap = {}) {
    start(store, extra_top, limits, std::move(wrap));
  }
  void start(const std::string& store, const std::string& extra_top = "", const std::string& limits = "",
             store_wrapper wrap = {}) {
    serve::deployment_options o;
    o.wrap_threads = std::move(wrap);
    for (const char* id : {"helper", "strict", "urgent", "tiny"}) o.providers[id] = model;
    server = std::make_unique<serve::server>(
        serve::parse_config(serve_config_text(store, extra_top, limits), "test.toml", ""), std::move(o));
    server->observers().add(counter);
    server->start();
  }
  unsigned short port() const { return server->port(); }
  http_client client() const { return http_client(port()); }
};

inline std::string message_body(const std::string& agent, const std::string& content) {
  return boost::json::serialize(boost::json::object{{"agent", agent}, {"content", content}});
}

}  // namespace troupe::testing
