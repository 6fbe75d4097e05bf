#pragma once
// A stand-in OpenTelemetry collector for tests: an HTTP server on 127.0.0.1
// that accepts every OTLP/HTTP JSON export and reads back the spans it got.

#include "support/http_test_server.hpp"

#include <boost/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace troupe::testing {

class otlp_receiver {
 public:
  otlp_receiver() { server_.respond_always(scripted_http_response::json(200, "{}")); }

  std::string traces_url() const { return server_.base_url() + "/v1/traces"; }
  http_test_server& server() { return server_; }

  // Every span of every export so far, as the JSON objects that were sent.
  std::vector<boost::json::object> spans() const {
    std::vector<boost::json::object> out;
    for (const auto& r : server_.requests()) {
      const auto body = boost::json::parse(r.body);
      for (const auto& rs : body.at("resourceSpans").as_array())
        for (const auto& ss : rs.at("scopeSpans").as_array())
          for (const auto& s : ss.at("spans").as_array()) out.push_back(s.as_object());
    }
    return out;
  }

  // The spans so far with this name.
  std::vector<boost::json::object> spans_named(const std::string& name) const {
    std::vector<boost::json::object> out;
    for (auto& s : spans())
      if (s.at("name").as_string() == name) out.push_back(std::move(s));
    return out;
  }

  // An attribute's AnyValue ({"stringValue": …} and so on), or nullopt.
  static std::optional<boost::json::object> attribute(const boost::json::object& span, const std::string& key) {
    for (const auto& a : span.at("attributes").as_array())
      if (a.at("key").as_string() == key) return a.at("value").as_object();
    return std::nullopt;
  }
  static std::string string_attribute(const boost::json::object& span, const std::string& key) {
    auto v = attribute(span, key);
    return v && v->contains("stringValue") ? std::string(v->at("stringValue").as_string()) : std::string{};
  }

 private:
  http_test_server server_;
};

}  // namespace troupe::testing
