// Embedding troupe in a C++ program: start a runtime, register a tool, spawn
// an agent, ask with streaming, await, cancel, read the thread, shut down.
// The model is scripted so that this runs offline; swap in a real provider
// and nothing else changes.

#include "actors/runtime.hpp"
#include "base/overloaded.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <boost/json.hpp>

#include <iostream>

using namespace std::chrono_literals;
namespace json = boost::json;

int main() {
  // A model that looks the weather up, then answers with what the tool said.
  auto model = std::make_shared<troupe::scripted_provider>([](const troupe::llm_stream& s) {
    const troupe::llm_message& last = s.messages.back();
    if (last.role == "tool") return troupe::scripted_reply::text("It is " + last.content + " in Lisbon.");
    if (last.content.find("forever") != std::string::npos) {
      troupe::scripted_reply slow = troupe::scripted_reply::text("Once upon a time...");
      slow.delay = 1h;  // streams its first words, then takes its time
      return slow;
    }
    return troupe::scripted_reply::tools({{"call-1", "weather", {{"city", "Lisbon"}}, std::nullopt}});
  });

  troupe::runtime rt({.provider = model});

  troupe::tool weather;
  weather.spec = {
      "weather",
      "Current weather by city.",
      {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", json::array{"city"}}}};
  weather.run = [](const json::object& args, const troupe::tool_context&) {
    return json::value(args.at("city") == "Lisbon" ? "21 °C and sunny" : "unknown");
  };
  rt.tools().add(weather);

  troupe::agent assistant = rt.spawn_agent(
      {.id = "assistant", .model = "scripted", .system_prompt = "Answer briefly.", .tools = {"weather"}});

  // Ask, following the request as it runs.
  troupe::ask_options streaming;
  streaming.on_event = [](const troupe::stream_event& e) {
    std::visit(troupe::overloaded{
                   [](const troupe::delta_event& d) { std::cout << "  delta: " << d.text << "\n"; },
                   [](const troupe::tool_started_event& t) { std::cout << "  tool " << t.tool_name << " started\n"; },
                   [](const troupe::tool_finished_event& t) { std::cout << "  tool " << t.tool_name << " finished\n"; },
                   [](const troupe::approval_requested_event& a) {
                     std::cout << "  " << a.pending.size() << " call(s) wait for approval\n";
                   },
                   [](const troupe::request_finished_event&) { std::cout << "  request finished\n"; }},
               e);
  };
  troupe::request weather_question = assistant.ask("What's the weather in Lisbon?", streaming);
  if (auto r = weather_question.await(10s); r && r->ok())
    std::cout << "answer: " << std::get<std::string>(r->outcome) << "\n\n";

  // Cancel a request that would take too long.
  troupe::request story = assistant.ask("Tell me a story that goes on forever.");
  story.cancel("no time for stories");
  if (auto r = story.await(10s); r && !r->ok())
    std::cout << "story: " << std::get<troupe::error_info>(r->outcome).type << " ("
              << std::get<troupe::error_info>(r->outcome).message << ")\n\n";

  // The thread records everything that happened, in order.
  if (auto t = assistant.snapshot()) {
    std::cout << "thread " << t->id() << " has " << t->size() << " entries:\n";
    for (const troupe::entry& e : t->entries()) std::cout << "  " << e.seq << " " << e.kind << "\n";
  }

  rt.shutdown();
  return 0;
}
