#include "actors/detail/thread_table.hpp"

#include "strategy/approvals.hpp"
#include "strategy/recovery.hpp"

namespace troupe {

stored<react_thread> load_thread(thread_store& store, const std::string& thread_id, id_source& ids, std::int64_t now_ms,
                                 const thread_lease* fence) {
  auto held = store.load(thread_id);
  if (held) return recovered(store, std::move(*held), ids, now_ms, fence);
  if (held.error().type == "not_found") return react_thread(thread(thread_id, now_ms));
  return held.error();
}

react_thread recovered(thread_store& store, thread t, id_source& ids, std::int64_t now_ms, const thread_lease* fence) {
  auto repairs = interrupted_tool_results(t);
  if (!repairs.empty()) {
    thread repaired = t;
    repaired.append(std::move(repairs), now_ms, ids);
    if (fence ? store.append_fenced(repaired, t.rev(), *fence) : store.append(repaired, t.rev()))
      t = std::move(repaired);
  }
  // A request paused for approval stays paused: a decision continues it.
  std::optional<react_state> paused = paused_request(t);
  return react_thread(std::move(t), paused ? std::move(*paused) : react_state{});
}

}  // namespace troupe
