// YAC's average and nnn methods, creep fill and the interpolation stack:
//  - nnn (average, distance, gauss, rbf) against a brute-force serial computation of YAC's
//    formulas (every source tried, no tree), on a masked lon-lat and an unstructured source;
//  - average (arithmetic, distance, barycentric): the cell holding the target, and the weights
//    recomputed from YAC's formulas on it;
//  - creep fill against a serial reference with dense rows, on a 2-D and an unstructured target;
//  - the stack: a target filled by stage k keeps stage k's row, later stages fill only the rest;
//    fixed leaves the rest without links and Remap gives them the value;
//  - every result bit-identical to the serial one (MPI_COMM_SELF) for any rank count.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <sstream>
#include <vector>

#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/remap.hpp"
#include "estuary/weightgen.hpp"
#include "estuary/weights.hpp"
#include "link_test_util.hpp"
#include "mpi_test_util.hpp"

using estuary::Grid;
using estuary::GridGen;
using estuary::Links;
using ltest::gather_sorted;
using ltest::Link;
using ltest::same_links;
using rtest::i64;

namespace {

struct V {
  double x, y, z;
};
V uv(double lon, double lat) {
  const double d = M_PI / 180.0;
  return {std::cos(lat * d) * std::cos(lon * d), std::cos(lat * d) * std::sin(lon * d), std::sin(lat * d)};
}
double dot(V a, V b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
V cross(V a, V b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
double ang(V a, V b) {
  const V c = cross(a, b);
  return std::atan2(std::sqrt(dot(c, c)), dot(a, b));
}

// The points [lo, hi) of a whole grid.
Grid slice(const Grid& g, i64 lo, i64 hi) {
  Grid s = g;
  s.points.clear();
  s.lon.clear(), s.lat.clear(), s.corner_lon.clear(), s.corner_lat.clear(), s.mask.clear(), s.area.clear(), s.frac.clear();
  const auto nc = static_cast<std::size_t>(g.ncorner);
  for (i64 k = lo; k < hi; ++k) {
    const auto u = static_cast<std::size_t>(k);
    s.points.push_back(k);
    s.lon.push_back(g.lon[u]);
    s.lat.push_back(g.lat[u]);
    for (std::size_t c = 0; c < nc; ++c) s.corner_lon.push_back(g.corner_lon[u * nc + c]), s.corner_lat.push_back(g.corner_lat[u * nc + c]);
    if (!g.mask.empty()) s.mask.push_back(g.mask[u]);
    if (!g.area.empty()) s.area.push_back(g.area[u]);
  }
  return s;
}
Grid my_block(const Grid& g) {
  const int p = etest::world_size(), r = etest::world_rank();
  return slice(g, r * g.global_size / p, (r + 1) * g.global_size / p);
}
// A cyclic share instead (every p-th point), so that ranks hold scattered points.
Grid my_cyclic(const Grid& g) {
  const int p = etest::world_size(), r = etest::world_rank();
  Grid s = slice(g, 0, 0);
  const auto nc = static_cast<std::size_t>(g.ncorner);
  for (i64 k = r; k < g.global_size; k += p) {
    const Grid one = slice(g, k, k + 1);
    s.points.push_back(k);
    s.lon.push_back(one.lon[0]);
    s.lat.push_back(one.lat[0]);
    for (std::size_t c = 0; c < nc; ++c) s.corner_lon.push_back(one.corner_lon[c]), s.corner_lat.push_back(one.corner_lat[c]);
    if (!g.mask.empty()) s.mask.push_back(one.mask[0]);
    if (!g.area.empty()) s.area.push_back(one.area[0]);
  }
  return s;
}

// A regional lon-lat source: nx x ny centres over [lon0, lon1] x [lat0, lat1], with corners.
Grid regional(i64 nx, i64 ny, double lon0, double lon1, double lat0, double lat1) {
  Grid g;
  g.kind = estuary::GridKind::curvilinear;
  g.name = "regional";
  g.dims = {nx, ny};
  g.global_size = nx * ny;
  g.ncorner = 4;
  const double dx = (lon1 - lon0) / static_cast<double>(nx), dy = (lat1 - lat0) / static_cast<double>(ny);
  for (i64 j = 0; j < ny; ++j)
    for (i64 i = 0; i < nx; ++i) {
      const double lo = lon0 + (static_cast<double>(i) + 0.5) * dx, la = lat0 + (static_cast<double>(j) + 0.5) * dy;
      g.lon.push_back(lo);
      g.lat.push_back(la);
      const double cl[4] = {lo - dx / 2, lo + dx / 2, lo + dx / 2, lo - dx / 2}, cb[4] = {la - dy / 2, la - dy / 2, la + dy / 2, la + dy / 2};
      for (int c = 0; c < 4; ++c) g.corner_lon.push_back(cl[c]), g.corner_lat.push_back(cb[c]);
    }
  return g;
}

// Brute-force YAC nnn: every unmasked source by (angle, index), the n first, YAC's formulas.
std::vector<Link> brute_nnn(const Grid& src, const Grid& dst, const estuary::NnnOptions& o) {
  std::vector<Link> out;
  const auto n = static_cast<std::size_t>(o.n);
  for (i64 t = 0; t < dst.size(); ++t) {
    if (!dst.valid(t)) continue;
    const V x = uv(dst.lon[static_cast<std::size_t>(t)], dst.lat[static_cast<std::size_t>(t)]);
    std::vector<std::pair<double, i64>> all;
    for (i64 s = 0; s < src.size(); ++s)
      if (src.valid(s)) all.emplace_back(ang(x, uv(src.lon[static_cast<std::size_t>(s)], src.lat[static_cast<std::size_t>(s)])), s);
    std::sort(all.begin(), all.end());
    if (all.size() < n) continue;
    std::vector<V> p;
    for (std::size_t i = 0; i < n; ++i)
      p.push_back(uv(src.lon[static_cast<std::size_t>(all[i].second)], src.lat[static_cast<std::size_t>(all[i].second)]));
    std::vector<double> w(n, 0.0);
    const auto near = std::find_if(all.begin(), all.begin() + static_cast<long>(n), [](auto& a) { return a.first < 1e-9; });
    if (n == 1) {
      w[0] = 1;
    } else if (o.weighting == estuary::NnnWeighting::average) {
      std::fill(w.begin(), w.end(), 1.0 / static_cast<double>(n));
    } else if (o.weighting != estuary::NnnWeighting::rbf && near != all.begin() + static_cast<long>(n)) {
      w[static_cast<std::size_t>(near - all.begin())] = 1;
    } else if (o.weighting == estuary::NnnWeighting::distance) {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) s += 1 / all[i].first;
      for (std::size_t i = 0; i < n; ++i) w[i] = (1 / all[i].first) / s;
    } else if (o.weighting == estuary::NnnWeighting::gauss) {
      double m = 0;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) m += ang(p[i], p[j]);
      m /= static_cast<double>(n * (n - 1)) / 2;
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) s += w[i] = std::exp(-all[i].first * all[i].first / (o.gauss_scale * m * m));
      if (s < 1e-9) {  // YAC: too far for the exponentials, inverse distance instead
        s = 0;
        for (std::size_t i = 0; i < n; ++i) s += w[i] = 1 / all[i].first;
      }
      for (double& wi : w) wi /= s;
    } else {  // rbf: Gauss-Jordan on [A | a]
      double sd = 0;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) sd += ang(p[i], p[j]);
      const double sc = static_cast<double>(n * (n - 1)) / (2 * sd) / o.rbf_scale;
      std::vector<std::vector<double>> M(n, std::vector<double>(n + 1));
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) M[i][j] = std::exp(-std::pow(ang(p[i], p[j]) * sc, 2));
        M[i][n] = std::exp(-std::pow(all[i].first * sc, 2));
      }
      for (std::size_t c = 0; c < n; ++c) {
        std::size_t pv = c;
        for (std::size_t r = c; r < n; ++r)
          if (std::abs(M[r][c]) > std::abs(M[pv][c])) pv = r;
        std::swap(M[c], M[pv]);
        for (std::size_t r = 0; r < n; ++r)
          if (r != c) {
            const double f = M[r][c] / M[c][c];
            for (std::size_t k = c; k <= n; ++k) M[r][k] -= f * M[c][k];
          }
      }
      for (std::size_t i = 0; i < n; ++i) w[i] = M[i][n] / M[i][i];
    }
    for (std::size_t i = 0; i < n; ++i) out.push_back({dst.global_index(t), all[i].second, w[i]});
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(Stack, NnnMatchesBruteForceAndIsTheSameOnAnyRanks) {
  const Grid masked = GridGen::lonlat(24, 12).with_land().make();
  const Grid cubed = GridGen::cubed_sphere(4).make();
  const Grid dst = GridGen::gaussian(20, 10).make();
  using W = estuary::NnnWeighting;
  struct C {
    W w;
    int n;
    double tol;
  };
  // rbf weights are A^-1 a with an ill-conditioned A (YAC's default scale gives weights near 20
  // for n = 6): rounding differs between solvers by up to ~1e-6 relative.
  for (const C c : {C{W::average, 4, 1e-15}, C{W::distance, 4, 1e-12}, C{W::gauss, 5, 1e-12}, C{W::rbf, 6, 1e-4},
                    C{W::average, 1, 0.0}})
    for (const Grid* src : {&masked, &cubed}) {
      estuary::NnnOptions o;
      o.weighting = c.w;
      o.n = c.n;
      const std::vector<Link> want = brute_nnn(*src, dst, o);
      const std::vector<Link> serial = gather_sorted(estuary::nnn_weights(*src, dst, MPI_COMM_SELF, o), MPI_COMM_SELF);
      const std::vector<Link> got = gather_sorted(estuary::nnn_weights(my_cyclic(*src), my_block(dst), MPI_COMM_WORLD, o));
      std::ostringstream why, why2;
      EXPECT_TRUE(same_links(serial, want, c.tol, why)) << src->name << " n " << c.n << ": " << why.str();
      EXPECT_TRUE(same_links(got, serial, 0.0, why2)) << src->name << " n " << c.n << ": " << why2.str();
      EXPECT_FALSE(want.empty());
    }
}

TEST(Stack, AverageOnTheCellHoldingTheTarget) {
  // Logically rectangular source: the cell is the quad of centres holding the target, which is
  // bilinear's quad where all four are valid (a row of bilinear with four links on a quad).
  const Grid src = GridGen::lonlat(24, 12).with_land().make();
  const Grid dst = GridGen::gaussian(30, 14).make();
  const std::vector<Link> bil = gather_sorted(estuary::bilinear_weights(src, dst, MPI_COMM_SELF, {false}), MPI_COMM_SELF);
  std::map<i64, std::vector<i64>> quad;
  for (const Link& l : bil) quad[l.dst].push_back(l.src);
  using A = estuary::AverageWeighting;
  for (A a : {A::arithmetic, A::distance, A::barycentric})
    for (bool partial : {false, true}) {
      estuary::AverageOptions o;
      o.weighting = a;
      o.partial_coverage = partial;
      const std::vector<Link> serial = gather_sorted(estuary::average_weights(src, dst, MPI_COMM_SELF, o), MPI_COMM_SELF);
      const std::vector<Link> got = gather_sorted(estuary::average_weights(my_cyclic(src), my_block(dst), MPI_COMM_WORLD, o));
      std::ostringstream why;
      EXPECT_TRUE(same_links(got, serial, 0.0, why)) << why.str();
      std::map<i64, std::map<i64, double>> rows;
      for (const Link& l : serial) rows[l.dst][l.src] = l.w;
      int checked = 0;
      for (const auto& [t, q] : quad) {
        if (q.size() != 4) continue;
        // The quad in YAC's vertex order (i,j), (i+1,j), (i+1,j+1), (i,j+1), from its sorted indices.
        const std::vector<i64> v = q[1] - q[0] == 1 ? std::vector<i64>{q[0], q[1], q[3], q[2]} : std::vector<i64>{q[1], q[0], q[2], q[3]};
        const V x = uv(dst.lon[static_cast<std::size_t>(t)], dst.lat[static_cast<std::size_t>(t)]);
        double w[4] = {0, 0, 0, 0};
        bool ok = true;
        if (a == A::arithmetic) {
          for (double& wi : w) wi = 0.25;
        } else if (a == A::distance) {
          double s = 0;
          for (int i = 0; i < 4; ++i) s += w[i] = 1 / ang(x, uv(src.lon[static_cast<std::size_t>(v[i])], src.lat[static_cast<std::size_t>(v[i])]));
          for (double& wi : w) wi /= s;
        } else {
          // Barycentric in the better of (0,1,2) and (0,2,3): solve [a b c] y = x by Cramer.
          const int tri[2][3] = {{0, 1, 2}, {0, 2, 3}};
          double best = -1e300, bc[3] = {0, 0, 0};
          int m = 0;
          for (int k = 0; k < 2; ++k) {
            V P[3];
            for (int j = 0; j < 3; ++j) P[j] = uv(src.lon[static_cast<std::size_t>(v[tri[k][j]])], src.lat[static_cast<std::size_t>(v[tri[k][j]])]);
            const double det = dot(P[0], cross(P[1], P[2]));
            const double y[3] = {dot(x, cross(P[1], P[2])) / det, dot(P[0], cross(x, P[2])) / det, dot(P[0], cross(P[1], x)) / det};
            const double mn = std::min({y[0], y[1], y[2]});
            if (mn > best) best = mn, m = k, bc[0] = y[0], bc[1] = y[1], bc[2] = y[2];
          }
          double s = 0;
          for (double& b : bc) b = b < 1e-4 ? 0.0 : b, s += b;
          for (int j = 0; j < 3; ++j) w[tri[m][j]] = bc[j] / s;
        }
        bool masked = false;
        for (int i = 0; i < 4; ++i) masked |= !src.valid(v[i]);
        ok = !masked;  // bilinear gives a quad with a masked corner no links: only unmasked quads here
        if (!ok) continue;
        const auto& row = rows[t];
        for (int i = 0; i < 4; ++i) {
          const double got_w = row.count(v[i]) ? row.at(v[i]) : 0.0;
          EXPECT_NEAR(got_w, w[i], 1e-12) << "target " << t << " vertex " << i;
        }
        ++checked;
      }
      EXPECT_GT(checked, 100);
    }
  // Unstructured source: a triangle of three centres holding the target, arithmetic thirds.
  const Grid cubed = GridGen::cubed_sphere(5).make();
  const std::vector<Link> tri = gather_sorted(estuary::average_weights(cubed, dst, MPI_COMM_SELF), MPI_COMM_SELF);
  const std::vector<Link> tri_par = gather_sorted(estuary::average_weights(my_block(cubed), my_cyclic(dst), MPI_COMM_WORLD));
  std::ostringstream why;
  EXPECT_TRUE(same_links(tri_par, tri, 0.0, why)) << why.str();
  std::map<i64, std::vector<i64>> cells;
  for (const Link& l : tri) {
    EXPECT_DOUBLE_EQ(l.w, 1.0 / 3.0);
    cells[l.dst].push_back(l.src);
  }
  EXPECT_EQ(static_cast<i64>(cells.size()), dst.global_size);  // every target in some triangle
  for (const auto& [t, c] : cells) {
    ASSERT_EQ(c.size(), 3u);
    const V x = uv(dst.lon[static_cast<std::size_t>(t)], dst.lat[static_cast<std::size_t>(t)]);
    V P[3];
    for (int j = 0; j < 3; ++j) P[j] = uv(cubed.lon[static_cast<std::size_t>(c[static_cast<std::size_t>(j)])], cubed.lat[static_cast<std::size_t>(c[static_cast<std::size_t>(j)])]);
    const double det = dot(P[0], cross(P[1], P[2]));
    EXPECT_GE(dot(x, cross(P[1], P[2])) / det, -1e-12);
    EXPECT_GE(dot(P[0], cross(x, P[2])) / det, -1e-12);
    EXPECT_GE(dot(P[0], cross(P[1], x)) / det, -1e-12);
  }
}

namespace {

// Serial creep with dense rows over every source point.
std::map<i64, std::vector<double>> creep_reference(const Grid& dst, const std::vector<std::vector<i64>>& nb,
                                                  const std::vector<Link>& start, i64 nsrc, int steps) {
  std::map<i64, std::vector<double>> rows;
  for (const Link& l : start) {
    auto& r = rows[l.dst];
    if (r.empty()) r.assign(static_cast<std::size_t>(nsrc), 0.0);
    r[static_cast<std::size_t>(l.src)] += l.w;
  }
  for (int s = 0; s < steps; ++s) {
    std::map<i64, std::vector<double>> next;
    for (i64 t = 0; t < dst.global_size; ++t) {
      if (!dst.valid(t) || rows.count(t)) continue;
      std::vector<i64> from;
      for (i64 b : nb[static_cast<std::size_t>(t)])
        if (rows.count(b)) from.push_back(b);
      if (from.empty()) continue;
      std::vector<double> r(static_cast<std::size_t>(nsrc), 0.0);
      for (i64 b : from)
        for (i64 c = 0; c < nsrc; ++c)
          if (rows[b][static_cast<std::size_t>(c)] != 0.0) r[static_cast<std::size_t>(c)] += rows[b][static_cast<std::size_t>(c)] / static_cast<double>(from.size());
      next[t] = r;
    }
    for (auto& [t, r] : next) rows[t] = r;
  }
  return rows;
}

void expect_rows(const std::vector<Link>& got, const std::map<i64, std::vector<double>>& want, double tol) {
  std::map<i64, std::map<i64, double>> g;
  for (const Link& l : got) g[l.dst][l.src] += l.w;
  EXPECT_EQ(g.size(), want.size());
  for (const auto& [t, r] : want) {
    ASSERT_TRUE(g.count(t)) << "target " << t << " has no row";
    for (std::size_t c = 0; c < r.size(); ++c) {
      const double gw = g[t].count(static_cast<i64>(c)) ? g[t][static_cast<i64>(c)] : 0.0;
      ASSERT_NEAR(gw, r[c], tol) << "target " << t << " source " << c;
    }
  }
}

}  // namespace

TEST(Stack, CreepMatchesSerialReference) {
  // 2-D target (cyclic in i), a regional source over part of it, land on the target.
  const Grid src = regional(8, 6, 20, 100, -10, 40);
  const Grid dst = GridGen::lonlat(36, 18).with_land().make();
  const std::vector<Link> bil = gather_sorted(estuary::bilinear_weights(src, dst, MPI_COMM_SELF, {false}), MPI_COMM_SELF);
  std::vector<std::vector<i64>> nb(static_cast<std::size_t>(dst.global_size));
  for (i64 j = 0; j < 18; ++j)
    for (i64 i = 0; i < 36; ++i) {
      auto& v = nb[static_cast<std::size_t>(j * 36 + i)];
      v = {j * 36 + (i + 35) % 36, j * 36 + (i + 1) % 36};
      if (j > 0) v.push_back((j - 1) * 36 + i);
      if (j < 17) v.push_back((j + 1) * 36 + i);
      std::sort(v.begin(), v.end());
    }
  for (int steps : {1, 3}) {
    std::vector<estuary::StackStage> st(2);
    st[0] = estuary::make_stage("bilinear", {}, "test");
    st[1] = estuary::make_stage("creep", {{"steps", std::to_string(steps)}}, "test");
    const auto serial = estuary::stack_weights(src, dst, MPI_COMM_SELF, st);
    const auto par = estuary::stack_weights(my_cyclic(src), my_cyclic(dst), MPI_COMM_WORLD, st);
    const std::vector<Link> s = gather_sorted(serial.links, MPI_COMM_SELF), g = gather_sorted(par.links);
    std::ostringstream why;
    EXPECT_TRUE(same_links(g, s, 0.0, why)) << why.str();
    expect_rows(s, creep_reference(dst, nb, bil, src.global_size, steps), 1e-15);
    ASSERT_EQ(serial.filled.size(), 2u);
    EXPECT_GT(serial.filled[1], 0);
    EXPECT_EQ(serial.filled, par.filled);
  }
  // Unstructured target (cubed sphere), neighbours by shared edges (two corners in common, as
  // YAC's creep), found here by brute force.
  const Grid cs = GridGen::cubed_sphere(6).make();
  const auto N = static_cast<std::size_t>(cs.global_size);
  std::vector<std::vector<i64>> cnb(N);
  for (std::size_t a = 0; a < N; ++a)
    for (std::size_t b = 0; b < N; ++b) {
      if (a == b) continue;
      int common = 0;
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 4; ++k) {
          const V p = uv(cs.corner_lon[a * 4 + static_cast<std::size_t>(i)], cs.corner_lat[a * 4 + static_cast<std::size_t>(i)]);
          const V q = uv(cs.corner_lon[b * 4 + static_cast<std::size_t>(k)], cs.corner_lat[b * 4 + static_cast<std::size_t>(k)]);
          common += std::abs(p.x - q.x) + std::abs(p.y - q.y) + std::abs(p.z - q.z) < 1e-7;
        }
      if (common >= 2) cnb[a].push_back(static_cast<i64>(b));
    }
  std::vector<estuary::StackStage> st = {estuary::make_stage("bilinear", {}, "test"),
                                         estuary::make_stage("creep", {{"steps", "2"}}, "test")};
  const auto serial = estuary::stack_weights(src, cs, MPI_COMM_SELF, st);
  const auto par = estuary::stack_weights(my_block(src), my_cyclic(cs), MPI_COMM_WORLD, st);
  const std::vector<Link> s = gather_sorted(serial.links, MPI_COMM_SELF), g = gather_sorted(par.links);
  std::ostringstream why;
  EXPECT_TRUE(same_links(g, s, 0.0, why)) << why.str();
  const std::vector<Link> bil2 = gather_sorted(estuary::bilinear_weights(src, cs, MPI_COMM_SELF, {false}), MPI_COMM_SELF);
  expect_rows(s, creep_reference(cs, cnb, bil2, src.global_size, 2), 1e-15);
  EXPECT_GT(serial.filled[1], 0);
}

// creep_fill itself, until nothing changes (steps -1), on targets some ranks hold twice (each
// rank's cyclic share plus the first points of the next rank's block, with their links): every
// holder ends with the serial rows to the bit, on the 2-D grid (neighbours by index, cyclic) and
// on the cubed sphere (neighbours by shared edges, paired on the ranks the edges hash to).
TEST(Stack, CreepFillHeldTwiceMatchesOneRank) {
  const int p = etest::world_size(), r = etest::world_rank();
  const Grid src = regional(8, 6, 20, 100, -10, 40);
  for (const Grid& dst : {GridGen::lonlat(36, 18).with_land().make(), GridGen::cubed_sphere(6).make()}) {
    SCOPED_TRACE(dst.name);
    const std::vector<Link> bil = gather_sorted(estuary::bilinear_weights(src, dst, MPI_COMM_SELF, {false}), MPI_COMM_SELF);
    Links whole;
    for (const Link& l : bil) whole.add(l.dst, l.src, l.w);
    const i64 first_links = whole.size();
    estuary::creep_fill(dst, MPI_COMM_SELF, whole, -1);
    std::map<i64, std::vector<std::pair<i64, double>>> want;  // the serial rows, in their order
    for (std::size_t l = 0; l < whole.row.size(); ++l) want[whole.row[l]].emplace_back(whole.col[l], whole.weight[l]);
    ASSERT_GT(whole.size(), 2 * first_links) << "creep must fill many targets over several steps";
    // This rank's points: its cyclic share, then the first 7 points of the next rank's block.
    Grid mine = my_cyclic(dst);
    const i64 next = ((r + 1) % p) * dst.global_size / p;
    const Grid extra = slice(dst, next, next + 7);
    const auto nc = static_cast<std::size_t>(dst.ncorner);
    for (std::size_t u = 0; u < 7; ++u) {
      mine.points.push_back(extra.points[u]);
      mine.lon.push_back(extra.lon[u]), mine.lat.push_back(extra.lat[u]);
      for (std::size_t c = 0; c < nc; ++c) mine.corner_lon.push_back(extra.corner_lon[u * nc + c]), mine.corner_lat.push_back(extra.corner_lat[u * nc + c]);
      if (!dst.mask.empty()) mine.mask.push_back(extra.mask[u]);
      if (!dst.area.empty()) mine.area.push_back(extra.area[u]);
    }
    Links part;  // the links of every target held here (once, however often it is held)
    std::map<i64, int> has_links;
    for (const Link& l : bil) has_links[l.dst] = 1;
    for (const Link& l : bil)
      if (std::count(mine.points.begin(), mine.points.end(), l.dst) > 0) part.add(l.dst, l.src, l.w);
    estuary::creep_fill(mine, MPI_COMM_WORLD, part, -1);
    std::map<i64, std::vector<std::pair<i64, double>>> got;
    for (std::size_t l = 0; l < part.row.size(); ++l) got[part.row[l]].emplace_back(part.col[l], part.weight[l]);
    for (const i64 g : mine.points) {
      // A crept row comes once for each time the target is held here.
      const auto times = has_links.count(g) ? 1 : std::count(mine.points.begin(), mine.points.end(), g);
      std::vector<std::pair<i64, double>> expect;
      for (int k = 0; k < times; ++k) expect.insert(expect.end(), want[g].begin(), want[g].end());
      EXPECT_EQ(got[g], expect) << "target " << g;
    }
  }
}

TEST(Stack, LaterStagesFillOnlyWhatEarlierOnesLeft) {
  const Grid src = regional(10, 8, 0, 120, -30, 50);
  const Grid dst = GridGen::lonlat(30, 15).with_land().make();
  estuary::NnnOptions no;
  no.weighting = estuary::NnnWeighting::distance;
  no.n = 4;
  const std::vector<Link> bil = gather_sorted(estuary::bilinear_weights(src, dst, MPI_COMM_SELF, {false}), MPI_COMM_SELF);
  const std::vector<Link> nnn = gather_sorted(estuary::nnn_weights(src, dst, MPI_COMM_SELF, no), MPI_COMM_SELF);
  std::vector<estuary::StackStage> st = {estuary::make_stage("bilinear", {}, "test"),
                                         estuary::make_stage("nnn", {{"n", "4"}, {"weighting", "distance"}}, "test"),
                                         estuary::make_stage("fixed", {{"value", "-999"}}, "test")};
  const auto par = estuary::stack_weights(my_cyclic(src), my_block(dst), MPI_COMM_WORLD, st);
  const std::vector<Link> got = gather_sorted(par.links);
  // Expected: bilinear's row where it has one, nnn's row elsewhere (every valid target).
  std::map<i64, int> by_bil;
  for (const Link& l : bil) by_bil[l.dst] = 1;
  std::vector<Link> want = bil;
  i64 from_nnn = 0;
  std::map<i64, int> seen;
  for (const Link& l : nnn)
    if (!by_bil.count(l.dst)) want.push_back(l), from_nnn += seen.emplace(l.dst, 1).second ? 1 : 0;
  std::sort(want.begin(), want.end());
  std::ostringstream why;
  EXPECT_TRUE(same_links(got, want, 0.0, why)) << why.str();
  ASSERT_EQ(par.filled.size(), 3u);
  EXPECT_EQ(par.filled[0], static_cast<i64>(by_bil.size()));
  EXPECT_EQ(par.filled[1], from_nnn);
  EXPECT_EQ(par.filled[2], 0);  // nnn reaches every valid target
  EXPECT_TRUE(par.has_fixed);
  EXPECT_EQ(par.fixed_value, -999.0);
  EXPECT_GT(par.filled[0], 0);
  EXPECT_GT(par.filled[1], 0);
}

TEST(Stack, ConservativeFirstThenNearest) {
  // A regional source with corners: conservative fills the targets it overlaps (each row as
  // conservative_weights gives it for the whole target grid), nnn n=1 the others. With YAC's
  // partial_coverage false (its default) only the targets the source covers wholly: the others,
  // part-covered at the domain's edge, go on to the nearest point.
  const Grid src = regional(10, 8, 0, 120, -30, 50);
  const Grid dst = GridGen::lonlat(30, 15).make();
  const std::vector<Link> nn = gather_sorted(estuary::nnn_weights(src, dst, MPI_COMM_SELF), MPI_COMM_SELF);
  for (const bool partial : {true, false}) {
    SCOPED_TRACE(partial ? "partial_coverage=true" : "partial_coverage=false (YAC's default)");
    estuary::ConservativeOptions co;
    co.normalization = partial ? estuary::ConservNormalization::fracarea : estuary::ConservNormalization::destarea;
    const estuary::ConservativeWeights cw = estuary::conservative_weights(src, dst, MPI_COMM_SELF, co);
    std::vector<Link> con = gather_sorted(cw.links, MPI_COMM_SELF);
    if (!partial)  // the rows of targets covered all but 1e-6
      con.erase(std::remove_if(con.begin(), con.end(),
                               [&](const Link& l) { return cw.dst_frac[static_cast<std::size_t>(l.dst)] < 1.0 - 1e-6; }),
                con.end());
    const auto st = estuary::stack_from_text(
        partial ? "conservative normalization=fracarea partial_coverage=true | nearest" : "conservative | nearest", "test");
    const auto par = estuary::stack_weights(my_block(src), my_cyclic(dst), MPI_COMM_WORLD, st);
    std::map<i64, int> by_con;
    for (const Link& l : con) by_con[l.dst] = 1;
    std::vector<Link> want = con;
    for (const Link& l : nn)
      if (!by_con.count(l.dst)) want.push_back(l);
    std::sort(want.begin(), want.end());
    std::ostringstream why;
    EXPECT_TRUE(same_links(gather_sorted(par.links), want, 0.0, why)) << why.str();
    EXPECT_EQ(par.filled[0], static_cast<i64>(by_con.size()));
    EXPECT_EQ(par.filled[0] + par.filled[1], dst.global_size);
    EXPECT_GT(par.filled[1], 0);
    if (!partial) {  // some targets were part-covered (else the case tests nothing)
      i64 part = 0;
      for (const double f : cw.dst_frac) part += f > 0 && f < 1.0 - 1e-6;
      EXPECT_GT(part, 0);
    }
  }
}

TEST(Stack, FixedValueForTheRestAndFileRoundTrip) {
  const Grid src = regional(10, 8, 0, 120, -30, 50);
  const Grid dst = GridGen::lonlat(30, 15).make();
  std::vector<estuary::StackStage> st = {estuary::make_stage("average", {{"weighting", "barycentric"}}, "test"),
                                         estuary::make_stage("fixed", {{"value", "-999"}}, "test")};
  const Grid s = my_block(src), d = my_block(dst);
  const auto w = estuary::stack_weights(s, d, MPI_COMM_WORLD, st);
  EXPECT_GT(w.filled[1], 0);
  EXPECT_EQ(w.filled[0] + w.filled[1], dst.global_size);
  // Apply with the fixed value: covered targets get the weighted source values, the rest -999.
  const int p = etest::world_size(), r = etest::world_rank();
  const auto sd = estuary::gen::block(src.global_size, r, p), dd = estuary::gen::block(dst.global_size, r, p);
  estuary::RemapOptions ro;
  ro.unmapped_value = w.fixed_value;
  estuary::Remap remap(w.links, sd, dd, MPI_COMM_WORLD, ro);
  std::vector<double> x(static_cast<std::size_t>(s.size()), 1.0), y(static_cast<std::size_t>(d.size()), 0.0);
  remap.run(x, y);
  std::map<i64, int> linked;
  for (i64 row : w.links.row) linked[row] = 1;
  for (i64 k = 0; k < d.size(); ++k) {
    const double want = linked.count(d.global_index(k)) ? 1.0 : -999.0;
    EXPECT_NEAR(y[static_cast<std::size_t>(k)], want, 1e-12) << "target " << d.global_index(k);
  }
  // Written and read back: the same links.
  const std::string path = (std::filesystem::temp_directory_path() / ("estuary_stack_" + std::to_string(p) + ".nc")).string();
  estuary::WeightWriteOptions wo;
  wo.attributes = {{"estuary_fixed_value", "-999"}};
  estuary::write_weights(path, w.links, src.global_size, dst.global_size, MPI_COMM_WORLD, wo);
  const auto back = estuary::read_weights(path, MPI_COMM_WORLD);
  std::ostringstream why;
  EXPECT_TRUE(same_links(gather_sorted(back.links), gather_sorted(w.links), 0.0, why)) << why.str();
  EXPECT_EQ(estuary::read_global_attribute(path, "estuary_fixed_value", MPI_COMM_WORLD), "-999");
  MPI_Barrier(MPI_COMM_WORLD);
  if (r == 0) std::filesystem::remove(path);
}

TEST(Stack, MalformedStagesAreRefused) {
  auto fails = [](const std::string& name, std::vector<std::pair<std::string, std::string>> params, const std::string& what) {
    try {
      estuary::make_stage(name, params, "namcouple:12");
      ADD_FAILURE() << name << " accepted";
    } catch (const estuary::Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("namcouple:12"), std::string::npos) << m;
      EXPECT_NE(m.find(what), std::string::npos) << m;
    }
  };
  fails("spline", {}, "unknown interpolation stage 'spline'");
  fails("nnn", {{"n", "zero"}}, "not an integer");
  fails("fixed", {}, "needs a value");
  fails("creep", {{"radius", "2"}}, "no parameter 'radius'");
  fails("creep", {{"radius", "2"}}, "its parameters: steps (YAC: creep_distance)");
  fails("conservative", {{"enforced_conservation", "true"}}, "enforced conservation");
  fails("source_to_target_map", {{"spread_distance", "0.3"}}, "scripr: {method: spmap");
  fails("bernstein_bezier", {}, "not a stage of estuary's stack");
  fails("rbf", {{"rbf_kernel", "wendland"}}, "gauss_kernel");
  fails("average", {{"weighting", "median"}}, "not one of arithmetic, distance, barycentric");
  const Grid g = GridGen::lonlat(8, 4).make();
  std::vector<estuary::StackStage> bad = {estuary::make_stage("fixed", {{"value", "1"}}, "t"), estuary::make_stage("nnn", {}, "t")};
  EXPECT_THROW(estuary::stack_weights(g, g, MPI_COMM_WORLD, bad), estuary::Error);
  // The text form (namcouple STACK line, CLI --stack): '|' with or without spaces, '#' ends it.
  const auto t = estuary::stack_from_text("bilinear|nnn n=4 weighting=distance | fixed value=-999 # rest", "cli");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].kind, estuary::StackStage::Kind::bilinear);
  EXPECT_EQ(t[1].nnn.n, 4);
  EXPECT_EQ(t[1].nnn.weighting, estuary::NnnWeighting::distance);
  EXPECT_EQ(t[2].fixed_value, -999.0);
  EXPECT_THROW(estuary::stack_from_text("bilinear | | nnn", "cli"), estuary::Error);
  EXPECT_THROW(estuary::stack_from_text("n=4 nnn", "cli"), estuary::Error);
  // YAC's spellings (its YAML configuration) read as YAC means them, and YAC's defaults.
  const auto yac = [](const std::string& name, std::vector<std::pair<std::string, std::string>> params) {
    return estuary::make_stage(name, std::move(params), "yac.yaml:3");
  };
  const auto nnn = yac("nnn", {{"n", "4"}, {"weighted", "distance_weighted"}});
  EXPECT_EQ(nnn.nnn.weighting, estuary::NnnWeighting::distance);
  EXPECT_EQ(yac("nnn", {{"n", "4"}, {"weighted", "ARITHMETIC_AVERAGE"}}).nnn.weighting, estuary::NnnWeighting::average);
  EXPECT_EQ(yac("nnn", {{"n", "4"}, {"weighted", "gauss_weighted"}, {"gauss_scale", "0.2"}}).nnn.gauss_scale, 0.2);
  EXPECT_EQ(yac("nnn", {{"n", "1"}, {"weighted", "distance_weighted"}}).nnn.weighting,
            estuary::NnnWeighting::average);  // YAC: n = 1 is the nearest point
  const auto rbf = yac("rbf", {{"rbf_scale", "10"}});
  EXPECT_EQ(rbf.nnn.weighting, estuary::NnnWeighting::rbf);
  EXPECT_EQ(rbf.nnn.n, 9);  // YAC's rbf default
  EXPECT_EQ(rbf.nnn.rbf_scale, 10.0);
  EXPECT_EQ(yac("average", {{"weighted", "barycentric_coordinate"}}).average.weighting, estuary::AverageWeighting::barycentric);
  EXPECT_EQ(yac("average", {{"weighted", "arithmetic_average"}}).average.weighting, estuary::AverageWeighting::arithmetic);
  const auto con = yac("conservative", {{"order", "1"}, {"normalisation", "fracarea"}, {"partial_coverage", "true"},
                                        {"enforced_conservation", "false"}});
  EXPECT_EQ(con.conservative.normalization, estuary::ConservNormalization::fracarea);
  EXPECT_TRUE(con.partial_coverage);
  const auto bare = yac("conservative", {});  // YAC's defaults: destarea, part-covered targets left over
  EXPECT_EQ(bare.conservative.normalization, estuary::ConservNormalization::destarea);
  EXPECT_FALSE(bare.partial_coverage);
  EXPECT_EQ(yac("creep", {}).creep_steps, -1);  // YAC's default: until nothing changes
  EXPECT_EQ(yac("creep", {{"creep_distance", "0"}}).creep_steps, 0);
  EXPECT_EQ(yac("fixed", {{"user_value", "-999.9"}}).fixed_value, -999.9);
  // The canonical text is the same for the same stack, and differs when a parameter does.
  std::vector<estuary::StackStage> a = {estuary::make_stage("NNN", {{"n", "4"}}, "t")}, b = a;
  EXPECT_EQ(estuary::describe(a), estuary::describe(b));
  b[0].nnn.n = 5;
  EXPECT_NE(estuary::describe(a), estuary::describe(b));
}

// A stage after the targets are all filled has nothing to do: it fills none and raises nothing
// (a conservative stage used to be given an empty grid and refuse it for having no corners).
TEST(Stack, StagesAfterEverythingIsFilledAreSkipped) {
  const Grid src = GridGen::lonlat(24, 12).make(), dst = GridGen::lonlat(18, 9).make();
  const auto st = estuary::stack_from_text("nnn n=4 | conservative | creep | fixed value=-1", "test");
  const auto w = estuary::stack_weights(my_block(src), my_block(dst), MPI_COMM_WORLD, st);
  ASSERT_EQ(w.filled.size(), 4u);
  EXPECT_EQ(w.filled[0], dst.global_size);
  EXPECT_EQ(w.filled[1] + w.filled[2] + w.filled[3], 0);
  EXPECT_TRUE(w.has_fixed);
}
