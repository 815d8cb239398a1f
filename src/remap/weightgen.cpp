// n-nearest-neighbour inverse-distance weights (CDO remapdis/gendis, OASIS DISTWGT): the source
// centres gathered on every rank into a 3-D k-d tree, searched for this rank's destination points.
#include "estuary/weightgen.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"

namespace estuary {

using i64 = std::int64_t;

namespace {

struct Vec3 {
  double x, y, z;
};

// As CDO: degrees to radians, then the unit vector.
Vec3 unit_vector(double lon_deg, double lat_deg) {
  constexpr double kDeg2Rad = M_PI / 180.0;
  const double lo = lon_deg * kDeg2Rad, la = lat_deg * kDeg2Rad;
  return {std::cos(la) * std::cos(lo), std::cos(la) * std::sin(lo), std::sin(la)};
}

double sq_dist(const Vec3& a, const Vec3& b) {
  const double dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
  return dx * dx + dy * dy + dz * dz;
}

double coord(const Vec3& v, int d) { return d == 0 ? v.x : d == 1 ? v.y : v.z; }

// A static 3-D k-d tree over a subset of points: the subtree of [lo, hi) is split at
// mid = (lo + hi) / 2 along axis_[mid], the points before mid no further along it than perm_[mid].
class KdTree {
 public:
  KdTree(const std::vector<Vec3>& pts, std::vector<i64> subset)
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
  void within(const Vec3& q, double r2, std::vector<i64>& out) const { radius(q, r2, 0, perm_.size(), out); }

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
                     perm_.begin() + static_cast<std::ptrdiff_t>(hi), [&](i64 a, i64 b) {
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

  void radius(const Vec3& q, double r2, std::size_t lo, std::size_t hi, std::vector<i64>& out) const {
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
  std::vector<i64> perm_;
  std::vector<std::uint8_t> axis_;
};

// The distance as CDO 2.1's point search returns it: the squared chord in double, rounded to
// single precision, then its square root in double. (This is what reproduces CDO's weights to
// the last bit; the rounding moves weights by up to ~1e-8 against an all-double distance.)
double cdo_distance(double sq) { return std::sqrt(static_cast<double>(static_cast<float>(sq))); }

// CDO's neighbour order (knnWeightsType::distance_is_less): nearer by more than 1e-12, or
// equally near within 1e-12 and of a smaller index.
constexpr double kCmpTol = 1e-12;
bool distance_is_less(double d, double dx, i64 a, i64 ax) {
  return d + kCmpTol < dx || (a < ax && std::fabs(d - dx) < kCmpTol);
}

// Every source point, gathered from the ranks' shares: unit vectors and mask by global index.
struct SourcePoints {
  std::vector<Vec3> xyz;
  std::vector<char> valid;
};

SourcePoints gather_source(const Grid& src, MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  const int n = static_cast<int>(src.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p), 0);
  detail::check_mpi(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  i64 total = 0;
  for (int r = 0; r < p; ++r) {
    displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += counts[static_cast<std::size_t>(r)];
  }
  if (total > INT32_MAX / 2) throw Error("source grid too large to gather", "distance_weights");
  // Global index times 2 plus the mask bit, and lon, lat interleaved.
  std::vector<i64> key(static_cast<std::size_t>(n));
  std::vector<double> ll(2 * static_cast<std::size_t>(n));
  for (i64 k = 0; k < n; ++k) {
    const auto u = static_cast<std::size_t>(k);
    key[u] = 2 * src.global_index(k) + (src.valid(k) ? 1 : 0);
    ll[2 * u] = src.lon[u];
    ll[2 * u + 1] = src.lat[u];
  }
  std::vector<i64> all_key(static_cast<std::size_t>(total));
  std::vector<double> all_ll(2 * static_cast<std::size_t>(total));
  detail::check_mpi(MPI_Allgatherv(key.data(), n, MPI_INT64_T, all_key.data(), counts.data(), displs.data(),
                                   MPI_INT64_T, comm),
                    "MPI_Allgatherv");
  for (auto& c : counts) c *= 2;
  for (auto& d : displs) d *= 2;
  detail::check_mpi(MPI_Allgatherv(ll.data(), 2 * n, MPI_DOUBLE, all_ll.data(), counts.data(), displs.data(),
                                   MPI_DOUBLE, comm),
                    "MPI_Allgatherv");

  SourcePoints s;
  const auto ng = static_cast<std::size_t>(src.global_size);
  s.xyz.resize(ng);
  s.valid.assign(ng, 0);
  std::vector<char> seen(ng, 0);
  for (std::size_t k = 0; k < all_key.size(); ++k) {
    const i64 g = all_key[k] / 2;
    if (g < 0 || g >= src.global_size)
      throw Error("source point index " + std::to_string(g) + " outside the grid of " +
                      std::to_string(src.global_size) + " points",
                  "distance_weights");
    const auto u = static_cast<std::size_t>(g);
    if (seen[u]) continue;  // a repeat (halo): the first holder's copy
    seen[u] = 1;
    s.xyz[u] = unit_vector(all_ll[2 * k], all_ll[2 * k + 1]);
    s.valid[u] = static_cast<char>(all_key[k] & 1);
  }
  for (std::size_t u = 0; u < ng; ++u)
    if (!seen[u])
      throw Error("source point " + std::to_string(u) + " is held by no rank", "distance_weights",
                  "pass each rank's share of the source grid so that together they cover it");
  return s;
}

}  // namespace

Links distance_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const DistanceWeightOptions& options) {
  SourcePoints s;
  detail::agree(comm, [&] {
    if (options.neighbors < 1)
      throw Error("neighbors must be at least 1, not " + std::to_string(options.neighbors), "distance_weights");
    src.check();
    dst.check();
    i64 sizes[2] = {src.global_size, -src.global_size};
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    if (sizes[0] != -sizes[1]) throw Error("the ranks disagree on the source grid size", "distance_weights");
  });
  detail::agree(comm, [&] { s = gather_source(src, comm); });

  const std::size_t ng = s.xyz.size();
  std::vector<i64> subset;
  subset.reserve(ng);
  for (std::size_t u = 0; u < ng; ++u)
    if (options.mask_rule == SourceMaskRule::drop_after_search || s.valid[u]) subset.push_back(static_cast<i64>(u));
  const KdTree tree(s.xyz, std::move(subset));
  const std::size_t tree_size = options.mask_rule == SourceMaskRule::drop_after_search
                                    ? ng
                                    : static_cast<std::size_t>(std::count(s.valid.begin(), s.valid.end(), 1));
  const std::size_t nn = std::min(static_cast<std::size_t>(options.neighbors), tree_size);

  Links out;
  out.row.reserve(static_cast<std::size_t>(dst.size()) * nn);
  out.col.reserve(out.row.capacity());
  out.weight.reserve(out.row.capacity());
  std::vector<i64> cand, addr(nn);
  std::vector<double> dist(nn);
  for (i64 k = 0; k < dst.size() && nn > 0; ++k) {
    if (!dst.valid(k)) continue;
    const auto u = static_cast<std::size_t>(k);
    const Vec3 q = unit_vector(dst.lon[u], dst.lat[u]);
    // Everything that may be among the nn nearest under CDO's tolerant order.
    // (float rounding of the squared distance moves it by at most 2^-24 relative.)
    const double dn = std::sqrt(tree.kth_sq_dist(q, nn)) * (1 + 1e-6) + 2 * kCmpTol;
    cand.clear();
    tree.within(q, dn * dn, cand);
    std::sort(cand.begin(), cand.end());
    std::fill(addr.begin(), addr.end(), INT64_MAX);
    std::fill(dist.begin(), dist.end(), DBL_MAX);
    for (i64 c : cand) {  // knnWeightsType::storeDistance, in increasing index
      const double d = cdo_distance(sq_dist(q, s.xyz[static_cast<std::size_t>(c)]));
      for (std::size_t i = 0; i < nn; ++i)
        if (distance_is_less(d, dist[i], c, addr[i])) {
          for (std::size_t j = nn - 1; j > i; --j) {
            addr[j] = addr[j - 1];
            dist[j] = dist[j - 1];
          }
          addr[i] = c;
          dist[i] = d;
          break;
        }
    }
    // checkDistance, then computeWeights: 1/d over the unmasked, normalised by their sum.
    double total = 0.0;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < nn; ++i) {
      if (addr[i] == INT64_MAX || !s.valid[static_cast<std::size_t>(addr[i])]) continue;
      if (dist[i] <= 0.0) dist[i] = 1e-14;
      dist[kept] = 1.0 / dist[i];
      addr[kept] = addr[i];
      total += dist[kept];
      ++kept;
    }
    const i64 row = dst.global_index(k);
    for (std::size_t i = 0; i < kept; ++i) out.add(row, addr[i], dist[i] / total);
  }
  return out;
}

Links distance_weights(const GridGen& src, const Grid& dst, MPI_Comm comm, const DistanceWeightOptions& options) {
  int p = 1, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  const Grid part = src.make(gen::block(src.size(), r, p));
  return distance_weights(part, dst, comm, options);
}

}  // namespace estuary
