#include "apps/serve/timed_store.hpp"

#include "runtime/store/thread_lease.hpp"

#include <chrono>

namespace troupe::serve {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

}  // namespace

timed_store::timed_store(std::shared_ptr<thread_store> inner, commit_observer on_commit)
    : inner_(std::move(inner)), on_commit_(std::move(on_commit)) {}

stored<std::uint64_t> timed_store::append(const thread_view& t, std::uint64_t expected_rev) {
  const auto start = clock_type::now();
  auto r = inner_->append(t, expected_rev);
  on_commit_(seconds_since(start));
  return r;
}

stored<std::uint64_t> timed_store::append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                                 const thread_lease& fence) {
  const auto start = clock_type::now();
  auto r = inner_->append_fenced(t, expected_rev, fence);
  on_commit_(seconds_since(start));
  return r;
}

void timed_store::append_queued(thread_view t, std::uint64_t expected_rev, const thread_lease* fence,
                                append_done done) {
  const auto start = clock_type::now();
  inner_->append_queued(std::move(t), expected_rev, fence,
                        [start, on_commit = on_commit_, done = std::move(done)](stored<std::uint64_t> r) {
                          on_commit(seconds_since(start));
                          done(std::move(r));
                        });
}

stored<thread_lease> timed_store::acquire_lease(const std::string& thread_id, const std::string& owner,
                                                std::int64_t now_ms, std::chrono::milliseconds ttl) {
  return inner_->acquire_lease(thread_id, owner, now_ms, ttl);
}

void timed_store::release_lease(const std::string& thread_id, const thread_lease& held) {
  inner_->release_lease(thread_id, held);
}

stored<thread> timed_store::fork(const std::string& thread_id, std::uint64_t at_seq, const std::string& new_id,
                                 std::int64_t now_ms) {
  return inner_->fork(thread_id, at_seq, new_id, now_ms);
}

}  // namespace troupe::serve
