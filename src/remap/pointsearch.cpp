// The gathered point search of the YAC-style methods and the stack (yac_weights.cpp,
// stack.cpp): every source point on every rank, CDO's nearest-neighbour order and its quad
// search; and the CDO conventions (distance, neighbour order, coordinates, SCRIP's quad test)
// that the distributed search of weightgen.cpp shares.
#include "pointsearch.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <string>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"

namespace estuary::detail {

using i64 = std::int64_t;
using sphere::unit_vector;
using sphere::Vec3;

// The distance as CDO 2.1's point search returns it: the squared chord in double, rounded to
// single precision, then its square root in double. (This is what reproduces CDO's weights to
// the last bit; the rounding moves weights by up to ~1e-8 against an all-double distance.)
double cdo_distance(double sq) { return std::sqrt(static_cast<double>(static_cast<float>(sq))); }

// CDO's neighbour order (knnWeightsType::distance_is_less): nearer by more than 1e-12, or
// equally near within 1e-12 and of a smaller index.
bool distance_is_less(double d, double dx, i64 a, i64 ax) {
  return d + kCmpTol < dx || (a < ax && std::fabs(d - dx) < kCmpTol);
}

// CDO's coordinates: degrees to radians, longitudes into [0, 2 pi], latitudes clamped.
double cdo_lon(double deg) {
  double r = deg * (M_PI / 180.0);
  if (r > kPi2) r -= kPi2;
  if (r < 0.0) r += kPi2;
  return r;
}
double cdo_lat(double deg) { return std::clamp(deg * (M_PI / 180.0), -kPih, kPih); }

// SCRIP's test: do the cross products of each side with the vector to the point all have one
// sign (zero within 1e-20 fitting either)? Brings lons into one 2 pi interval, as CDO does.
bool quad_cross_products(double plon, double plat, double (&lons)[4], const double (&lats)[4]) {
  double v = lons[0] - plon;
  if (v > kPi) lons[0] -= kPi2;
  else if (v < -kPi) lons[0] += kPi2;
  for (int n = 1; n < 4; ++n) {
    v = lons[n] - lons[0];
    if (v > kPi) lons[n] -= kPi2;
    else if (v < -kPi) lons[n] += kPi2;
  }
  constexpr double kCrossEps = 1e-20;
  int scross[4] = {0, 0, 0, 0}, last = 0, n = 0;
  for (n = 0; n < 4; ++n) {
    const int next = (n + 1) % 4;
    const double v1lat = lats[next] - lats[n];
    double v1lon = lons[next] - lons[n];
    const double v2lat = plat - lats[n];
    double v2lon = plon - lons[n];
    if (v1lon > 3.0 * kPih) v1lon -= kPi2;
    else if (v1lon < -3.0 * kPih) v1lon += kPi2;
    if (v2lon > 3.0 * kPih) v2lon -= kPi2;
    else if (v2lon < -3.0 * kPih) v2lon += kPi2;
    const double cross = v1lon * v2lat - v2lon * v1lat;
    scross[n] = cross < -kCrossEps ? -1 : cross > kCrossEps ? 1 : 0;
    if (n == 0) last = scross[n];
    if ((scross[n] < 0 && last > 0) || (scross[n] > 0 && last < 0)) break;
    last = scross[n];
  }
  if (n < 4) return false;
  return (scross[0] >= 0 && scross[1] >= 0 && scross[2] >= 0 && scross[3] >= 0) ||
         (scross[0] <= 0 && scross[1] <= 0 && scross[2] <= 0 && scross[3] <= 0);
}

// The nn nearest points of `tree` to q in CDO's order (addr[i] INT64_MAX, dist[i] DBL_MAX when
// the tree has fewer): CDO's distance, ties within 1e-12 in increasing index.
void nearest(const KdTree& tree, const std::vector<Vec3>& xyz, const Vec3& q, std::size_t nn, std::vector<i64>& cand,
             std::vector<i64>& addr, std::vector<double>& dist) {
  // Everything that may be among the nn nearest under CDO's tolerant order.
  // (float rounding of the squared distance moves it by at most 2^-24 relative.)
  const double dn = std::sqrt(tree.kth_sq_dist(q, nn)) * (1 + 1e-6) + 2 * kCmpTol;
  cand.clear();
  tree.within(q, dn * dn, cand);
  std::sort(cand.begin(), cand.end());
  addr.assign(nn, INT64_MAX);
  dist.assign(nn, DBL_MAX);
  for (i64 c : cand)  // in increasing index
    store_nearest(c, cdo_distance(sq_dist(q, xyz[static_cast<std::size_t>(c)])), [](i64 a) { return a; }, addr, dist);
}

// Every source point, gathered from the ranks' shares: unit vectors and mask by global index.
SourcePoints gather_source(const Grid& src, MPI_Comm comm, const char* where) {
  const int n = static_cast<int>(src.size());
  std::vector<int> displs;
  std::vector<int> counts = detail::allgather_counts(n, comm, displs, where);
  const i64 total = static_cast<i64>(displs.back()) + counts.back();
  if (total > INT32_MAX / 2) throw Error("source grid too large to gather", where);
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
  s.lon.assign(ng, 0.0);
  s.lat.assign(ng, 0.0);
  std::vector<char> seen(ng, 0);
  for (std::size_t k = 0; k < all_key.size(); ++k) {
    const i64 g = all_key[k] / 2;
    if (g < 0 || g >= src.global_size)
      throw Error("source point index " + std::to_string(g) + " outside the grid of " +
                      std::to_string(src.global_size) + " points",
                  where);
    const auto u = static_cast<std::size_t>(g);
    if (seen[u]) continue;  // a repeat (halo): the first holder's copy
    seen[u] = 1;
    s.xyz[u] = unit_vector(all_ll[2 * k], all_ll[2 * k + 1]);
    s.valid[u] = static_cast<char>(all_key[k] & 1);
    s.lon[u] = all_ll[2 * k];
    s.lat[u] = all_ll[2 * k + 1];
  }
  for (std::size_t u = 0; u < ng; ++u)
    if (!seen[u])
      throw Error("source point " + std::to_string(u) + " is held by no rank", where,
                  "pass each rank's share of the source grid so that together they cover it");
  return s;
}

// CDO's gridIsCircular for the first row: one more step of the first longitude increment
// after the last point comes back to the first point.
bool is_cyclic(double lon0, double lon1, double lon_last, i64 nx) {
  if (nx < 2) return false;
  const double d1 = lon1 - lon0;
  double span = lon_last - lon0 + d1;
  span = std::fmod(std::fabs(span), 360.0);
  return std::fabs(d1) > 0 && std::min(span, 360.0 - span) < 1e-3 * std::fabs(d1);
}


namespace {
// CDI's way of bringing a row's first longitude a and last b into one turn before comparing.
void cdi_align(double& a, double& b) {
  if (a < 1 && b > 300) a += 360;
  if (b < 1 && a > 300) b += 360;
  if (a < -179 && b > 120) a += 360;
  if (b < -179 && a > 120) b += 360;
  if (std::fabs(b - a) > 180) a += 360;
}

// CDI's grid_check_cyclic for a curvilinear grid, one row's part: the step from the last centre
// back towards the first is about one longitude increment (by the first two centres).
bool row_closes(double val1, double val2, double valn) {
  const double xinc = std::fabs(val2 - val1);
  cdi_align(val1, valn);
  const double x0 = valn + std::copysign(xinc, val1 - valn);
  return std::fabs(x0 - val1) < 0.5 * xinc;
}

// The same for the corners: some corner of the row's first cell and some of its last coincide
// (within 0.001 degrees).
bool cells_touch(const double* first, const double* last, int nc) {
  for (int k1 = 0; k1 < nc; ++k1)
    for (int k2 = 0; k2 < nc; ++k2) {
      double val1 = first[k1], val2 = last[k2];
      cdi_align(val1, val2);
      if (std::fabs(val1 - val2) < 0.001) return true;
    }
  return false;
}
}  // namespace

bool cdo_is_cyclic(const Grid& src, MPI_Comm comm) {
  if (src.dims.size() != 2) return false;
  const i64 nx = src.dims[0], ny = src.dims[1];
  if (nx < 2 || ny < 1) return false;
  // Per row: the longitudes of centres 0, 1 and nx-1, then the corner longitudes of cells 0 and
  // nx-1; then the latitudes of the four corner points of the grid. Each from a rank holding it
  // (MPI_MAX over -inf: a repeated point has the same value everywhere).
  const int nc = src.ncorner;
  int nc_max = nc;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &nc_max, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  const std::size_t per_row = 3 + 2 * static_cast<std::size_t>(nc_max), rows = static_cast<std::size_t>(ny);
  std::vector<double> v(rows * per_row + 4, -HUGE_VAL);
  const i64 corner_pts[4] = {0, nx - 1, (ny - 1) * nx, ny * nx - 1};
  for (i64 k = 0; k < src.size(); ++k) {
    const i64 g = src.global_index(k), j = g / nx, i = g - j * nx;
    const auto u = static_cast<std::size_t>(k);
    double* row = v.data() + static_cast<std::size_t>(j) * per_row;
    if (i == 0) row[0] = src.lon[u];
    if (i == 1) row[1] = src.lon[u];
    if (i == nx - 1) row[2] = src.lon[u];
    if (nc == nc_max && nc > 0 && (i == 0 || i == nx - 1))
      for (int c = 0; c < nc; ++c) row[3 + (i == 0 ? 0 : nc) + c] = src.corner_lon[u * static_cast<std::size_t>(nc) + c];
    for (int c = 0; c < 4; ++c)
      if (g == corner_pts[c]) v[rows * per_row + static_cast<std::size_t>(c)] = src.lat[u];
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, comm),
            "MPI_Allreduce");
  const auto held = [](double x) { return x > -HUGE_VAL; };
  if (src.kind == GridKind::lonlat || src.kind == GridKind::gaussian) {  // CDI's lon-lat test, first row
    double x1 = v[0], x2 = v[1], xn = v[2];
    if (!held(x1) || !held(x2) || !held(xn)) return false;
    if (x2 < x1) x2 += 360;
    if (xn < x1) xn += 360;
    if (x1 == xn) return false;
    double xinc = x2 - x1;
    if (xinc == 0) xinc = (xn - x1) / static_cast<double>(nx - 1);
    return std::fabs(xn + xinc - 360 - x1) < 0.01 * xinc;
  }
  // Curvilinear. Not when the grid runs along latitude in i (CDI's lcheck: the latitude changes
  // more along the first and last rows than along the first and last columns).
  const double* lat = v.data() + rows * per_row;
  if (!held(lat[0]) || !held(lat[1]) || !held(lat[2]) || !held(lat[3])) return false;
  if (std::fabs(lat[0] - lat[1]) > std::fabs(lat[0] - lat[2]) && std::fabs(lat[2] - lat[3]) > std::fabs(lat[1] - lat[3]))
    return false;
  std::size_t closing = 0;
  for (std::size_t j = 0; j < rows; ++j) {
    const double* row = v.data() + j * per_row;
    if (held(row[0]) && held(row[1]) && held(row[2]) && row_closes(row[0], row[1], row[2])) ++closing;
  }
  bool cyclic = closing > rows / 2;
  if (nc_max > 0) {  // with corners, CDI decides by them alone: every row's end cells touch
    cyclic = true;
    for (std::size_t j = 0; j < rows && cyclic; ++j) {
      const double* row = v.data() + j * per_row + 3;
      if (!held(row[0]) || !held(row[nc_max])) continue;  // a row no rank holds whole: no evidence
      cyclic = cells_touch(row, row + nc_max, nc_max);
    }
  }
  return cyclic;
}

QuadSearch::QuadSearch(const Grid& src, const Grid& dst, MPI_Comm comm, const char* where)
    : nx_(src.dims.at(0)), ny_(src.dims.at(1)) {
  agree(comm, [&] { s_ = gather_near(src, queries_of(dst), 1, false, comm, where); });
  tree_ = std::make_unique<KdTree>(tree_of(s_, false));
  // The 3 x 3 block around each destination point's nearest centre (every quad find tries has
  // its corners there), and the three points the cyclic test reads.
  const i64 ng = src.global_size;
  std::vector<i64> cand, addr, need{0, std::min<i64>(1, ng - 1), nx_ - 1};
  std::vector<double> dist;
  for (i64 k = 0; k < dst.size() && ng > 0; ++k) {
    if (!dst.valid(k)) continue;
    const auto u = static_cast<std::size_t>(k);
    nearest(*tree_, s_, unit_vector(dst.lon[u], dst.lat[u]), 1, cand, addr, dist);
    const i64 g = s_.index[static_cast<std::size_t>(addr[0])], j = g / nx_, i = g - j * nx_;
    for (i64 jj = std::max<i64>(0, j - 1); jj <= std::min(ny_ - 1, j + 1); ++jj)
      for (i64 di = -1; di <= 1; ++di) need.push_back(jj * nx_ + ((i + di) % nx_ + nx_) % nx_);
  }
  agree(comm, [&] { fetch_by_index(src, s_, need, comm); });
  s_.reindex(nx_, ny_);
  cyclic_ = cdo_is_cyclic(src, comm);
}

QuadSearch::~QuadSearch() = default;

bool QuadSearch::find(double lon_deg, double lat_deg, i64 (&idx)[4], double (&qlon)[4], double (&qlat)[4],
                      std::vector<i64>& cand, std::vector<i64>& addr, std::vector<double>& dist) const {
  if (tree_->empty()) return false;
  const double plon = cdo_lon(lon_deg), plat = cdo_lat(lat_deg);
  // point_in_quad: the quad with lower-left corner (i, j), if it holds the point.
  auto point_in_quad = [&](i64 i, i64 j) {
    const i64 ip1 = i < nx_ - 1 ? i + 1 : cyclic_ ? 0 : i;
    const i64 jp1 = j < ny_ - 1 ? j + 1 : j;
    if (i == ip1 || j == jp1) return false;
    idx[0] = j * nx_ + i;
    idx[1] = j * nx_ + ip1;
    idx[2] = jp1 * nx_ + ip1;
    idx[3] = jp1 * nx_ + i;
    for (int k = 0; k < 4; ++k) {
      const std::size_t at = s_.position(idx[k]);
      qlon[k] = cdo_lon(s_.lon[at]);
      qlat[k] = cdo_lat(s_.lat[at]);
    }
    return quad_cross_products(plon, plat, qlon, qlat);
  };
  // gridSearchSquareCurv2d: the quads around the nearest source point.
  nearest(*tree_, s_, unit_vector(lon_deg, lat_deg), 1, cand, addr, dist);
  const i64 g = s_.index[static_cast<std::size_t>(addr[0])];
  for (int kk = 0; kk < 4; ++kk) {
    i64 j = g / nx_, i = g - j * nx_;
    if (kk == 0 || kk == 2) i = i > 0 ? i - 1 : cyclic_ ? nx_ - 1 : 0;
    if (kk == 0 || kk == 1) j = j > 0 ? j - 1 : 0;
    if (point_in_quad(i, j)) return true;
  }
  return false;
}

}  // namespace estuary::detail
