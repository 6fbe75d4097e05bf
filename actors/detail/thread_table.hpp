#pragma once
// The threads an agent holds in memory. A thread is loaded from the store
// when an ask first needs it (repaired if its writer died mid-turn) and
// unloaded once idle when the agent holds more than `max_loaded`, or when it
// has been idle longer than `idle_after`: the store is the truth, and the
// next ask loads it again. No actors here; `Slot` is the agent's per-thread
// record and says when it is idle.

#include "actors/detail/release_if_empty.hpp"
#include "runtime/store/thread_lease.hpp"
#include "runtime/store/thread_store.hpp"
#include "strategy/react_thread.hpp"

#include <chrono>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

namespace troupe {

struct thread_limits {
  std::size_t max_loaded = 10'000;
  std::chrono::milliseconds idle_after{std::chrono::minutes(30)};
};

// The thread as the store holds it, ready to continue: a new one if the
// store has none; tool calls its previous writer left without results get
// `interrupted` results, kept only if they could be stored (unrepaired, they
// are left out of every context: a unit is sent whole or not at all).
// With `fence`, the repair is committed under that lease.
stored<react_thread> load_thread(thread_store& store, const std::string& thread_id, id_source& ids, std::int64_t now_ms,
                                 const thread_lease* fence = nullptr);
react_thread recovered(thread_store& store, thread t, id_source& ids, std::int64_t now_ms,
                       const thread_lease* fence = nullptr);

template <class Slot>
class thread_table {
 public:
  explicit thread_table(thread_limits limits = {}) : limits_(limits) {}

  Slot* find(const std::string& thread_id) {
    auto it = slots_.find(thread_id);
    return it == slots_.end() ? nullptr : &it->second.slot;
  }

  Slot& insert(const std::string& thread_id, Slot slot, std::int64_t now_ms) {
    auto [it, _] = slots_.emplace(thread_id, entry{std::move(slot), lru_.end()});
    // References outlive a rehash; iterators do not.
    const std::string& key = it->first;
    entry& e = it->second;
    // libstdc++ gives a first insert 13 buckets; most agents (a
    // simulation's) hold one thread, which needs two. Later inserts grow
    // the table as usual.
    if (slots_.size() == 1) slots_.rehash(0);
    lru_.push_back({&key, now_ms});
    e.at = std::prev(lru_.end());
    return e.slot;
  }

  // Marks a thread as just used: it is unloaded last.
  void touch(const std::string& thread_id, std::int64_t now_ms) {
    auto it = slots_.find(thread_id);
    if (it == slots_.end()) return;
    lru_.splice(lru_.end(), lru_, it->second.at);
    it->second.at->last_used_ms = now_ms;
  }

  // Unloads idle threads, least recently used first, while there are too
  // many or they have been idle too long. Busy threads stay. Calls
  // `on_unload(thread_id, slot)` for each, before it goes. Cost: the threads it unloads plus the
  // busy ones it steps over.
  template <class OnUnload>
  void evict(std::int64_t now_ms, OnUnload&& on_unload) {
    const std::int64_t idle_ms = limits_.idle_after.count();
    for (auto at = lru_.begin(); at != lru_.end();) {
      auto it = slots_.find(*at->id);
      const bool too_many = slots_.size() > limits_.max_loaded;
      const bool expired = now_ms - at->last_used_ms > idle_ms;
      if (!too_many && !expired) break;  // the rest were used more recently
      if (!it->second.slot.idle()) {
        ++at;
        continue;
      }
      const std::string id = *at->id;
      on_unload(id, it->second.slot);
      at = lru_.erase(at);
      slots_.erase(it);
    }
    release_if_empty(slots_);
  }

  // Forgets a thread at once, busy or not (one that could not be loaded).
  void erase(const std::string& thread_id) {
    auto it = slots_.find(thread_id);
    if (it == slots_.end()) return;
    lru_.erase(it->second.at);
    slots_.erase(it);
    release_if_empty(slots_);
  }

  template <class F>
  void for_each(F&& f) {
    for (auto& [id, e] : slots_) f(id, e.slot);
  }
  std::size_t size() const { return slots_.size(); }

 private:
  // When a thread was last used is kept in its place in the LRU order: a
  // list node of 24 bytes takes jemalloc's 32-byte class anyway, and the
  // table's node (which holds the slot) is 8 bytes smaller.
  struct lru_mark {
    const std::string* id;  // the key of its entry in slots_
    std::int64_t last_used_ms;
  };
  struct entry {
    Slot slot;
    typename std::list<lru_mark>::iterator at;
  };
  thread_limits limits_;
  std::unordered_map<std::string, entry> slots_;  // node-based: references stay valid
  std::list<lru_mark> lru_;                       // least recently used first
};

}  // namespace troupe
