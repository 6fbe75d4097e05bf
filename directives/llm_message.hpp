#pragma once
// One message of the context sent to a model: the provider-neutral shape that
// a projection of the thread produces and each provider turns into its wire
// format.

#include "signals/tool_call.hpp"

#include <boost/json/value.hpp>

#include <algorithm>
#include <compare>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

struct llm_message {
  std::string role;                   // "system", "user", "assistant" or "tool"
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
  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = llm_message;
    using difference_type = std::ptrdiff_t;
    using pointer = const llm_message*;
    using reference = const llm_message&;

    iterator() = default;
    explicit iterator(std::vector<slot>::const_iterator it) : it_(it) {}
    reference operator*() const { return **it_; }
    pointer operator->() const { return it_->get(); }
    reference operator[](difference_type n) const { return *it_[n]; }
    iterator& operator++() { ++it_; return *this; }
    iterator operator++(int) { auto t = *this; ++it_; return t; }
    iterator& operator--() { --it_; return *this; }
    iterator operator--(int) { auto t = *this; --it_; return t; }
    iterator& operator+=(difference_type n) { it_ += n; return *this; }
    iterator& operator-=(difference_type n) { it_ -= n; return *this; }
    friend iterator operator+(iterator i, difference_type n) { return i += n; }
    friend iterator operator+(difference_type n, iterator i) { return i += n; }
    friend iterator operator-(iterator i, difference_type n) { return i -= n; }
    friend difference_type operator-(const iterator& a, const iterator& b) { return a.it_ - b.it_; }
    friend bool operator==(const iterator& a, const iterator& b) { return a.it_ == b.it_; }
    friend auto operator<=>(const iterator& a, const iterator& b) { return a.it_ <=> b.it_; }

   private:
    std::vector<slot>::const_iterator it_;
  };
  using const_iterator = iterator;
  using reverse_iterator = std::reverse_iterator<iterator>;

  message_list() = default;
  message_list(std::initializer_list<llm_message> messages) {
    for (const auto& m : messages) push_back(m);
  }

  void reserve(std::size_t n) { items_.reserve(n); }
  void push_back(llm_message m) { items_.push_back(std::make_shared<llm_message>(std::move(m))); }
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
  iterator begin() const { return iterator(items_.begin()); }
  iterator end() const { return iterator(items_.end()); }
  reverse_iterator rbegin() const { return reverse_iterator(end()); }
  reverse_iterator rend() const { return reverse_iterator(begin()); }

  friend bool operator==(const message_list& a, const message_list& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::vector<slot> items_;
};

}  // namespace troupe
