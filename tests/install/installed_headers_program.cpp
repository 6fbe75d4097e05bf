// Compiled by build_with_pkg_config.cmake against an installed troupe, with
// nothing but what `pkg-config --cflags --libs troupe` gives: the headers an
// embedding program includes resolve in the prefix, and troupe.pc lists the
// static libraries in an order the linker resolves.
#include "actors/runtime.hpp"
#include "runtime/llm/scripted_provider.hpp"

#include <chrono>
#include <iostream>
#include <string>

int main() {
  auto model = std::make_shared<troupe::scripted_provider>(
      std::vector<troupe::scripted_reply>{troupe::scripted_reply::text("installed")});
  troupe::runtime rt({.provider = model});
  troupe::agent agent = rt.spawn_agent({.id = "consumer", .model = "scripted"});
  auto reply = agent.ask("Where do you come from?").await(std::chrono::seconds(30));
  if (!reply || !reply->ok()) return 1;
  std::cout << std::get<std::string>(reply->outcome) << "\n";
  rt.shutdown();
  return 0;
}
