#pragma once
// The members of a JSON object that a typed record has no field for, kept in
// their order so that the record writes them back as it read them. Most
// records have none: then this is one null pointer.

#include <boost/json/object.hpp>

#include <atomic>
#include <cstddef>
#include <string_view>
#include <utility>

namespace troupe {

class json_extras {
 public:
  json_extras() = default;
  explicit json_extras(boost::json::object o) {
    if (!o.empty()) members_ = new shared{{1}, std::move(o)};
  }
  // The members never change once made, so copies share them: a million
  // messages that carry the same members (an observation's origin in a
  // round) hold one object, not a million.
  json_extras(const json_extras& o) noexcept : members_(o.members_) {
    if (members_) members_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  json_extras(json_extras&& o) noexcept : members_(std::exchange(o.members_, nullptr)) {}
  json_extras& operator=(const json_extras& o) noexcept {
    if (this != &o) *this = json_extras(o);
    return *this;
  }
  json_extras& operator=(json_extras&& o) noexcept {
    if (this != &o) {
      release();
      members_ = std::exchange(o.members_, nullptr);
    }
    return *this;
  }
  ~json_extras() { release(); }

  bool empty() const { return !members_; }
  // Null when there are none.
  const boost::json::object* get() const { return members_ ? &members_->members : nullptr; }
  const boost::json::value* find(std::string_view key) const {
    return members_ ? members_->members.if_contains(key) : nullptr;
  }
  // Appends the members to `out`, in their order.
  void write_to(boost::json::object& out) const {
    if (members_)
      for (const auto& kv : members_->members) out.emplace(kv.key(), kv.value());
  }

  friend bool operator==(const json_extras& a, const json_extras& b) {
    if (!a.members_ || !b.members_) return !a.members_ && !b.members_;
    return a.members_ == b.members_ || a.members_->members == b.members_->members;
  }

 private:
  // One pointer, not a shared_ptr's two: an entry's payload holds one of
  // these, and every entry is sized to 224 bytes (entry.hpp).
  struct shared {
    std::atomic<std::size_t> refs;
    boost::json::object members;
  };
  void release() noexcept {
    if (members_ && members_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete members_;
    members_ = nullptr;
  }

  shared* members_ = nullptr;
};

}  // namespace troupe
