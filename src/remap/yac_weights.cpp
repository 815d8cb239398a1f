// YAC's point methods on estuary's grids: `average` over the vertices of the dual source cell
// holding the target, and `nnn` over the n nearest unmasked source centres (weightgen.hpp says
// how YAC's definitions map onto cell-centred source values).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/weightgen.hpp"
#include "kdtree.hpp"
#include "pointsearch.hpp"
#include "search.hpp"
#include "sphere.hpp"

namespace estuary {

using i64 = std::int64_t;

namespace {

using detail::KdTree;
using sphere::unit_vector;
using sphere::Vec3;

constexpr double kAngleTol = 1e-9;  // YAC's yac_angle_tol: a source this close is the target

using sphere::angle;  // YAC's get_vector_angle: accurate at any size

double triple(const Vec3& a, const Vec3& b, const Vec3& c) {
  return a.x * (b.y * c.z - b.z * c.y) + a.y * (b.z * c.x - b.x * c.z) + a.z * (b.x * c.y - b.y * c.x);
}

// Spherical barycentric coordinates of x in the triangle (a, b, c): A bc = x with A = [a b c]
// (Cramer's rule). False for a degenerate triangle.
bool barycentric(const Vec3& x, const Vec3& a, const Vec3& b, const Vec3& c, double (&bc)[3]) {
  const double det = triple(a, b, c);
  if (!(std::fabs(det) > 1e-30)) return false;
  bc[0] = triple(x, b, c) / det;
  bc[1] = triple(a, x, c) / det;
  bc[2] = triple(a, b, x) / det;
  return true;
}

// Checks shared by the generators: options, grids, and that the ranks agree on the source size.
void check_grids(const Grid& src, const Grid& dst, MPI_Comm comm, const char* who) {
  src.check();
  dst.check();
  i64 sizes[2] = {src.global_size, -src.global_size};
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  if (sizes[0] != -sizes[1]) throw Error("the ranks disagree on the source grid size", who);
}

// The weights of YAC's average over the vertices `v` of a cell; false when the target gets none.
// v: positions in s.
bool average_cell(const AverageOptions& o, const detail::LocalSource& s, const Vec3& x, const std::vector<i64>& v,
                  std::vector<double>& w) {
  const std::size_t n = v.size();
  w.assign(n, 0.0);
  auto valid = [&](std::size_t i) { return s.valid[static_cast<std::size_t>(v[i])] != 0; };
  std::size_t unmasked = 0;
  for (std::size_t i = 0; i < n; ++i) unmasked += valid(i) ? 1 : 0;
  if (unmasked == 0) return false;
  switch (o.weighting) {
    case AverageWeighting::arithmetic: {
      if (!o.partial_coverage && unmasked < n) return false;
      for (std::size_t i = 0; i < n; ++i) w[i] = valid(i) ? 1.0 / static_cast<double>(unmasked) : 0.0;
      return true;
    }
    case AverageWeighting::distance: {
      for (std::size_t i = 0; i < n; ++i) {
        if (o.partial_coverage && !valid(i)) continue;
        const double d = angle(x, s.xyz[static_cast<std::size_t>(v[i])]);
        if (d < kAngleTol) {  // the target sits on this vertex
          if (!valid(i)) return false;
          std::fill(w.begin(), w.end(), 0.0);
          w[i] = 1.0;
          return true;
        }
        w[i] = 1.0 / d;
      }
      if (!o.partial_coverage && unmasked < n) return false;
      double sum = 0.0;
      for (double wi : w) sum += wi;
      for (double& wi : w) wi /= sum;
      return true;
    }
    case AverageWeighting::barycentric: {
      // A triangle as it is, a quad as (0,1,2) and (0,2,3): the triangle whose smallest
      // coordinate is largest.
      const std::size_t tris = n == 4 ? 2 : 1;
      const std::size_t tri[2][3] = {{0, 1, 2}, {0, 2, 3}};
      double best = -DBL_MAX, bc[3] = {0, 0, 0};
      std::size_t match = SIZE_MAX;
      for (std::size_t t = 0; t < tris; ++t) {
        double c[3];
        if (!barycentric(x, s.xyz[static_cast<std::size_t>(v[tri[t][0]])], s.xyz[static_cast<std::size_t>(v[tri[t][1]])],
                         s.xyz[static_cast<std::size_t>(v[tri[t][2]])], c))
          continue;
        const double m = std::min(c[0], std::min(c[1], c[2]));
        if (m > best) {
          best = m;
          match = t;
          for (int j = 0; j < 3; ++j) bc[j] = std::max(0.0, c[j]);
        }
      }
      if (match == SIZE_MAX) return false;
      for (int j = 0; j < 3; ++j)
        if (!valid(tri[match][j])) {
          if (!o.partial_coverage && bc[j] >= 1e-4) return false;
          bc[j] = 0.0;
        }
      double sum = 0.0;
      for (double& c : bc) {
        if (c < 1e-4) c = 0.0;
        else sum += c;
      }
      if (sum < 1e-9) return false;
      for (int j = 0; j < 3; ++j) w[tri[match][j]] = bc[j] / sum;
      return true;
    }
  }
  return false;
}

// Solves A w = a in place (A n x n, row-major) by Gaussian elimination with partial pivoting.
bool solve(std::vector<double>& A, std::vector<double>& a, std::size_t n) {
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::fabs(A[r * n + c]) > std::fabs(A[piv * n + c])) piv = r;
    if (!(std::fabs(A[piv * n + c]) > 0.0)) return false;
    if (piv != c) {
      for (std::size_t k = 0; k < n; ++k) std::swap(A[c * n + k], A[piv * n + k]);
      std::swap(a[c], a[piv]);
    }
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = A[r * n + c] / A[c * n + c];
      for (std::size_t k = c; k < n; ++k) A[r * n + k] -= f * A[c * n + k];
      a[r] -= f * a[c];
    }
  }
  for (std::size_t c = n; c-- > 0;) {
    double v = a[c];
    for (std::size_t k = c + 1; k < n; ++k) v -= A[c * n + k] * a[k];
    a[c] = v / A[c * n + c];
  }
  return true;
}

// YAC's nnn weights of the n sources `p` (nearest first) for the target x.
void nnn_cell(const NnnOptions& o, const std::vector<Vec3>& p, const Vec3& x, std::vector<double>& w) {
  const std::size_t n = p.size();
  w.assign(n, 0.0);
  if (n == 1) {
    w[0] = 1.0;
    return;
  }
  // distance and gauss: a source on the target takes it all; else w_i = f(d_i).
  auto per_source = [&](auto f) {
    for (std::size_t i = 0; i < n; ++i) {
      const double d = angle(x, p[i]);
      if (d < kAngleTol) {
        std::fill(w.begin(), w.end(), 0.0);
        w[i] = 1.0;
        return false;
      }
      w[i] = f(d);
    }
    return true;
  };
  auto inverse_distance = [&] {
    if (!per_source([](double d) { return 1.0 / d; })) return;
    double sum = 0.0;
    for (double wi : w) sum += wi;
    for (double& wi : w) wi /= sum;
  };
  switch (o.weighting) {
    case NnnWeighting::average:
      for (double& wi : w) wi = 1.0 / static_cast<double>(n);
      return;
    case NnnWeighting::distance:
      inverse_distance();
      return;
    case NnnWeighting::gauss: {
      if (!per_source([](double d) { return d * d; })) return;
      double pair_sum = 0.0;
      for (std::size_t i = 0; i + 1 < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) pair_sum += angle(p[i], p[j]);
      const double mean = pair_sum / (0.5 * static_cast<double>(n * n - n));
      const double scale = -1.0 / (o.gauss_scale * mean * mean);
      double sum = 0.0;
      for (double& wi : w) {
        wi = std::exp(scale * wi);
        sum += wi;
      }
      if (std::fabs(sum) < 1e-9) {  // too far from every source for the exponentials
        inverse_distance();
        return;
      }
      for (double& wi : w) wi /= sum;
      return;
    }
    case NnnWeighting::rbf: {
      std::vector<double> A(n * n, 0.0), a(n);
      double sum_d = 0.0, scale_d = 1.0;
      for (std::size_t i = 0; i + 1 < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) {
          const double d = angle(p[i], p[j]);
          A[i * n + j] = A[j * n + i] = d;
          sum_d += d;
        }
      if (sum_d > 0.0) scale_d = static_cast<double>((n - 1) * n) / (2.0 * sum_d);
      scale_d /= o.rbf_scale;
      const double sq = scale_d * scale_d;
      for (double& e : A) e = std::exp(-e * e * sq);
      for (std::size_t i = 0; i < n; ++i) {
        const double d = angle(x, p[i]);
        a[i] = std::exp(-d * d * sq);
      }
      if (!solve(A, a, n)) {  // coinciding sources: the matrix is singular
        inverse_distance();
        return;
      }
      w = a;
      return;
    }
  }
}

}  // namespace

Links average_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const AverageOptions& options) {
  detail::agree(comm, [&] { check_grids(src, dst, comm, "average_weights"); });
  const i64 ng = src.global_size;
  const bool rect = src.dims.size() == 2 && src.dims[0] * src.dims[1] == ng;
  // The source points near this rank's targets only (search.hpp): a logically rectangular source
  // through CDO's quad search, an unstructured one through its 8 nearest centres.
  std::unique_ptr<detail::QuadSearch> quads;
  detail::LocalSource near;
  std::unique_ptr<KdTree> tree;
  const std::size_t nn = static_cast<std::size_t>(std::min<i64>(8, ng));
  if (rect) {
    quads = std::make_unique<detail::QuadSearch>(src, dst, comm, "average_weights");
  } else {
    detail::agree(comm, [&] { near = detail::gather_near(src, detail::queries_of(dst), nn, false, comm, "average_weights"); });
    tree = std::make_unique<KdTree>(detail::tree_of(near, false));
  }
  const detail::LocalSource& s = rect ? quads->source() : near;
  Links out;
  std::vector<i64> cand, addr, v;
  std::vector<double> dist, w;
  for (i64 k = 0; k < dst.size() && ng >= 3; ++k) {
    if (!dst.valid(k)) continue;
    const auto u = static_cast<std::size_t>(k);
    const Vec3 x = unit_vector(dst.lon[u], dst.lat[u]);
    v.clear();
    if (rect) {
      i64 idx[4];
      double ql[4], qb[4];
      if (!quads->find(dst.lon[u], dst.lat[u], idx, ql, qb, cand, addr, dist)) continue;
      for (i64 g : idx) v.push_back(static_cast<i64>(s.position(g)));
    } else {
      detail::nearest(*tree, s, x, nn, cand, addr, dist);
      for (std::size_t a = 0; a < nn && v.empty(); ++a)
        for (std::size_t b = a + 1; b < nn && v.empty(); ++b)
          for (std::size_t c = b + 1; c < nn && v.empty(); ++c) {
            double bc[3];
            if (barycentric(x, s.xyz[static_cast<std::size_t>(addr[a])], s.xyz[static_cast<std::size_t>(addr[b])],
                            s.xyz[static_cast<std::size_t>(addr[c])], bc) &&
                bc[0] >= -1e-12 && bc[1] >= -1e-12 && bc[2] >= -1e-12)
              v = {addr[a], addr[b], addr[c]};
          }
      if (v.empty()) continue;
    }
    if (!average_cell(options, s, x, v, w)) continue;
    const i64 row = dst.global_index(k);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (w[i] != 0.0) out.add(row, s.index[static_cast<std::size_t>(v[i])], w[i]);
  }
  return out;
}

Links nnn_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const NnnOptions& options) {
  detail::agree(comm, [&] {
    if (options.n < 1) throw Error("nnn needs n >= 1, not " + std::to_string(options.n), "nnn_weights");
    if (!(options.max_search_distance >= 0.0 && options.max_search_distance <= 180.0))
      throw Error("max_search_distance " + std::to_string(options.max_search_distance) + " is not in [0, 180] degrees",
                  "nnn_weights");
    if (options.weighting == NnnWeighting::gauss && !(options.gauss_scale != 0.0))
      throw Error("the gauss scale is 0", "nnn_weights", "give a positive scale, e.g. YAC's 0.1");
    if (options.weighting == NnnWeighting::rbf && !(options.rbf_scale > 0.0))
      throw Error("the rbf scale is not positive", "nnn_weights", "give a positive scale, e.g. YAC's 14.87973");
    check_grids(src, dst, comm, "nnn_weights");
  });
  const std::size_t n = static_cast<std::size_t>(options.n);
  // The unmasked source points that can be among the n nearest of this rank's targets (search.hpp).
  detail::LocalSource s;
  detail::agree(comm, [&] { s = detail::gather_near(src, detail::queries_of(dst), n, true, comm, "nnn_weights"); });
  Links out;
  if (static_cast<std::size_t>(s.total_valid) < n) return out;  // no target has n unmasked sources: the next stage's
  const KdTree tree = detail::tree_of(s, true);
  const double max_angle = options.max_search_distance > 0.0 ? options.max_search_distance * (M_PI / 180.0) : M_PI;
  std::vector<i64> cand;
  std::vector<std::pair<double, i64>> by_angle;
  std::vector<Vec3> p(n);
  std::vector<double> w;
  for (i64 k = 0; k < dst.size(); ++k) {
    if (!dst.valid(k)) continue;
    const auto u = static_cast<std::size_t>(k);
    const Vec3 x = unit_vector(dst.lon[u], dst.lat[u]);
    // Every centre that may be among the n nearest (the angle grows with the chord; slack for
    // rounding), then ordered by angle and index.
    const double r = std::sqrt(tree.kth_sq_dist(x, n)) * (1 + 1e-9) + 1e-12;
    cand.clear();
    tree.within(x, r * r, cand);
    by_angle.clear();
    // (angle, global index): ties go to the smaller index, wherever the points sit here
    for (i64 c : cand) by_angle.emplace_back(angle(x, s.xyz[static_cast<std::size_t>(c)]), s.index[static_cast<std::size_t>(c)]);
    std::sort(by_angle.begin(), by_angle.end());
    if (by_angle.size() < n || by_angle[n - 1].first > max_angle) continue;
    for (std::size_t i = 0; i < n; ++i) p[i] = s.xyz[s.position(by_angle[i].second)];
    nnn_cell(options, p, x, w);
    const i64 row = dst.global_index(k);
    for (std::size_t i = 0; i < n; ++i) out.add(row, by_angle[i].second, w[i]);
  }
  return out;
}

}  // namespace estuary
