// Drives the pure ReAct machine through a scripted two-turn conversation with
// tool calls, executing its directives by hand, and prints the thread that
// results. No actors, no network: this is what an agent does inside, one
// signal at a time.
//
//   scripted_react          the conversation, then the thread as a table
//   scripted_react --json   the thread as JSON

#include "base/overloaded.hpp"
#include "directives/directive.hpp"
#include "json/json_text.hpp"
#include "strategy/react_thread.hpp"
#include "thread/iteration_view.hpp"
#include "thread/thread_json.hpp"

#include <cstring>
#include <deque>
#include <iostream>
#include <string>

namespace json = boost::json;
using namespace troupe;

namespace {

// Whole numbers as JSON integers, so the model reads 103 rather than 1.03E2.
json::value number(double x) {
  const auto whole = static_cast<std::int64_t>(x);
  return static_cast<double>(whole) == x ? json::value(whole) : json::value(x);
}

// Two real tools the model may call.
tool_outcome run_tool(const std::string& name, const json::object& args) {
  const json::value* a = args.if_contains("a");
  const json::value* b = args.if_contains("b");
  if (!a || !b || !a->is_number() || !b->is_number())
    return error_info::of(error_type::invalid_arguments, "a and b must be numbers");
  const double x = a->to_number<double>(), y = b->to_number<double>();
  if (name == "add") return number(x + y);
  if (name == "multiply") return number(x * y);
  return error_info::of(error_type::unknown_tool, "no tool " + name);
}

tool_spec arithmetic_tool(const char* name, const char* description) {
  return {name, description,
          json::object{{"type", "object"},
                       {"properties", json::object{{"a", {{"type", "number"}}}, {"b", {{"type", "number"}}}}},
                       {"required", json::array{"a", "b"}}}};
}

tool_call call(const char* id, const char* name, double a, double b) {
  return {id, name, json::object{{"a", number(a)}, {"b", number(b)}}, std::nullopt};
}

// What the scripted model answers, one model call after another.
std::deque<llm_completion> script() {
  std::deque<llm_completion> s;
  s.push_back({"", "", {call("t1", "multiply", 12.5, 8)}, token_usage{120, 18}, "tool_calls"});
  s.push_back({"", "", {call("t2", "add", 100, 3)}, token_usage{160, 14}, "tool_calls"});
  s.push_back({"12.5 × 8 + 3 = 103.", "", {}, token_usage{190, 12}, "stop"});
  // Second turn: two calls in one model turn, run in parallel.
  s.push_back({"Let me compute both.",
               "",
               {call("t3", "multiply", 103, 2), call("t4", "add", 103, -3)},
               token_usage{230, 30},
               "tool_calls"});
  s.push_back({"Doubled it is 206; minus 3 it is 100.", "", {}, token_usage{290, 16}, "stop"});
  return s;
}

std::string one_line(const troupe::entry_payload& payload) {
  if (const auto content = string_field(payload, "content")) return std::string(*content);
  return json_text(payload);
}

}  // namespace

int main(int argc, char** argv) {
  const bool as_json = argc > 1 && std::strcmp(argv[1], "--json") == 0;

  react_config config;
  config.system_prompt = "You are a careful assistant. Use the tools for arithmetic.";
  config.model = "scripted:demo";
  config.tools =
      make_tool_set({arithmetic_tool("add", "Adds a and b."), arithmetic_tool("multiply", "Multiplies a by b.")});

  sequential_ids ids;
  std::int64_t clock_ms = 1'763'700'000'000;  // a fixed clock keeps the output reproducible
  react_thread conversation(thread("thread-demo", clock_ms));
  std::deque<llm_completion> model = script();

  // The runtime's job, in miniature: feed signals in, execute directives,
  // feed their outcomes back, until the request has its reply.
  auto ask = [&](const std::string& request_id, const std::string& question) {
    if (!as_json) std::cout << "user> " << question << "\n";
    std::deque<signal> inbox{query{request_id, "thread-demo", question, {}}};
    while (!inbox.empty()) {
      applied out = conversation.apply(config, inbox.front(), clock_ms += 7, ids);
      inbox.pop_front();
      for (const directive& d : out.directives) {
        std::visit(overloaded{[&](const llm_stream& s) {
                                llm_completion c = model.front();
                                model.pop_front();
                                inbox.push_back(llm_delta{s.call_id, c.text, ""});
                                inbox.push_back(llm_result{s.call_id, std::move(c)});
                              },
                              [&](const tool_exec& t) {
                                if (!as_json) std::cout << "  tool " << t.tool_name << json_text(t.arguments) << "\n";
                                inbox.push_back(tool_result{t.call_id, t.tool_call_id, t.tool_name,
                                                            run_tool(t.tool_name, t.arguments)});
                              },
                              [&](const reply& r) {
                                if (as_json) return;
                                if (r.ok())
                                  std::cout << "agent> " << std::get<std::string>(r.outcome) << "\n";
                                else
                                  std::cout << "agent failed: " << std::get<error_info>(r.outcome).message << "\n";
                                std::cout << "  (" << r.iterations << " iterations, " << r.usage.input_tokens
                                          << " tokens in, " << r.usage.output_tokens << " out)\n\n";
                              },
                              [](const auto&) {}},
                   d);
      }
    }
  };

  ask("req-1", "What is 12.5 times 8, plus 3?");
  ask("req-2", "Now double it, and separately subtract 3.");

  const thread& t = conversation.history();
  if (as_json) {
    std::cout << json_text(to_json(t)) << "\n";
    return 0;
  }

  std::cout << "thread " << t.id() << ": rev " << t.rev() << ", " << t.size() << " entries\n";
  for (const entry& e : t.entries()) {
    std::string who =
        std::string(string_field(e.payload, "role").value_or(string_field(e.payload, "name").value_or("")));
    std::printf("  %2llu  %-11s %-9s %s\n", static_cast<unsigned long long>(e.seq), e.kind.str().c_str(), who.c_str(),
                one_line(e.payload).c_str());
  }
  std::cout << "\nreq-2 by iteration:\n";
  for (const iteration& it : iterations_of(t, "req-2"))
    std::cout << "  iteration " << it.number << ": " << it.messages.size() << " messages, " << it.tool_calls.size()
              << " tool calls, " << (it.completed_at ? "completed" : "in progress") << "\n";
  const token_usage& total = conversation.state().thread_usage;
  std::cout << "\nsession usage: " << total.input_tokens << " tokens in, " << total.output_tokens << " out\n";
  return 0;
}
