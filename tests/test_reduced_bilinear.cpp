// Bilinear weights from a reduced Gaussian source (OASIS3-MCT's SCRIP for grid type D,
// "BILINEAR D SCALAR LATITUDE"), against a serial transcription of OASIS's algorithm: the
// latitude bins of grids.f90 (bin_addr1_r, bin_lats_r, 1-based addresses, rows stored from north
// to south as OASIS expects them), grid_search_bilin_reduced and remap_bi (Newton iteration,
// the 4-nearest fallback with masked points dropped, the nearest unmasked neighbour):
//  - the same links and weights (1e-12) on a land-masked reduced grid stored north to south;
//  - a grid stored south to north gives the links of the same grid stored north to south;
//  - bit-identical on any number of ranks and decompositions.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <sstream>

#include "estuary/error.hpp"
#include "estuary/weightgen.hpp"
#include "link_test_util.hpp"
#include "remap_test_util.hpp"

using estuary::Grid;
using estuary::GridGen;
using ltest::Link;
using rtest::i64;

namespace {

constexpr double kPi = 3.14159265358979323846, kD = kPi / 180;

// `g` (whole) with its rows in the reverse order (each row's points kept in order).
Grid rows_reversed(const Grid& g, std::vector<i64>& perm) {
  std::vector<std::pair<i64, i64>> rows;  // [first, last]
  for (i64 k = 0; k < g.size(); ++k) {
    if (k == 0 || g.lat[k] != g.lat[k - 1]) rows.push_back({k, k});
    rows.back().second = k;
  }
  Grid r = g;
  r.lon.clear(), r.lat.clear(), r.mask.clear(), perm.clear();
  for (auto it = rows.rbegin(); it != rows.rend(); ++it)
    for (i64 k = it->first; k <= it->second; ++k) {
      r.lon.push_back(g.lon[k]), r.lat.push_back(g.lat[k]), r.mask.push_back(g.mask.empty() ? 1 : g.mask[k]);
      perm.push_back(k);  // perm[new index] = old index
    }
  r.ncorner = 0, r.corner_lon.clear(), r.corner_lat.clear(), r.area.clear();
  return r;
}

// The serial transcription of OASIS's SCRIP (1-based arrays as in Fortran; index 0 unused).
std::vector<Link> oasis_reference(const Grid& s, const Grid& t, bool nnei, int* quads = nullptr) {
  const int n1 = static_cast<int>(s.size());
  std::vector<double> lat(n1 + 1), lon(n1 + 1);
  std::vector<bool> mask(n1 + 1);
  for (int a = 1; a <= n1; ++a) {
    lat[a] = std::clamp(s.lat[a - 1] * kD, -kPi / 2, kPi / 2);
    lon[a] = s.lon[a - 1] * kD;
    if (lon[a] > 2 * kPi) lon[a] -= 2 * kPi;
    if (lon[a] < 0) lon[a] += 2 * kPi;
    mask[a] = s.valid(a - 1);
  }
  // grids.f90, case ('REDUCED').
  int nred = 1;
  for (int e = 1; e <= n1 - 1; ++e)
    if (lat[e + 1] != lat[e]) ++nred;
  std::vector<std::array<int, 5>> addr(nred + 2, {0, 0, 0, 0, 0});
  std::vector<std::array<double, 3>> blat(nred + 2, {0, 0, 0});
  addr[1][1] = 0;
  blat[1][1] = lat[1];
  nred = 1;
  for (int e = 1; e <= n1 - 1; ++e) {
    if (lat[e + 1] == lat[e]) {
      addr[nred][2] = e + 1;
    } else {
      addr[nred + 1][1] = e + 1;
      blat[nred][2] = lat[e + 1];
      blat[nred + 1][1] = blat[nred][2];
      ++nred;
    }
  }
  for (int e = 1; e <= nred - 1; ++e) addr[e][3] = addr[e + 1][1], addr[e][4] = addr[e + 1][2];
  addr[nred][3] = addr[nred - 1][1], addr[nred][4] = addr[nred - 1][2];
  const int nx = n1;  // grid1_dims(1) of a D grid (n, 1)

  std::vector<Link> out;
  for (i64 k = 0; k < t.size(); ++k) {
    if (!t.valid(k)) continue;
    const double plat = std::clamp(t.lat[k] * kD, -kPi / 2, kPi / 2);
    double plon = t.lon[k] * kD;
    if (plon > 2 * kPi) plon -= 2 * kPi;
    if (plon < 0) plon += 2 * kPi;
    // grid_search_bilin_reduced
    int src_add[5] = {0, 0, 0, 0, 0}, min_add = n1 + 1, max_add = 1, inter_add = 0;
    double slat[5] = {0}, slon[5] = {0};
    if (plat >= blat[1][1]) {
      min_add = 0, max_add = addr[1][4], inter_add = addr[1][3];
    } else if (plat <= blat[nred][1]) {
      max_add = nx + 1, min_add = addr[nred][1], inter_add = addr[nred][3];
    } else {
      for (int n = 1; n <= nred; ++n)
        if (plat <= blat[n][1] && plat >= blat[n][2]) {
          min_add = addr[n][1], max_add = addr[n][4], inter_add = addr[n][3];
          break;
        }
    }
    if (min_add != 0 && max_add != nx + 1) {
      if (plon <= lon[min_add] || plon > lon[inter_add - 1]) {
        src_add[1] = inter_add - 1, src_add[2] = min_add;
      } else {
        for (int a = min_add; a <= inter_add - 2; ++a)
          if (plon > lon[a] && plon <= lon[a + 1]) {
            src_add[1] = a, src_add[2] = a + 1;
            break;
          }
      }
      if (plon <= lon[inter_add] || plon >= lon[max_add]) {
        src_add[3] = max_add, src_add[4] = inter_add;
      } else {
        for (int a = inter_add; a <= max_add; ++a)
          if (plon >= lon[a] && plon <= lon[a + 1]) {
            src_add[3] = a, src_add[4] = a + 1;
            break;
          }
      }
      const int b[5] = {0, src_add[1], src_add[2], src_add[3], src_add[4]};
      src_add[1] = b[3], src_add[2] = b[4], src_add[3] = b[2], src_add[4] = b[1];
      for (int m = 1; m <= 4; ++m) slat[m] = lat[src_add[m]], slon[m] = lon[src_add[m]];
      int masked = 0;
      for (int m = 1; m <= 4; ++m) masked += mask[src_add[m]] ? 0 : 1;
      if (masked > 0) src_add[1] = -src_add[1];
    } else {
      src_add[1] = -1;
    }
    double w[5] = {0};
    if (src_add[1] > 0) {
      // remap_bi's Newton iteration
      const double dth1 = slat[2] - slat[1], dth2 = slat[4] - slat[1], dth3 = slat[3] - slat[2] - dth2;
      double dph1 = slon[2] - slon[1], dph2 = slon[4] - slon[1], dph3 = slon[3] - slon[2];
      for (double* d : {&dph1, &dph2, &dph3}) {
        if (*d > 1.5 * kPi) *d -= 2 * kPi;
        if (*d < -1.5 * kPi) *d += 2 * kPi;
      }
      dph3 -= dph2;
      double ig = 0.5, jg = 0.5;
      int iter = 1;
      for (; iter <= 100; ++iter) {
        const double dthp = plat - slat[1] - dth1 * ig - dth2 * jg - dth3 * ig * jg;
        double dphp = plon - slon[1];
        if (dphp > 1.5 * kPi) dphp -= 2 * kPi;
        if (dphp < -1.5 * kPi) dphp += 2 * kPi;
        dphp = dphp - dph1 * ig - dph2 * jg - dph3 * ig * jg;
        const double m1 = dth1 + dth3 * jg, m2 = dth2 + dth3 * ig, m3 = dph1 + dph3 * jg, m4 = dph2 + dph3 * ig;
        const double det = m1 * m4 - m2 * m3;
        const double di = (dthp * m4 - m2 * dphp) / det, dj = (m1 * dphp - dthp * m3) / det;
        if (std::fabs(di) < 1e-10 && std::fabs(dj) < 1e-10) break;
        ig += di, jg += dj;
      }
      EXPECT_LE(iter, 100) << "the reference did not converge at target " << k;
      w[1] = (1 - ig) * (1 - jg), w[2] = ig * (1 - jg), w[3] = ig * jg, w[4] = (1 - ig) * jg;
      for (int m = 1; m <= 4; ++m) out.push_back({t.global_index(k), src_add[m] - 1, w[m]});
      if (quads) ++*quads;
      continue;
    }
    // the fallback
    if (min_add == 0) min_add = 1;
    if (max_add > n1) max_add = n1;
    const double cd = std::cos(plat), sd = std::sin(plat), co = std::cos(plon), so = std::sin(plon);
    auto dist = [&](int a) {
      return std::acos(std::clamp(cd * std::cos(lat[a]) * (co * std::cos(lon[a]) + so * std::sin(lon[a])) + sd * std::sin(lat[a]), -1.0, 1.0));
    };
    int add[5] = {0, 0, 0, 0, 0};
    double sl[5] = {0, 1e300, 1e300, 1e300, 1e300}, dmin = 1e300;
    for (int a = min_add; a <= max_add; ++a) {
      const double d = dist(a);
      if (d < dmin)
        for (int n = 1; n <= 4; ++n)
          if (d < sl[n]) {
            for (int i = 4; i >= n + 1; --i) add[i] = add[i - 1], sl[i] = sl[i - 1];
            add[n] = a, sl[n] = d, dmin = sl[4];
            break;
          }
    }
    double sum = 0;
    for (int n = 1; n <= 4; ++n) sum += sl[n] = 1 / (sl[n] + 1e-14);
    int count = 0;
    for (int n = 1; n <= 4; ++n) {
      sl[n] /= sum;
      if (mask[add[n]]) ++count;
      else sl[n] = 0;
    }
    if (count > 0) {
      const double tot = sl[1] + sl[2] + sl[3] + sl[4];
      for (int n = 1; n <= 4; ++n) out.push_back({t.global_index(k), add[n] - 1, sl[n] / tot});
    } else if (nnei) {
      int best = 0;
      double bd = 1e300;
      for (int a = min_add; a <= max_add; ++a)
        if (mask[a] && dist(a) < bd) bd = dist(a), best = a;
      if (best == 0)
        for (int a = 1; a <= n1; ++a)
          if (mask[a] && dist(a) < bd) bd = dist(a), best = a;
      if (best > 0) out.push_back({t.global_index(k), best - 1, 1.0});
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Targets: a lon-lat grid, and points on the rows, at the poles, at longitude 0 and 359.99.
Grid targets() {
  Grid t = GridGen::lonlat(23, 13).make();
  const double extra[][2] = {{0, 90}, {0, -90}, {359.99, 10}, {0, -10}, {12.5, 0}, {180, 45.5}};
  for (const auto& e : extra) t.lon.push_back(e[0]), t.lat.push_back(e[1]);
  t.ncorner = 0, t.corner_lon.clear(), t.corner_lat.clear(), t.area.clear();
  t.global_size = t.size();
  t.dims = {t.global_size};
  t.points.clear();
  return t;
}

Grid part_of(const Grid& whole, const estuary::Decomp& d) {
  Grid g = whole;
  g.points = d.to_indices();
  g.lon.clear(), g.lat.clear(), g.mask.clear();
  g.ncorner = 0, g.corner_lon.clear(), g.corner_lat.clear(), g.area.clear();
  for (i64 k : g.points) {
    g.lon.push_back(whole.lon[k]), g.lat.push_back(whole.lat[k]);
    if (!whole.mask.empty()) g.mask.push_back(whole.mask[k]);
  }
  return g;
}

}  // namespace

TEST(ReducedBilinear, MatchesOasisAndIsRankIndependent) {
  const int p = etest::world_size(), r = etest::world_rank();
  const Grid sn = GridGen::reduced_gaussian(6).with_land().make();  // south to north, with land
  std::vector<i64> perm;
  const Grid ns = rows_reversed(sn, perm);  // north to south, as OASIS expects
  const Grid t = targets();
  ASSERT_GT(std::count(ns.mask.begin(), ns.mask.end(), 0), 10);
  for (const bool nnei : {true, false}) {
    SCOPED_TRACE(nnei ? "nearest fill" : "NF");
    estuary::ReducedBilinearOptions o;
    o.nearest_fill = nnei;
    int quads = 0;
    const std::vector<Link> want = oasis_reference(ns, t, nnei, &quads);
    EXPECT_GT(quads, t.size() / 4) << "a good part of the targets must be interpolated in a quad, not by the fallback";
    ASSERT_GT(want.size(), 4u * static_cast<std::size_t>(t.size()) / 2);
    const std::vector<Link> got = ltest::gather_sorted(estuary::bilinear_weights_reduced(
        part_of(ns, estuary::gen::cyclic(ns.size(), r, p)), part_of(t, estuary::gen::block(t.size(), r, p)), MPI_COMM_WORLD, o));
    std::ostringstream why;
    EXPECT_TRUE(ltest::same_links(got, want, 1e-12, why)) << why.str();
    // Bit-identical to one rank with whole grids.
    const std::vector<Link> serial = ltest::gather_sorted(estuary::bilinear_weights_reduced(ns, t, MPI_COMM_SELF, o), MPI_COMM_SELF);
    std::ostringstream why1;
    EXPECT_TRUE(ltest::same_links(got, serial, 0, why1)) << why1.str();
    // The grid stored south to north: the same links, source indices mapped.
    std::vector<Link> mapped;
    for (const Link& l : want) mapped.push_back({l.dst, perm[static_cast<std::size_t>(l.src)], l.w});
    std::sort(mapped.begin(), mapped.end());
    const std::vector<Link> got_sn = ltest::gather_sorted(estuary::bilinear_weights_reduced(
        part_of(sn, estuary::gen::random(sn.size(), r, p, 5)), part_of(t, estuary::gen::cyclic(t.size(), r, p)), MPI_COMM_WORLD, o));
    std::ostringstream why2;
    EXPECT_TRUE(ltest::same_links(got_sn, mapped, 1e-12, why2)) << why2.str();
    // Every target's weights add up to 1.
    std::vector<double> sum(static_cast<std::size_t>(t.size()), 0.0);
    for (const Link& l : got) sum[static_cast<std::size_t>(l.dst)] += l.w;
    for (i64 k = 0; k < t.size(); ++k)
      if (sum[static_cast<std::size_t>(k)] != 0) {
        EXPECT_NEAR(sum[static_cast<std::size_t>(k)], 1.0, 1e-12) << "target " << k;
      }
  }
}

TEST(ReducedBilinear, RefusesRowsOutOfOrder) {
  const int p = etest::world_size(), r = etest::world_rank();
  Grid s = GridGen::reduced_gaussian(4).make();
  std::swap(s.lat[0], s.lat[s.lat.size() / 2]);  // a point of the first row moved to the middle
  const Grid t = targets();
  try {
    estuary::bilinear_weights_reduced(part_of(s, estuary::gen::block(s.size(), r, p)),
                                      part_of(t, estuary::gen::block(t.size(), r, p)), MPI_COMM_WORLD);
    ADD_FAILURE() << "rows out of order accepted";
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not ordered by latitude"), std::string::npos) << e.what();
  }
}
