#include "strategy/projection.hpp"

#include "signals/json_text.hpp"
#include "strategy/token_estimator.hpp"

#include <algorithm>
#include <limits>

namespace troupe {

namespace json = boost::json;

std::string tool_result_text(const json::object& payload) {
  if (const json::value* error = payload.if_contains("error")) return json_text(json::object{{"error", *error}});
  const json::value* result = payload.if_contains("result");
  if (!result) return "null";
  if (const json::string* s = result->if_string()) return std::string(*s);
  return json_text(*result);
}

std::string tool_result_text(const entry_payload& payload) {
  if (const auto* r = payload.get_if<tool_result_payload>()) {
    if (r->is_error()) return "{\"error\":" + r->outcome.str() + "}";
    return r->outcome.str();  // a string result as itself, any other as its JSON text
  }
  if (const auto* j = payload.get_if<json_payload>()) return tool_result_text(j->fields);
  return tool_result_text(payload.to_json());
}

namespace {

// Adds entries to a projection in progress. Reads only the fields each
// entry's kind needs.
// A projection being built: its messages, and the model call whose
// assistant message is last and can still take tool calls.
struct projected {
  message_list messages;
  std::string open_call_id;
};

class projector {
 public:
  explicit projector(projected& into) : p_(into) {}

  void add(std::string_view kind, const entry_payload& payload, const entry_refs& refs) {
    if (kind == entry_kind::message) {
      llm_message m;
      m.role = string_field(payload, "role").value_or("user");
      m.content = string_field(payload, "content").value_or("");
      // Tool calls of the same model call join this message.
      p_.open_call_id = m.role == "assistant" ? refs.call_id() : "";
      p_.messages.push_back(std::move(m));
    } else if (kind == entry_kind::tool_call) {
      const std::string_view call_id = refs.call_id();
      if (p_.open_call_id.empty() || p_.open_call_id != call_id) {
        p_.messages.push_back(llm_message{"assistant", "", {}, {}, {}});
        p_.open_call_id = call_id;
      }
      tool_call c;
      c.id = refs.tool_call_id();
      c.name = string_field(payload, "name").value_or("");
      if (const auto* typed = payload.get_if<tool_call_payload>()) {
        c.arguments = typed->arguments();
      } else if (const auto args = payload.value("arguments")) {
        if (const json::object* o = args->if_object()) c.arguments = *o;
      }
      p_.messages.edit_back().tool_calls.push_back(std::move(c));
    } else if (kind == entry_kind::tool_result) {
      llm_message m;
      m.role = "tool";
      m.tool_call_id = refs.tool_call_id();
      m.name = string_field(payload, "name").value_or("");
      m.content = tool_result_text(payload);
      p_.messages.push_back(std::move(m));
      p_.open_call_id.clear();
    }
  }

 private:
  projected& p_;
};

}  // namespace

namespace {

// The thread's entries from some seq on, followed by the pending drafts, as
// one sequence addressed by index.
class window_source {
 public:
  window_source(const thread_view& t, std::span<const entry_draft> pending) : t_(t), pending_(pending) {}
  std::size_t size() const { return t_.size() + pending_.size(); }
  bool is_pending(std::size_t i) const { return i >= t_.size(); }
  std::string_view kind(std::size_t i) const {
    return is_pending(i) ? std::string_view(pending_[i - t_.size()].kind) : std::string_view(t_.at_seq(i)->kind);
  }
  const entry_payload& payload(std::size_t i) const {
    return is_pending(i) ? pending_[i - t_.size()].payload : t_.at_seq(i)->payload;
  }
  const entry_refs& refs(std::size_t i) const {
    return is_pending(i) ? pending_[i - t_.size()].refs : t_.at_seq(i)->refs;
  }
  std::int64_t tokens(std::size_t i) const {
    return is_pending(i) ? estimate_tokens(kind(i), payload(i)) : t_.at_seq(i)->tokens;
  }

 private:
  const thread_view& t_;
  std::span<const entry_draft> pending_;
};

bool is_tool_kind(std::string_view k) { return k == entry_kind::tool_call || k == entry_kind::tool_result; }

}  // namespace

projection project(const thread_view& t, const context_policy& policy, std::span<const entry_draft> pending,
                   std::string_view system_prompt, const unit_cache* cache, unit_cache* next_cache) {
  const token_estimator& est = default_estimator();
  projection out;
  context_meta& meta = out.meta;
  meta.budget = policy.input_budget();
  meta.entries_total = t.size();
  meta.basis_rev = t.rev();
  if (!t.empty()) meta.basis_last_seq = t.size() - 1;
  meta.pending_count = pending.size();

  // 2. The summary and the boundary it sets.
  const entry* summary =
      policy.summaries != summarization::none && policy.includes(entry_kind::summary) ? t.latest_summary() : nullptr;
  std::size_t lower = 0;
  if (summary) {
    const std::int64_t to_seq = int_field(summary->payload, "to_seq").value_or(static_cast<std::int64_t>(summary->seq));
    lower = std::min<std::size_t>(static_cast<std::size_t>(std::max<std::int64_t>(to_seq, -1) + 1), t.size());
  }
  const std::string summary_text = summary ? "Summary of the earlier conversation:\n" +
                                                 std::string(string_field(summary->payload, "content").value_or(""))
                                           : std::string();

  std::int64_t fixed = system_prompt.empty() ? 0 : est.text(system_prompt) + est.per_message();
  if (summary) fixed += est.text(summary_text) + est.per_message();
  std::int64_t left = policy.input_budget() - fixed;

  // 3-5. Units, newest first.
  const window_source src(t, pending);
  struct unit {
    std::size_t first, last;  // inclusive, in src
    std::int64_t cost;
    std::size_t messages;
    bool is_user, mandatory;
  };
  std::vector<unit> kept;
  std::size_t turns = 0, messages = 0;
  std::int64_t used = 0;
  std::size_t i = src.size();
  bool stopped_early = false;
  while (i > lower) {
    const std::size_t end = i - 1;
    const std::string_view k = src.kind(end);
    if (!policy.includes(k) || k == entry_kind::summary) {
      i = end;
      continue;
    }
    std::size_t first = end;
    std::size_t unit_messages = 1;
    bool complete = true;
    if (is_tool_kind(k)) {
      // Results follow their calls: walk back over the results, then over
      // every call of the same model call; the unit is sent only if its calls
      // and results match one for one.
      // A handful of ids at most: small vectors, compared as sorted lists.
      std::vector<std::string_view> calls, results;
      std::string_view call_id;
      auto take = [&](std::size_t j) {
        const std::string_view id = src.refs(j).tool_call_id();
        if (src.kind(j) == entry_kind::tool_result) {
          results.push_back(id);
        } else {
          calls.push_back(id);
          if (call_id.empty()) call_id = src.refs(j).call_id();
        }
      };
      take(end);
      while (first > lower) {
        const std::size_t j = first - 1;
        const std::string_view pk = src.kind(j);
        if (!policy.includes(pk)) {
          --first;
        } else if (pk == entry_kind::tool_result && calls.empty()) {
          take(j);
          --first;
        } else if (pk == entry_kind::tool_call &&
                   (calls.size() < results.size() || call_id.empty() || src.refs(j).call_id() == call_id)) {
          take(j);
          --first;
        } else {
          break;
        }
      }
      // The assistant's own words of the same model call belong to the unit.
      if (!call_id.empty() && first > lower && src.kind(first - 1) == entry_kind::message &&
          src.refs(first - 1).call_id() == call_id && string_field(src.payload(first - 1), "role") == "assistant")
        --first;
      std::sort(calls.begin(), calls.end());
      std::sort(results.begin(), results.end());
      complete = !calls.empty() && calls == results;
      unit_messages = 1 + results.size();
    }
    if (!complete) {  // never a call without its results, nor a result without its call
      i = first;
      continue;
    }

    std::int64_t cost = 0;
    for (std::size_t j = first; j <= end; ++j)
      if (policy.includes(src.kind(j))) cost += src.tokens(j);
    const bool mandatory = src.is_pending(end);  // the input of this call
    const bool is_user = k == entry_kind::message && string_field(src.payload(end), "role") == "user";
    // Stopping leaves `i` just past this unit: it is the newest one left out.
    if (!mandatory) {
      if (policy.keep_last_turns && turns >= policy.keep_last_turns) {
        stopped_early = true;
        break;
      }
      if (policy.max_messages && messages + unit_messages > policy.max_messages) {
        stopped_early = true;
        break;
      }
      if (cost > left) {
        if (!kept.empty()) {
          stopped_early = true;
          break;
        }
        meta.oversized = true;  // the newest unit goes alone, whatever it costs
      }
    } else if (cost > left) {
      meta.oversized = true;
    }
    i = first;
    kept.push_back({first, end, cost, unit_messages, is_user, mandatory});
    left -= cost;
    used += cost;
    messages += unit_messages;
    if (is_user) ++turns;
    if (meta.oversized && !mandatory) {
      stopped_early = i > lower;
      break;
    }
  }
  // Anything of an included kind left between the boundary and the window?
  if (stopped_early) {
    for (std::size_t j = i; j-- > lower;)
      if (policy.includes(src.kind(j)) && src.kind(j) != entry_kind::summary) {
        meta.truncated = true;
        if (!src.is_pending(j)) meta.dropped_to_seq = j;
        break;
      }
  }

  // 6. In order.
  projected built;
  if (!system_prompt.empty()) built.messages.push_back(llm_message{"system", std::string(system_prompt), {}, {}, {}});
  if (summary) {
    built.messages.push_back(
        llm_message{policy.summary_as == summary_role::system ? "system" : "user", summary_text, {}, {}, {}});
    meta.summary_used = true;
  }
  if (cache && cache->thread_id != t.id()) cache = nullptr;
  if (next_cache) {
    next_cache->thread_id = t.id();
    next_cache->units.clear();
  }
  for (auto u = kept.rbegin(); u != kept.rend(); ++u) {
    const bool committed = !src.is_pending(u->last);
    for (std::size_t j = u->first; j <= u->last; ++j)
      if (policy.includes(src.kind(j)) && src.kind(j) != entry_kind::summary && !src.is_pending(j))
        ++meta.entries_included;
    // A committed unit's messages from the last projection, if it had them.
    const unit_cache::unit* known = nullptr;
    if (cache && committed) {
      auto it = std::lower_bound(cache->units.begin(), cache->units.end(), u->first,
                                 [](const unit_cache::unit& x, std::uint64_t seq) { return x.first_seq < seq; });
      if (it != cache->units.end() && it->first_seq == u->first && it->last_seq == u->last) known = &*it;
    }
    const std::size_t start = built.messages.size();
    if (known) {
      for (const auto& m : known->messages) built.messages.push_shared(m);
    } else {
      projected unit_messages;
      projector p(unit_messages);
      for (std::size_t j = u->first; j <= u->last; ++j)
        if (policy.includes(src.kind(j)) && src.kind(j) != entry_kind::summary)
          p.add(src.kind(j), src.payload(j), src.refs(j));
      for (const auto& m : unit_messages.messages.shared_from(0)) built.messages.push_shared(m);
    }
    if (next_cache && committed) next_cache->units.push_back({u->first, u->last, built.messages.shared_from(start)});
  }
  out.messages = std::move(built.messages);
  meta.estimated_tokens = fixed + used;

  const std::size_t since_summary = t.size() > lower ? t.size() - lower : 0;
  meta.needs_summary =
      policy.summaries == summarization::request_new &&
      (meta.truncated || (policy.summarize_after_entries && since_summary > policy.summarize_after_entries));
  if (!meta.needs_summary) return out;

  // Where a new summary should end: the newest units that fit in
  // summarize_to of each of the window's limits stay after it, the rest goes
  // into it. Always whole units, and never the input of this call.
  const double f = std::clamp(policy.summarize_to, 0.0, 1.0);
  auto share = [f](std::size_t limit) {
    return limit ? std::max<std::size_t>(1, static_cast<std::size_t>(f * static_cast<double>(limit))) : 0;
  };
  const std::int64_t token_share = static_cast<std::int64_t>(f * static_cast<double>(policy.input_budget() - fixed));
  const std::size_t turn_share = share(policy.keep_last_turns), message_share = share(policy.max_messages);
  std::size_t after = src.size();  // the first index that stays after the summary
  std::int64_t kept_tokens = 0;
  std::size_t kept_turns = 0, kept_messages = 0;
  for (const unit& u : kept) {
    if (!u.mandatory && (kept_tokens + u.cost > token_share || (turn_share && kept_turns >= turn_share) ||
                         (message_share && kept_messages + u.messages > message_share)))
      break;
    after = u.first;
    kept_tokens += u.cost;
    kept_messages += u.messages;
    if (u.is_user) ++kept_turns;
  }
  if (after > lower && after - 1 < t.size()) meta.summarize_to_seq = after - 1;
  return out;
}

message_list project_messages(std::string_view system_prompt, const thread_view& t,
                              std::span<const entry_draft> pending) {
  context_policy everything;
  everything.max_input_tokens = std::numeric_limits<std::int64_t>::max() / 2;
  everything.reserve_output_tokens = 0;
  everything.keep_last_turns = 0;
  everything.summaries = summarization::none;
  return project(t, everything, pending, system_prompt).messages;
}

}  // namespace troupe
