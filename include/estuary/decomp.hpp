// Decomp — the global indices one rank owns, in the order of its local buffer.
//
// Structured forms (stripes, boxes) stay compact: a box is kept as one stripe per row of its
// fastest dimension, never as an index list. Nothing here is collective: a Decomp describes one
// rank's share only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace estuary {

// `count` global indices start, start + stride, ..., in local order. stride may be negative.
struct Stripe {
  std::int64_t start = 0;
  std::int64_t count = 0;
  std::int64_t stride = 1;
  bool operator==(const Stripe&) const = default;
};

// Order of the global index space of a box (and of the local buffer of the box).
// row_major: last dimension fastest (C); column_major: first dimension fastest (Fortran).
enum class Order { row_major, column_major };

class Decomp {
 public:
  enum class Kind { indices, stripes, box };

  // An explicit index list (ghost cells may repeat an index in a destination).
  static Decomp indices(std::int64_t global_size, std::vector<std::int64_t> idx);
  // Runs of (start, count, stride).
  static Decomp stripes(std::int64_t global_size, std::vector<Stripe> stripes);
  // The sub-box [start, start + count) of an N-D global array (1 <= N <= 8).
  static Decomp box(std::vector<std::int64_t> global_shape, std::vector<std::int64_t> start,
                    std::vector<std::int64_t> count, Order order = Order::row_major);
  // A rank that owns nothing.
  static Decomp empty(std::int64_t global_size);

  Kind kind() const { return kind_; }
  std::int64_t global_size() const { return global_size_; }
  std::int64_t size() const { return size_; }  // local elements
  const std::vector<std::int64_t>& global_shape() const { return shape_; }

  // Visits the local elements in local order as arithmetic runs:
  // f(local_offset, global_start, count, global_stride). Explicit lists are split into runs on
  // the fly, so consecutive indices cost one call.
  template <class F>
  void for_each_run(F&& f) const;

  // The global index of every local element (for tests and small decompositions).
  std::vector<std::int64_t> to_indices() const;

 private:
  Decomp() = default;
  Kind kind_ = Kind::indices;
  std::int64_t global_size_ = 0;
  std::int64_t size_ = 0;
  std::vector<std::int64_t> shape_;     // box only
  std::vector<std::int64_t> indices_;   // Kind::indices
  std::vector<Stripe> stripes_;         // Kind::stripes and Kind::box
};

template <class F>
void Decomp::for_each_run(F&& f) const {
  if (kind_ != Kind::indices) {
    std::int64_t local = 0;
    for (const Stripe& s : stripes_) {
      if (s.count > 0) f(local, s.start, s.count, s.count > 1 ? s.stride : std::int64_t{1});
      local += s.count;
    }
    return;
  }
  const std::int64_t n = static_cast<std::int64_t>(indices_.size());
  std::int64_t i = 0;
  while (i < n) {
    std::int64_t j = i + 1;
    std::int64_t stride = 1;
    if (j < n) {
      stride = indices_[j] - indices_[i];
      if (stride == 0) stride = 1;  // a repeated index starts a new run
      else
        while (j < n && indices_[j] - indices_[j - 1] == stride) ++j;
    }
    f(i, indices_[i], j - i, j - i > 1 ? stride : std::int64_t{1});
    i = j;
  }
}

}  // namespace estuary
