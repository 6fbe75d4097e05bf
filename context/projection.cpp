#include "context/projection.hpp"

#include "json/json_text.hpp"
#include "thread/token_estimator.hpp"

#include <boost/container/small_vector.hpp>

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
  // A pending draft's token estimate is made once here (committed entries
  // carry theirs): the walk and the cache's digest both read it.
  window_source(const thread_view& t, std::span<const entry_draft> pending) : t_(t), pending_(pending) {
    for (const entry_draft& d : pending) pending_tokens_.push_back(estimate_tokens(d.kind, d.payload));
  }
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
    return is_pending(i) ? pending_tokens_[i - t_.size()] : t_.at_seq(i)->tokens;
  }

 private:
  const thread_view& t_;
  std::span<const entry_draft> pending_;
  boost::container::small_vector<std::int64_t, 4> pending_tokens_;
};

bool is_tool_kind(std::string_view k) { return k == entry_kind::tool_call || k == entry_kind::tool_result; }

// One step of the walk down from `i` (> lower): a unit, or what the walk
// passes over (an entry of a kind the model does not see, a summary, a tool
// unit whose calls and results do not match one for one). The walk goes on
// from `first`.
struct walk_step {
  std::size_t first, last;  // inclusive, in the source
  bool is_unit;
  std::size_t messages;  // the unit's messages: 1, or the assistant's and one per result
};

walk_step step_down(const window_source& src, std::size_t i, std::size_t lower, const context_policy& policy) {
  const std::size_t end = i - 1;
  const std::string_view k = src.kind(end);
  if (!policy.includes(k) || k == entry_kind::summary) return {end, end, false, 0};
  if (!is_tool_kind(k)) return {end, end, true, 1};
  // Results follow their calls: walk back over the results, then over every
  // call of the same model call; the unit is sent only if its calls and
  // results match one for one. A handful of ids at most: compared as
  // sorted lists, kept in place.
  std::size_t first = end;
  boost::container::small_vector<std::string_view, 4> calls, results;
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
  return {first, end, !calls.empty() && calls == results, 1 + results.size()};
}

// A unit the window decides on.
struct window_unit {
  std::size_t first, last;  // inclusive, in the source
  std::int64_t cost;
  std::size_t messages;
  bool is_user, mandatory;                         // mandatory: the input of this call
  std::shared_ptr<const unit_cache::unit> stored;  // an earlier projection's, with its messages
};

window_unit found_unit(const window_source& src, const walk_step& s, const context_policy& policy) {
  std::int64_t cost = 0;
  for (std::size_t j = s.first; j <= s.last; ++j)
    if (policy.includes(src.kind(j))) cost += src.tokens(j);
  const bool is_user = src.kind(s.last) == entry_kind::message && string_field(src.payload(s.last), "role") == "user";
  return {s.first, s.last, cost, s.messages, is_user, src.is_pending(s.last), nullptr};
}

// An earlier window's unit, decided on again: its entries are committed now.
window_unit stored_unit(const std::shared_ptr<const unit_cache::unit>& u) {
  return {static_cast<std::size_t>(u->first_seq),
          static_cast<std::size_t>(u->last_seq),
          u->cost,
          u->message_count,
          u->is_user,
          false,
          u};
}

// The window's decisions, unit by unit from the newest: steps 4 and 5.
class window {
 public:
  window(const context_policy& policy, std::size_t lower, std::int64_t left, std::size_t start)
      : policy_(policy), lower_(lower), left_(left), at_(start) {
    kept_.reserve(16);  // a window of a few turns, in one block
  }

  // Decides on the next unit down. False when the walk ends: the unit is
  // the last one kept, or is left out.
  bool offer(const window_unit& u) {
    at_ = u.last + 1;  // stopping here leaves it just past this unit: the newest one left out
    if (!u.mandatory) {
      if (policy_.keep_last_turns && turns_ >= policy_.keep_last_turns) return stop();
      if (policy_.max_messages && messages_ + u.messages > policy_.max_messages) return stop();
      if (u.cost > left_) {
        if (!kept_.empty()) return stop();
        oversized_ = true;  // the newest unit goes alone, whatever it costs
      }
    } else if (u.cost > left_) {
      oversized_ = true;
    }
    at_ = u.first;
    kept_.push_back(u);
    left_ -= u.cost;
    used_ += u.cost;
    messages_ += u.messages;
    if (u.is_user) ++turns_;
    if (oversized_ && !u.mandatory) {
      stopped_early_ = at_ > lower_;
      return false;
    }
    return true;
  }
  // The walk passed over entries down to `i`.
  void pass_to(std::size_t i) { at_ = i; }
  // The walk stands where an earlier one with these units stood.
  void resume(std::size_t at, bool stopped_early) {
    at_ = at;
    stopped_early_ = stopped_early;
  }

  std::size_t at() const { return at_; }
  bool stopped_early() const { return stopped_early_; }
  bool oversized() const { return oversized_; }
  std::int64_t used() const { return used_; }
  const std::vector<window_unit>& kept() const { return kept_; }  // newest first

 private:
  bool stop() {
    stopped_early_ = true;
    return false;
  }

  const context_policy& policy_;
  std::size_t lower_;
  std::int64_t left_, used_ = 0;
  std::size_t at_;  // every entry from here on is decided
  std::size_t turns_ = 0, messages_ = 0;
  bool oversized_ = false, stopped_early_ = false;
  std::vector<window_unit> kept_;
};

// The full walk, from the newest entry down to the summary's boundary.
void walk(const window_source& src, const context_policy& policy, std::size_t lower, window& w) {
  while (w.at() > lower) {
    const walk_step s = step_down(src, w.at(), lower, policy);
    if (!s.is_unit) {
      w.pass_to(s.first);
      continue;
    }
    if (!w.offer(found_unit(src, s, policy))) return;
  }
}

// What a projection reads of entries [first, last), folded into one number:
// kinds, correlation ids, roles, texts, names, a tool call's arguments and a
// tool's result (an untyped payload as its JSON text), and the token
// estimates; a field that is absent apart from one that is empty.
std::uint64_t digest_of(const window_source& src, std::size_t first, std::size_t last) {
  std::uint64_t h = 0;
  auto mix = [&h](std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  const std::hash<std::string_view> hash;
  auto mix_text = [&](std::optional<std::string_view> text) { mix(text ? hash(*text) : 0x5bd1e995ULL); };
  for (std::size_t i = first; i < last; ++i) {
    const entry_payload& payload = src.payload(i);
    mix(hash(src.kind(i)));
    mix(static_cast<std::uint64_t>(src.tokens(i)));
    mix(hash(src.refs(i).call_id()));
    mix(hash(src.refs(i).tool_call_id()));
    for (const std::string_view field : {"role", "content", "name"}) mix_text(string_field(payload, field));
    if (const auto* call = payload.get_if<tool_call_payload>()) {
      mix(hash(call->arguments_text.view()));
    } else if (const auto* result = payload.get_if<tool_result_payload>()) {
      mix(hash(result->outcome.view()));
      mix(static_cast<std::uint64_t>(result->shape));
    } else if (payload.get_if<json_payload>()) {
      mix(hash(payload.text()));
    }
  }
  return h;
}

// Whether `cache` was left by a projection of this thread: the same id, and
// the entries it saw still there, its pending ones committed since.
bool made_from(const unit_cache& cache, const thread_view& t) {
  if (cache.thread_id != t.id()) return false;
  if (!cache.extend_from) return true;
  const unit_cache::basis& b = *cache.extend_from;
  if (t.size() < b.end || (b.committed > 0 && t.at_seq(b.committed - 1)->id != b.last_committed_id)) return false;
  return b.committed == b.end || digest_of(window_source(t, {}), b.committed, b.end) == b.pending_digest;
}

// The earlier window, if this projection can extend it: the same policy,
// summary and fixed cost. (Its end is never below the summary's boundary:
// that is at most the thread's size then.)
const unit_cache::basis* extendable(const unit_cache* cache, const context_policy& policy, std::size_t lower,
                                    std::int64_t fixed) {
  if (!cache || !cache->extend_from) return nullptr;
  const unit_cache::basis& b = *cache->extend_from;
  if (b.lower != lower || b.fixed != fixed || !(b.policy == policy)) return nullptr;
  return &b;
}

// Extends the earlier window: walks the entries appended since (false if a
// unit among them reaches into what the earlier walk saw: it was grouped
// differently then), then decides on the earlier window's units as stored.
// Decided from the newest, the earlier units meet a window that has only
// less room left (less budget, more turns and messages kept) than the
// earlier walk had when it met them: if all are kept again, the walk would
// go on below them exactly as the earlier one did, and stop where it stopped.
bool extend(const window_source& src, const context_policy& policy, std::size_t lower, const unit_cache& cache,
            window& w) {
  const unit_cache::basis& b = *cache.extend_from;
  boost::container::small_vector<walk_step, 4> appended;  // newest first: a step's few entries
  for (std::size_t i = src.size(); i > b.end;) {
    const walk_step s = step_down(src, i, lower, policy);
    if (s.first < b.end) return false;
    appended.push_back(s);
    i = s.first;
  }
  for (const walk_step& s : appended) {
    if (!s.is_unit) {
      w.pass_to(s.first);
      continue;
    }
    if (!w.offer(found_unit(src, s, policy))) return true;
  }
  for (auto u = cache.units.rbegin(); u != cache.units.rend(); ++u)
    if (!w.offer(stored_unit(*u))) return true;
  w.resume(b.stop_at, b.stopped_early);
  return true;
}

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
  if (cache && !made_from(*cache, t)) cache = nullptr;

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

  // 3-5. Units, newest first: the entries appended since the cached window
  // and then that window's units, or the whole walk.
  const window_source src(t, pending);
  window w(policy, lower, policy.input_budget() - fixed, src.size());
  const unit_cache::basis* basis = extendable(cache, policy, lower, fixed);
  const bool extended = basis && extend(src, policy, lower, *cache, w);
  if (!extended) walk(src, policy, lower, w);  // extend decides nothing when it fails
  meta.oversized = w.oversized();
  // Anything of an included kind left between the boundary and the window?
  if (w.stopped_early()) {
    for (std::size_t j = w.at(); j-- > lower;)
      if (policy.includes(src.kind(j)) && src.kind(j) != entry_kind::summary) {
        meta.truncated = true;
        if (!src.is_pending(j)) meta.dropped_to_seq = j;
        break;
      }
  }

  // 6. In order.
  const std::vector<window_unit>& kept = w.kept();
  message_list messages;
  messages.reserve(2 + kept.size() * 2);
  std::shared_ptr<llm_message> system;
  if (!system_prompt.empty()) {
    if (cache && cache->system && cache->system->content == system_prompt)
      system = cache->system;
    else
      system = std::make_shared<llm_message>(llm_message{"system", std::string(system_prompt), {}, {}, {}});
    messages.push_shared(system);
  }
  if (summary) {
    messages.push_back(
        llm_message{policy.summary_as == summary_role::system ? "system" : "user", summary_text, {}, {}, {}});
    meta.summary_used = true;
  }
  const bool same_kinds =
      cache && (!cache->extend_from || cache->extend_from->policy.include_kinds == policy.include_kinds);
  std::vector<std::shared_ptr<const unit_cache::unit>> units;
  units.reserve(kept.size());
  for (auto u = kept.rbegin(); u != kept.rend(); ++u) {
    std::shared_ptr<const unit_cache::unit> made = u->stored;
    // A unit of committed entries the earlier projection had, found by its
    // bounds when the window was walked again. Only if the same kinds were
    // included: the bounds alone do not say which of its entries it shows.
    if (!made && same_kinds && !src.is_pending(u->last)) {
      auto it = std::lower_bound(cache->units.begin(), cache->units.end(), u->first,
                                 [](const auto& x, std::uint64_t seq) { return x->first_seq < seq; });
      if (it != cache->units.end() && (*it)->first_seq == u->first && (*it)->last_seq == u->last) made = *it;
    }
    if (!made) {
      projected built;
      projector p(built);
      std::size_t included = 0;
      for (std::size_t j = u->first; j <= u->last; ++j)
        if (policy.includes(src.kind(j)) && src.kind(j) != entry_kind::summary) {
          p.add(src.kind(j), src.payload(j), src.refs(j));
          ++included;
        }
      made = std::make_shared<const unit_cache::unit>(unit_cache::unit{u->first, u->last, built.messages.shared_from(0),
                                                                       u->cost, u->messages, included, u->is_user});
    }
    // Its pending entries are not in the thread yet.
    meta.entries_included += made->entries_included;
    if (src.is_pending(u->last))
      for (std::size_t j = std::max<std::size_t>(u->first, t.size()); j <= u->last; ++j)
        if (policy.includes(src.kind(j)) && src.kind(j) != entry_kind::summary) --meta.entries_included;
    for (const auto& m : made->messages) messages.push_shared(m);
    units.push_back(std::move(made));
  }
  out.messages = std::move(messages);
  meta.estimated_tokens = fixed + w.used();

  if (next_cache) {
    next_cache->thread_id = t.id();
    next_cache->units = std::move(units);
    next_cache->system = std::move(system);
    unit_cache::basis& b = next_cache->extend_from.emplace();
    b.end = src.size();
    b.committed = t.size();
    b.last_committed_id = t.empty() ? small_string() : t.at_seq(t.size() - 1)->id;
    b.pending_digest = pending.empty() ? 0 : digest_of(src, t.size(), src.size());
    b.policy = policy;
    b.lower = lower;
    b.fixed = fixed;
    b.stop_at = w.at();
    b.stopped_early = w.stopped_early();
    b.extended = extended;
  }

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
  for (const window_unit& u : kept) {
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
