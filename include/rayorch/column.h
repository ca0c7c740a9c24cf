// Zero-copy views handed to UDFs (Column) and produced by reduce (Group).
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace rayorch {

namespace detail {

// Random-access iterator that dereferences an underlying iterator over pointers.
template <class T, class PtrIt>
class DerefIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = const T*;
  using reference = const T&;

  DerefIterator() = default;
  explicit DerefIterator(PtrIt it) : it_(it) {}
  reference operator*() const { return *static_cast<const T*>(*it_); }
  pointer operator->() const { return static_cast<const T*>(*it_); }
  reference operator[](difference_type n) const { return *static_cast<const T*>(it_[n]); }
  DerefIterator& operator++() {
    ++it_;
    return *this;
  }
  DerefIterator operator++(int) {
    auto c = *this;
    ++it_;
    return c;
  }
  DerefIterator& operator--() {
    --it_;
    return *this;
  }
  DerefIterator operator--(int) {
    auto c = *this;
    --it_;
    return c;
  }
  DerefIterator& operator+=(difference_type n) {
    it_ += n;
    return *this;
  }
  DerefIterator& operator-=(difference_type n) {
    it_ -= n;
    return *this;
  }
  friend DerefIterator operator+(DerefIterator a, difference_type n) { return a += n; }
  friend DerefIterator operator+(difference_type n, DerefIterator a) { return a += n; }
  friend DerefIterator operator-(DerefIterator a, difference_type n) { return a -= n; }
  friend difference_type operator-(const DerefIterator& a, const DerefIterator& b) {
    return a.it_ - b.it_;
  }
  friend bool operator==(const DerefIterator& a, const DerefIterator& b) { return a.it_ == b.it_; }
  friend auto operator<=>(const DerefIterator& a, const DerefIterator& b) {
    return a.it_ <=> b.it_;
  }

 private:
  PtrIt it_{};
};

}  // namespace detail

/// A read-only view of one UDF input column for one RPC: `size()`, `operator[]` and
/// iteration, without copying the values. Valid only during the `run` call.
template <class T>
class Column {
 public:
  using value_type = T;
  using iterator = detail::DerefIterator<T, const void* const*>;

  /// Internal: a view over `size` pointers to values of type T.
  Column(const void* const* data, std::size_t size) : data_(data), size_(size) {}

  /// Number of rows in this RPC.
  std::size_t size() const { return size_; }
  /// True when the RPC carries no rows (never the case for dispatched RPCs).
  bool empty() const { return size_ == 0; }
  /// The value of row `i`.
  const T& operator[](std::size_t i) const { return *static_cast<const T*>(data_[i]); }
  iterator begin() const { return iterator(data_); }
  iterator end() const { return iterator(data_ + size_); }
  /// Copies the rows into a vector (for UDFs that need ownership).
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

 private:
  const void* const* data_;
  std::size_t size_;
};

/// The surviving child values of one parent, in ordinal order (the result of F::reduce).
/// A read-only, random-access view: copying a Group copies pointers, never values, and
/// keeps the underlying storage alive.
template <class T>
class Group {
 public:
  using value_type = T;
  using iterator = detail::DerefIterator<T, typename std::vector<const void*>::const_iterator>;

  Group() = default;
  /// Internal: a group over `members`, whose storage `keep_alive` owns.
  Group(std::vector<const void*> members, std::shared_ptr<const void> keep_alive)
      : members_(std::move(members)), keep_alive_(std::move(keep_alive)) {}

  /// Number of surviving children.
  std::size_t size() const { return members_.size(); }
  /// True when no child survived (or the parent had no children).
  bool empty() const { return members_.empty(); }
  /// The i-th surviving child value, in ordinal order.
  const T& operator[](std::size_t i) const { return *static_cast<const T*>(members_[i]); }
  iterator begin() const { return iterator(members_.begin()); }
  iterator end() const { return iterator(members_.end()); }
  /// Copies the values into a vector.
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

  /// Element-wise equality of the values.
  friend bool operator==(const Group& a, const Group& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!(a[i] == b[i])) return false;
    }
    return true;
  }

 private:
  std::vector<const void*> members_;
  std::shared_ptr<const void> keep_alive_;
};

}  // namespace rayorch
