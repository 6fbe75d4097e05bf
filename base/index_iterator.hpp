#pragma once
// A random-access iterator over anything that can hand out its i-th element:
// `Element(source, i)` returns a const reference. Lets our append-only and
// shared containers iterate like vectors without each writing the
// boilerplate.

#include <compare>
#include <cstddef>
#include <iterator>

namespace troupe {

template <class Source, class T, const T& (*Element)(const Source&, std::size_t)>
class index_iterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = const T*;
  using reference = const T&;

  index_iterator() = default;
  index_iterator(const Source* source, std::size_t i) : source_(source), i_(i) {}

  reference operator*() const { return Element(*source_, i_); }
  pointer operator->() const { return &Element(*source_, i_); }
  reference operator[](difference_type n) const { return Element(*source_, i_ + n); }
  index_iterator& operator++() {
    ++i_;
    return *this;
  }
  index_iterator operator++(int) {
    auto t = *this;
    ++i_;
    return t;
  }
  index_iterator& operator--() {
    --i_;
    return *this;
  }
  index_iterator operator--(int) {
    auto t = *this;
    --i_;
    return t;
  }
  index_iterator& operator+=(difference_type n) {
    i_ += n;
    return *this;
  }
  index_iterator& operator-=(difference_type n) {
    i_ -= n;
    return *this;
  }
  friend index_iterator operator+(index_iterator it, difference_type n) { return it += n; }
  friend index_iterator operator+(difference_type n, index_iterator it) { return it += n; }
  friend index_iterator operator-(index_iterator it, difference_type n) { return it -= n; }
  friend difference_type operator-(const index_iterator& a, const index_iterator& b) {
    return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
  }
  friend bool operator==(const index_iterator& a, const index_iterator& b) { return a.i_ == b.i_; }
  friend auto operator<=>(const index_iterator& a, const index_iterator& b) { return a.i_ <=> b.i_; }

 private:
  const Source* source_ = nullptr;
  std::size_t i_ = 0;
};

}  // namespace troupe
