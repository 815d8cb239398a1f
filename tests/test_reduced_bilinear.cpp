// Bilinear and bicubic weights from a reduced Gaussian source (OASIS3-MCT's SCRIP for grid type D,
// "BILINEAR D SCALAR LATITUDE", "BICUBIC D ..."), against serial transcriptions of OASIS's
// algorithms: the latitude bins of grids.f90 (bin_addr1_r, bin_lats_r, 1-based addresses, rows
// stored from north to south as OASIS expects them); grid_search_bilin_reduced and remap_bi
// (Newton iteration, the 4-nearest fallback with masked points dropped, the nearest unmasked
// neighbour); remap_bicub_reduced and grid_search_16_points (16 points in 4 rows, OASIS's cubic
// formulas and fallbacks):
//  - the same links and weights (1e-12) on a land-masked reduced grid stored north to south;
//  - a grid stored south to north gives the links of the same grid stored north to south;
//  - bit-identical on any number of ranks and decompositions;
//  - bicubic: a smooth field to the cubic's accuracy (4th order in the grid spacing).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdio>
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

// OASIS's SCRIP view of a source grid (1-based arrays as in Fortran; index 0 unused): grid1's
// centres in radians and mask, and the latitude bins of grids.f90, case ('REDUCED').
struct Scrip {
  int n1 = 0, nred = 1;
  std::vector<double> lat, lon;
  std::vector<bool> mask;
  std::vector<std::array<int, 5>> addr;     // bin_addr1_r(1:4, n)
  std::vector<std::array<double, 3>> blat;  // bin_lats_r(1:2, n)
  explicit Scrip(const Grid& s) : n1(static_cast<int>(s.size())), lat(n1 + 1), lon(n1 + 1), mask(n1 + 1) {
    for (int a = 1; a <= n1; ++a) {
      lat[a] = std::clamp(s.lat[a - 1] * kD, -kPi / 2, kPi / 2);
      lon[a] = s.lon[a - 1] * kD;
      if (lon[a] > 2 * kPi) lon[a] -= 2 * kPi;
      if (lon[a] < 0) lon[a] += 2 * kPi;
      mask[a] = s.valid(a - 1);
    }
    for (int e = 1; e <= n1 - 1; ++e)
      if (lat[e + 1] != lat[e]) ++nred;
    addr.assign(nred + 2, {0, 0, 0, 0, 0});
    blat.assign(nred + 2, {0, 0, 0});
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
  }
  // A target's latitude and longitude in radians, as grids.f90 normalises grid2.
  static void target(const Grid& t, i64 k, double& plat, double& plon) {
    plat = std::clamp(t.lat[k] * kD, -kPi / 2, kPi / 2);
    plon = t.lon[k] * kD;
    if (plon > 2 * kPi) plon -= 2 * kPi;
    if (plon < 0) plon += 2 * kPi;
  }
};

// The serial transcription of OASIS's bilinear for a D grid (remap_bi, grid_search_bilin_reduced).
std::vector<Link> oasis_reference(const Grid& s, const Grid& t, bool nnei, int* quads = nullptr) {
  const Scrip g(s);
  const int n1 = g.n1, nred = g.nred;
  const auto& lat = g.lat;
  const auto& lon = g.lon;
  const auto& mask = g.mask;
  const auto& addr = g.addr;
  const auto& blat = g.blat;
  const int nx = n1;  // grid1_dims(1) of a D grid (n, 1)

  std::vector<Link> out;
  for (i64 k = 0; k < t.size(); ++k) {
    if (!t.valid(k)) continue;
    double plat, plon;
    Scrip::target(t, k, plat, plon);
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

// remap_bicubic_reduced's calcul_wght_2, calcul_wght_3 and calcul_wght_irreg, as written
// (x, w 1-based).
void calcul_wght_2(const double* x, double pt, double* w) {
  double b1, b2, a1, a2;
  if (x[1] != 0 && x[2] != 0) {
    b1 = 1 / (1 - x[1] / x[2]);
    b2 = -1 / (x[2] / x[1] - 1);
    a1 = 1 / x[1] - b1 / x[1];
    a2 = -b2 / x[1];
  } else if (x[1] == 0) {
    b1 = 1, b2 = 0, a1 = -1 / x[2], a2 = 1 / x[2];
  } else {
    b1 = 0, b2 = 1, a1 = 1 / x[1], a2 = -1 / x[1];
  }
  w[1] = a1 * pt + b1;
  w[2] = a2 * pt + b2;
}

double p2(double v) { return v * v; }
double p3(double v) { return v * v * v; }

void calcul_wght_3(const double* x, double pt, double* w) {
  double c1, c2, c3, a1, a2, a3, b1, b2, b3;
  if (x[1] != 0 && x[2] != 0 && x[3] != 0) {
    const double t1 = 1 / x[1] - 1 / x[2];
    const double t2 = 1 / p2(x[1]) - 1 / p2(x[2]);
    const double t3 = 1 / x[1] - 1 / x[3];
    const double t4 = 1 / p2(x[1]) - 1 / p2(x[3]);
    c1 = (1 / p2(x[1]) / t1 - 1 / p2(x[1]) / t3) / (t2 / t1 - t4 / t3);
    c2 = -1 / p2(x[2]) / t1 / (t2 / t1 - t4 / t3);
    c3 = 1 / p2(x[3]) / t3 / (t2 / t1 - t4 / t3);
    b1 = 1 / p2(x[1]) / t1 - c1 * t2 / t1;
    b2 = -1 / p2(x[2]) / t1 - c2 * t2 / t1;
    b3 = -(c3 * t2 / t1);
    a1 = 1 / p2(x[1]) - b1 / x[1] - c1 / p2(x[1]);
    a2 = -b2 / x[1] - c2 / p2(x[1]);
    a3 = -b3 / x[1] - c3 / p2(x[1]);
  } else if (x[1] == 0) {
    c1 = 1, c2 = 0, c3 = 0;
    b1 = (-1 / p2(x[2]) + 1 / p2(x[3])) / (1 / x[2] - 1 / x[3]);
    b2 = 1 / p2(x[2]) / (1 / x[2] - 1 / x[3]);
    b3 = -1 / p2(x[3]) / (1 / x[2] - 1 / x[3]);
    a1 = -1 / p2(x[2]) - b1 / x[2];
    a2 = 1 / p2(x[2]) - b2 / x[2];
    a3 = -b3 / x[2];
  } else if (x[2] == 0) {
    c1 = 0, c2 = 1, c3 = 0;
    b1 = 1 / p2(x[1]) / (1 / x[1] - 1 / x[3]);
    b2 = (-1 / p2(x[1]) + 1 / p2(x[3])) / (1 / x[1] - 1 / x[3]);
    b3 = -1 / p2(x[3]) / (1 / x[1] - 1 / x[3]);
    a1 = 1 / p2(x[1]) - b1 / x[1];
    a2 = -1 / p2(x[1]) - b2 / x[1];
    a3 = -b3 / x[1];
  } else {
    c1 = 0, c2 = 0, c3 = 1;
    b1 = 1 / p2(x[1]) / (1 / x[1] - 1 / x[2]);
    b2 = -1 / p2(x[2]) / (1 / x[1] - 1 / x[2]);
    b3 = (-1 / p2(x[1]) + 1 / p2(x[2])) / (1 / x[1] - 1 / x[2]);
    a1 = 1 / p2(x[1]) - b1 / x[1];
    a2 = -b2 / x[1];
    a3 = -1 / p2(x[1]) - b3 / x[1];
  }
  w[1] = a1 * p2(pt) + b1 * pt + c1;
  w[2] = a2 * p2(pt) + b2 * pt + c2;
  w[3] = a3 * p2(pt) + b3 * pt + c3;
}

void calcul_wght_irreg(const double* x, double pt, double* w) {
  double a1, a2, a3, a4, b1, b2, b3, b4, c1, c2, c3, c4, d1 = 0, d2 = 0, d3 = 0, d4 = 0;
  if (x[1] != 0 && x[2] != 0 && x[3] != 0 && x[4] != 0) {
    const double t1 = 1 / x[1] - 1 / x[2], t2 = 1 / p2(x[1]) - 1 / p2(x[2]), t3 = 1 / p3(x[1]) - 1 / p3(x[2]);
    const double t4 = 1 / x[1] - 1 / x[3], t5 = 1 / p2(x[1]) - 1 / p2(x[3]), t6 = 1 / p3(x[1]) - 1 / p3(x[3]);
    const double t7 = 1 / x[1] - 1 / x[4], t8 = 1 / p2(x[1]) - 1 / p2(x[4]), t9 = 1 / p3(x[1]) - 1 / p3(x[4]);
    const double u1 = t2 / t1 - t5 / t4, u2 = t3 / t1 - t6 / t4, u3 = t2 / t1 - t8 / t7, u4 = t3 / t1 - t9 / t7;
    const double k1 = (1 / (t1 * u1) - 1 / (t1 * u3)) / (u2 / u1 - u4 / u3);
    const double k2 = -1 / (t4 * u1) / (u2 / u1 - u4 / u3);
    const double k3 = 1 / (t7 * u3) / (u2 / u1 - u4 / u3);
    d1 = (k1 + k2 + k3) / p3(x[1]);
    d2 = -k1 / p3(x[2]);
    d3 = -k2 / p3(x[3]);
    d4 = -k3 / p3(x[4]);
    c1 = 1 / u1 * (1 / (t1 * p3(x[1])) - 1 / (t4 * p3(x[1])) - u2 * d1);
    c2 = 1 / u1 * (1 / (-t1 * p3(x[2])) - u2 * d2);
    c3 = 1 / u1 * (1 / (t4 * p3(x[3])) - u2 * d3);
    c4 = 1 / u1 * (-u2 * d4);
    b1 = 1 / t1 / p3(x[1]) - t2 / t1 * c1 - t3 / t1 * d1;
    b2 = -1 / t1 / p3(x[2]) - t2 / t1 * c2 - t3 / t1 * d2;
    b3 = -(t2 / t1 * c3) - t3 / t1 * d3;
    b4 = -(t2 / t1 * c4) - t3 / t1 * d4;
    a1 = 1 / p3(x[1]) - 1 / x[1] * b1 - 1 / p2(x[1]) * c1 - 1 / p3(x[1]) * d1;
    a2 = -(1 / x[1] * b2) - 1 / p2(x[1]) * c2 - 1 / p3(x[1]) * d2;
    a3 = -(1 / x[1] * b3) - 1 / p2(x[1]) * c3 - 1 / p3(x[1]) * d3;
    a4 = -(1 / x[1] * b4) - 1 / p2(x[1]) * c4 - 1 / p3(x[1]) * d4;
  } else {
    double y1, y2, y3;
    if (x[1] == 0) {
      y1 = x[2], y2 = x[3], y3 = x[4], d1 = 1;
    } else if (x[2] == 0) {
      y1 = x[1], y2 = x[3], y3 = x[4], d2 = 1;
    } else if (x[3] == 0) {
      y1 = x[1], y2 = x[2], y3 = x[4], d3 = 1;
    } else {
      y1 = x[1], y2 = x[2], y3 = x[3], d4 = 1;
    }
    const double t1 = 1 / y1 - 1 / y2, t2 = 1 / p2(y1) - 1 / p2(y2), t3 = 1 / y1 - 1 / y3, t4 = 1 / p2(y1) - 1 / p2(y3);
    const double c1y = (1 / p3(y1) / t1 - 1 / p3(y1) / t3) / (t2 / t1 - t4 / t3);
    const double c2y = -1 / p3(y2) / t1 / (t2 / t1 - t4 / t3);
    const double c3y = 1 / p3(y3) / t3 / (t2 / t1 - t4 / t3);
    const double c4y = (-1 / p3(y1) / t1 + 1 / p3(y2) / t1 + 1 / p3(y1) / t3 - 1 / p3(y3) / t3) / (t2 / t1 - t4 / t3);
    const double b1y = 1 / p3(y1) / t1 - c1y * t2 / t1;
    const double b2y = -1 / p3(y2) / t1 - c2y * t2 / t1;
    const double b3y = -(c3y * t2 / t1);
    const double b4y = -1 / p3(y1) / t1 + 1 / p3(y2) / t1 - c4y * t2 / t1;
    const double a1y = 1 / p3(y1) - b1y / y1 - c1y / p2(y1);
    const double a2y = -b2y / y1 - c2y / p2(y1);
    const double a3y = -b3y / y1 - c3y / p2(y1);
    const double a4y = -1 / p3(y1) - b4y / y1 - c4y / p2(y1);
    if (x[1] == 0) {
      a1 = a4y, a2 = a1y, a3 = a2y, a4 = a3y, b1 = b4y, b2 = b1y, b3 = b2y, b4 = b3y, c1 = c4y, c2 = c1y, c3 = c2y, c4 = c3y;
    } else if (x[2] == 0) {
      a1 = a1y, a2 = a4y, a3 = a2y, a4 = a3y, b1 = b1y, b2 = b4y, b3 = b2y, b4 = b3y, c1 = c1y, c2 = c4y, c3 = c2y, c4 = c3y;
    } else if (x[3] == 0) {
      a1 = a1y, a2 = a2y, a3 = a4y, a4 = a3y, b1 = b1y, b2 = b2y, b3 = b4y, b4 = b3y, c1 = c1y, c2 = c2y, c3 = c4y, c4 = c3y;
    } else {
      a1 = a1y, a2 = a2y, a3 = a3y, a4 = a4y, b1 = b1y, b2 = b2y, b3 = b3y, b4 = b4y, c1 = c1y, c2 = c2y, c3 = c3y, c4 = c4y;
    }
  }
  w[1] = a1 * p3(pt) + b1 * p2(pt) + c1 * pt + d1;
  w[2] = a2 * p3(pt) + b2 * p2(pt) + c2 * pt + d2;
  w[3] = a3 * p3(pt) + b3 * p2(pt) + c3 * pt + d3;
  w[4] = a4 * p3(pt) + b4 * p2(pt) + c4 * pt + d4;
}

// The serial transcription of OASIS's remap_bicub_reduced and grid_search_16_points (arrays
// 1-based, [line][point] for Fortran's (line, point)); `cases` counts the targets by the branch
// they take: 0 all 16 masked, 1 one point, 2 two points, 3 distance-weighted rows, 4 linear
// across two rows, 5 polynomials across the rows (6: of them, all 16 points unmasked).
std::vector<Link> oasis_bicubic_reference(const Grid& s, const Grid& t, bool nnei, std::array<int, 7>* cases = nullptr) {
  std::array<int, 7> dummy{};
  std::array<int, 7>& nc = cases ? *cases : dummy;
  const Scrip g(s);
  const int nred = g.nred;
  const auto& lat = g.lat;
  const auto& lon = g.lon;
  const auto& mask = g.mask;
  const auto& addr = g.addr;
  const auto& blat = g.blat;
  const double pi2 = 2 * kPi, bignum = 1e20;
  std::vector<Link> out;
  for (i64 k = 0; k < t.size(); ++k) {
    if (!t.valid(k)) continue;
    double plat, plon;
    Scrip::target(t, k, plat, plon);
    auto dist = [&](double la, double lo) {
      return std::acos(std::clamp(std::cos(plat) * std::cos(la) * (std::cos(plon) * std::cos(lo) + std::sin(plon) * std::sin(lo)) +
                                      std::sin(plat) * std::sin(la), -1.0, 1.0));
    };
    // grid_search_16_points
    int bin, corners[5][3] = {};
    if (plat > blat[1][1]) {
      bin = 0;
      corners[3][1] = addr[1][1] + 1, corners[3][2] = addr[1][2];
      corners[4][1] = addr[2][1], corners[4][2] = addr[2][2];
    } else if (plat > blat[2][1]) {
      bin = 1;
      corners[2][1] = addr[1][1] + 1, corners[2][2] = addr[1][2];
      corners[3][1] = addr[2][1], corners[3][2] = addr[2][2];
      corners[4][1] = addr[3][1], corners[4][2] = addr[3][2];
    } else if (plat < blat[nred][1]) {
      bin = nred;
      corners[1][1] = addr[nred - 1][1], corners[1][2] = addr[nred - 1][2];
      corners[2][1] = addr[nred][1], corners[2][2] = addr[nred][2];
    } else if (plat < blat[nred - 1][1]) {
      bin = nred - 1;
      corners[1][1] = addr[nred - 2][1], corners[1][2] = addr[nred - 2][2];
      corners[2][1] = addr[nred - 1][1], corners[2][2] = addr[nred - 1][2];
      corners[3][1] = addr[nred][1], corners[3][2] = addr[nred][2];
    } else {
      int mn = 2, mx = nred - 1;
      while (mn != mx - 1) {
        const int in = (mx - mn) / 2 + mn;
        if (plat <= blat[mn][1] && plat > blat[in][1]) mx = in;
        else mn = in;
      }
      bin = mn;
      for (int m = 1; m <= 4; ++m) corners[m][1] = addr[bin - 2 + m][1], corners[m][2] = addr[bin - 2 + m][2];
      if (corners[1][1] == 0) corners[1][1] = 1;
    }
    double slats[5] = {}, slons[5][5] = {};
    int sadd[5][5] = {}, nbr[5] = {};
    for (int m = 1; m <= 4; ++m)
      if (corners[m][1] != 0) slats[m] = lat[corners[m][1]];
    auto take = [&](int m, int a, double shift) {
      if (!mask[a]) return;
      ++nbr[m];
      sadd[m][nbr[m]] = a;
      slons[m][nbr[m]] = lon[a] + shift;
    };
    for (int m = 1; m <= 4; ++m) {
      if (corners[m][1] == 0) continue;
      int mn = corners[m][1], mx = corners[m][2];
      if (plon < lon[mn]) {
        for (int j = mx - 1; j <= mx; ++j) take(m, j, -pi2);
        for (int j = mn; j <= mn + 1; ++j) take(m, j, 0);
      } else if (plon < lon[mn + 1]) {
        take(m, mx, -pi2);
        for (int j = mn; j <= mn + 2; ++j) take(m, j, 0);
      } else if (plon > lon[mx]) {
        for (int j = mx - 1; j <= mx; ++j) take(m, j, 0);
        for (int j = mn; j <= mn + 1; ++j) take(m, j, pi2);
      } else if (plon > lon[mx - 1]) {
        for (int j = mx - 2; j <= mx; ++j) take(m, j, 0);
        take(m, mn, pi2);
      } else {
        while (mn != mx - 1) {
          const int in = (mx - mn) / 2 + mn;
          if (plon >= lon[mn] && plon < lon[in]) mx = in;
          else mn = in;
        }
        for (int j = mn - 1; j <= mn + 2; ++j) take(m, j, 0);
      }
    }
    double wt[5][5] = {};
    auto store = [&] {
      for (int j = 1; j <= 4; ++j)
        for (int m = 1; m <= 4; ++m)
          if (sadd[m][j] != 0) out.push_back({t.global_index(k), sadd[m][j] - 1, wt[m][j]});
    };
    const int sum = nbr[1] + nbr[2] + nbr[3] + nbr[4];
    if (sum == 16) ++nc[6];
    if (sum <= 2) ++nc[static_cast<std::size_t>(sum)];
    if (sum == 0) {
      if (!nnei) continue;
      int mn, mx;
      if (bin == 0 || bin == 1) {
        mn = 1, mx = addr[3][2];
      } else if (bin == nred || bin == nred - 1) {
        mn = addr[nred - 2][1], mx = addr[nred][2];
      } else {
        mn = addr[bin - 1][1] + 1, mx = addr[bin + 2][2];
      }
      double best = bignum;
      int a0 = 0;
      for (int a = mn; a <= mx; ++a)
        if (mask[a] && dist(lat[a], lon[a]) < best) best = dist(lat[a], lon[a]), a0 = a;
      if (a0 == 0)
        for (int a = 1; a <= g.n1; ++a)
          if (mask[a] && dist(lat[a], lon[a]) < best) best = dist(lat[a], lon[a]), a0 = a;
      if (a0 > 0) out.push_back({t.global_index(k), a0 - 1, 1.0});
      continue;
    }
    if (sum == 1) {
      for (int m = 1; m <= 4; ++m)
        if (nbr[m] == 1) {
          wt[m][1] = 1;
          break;
        }
      store();
      continue;
    }
    if (sum == 2) {
      double total = 0;
      for (int m = 1; m <= 4; ++m)
        if (nbr[m] > 0) {
          wt[m][1] = dist(slats[m], slons[m][1]);
          total += wt[m][1];
          if (nbr[m] == 2) {
            wt[m][2] = dist(slats[m], slons[m][2]);
            total += wt[m][2];
          }
        }
      for (auto& r : wt)
        for (double& x : r) x /= total;
      store();
      continue;
    }
    if (nbr[1] == 1) nbr[1] = 0, sadd[1][1] = 0;
    if (nbr[4] == 1) nbr[4] = 0, sadd[4][1] = 0;
    bool linear = false;
    int ad[3] = {0, 4, 4};
    double rd[3] = {0, bignum, bignum}, wl[5][5] = {};
    auto lon_weights = [&](int m) {
      double w[5] = {};
      if (nbr[m] == 4) calcul_wght_irreg(slons[m], plon, w);
      if (nbr[m] == 3) calcul_wght_3(slons[m], plon, w);
      if (nbr[m] == 2) calcul_wght_2(slons[m], plon, w);
      for (int j = 1; j <= 4; ++j) wl[m][j] = w[j];
    };
    if (nbr[2] == 1 || nbr[3] == 1) {
      for (int m = 1; m <= 4; ++m) {
        double d = bignum;
        if (nbr[m] > 1) d = std::fabs(slats[m] - plat);
        else if (nbr[m] == 1) d = dist(slats[m], slons[m][1]);
        if (d < rd[1]) {
          ad[2] = ad[1], ad[1] = m, rd[2] = rd[1], rd[1] = d;
        } else if (d < rd[2]) {
          ad[2] = m, rd[2] = d;
        }
      }
      if (nbr[ad[1]] > 1 && nbr[ad[2]] > 1) {
        linear = true;
      } else {
        ++nc[3];
        for (int i = 1; i <= 2; ++i) {
          const int m = ad[i];
          if (nbr[m] >= 2) {
            lon_weights(m);
            for (int j = 1; j <= 4; ++j) wl[m][j] /= rd[i];
          } else if (nbr[m] == 1) {
            wl[m][1] = 1 / rd[i];
          }
        }
        double total = 0;
        for (int m = 1; m <= 4; ++m) total += wl[m][1] + wl[m][2] + wl[m][3] + wl[m][4];
        for (int m = 1; m <= 4; ++m)
          for (int j = 1; j <= 4; ++j) wt[m][j] = wl[m][j] / total;
        store();
        continue;
      }
    }
    for (int m = 1; m <= 4; ++m) lon_weights(m);
    ++nc[linear ? 4 : 5];
    double wlat[5] = {}, tmp[5] = {};
    if (linear) {
      const double x[3] = {0, slats[ad[1]], slats[ad[2]]};
      calcul_wght_2(x, plat, tmp);
      wlat[ad[1]] = tmp[1], wlat[ad[2]] = tmp[2];
    } else {
      double x[5] = {};
      int count = 0;
      for (int m = 1; m <= 4; ++m)
        if (nbr[m] != 0) x[++count] = slats[m];
      if (count == 4) calcul_wght_irreg(x, plat, tmp);
      if (count == 3) calcul_wght_3(x, plat, tmp);
      if (count == 2) calcul_wght_2(x, plat, tmp);
      if (count == 1) tmp[1] = 1;
      count = 0;
      for (int m = 1; m <= 4; ++m) wlat[m] = nbr[m] != 0 ? tmp[++count] : 0.0;
    }
    for (int m = 1; m <= 4; ++m)
      for (int j = 1; j <= 4; ++j) wt[m][j] = wlat[m] * wl[m][j];
    store();
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

// `compute(src, dst, comm)` (the bilinear or bicubic D weights) against OASIS's links `want` for
// the grid stored north to south (ns): equal, weights within 1e-12, on any ranks and
// decompositions; bit-identical to one rank with whole grids; the grid stored south to north
// (sn, perm[its index] = the index in ns) gives the same links, indices mapped. Returns the
// largest distance of a target's weight sum from 1 (targets with links).
template <class F>
double expect_oasis_links(const Grid& ns, const Grid& sn, const std::vector<i64>& perm, const Grid& t,
                          const std::vector<Link>& want, const F& compute) {
  const int p = etest::world_size(), r = etest::world_rank();
  const std::vector<Link> got = ltest::gather_sorted(compute(part_of(ns, estuary::gen::cyclic(ns.size(), r, p)),
                                                             part_of(t, estuary::gen::block(t.size(), r, p)), MPI_COMM_WORLD));
  std::ostringstream why;
  EXPECT_TRUE(ltest::same_links(got, want, 1e-12, why)) << why.str();
  const std::vector<Link> serial = ltest::gather_sorted(compute(ns, t, MPI_COMM_SELF), MPI_COMM_SELF);
  std::ostringstream why1;
  EXPECT_TRUE(ltest::same_links(got, serial, 0, why1)) << why1.str();
  std::vector<Link> mapped;
  for (const Link& l : want) mapped.push_back({l.dst, perm[static_cast<std::size_t>(l.src)], l.w});
  std::sort(mapped.begin(), mapped.end());
  const std::vector<Link> got_sn = ltest::gather_sorted(compute(part_of(sn, estuary::gen::random(sn.size(), r, p, 5)),
                                                                part_of(t, estuary::gen::cyclic(t.size(), r, p)), MPI_COMM_WORLD));
  std::ostringstream why2;
  EXPECT_TRUE(ltest::same_links(got_sn, mapped, 1e-12, why2)) << why2.str();
  std::vector<double> sum(static_cast<std::size_t>(t.size()), 0.0);
  for (const Link& l : got) sum[static_cast<std::size_t>(l.dst)] += l.w;
  double worst = 0;
  for (double x : sum)
    if (x != 0) worst = std::max(worst, std::fabs(x - 1.0));
  return worst;
}

// `compute(src, dst, comm)` on the source `s` (split over the ranks) must throw an Error, on
// every rank, whose message contains `what`.
template <class F>
void expect_refused(const Grid& s, const std::string& what, const F& compute) {
  const int p = etest::world_size(), r = etest::world_rank();
  const Grid t = targets();
  try {
    compute(part_of(s, estuary::gen::block(s.size(), r, p)), part_of(t, estuary::gen::block(t.size(), r, p)), MPI_COMM_WORLD);
    ADD_FAILURE() << "accepted, expected: " << what;
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(ReducedBilinear, MatchesOasisAndIsRankIndependent) {
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
    const double worst = expect_oasis_links(ns, sn, perm, t, want, [&](const Grid& s, const Grid& d, MPI_Comm c) {
      return estuary::bilinear_weights_reduced(s, d, c, o);
    });
    EXPECT_LT(worst, 1e-12) << "every target's weights add up to 1";
  }
}

TEST(ReducedBilinear, RefusesRowsOutOfOrder) {
  Grid s = GridGen::reduced_gaussian(4).make();
  std::swap(s.lat[0], s.lat[s.lat.size() / 2]);  // a point of the first row moved to the middle
  expect_refused(s, "not ordered by latitude", [](const Grid& a, const Grid& b, MPI_Comm c) {
    return estuary::bilinear_weights_reduced(a, b, c);
  });
}

// BICUBIC D (remap_bicubic_reduced) against the transcription above, on the same land-masked grid
// stored north to south and south to north, any ranks and decompositions.
TEST(ReducedBicubic, MatchesOasisAndIsRankIndependent) {
  const Grid t = targets();
  for (const bool land : {true, false}) {
    const Grid sn = land ? GridGen::reduced_gaussian(6).with_land().make() : GridGen::reduced_gaussian(6).make();
    std::vector<i64> perm;
    const Grid ns = rows_reversed(sn, perm);
    for (const bool nnei : {true, false}) {
      SCOPED_TRACE(std::string(land ? "land, " : "no land, ") + (nnei ? "nearest fill" : "NF"));
      estuary::ReducedBicubicOptions o;
      o.nearest_fill = nnei;
      std::array<int, 7> cases{};
      const std::vector<Link> want = oasis_bicubic_reference(ns, t, nnei, &cases);
      if (land) {
        for (int c : {0, 1, 2, 3, 4, 5}) EXPECT_GT(cases[static_cast<std::size_t>(c)], 0) << "branch " << c << " not taken";
        EXPECT_GE(cases[6], 20) << "some targets must have all 16 points";
      } else {
        EXPECT_GT(cases[6], t.size() / 2) << "targets between the second and the last-but-one row: 16 points";
        EXPECT_EQ(cases[5], t.size()) << "without land, every target: polynomials across the rows";
      }
      ASSERT_GT(want.size(), 8u * static_cast<std::size_t>(t.size()));
      // Every target's weights add up to 1, to OASIS's rounding (its 1/x^k formulas lose digits).
      const double worst = expect_oasis_links(ns, sn, perm, t, want, [&](const Grid& s, const Grid& d, MPI_Comm c) {
        return estuary::bicubic_weights_reduced(s, d, c, o);
      });
      EXPECT_LT(worst, 1e-10);
      if (etest::world_rank() == 0)
        std::printf("bicubic D (%s, %s): of %lld targets, %d all masked, %d one point, %d two, %d rows by distance, "
                    "%d linear across, %d polynomials across (%d with 16 points); weight sums within %.3g of 1\n",
                    land ? "land" : "no land", nnei ? "nearest fill" : "NF", static_cast<long long>(t.size()), cases[0],
                    cases[1], cases[2], cases[3], cases[4], cases[5], cases[6], worst);
    }
  }
}

// A smooth field, cos(lat) cos(lon) + sin(lat)^2 sin(2 lon), from unmasked reduced grids N16 and
// N32 to points away from the poles (|lat| <= 60): the error is the cubic's, O(h^4): 2.2e-4 on
// N16 (asserted < 5e-4) and 8 times smaller on N32 (measured 16.8, 16 in theory), while
// bilinear D's is O(h^2) (1.3e-2, then 4.3e-3).
TEST(ReducedBicubic, SmoothFieldToCubicAccuracy) {
  const int p = etest::world_size(), r = etest::world_rank();
  Grid t = GridGen::lonlat(37, 25).make();
  {
    Grid u = t;
    u.lon.clear(), u.lat.clear(), u.mask.clear();
    for (i64 k = 0; k < t.size(); ++k)
      if (std::fabs(t.lat[k]) <= 60) u.lon.push_back(t.lon[k]), u.lat.push_back(t.lat[k]);
    u.ncorner = 0, u.corner_lon.clear(), u.corner_lat.clear(), u.area.clear(), u.points.clear();
    u.global_size = static_cast<i64>(u.lon.size());
    u.dims = {u.global_size};
    t = u;
  }
  const auto f = [](double lat, double lon) {
    return std::cos(lat * kD) * std::cos(lon * kD) + std::pow(std::sin(lat * kD), 2) * std::sin(2 * lon * kD);
  };
  double err[2] = {0, 0}, err_bilinear[2] = {0, 0};
  for (int level = 0; level < 2; ++level) {
    const Grid s = GridGen::reduced_gaussian(level == 0 ? 16 : 32).make();
    const Grid sp = part_of(s, estuary::gen::block(s.size(), r, p)), tp = part_of(t, estuary::gen::cyclic(t.size(), r, p));
    for (const bool cubic : {true, false}) {
      const std::vector<Link> w = ltest::gather_sorted(cubic ? estuary::bicubic_weights_reduced(sp, tp, MPI_COMM_WORLD)
                                                             : estuary::bilinear_weights_reduced(sp, tp, MPI_COMM_WORLD));
      std::vector<double> v(static_cast<std::size_t>(t.size()), 0.0);
      for (const Link& l : w) v[static_cast<std::size_t>(l.dst)] += l.w * f(s.lat[l.src], s.lon[l.src]);
      double& e = cubic ? err[level] : err_bilinear[level];
      for (i64 k = 0; k < t.size(); ++k) e = std::max(e, std::fabs(v[static_cast<std::size_t>(k)] - f(t.lat[k], t.lon[k])));
    }
  }
  EXPECT_LT(err[0], 5e-4) << "N16 bicubic; bilinear: " << err_bilinear[0] << "; N32 " << err[1] << " bilinear " << err_bilinear[1];
  EXPECT_LT(err[1], err[0] / 8) << "N16 " << err[0] << ", N32 " << err[1];
  EXPECT_LT(err[0], err_bilinear[0] / 10) << "bicubic " << err[0] << ", bilinear " << err_bilinear[0];
  EXPECT_GT(err[1], 0.0);
}

// Rows that are all land around the poles (the three northernmost, the four southernmost): the
// targets there find no unmasked point in their bins, and OASIS's nearest-neighbour search goes
// over the whole grid. Each rank fetches only its targets' rows unless it has such a target, so
// this is the case where a rank must know, from the rows' summaries alone, that it needs them all.
TEST(ReducedBilinear, MaskedPolarRowsSearchTheWholeGrid) {
  const Grid sn = GridGen::reduced_gaussian(6).with_land().make();
  std::vector<i64> perm;
  Grid ns = rows_reversed(sn, perm);
  int row = 0;
  std::vector<int> row_of(static_cast<std::size_t>(ns.size()));
  for (i64 k = 0; k < ns.size(); ++k) {
    if (k > 0 && ns.lat[k] != ns.lat[k - 1]) ++row;
    row_of[static_cast<std::size_t>(k)] = row;
  }
  Grid masked_sn = sn;
  for (i64 k = 0; k < ns.size(); ++k)
    if (row_of[static_cast<std::size_t>(k)] < 3 || row_of[static_cast<std::size_t>(k)] > row - 4) {
      ns.mask[static_cast<std::size_t>(k)] = 0;
      masked_sn.mask[static_cast<std::size_t>(perm[static_cast<std::size_t>(k)])] = 0;
    }
  const Grid t = targets();
  for (const bool cubic : {false, true}) {
    SCOPED_TRACE(cubic ? "bicubic" : "bilinear");
    estuary::ReducedBilinearOptions bo;
    estuary::ReducedBicubicOptions co;
    const std::vector<Link> want = cubic ? oasis_bicubic_reference(ns, t, true) : oasis_reference(ns, t, true);
    // Some targets' only link is the nearest unmasked point: the poles' (lat +-90).
    std::vector<int> links_of(static_cast<std::size_t>(t.size()), 0);
    for (const Link& l : want) ++links_of[static_cast<std::size_t>(l.dst)];
    EXPECT_EQ(links_of[static_cast<std::size_t>(t.size() - 6)], 1) << "the north pole: the nearest unmasked point";
    EXPECT_EQ(links_of[static_cast<std::size_t>(t.size() - 5)], 1) << "the south pole: the nearest unmasked point";
    expect_oasis_links(ns, masked_sn, perm, t, want, [&](const Grid& s, const Grid& d, MPI_Comm c) {
      return cubic ? estuary::bicubic_weights_reduced(s, d, c, co) : estuary::bilinear_weights_reduced(s, d, c, bo);
    });
  }
}

TEST(ReducedBicubic, RefusesTooFewRows) {
  const Grid whole = GridGen::reduced_gaussian(6).make();
  Grid three = whole;  // the first 3 rows only
  std::vector<i64> keep;
  int rows = 0;
  for (i64 k = 0; k < whole.size(); ++k) {
    if (k > 0 && whole.lat[k] != whole.lat[k - 1]) ++rows;
    if (rows < 3) keep.push_back(k);
  }
  three.lon.clear(), three.lat.clear(), three.mask.clear();
  for (i64 k : keep) three.lon.push_back(whole.lon[k]), three.lat.push_back(whole.lat[k]);
  three.ncorner = 0, three.corner_lon.clear(), three.corner_lat.clear(), three.area.clear(), three.points.clear();
  three.global_size = static_cast<i64>(keep.size());
  three.dims = {three.global_size};
  expect_refused(three, "needs at least 4 rows", [](const Grid& a, const Grid& b, MPI_Comm c) {
    return estuary::bicubic_weights_reduced(a, b, c);
  });
}
