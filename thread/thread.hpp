#pragma once
// A thread: the append-only log of what happened in one conversation, and the
// canonical history from which every model context is projected.
//
// thread_view is a read-only, immutable picture of a thread at one revision.
// thread is the writable thread; it is itself a view of its current revision,
// and snapshot() hands out a view that stays unchanged while the thread keeps
// growing. Taking a snapshot is O(1) (a few shared pointers are copied), and
// appending never copies the history: both share one append_log.
//
// Thread safety is that of a standard container: distinct thread and
// thread_view objects may be used from different OS threads at the same time,
// even when they share storage; one object is not to be mutated while another
// OS thread reads it.

#include "base/index_iterator.hpp"
#include "json/decode_error.hpp"
#include "thread/append_log.hpp"
#include "thread/entry.hpp"
#include "thread/id_source.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <compare>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe {

using entry_log = append_log<entry>;

// A contiguous run of entries [first, last). It shares ownership of the
// storage, so it stays valid on its own.
class entry_range {
 public:
  static const entry& element(const entry_log& log, std::size_t i) { return log[i]; }
  using iterator = index_iterator<entry_log, entry, &entry_range::element>;

  entry_range() = default;
  entry_range(std::shared_ptr<const entry_log> log, std::size_t first, std::size_t last)
      : log_(std::move(log)), first_(first), last_(last) {}

  iterator begin() const { return {log_.get(), first_}; }
  iterator end() const { return {log_.get(), last_}; }
  std::size_t size() const { return last_ - first_; }
  bool empty() const { return first_ == last_; }
  const entry& operator[](std::size_t i) const { return (*log_)[first_ + i]; }
  const entry& front() const { return (*log_)[first_]; }
  const entry& back() const { return (*log_)[last_ - 1]; }

 private:
  std::shared_ptr<const entry_log> log_;
  std::size_t first_ = 0;
  std::size_t last_ = 0;
};

// Derived on demand (O(entries)): nothing is kept per append, so snapshots
// and stores sharing a thread never make its appends copy anything.
struct thread_stats {
  std::size_t entry_count = 0;
  std::vector<std::pair<std::string, std::size_t>> by_kind;  // in order of first appearance

  std::size_t count(std::string_view kind) const;
  friend bool operator==(const thread_stats&, const thread_stats&) = default;
};

class thread_view {
 public:
  const std::string& id() const { return id_; }
  std::uint64_t rev() const { return rev_; }
  std::int64_t created_at() const { return created_at_; }
  std::int64_t updated_at() const { return updated_at_; }
  const boost::json::object& metadata() const;
  thread_stats stats() const;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The entry with that seq, or nullptr. Pointers returned by a view stay
  // valid while the view (or any other owner of the thread's storage) lives.
  const entry* at_seq(std::uint64_t seq) const;
  const entry* last() const;
  entry_range entries() const;
  // Entries with from <= seq <= to, clamped to what exists.
  entry_range slice(std::uint64_t from, std::uint64_t to) const;
  std::vector<const entry*> of_kind(std::string_view kind) const;
  std::vector<const entry*> of_kinds(std::initializer_list<std::string_view> kinds) const;
  // Entries whose refs[key] equals value.
  std::vector<const entry*> with_ref(std::string_view key, const boost::json::value& value) const;
  // The content of the newest assistant message.
  std::optional<std::string> last_assistant_text() const;
  // The newest summary entry, in O(1): where the model's context may begin.
  const entry* latest_summary() const { return last_summary_ != no_summary ? &(*log_)[last_summary_] : nullptr; }

 protected:
  thread_view() = default;

  std::string id_;
  std::uint64_t rev_ = 0;
  std::int64_t created_at_ = 0;
  std::int64_t updated_at_ = 0;
  std::shared_ptr<const boost::json::object> metadata_;
  std::shared_ptr<entry_log> log_;  // null until the first append
  std::size_t size_ = 0;
  static constexpr std::size_t no_summary = static_cast<std::size_t>(-1);
  std::size_t last_summary_ = no_summary;  // an index: every agent's thread is 8 bytes smaller than with an optional
};

class thread : public thread_view {
 public:
  explicit thread(std::string id, std::int64_t created_at = 0, boost::json::object metadata = {});
  // A writable thread that continues from a view, sharing its storage (O(1)).
  explicit thread(const thread_view& from) : thread_view(from) {}

  // Rebuilds a thread from stored parts. Entries must be numbered 0, 1, 2, …
  // and rev must count at least every entry; otherwise the error names the
  // offending field (entries[i].seq, rev).
  static decoded<thread> restore(std::string id, std::uint64_t rev, std::int64_t created_at, std::int64_t updated_at,
                                 boost::json::object metadata, std::vector<entry> entries);

  // Assigns seq (continuing from size()), id (from `ids`) and at (= now_ms) to
  // each draft, appends them in order, and returns the new entries. rev grows
  // by the number of entries and updated_at becomes now_ms. A draft without a
  // kind is a programming error (std::invalid_argument, nothing appended).
  entry_range append(std::vector<entry_draft> drafts, std::int64_t now_ms, id_source& ids);
  const entry& append(entry_draft draft, std::int64_t now_ms, id_source& ids);

  void set_metadata(boost::json::object metadata);

  // An unchanging picture of the thread as it is now; O(1).
  thread_view snapshot() const { return *this; }

 private:
  void push(std::span<entry> stamped);
};

}  // namespace troupe
