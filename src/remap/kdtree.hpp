// A static 3-D k-d tree over unit vectors (points on the sphere): k nearest and all within a
// chord distance. Internal to the weight generators.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sphere.hpp"

namespace estuary::detail {

using sphere::Vec3;

inline double sq_dist(const Vec3& a, const Vec3& b) {
  const double dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
  return dx * dx + dy * dy + dz * dz;
}

inline double coord(const Vec3& v, int d) { return d == 0 ? v.x : d == 1 ? v.y : v.z; }

// A static 3-D k-d tree over a subset of points: the subtree of [lo, hi) is split at
// mid = (lo + hi) / 2 along axis_[mid], the points before mid no further along it than perm_[mid].
class KdTree {
 public:
  KdTree(const std::vector<Vec3>& pts, std::vector<std::int64_t> subset)
      : pts_(pts), perm_(std::move(subset)), axis_(perm_.size(), 0) {
    build(0, perm_.size());
  }

  bool empty() const { return perm_.empty(); }

  // The squared distance to the k-th nearest point (k >= 1, k <= size), or +inf when empty.
  double kth_sq_dist(const Vec3& q, std::size_t k) const {
    std::vector<double> best(k, INFINITY);  // ascending
    knn(q, 0, perm_.size(), best);
    return best.back();
  }

  // Every point with squared distance <= r2, appended to out.
  void within(const Vec3& q, double r2, std::vector<std::int64_t>& out) const { radius(q, r2, 0, perm_.size(), out); }

 private:
  static constexpr std::size_t kLeaf = 8;

  void build(std::size_t lo, std::size_t hi) {
    if (hi - lo <= kLeaf) return;
    double mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (std::size_t i = lo; i < hi; ++i)
      for (int d = 0; d < 3; ++d) {
        const double c = coord(pts_[static_cast<std::size_t>(perm_[i])], d);
        mn[d] = std::min(mn[d], c);
        mx[d] = std::max(mx[d], c);
      }
    int axis = 0;
    for (int d = 1; d < 3; ++d)
      if (mx[d] - mn[d] > mx[axis] - mn[axis]) axis = d;
    const std::size_t mid = (lo + hi) / 2;
    std::nth_element(perm_.begin() + static_cast<std::ptrdiff_t>(lo), perm_.begin() + static_cast<std::ptrdiff_t>(mid),
                     perm_.begin() + static_cast<std::ptrdiff_t>(hi), [&](std::int64_t a, std::int64_t b) {
                       const double ca = coord(pts_[static_cast<std::size_t>(a)], axis);
                       const double cb = coord(pts_[static_cast<std::size_t>(b)], axis);
                       return ca < cb || (ca == cb && a < b);
                     });
    axis_[mid] = static_cast<std::uint8_t>(axis);
    build(lo, mid);
    build(mid + 1, hi);
  }

  static void offer(std::vector<double>& best, double d2) {
    if (d2 >= best.back()) return;
    std::size_t i = best.size() - 1;
    while (i > 0 && best[i - 1] > d2) {
      best[i] = best[i - 1];
      --i;
    }
    best[i] = d2;
  }

  void knn(const Vec3& q, std::size_t lo, std::size_t hi, std::vector<double>& best) const {
    if (hi - lo <= kLeaf) {
      for (std::size_t i = lo; i < hi; ++i) offer(best, sq_dist(q, pts_[static_cast<std::size_t>(perm_[i])]));
      return;
    }
    const std::size_t mid = (lo + hi) / 2;
    const int axis = axis_[mid];
    const Vec3& m = pts_[static_cast<std::size_t>(perm_[mid])];
    offer(best, sq_dist(q, m));
    const double diff = coord(q, axis) - coord(m, axis);
    if (diff <= 0) {
      knn(q, lo, mid, best);
      if (diff * diff <= best.back()) knn(q, mid + 1, hi, best);
    } else {
      knn(q, mid + 1, hi, best);
      if (diff * diff <= best.back()) knn(q, lo, mid, best);
    }
  }

  void radius(const Vec3& q, double r2, std::size_t lo, std::size_t hi, std::vector<std::int64_t>& out) const {
    if (hi - lo <= kLeaf) {
      for (std::size_t i = lo; i < hi; ++i)
        if (sq_dist(q, pts_[static_cast<std::size_t>(perm_[i])]) <= r2) out.push_back(perm_[i]);
      return;
    }
    const std::size_t mid = (lo + hi) / 2;
    const int axis = axis_[mid];
    const Vec3& m = pts_[static_cast<std::size_t>(perm_[mid])];
    if (sq_dist(q, m) <= r2) out.push_back(perm_[mid]);
    const double diff = coord(q, axis) - coord(m, axis);
    if (diff <= 0 || diff * diff <= r2) radius(q, r2, lo, mid, out);
    if (diff >= 0 || diff * diff <= r2) radius(q, r2, mid + 1, hi, out);
  }

  const std::vector<Vec3>& pts_;
  std::vector<std::int64_t> perm_;
  std::vector<std::uint8_t> axis_;
};

}  // namespace estuary::detail
