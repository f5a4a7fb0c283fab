// A FIFO for the simulator's hot queues (egress classes, a host port's receive buffer, a
// QP's response queue and RTT log; a QP's send and receive queues stay std::deque, see
// docs/ARCHITECTURE.md): one contiguous power-of-two buffer used as a ring, that
// allocates nothing while empty and grows by doubling. std::deque allocates a 512 B block
// and a map when it is constructed and again each time its front or back crosses a block,
// which in a fabric of thousands of ports and queues that are mostly empty costs memory
// and cache for nothing.
#pragma once

#include <cassert>
#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace rdmasim {

template <typename T>
class Ring {
 public:
  Ring() = default;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  Ring(Ring&& o) noexcept { swap(o); }
  Ring& operator=(Ring&& o) noexcept {
    if (this != &o) {
      Ring tmp(std::move(o));
      swap(tmp);
    }
    return *this;
  }
  ~Ring() {
    clear();
    release();
  }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  T& front() { return at(0); }
  const T& front() const { return at(0); }
  T& back() { return at(size_ - 1); }
  const T& back() const { return at(size_ - 1); }
  T& operator[](size_t i) { return at(i); }
  const T& operator[](size_t i) const { return at(i); }

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == cap_) grow();
    T* slot = data_ + ((head_ + size_) & (cap_ - 1));
    ::new (static_cast<void*>(slot)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }

  // Puts `v` before the first element (a retransmission that must go out next).
  void push_front(T v) {
    if (size_ == cap_) grow();
    head_ = (head_ + cap_ - 1) & (cap_ - 1);
    ::new (static_cast<void*>(data_ + head_)) T(std::move(v));
    ++size_;
  }

  void pop_front() {
    assert(size_ > 0);
    data_[head_].~T();
    head_ = (head_ + 1) & (cap_ - 1);
    if (--size_ == 0) head_ = 0;
  }
  void pop_back() {
    assert(size_ > 0);
    at(size_ - 1).~T();
    if (--size_ == 0) head_ = 0;
  }

  void clear() {
    while (size_ > 0) pop_back();
  }

  // Forward iteration in FIFO order.
  template <typename R, typename V>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::remove_const_t<V>;
    using difference_type = std::ptrdiff_t;
    using pointer = V*;
    using reference = V&;
    Iter() = default;
    Iter(R* r, size_t i) : r_(r), i_(i) {}
    V& operator*() const { return (*r_)[i_]; }
    V* operator->() const { return &(*r_)[i_]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    Iter operator++(int) {
      Iter old = *this;
      ++i_;
      return old;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }
    bool operator!=(const Iter& o) const { return i_ != o.i_; }

   private:
    R* r_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = Iter<Ring, T>;
  using const_iterator = Iter<const Ring, const T>;
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

 private:
  T& at(size_t i) {
    assert(i < size_);
    return data_[(head_ + i) & (cap_ - 1)];
  }
  const T& at(size_t i) const {
    assert(i < size_);
    return data_[(head_ + i) & (cap_ - 1)];
  }
  void grow() {
    const size_t cap = cap_ ? cap_ * 2 : 4;
    T* fresh = static_cast<T*>(::operator new(cap * sizeof(T), std::align_val_t{alignof(T)}));
    for (size_t i = 0; i < size_; ++i) {
      T& old = at(i);
      ::new (static_cast<void*>(fresh + i)) T(std::move(old));
      old.~T();
    }
    release();
    data_ = fresh, cap_ = cap, head_ = 0;
  }
  void release() {
    if (data_) ::operator delete(data_, std::align_val_t{alignof(T)});
    data_ = nullptr, cap_ = 0, head_ = 0;
  }
  void swap(Ring& o) noexcept {
    std::swap(data_, o.data_), std::swap(cap_, o.cap_);
    std::swap(head_, o.head_), std::swap(size_, o.size_);
  }

  T* data_ = nullptr;
  size_t cap_ = 0;  // 0 or a power of two
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace rdmasim
