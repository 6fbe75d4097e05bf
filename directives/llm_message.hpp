#pragma once
// One message of the context sent to a model: the provider-neutral shape that
// a projection of the thread produces and each provider turns into its wire
// format.

#include "base/index_iterator.hpp"
#include "signals/tool_call.hpp"

#include <boost/json/value.hpp>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

struct llm_message {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  std::vector<tool_call> tool_calls;  // assistant messages that call tools
  std::string tool_call_id;           // tool messages: the call they answer
  std::string name;                   // tool messages: the tool's name

  friend bool operator==(const llm_message&, const llm_message&) = default;
};

boost::json::value to_json(const llm_message& m);

// The messages of a model call. Messages are immutable and shared: copying a
// list, or extending a copy, copies pointers, never message text or tool
// arguments — a thread's context is built once and reused by every later
// model call of the thread. Reads like a std::vector<llm_message>.
class message_list {
  using slot = std::shared_ptr<llm_message>;

 public:
  static const llm_message& element(const std::vector<slot>& items, std::size_t i) { return *items[i]; }
  using iterator = index_iterator<std::vector<slot>, llm_message, &message_list::element>;
  using const_iterator = iterator;
  using reverse_iterator = std::reverse_iterator<iterator>;

  message_list() = default;
  message_list(std::initializer_list<llm_message> messages) {
    for (const auto& m : messages) push_back(m);
  }

  void reserve(std::size_t n) { items_.reserve(n); }
  void push_back(llm_message m) { items_.push_back(std::make_shared<llm_message>(std::move(m))); }
  // Shares a message with other lists (it is copied before any change).
  void push_shared(std::shared_ptr<llm_message> m) { items_.push_back(std::move(m)); }
  // The messages from `first` on, shared.
  std::vector<std::shared_ptr<llm_message>> shared_from(std::size_t first) const {
    return {items_.begin() + static_cast<std::ptrdiff_t>(first), items_.end()};
  }
  // The last message, to change: copied first if another list shares it.
  llm_message& edit_back() {
    if (items_.back().use_count() > 1) items_.back() = std::make_shared<llm_message>(*items_.back());
    return *items_.back();
  }

  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const llm_message& operator[](std::size_t i) const { return *items_[i]; }
  const llm_message& at(std::size_t i) const { return *items_.at(i); }
  const llm_message& front() const { return *items_.front(); }
  const llm_message& back() const { return *items_.back(); }
  iterator begin() const { return iterator(&items_, 0); }
  iterator end() const { return iterator(&items_, items_.size()); }
  reverse_iterator rbegin() const { return reverse_iterator(end()); }
  reverse_iterator rend() const { return reverse_iterator(begin()); }

  friend bool operator==(const message_list& a, const message_list& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::vector<slot> items_;
};

}  // namespace troupe
