#include "apps/serve/agent_ref.hpp"

namespace troupe::serve {

request agent_ref::ask(std::string question, ask_options options) const {
  return std::visit([&](const auto& a) { return a.ask(std::move(question), std::move(options)); }, target_);
}

request agent_ref::decide(decision d, ask_options options) const {
  return std::visit([&](const auto& a) { return a.decide(std::move(d), std::move(options)); }, target_);
}

std::optional<thread_view> agent_ref::snapshot(const std::string& thread_id, std::chrono::milliseconds timeout) const {
  return std::visit([&](const auto& a) { return a.snapshot(thread_id, timeout); }, target_);
}

bool agent_ref::running() const {
  return std::visit([](const auto& a) { return a.running(); }, target_);
}

}  // namespace troupe::serve
