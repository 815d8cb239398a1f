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

// The serial reference: great-circle angles by the spherical law of cosines (atan2 form).
double angle_deg(double lon1, double lat1, double lon2, double lat2) {
  const double d = kPi / 180, p1 = lat1 * d, p2 = lat2 * d, dl = (lon2 - lon1) * d;
  const double y = std::hypot(std::cos(p2) * std::sin(dl), std::cos(p1) * std::sin(p2) - std::sin(p1) * std::cos(p2) * std::cos(dl));
  const double x = std::sin(p1) * std::sin(p2) + std::cos(p1) * std::cos(p2) * std::cos(dl);
  return std::atan2(y, x);
}

std::vector<Link> reference(const Grid& s, const Grid& t, const RunoffOptions& o) {
  std::vector<Link> out;
  const bool spread = o.spread_distance >= 0;
  // Nearest first; equal within 1e-12 rad: the smaller index first.
  auto nearest = [&](double lon, double lat, std::size_t k) {
    std::vector<std::pair<double, i64>> d;
    for (i64 j = 0; j < t.size(); ++j)
      if (t.valid(j)) d.emplace_back(angle_deg(lon, lat, t.lon[j], t.lat[j]), j);
    std::sort(d.begin(), d.end(), [](auto& a, auto& b) {
      return std::fabs(a.first - b.first) <= 1e-12 ? a.second < b.second : a.first < b.first;
    });
    d.resize(std::min(k, d.size()));
    return d;
  };
  double sigma2 = 0;
  if (o.weighting == RunoffWeighting::gaussian) {
    const auto n = static_cast<std::size_t>(t.size());
    double avg = angle_deg(t.lon[n - 1], t.lat[n - 1], t.lon[0], t.lat[0]);
    for (std::size_t u = 1; u < n; ++u) avg += angle_deg(t.lon[u - 1], t.lat[u - 1], t.lon[u], t.lat[u]);
    avg /= static_cast<double>(n);
    sigma2 = o.variance * avg * avg;
  }
  for (i64 i = 0; i < s.size(); ++i) {
    if (!s.valid(i)) continue;
    auto sel = nearest(s.lon[i], s.lat[i], spread ? 1 : static_cast<std::size_t>(o.neighbors));
    if (spread) {
      if (o.max_search_distance > 0 && sel[0].first > o.max_search_distance * kPi / 180) continue;
      const i64 t0 = sel[0].second;
      sel.clear();
      for (i64 j = 0; j < t.size(); ++j)
        if (t.valid(j) && (j == t0 || angle_deg(t.lon[t0], t.lat[t0], t.lon[j], t.lat[j]) <= o.spread_distance * kPi / 180))
          sel.emplace_back(angle_deg(s.lon[i], s.lat[i], t.lon[j], t.lat[j]), j);
    }
    std::vector<double> u(sel.size(), 1.0);
    for (std::size_t k = 0; k < sel.size(); ++k) {
      if (o.weighting == RunoffWeighting::distance) u[k] = 1.0 / std::max(sel[k].first, 1e-14);
      if (o.weighting == RunoffWeighting::gaussian) u[k] = 1.0 / (std::exp(sel[k].first * sel[k].first / (2 * sigma2)) + DBL_EPSILON);
    }
    const double sum = std::accumulate(u.begin(), u.end(), 0.0);
    for (std::size_t k = 0; k < sel.size(); ++k) {
      const auto j = static_cast<std::size_t>(sel[k].second);
      const double as = s.area[static_cast<std::size_t>(i)], at = t.area[j];
      double w = u[k] / sum;
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
  add("SPMAP gauss 27.9", 1, 27.9, RunoffWeighting::gaussian, RunoffScaling::fracarea);
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
