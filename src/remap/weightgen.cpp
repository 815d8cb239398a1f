// n-nearest-neighbour inverse-distance weights (CDO remapdis/gendis, OASIS DISTWGT), OASIS's
// GAUSWGT, bilinear and bicubic weights (CDO remapbil/genbil, genbic, SCRIP) and the nearest
// fill: each rank gathers the source points near its destination points (search.hpp) into a
// 3-D k-d tree and searches it for them.
#include "estuary/weightgen.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "gradients.hpp"
#include "kdtree.hpp"
#include "pointsearch.hpp"
#include "search.hpp"
#include "sphere.hpp"

namespace estuary {

using i64 = std::int64_t;

namespace {

using detail::cdo_distance;
using detail::distance_is_less;
using detail::kCmpTol;
using detail::KdTree;
using detail::is_cyclic;
using detail::nearest;
using detail::queries_of;
using detail::tree_of;
using detail::sq_dist;
using sphere::unit_vector;
using sphere::Vec3;


// CDO's bicubic weights of the four corners (bicubic_set_weights in remap_bicubic.cc): for
// corner n, the value weight and those of the gradients across i, across j and crosswise, as
// functions of the point's bilinear coordinates (x, y) in the quad.
void bicubic_set_weights(double x, double y, double (&w)[4][4]) {
  const double x1 = x * x * (x - 1.0), x2 = x * (x - 1.0) * (x - 1.0), x3 = x * x * (3.0 - 2.0 * x);
  const double y1 = y * y * (y - 1.0), y2 = y * (y - 1.0) * (y - 1.0), y3 = y * y * (3.0 - 2.0 * y);
  w[0][0] = (1.0 - y3) * (1.0 - x3);
  w[1][0] = (1.0 - y3) * x3;
  w[2][0] = y3 * x3;
  w[3][0] = y3 * (1.0 - x3);
  w[0][1] = (1.0 - y3) * x2;
  w[1][1] = (1.0 - y3) * x1;
  w[2][1] = y3 * x1;
  w[3][1] = y3 * x2;
  w[0][2] = y2 * (1.0 - x3);
  w[1][2] = y2 * x3;
  w[2][2] = y1 * x3;
  w[3][2] = y1 * (1.0 - x3);
  w[0][3] = y2 * x2;
  w[1][3] = y2 * x1;
  w[2][3] = y1 * x1;
  w[3][3] = y1 * x2;
}


void check_sizes(const Grid& src, MPI_Comm comm, const char* where) {
  i64 sizes[2] = {src.global_size, -src.global_size};
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  if (sizes[0] != -sizes[1]) throw Error("the ranks disagree on the source grid size", where);
}

// OASIS's trigonometry (SCRIP): latitudes and longitudes in radians, the angular distance.
constexpr double kDeg2Rad = 3.14159265358979323846 / 180.0;
struct Trig {
  double sla, cla, slo, clo;
  Trig(double lon_deg, double lat_deg) {
    const double la = lat_deg * kDeg2Rad, lo = lon_deg * kDeg2Rad;
    cla = std::cos(la), sla = std::sin(la), clo = std::cos(lo), slo = std::sin(lo);
  }
};
double oasis_angle(const Trig& a, const Trig& b) {
  const double d = a.sla * b.sla + a.cla * b.cla * (a.clo * b.clo + a.slo * b.slo);
  return std::acos(std::min(1.0, std::max(-1.0, d)));
}

// OASIS's grid_dist_average: the mean distance between consecutive points of the source grid
// (the last and the first included), added in grid order. Each rank adds the terms of a block
// of indices onto the sum of the blocks before it, passed along the ranks in turn: the same
// additions in the same order as one loop, so the same bits on any number of ranks.
double mean_consecutive_angle(const Grid& src, MPI_Comm comm) {
  int p = 1, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  const i64 ng = src.global_size, lo = ng * r / p, hi = ng * (r + 1) / p;
  std::vector<i64> need;
  if (hi > lo) need.push_back(lo == 0 ? ng - 1 : lo - 1);
  for (i64 g = lo; g < hi; ++g) need.push_back(g);
  detail::LocalSource t;
  detail::fetch_by_index(src, t, need, comm);
  double sum = 0.0;
  if (r > 0) detail::check_mpi(MPI_Recv(&sum, 1, MPI_DOUBLE, r - 1, 0, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  auto trig = [&](i64 g) {
    const std::size_t u = t.position(g);
    return Trig(t.lon[u], t.lat[u]);
  };
  if (hi > lo) {
    Trig prev = trig(lo == 0 ? ng - 1 : lo - 1);
    for (i64 g = lo; g < hi; ++g) {
      const Trig cur = trig(g);
      sum += oasis_angle(prev, cur);
      prev = cur;
    }
  }
  if (r + 1 < p) detail::check_mpi(MPI_Send(&sum, 1, MPI_DOUBLE, r + 1, 0, comm), "MPI_Send");
  detail::check_mpi(MPI_Bcast(&sum, 1, MPI_DOUBLE, p - 1, comm), "MPI_Bcast");
  return sum / static_cast<double>(ng);
}

}  // namespace

Links distance_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const DistanceWeightOptions& options) {
  detail::agree(comm, [&] {
    if (options.neighbors < 1)
      throw Error("neighbors must be at least 1, not " + std::to_string(options.neighbors), "distance_weights");
    src.check();
    dst.check();
    check_sizes(src, comm, "distance_weights");
  });
  const bool unmasked = options.mask_rule == SourceMaskRule::nearest_unmasked;
  const std::size_t nn = static_cast<std::size_t>(options.neighbors);
  detail::LocalSource s;
  detail::agree(comm, [&] { s = detail::gather_near(src, queries_of(dst), nn, unmasked, comm, "distance_weights"); });
  const i64 tree_size = unmasked ? s.total_valid : s.total;
  // More neighbours than the search can find makes no sense for these grids: an error, not a
  // silent cut (the counts are the whole grid's, so every rank throws alike).
  if (options.neighbors > tree_size)
    throw Error(std::to_string(options.neighbors) + " neighbours asked for, but the source grid " + src.name + " has only " +
                    std::to_string(tree_size) + (unmasked ? " unmasked points" : " points"),
                "distance_weights", "ask for at most as many neighbours as there are source points");
  const KdTree tree = tree_of(s, unmasked);

  Links out;
  out.row.reserve(static_cast<std::size_t>(dst.size()) * nn);
  out.col.reserve(out.row.capacity());
  out.weight.reserve(out.row.capacity());
  std::vector<i64> cand, addr(nn);
  std::vector<double> dist(nn);
  for (i64 k = 0; k < dst.size(); ++k) {
    if (!dst.valid(k)) continue;
    const auto u = static_cast<std::size_t>(k);
    const Vec3 q = unit_vector(dst.lon[u], dst.lat[u]);
    nearest(tree, s, q, nn, cand, addr, dist);
    // checkDistance, then computeWeights: 1/d over the unmasked, normalised by their sum.
    double total = 0.0;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < nn; ++i) {
      if (addr[i] == INT64_MAX || !s.valid[static_cast<std::size_t>(addr[i])]) continue;
      if (dist[i] <= 0.0) dist[i] = 1e-14;
      dist[kept] = 1.0 / dist[i];
      addr[kept] = s.index[static_cast<std::size_t>(addr[i])];
      total += dist[kept];
      ++kept;
    }
    const i64 row = dst.global_index(k);
    for (std::size_t i = 0; i < kept; ++i) out.add(row, addr[i], dist[i] / total);
  }
  return out;
}

Links gaussian_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const GaussianWeightOptions& options) {
  detail::agree(comm, [&] {
    if (options.neighbors < 1)
      throw Error("neighbors must be at least 1, not " + std::to_string(options.neighbors), "gaussian_weights");
    if (!(options.variance >= 1.1920929e-07))  // OASIS stops on a variance below epsilon(1.)
      throw Error("the GAUSWGT variance " + std::to_string(options.variance) + " is not positive", "gaussian_weights",
                  "give the variance multiplier (OASIS's $VAR), e.g. 1");
    src.check();
    dst.check();
    check_sizes(src, comm, "gaussian_weights");
  });
  const std::size_t nn = static_cast<std::size_t>(options.neighbors);
  detail::LocalSource s;
  detail::agree(comm, [&] { s = detail::gather_near(src, queries_of(dst), nn, false, comm, "gaussian_weights"); });
  if (options.neighbors > s.total)
    throw Error(std::to_string(nn) + " neighbours asked for, but the source grid " + src.name + " has only " +
                    std::to_string(s.total) + " points",
                "gaussian_weights", "ask for at most as many neighbours as there are source points");
  // The variance is varmul times the square of the mean distance between consecutive points.
  const double average = mean_consecutive_angle(src, comm);
  const double variance = options.variance * average * average;
  std::vector<Trig> trig;
  trig.reserve(s.size());
  for (std::size_t u = 0; u < s.size(); ++u) trig.emplace_back(s.lon[u], s.lat[u]);

  const KdTree tree = tree_of(s, false);
  Links out;
  out.row.reserve(static_cast<std::size_t>(dst.size()) * nn);
  out.col.reserve(out.row.capacity());
  out.weight.reserve(out.row.capacity());
  std::vector<i64> cand, addr(nn);
  std::vector<double> dist(nn);
  for (i64 k = 0; k < dst.size(); ++k) {
    if (!dst.valid(k)) continue;
    const auto u = static_cast<std::size_t>(k);
    const Trig t(dst.lon[u], dst.lat[u]);
    // Candidates: every point within the nn-th nearest chord (with slack for rounding); the
    // angle is monotonic in the chord, so they hold OASIS's nn nearest.
    const Vec3 q = unit_vector(dst.lon[u], dst.lat[u]);
    cand.clear();
    tree.near_candidates(q, nn, 1e-9, 1e-12, cand);
    std::sort(cand.begin(), cand.end(), [&](i64 a, i64 b) {
      return s.index[static_cast<std::size_t>(a)] < s.index[static_cast<std::size_t>(b)];
    });
    // grid_search_nbr: in increasing index, kept if strictly nearer than a kept one.
    std::fill(addr.begin(), addr.end(), INT64_MAX);
    std::fill(dist.begin(), dist.end(), DBL_MAX);
    for (i64 c : cand) {
      const double d = oasis_angle(t, trig[static_cast<std::size_t>(c)]);
      for (std::size_t i = 0; i < nn; ++i)
        if (d < dist[i]) {
          for (std::size_t j = nn - 1; j > i; --j) addr[j] = addr[j - 1], dist[j] = dist[j - 1];
          addr[i] = c, dist[i] = d;
          break;
        }
    }
    // remap_dist_gaus_wgt: w = 1 / (exp(d^2 / (2 variance)) + eps) over the unmasked, normalised.
    double total = 0.0;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < nn; ++i) {
      if (addr[i] == INT64_MAX || !s.valid[static_cast<std::size_t>(addr[i])]) continue;
      const double w = 1.0 / (std::exp(0.5 * dist[i] * dist[i] / variance) + DBL_EPSILON);
      total += w;
      addr[kept] = s.index[static_cast<std::size_t>(addr[i])], dist[kept] = w;
      ++kept;
    }
    const i64 row = dst.global_index(k);
    for (std::size_t i = 0; i < kept; ++i) out.add(row, addr[i], dist[i] / total);
  }
  return out;
}

void fill_nearest(const Grid& src, const Grid& dst, MPI_Comm comm, Links& links) {
  detail::agree(comm, [&] {
    src.check();
    dst.check();
    check_sizes(src, comm, "fill_nearest");
  });
  std::vector<i64> linked(links.row.begin(), links.row.end());
  std::sort(linked.begin(), linked.end());
  std::vector<char> lone(static_cast<std::size_t>(dst.size()), 0);
  for (i64 k = 0; k < dst.size(); ++k)
    lone[static_cast<std::size_t>(k)] = !std::binary_search(linked.begin(), linked.end(), dst.global_index(k));
  detail::LocalSource s;
  detail::agree(comm, [&] { s = detail::gather_near(src, queries_of(dst, &lone), 1, true, comm, "fill_nearest"); });
  if (s.total_valid == 0) return;
  const KdTree tree = tree_of(s, true);
  std::vector<i64> cand, addr(1);
  std::vector<double> dist(1);
  for (i64 k = 0; k < dst.size(); ++k) {
    if (!dst.valid(k) || !lone[static_cast<std::size_t>(k)]) continue;
    const auto u = static_cast<std::size_t>(k);
    nearest(tree, s, unit_vector(dst.lon[u], dst.lat[u]), 1, cand, addr, dist);
    if (addr[0] != INT64_MAX) links.add(dst.global_index(k), s.index[static_cast<std::size_t>(addr[0])], 1.0);
  }
}

Links distance_weights(const GridGen& src, const Grid& dst, MPI_Comm comm, const DistanceWeightOptions& options) {
  int p = 1, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  const Grid part = src.make(gen::block(src.size(), r, p));
  return distance_weights(part, dst, comm, options);
}

// ---- bilinear (CDO 2.1 remap_bilinear.cc with gridSearchSquareCurv2d) ----

namespace {




using detail::cdo_lat;
using detail::cdo_lon;
using detail::kPi;
using detail::kPi2;
using detail::kPih;
using detail::quad_cross_products;

struct Quad {
  i64 idx[4];
  double lon[4], lat[4];
};

// CDO's limit_dphi_bounds.
void limit_dphi(double& d) {
  if (d > 3.0 * kPih) d -= kPi2;
  if (d < -3.0 * kPih) d += kPi2;
}

// SCRIP's Newton iteration for the bilinear coordinates; (-1, -1) when it does not converge.
std::pair<double, double> find_weights(double plon, double plat, const Quad& q) {
  constexpr double kConverge = 1e-10;
  constexpr long kMaxIter = 100;
  const double dth1 = q.lat[1] - q.lat[0], dth2 = q.lat[3] - q.lat[0], dth3 = q.lat[2] - q.lat[1] - dth2;
  double dph1 = q.lon[1] - q.lon[0], dph2 = q.lon[3] - q.lon[0], dph3 = q.lon[2] - q.lon[1];
  limit_dphi(dph1);
  limit_dphi(dph2);
  limit_dphi(dph3);
  dph3 -= dph2;
  double x = 0.5, y = 0.5;
  long iter = 0;
  for (iter = 0; iter < kMaxIter; ++iter) {
    const double dthp = plat - q.lat[0] - dth1 * x - dth2 * y - dth3 * x * y;
    double dphp = plon - q.lon[0];
    limit_dphi(dphp);
    dphp -= dph1 * x + dph2 * y + dph3 * x * y;
    const double m1 = dth1 + dth3 * y, m2 = dth2 + dth3 * x, m3 = dph1 + dph3 * y, m4 = dph2 + dph3 * x;
    const double det = m1 * m4 - m2 * m3;
    const double di = (dthp * m4 - dphp * m2) / det, dj = (dphp * m1 - dthp * m3) / det;
    if (std::fabs(di) < kConverge && std::fabs(dj) < kConverge) break;
    x += di;
    y += dj;
  }
  if (iter >= kMaxIter) x = y = -1.0;
  return {x, y};
}

}  // namespace

// CDO's quad search (remap_search_square) and weights for bilinear (4 weights a target, one a
// link) and bicubic (4 links of 4 weights: value, and the three gradient terms); `cubic` selects
// bicubic, whose links are also folded with CDO's source gradients into `folded`.
namespace {
void quad_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const BilinearWeightOptions& options, bool cubic,
                  const char* who, Links& out, std::vector<std::array<double, 4>>* columns, Links* folded) {
  detail::agree(comm, [&] {
    src.check();
    dst.check();
    if (src.dims.size() != 2 || src.dims[0] * src.dims[1] != src.global_size)
      throw Error("the source grid is not two-dimensional (grid_dims {nx, ny})", who,
                  "bilinear and bicubic weights need a logically rectangular source: lon-lat, Gaussian or curvilinear");
    // A grid of one row (nx x 1, as a reduced grid is stored in OASIS's grids.nc) has no quads:
    // every point would silently get the distance-weighted fallback.
    if (src.dims[1] < 2 || src.dims[0] < 2)
      throw Error("the source grid " + src.name + " is " + std::to_string(src.dims[0]) + " x " + std::to_string(src.dims[1]) +
                      ": a grid of one row or column has no quads to interpolate in",
                  who, "for a reduced Gaussian grid use bilinear_weights_reduced (namcouple grid type D)");
    check_sizes(src, comm, who);
  });
  const i64 nx = src.dims[0], ny = src.dims[1], ng = src.global_size;
  // Whether the quads wrap in i, and so, by CDO's default, whether points no quad holds get the
  // fallback of the 4 nearest: for a global source, not for a regional one (REMAP_EXTRAPOLATE).
  const bool cyclic = detail::cdo_is_cyclic(src, comm);
  const bool fallback_4 = options.extrapolate.value_or(cyclic) && ng >= 4;
  detail::LocalSource s;
  // The destination's unit vectors, once: the search below and both passes read them.
  const std::vector<Vec3> queries = queries_of(dst);
  detail::agree(comm, [&] { s = detail::gather_near(src, queries, fallback_4 ? 4 : 1, false, comm, who); });
  // By rows: the lookups of step 1 then read one row, not the whole index (positions stay in
  // index order until the fetch below appends).
  s.reindex(nx, ny);
  const KdTree tree = tree_of(s, false);

  // 1. The nearest source point of every destination point; then, by index, the block around it
  //    that the quads use (3 x 3) and, for bicubic, the masks their gradients read (5 x 5), and
  //    the three points the cyclic test reads.
  std::vector<i64> cand, addr, near(static_cast<std::size_t>(dst.size()), -1);
  std::vector<double> dist;
  std::vector<i64> need{0, std::min<i64>(1, ng - 1), nx - 1};
  const i64 wide = cubic ? 2 : 1;
  for (i64 k = 0, at = 0; k < dst.size() && ng > 0; ++k) {
    if (!dst.valid(k)) continue;
    const auto u = static_cast<std::size_t>(k);
    nearest(tree, s, queries[static_cast<std::size_t>(at++)], 1, cand, addr, dist);
    const i64 g = s.index[static_cast<std::size_t>(addr[0])];
    near[u] = g;
    const i64 j = g / nx, i = g - j * nx;
    for (i64 jj = std::max<i64>(0, j - wide); jj <= std::min(ny - 1, j + wide); ++jj) {
      // Mostly held already: look up the row's two ends first.
      const i64 a = jj * nx + ((i - wide) % nx + nx) % nx, b = jj * nx + (i + wide) % nx;
      const std::size_t pa = s.position(a), pb = s.position(b);
      // (positions are still in index order here: a run of 2 wide + 1 positions is the segment)
      if (b - a == 2 * wide && pa < s.size() && pb < s.size() && pb - pa == static_cast<std::size_t>(2 * wide)) continue;
      for (i64 di = -wide; di <= wide; ++di) need.push_back(jj * nx + ((i + di) % nx + nx) % nx);
    }
  }
  detail::agree(comm, [&] { detail::fetch_by_index(src, s, need, comm); });
  s.reindex(nx, ny);
  need = {};
  auto valid_of = [&](i64 g) { return s.valid[s.position(g)] != 0; };

  // point_in_quad: the quad with lower-left corner (i, j), if it holds the point.
  auto point_in_quad = [&](i64 i, i64 j, double plon, double plat, Quad& q) {
    const i64 ip1 = i < nx - 1 ? i + 1 : cyclic ? 0 : i;
    const i64 jp1 = j < ny - 1 ? j + 1 : j;
    if (i == ip1 || j == jp1) return false;
    q.idx[0] = j * nx + i;
    q.idx[1] = j * nx + ip1;
    q.idx[2] = jp1 * nx + ip1;
    q.idx[3] = jp1 * nx + i;
    for (int k = 0; k < 4; ++k) {
      const std::size_t at = s.position(q.idx[k]);
      q.lon[k] = cdo_lon(s.lon[at]);
      q.lat[k] = cdo_lat(s.lat[at]);
    }
    return quad_cross_products(plon, plat, q.lon, q.lat);
  };

  // 2. The quads and weights.
  out.row.reserve(4 * static_cast<std::size_t>(dst.size()));
  out.col.reserve(out.row.capacity());
  out.weight.reserve(out.row.capacity());
  if (columns) columns->reserve(out.row.capacity());
  if (folded && options.fold) {  // at most 9 folded links a corner, most have 9
    folded->row.reserve(9 * out.row.capacity());
    folded->col.reserve(folded->row.capacity());
    folded->weight.reserve(folded->row.capacity());
  }
  for (i64 k = 0, at = 0; k < dst.size() && ng > 0; ++k) {
    if (!dst.valid(k)) continue;
    const auto u = static_cast<std::size_t>(k);
    const double plon = cdo_lon(dst.lon[u]), plat = cdo_lat(dst.lat[u]);
    const Vec3& p = queries[static_cast<std::size_t>(at++)];
    // gridSearchSquareCurv2d: the quads around the nearest source point.
    Quad q{};
    int result = 0;
    for (int kk = 0; kk < 4 && result == 0; ++kk) {
      i64 j = near[u] / nx, i = near[u] - j * nx;
      if (kk == 0 || kk == 2) i = i > 0 ? i - 1 : cyclic ? nx - 1 : 0;
      if (kk == 0 || kk == 1) j = j > 0 ? j - 1 : 0;
      if (point_in_quad(i, j, plon, plat, q)) result = 1;
    }
    double w[4] = {0, 0, 0, 0};
    double cw[4][4] = {};  // bicubic: per corner, the value and three gradient weights
    double fallback[4] = {0, 0, 0, 0};  // CDO's srcLats: latitudes, or normalised 1/distance
    if (result == 0 && fallback_4) {
      nearest(tree, s, p, 4, cand, addr, dist);
      double total = 0.0;
      for (int n = 0; n < 4; ++n) {
        q.idx[n] = s.index[static_cast<std::size_t>(addr[static_cast<std::size_t>(n)])];
        fallback[n] = 1.0 / (dist[static_cast<std::size_t>(n)] + 1e-14);
        total += fallback[n];
      }
      for (double& f : fallback) f /= total;
      result = -1;
    }
    if (result > 0) {  // remap_check_mask_indices
      for (int n = 0; n < 4; ++n)
        if (!valid_of(q.idx[n])) result = 0;
    }
    if (result > 0) {
      const auto [x, y] = find_weights(plon, plat, q);
      if (x >= 0.0 && y >= 0.0) {
        w[0] = (1.0 - x) * (1.0 - y);
        w[1] = x * (1.0 - y);
        w[2] = x * y;
        w[3] = (1.0 - x) * y;
        if (cubic) bicubic_set_weights(x, y, cw);
      } else {
        for (int n = 0; n < 4; ++n) fallback[n] = q.lat[n];
        result = -1;
      }
    }
    if (result < 0) {  // num_src_points, renormalize_weights
      int count = 4;
      for (int n = 0; n < 4; ++n)
        if (!valid_of(q.idx[n])) {
          --count;
          fallback[n] = 0.0;
        }
      if (count == 0) continue;
      const double sum = std::fabs(fallback[0]) + std::fabs(fallback[1]) + std::fabs(fallback[2]) + std::fabs(fallback[3]);
      for (int n = 0; n < 4; ++n) w[n] = std::fabs(fallback[n]) / sum;
      // CDO's bicubic falls back the same way, with no gradient terms (renormalize_weights).
      for (int n = 0; n < 4; ++n) cw[n][0] = w[n], cw[n][1] = cw[n][2] = cw[n][3] = 0.0;
    }
    if (result == 0) continue;
    // Stored in increasing source index, as CDO's store_weightlinks does.
    int order[4] = {0, 1, 2, 3};
    std::sort(order, order + 4, [&](int a, int b) { return q.idx[a] < q.idx[b]; });
    const i64 row = dst.global_index(k);
    for (int n : order) {
      if (!cubic) {
        out.add(row, q.idx[n], w[n]);
        continue;
      }
      out.add(row, q.idx[n], cw[n][0]);
      if (columns) columns->push_back({cw[n][0], cw[n][1], cw[n][2], cw[n][3]});
      // Folded with the source gradients as `cdo remap` applies a bicubic file (gradients.hpp).
      // The fallback has no gradient terms: its folded link is the value alone (and its
      // corners' neighbourhoods need not be held).
      if (folded && options.fold)
        detail::fold_link(*folded, row, q.idx[n], cw[n],
                          result < 0 ? detail::GradientStencils{} : detail::cdo_gradients(q.idx[n], nx, ny, valid_of));
    }
  }
}
}  // namespace

Links bilinear_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const BilinearWeightOptions& options) {
  Links out;
  quad_weights(src, dst, comm, options, false, "bilinear_weights", out, nullptr, nullptr);
  return out;
}

BicubicWeights bicubic_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const BilinearWeightOptions& options) {
  BicubicWeights out;
  quad_weights(src, dst, comm, options, true, "bicubic_weights", out.value, &out.columns, &out.links);
  return out;
}

Links bilinear_weights(const GridGen& src, const Grid& dst, MPI_Comm comm, const BilinearWeightOptions& options) {
  int p = 1, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  const Grid part = src.make(gen::block(src.size(), r, p));
  return bilinear_weights(part, dst, comm, options);
}

// ---- reduced Gaussian source grids (OASIS3-MCT's SCRIP, grid type D) ----

namespace {

// A row of a reduced grid (OASIS's latitude bin: a run of equal latitude in global index order):
// its points first..last (global indices while the rows are found; positions in the rank's
// ReducedSource once the rows it needs are fetched), its latitude, and what every rank knows of
// it without holding it: its global first index, how many of its points are unmasked, whether
// its first point is, and whether its longitudes strictly increase.
struct Row {
  i64 first, last;
  double lat;  // radians
  i64 global_first = 0, nvalid = 0;
  bool first_valid = false, increasing = true, held = false;
  double lon_first = 0, lon_last = 0;  // radians, of the first and last point (to join runs)
  i64 size() const { return last - first + 1; }
};

// A target point in radians, with the sines and cosines OASIS's distances take.
struct ReducedTarget {
  double lat, lon, sa, ca, so, co;
  ReducedTarget(double lat_deg, double lon_deg)
      : lat(cdo_lat(lat_deg)), lon(cdo_lon(lon_deg)), sa(std::sin(lat)), ca(std::cos(lat)), so(std::sin(lon)),
        co(std::cos(lon)) {}
  // OASIS's angular distance to a point given by its latitude and longitude.
  double distance(double slat, double slon) const {
    const double c = ca * std::cos(slat) * (co * std::cos(slon) + so * std::sin(slon)) + sa * std::sin(slat);
    return std::acos(std::clamp(c, -1.0, 1.0));
  }
};

// A reduced source grid as both D methods search it: every row's summary, from north to south
// (so that a grid stored south to north is searched as the same grid stored north to south), and
// the points of the rows this rank's targets need only (as OASIS's SCRIP searches them: radians,
// with their sines and cosines), stored in increasing global index so that positions sort as
// global indices do.
struct ReducedSource {
  std::vector<Row> rows;
  std::vector<double> lon, lat, cla, sla, clo, slo;
  std::vector<char> valid_;
  std::vector<i64> global_;  // per position: its global index

  bool valid(i64 a) const { return valid_[static_cast<std::size_t>(a)] != 0; }
  double L(i64 a) const { return lon[static_cast<std::size_t>(a)]; }
  i64 global(i64 a) const { return global_[static_cast<std::size_t>(a)]; }
  // OASIS's angular distance from the target to source point a (sines and cosines precomputed).
  double distance(const ReducedTarget& t, i64 a) const {
    const auto v = static_cast<std::size_t>(a);
    return std::acos(std::clamp(t.ca * cla[v] * (t.co * clo[v] + t.so * slo[v]) + t.sa * sla[v], -1.0, 1.0));
  }
  // Calls f(a) for the points of rows r0..r1 in row order (north to south), leaving out the
  // first `skip` points of row r0.
  template <class F>
  void each(std::size_t r0, std::size_t r1, const F& f, i64 skip = 0) const {
    for (std::size_t n = r0; n <= r1; ++n)
      for (i64 a = rows[n].first + (n == r0 ? skip : 0); a <= rows[n].last; ++a) f(a);
  }
  // Whether rows r0..r1 (the first `skip` points of r0 left out) have no unmasked point: the
  // nearest_valid below then searches the whole grid (known from the summaries alone).
  bool all_masked(std::size_t r0, std::size_t r1, i64 skip) const {
    i64 n = 0;
    for (std::size_t r = r0; r <= r1; ++r) n += rows[r].nvalid;
    if (skip > 0 && rows[r0].first_valid) --n;
    return n == 0;
  }
  // The nearest unmasked point of rows r0..r1 (the first `skip` points of row r0 left out), else
  // of the whole grid, the first in row order on a tie; -1 when every point is masked.
  i64 nearest_valid(const ReducedTarget& t, std::size_t r0, std::size_t r1, i64 skip) const {
    i64 best = -1;
    double bd = DBL_MAX;
    const auto nearer = [&](i64 a) {
      if (!valid(a)) return;
      const double x = distance(t, a);
      if (x < bd) bd = x, best = a;
    };
    each(r0, r1, nearer, skip);
    if (best < 0) each(0, rows.size() - 1, nearer);  // every row held: need_rows saw all_masked
    return best;
  }
};

using detail::block_owner;
using detail::block_start;

// A point as the row exchanges send it: global index times 2 plus the mask bit, then the bits
// of its longitude and latitude in degrees.
void pack_point(std::vector<i64>& out, i64 g, bool valid, double lon, double lat) {
  out.push_back(2 * g + (valid ? 1 : 0));
  out.push_back(std::bit_cast<i64>(lon));
  out.push_back(std::bit_cast<i64>(lat));
}

// Collective over comm: the rows of the reduced source, checked (the same Error on every rank):
// rows strictly ordered by latitude, at least `min_rows` of them; with `cubic_rows` (OASIS's
// 16-point search takes up to 4 points of a row around the target, wrapping at its ends), every
// row of at least 4 points with strictly increasing longitudes. Then the points of the rows that
// `need_rows(g, need)` marks (called with g.rows complete), fetched from their owners.
//
// No rank gathers the grid: the points go to a block decomposition by global index (rank r owns
// [N r / p, N (r + 1) / p), a point held by several ranks from the lowest, as the gathered grid
// took it); each owner cuts its block into runs of equal latitude, and the runs (a few per rank
// beyond the rows) are gathered and joined into the rows. Each rank then asks the owners for the
// rows its targets fall between.
template <class NeedRows>
ReducedSource reduced_source(const Grid& src, const Grid& dst, MPI_Comm comm, const char* who, const char* method,
                             std::size_t min_rows, bool cubic_rows, const NeedRows& need_rows) {
  ReducedSource g;
  int p = 1, me = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  const i64 ng = src.global_size;
  detail::agree(comm, [&] {
    src.check();
    dst.check();
    for (i64 k = 0; k < src.size(); ++k)
      if (const i64 gi = src.global_index(k); gi < 0 || gi >= ng)
        throw Error("source point index " + std::to_string(gi) + " outside the grid of " + std::to_string(ng) + " points",
                    who);
  });
  // 1. Each point to the owner of its index.
  const i64 b0 = block_start(ng, me, p), nb = block_start(ng, me + 1, p) - b0;
  std::vector<double> blon(static_cast<std::size_t>(nb)), blat(static_cast<std::size_t>(nb));
  std::vector<char> bvalid(static_cast<std::size_t>(nb), 0);
  {
    std::vector<std::vector<i64>> send(static_cast<std::size_t>(p));
    for (i64 k = 0; k < src.size(); ++k) {
      const auto u = static_cast<std::size_t>(k);
      const i64 gi = src.global_index(k);
      pack_point(send[static_cast<std::size_t>(block_owner(ng, p, gi))], gi, src.valid(k), src.lon[u], src.lat[u]);
    }
    std::vector<i64> counts;
    const std::vector<i64> got = detail::alltoallv(comm, send, counts);  // in rank order: the lowest first
    std::vector<char> seen(static_cast<std::size_t>(nb), 0);
    for (std::size_t v = 0; v + 2 < got.size(); v += 3) {
      const auto u = static_cast<std::size_t>(got[v] / 2 - b0);
      if (seen[u]) continue;
      seen[u] = 1;
      bvalid[u] = static_cast<char>(got[v] & 1);
      blon[u] = std::bit_cast<double>(got[v + 1]);
      blat[u] = std::bit_cast<double>(got[v + 2]);
    }
    detail::agree(comm, [&] {
      for (std::size_t u = 0; u < seen.size(); ++u)
        if (!seen[u])
          throw Error("source point " + std::to_string(b0 + static_cast<i64>(u)) + " is held by no rank", who,
                      "pass each rank's share of the source grid so that together they cover it");
    });
  }
  // 2. The runs of equal latitude of each block, gathered and joined into the rows.
  {
    std::vector<i64> ri;     // per run: first, last, unmasked points, first unmasked, increasing
    std::vector<double> rd;  // per run: latitude, first and last longitude
    for (i64 u = 0; u < nb; ++u) {
      const double la = cdo_lat(blat[static_cast<std::size_t>(u)]), lo = cdo_lon(blon[static_cast<std::size_t>(u)]);
      const bool v = bvalid[static_cast<std::size_t>(u)] != 0;
      if (u == 0 || la != rd[rd.size() - 3]) {
        ri.insert(ri.end(), {b0 + u, b0 + u, 0, v ? 1 : 0, 1});
        rd.insert(rd.end(), {la, lo, lo});
      } else {
        ri[ri.size() - 4] = b0 + u;
        if (!(rd.back() < lo)) ri.back() = 0;
        rd.back() = lo;
      }
      ri[ri.size() - 3] += v ? 1 : 0;
    }
    std::vector<int> displs;
    std::vector<int> counts = detail::allgather_counts(static_cast<int>(ri.size() / 5), comm, displs, who);
    const auto nruns = static_cast<std::size_t>(displs.back() + counts.back());
    std::vector<i64> all_i(5 * nruns);
    std::vector<double> all_d(3 * nruns);
    for (auto& c : counts) c *= 5;
    for (auto& d : displs) d *= 5;
    detail::check_mpi(MPI_Allgatherv(ri.data(), static_cast<int>(ri.size()), MPI_INT64_T, all_i.data(), counts.data(),
                                     displs.data(), MPI_INT64_T, comm),
                      "MPI_Allgatherv");
    for (auto& c : counts) c = c / 5 * 3;
    for (auto& d : displs) d = d / 5 * 3;
    detail::check_mpi(MPI_Allgatherv(rd.data(), static_cast<int>(rd.size()), MPI_DOUBLE, all_d.data(), counts.data(),
                                     displs.data(), MPI_DOUBLE, comm),
                      "MPI_Allgatherv");
    for (std::size_t q = 0; q < nruns; ++q) {
      const i64* x = &all_i[5 * q];
      const double* d = &all_d[3 * q];
      if (!g.rows.empty() && g.rows.back().lat == d[0]) {  // a row across a block boundary
        Row& row = g.rows.back();
        row.increasing = row.increasing && x[4] != 0 && row.lon_last < d[1];
        row.last = x[1], row.nvalid += x[2], row.lon_last = d[2];
        continue;
      }
      Row row{x[0], x[1], d[0]};
      row.global_first = x[0], row.nvalid = x[2], row.first_valid = x[3] != 0, row.increasing = x[4] != 0;
      row.lon_first = d[1], row.lon_last = d[2];
      g.rows.push_back(row);
    }
  }
  std::vector<Row>& rows = g.rows;
  if (rows.size() >= 2 && rows[0].lat < rows[1].lat) std::reverse(rows.begin(), rows.end());
  detail::agree(comm, [&] {
    if (rows.size() < min_rows) {
      std::string fix = "a reduced (D) grid for ";
      fix.append(method).append(" needs at least ").append(std::to_string(min_rows)).append(" rows");
      throw Error("the source grid " + src.name + " has " + std::to_string(rows.size()) + " row(s) of equal latitude",
                  who, fix);
    }
    for (std::size_t n = 1; n < rows.size(); ++n)
      if (!(rows[n].lat < rows[n - 1].lat))
        throw Error("the rows of the source grid " + src.name + " are not ordered by latitude: row " + std::to_string(n) +
                        " (points " + std::to_string(rows[n].first) + ".." + std::to_string(rows[n].last) +
                        ") comes after a row at the same or the other side's latitude",
                    who, "store a reduced grid row by row, from north to south or from south to north");
    if (cubic_rows)
      for (std::size_t n = 0; n < rows.size(); ++n)
        if (rows[n].last - rows[n].first < 3 || !rows[n].increasing)
          throw Error("row " + std::to_string(n) + " (points " + std::to_string(rows[n].first) + ".." +
                          std::to_string(rows[n].last) + ") of the source grid " + src.name +
                          (rows[n].increasing ? " has fewer than 4 points" : " has longitudes that do not increase"),
                      who,
                      "a reduced (D) grid for BICUBIC needs rows of at least 4 points, longitudes increasing from [0, 360)");
  });
  // 3. The rows this rank needs, asked of their owners (ranges split at block boundaries) in
  //    increasing global index, so that the answers arrive in that order.
  std::vector<char> need(rows.size(), 0);
  need_rows(static_cast<const ReducedSource&>(g), need);
  std::vector<std::size_t> wanted;
  for (std::size_t n = 0; n < rows.size(); ++n)
    if (need[n]) wanted.push_back(n);
  std::sort(wanted.begin(), wanted.end(), [&](std::size_t a, std::size_t b) { return rows[a].first < rows[b].first; });
  std::vector<std::vector<i64>> ask(static_cast<std::size_t>(p));
  for (std::size_t n : wanted)
    for (i64 a = rows[n].first; a <= rows[n].last;) {
      const int o = block_owner(ng, p, a);
      const i64 end = std::min(rows[n].last, block_start(ng, o + 1, p) - 1);
      ask[static_cast<std::size_t>(o)].insert(ask[static_cast<std::size_t>(o)].end(), {a, end});
      a = end + 1;
    }
  std::vector<i64> counts;
  const std::vector<i64> asked = detail::alltoallv(comm, ask, counts);
  ask = {};
  std::vector<std::vector<i64>> answer(static_cast<std::size_t>(p));
  std::size_t at = 0;
  for (int r = 0; r < p; ++r)
    for (i64 c = 0; c < counts[static_cast<std::size_t>(r)]; c += 2, at += 2)
      for (i64 a = asked[at]; a <= asked[at + 1]; ++a) {
        const auto u = static_cast<std::size_t>(a - b0);
        pack_point(answer[static_cast<std::size_t>(r)], a, bvalid[u] != 0, blon[u], blat[u]);
      }
  const std::vector<i64> pts = detail::alltoallv(comm, answer, counts);
  answer = {}, blon = {}, blat = {}, bvalid = {};
  const std::size_t np = pts.size() / 3;
  g.lon.resize(np), g.lat.resize(np), g.cla.resize(np), g.sla.resize(np), g.clo.resize(np), g.slo.resize(np);
  g.valid_.resize(np), g.global_.resize(np);
  for (std::size_t u = 0; u < np; ++u) {
    g.global_[u] = pts[3 * u] / 2;
    g.valid_[u] = static_cast<char>(pts[3 * u] & 1);
    g.lon[u] = cdo_lon(std::bit_cast<double>(pts[3 * u + 1]));
    g.lat[u] = cdo_lat(std::bit_cast<double>(pts[3 * u + 2]));
    g.cla[u] = std::cos(g.lat[u]), g.sla[u] = std::sin(g.lat[u]);
    g.clo[u] = std::cos(g.lon[u]), g.slo[u] = std::sin(g.lon[u]);
  }
  i64 pos = 0;  // the rows' positions: in the order they were asked, which is the answers'
  for (std::size_t n : wanted) {
    const i64 len = rows[n].size();
    rows[n].first = pos, rows[n].last = pos + len - 1, rows[n].held = true;
    pos += len;
  }
  return g;
}

// grid_search_bilin_reduced's bin for a target at latitude plat: rows lo and hi (0-based, north
// to south), and whether a quad between them is tried. The first bin, and above the first row,
// fall back on rows 0 and 1; below the last row on the last row.
struct BilinearBin {
  std::size_t lo = 0, hi = 1;
  bool quad = false;
};
BilinearBin bilinear_bin(const std::vector<Row>& rows, double plat) {
  const std::size_t nr = rows.size();
  BilinearBin b;
  if (plat >= rows[0].lat) {
  } else if (plat <= rows[nr - 1].lat) {
    b.lo = b.hi = nr - 1;
  } else {
    // The first n with lat(n) >= plat >= lat(n+1), by bisection (latitudes decrease).
    const auto m = std::partition_point(rows.begin(), rows.end(), [&](const Row& row) { return row.lat > plat; });
    const auto n = static_cast<std::size_t>(m - rows.begin()) - 1;
    b.lo = n, b.hi = n + 1;
    b.quad = n > 0;
  }
  return b;
}

// grid_search_16_points's bin for a target at latitude plat (0 above the first row, nr below the
// last; rows numbered 1..nr from the north), the (up to) 4 rows around it, north to south
// (0-based, -1: none), and the rows r0..r1 (the first `skip` points of r0 left out) of OASIS's
// nearest-neighbour search when all 16 points are masked.
struct CubicBin {
  int bin;
  int line_row[4];
  std::size_t r0, r1;
  i64 skip;
};
CubicBin bicubic_bin(const std::vector<Row>& rows, double plat) {
  const auto nr = static_cast<int>(rows.size());
  const auto lat1 = [&](int m) { return rows[static_cast<std::size_t>(m - 1)].lat; };  // 1-based
  CubicBin b{};
  int* line_row = b.line_row;
  int& bin = b.bin;
  if (plat > lat1(1)) {
    bin = 0, line_row[0] = line_row[1] = -1, line_row[2] = 0, line_row[3] = 1;
  } else if (plat > lat1(2)) {
    bin = 1, line_row[0] = -1, line_row[1] = 0, line_row[2] = 1, line_row[3] = 2;
  } else if (plat < lat1(nr)) {
    bin = nr, line_row[0] = nr - 2, line_row[1] = nr - 1, line_row[2] = line_row[3] = -1;
  } else if (plat < lat1(nr - 1)) {
    bin = nr - 1, line_row[0] = nr - 3, line_row[1] = nr - 2, line_row[2] = nr - 1, line_row[3] = -1;
  } else {
    int lo = 2, hi = nr - 1;  // OASIS's bisection, as it is (a latitude on a row goes north)
    while (lo != hi - 1) {
      const int mid = (hi - lo) / 2 + lo;
      if (plat <= lat1(lo) && plat > lat1(mid)) hi = mid;
      else lo = mid;
    }
    bin = lo;
    for (int m = 0; m < 4; ++m) line_row[m] = bin - 2 + m;
  }
  b.r0 = static_cast<std::size_t>(std::max(bin - 2, 0)), b.r1 = static_cast<std::size_t>(bin + 1);
  b.skip = bin >= 3 ? 1 : 0;
  if (bin <= 1) b.r0 = 0, b.r1 = 2, b.skip = 0;
  if (bin >= nr - 1) b.r0 = static_cast<std::size_t>(nr - 3), b.r1 = static_cast<std::size_t>(nr - 1), b.skip = 0;
  return b;
}

// Marks rows r0..r1, or every row when `all`.
void mark_rows(std::vector<char>& need, std::size_t r0, std::size_t r1, bool all) {
  if (all) std::fill(need.begin(), need.end(), 1);
  else std::fill(need.begin() + static_cast<std::ptrdiff_t>(r0), need.begin() + static_cast<std::ptrdiff_t>(r1) + 1, 1);
}

}  // namespace

Links bilinear_weights_reduced(const Grid& src, const Grid& dst, MPI_Comm comm, const ReducedBilinearOptions& options) {
  const char* who = "bilinear_weights_reduced";
  // The rows of each target's bin; every row when its 4-nearest fallback may find them all
  // masked and the nearest unmasked point of the grid is wanted.
  const auto need_rows = [&](const ReducedSource& g, std::vector<char>& need) {
    for (i64 k = 0; k < dst.size(); ++k) {
      if (!dst.valid(k)) continue;
      const BilinearBin b = bilinear_bin(g.rows, cdo_lat(dst.lat[static_cast<std::size_t>(k)]));
      mark_rows(need, b.lo, b.hi, options.nearest_fill && g.all_masked(b.lo, b.hi, 0));
    }
  };
  const ReducedSource g = reduced_source(src, dst, comm, who, "BILINEAR", 2, false, need_rows);
  const std::vector<Row>& rows = g.rows;
  Links out;
  std::string failed;  // a target where SCRIP's iteration did not converge
  for (i64 k = 0; k < dst.size() && failed.empty(); ++k) {
    if (!dst.valid(k)) continue;
    const auto ku = static_cast<std::size_t>(k);
    const ReducedTarget t(dst.lat[ku], dst.lon[ku]);
    const double plat = t.lat, plon = t.lon;
    const BilinearBin bin = bilinear_bin(rows, plat);
    const std::size_t lo_row = bin.lo, hi_row = bin.hi;
    bool quad = bin.quad;
    i64 c[4] = {0, 0, 0, 0};
    if (quad) {
      const Row &up = rows[lo_row], &dn = rows[hi_row];
      const auto L = [&](i64 a) { return g.L(a); };
      // In a row of strictly increasing longitudes the first point of OASIS's scan is found by
      // bisection; otherwise the row is scanned as OASIS does.
      const auto first_geq = [&](const Row& row) {
        if (!row.increasing) return i64{-1};
        const auto b = g.lon.begin() + row.first, e = g.lon.begin() + row.last + 1;
        return static_cast<i64>(std::lower_bound(b, e, plon) - g.lon.begin());
      };
      i64 a1 = up.last, a2 = up.first, a3 = dn.last, a4 = dn.first;
      if (!(plon <= L(up.first) || plon > L(up.last))) {
        if (const i64 f = first_geq(up); f > up.first) {
          a1 = f - 1, a2 = f;
        } else {
          for (i64 a = up.first; a <= up.last - 1; ++a)
            if (plon > L(a) && plon <= L(a + 1)) {
              a1 = a, a2 = a + 1;
              break;
            }
        }
      }
      if (!(plon <= L(dn.first) || plon >= L(dn.last))) {
        if (const i64 f = first_geq(dn); f > dn.first) {
          a3 = f - 1, a4 = f;
        } else {
          for (i64 a = dn.first; a < dn.last; ++a)
            if (plon >= L(a) && plon <= L(a + 1)) {
              a3 = a, a4 = a + 1;
              break;
            }
        }
      }
      c[0] = a3, c[1] = a4, c[2] = a2, c[3] = a1;  // SW, SE, NE, NW
      for (i64 a : c)
        if (!g.valid(a)) quad = false;
    }
    double w[4] = {0, 0, 0, 0};
    int nlinks = 4;
    if (quad) {
      Quad q{};
      for (int m = 0; m < 4; ++m) {
        q.idx[m] = c[m];
        q.lon[m] = g.lon[static_cast<std::size_t>(c[m])];
        q.lat[m] = g.lat[static_cast<std::size_t>(c[m])];
      }
      const auto [x, y] = find_weights(plon, plat, q);
      if (x == -1.0 && y == -1.0) {
        failed = "target point " + std::to_string(dst.global_index(k)) + " (lon " + std::to_string(dst.lon[ku]) +
                 ", lat " + std::to_string(dst.lat[ku]) + ")";
        break;
      }
      w[0] = (1.0 - x) * (1.0 - y), w[1] = x * (1.0 - y), w[2] = x * y, w[3] = (1.0 - x) * y;
    } else {
      // remap_bi's fallback: the 4 nearest of the rows' points (in increasing index, a later
      // one only when strictly nearer), 1/(d + tiny) over the four, masked ones then dropped.
      // (Points are visited row by row from north to south, so that a grid stored south to north
      // breaks ties as the same grid stored north to south.)
      double d[4] = {DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX};
      c[0] = c[1] = c[2] = c[3] = -1;
      g.each(lo_row, hi_row, [&](i64 a) {
        const double x = g.distance(t, a);
        if (!(x < d[3])) return;
        int at = 0;
        while (!(x < d[at])) ++at;
        for (int m = 3; m > at; --m) d[m] = d[m - 1], c[m] = c[m - 1];
        d[at] = x, c[at] = a;
      });
      double total = 0;
      for (int m = 0; m < 4; ++m) total += w[m] = c[m] < 0 ? 0.0 : 1.0 / (d[m] + 1e-14);
      int count = 0;
      for (int m = 0; m < 4; ++m) {
        w[m] /= total;
        if (c[m] < 0 || !g.valid(c[m])) w[m] = 0.0;
        else ++count;
      }
      if (count > 0) {
        const double sum = w[0] + w[1] + w[2] + w[3];
        for (double& x : w) x /= sum;
      } else if (options.nearest_fill) {
        const i64 best = g.nearest_valid(t, lo_row, hi_row, 0);
        if (best < 0) continue;
        c[0] = best, w[0] = 1.0, nlinks = 1;
      } else {
        continue;
      }
    }
    int order[4] = {0, 1, 2, 3};
    std::sort(order, order + nlinks, [&](int a, int b) { return c[a] < c[b]; });
    const i64 row = dst.global_index(k);
    for (int m = 0; m < nlinks; ++m)
      if (c[order[m]] >= 0) out.add(row, g.global(c[order[m]]), w[order[m]]);
  }
  detail::agree(comm, [&] {
    if (!failed.empty())
      throw Error("SCRIP's bilinear iteration did not converge for " + failed + " (OASIS stops there too)", who,
                  "check the source grid's rows (longitudes increasing within each row)");
  });
  return out;
}

// ---- bicubic from a reduced Gaussian grid (OASIS3-MCT's SCRIP remap_bicubic_reduced) ----

namespace {

// OASIS's calcul_wght_2, calcul_wght_3 and calcul_wght_irreg: the weights at p of the line,
// parabola and cubic through the points x (Lagrange's polynomials), in OASIS's own arithmetic
// (its coefficients from differences of 1/x^k, a point at x = 0 on a branch of its own), so that
// the weights are OASIS's to the last bits rather than the same polynomial rounded otherwise.
void line_weights(const double (&x)[2], double p, double (&w)[2]) {
  double a0, a1, b0, b1;
  if (x[0] != 0 && x[1] != 0) {
    b0 = 1 / (1 - x[0] / x[1]);
    b1 = -1 / (x[1] / x[0] - 1);
    a0 = 1 / x[0] - b0 / x[0];
    a1 = -b1 / x[0];
  } else if (x[0] == 0) {
    b0 = 1, b1 = 0, a0 = -1 / x[1], a1 = 1 / x[1];
  } else {
    b0 = 0, b1 = 1, a0 = 1 / x[0], a1 = -1 / x[0];
  }
  w[0] = a0 * p + b0;
  w[1] = a1 * p + b1;
}

void parabola_weights(const double (&x)[3], double p, double (&w)[3]) {
  double a[3], b[3], c[3];
  const auto q = [](double v) { return 1 / (v * v); };  // 1/x**2
  if (x[0] != 0 && x[1] != 0 && x[2] != 0) {
    const double t1 = 1 / x[0] - 1 / x[1], t2 = q(x[0]) - q(x[1]), t3 = 1 / x[0] - 1 / x[2], t4 = q(x[0]) - q(x[2]);
    const double den = t2 / t1 - t4 / t3;
    c[0] = (q(x[0]) / t1 - q(x[0]) / t3) / den;
    c[1] = -q(x[1]) / t1 / den;
    c[2] = q(x[2]) / t3 / den;
    b[0] = q(x[0]) / t1 - c[0] * t2 / t1;
    b[1] = -q(x[1]) / t1 - c[1] * t2 / t1;
    b[2] = -(c[2] * t2 / t1);
    a[0] = q(x[0]) - b[0] / x[0] - c[0] / (x[0] * x[0]);
    a[1] = -b[1] / x[0] - c[1] / (x[0] * x[0]);
    a[2] = -b[2] / x[0] - c[2] / (x[0] * x[0]);
  } else {
    // The point at 0 (z) gives the constant; the polynomial through the other two (u, v, in
    // order) is solved in 1/u, 1/v.
    const int z = x[0] == 0 ? 0 : x[1] == 0 ? 1 : 2;
    const int u = z == 0 ? 1 : 0, v = z == 2 ? 1 : 2;
    const double den = 1 / x[u] - 1 / x[v];
    c[0] = c[1] = c[2] = 0, c[z] = 1;
    b[z] = (-q(x[u]) + q(x[v])) / den;
    b[u] = q(x[u]) / den;
    b[v] = -q(x[v]) / den;
    a[z] = -q(x[u]) - b[z] / x[u];
    a[u] = q(x[u]) - b[u] / x[u];
    a[v] = -b[v] / x[u];
  }
  for (int i = 0; i < 3; ++i) w[i] = a[i] * (p * p) + b[i] * p + c[i];
}

void cubic_weights(const double (&x)[4], double p, double (&w)[4]) {
  double a[4], b[4], c[4], d[4];
  const auto r2 = [](double v) { return 1 / (v * v); };      // 1/x**2
  const auto r3 = [](double v) { return 1 / (v * v * v); };  // 1/x**3
  const auto c3 = [](double v) { return v * v * v; };        // x**3
  if (x[0] != 0 && x[1] != 0 && x[2] != 0 && x[3] != 0) {
    const double t1 = 1 / x[0] - 1 / x[1], t2 = r2(x[0]) - r2(x[1]), t3 = r3(x[0]) - r3(x[1]);
    const double t4 = 1 / x[0] - 1 / x[2], t5 = r2(x[0]) - r2(x[2]), t6 = r3(x[0]) - r3(x[2]);
    const double t7 = 1 / x[0] - 1 / x[3], t8 = r2(x[0]) - r2(x[3]), t9 = r3(x[0]) - r3(x[3]);
    const double u1 = t2 / t1 - t5 / t4, u2 = t3 / t1 - t6 / t4, u3 = t2 / t1 - t8 / t7, u4 = t3 / t1 - t9 / t7;
    const double den = u2 / u1 - u4 / u3;
    const double k1 = (1 / (t1 * u1) - 1 / (t1 * u3)) / den, k2 = -1 / (t4 * u1) / den, k3 = 1 / (t7 * u3) / den;
    d[0] = (k1 + k2 + k3) / c3(x[0]);
    d[1] = -k1 / c3(x[1]);
    d[2] = -k2 / c3(x[2]);
    d[3] = -k3 / c3(x[3]);
    c[0] = 1 / u1 * (1 / (t1 * c3(x[0])) - 1 / (t4 * c3(x[0])) - u2 * d[0]);
    c[1] = 1 / u1 * (1 / (-t1 * c3(x[1])) - u2 * d[1]);
    c[2] = 1 / u1 * (1 / (t4 * c3(x[2])) - u2 * d[2]);
    c[3] = 1 / u1 * (-u2 * d[3]);
    b[0] = 1 / t1 / c3(x[0]) - t2 / t1 * c[0] - t3 / t1 * d[0];
    b[1] = -1 / t1 / c3(x[1]) - t2 / t1 * c[1] - t3 / t1 * d[1];
    for (int i = 2; i < 4; ++i) b[i] = -(t2 / t1 * c[i]) - t3 / t1 * d[i];
    a[0] = r3(x[0]) - 1 / x[0] * b[0] - r2(x[0]) * c[0] - r3(x[0]) * d[0];
    for (int i = 1; i < 4; ++i) a[i] = -(1 / x[0] * b[i]) - r2(x[0]) * c[i] - r3(x[0]) * d[i];
  } else {
    // The point at 0 (z) gives the constant; the other three (y, in order) a system in 1/y.
    const int z = x[0] == 0 ? 0 : x[1] == 0 ? 1 : x[2] == 0 ? 2 : 3;
    int o[3], n = 0;
    for (int i = 0; i < 4; ++i)
      if (i != z) o[n++] = i;
    const double y1 = x[o[0]], y2 = x[o[1]], y3 = x[o[2]];
    const double t1 = 1 / y1 - 1 / y2, t2 = r2(y1) - r2(y2), t3 = 1 / y1 - 1 / y3, t4 = r2(y1) - r2(y3);
    const double den = t2 / t1 - t4 / t3;
    double ay[4], by[4], cy[4];  // OASIS's a1_y..a4_y: the other three, then the point at 0
    cy[0] = (r3(y1) / t1 - r3(y1) / t3) / den;
    cy[1] = -r3(y2) / t1 / den;
    cy[2] = r3(y3) / t3 / den;
    cy[3] = (-r3(y1) / t1 + r3(y2) / t1 + r3(y1) / t3 - r3(y3) / t3) / den;
    by[0] = r3(y1) / t1 - cy[0] * t2 / t1;
    by[1] = -r3(y2) / t1 - cy[1] * t2 / t1;
    by[2] = -(cy[2] * t2 / t1);
    by[3] = -r3(y1) / t1 + r3(y2) / t1 - cy[3] * t2 / t1;
    ay[0] = r3(y1) - by[0] / y1 - cy[0] / (y1 * y1);
    ay[1] = -by[1] / y1 - cy[1] / (y1 * y1);
    ay[2] = -by[2] / y1 - cy[2] / (y1 * y1);
    ay[3] = -r3(y1) - by[3] / y1 - cy[3] / (y1 * y1);
    for (int m = 0; m < 3; ++m) a[o[m]] = ay[m], b[o[m]] = by[m], c[o[m]] = cy[m], d[o[m]] = 0;
    a[z] = ay[3], b[z] = by[3], c[z] = cy[3], d[z] = 1;
  }
  for (int i = 0; i < 4; ++i) w[i] = a[i] * c3(p) + b[i] * (p * p) + c[i] * p + d[i];
}

// The weights at p of the polynomial through the first n points of x (n = 1..4).
void poly_weights(int n, const double (&x)[4], double p, double (&w)[4]) {
  if (n == 4) {
    cubic_weights(x, p, w);
  } else if (n == 3) {
    double x3[3] = {x[0], x[1], x[2]}, w3[3];
    parabola_weights(x3, p, w3);
    std::copy(w3, w3 + 3, w);
  } else if (n == 2) {
    double x2[2] = {x[0], x[1]}, w2[2];
    line_weights(x2, p, w2);
    std::copy(w2, w2 + 2, w);
  } else if (n == 1) {
    w[0] = 1;
  }
}

}  // namespace

Links bicubic_weights_reduced(const Grid& src, const Grid& dst, MPI_Comm comm, const ReducedBicubicOptions& options) {
  const char* who = "bicubic_weights_reduced";
  // The (up to) 4 rows around each target's bin and those of OASIS's nearest-neighbour search;
  // every row when that search may find them all masked (then it searches the whole grid).
  const auto need_rows = [&](const ReducedSource& g, std::vector<char>& need) {
    for (i64 k = 0; k < dst.size(); ++k) {
      if (!dst.valid(k)) continue;
      const CubicBin b = bicubic_bin(g.rows, cdo_lat(dst.lat[static_cast<std::size_t>(k)]));
      for (int m : b.line_row)
        if (m >= 0) need[static_cast<std::size_t>(m)] = 1;
      if (options.nearest_fill) mark_rows(need, b.r0, b.r1, g.all_masked(b.r0, b.r1, b.skip));
    }
  };
  const ReducedSource g = reduced_source(src, dst, comm, who, "BICUBIC", 4, true, need_rows);
  const std::vector<Row>& rows = g.rows;
  const double pi2 = 2 * M_PI;
  Links out;
  for (i64 k = 0; k < dst.size(); ++k) {
    if (!dst.valid(k)) continue;
    const auto ku = static_cast<std::size_t>(k);
    const ReducedTarget t(dst.lat[ku], dst.lon[ku]);
    const double plat = t.lat, plon = t.lon;
    const CubicBin cb = bicubic_bin(rows, plat);
    const int* line_row = cb.line_row;
    // In each row, the 4 points around the target's longitude (2 on each side, wrapping at the
    // row's ends with the longitude shifted by 2 pi), unmasked ones only, in OASIS's order.
    int found[4] = {0, 0, 0, 0};
    i64 add[4][4];
    double slon[4][4] = {}, slat[4] = {0, 0, 0, 0};
    for (auto& line : add) std::fill(line, line + 4, i64{-1});
    for (int m = 0; m < 4; ++m) {
      if (line_row[m] < 0) continue;
      const Row& row = rows[static_cast<std::size_t>(line_row[m])];
      slat[m] = row.lat;
      const i64 lo = row.first, hi = row.last;
      std::pair<i64, double> cand[4];  // point, longitude shift
      if (plon < g.L(lo)) {
        cand[0] = {hi - 1, -pi2}, cand[1] = {hi, -pi2}, cand[2] = {lo, 0}, cand[3] = {lo + 1, 0};
      } else if (plon < g.L(lo + 1)) {
        cand[0] = {hi, -pi2}, cand[1] = {lo, 0}, cand[2] = {lo + 1, 0}, cand[3] = {lo + 2, 0};
      } else if (plon > g.L(hi)) {
        cand[0] = {hi - 1, 0}, cand[1] = {hi, 0}, cand[2] = {lo, pi2}, cand[3] = {lo + 1, pi2};
      } else if (plon > g.L(hi - 1)) {
        cand[0] = {hi - 2, 0}, cand[1] = {hi - 1, 0}, cand[2] = {hi, 0}, cand[3] = {lo, pi2};
      } else {
        // The point at or west of the target, by bisection. At the longitude of the
        // last-but-one point OASIS's 4th point is the next row's first: estuary takes the
        // row's first (its weight is 0 either way: the cubic goes through the 2nd point).
        i64 a = lo, b = hi;
        while (a != b - 1) {
          const i64 mid = (b - a) / 2 + a;
          if (plon >= g.L(a) && plon < g.L(mid)) b = mid;
          else a = mid;
        }
        for (int n = 0; n < 4; ++n) cand[n] = {a - 1 + n, 0};
        if (a + 2 > hi) cand[3] = {lo, pi2};
      }
      for (const auto& [a, shift] : cand)
        if (g.valid(a)) add[m][found[m]] = a, slon[m][found[m]] = g.L(a) + shift, ++found[m];
    }
    double w[4][4] = {};
    const int total = found[0] + found[1] + found[2] + found[3];
    const i64 row = dst.global_index(k);
    // The links of add with their weights, in increasing source index (OASIS writes 16 per
    // target, the missing ones with address 0, which estuary leaves out).
    const auto store = [&] {
      std::pair<i64, double> l[16];
      int n = 0;
      for (int m = 0; m < 4; ++m)
        for (int j = 0; j < 4; ++j)
          if (add[m][j] >= 0) l[n++] = {add[m][j], w[m][j]};
      std::sort(l, l + n, [](const auto& x, const auto& y) { return x.first < y.first; });
      for (int i = 0; i < n; ++i) out.add(row, g.global(l[i].first), l[i].second);
    };
    if (total == 0) {
      if (!options.nearest_fill) continue;  // OASIS writes 16 links of address 0
      // All 16 masked: the nearest unmasked point of OASIS's rows around the bin (the first
      // point of the northern one left out, as OASIS's address range does), else of the grid.
      const i64 a = g.nearest_valid(t, cb.r0, cb.r1, cb.skip);
      if (a < 0) continue;
      out.add(row, g.global(a), 1.0);
      continue;
    }
    if (total == 1) {
      for (int m = 0; m < 4; ++m)
        if (found[m] == 1) w[m][0] = 1;
      store();
      continue;
    }
    if (total == 2) {
      // OASIS weights the two points by their distance over the sum of both (sic: the nearer
      // one weighs less).
      double sum = 0;
      for (int m = 0; m < 4; ++m)
        for (int j = 0; j < found[m]; ++j) sum += w[m][j] = t.distance(slat[m], slon[m][j]);
      for (auto& line : w)
        for (double& x : line) x /= sum;
      store();
      continue;
    }
    // A single point in the outer rows is dropped; a single point in an inner row: the two rows
    // (or points) nearest the target, interpolated linearly across two rows of several points,
    // else weighted by 1/distance over the rows' own polynomials.
    for (int m : {0, 3})
      if (found[m] == 1) found[m] = 0, add[m][0] = -1;
    int near[2] = {3, 3};
    bool across_two = false;
    double wl[4][4] = {};
    if (found[1] == 1 || found[2] == 1) {
      double nd[2] = {DBL_MAX, DBL_MAX};
      for (int m = 0; m < 4; ++m) {
        const double d = found[m] > 1    ? std::fabs(slat[m] - plat)
                         : found[m] == 1 ? t.distance(slat[m], slon[m][0])
                                         : DBL_MAX;
        if (d < nd[0]) {
          near[1] = near[0], near[0] = m, nd[1] = nd[0], nd[0] = d;
        } else if (d < nd[1]) {
          near[1] = m, nd[1] = d;
        }
      }
      if (found[near[0]] > 1 && found[near[1]] > 1) {
        across_two = true;
      } else {
        for (int i = 0; i < 2; ++i) {
          const int m = near[i];
          if (found[m] == 0) continue;
          poly_weights(found[m], slon[m], plon, wl[m]);
          for (int j = 0; j < found[m]; ++j) wl[m][j] = found[m] == 1 ? 1 / nd[i] : wl[m][j] / nd[i];
        }
        double sum = 0;
        for (const auto& line : wl) sum += ((line[0] + line[1]) + line[2]) + line[3];
        for (int m = 0; m < 4; ++m)
          for (int j = 0; j < 4; ++j) w[m][j] = wl[m][j] / sum;
        store();
        continue;
      }
    }
    // The cubic (or lower) polynomial along each row, then across the rows.
    for (int m = 0; m < 4; ++m)
      if (found[m] >= 2) poly_weights(found[m], slon[m], plon, wl[m]);
    double wlat[4] = {0, 0, 0, 0};
    if (across_two) {
      const double x[2] = {slat[near[0]], slat[near[1]]};
      double v[2];
      line_weights(x, plat, v);
      wlat[near[0]] = v[0], wlat[near[1]] = v[1];
    } else {
      double x[4] = {0, 0, 0, 0}, v[4] = {0, 0, 0, 0};
      int n = 0;
      for (int m = 0; m < 4; ++m)
        if (found[m] != 0) x[n++] = slat[m];
      poly_weights(n, x, plat, v);
      n = 0;
      for (int m = 0; m < 4; ++m)
        if (found[m] != 0) wlat[m] = v[n++];
    }
    for (int m = 0; m < 4; ++m)
      for (int j = 0; j < 4; ++j) w[m][j] = wlat[m] * wl[m][j];
    store();
  }
  return out;
}

}  // namespace estuary
