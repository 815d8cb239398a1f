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
// mid = (lo + hi) / 2 along axis_[mid] (the longest side of its points' bounding box, kept for
// the searches), the points before mid no further along it than node mid.
// The points are copied into the tree in its own order (coordinates and id side by side), so
// that a search reads consecutive memory instead of jumping through an index array.
class KdTree {
 public:
  KdTree(const std::vector<Vec3>& pts, const std::vector<std::int64_t>& subset)
      : node_(subset.size()), axis_(subset.size(), 0), box_of_(subset.size(), 0) {
    for (std::size_t k = 0; k < subset.size(); ++k) node_[k] = {pts[static_cast<std::size_t>(subset[k])], subset[k]};
    box_.reserve(node_.size() / kLeaf + 1);
    build(0, node_.size());
  }

  bool empty() const { return node_.empty(); }
  std::size_t size() const { return node_.size(); }

  // The squared distance to the k-th nearest point (k >= 1, k <= size), or +inf when empty.
  double kth_sq_dist(const Vec3& q, std::size_t k) const {
    // Ascending; a fixed buffer for the usual few neighbours (no allocation per query).
    double small[16];
    std::vector<double> large;
    double* best = small;
    if (k > 16) large.assign(k, INFINITY), best = large.data();
    else std::fill(small, small + k, INFINITY);
    knn(q, 0, node_.size(), best, k);
    return best[k - 1];
  }

  // Every point with squared distance <= r2, appended to out (its id: the index into pts).
  void within(const Vec3& q, double r2, std::vector<std::int64_t>& out) const {
    radius(q, r2, 0, node_.size(), out);
  }

  // Every point within r = sqrt(d_k) * (1 + rel) + abs of q, d_k the k-th smallest squared
  // distance: the same points as within(q, r * r) after kth_sq_dist(q, k), appended to out in no
  // particular order. One descent tracking the k + 1 nearest finds them when the (k+1)-th lies
  // beyond r (the usual case: no tie at the k-th); only then is the radius search skipped.
  void near_candidates(const Vec3& q, std::size_t k, double rel, double abs, std::vector<std::int64_t>& out) const {
    constexpr std::size_t kMax = 16;
    if (k + 1 > kMax) {
      const double r = std::sqrt(kth_sq_dist(q, k)) * (1 + rel) + abs;
      within(q, r * r, out);
      return;
    }
    const std::size_t m = k + 1;
    double d2[kMax];
    std::int64_t id[kMax];
    std::fill(d2, d2 + m, INFINITY);
    std::fill(id, id + m, std::int64_t{-1});
    knn_ids(q, 0, node_.size(), d2, id, m);
    const double r = std::sqrt(d2[k - 1]) * (1 + rel) + abs;
    if (d2[k] > r * r) {
      out.insert(out.end(), id, id + k);
      return;
    }
    within(q, r * r, out);
  }

 private:
  struct Node {
    Vec3 p;
    std::int64_t id = 0;
  };
  static constexpr std::size_t kLeaf = 8;

  void build(std::size_t lo, std::size_t hi) {
    if (hi - lo <= kLeaf) return;
    double mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (std::size_t i = lo; i < hi; ++i) {
      const Vec3& v = node_[i].p;
      mn[0] = std::min(mn[0], v.x), mx[0] = std::max(mx[0], v.x);
      mn[1] = std::min(mn[1], v.y), mx[1] = std::max(mx[1], v.y);
      mn[2] = std::min(mn[2], v.z), mx[2] = std::max(mx[2], v.z);
    }
    int axis = 0;
    for (int d = 1; d < 3; ++d)
      if (mx[d] - mn[d] > mx[axis] - mn[axis]) axis = d;
    const std::size_t mid = (lo + hi) / 2;
    // One comparator per axis (the member read is fixed, no branch on the axis per comparison);
    // ties by id, so that the tree is the same whatever order the points came in.
    const auto first = node_.begin() + static_cast<std::ptrdiff_t>(lo), nth = node_.begin() + static_cast<std::ptrdiff_t>(mid),
               last = node_.begin() + static_cast<std::ptrdiff_t>(hi);
    const auto split = [&](auto member) {
      std::nth_element(first, nth, last, [member](const Node& a, const Node& b) {
        const double ca = a.p.*member, cb = b.p.*member;
        return ca < cb || (ca == cb && a.id < b.id);
      });
    };
    if (axis == 0) split(&Vec3::x);
    else if (axis == 1) split(&Vec3::y);
    else split(&Vec3::z);
    box_of_[mid] = static_cast<std::uint32_t>(box_.size());
    box_.push_back({{mn[0], mn[1], mn[2]}, {mx[0], mx[1], mx[2]}});
    axis_[mid] = static_cast<std::uint8_t>(axis);
    build(lo, mid);
    build(mid + 1, hi);
  }

  static void offer(double* best, std::size_t k, double d2) {
    if (d2 >= best[k - 1]) return;
    std::size_t i = k - 1;
    while (i > 0 && best[i - 1] > d2) {
      best[i] = best[i - 1];
      --i;
    }
    best[i] = d2;
  }

  // The descents prune a subtree by the squared distance from q to the bounding box of its
  // points (kept for every inner node), on top of the split plane's distance. The points lie on
  // a sphere, so the boxes are much tighter than the cells the split planes cut out: against
  // the split plane alone, a ring of points around q (a target beyond a grid's last row, near a
  // pole) defeated the pruning, at thousands of visits a query. A box is only ever used to skip a
  // subtree whose every point is farther than what is kept, so the answers are the same points;
  // the slack absorbs the rounding of the box distance against sq_dist.
  struct Box {
    double lo[3], hi[3];
  };
  static double box_sq_dist(const Vec3& q, const Box& b) {
    const double c[3] = {q.x, q.y, q.z};
    double d = 0;
    for (int a = 0; a < 3; ++a) {
      const double below = b.lo[a] - c[a], above = c[a] - b.hi[a];
      const double e = below > 0 ? below : above > 0 ? above : 0.0;
      d += e * e;
    }
    return d;
  }
  static bool may_hold(double d2, double bound) { return d2 <= bound * (1 + 1e-9) + 1e-300; }
  int axis(std::size_t mid) const { return axis_[mid]; }
  // Whether the subtree [lo, hi) on the far side of a split plane diff away may hold a point
  // within the bound: the plane first, then (an inner node) its box. The side q is on is
  // entered without the test: it seldom prunes there.
  bool far_may_hold(const Vec3& q, double diff, std::size_t lo, std::size_t hi, double bound) const {
    if (!(diff * diff <= bound)) return false;
    return hi - lo <= kLeaf || may_hold(box_sq_dist(q, box_[box_of_[(lo + hi) / 2]]), bound);
  }

  void knn(const Vec3& q, std::size_t lo, std::size_t hi, double* best, std::size_t k) const {
    if (hi - lo <= kLeaf) {
      for (std::size_t i = lo; i < hi; ++i) offer(best, k, sq_dist(q, node_[i].p));
      return;
    }
    const std::size_t mid = (lo + hi) / 2;
    const Vec3& m = node_[mid].p;
    offer(best, k, sq_dist(q, m));
    const double diff = coord(q, axis(mid)) - coord(m, axis(mid));
    if (diff <= 0) {
      knn(q, lo, mid, best, k);
      if (far_may_hold(q, diff, mid + 1, hi, best[k - 1])) knn(q, mid + 1, hi, best, k);
    } else {
      knn(q, mid + 1, hi, best, k);
      if (far_may_hold(q, diff, lo, mid, best[k - 1])) knn(q, lo, mid, best, k);
    }
  }

  static void offer_id(double* d2, std::int64_t* id, std::size_t k, double d, std::int64_t who) {
    if (d >= d2[k - 1]) return;
    std::size_t i = k - 1;
    while (i > 0 && d2[i - 1] > d) {
      d2[i] = d2[i - 1];
      id[i] = id[i - 1];
      --i;
    }
    d2[i] = d;
    id[i] = who;
  }

  void knn_ids(const Vec3& q, std::size_t lo, std::size_t hi, double* d2, std::int64_t* id, std::size_t k) const {
    if (hi - lo <= kLeaf) {
      for (std::size_t i = lo; i < hi; ++i) offer_id(d2, id, k, sq_dist(q, node_[i].p), node_[i].id);
      return;
    }
    const std::size_t mid = (lo + hi) / 2;
    const Vec3& m = node_[mid].p;
    offer_id(d2, id, k, sq_dist(q, m), node_[mid].id);
    const double diff = coord(q, axis(mid)) - coord(m, axis(mid));
    if (diff <= 0) {
      knn_ids(q, lo, mid, d2, id, k);
      if (far_may_hold(q, diff, mid + 1, hi, d2[k - 1])) knn_ids(q, mid + 1, hi, d2, id, k);
    } else {
      knn_ids(q, mid + 1, hi, d2, id, k);
      if (far_may_hold(q, diff, lo, mid, d2[k - 1])) knn_ids(q, lo, mid, d2, id, k);
    }
  }

  void radius(const Vec3& q, double r2, std::size_t lo, std::size_t hi, std::vector<std::int64_t>& out) const {
    if (hi - lo <= kLeaf) {
      for (std::size_t i = lo; i < hi; ++i)
        if (sq_dist(q, node_[i].p) <= r2) out.push_back(node_[i].id);
      return;
    }
    const std::size_t mid = (lo + hi) / 2;
    const Vec3& m = node_[mid].p;
    if (sq_dist(q, m) <= r2) out.push_back(node_[mid].id);
    const double diff = coord(q, axis(mid)) - coord(m, axis(mid));
    if (diff <= 0 || far_may_hold(q, diff, lo, mid, r2)) radius(q, r2, lo, mid, out);
    if (diff >= 0 || far_may_hold(q, diff, mid + 1, hi, r2)) radius(q, r2, mid + 1, hi, out);
  }

  std::vector<Node> node_;
  std::vector<std::uint8_t> axis_;     // per inner node (by its mid): the split axis
  std::vector<std::uint32_t> box_of_;  // and its box in box_
  std::vector<Box> box_;
};

}  // namespace estuary::detail
