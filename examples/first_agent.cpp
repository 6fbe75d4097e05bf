#include "actors/runtime.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "runtime/tools/builtin_tools.hpp"

#include <iostream>

int main() {
  // A scripted model, so that this runs offline: it calls the calculator, then answers with its result.
  auto model = std::make_shared<troupe::scripted_provider>([](const troupe::llm_stream& s) {
    if (s.messages.back().role == "tool") return troupe::scripted_reply::text("It is " + s.messages.back().content);
    return troupe::scripted_reply::tools({{"call-1", "calculator", {{"expression", "12.5 * 8 + 3"}}, std::nullopt}});
  });
  troupe::runtime rt({.provider = model});
  rt.tools().add(troupe::calculator_tool());
  troupe::agent a = rt.spawn_agent({.id = "assistant", .model = "scripted", .tools = {"calculator"}});
  troupe::request r = a.ask("What is 12.5 * 8 + 3?");
  if (auto reply = r.await(std::chrono::seconds(30)); reply && reply->ok())
    std::cout << std::get<std::string>(reply->outcome) << "\n";
  rt.shutdown();
}
