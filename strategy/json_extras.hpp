#pragma once
// The members of a JSON object that a typed record has no field for, kept in
// their order so that the record writes them back as it read them. Most
// records have none: then this is one null pointer.

#include <boost/json/object.hpp>

#include <memory>
#include <string_view>

namespace troupe {

class json_extras {
 public:
  json_extras() = default;
  explicit json_extras(boost::json::object o) {
    if (!o.empty()) members_ = std::make_unique<boost::json::object>(std::move(o));
  }
  json_extras(const json_extras& o)
      : members_(o.members_ ? std::make_unique<boost::json::object>(*o.members_) : nullptr) {}
  json_extras(json_extras&&) noexcept = default;
  json_extras& operator=(const json_extras& o) {
    if (this != &o) *this = json_extras(o);
    return *this;
  }
  json_extras& operator=(json_extras&&) noexcept = default;

  bool empty() const { return !members_; }
  // Null when there are none.
  const boost::json::object* get() const { return members_.get(); }
  const boost::json::value* find(std::string_view key) const { return members_ ? members_->if_contains(key) : nullptr; }
  // Appends the members to `out`, in their order.
  void write_to(boost::json::object& out) const {
    if (members_)
      for (const auto& kv : *members_) out.emplace(kv.key(), kv.value());
  }

  friend bool operator==(const json_extras& a, const json_extras& b) {
    if (!a.members_ || !b.members_) return !a.members_ && !b.members_;
    return *a.members_ == *b.members_;
  }

 private:
  std::unique_ptr<boost::json::object> members_;
};

}  // namespace troupe
