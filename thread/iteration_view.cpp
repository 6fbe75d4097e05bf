#include "thread/iteration_view.hpp"

#include <algorithm>
#include <map>

namespace troupe {

namespace {

// An assistant message that no tool_call of the same model call follows is
// the request's answer.
bool is_answer(const entry& e, const iteration& it) {
  if (e.kind != entry_kind::message || string_field(e.payload, "role") != "assistant") return false;
  const auto call_id = e.refs.string("call_id");
  return std::none_of(it.tool_calls.begin(), it.tool_calls.end(),
                      [&](const tool_exchange& x) { return x.call->refs.string("call_id") == call_id; });
}

}  // namespace

std::vector<iteration> iterations_of(const thread_view& t, std::string_view request_id) {
  std::map<std::int64_t, iteration> by_number;
  for (const entry* e : t.with_ref("request_id", boost::json::value(request_id))) {
    const std::int64_t n = int_field(e->refs, "iteration").value_or(0);
    iteration& it = by_number[n];
    if (it.messages.empty() && it.tool_calls.empty() && it.others.empty()) {
      it.number = static_cast<int>(n);
      it.started_at = e->at;
    }
    if (e->kind == entry_kind::message) {
      it.messages.push_back(e);
    } else if (e->kind == entry_kind::tool_call) {
      it.tool_calls.push_back({e, nullptr});
    } else if (e->kind == entry_kind::tool_result) {
      const auto id = string_field(e->refs, "tool_call_id");
      auto pending = std::find_if(it.tool_calls.begin(), it.tool_calls.end(), [&](const auto& x) {
        return !x.result && string_field(x.call->refs, "tool_call_id") == id;
      });
      if (pending != it.tool_calls.end())
        pending->result = e;
      else
        it.others.push_back(e);  // a result without its call: keep it visible
    } else {
      it.others.push_back(e);
    }
  }

  std::vector<iteration> out;
  out.reserve(by_number.size());
  for (auto& [n, it] : by_number) out.push_back(std::move(it));
  for (std::size_t i = 0; i < out.size(); ++i) {
    iteration& it = out[i];
    std::int64_t last_at = it.started_at;
    bool ended = i + 1 < out.size();
    for (const entry* e : it.messages) {
      last_at = std::max(last_at, e->at);
      ended = ended || is_answer(*e, it);
    }
    for (const auto& x : it.tool_calls) last_at = std::max({last_at, x.call->at, x.result ? x.result->at : last_at});
    // With every tool answered, what follows is the next iteration's model call.
    ended =
        ended || (!it.tool_calls.empty() && std::all_of(it.tool_calls.begin(), it.tool_calls.end(),
                                                        [](const tool_exchange& x) { return x.result != nullptr; }));
    for (const entry* e : it.others) {
      last_at = std::max(last_at, e->at);
      ended = ended || e->kind == entry_kind::error;
    }
    if (ended) it.completed_at = last_at;
  }
  return out;
}

}  // namespace troupe
