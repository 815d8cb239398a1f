// Runoff mapping (OASIS3-MCT 5's LOCCUNIF/LOCCDIST/LOCCGAUS, YAC's SPMAP), against a serial
// brute-force reference written from the formulas of estuary/runoff.hpp:
//  - every link equal to the reference's (same pairs; weights within 1e-13 relative), for each
//    weighting, scaling and both target choices (n nearest, spread around the nearest);
//  - conservation: sum_t A_t f_t == sum_s A_s f_s to 1e-13 relative (fracarea), and
//    sum_t f_t == sum_s f_s (none);
//  - masked targets receive nothing; every unmasked source reaches at least one target (an inland
//    source with no ocean target near still goes to the nearest one);
//  - bit-identical links on any number of ranks and decompositions (against a run on one rank).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <set>
#include <sstream>

#include "estuary/error.hpp"
#include "estuary/runoff.hpp"
#include "link_test_util.hpp"
#include "remap_test_util.hpp"

using estuary::Grid;
using estuary::GridGen;
using estuary::RunoffOptions;
using estuary::RunoffScaling;
using estuary::RunoffWeighting;
using ltest::Link;
using rtest::i64;

namespace {

constexpr double kPi = 3.14159265358979323846;

// A land grid as a runoff source: the points a land mask marks as land are the valid ones.
Grid land_source(const GridGen& g, const estuary::Decomp& part) {
  Grid out = g.with_land().make(part);
  for (auto& m : out.mask) m = 1 - m;
  return out;
}

// The serial reference, written from OASIS's remap_locc_wgt (n nearest) and YAC's SPMAP (spread)
// as estuary/runoff.hpp states them: a brute-force pass over every target point.
double cosine(const Grid& a, i64 i, const Grid& b, i64 j) {
  const double d = kPi / 180;
  const double c = std::sin(a.lat[i] * d) * std::sin(b.lat[j] * d) +
                   std::cos(a.lat[i] * d) * std::cos(b.lat[j] * d) *
                       (std::cos(a.lon[i] * d) * std::cos(b.lon[j] * d) + std::sin(a.lon[i] * d) * std::sin(b.lon[j] * d));
  return std::max(-1.0, std::min(1.0, c));
}
double angle(const Grid& a, i64 i, const Grid& b, i64 j) { return std::acos(cosine(a, i, b, j)); }

std::vector<Link> reference(const Grid& s, const Grid& t, const RunoffOptions& o) {
  std::vector<Link> out;
  const bool spread = o.spread_distance >= 0;
  // grid_search_nbr: every unmasked target in index order; kept when strictly nearer than the
  // n-th kept, placed after the kept ones as near or nearer, skipped when it coincides (1e-7)
  // with the neighbour before its place or the one at it.
  auto nearest = [&](i64 i, std::size_t n) {
    std::vector<std::pair<double, i64>> kept;
    auto same = [&](i64 a, i64 b) { return std::sqrt(2 * (1 - std::fabs(cosine(t, a, t, b)))) <= 1e-7; };
    for (i64 j = 0; j < t.size(); ++j) {
      if (!t.valid(j)) continue;
      const double d = angle(s, i, t, j);
      if (kept.size() == n && d >= kept.back().first) continue;
      std::size_t at = 0;
      while (at < kept.size() && kept[at].first <= d) ++at;
      if ((at > 0 && same(kept[at - 1].second, j)) || (at < kept.size() && same(kept[at].second, j))) continue;
      kept.insert(kept.begin() + static_cast<std::ptrdiff_t>(at), {d, j});
      if (kept.size() > n) kept.pop_back();
    }
    return kept;
  };
  for (i64 i = 0; i < s.size(); ++i) {
    if (!s.valid(i)) continue;
    auto sel = nearest(i, spread ? 1 : static_cast<std::size_t>(o.neighbors));
    std::vector<double> u(sel.size(), 1.0 / static_cast<double>(sel.size()));
    if (spread) {
      if (o.max_search_distance > 0 && sel[0].first > o.max_search_distance * kPi / 180) continue;
      const i64 t0 = sel[0].second;
      sel.clear();
      for (i64 j = 0; j < t.size(); ++j)
        if (t.valid(j) && (j == t0 || angle(t, t0, t, j) <= o.spread_distance * kPi / 180))
          sel.emplace_back(angle(s, i, t, j), j);
      u.assign(sel.size(), 1.0 / static_cast<double>(sel.size()));
      if (o.weighting == RunoffWeighting::distance) {
        double sum = 0;
        for (std::size_t k = 0; k < sel.size(); ++k) sum += u[k] = 1 / std::max(sel[k].first, 1e-14);
        for (double& x : u) x /= sum;
      }
    } else if (o.weighting != RunoffWeighting::uniform) {
      std::vector<double> d;
      for (const auto& x : sel) d.push_back(x.first);
      if (o.weighting == RunoffWeighting::gaussian && sel.size() > 1 &&
          *std::max_element(d.begin(), d.end()) < 0.01) {
        double mean = 0;
        int pairs = 0;
        for (std::size_t a = 0; a < sel.size(); ++a)
          for (std::size_t b = a + 1; b < sel.size(); ++b) mean += angle(t, sel[a].second, t, sel[b].second), ++pairs;
        const double var = o.variance * (mean / pairs) * (mean / pairs);
        for (double& x : d) x = std::exp(x * x / (2 * var));
      }
      double sum = 0;
      for (std::size_t k = 0; k < sel.size(); ++k) sum += u[k] = 1 / std::max(d[k], DBL_EPSILON);
      for (double& x : u) x /= sum;
    }
    for (std::size_t k = 0; k < sel.size(); ++k) {
      const auto j = static_cast<std::size_t>(sel[k].second);
      const double as = s.area.empty() ? 0 : s.area[static_cast<std::size_t>(i)], at = t.area.empty() ? 0 : t.area[j];
      double w = u[k];
      if (o.scaling == RunoffScaling::fracarea) w *= as / at;
      if (o.scaling == RunoffScaling::srcarea) w *= as;
      if (o.scaling == RunoffScaling::invtgtarea) w /= at;
      out.push_back({sel[k].second, i, w});
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Case {
  const char* name;
  RunoffOptions o;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  auto add = [&](const char* name, int n, double spread, RunoffWeighting w, RunoffScaling sc) {
    RunoffOptions o;
    o.neighbors = n;
    o.spread_distance = spread;
    o.weighting = w;
    o.scaling = sc;
    o.variance = 0.7;
    c.push_back({name, o});
  };
  add("LOCCUNIF 1", 1, -1, RunoffWeighting::uniform, RunoffScaling::fracarea);
  add("LOCCUNIF 4", 4, -1, RunoffWeighting::uniform, RunoffScaling::fracarea);
  add("LOCCDIST 5", 5, -1, RunoffWeighting::distance, RunoffScaling::fracarea);
  add("LOCCGAUS 6", 6, -1, RunoffWeighting::gaussian, RunoffScaling::fracarea);
  add("SPMAP avg 0", 1, 0.0, RunoffWeighting::uniform, RunoffScaling::fracarea);
  add("SPMAP avg 21.3 none", 1, 21.3, RunoffWeighting::uniform, RunoffScaling::none);
  add("SPMAP dist 33.7 srcarea", 1, 33.7, RunoffWeighting::distance, RunoffScaling::srcarea);
  add("SPMAP dist 17.1 invtgtarea", 1, 17.1, RunoffWeighting::distance, RunoffScaling::invtgtarea);
  return c;
}

}  // namespace

TEST(Runoff, MatchesBruteForceConservesAndIsRankIndependent) {
  const int p = etest::world_size(), r = etest::world_rank();
  // A land source (Gaussian, its land points valid) into an ocean (lon-lat, land masked).
  const GridGen sg = GridGen::gaussian(40, 20), tg = GridGen::lonlat(24, 12).with_land();
  const Grid s_all = land_source(sg, estuary::gen::block(sg.size(), 0, 1));
  const Grid t_all = tg.make();
  const auto kinds = ltest::kinds();
  int ci = 0;
  for (const Case& c : cases()) {
    ++ci;
    const Grid s = land_source(sg, rtest::decomp(ci % 2 ? "halo" : "random", sg.size(), p, r));
    const Grid t = tg.make(rtest::decomp(kinds[static_cast<std::size_t>(ci) % kinds.size()], tg.size(), p, r));
    const std::vector<Link> got = ltest::gather_sorted(estuary::runoff_weights(s, t, MPI_COMM_WORLD, c.o));
    const std::vector<Link> want = reference(s_all, t_all, c.o);
    ASSERT_EQ(got.size(), want.size()) << c.name;
    // The case spreads: more links than sources (one link a source for LOCCUNIF 1 and SPMAP 0).
    const bool single = (c.o.spread_distance < 0 && c.o.neighbors == 1) || c.o.spread_distance == 0;
    const auto nsrc = static_cast<std::size_t>(std::count(s_all.mask.begin(), s_all.mask.end(), 1));
    ASSERT_GT(nsrc, 20u);
    if (single) EXPECT_EQ(want.size(), nsrc) << c.name;
    else EXPECT_GT(want.size(), 2 * nsrc) << c.name;
    for (std::size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].dst, want[k].dst) << c.name << " link " << k;
      ASSERT_EQ(got[k].src, want[k].src) << c.name << " link " << k;
      ASSERT_NEAR(got[k].w, want[k].w, 1e-13 * std::fabs(want[k].w)) << c.name << " link " << k;
    }
    // One rank, whole grids: the same bits.
    const std::vector<Link> serial =
        ltest::gather_sorted(estuary::runoff_weights(s_all, t_all, MPI_COMM_SELF, c.o), MPI_COMM_SELF);
    std::ostringstream why;
    EXPECT_TRUE(ltest::same_links(got, serial, 0, why)) << c.name << ": " << why.str();
    // Masked targets receive nothing; every valid source sends somewhere.
    std::set<i64> sources;
    for (const Link& l : got) {
      EXPECT_TRUE(t_all.valid(l.dst)) << c.name << ": masked target " << l.dst << " receives";
      sources.insert(l.src);
    }
    for (i64 i = 0; i < s_all.size(); ++i)
      EXPECT_EQ(sources.count(i), s_all.valid(i) ? 1u : 0u) << c.name << ": source " << i;
    // Conservation, with a field of varying sign and size.
    std::vector<double> f(static_cast<std::size_t>(s_all.size())), g(static_cast<std::size_t>(t_all.size()), 0.0);
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = 1.5 + std::sin(0.37 * static_cast<double>(i)) * std::cos(s_all.lat[i]);
    for (const Link& l : got) g[static_cast<std::size_t>(l.dst)] += l.w * f[static_cast<std::size_t>(l.src)];
    double in = 0, out = 0, scale = 0;
    for (std::size_t i = 0; i < f.size(); ++i)
      if (s_all.valid(static_cast<i64>(i))) {
        const double a = c.o.scaling == RunoffScaling::fracarea ? s_all.area[i] : 1.0;
        in += a * f[i], scale += std::fabs(a * f[i]);
      }
    for (std::size_t j = 0; j < g.size(); ++j) out += (c.o.scaling == RunoffScaling::fracarea ? t_all.area[j] : 1.0) * g[j];
    if (c.o.scaling == RunoffScaling::fracarea || c.o.scaling == RunoffScaling::none) {
      EXPECT_NEAR(out, in, 1e-13 * scale) << c.name;
    }
  }
}

TEST(Runoff, RefusesBadOptionsOnEveryRank) {
  const int p = etest::world_size(), r = etest::world_rank();
  const GridGen tg = GridGen::lonlat(12, 6);
  const Grid s = GridGen::lonlat(8, 4).make(estuary::gen::block(32, r, p)), t = tg.make(estuary::gen::block(tg.size(), r, p));
  RunoffOptions o;
  o.neighbors = 0;
  EXPECT_THROW(estuary::runoff_weights(s, t, MPI_COMM_WORLD, o), estuary::Error);
  o.neighbors = 73;  // more than the 72 target points
  EXPECT_THROW(estuary::runoff_weights(s, t, MPI_COMM_WORLD, o), estuary::Error);
  // Areas needed but neither areas nor corners, on one rank only: every rank throws.
  Grid bare = s;
  if (r == p - 1) bare.area.clear(), bare.ncorner = 0, bare.corner_lon.clear(), bare.corner_lat.clear();
  o.neighbors = 1;
  EXPECT_THROW(estuary::runoff_weights(bare, t, MPI_COMM_WORLD, o), estuary::Error);
}

namespace {

// The points of `whole` a decomposition holds (centres, mask, areas; no corners).
Grid part_of(const Grid& whole, const estuary::Decomp& d) {
  Grid g;
  g.name = whole.name;
  g.dims = whole.dims;
  g.global_size = whole.global_size;
  g.points = d.to_indices();
  for (i64 k : g.points) {
    const auto u = static_cast<std::size_t>(k);
    g.lon.push_back(whole.lon[u]);
    g.lat.push_back(whole.lat[u]);
    g.mask.push_back(whole.mask[u]);
    g.area.push_back(whole.area[u]);
  }
  return g;
}

}  // namespace

// LOCCGAUS's local variance (neighbours all nearer than 0.01 rad: a fine ocean patch of 0.1
// degrees) and OASIS's skipping of target points that coincide with a kept neighbour (the first
// row of the patch repeated at its end), with every weighting; against the brute force, on any
// rank count to the bit, totals kept.
TEST(Runoff, FinePatchGaussianAndCoincidingTargets) {
  const int p = etest::world_size(), r = etest::world_rank();
  Grid t, s;
  t.name = "patch";
  for (int j = 0; j < 15; ++j)
    for (int i = 0; i < 15; ++i) {
      t.lon.push_back(10 + 0.1 * i), t.lat.push_back(20 + 0.1 * j);
      t.mask.push_back((i * 15 + j) % 7 == 3 ? 0 : 1);
    }
  for (int i = 0; i < 15; ++i) t.lon.push_back(t.lon[static_cast<std::size_t>(i)]), t.lat.push_back(20), t.mask.push_back(t.mask[static_cast<std::size_t>(i)]);
  for (std::size_t k = 0; k < t.lon.size(); ++k) t.area.push_back(3e-6 * (1 + 0.1 * static_cast<double>(k % 5)));
  t.global_size = t.size();
  t.dims = {t.global_size};
  s.name = "mouths";
  for (int k = 0; k < 40; ++k) {
    s.lon.push_back(10.02 + 0.0357 * k), s.lat.push_back(19.97 + 0.037 * (k % 13));
    s.mask.push_back(k % 9 == 4 ? 0 : 1);
    s.area.push_back(5e-6 * (1 + 0.2 * (k % 3)));
  }
  s.global_size = s.size();
  s.dims = {s.global_size};
  for (const RunoffWeighting w : {RunoffWeighting::uniform, RunoffWeighting::distance, RunoffWeighting::gaussian}) {
    RunoffOptions o;
    o.neighbors = 5;
    o.weighting = w;
    o.variance = 0.6;
    const std::string name = estuary::name_of(w);
    const Grid sp = part_of(s, estuary::gen::cyclic(s.size(), r, p)), tp = part_of(t, estuary::gen::block(t.size(), r, p));
    const std::vector<Link> got = ltest::gather_sorted(estuary::runoff_weights(sp, tp, MPI_COMM_WORLD, o));
    const std::vector<Link> want = reference(s, t, o);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (std::size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].dst, want[k].dst) << name << " link " << k;
      ASSERT_EQ(got[k].src, want[k].src) << name << " link " << k;
      ASSERT_NEAR(got[k].w, want[k].w, 1e-13 * std::fabs(want[k].w)) << name << " link " << k;
      EXPECT_LT(got[k].dst, 225) << name << ": the repeated row is never a neighbour (its points coincide)";
    }
    const std::vector<Link> serial = ltest::gather_sorted(estuary::runoff_weights(s, t, MPI_COMM_SELF, o), MPI_COMM_SELF);
    std::ostringstream why;
    EXPECT_TRUE(ltest::same_links(got, serial, 0, why)) << name << ": " << why.str();
    double in = 0, out = 0;
    for (i64 i = 0; i < s.size(); ++i) in += s.valid(i) ? s.area[static_cast<std::size_t>(i)] * (1 + 0.1 * i) : 0;
    for (const Link& l : got) out += t.area[static_cast<std::size_t>(l.dst)] * l.w * (1 + 0.1 * l.src);
    EXPECT_NEAR(out, in, 1e-13 * in) << name;
  }
  // The Gaussian's shares differ from the distance weighting's (the local variance is used).
  RunoffOptions g;
  g.neighbors = 5, g.weighting = RunoffWeighting::gaussian, g.variance = 0.6;
  RunoffOptions d = g;
  d.weighting = RunoffWeighting::distance;
  const std::vector<Link> lg = reference(s, t, g), ld = reference(s, t, d);
  ASSERT_EQ(lg.size(), ld.size());
  double diff = 0;
  for (std::size_t k = 0; k < lg.size(); ++k) diff = std::max(diff, std::fabs(lg[k].w - ld[k].w) / ld[k].w);
  EXPECT_GT(diff, 0.01) << lg.size();
  // YAC's SPMAP has no Gaussian weighting: refused on every rank.
  g.spread_distance = 0.2;
  EXPECT_THROW(estuary::runoff_weights(part_of(s, estuary::gen::block(s.size(), r, p)),
                                       part_of(t, estuary::gen::block(t.size(), r, p)), MPI_COMM_WORLD, g),
               estuary::Error);
}
