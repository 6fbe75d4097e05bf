#include "apps/commands.hpp"
#include "apps/thread_output.hpp"

#include "base/overloaded.hpp"
#include "json/json_text.hpp"
#include "thread/thread_json.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <iostream>

namespace troupe::cli {

namespace json = boost::json;

namespace {

json::value error_json(const reply& r) {
  if (r.ok()) return nullptr;
  const error_info& e = std::get<error_info>(r.outcome);
  json::object o{{"type", e.type}, {"message", e.message}};
  o["http_status"] = e.http_status ? json::value(*e.http_status) : json::value(nullptr);
  o["attempts"] = e.attempts;
  return o;
}

}  // namespace

int run_ask(const model_options& o, const std::string& question, bool as_json) {
  cli_session s(o, "memory:");
  ask_options a;
  a.thread_id = s.thread_id;
  bool streamed = false;
  if (!as_json)
    a.on_event = [&](const stream_event& e) {
      if (const auto* d = std::get_if<delta_event>(&e); d && !d->text.empty()) {
        std::fwrite(d->text.data(), 1, d->text.size(), stdout);
        std::fflush(stdout);
        streamed = true;
      }
    };
  request r = s.assistant->ask(question, std::move(a));
  const auto limit = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_seconds * 1000));
  std::optional<reply> got = r.await(limit);
  if (!got) {
    r.cancel("the question took longer than --timeout");
    got = r.await(std::chrono::seconds(10));
  }
  const reply result =
      got ? *got : reply{r.id(), error_info::of(error_type::timeout, "no answer within the time limit"), {}, 0};

  if (as_json) {
    const std::string& thread_id = s.thread_id;
    auto t = s.assistant->snapshot(thread_id);
    json::object out{
        {"status", result.ok() ? "completed" : "error"},
        {"answer", result.ok() ? json::value(std::get<std::string>(result.outcome)) : json::value(nullptr)},
        {"thread_id", thread_id},
        {"usage", to_json(result.usage)},
        {"error", error_json(result)},
        {"entries", t ? entries_json(*t) : json::array()}};
    if (s.conv) out["conversation_id"] = s.conv->id;
    std::cout << json_text(out) << "\n";
  } else if (result.ok()) {
    if (!streamed) std::cout << std::get<std::string>(result.outcome);
    std::cout << "\n";
  } else {
    if (streamed) std::cout << "\n";
    const error_info& e = std::get<error_info>(result.outcome);
    std::cerr << "troupe: " << e.type << ": " << e.message;
    if (e.http_status) std::cerr << " (HTTP " << *e.http_status << ")";
    if (e.attempts > 1) std::cerr << " after " << e.attempts << " attempts";
    std::cerr << "\n";
  }
  // The answer is out before the runtime ends: its end may wait (up to a
  // second) for a telemetry collector, and a caller reading stdout should not.
  std::cout.flush();
  s.rt->shutdown();
  return result.ok() ? 0 : 1;
}

}  // namespace troupe::cli
