// Distance-weighted (n-nearest-neighbour) weight generation against CDO's gendis:
//  - for every gendis case of the remap fixture, estuary's links equal CDO's (same (src, dst)
//    pairs, weights within 1e-10), the masked tripolar source included;
//  - the links are bit-identical for any number of ranks and any source or destination
//    decomposition (empty ranks included), and to a serial run;
//  - the nearest_unmasked rule gives each point the n nearest unmasked points (brute force, CDO's
//    distance and tie order);
//  - generated weights written with write_weights read back as the same links, and CDO applies
//    the written file.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cfloat>
#include <array>
#include <cmath>
#include <functional>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <tuple>

#include "estuary/error.hpp"
#include "estuary/weightgen.hpp"
#include "link_test_util.hpp"
#include "remap_test_util.hpp"

using estuary::Links;
using ltest::gather_sorted;
using ltest::kinds;
using ltest::Link;
using ltest::same_links;
using ltest::sorted;
using rtest::i64;

namespace {

std::vector<rtest::Case> gendis_cases() { return ltest::cases_of("gendis"); }

}  // namespace

TEST(WeightGen, MatchesCdoGendis) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData
                                   << ": run the fixture test_remap_data first (ctest -R remap)";
  const int p = etest::world_size(), r = etest::world_rank();
  const auto cs = gendis_cases();
  ASSERT_GE(cs.size(), 4u);
  for (std::size_t ci = 0; ci < cs.size(); ++ci) {
    const rtest::Case& c = cs[ci];
    const estuary::GridGen sg = rtest::grid(c.src), dg = rtest::grid(c.dst);
    const std::string dk = kinds()[ci % kinds().size()];
    const estuary::Grid dst = dg.make(rtest::decomp(dk, dg.size(), p, r));
    const std::vector<Link> got = gather_sorted(estuary::distance_weights(sg, dst, MPI_COMM_WORLD));
    const std::vector<Link> want = sorted(rtest::read_matrix(rtest::weight_file(rtest::kData, c)));
    ASSERT_FALSE(want.empty()) << c.name();
    std::ostringstream why;
    EXPECT_TRUE(same_links(got, want, 1e-10, why)) << c.name() << " dst " << dk << ": " << why.str();
  }
}

TEST(WeightGen, MaskedSourceGetsNoLinks) {
  // tril has land: CDO takes the 4 nearest points and drops those on land, so some points get
  // fewer links and some none; no link ever starts on land.
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("tril"), dg = rtest::grid("ll");
  const estuary::Grid whole = sg.make();
  const estuary::Grid dst = dg.make(estuary::gen::block(dg.size(), r, p));
  const std::vector<Link> got = gather_sorted(estuary::distance_weights(sg, dst, MPI_COMM_WORLD));
  std::vector<int> per_dst(static_cast<std::size_t>(dg.size()), 0);
  for (const Link& l : got) {
    EXPECT_TRUE(whole.valid(l.src)) << "link from masked source point " << l.src;
    ++per_dst[static_cast<std::size_t>(l.dst)];
  }
  EXPECT_GT(std::count(per_dst.begin(), per_dst.end(), 0), 0);
  EXPECT_GT(std::count(per_dst.begin(), per_dst.end(), 2), 0);
  EXPECT_GT(std::count(per_dst.begin(), per_dst.end(), 4), 0);
  // Weights of each point add up to 1.
  std::vector<double> sum(per_dst.size(), 0.0);
  for (const Link& l : got) sum[static_cast<std::size_t>(l.dst)] += l.w;
  for (std::size_t j = 0; j < sum.size(); ++j)
    if (per_dst[j] > 0) {
      EXPECT_NEAR(sum[j], 1.0, 1e-14) << "dst " << j;
    }
}

TEST(WeightGen, SameOnAnyRanksAndDecompositions) {
  // Serial reference on every rank (MPI_COMM_SELF, whole grids), against the parallel result
  // for each source and destination decomposition: bit-identical.
  const int p = etest::world_size(), r = etest::world_rank();
  for (const rtest::Case& c : gendis_cases()) {
    const estuary::GridGen sg = rtest::grid(c.src), dg = rtest::grid(c.dst);
    const std::vector<Link> serial =
        gather_sorted(estuary::distance_weights(sg.make(), dg.make(), MPI_COMM_SELF), MPI_COMM_SELF);
    for (const std::string sk : {"block", "cyclic", "halo", "rank0"})
      for (const std::string& dk : kinds()) {
        const estuary::Grid src = sg.make(rtest::decomp(sk, sg.size(), p, r));
        const estuary::Grid dst = dg.make(rtest::decomp(dk, dg.size(), p, r));
        const std::vector<Link> got = gather_sorted(estuary::distance_weights(src, dst, MPI_COMM_WORLD));
        std::ostringstream why;
        EXPECT_TRUE(same_links(got, serial, 0.0, why)) << c.name() << " src " << sk << " dst " << dk << ": " << why.str();
      }
  }
}

TEST(WeightGen, NearestUnmaskedRule) {
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("tril"), dg = rtest::grid("ll");
  const estuary::Grid whole = sg.make(), dall = dg.make();
  estuary::DistanceWeightOptions opt;
  opt.neighbors = 5;
  opt.mask_rule = estuary::SourceMaskRule::nearest_unmasked;
  const estuary::Grid dst = dg.make(estuary::gen::cyclic(dg.size(), r, p));
  const std::vector<Link> got = gather_sorted(estuary::distance_weights(sg, dst, MPI_COMM_WORLD, opt));
  ASSERT_EQ(static_cast<i64>(got.size()), 5 * dg.size());
  auto xyz = [](double lon, double lat) {
    const double lo = lon * M_PI / 180, la = lat * M_PI / 180;
    return std::array<double, 3>{std::cos(la) * std::cos(lo), std::cos(la) * std::sin(lo), std::sin(la)};
  };
  for (i64 j = 0; j < dg.size(); ++j) {
    const auto q = xyz(dall.lon[static_cast<std::size_t>(j)], dall.lat[static_cast<std::size_t>(j)]);
    std::vector<std::pair<double, i64>> d;  // brute force over the unmasked points
    for (i64 s = 0; s < whole.size(); ++s)
      if (whole.valid(s)) {
        const auto v = xyz(whole.lon[static_cast<std::size_t>(s)], whole.lat[static_cast<std::size_t>(s)]);
        // CDO's distance: the squared chord rounded to single precision (equal distances then
        // tie exactly, and the smaller index comes first).
        const double d2 = (v[0] - q[0]) * (v[0] - q[0]) + (v[1] - q[1]) * (v[1] - q[1]) + (v[2] - q[2]) * (v[2] - q[2]);
        d.push_back({std::sqrt(static_cast<double>(static_cast<float>(d2))), s});
      }
    std::sort(d.begin(), d.end());
    std::vector<i64> want, have;
    double inv = 0;
    for (int k = 0; k < 5; ++k) {
      want.push_back(d[static_cast<std::size_t>(k)].second);
      inv += 1 / d[static_cast<std::size_t>(k)].first;
    }
    std::sort(want.begin(), want.end());
    for (int k = 0; k < 5; ++k) {
      const Link& l = got[static_cast<std::size_t>(5 * j + k)];
      ASSERT_EQ(l.dst, j);
      have.push_back(l.src);
      const auto it = std::find_if(d.begin(), d.end(), [&](const auto& e) { return e.second == l.src; });
      ASSERT_NE(it, d.end());
      EXPECT_NEAR(l.w, (1 / it->first) / inv, 1e-15) << "dst " << j << " src " << l.src;
    }
    EXPECT_EQ(have, want) << "dst " << j;
  }
}

TEST(WeightGen, NearestFillGivesEveryOceanTargetItsNearestOceanSource) {
  // OASIS's default fill: tril has land, so DISTWGT (CDO's rule) and bilinear leave coastal
  // targets without links; fill_nearest links each to the nearest unmasked source point (brute
  // force, CDO's distance and tie order), leaves linked targets as they were, and gives the same
  // links on any rank count.
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("tril"), dg = rtest::grid("ll");
  const estuary::Grid whole = sg.make(), dall = dg.make();
  const estuary::Grid dst = dg.make(estuary::gen::cyclic(dg.size(), r, p));
  const estuary::Grid src = sg.make(estuary::gen::block(sg.size(), r, p));
  auto xyz = [](double lon, double lat) {
    const double lo = lon * M_PI / 180, la = lat * M_PI / 180;
    return std::array<double, 3>{std::cos(la) * std::cos(lo), std::cos(la) * std::sin(lo), std::sin(la)};
  };
  for (const bool bilinear : {false, true}) {
    SCOPED_TRACE(bilinear ? "bilinear" : "distwgt");
    const Links before = bilinear ? estuary::bilinear_weights(src, dst, MPI_COMM_WORLD)
                                  : estuary::distance_weights(src, dst, MPI_COMM_WORLD);
    Links after = before;
    estuary::fill_nearest(src, dst, MPI_COMM_WORLD, after);
    const std::vector<Link> b = gather_sorted(before), a = gather_sorted(after);
    std::vector<int> had(static_cast<std::size_t>(dg.size()), 0);
    for (const Link& l : b) had[static_cast<std::size_t>(l.dst)] = 1;
    ASSERT_GT(std::count(had.begin(), had.end(), 0), 0) << "the case must leave targets unlinked";
    std::vector<Link> kept, filled;
    for (const Link& l : a) (had[static_cast<std::size_t>(l.dst)] ? kept : filled).push_back(l);
    std::ostringstream why;
    EXPECT_TRUE(same_links(kept, b, 0.0, why)) << why.str();
    std::vector<int> got(static_cast<std::size_t>(dg.size()), 0);
    for (const Link& l : filled) {
      ++got[static_cast<std::size_t>(l.dst)];
      EXPECT_EQ(l.w, 1.0);
      const auto q = xyz(dall.lon[static_cast<std::size_t>(l.dst)], dall.lat[static_cast<std::size_t>(l.dst)]);
      double best = 1e300;
      i64 want = -1;
      for (i64 s = 0; s < whole.size(); ++s)
        if (whole.valid(s)) {
          const auto v = xyz(whole.lon[static_cast<std::size_t>(s)], whole.lat[static_cast<std::size_t>(s)]);
          const double d2 = (v[0] - q[0]) * (v[0] - q[0]) + (v[1] - q[1]) * (v[1] - q[1]) + (v[2] - q[2]) * (v[2] - q[2]);
          const double d = std::sqrt(static_cast<double>(static_cast<float>(d2)));
          if (d < best) {
            best = d;
            want = s;
          }
        }
      EXPECT_EQ(l.src, want) << "target " << l.dst;
    }
    for (i64 j = 0; j < dg.size(); ++j)
      if (dall.valid(j)) {
        EXPECT_EQ(had[static_cast<std::size_t>(j)] + got[static_cast<std::size_t>(j)] > 0, true) << "target " << j;
        EXPECT_LE(got[static_cast<std::size_t>(j)], 1) << "target " << j;
      }
    // The same on one rank.
    const estuary::Grid d1 = dg.make();
    Links serial = bilinear ? estuary::bilinear_weights(whole, d1, MPI_COMM_SELF)
                            : estuary::distance_weights(whole, d1, MPI_COMM_SELF);
    estuary::fill_nearest(whole, d1, MPI_COMM_SELF, serial);
    std::ostringstream why2;
    EXPECT_TRUE(same_links(a, gather_sorted(serial, MPI_COMM_SELF), 0.0, why2)) << why2.str();
  }
}

TEST(WeightGen, GaussianWeightsFollowOasisFormula) {
  // OASIS's GAUSWGT written out by brute force: angular distances from lat/lon in radians, the n
  // nearest (ties to the smaller index), masked dropped, 1/(exp(d^2/(2 s2)) + eps) normalised,
  // s2 = variance x (mean distance between consecutive source points)^2.
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("tril"), dg = rtest::grid("ll");
  const estuary::Grid whole = sg.make(), dall = dg.make();
  estuary::GaussianWeightOptions opt;
  opt.neighbors = 5;
  opt.variance = 1.7;
  const estuary::Grid src = sg.make(estuary::gen::cyclic(sg.size(), r, p));
  const estuary::Grid dst = dg.make(estuary::gen::block(dg.size(), r, p));
  const std::vector<Link> got = gather_sorted(estuary::gaussian_weights(src, dst, MPI_COMM_WORLD, opt));
  const double k = M_PI / 180;
  auto ang = [&](double lo1, double la1, double lo2, double la2) {
    const double c = std::sin(la1 * k) * std::sin(la2 * k) +
                     std::cos(la1 * k) * std::cos(la2 * k) * (std::cos(lo1 * k) * std::cos(lo2 * k) + std::sin(lo1 * k) * std::sin(lo2 * k));
    return std::acos(std::min(1.0, std::max(-1.0, c)));
  };
  const auto ns = static_cast<std::size_t>(whole.size());
  double mean = ang(whole.lon[ns - 1], whole.lat[ns - 1], whole.lon[0], whole.lat[0]);
  for (std::size_t u = 1; u < ns; ++u) mean += ang(whole.lon[u - 1], whole.lat[u - 1], whole.lon[u], whole.lat[u]);
  mean /= static_cast<double>(ns);
  const double s2 = opt.variance * mean * mean;
  std::vector<Link> want;
  for (i64 j = 0; j < dg.size(); ++j) {
    const auto v = static_cast<std::size_t>(j);
    std::vector<std::pair<double, i64>> d;
    for (std::size_t u = 0; u < ns; ++u) d.push_back({ang(dall.lon[v], dall.lat[v], whole.lon[u], whole.lat[u]), static_cast<i64>(u)});
    std::stable_sort(d.begin(), d.end());
    std::vector<std::pair<i64, double>> kept;
    double total = 0;
    for (int n = 0; n < opt.neighbors; ++n) {
      const auto [dist, s] = d[static_cast<std::size_t>(n)];
      if (!whole.valid(s)) continue;
      const double w = 1.0 / (std::exp(0.5 * dist * dist / s2) + DBL_EPSILON);
      kept.push_back({s, w});
      total += w;
    }
    for (const auto& [s, w] : kept) want.push_back({j, s, w / total});
  }
  std::vector<Link> w_sorted = want;
  std::sort(w_sorted.begin(), w_sorted.end());
  std::ostringstream why;
  EXPECT_TRUE(same_links(got, w_sorted, 1e-13, why)) << why.str();
  // Coastal targets whose 5 nearest are all on land get none (fill_nearest adds OASIS's fill).
  std::vector<int> per(static_cast<std::size_t>(dg.size()), 0);
  for (const Link& l : got) ++per[static_cast<std::size_t>(l.dst)];
  EXPECT_GT(std::count(per.begin(), per.end(), 5), 0);
  EXPECT_GT(std::count_if(per.begin(), per.end(), [](int n) { return n > 0 && n < 5; }), 0);
}

TEST(WeightGen, WrittenFileReadsBackAndCdoAppliesIt) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const int p = etest::world_size(), r = etest::world_rank();
  const rtest::Case c{"rg", "cs", "gendis"};
  const estuary::GridGen sg = rtest::grid(c.src), dg = rtest::grid(c.dst);
  const estuary::Grid src = sg.make(estuary::gen::block(sg.size(), r, p));
  const estuary::Grid dst = dg.make(estuary::gen::block(dg.size(), r, p));
  const Links links = estuary::distance_weights(src, dst, MPI_COMM_WORLD);
  const std::string path = rtest::kData + "/wgen_" + c.name() + "_np" + std::to_string(p) + ".nc";
  estuary::WeightWriteOptions wo;
  wo.map_method = "Distance weighted avg of nearest neighbors";
  wo.src_grid = &src;
  wo.dst_grid = &dst;
  estuary::write_weights(path, links, sg.size(), dg.size(), MPI_COMM_WORLD, wo);
  MPI_Barrier(MPI_COMM_WORLD);
  // File order with a block destination: destination by destination, as CDO orders its links.
  const rtest::Matrix m = rtest::read_matrix(path);
  const rtest::Matrix cdo = rtest::read_matrix(rtest::weight_file(rtest::kData, c));
  EXPECT_EQ(m.dst, cdo.dst);
  std::ostringstream why;
  EXPECT_TRUE(same_links(sorted(m), sorted(cdo), 1e-10, why)) << why.str();
  // CDO applies estuary's file (a file that does not fit would make CDO warn and regenerate).
  bool ok = true;
  if (r == 0) {
    const std::string out = rtest::kData + "/cdo_wgen_np" + std::to_string(p) + ".nc";
    const std::string err = rtest::kData + "/cdo_wgen_np" + std::to_string(p) + ".txt";
    const std::string cmd = "cdo -s -O -b F64 remap," + rtest::grid_file(rtest::kData, c.dst) + "," + path +
                            " -setgrid," + rtest::grid_file(rtest::kData, c.src) + " " +
                            rtest::field_file(rtest::kData, c.src) + " " + out + " 2>" + err +
                            " && ! grep -i 'not used' " + err;
    ok = std::system(cmd.c_str()) == 0;
    EXPECT_TRUE(ok) << cmd;
    if (ok) {
      const std::vector<double> got = rtest::read_field(out), want = rtest::read_field(rtest::cdo_out_file(rtest::kData, c));
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-12 * std::abs(want[j])) << j;
    }
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(WeightGen, Errors) {
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("rg"), dg = rtest::grid("cs");
  const estuary::Grid dst = dg.make(estuary::gen::block(dg.size(), r, p));
  estuary::DistanceWeightOptions opt;
  opt.neighbors = 0;
  EXPECT_THROW(estuary::distance_weights(sg, dst, MPI_COMM_WORLD, opt), estuary::Error);
  // Rank 0 holds no source point: point 0 is then held by nobody when it is rank 0's share.
  const estuary::Grid part = sg.make(r == 0 ? estuary::Decomp::empty(sg.size()) : estuary::gen::block(sg.size(), r - 1, std::max(p - 1, 1)));
  if (p > 1) {
    EXPECT_NO_THROW(estuary::distance_weights(part, dst, MPI_COMM_WORLD));
  }
  const estuary::Grid none = sg.make(estuary::Decomp::empty(sg.size()));
  EXPECT_THROW(estuary::distance_weights(none, dst, MPI_COMM_WORLD), estuary::Error);
}

TEST(WeightGen, MaskedDestinationGetsNoLinks) {
  // Masked destination points are skipped (CDO: tgtGrid mask); the others keep the links they
  // get without the mask.
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("ll"), land = rtest::grid("tril"), sea = estuary::GridGen::tripolar(30, 20);
  const estuary::Grid whole = land.make();
  const std::vector<Link> masked =
      gather_sorted(estuary::distance_weights(sg, land.make(estuary::gen::cyclic(land.size(), r, p)), MPI_COMM_WORLD));
  const std::vector<Link> all =
      gather_sorted(estuary::distance_weights(sg, sea.make(estuary::gen::block(sea.size(), r, p)), MPI_COMM_WORLD));
  std::vector<Link> want;
  for (const Link& l : all)
    if (whole.valid(l.dst)) want.push_back(l);
  ASSERT_LT(want.size(), all.size());
  std::ostringstream why;
  EXPECT_TRUE(same_links(masked, want, 0.0, why)) << why.str();
}

namespace {

// The n nearest source points of (lon, lat) over the whole grid, by brute force: CDO's
// distance (the squared chord rounded to single precision), ties to the smaller index; only
// unmasked points when `unmasked`.
std::vector<i64> brute_nearest(const estuary::Grid& whole, double lon, double lat, int n, bool unmasked) {
  auto xyz = [](double lo, double la) {
    const double a = lo * M_PI / 180, b = la * M_PI / 180;
    return std::array<double, 3>{std::cos(b) * std::cos(a), std::cos(b) * std::sin(a), std::sin(b)};
  };
  const auto q = xyz(lon, lat);
  std::vector<std::pair<double, i64>> d;
  for (i64 s = 0; s < whole.size(); ++s) {
    if (unmasked && !whole.valid(s)) continue;
    const auto v = xyz(whole.lon[static_cast<std::size_t>(s)], whole.lat[static_cast<std::size_t>(s)]);
    const double d2 = (v[0] - q[0]) * (v[0] - q[0]) + (v[1] - q[1]) * (v[1] - q[1]) + (v[2] - q[2]) * (v[2] - q[2]);
    d.push_back({std::sqrt(static_cast<double>(static_cast<float>(d2))), s});
  }
  std::sort(d.begin(), d.end());
  std::vector<i64> out;
  for (int k = 0; k < n && k < static_cast<int>(d.size()); ++k) out.push_back(d[static_cast<std::size_t>(k)].second);
  std::sort(out.begin(), out.end());
  return out;
}

// A regional curvilinear source (nx x ny, lon 10..22, lat 30..40, rows sheared) with land in
// one corner, and a few points of it moved far away: most destination points of a global grid
// are far from every source point, so each rank's search must reach far beyond its own points.
struct Regional {
  estuary::Grid whole;
  explicit Regional(i64 nx, i64 ny) {
    whole.kind = estuary::GridKind::curvilinear;
    whole.name = "regional";
    whole.dims = {nx, ny};
    whole.global_size = nx * ny;
    for (i64 j = 0; j < ny; ++j)
      for (i64 i = 0; i < nx; ++i) {
        whole.lon.push_back(10.0 + 12.0 * static_cast<double>(i) / static_cast<double>(nx - 1) + 0.05 * static_cast<double>(j));
        whole.lat.push_back(30.0 + 10.0 * static_cast<double>(j) / static_cast<double>(ny - 1));
        whole.mask.push_back(i < nx / 3 && j < ny / 2 ? 0 : 1);
      }
    whole.lon[0] = -150, whole.lat[0] = -60;  // outliers (masked, then unmasked)
    whole.lon[static_cast<std::size_t>(nx * ny - 1)] = 100, whole.lat[static_cast<std::size_t>(nx * ny - 1)] = 75;
  }
  estuary::Grid part(const estuary::Decomp& d) const {
    estuary::Grid g = whole;
    g.points = d.to_indices();
    g.lon.clear(), g.lat.clear(), g.mask.clear();
    for (i64 k : g.points) {
      g.lon.push_back(whole.lon[static_cast<std::size_t>(k)]);
      g.lat.push_back(whole.lat[static_cast<std::size_t>(k)]);
      g.mask.push_back(whole.mask[static_cast<std::size_t>(k)]);
    }
    return g;
  }
};

}  // namespace

TEST(WeightGen, DistributedSearchMatchesGatheredSearch) {
#if defined(__SANITIZE_ADDRESS__)
  // Every rank builds the serial references (brute force included): under AddressSanitizer on
  // more than 4 oversubscribed ranks that alone outlasts the time-out. 1 to 4 ranks still run it
  // there, and every rank count in the ordinary build.
  if (etest::world_size() > 4) GTEST_SKIP() << "the references are too slow under AddressSanitizer beyond 4 ranks";
#endif
  // Each rank fetches only the source points near its destination points (bins around them,
  // widened until they hold enough points). Against the whole source searched by brute force
  // (the n nearest of every destination point: what a search over the gathered grid finds),
  // and against one rank holding both grids (bit for bit, every method on the search), with
  // the destination points scattered over the ranks (random, cyclic) and the source in
  // cyclic shares or blocks with repeated points. Source grids: a coarse one (32 points, so
  // bins hold few points and widen far), a tripolar one with land (the unmasked-only search
  // widens over continents), a Gaussian grid, and a regional grid far from most destination
  // points.
  const int p = etest::world_size(), r = etest::world_rank();
  struct Pair {
    std::function<estuary::Grid(const estuary::Decomp&)> src;
    i64 src_size;
    estuary::GridGen dst;
    std::string name;
  };
  auto gen = [](const estuary::GridGen& g) {
    return [g](const estuary::Decomp& d) { return g.make(d); };
  };
  const estuary::GridGen coarse = estuary::GridGen::lonlat(8, 4), tri = estuary::GridGen::tripolar(60, 40).with_land(),
                         gauss = estuary::GridGen::gaussian(48, 24);
  const Regional regional(70, 50);
  const std::vector<Pair> pairs = {
      {gen(coarse), coarse.size(), estuary::GridGen::lonlat(37, 23), coarse.name()},
      {gen(tri), tri.size(), estuary::GridGen::reduced_gaussian(16), tri.name()},
      {gen(gauss), gauss.size(), estuary::GridGen::tripolar(50, 36).with_land(), gauss.name()},
      {[&](const estuary::Decomp& d) { return regional.part(d); }, regional.whole.global_size,
       estuary::GridGen::lonlat(36, 18), "regional"},
  };
  // (A folded row may hold several links to one source point, one a corner: ordered by weight
  // too, so that the comparison does not depend on how the sort left them.)
  auto full = [](std::vector<Link> l) {
    std::sort(l.begin(), l.end(), [](const Link& a, const Link& b) { return std::tie(a.dst, a.src, a.w) < std::tie(b.dst, b.src, b.w); });
    return l;
  };
  // The columns as links (one a column) so that they are compared in the same order.
  auto column_links = [](const estuary::BicubicWeights& b) {
    Links l;
    for (std::size_t k = 0; k < b.columns.size(); ++k)
      for (int c = 0; c < 4; ++c) l.add(b.value.row[k], 4 * b.value.col[k] + c, b.columns[k][static_cast<std::size_t>(c)]);
    return l;
  };
  estuary::GaussianWeightOptions go;
  go.neighbors = 5;
  estuary::BilinearWeightOptions nf;
  nf.fold = false;
  for (const Pair& pr : pairs) {
    const estuary::Grid whole = pr.src(estuary::Decomp::stripes(pr.src_size, {{0, pr.src_size, 1}})), dall = pr.dst.make();
    // The references, once: brute force for DISTWGT (both mask rules), one rank for the rest.
    std::vector<Link> brute[2], one_dist[2];
    estuary::DistanceWeightOptions dopt[2];
    for (const bool unmasked : {false, true}) {
      estuary::DistanceWeightOptions& o = dopt[unmasked];
      o.neighbors = unmasked ? 3 : 6;
      o.mask_rule = unmasked ? estuary::SourceMaskRule::nearest_unmasked : estuary::SourceMaskRule::drop_after_search;
      for (i64 j = 0; j < dall.size(); ++j) {
        if (!dall.valid(j)) continue;
        for (i64 s : brute_nearest(whole, dall.lon[static_cast<std::size_t>(j)], dall.lat[static_cast<std::size_t>(j)],
                                   o.neighbors, unmasked))
          if (whole.valid(s)) brute[unmasked].push_back({j, s, 0.0});
      }
      one_dist[unmasked] = gather_sorted(estuary::distance_weights(whole, dall, MPI_COMM_SELF, o), MPI_COMM_SELF);
    }
    const std::vector<Link> one_gaus = full(gather_sorted(estuary::gaussian_weights(whole, dall, MPI_COMM_SELF, go), MPI_COMM_SELF));
    Links bl1 = estuary::bilinear_weights(whole, dall, MPI_COMM_SELF);
    const std::vector<Link> one_bil = full(gather_sorted(bl1, MPI_COMM_SELF));
    estuary::fill_nearest(whole, dall, MPI_COMM_SELF, bl1);
    const std::vector<Link> one_fill = full(gather_sorted(bl1, MPI_COMM_SELF));
    const estuary::BicubicWeights bc1 = estuary::bicubic_weights(whole, dall, MPI_COMM_SELF);
    const std::vector<Link> one_folded = full(gather_sorted(bc1.links, MPI_COMM_SELF));
    const std::vector<Link> one_cols = full(gather_sorted(column_links(bc1), MPI_COMM_SELF));
    // Scattered destination points (every rank searches everywhere), and blocks (each rank
    // fetches only what its own region needs: what a too short reach would get wrong).
    for (const std::string dk : {"random", "cyclic", "block"}) {
      if (dk != "random" && &pr != &pairs[1] && &pr != &pairs[3]) continue;  // (keeps the test quick)
      const std::string sk = dk == "cyclic" ? "halo" : "cyclic";
      const estuary::Grid src = pr.src(rtest::decomp(sk, pr.src_size, p, r));
      const estuary::Grid dst = pr.dst.make(rtest::decomp(dk, pr.dst.size(), p, r));
      const std::string at = pr.name + " -> " + pr.dst.name() + ", src " + sk + ", dst " + dk;
      auto same = [&](const Links& par, const std::vector<Link>& want, const std::string& what) {
        std::ostringstream why;
        EXPECT_TRUE(same_links(full(gather_sorted(par)), want, 0.0, why)) << at << ", " << what << ": " << why.str();
      };
      // DISTWGT, both mask rules: the links' sources are the brute-force nearest (minus the
      // masked ones for CDO's rule), and the links those of one rank, bit for bit.
      for (const bool unmasked : {false, true}) {
        const std::vector<Link> got = gather_sorted(estuary::distance_weights(src, dst, MPI_COMM_WORLD, dopt[unmasked]));
        const std::vector<Link>& want = brute[unmasked];
        ASSERT_EQ(got.size(), want.size()) << at << (unmasked ? " unmasked" : "");
        for (std::size_t k = 0; k < got.size(); ++k)
          ASSERT_TRUE(got[k].dst == want[k].dst && got[k].src == want[k].src)
              << at << ": link " << k << " is " << got[k].dst << "->" << got[k].src << ", brute force "
              << want[k].dst << "->" << want[k].src;
        std::ostringstream why;
        EXPECT_TRUE(same_links(got, one_dist[unmasked], 0.0, why)) << at << ": " << why.str();
      }
      // GAUSWGT, bilinear, the nearest fill, bicubic (the folded matrix and the value links'
      // 4 columns, with and without the fold): bit-identical to one rank.
      same(estuary::gaussian_weights(src, dst, MPI_COMM_WORLD, go), one_gaus, "gauswgt");
      Links bl = estuary::bilinear_weights(src, dst, MPI_COMM_WORLD);
      same(bl, one_bil, "bilinear");
      estuary::fill_nearest(src, dst, MPI_COMM_WORLD, bl);
      same(bl, one_fill, "bilinear + fill_nearest");
      const estuary::BicubicWeights bc = estuary::bicubic_weights(src, dst, MPI_COMM_WORLD);
      same(bc.links, one_folded, "bicubic folded");
      same(column_links(bc), one_cols, "bicubic columns");
      const estuary::BicubicWeights bn = estuary::bicubic_weights(src, dst, MPI_COMM_WORLD, nf);
      same(column_links(bn), one_cols, "bicubic columns, no fold");
      EXPECT_EQ(bn.links.size(), 0);
    }
  }
}
