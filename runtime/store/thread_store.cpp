#include "runtime/store/thread_store.hpp"

#include "runtime/store/thread_lease.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>

namespace troupe {

void throw_exception_from_error(const store_error& e, const boost::source_location&) {
  throw std::runtime_error("thread store: " + e.type + ": " + e.message);
}

stored<std::vector<entry>> thread_store::request_entries(const std::string& thread_id, const std::string& request_id) {
  auto t = load(thread_id);
  if (!t) {
    if (t.error().type == "not_found") return std::vector<entry>{};
    return t.error();
  }
  std::vector<entry> out;
  for (const entry* e : t->with_ref("request_id", boost::json::value(request_id))) out.push_back(*e);
  return out;
}

stored<std::vector<open_pause>> thread_store::open_pauses(const std::string& agent_id) {
  std::vector<std::string> ids = list();
  std::sort(ids.begin(), ids.end());
  std::vector<open_pause> out;
  for (const std::string& id : ids) {
    auto t = load(id);
    if (!t) {
      if (t.error().type == "not_found") continue;  // removed since it was listed
      return t.error();
    }
    std::set<std::pair<std::string_view, std::string_view>> closed;
    for (const entry* e : t->of_kinds({entry_kind::decision, entry_kind::tool_result}))
      closed.emplace(e->refs.request_id(), e->refs.tool_call_id());
    for (const entry* e : t->of_kind(entry_kind::approval_request))
      if (e->payload.string("agent") == agent_id && !closed.count({e->refs.request_id(), e->refs.tool_call_id()}))
        out.push_back(open_pause{id, std::string(e->refs.request_id()), std::string(e->refs.tool_call_id()),
                                 e->payload.integer("expires_at").value_or(0)});
  }
  return out;
}

stored<std::uint64_t> thread_store::append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                                  const thread_lease&) {
  return append(t, expected_rev);
}

void thread_store::append_queued(thread_view t, std::uint64_t expected_rev, const thread_lease* fence,
                                 append_done done) {
  done(fence ? append_fenced(t, expected_rev, *fence) : append(t, expected_rev));
}

void thread_store::acquire_lease_queued(const std::string& thread_id, const std::string& owner, std::int64_t now_ms,
                                        std::chrono::milliseconds ttl, lease_done done) {
  done(acquire_lease(thread_id, owner, now_ms, ttl));
}

stored<thread_lease> thread_store::acquire_lease(const std::string&, const std::string& owner, std::int64_t now_ms,
                                                 std::chrono::milliseconds ttl) {
  return thread_lease{owner, 1, now_ms + ttl.count()};
}

void thread_store::release_lease(const std::string&, const thread_lease&) {}

void thread_store::release_lease_queued(const std::string& thread_id, const thread_lease& held,
                                        std::function<void()> done) {
  release_lease(thread_id, held);
  if (done) done();
}

stored<thread> thread_store::fork(const std::string& thread_id, std::uint64_t at_seq, const std::string& new_id,
                                  std::int64_t now_ms) {
  auto parent = load(thread_id);
  if (!parent) return parent.error();
  if (at_seq >= parent->size())
    return store_error{"invalid", "thread " + thread_id + " has " + std::to_string(parent->size()) +
                                      " entries; there is no seq " + std::to_string(at_seq) + " to fork at"};
  std::vector<entry> entries;
  entries.reserve(at_seq + 1);
  for (const entry& e : parent->slice(0, at_seq)) entries.push_back(e);  // slice bounds are inclusive
  boost::json::object metadata = parent->metadata();
  metadata["forked_from"] = {{"thread_id", thread_id}, {"at_seq", at_seq}};
  const std::int64_t last_at = entries.back().at;
  auto child =
      thread::restore(new_id, at_seq + 1, now_ms, std::max(now_ms, last_at), std::move(metadata), std::move(entries));
  if (!child) return store_error{"invalid", "fork of " + thread_id + ": " + child.error().describe()};
  auto written = append(*child, 0);
  if (!written) {
    if (written.error().type == "conflict") return store_error{"conflict", "thread " + new_id + " already exists"};
    return written.error();
  }
  return std::move(*child);
}

void thread_store::set_repair_report(repair_report report) {
  std::lock_guard lock(repairs_mutex_);
  repair_report_ = std::move(report);
}

void thread_store::report_repair(const std::string& thread_id, const std::string& what) {
  repair_report report;
  {
    std::lock_guard lock(repairs_mutex_);
    if (!repaired_threads_.insert(thread_id).second) return;
    report = repair_report_;
  }
  if (report)
    report(thread_id, what);
  else
    std::fprintf(stderr, "troupe: thread %s: %s\n", thread_id.c_str(), what.c_str());
}

}  // namespace troupe
