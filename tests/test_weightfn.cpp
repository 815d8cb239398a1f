// SCRIPR CALLBACK (YAC's callback interpolation): a coupling's weights from a function the
// target component registers by name (Component::register_weights).
//  - a function that picks each target's nearest valid source point (great-circle distance,
//    brute force over the source centres it is given) moves every value to where an
//    independent computation (chord length in 3-D from the grid recipe's global coordinates)
//    says, on 1, 3 and 4 ranks;
//  - a function returning a source index out of range, or a target the rank does not hold, is
//    an error on every rank naming the coupling, the function and the rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "couple_test_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"

using namespace estuary;
using namespace ctest_util;

namespace {

const GridGen kSrc = GridGen::lonlat(12, 10).with_land(), kDst = GridGen::tripolar(8, 9);

std::string config(const std::string& fn) {
  return "runtime: 3600\nno_restart: true\ntimeout: 60\ncouplings:\n"
         "  - source: {fields: [A_F], grid: agrd}\n"
         "    target: {fields: [O_F], grid: ogrd}\n"
         "    period: 3600\n"
         "    transforms:\n"
         "      - scripr: {method: callback, name: " + fn + "}\n";
}

constexpr double kRad = 3.14159265358979323846 / 180.0;

// The nearest valid source by great-circle distance (ties: the lower index).
Links nearest(const WeightQuery& q) {
  Links l;
  for (std::size_t t = 0; t < q.dst_index.size(); ++t) {
    double best = std::numeric_limits<double>::infinity();
    std::int64_t arg = -1;
    for (std::size_t s = 0; s < q.src_lon.size(); ++s) {
      if (!q.src_mask.empty() && q.src_mask[s] == 0) continue;
      const double c = std::sin(q.dst_lat[t] * kRad) * std::sin(q.src_lat[s] * kRad) +
                       std::cos(q.dst_lat[t] * kRad) * std::cos(q.src_lat[s] * kRad) *
                           std::cos((q.dst_lon[t] - q.src_lon[s]) * kRad);
      const double d = std::acos(std::max(-1.0, std::min(1.0, c)));
      if (d < best) best = d, arg = static_cast<std::int64_t>(s);
    }
    l.add(q.dst_index[t], arg, 1.0);
  }
  return l;
}

// Runs the coupling once (weights from `fn`, registered on target ranks); returns this rank's
// target values and their global indices.
std::pair<std::vector<double>, std::vector<i64>> run(const std::string& dir, const std::string& fn,
                                                     const WeightFunction& f) {
  const TwoSides s = two_sides();
  ComponentOptions o;
  o.config = dir + "/estuary.yaml";
  o.directory = dir;
  Component comp(s.comp, o);
  const i64 ns = kSrc.size(), nd = kDst.size();
  const Decomp sd = s.atm ? Decomp::stripes(ns, {{ns * s.index / s.count, ns * (s.index + 1) / s.count - ns * s.index / s.count, 1}})
                          : Decomp::empty(ns);
  // The target's points cyclic over its ranks.
  std::vector<i64> mine;
  for (i64 i = s.index; i < nd && s.ocn; i += s.count) mine.push_back(i);
  const Decomp dd = s.ocn ? Decomp::indices(nd, mine) : Decomp::empty(nd);
  int sv = -1, dv = -1;
  if (s.atm) {
    const int part = comp.def_partition(sd, "agrd");
    comp.def_grid("agrd", part, kSrc.make(sd));
    sv = comp.def_var("A_F", part, Direction::out);
  }
  if (s.ocn) {
    const int part = comp.def_partition(dd, "ogrd");
    comp.def_grid("ogrd", part, kDst.make(dd));
    dv = comp.def_var("O_F", part, Direction::in);
    comp.register_weights(fn, f);
  }
  comp.enddef();
  std::vector<double> y(static_cast<std::size_t>(dd.size()));
  if (s.atm) comp.put(sv, 0, local_of(global_field(ns, 0), sd));
  if (s.ocn) comp.get(dv, 0, y);
  comp.terminate();
  return {y, dd.to_indices()};
}

}  // namespace

TEST(WeightFunction, NearestNeighbourCallback) {
  const std::string dir = fresh_dir("weightfn");
  write_text(dir + "/estuary.yaml", config("my_nearest"));
  const auto [y, idx] = run(dir, "my_nearest", nearest);
  // Independent: the smallest chord between unit vectors, from the recipes' global grids.
  const i64 ns = kSrc.size(), nd = kDst.size();
  const Grid sg = kSrc.make(Decomp::stripes(ns, {{0, ns, 1}})), dg = kDst.make(Decomp::stripes(nd, {{0, nd, 1}}));
  const auto unit = [](double lon, double lat) {
    return std::array<double, 3>{std::cos(lat * kRad) * std::cos(lon * kRad), std::cos(lat * kRad) * std::sin(lon * kRad),
                                 std::sin(lat * kRad)};
  };
  const std::vector<double> x = global_field(ns, 0);
  int valid = 0;
  for (i64 s = 0; s < ns; ++s) valid += sg.valid(s);
  ASSERT_GT(valid, 0);
  ASSERT_LT(valid, ns) << "the source should have land";
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const auto t = static_cast<std::size_t>(idx[k]);
    const auto u = unit(dg.lon[t], dg.lat[t]);
    std::vector<double> d(static_cast<std::size_t>(ns), 1e300);
    for (i64 s = 0; s < ns; ++s) {
      if (!sg.valid(s)) continue;
      const auto v = unit(sg.lon[static_cast<std::size_t>(s)], sg.lat[static_cast<std::size_t>(s)]);
      d[static_cast<std::size_t>(s)] = (u[0] - v[0]) * (u[0] - v[0]) + (u[1] - v[1]) * (u[1] - v[1]) + (u[2] - v[2]) * (u[2] - v[2]);
    }
    // Ties (equidistant sources) may round either way: any source within 1e-12 of the nearest.
    const double best = *std::min_element(d.begin(), d.end());
    bool found = false;
    for (i64 s = 0; s < ns; ++s) found = found || (d[static_cast<std::size_t>(s)] <= best + 1e-12 && y[k] == x[static_cast<std::size_t>(s)]);
    EXPECT_TRUE(found) << "target " << t << " got " << y[k] << ", not the value of a nearest source";
  }
}

TEST(WeightFunction, OutOfRangeIndexNamesCouplingAndRank) {
  for (const bool bad_source : {true, false}) {
    SCOPED_TRACE(bad_source ? "source index" : "target index");
    const std::string dir = fresh_dir("weightfn_bad");
    write_text(dir + "/estuary.yaml", config("bad"));
    const auto bad = [bad_source](const WeightQuery& q) {
      Links l = nearest(q);
      if (!q.dst_index.empty()) {
        if (bad_source) l.col.back() = static_cast<std::int64_t>(q.src_lon.size());
        else l.row.back() = -1;
      }
      return l;
    };
    try {
      run(dir, "bad", bad);
      ADD_FAILURE() << "an out-of-range link was accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("A_F -> O_F"), std::string::npos) << m;  // the coupling
      EXPECT_NE(m.find("\"bad\""), std::string::npos) << m;     // the function
      EXPECT_NE(m.find("rank"), std::string::npos) << m;
      EXPECT_NE(m.find(bad_source ? "source index" : "target index"), std::string::npos) << m;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}
