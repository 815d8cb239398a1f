// Conservative weight generation (first and second order) against CDO and against the sphere:
//  - for every gencon case of the remap fixture (lon-lat -> tripolar, masked tripolar -> lon-lat,
//    reduced Gaussian -> cubed sphere, Gaussian -> reduced Gaussian, cubed sphere -> Gaussian),
//    estuary's links equal CDO 2.1's (same (src, dst) pairs, weights within 1e-10), with the
//    destination decomposed five ways;
//  - the links are bit-identical on every rank count and decomposition;
//  - cell areas of every grid kind sum to 4 pi within 1e-12 (poles and the dateline inside);
//  - a constant maps to the constant and the global integral is conserved to 1e-12;
//  - destarea and none normalisations relate to fracarea as their definitions say;
//  - second order reproduces a linear field exactly where first order cannot.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <sstream>

#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/weightgen.hpp"
#include "link_test_util.hpp"
#include "remap_test_util.hpp"

using estuary::ConservativeOptions;
using estuary::ConservNormalization;
using ltest::gather_sorted;
using ltest::kinds;
using ltest::Link;
using ltest::same_links;
using ltest::sorted;
using rtest::i64;

namespace {

estuary::ConservativeWeights weights(const estuary::GridGen& sg, const estuary::GridGen& dg, const std::string& sk,
                                     const std::string& dk, const ConservativeOptions& opt = {}) {
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::Grid src = sg.make(rtest::decomp(sk, sg.size(), p, r));
  const estuary::Grid dst = dg.make(rtest::decomp(dk, dg.size(), p, r));
  return estuary::conservative_weights(src, dst, MPI_COMM_WORLD, opt);
}

}  // namespace

// CDO 2.1 (YAC's clipping) counts one sliver twice: where a great-circle edge of a destination
// cell joins two corners lying on a source circle of latitude, the lens between the circle and
// the great circle goes to the source cell on the far side of the edge as well (ll_tri: the
// first row of the tripolar cap, whose lower edge has its corners on 40N, gets a link to the
// lon-lat cell south of 40N although the whole cell lies north of it; the row below rightly
// gets the same lens for the cell north of 40N). estuary does not: its areas add up (see
// IntersectionsTileTheSphere). So CDO's file is compared after taking out those links: each
// destination cell where CDO has a link estuary lacks must be the case above, with CDO's other
// weights equal to estuary's times the share of the dropped links (fracarea renormalises).
TEST(Conservative, MatchesCdoGencon) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData
                                   << ": run the fixture test_remap_data first (ctest -R remap)";
  const auto cs = ltest::cases_of("gencon");
  ASSERT_GE(cs.size(), 5u);
  for (std::size_t ci = 0; ci < cs.size(); ++ci) {
    const rtest::Case& c = cs[ci];
    const std::string dk = kinds()[ci % kinds().size()], sk = kinds()[(ci + 2) % kinds().size()];
    const estuary::GridGen sg = rtest::grid(c.src), dg = rtest::grid(c.dst);
    const auto w = weights(sg, dg, sk, dk);
    const std::vector<Link> got = gather_sorted(w.links);
    std::vector<Link> want = sorted(rtest::read_matrix(rtest::weight_file(rtest::kData, c)));
    ASSERT_FALSE(want.empty()) << c.name();
    // CDO's links that estuary lacks, by destination cell.
    std::map<i64, double> dropped;
    {
      std::size_t g = 0;
      for (const Link& l : want) {
        while (g < got.size() && got[g] < l) ++g;
        if (g < got.size() && got[g].dst == l.dst && got[g].src == l.src) continue;
        dropped[l.dst] += l.w;
      }
    }
    if (c.name() == "ll_tri_gencon") {
      // Exactly the first cap row (36 cells), one lens each, to the cell south of 40N.
      EXPECT_EQ(dropped.size(), 36u) << c.name();
      const estuary::Grid tri = dg.make();
      const estuary::Grid ll = sg.make();
      for (const Link& l : want)
        if (dropped.count(l.dst) && std::none_of(got.begin(), got.end(), [&](const Link& x) { return x.dst == l.dst && x.src == l.src; })) {
          const double* la = &tri.corner_lat[static_cast<std::size_t>(4 * l.dst)];
          EXPECT_DOUBLE_EQ(la[0], 40.0) << "dst " << l.dst;
          EXPECT_DOUBLE_EQ(la[1], 40.0) << "dst " << l.dst;
          EXPECT_LT(ll.lat[static_cast<std::size_t>(l.src)], 40.0) << "src " << l.src;
        }
    } else {
      EXPECT_TRUE(dropped.empty()) << c.name() << ": CDO has " << dropped.size() << " cells with links estuary lacks";
    }
    std::vector<Link> kept;
    for (const Link& l : want) {
      const auto it = dropped.find(l.dst);
      if (it == dropped.end()) {
        kept.push_back(l);
        continue;
      }
      if (std::any_of(got.begin(), got.end(), [&](const Link& x) { return x.dst == l.dst && x.src == l.src; }))
        kept.push_back({l.dst, l.src, l.w / (1.0 - it->second)});
    }
    std::ostringstream why;
    double md = 0;
    EXPECT_TRUE(same_links(got, kept, 1e-10, why, &md)) << c.name() << " dst " << dk << ": " << why.str();
    if (etest::world_rank() == 0)
      std::printf("%s: %zu links, max |w - w_cdo| = %.3g (%zu cells with CDO's double-counted lens)\n", c.name().c_str(),
                  got.size(), md, dropped.size());
  }
}

// Bit for bit the same links for any rank count and decomposition: compared with one rank's
// serial computation of the whole grids.
TEST(Conservative, SameBitsOnAnyRanksAndDecomposition) {
  const int r = etest::world_rank();
  for (const auto& [sn, dn] : std::vector<std::pair<std::string, std::string>>{{"tril", "gg"}, {"cs", "rg"}, {"ll", "tri"}}) {
    const estuary::GridGen sg = rtest::grid(sn), dg = rtest::grid(dn);
    std::vector<Link> serial;
    if (r == 0) {
      const auto w = estuary::conservative_weights(sg.make(), dg.make(), MPI_COMM_SELF);
      for (std::size_t k = 0; k < w.links.row.size(); ++k) serial.push_back({w.links.row[k], w.links.col[k], w.links.weight[k]});
      std::sort(serial.begin(), serial.end());
    }
    const bool ok0 = !serial.empty() || r != 0;
    EXPECT_TRUE(ok0);
    for (const auto& [sk, dk] : rtest::decomp_pairs()) {
      if (sk == "halo" || dk == "halo") continue;  // a destination held twice gets its links twice
      const std::vector<Link> got = gather_sorted(weights(sg, dg, sk, dk).links);
      if (r != 0) continue;
      std::ostringstream why;
      EXPECT_TRUE(same_links(got, serial, 0, why)) << sn << "->" << dn << " " << sk << "/" << dk << ": " << why.str();
    }
  }
}

namespace {

double allsum(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return v;
}

}  // namespace

// Every grid kind that covers the sphere tiles it: cell areas (pole cells and cells across the
// dateline included) sum to 4 pi. The tripolar grid stops at its southern row (no Antarctic
// ocean), so with it the intersections add up to its own area. And each source cell's
// intersections add up to its area wherever the destination grid covers it.
TEST(Conservative, IntersectionsTileTheSphere) {
  ConservativeOptions none;
  none.normalization = ConservNormalization::none;
  const std::vector<std::pair<std::string, std::string>> pairs = {{"ll", "tri"}, {"tri", "ll"}, {"rg", "cs"},
                                                                  {"gg", "rg"},  {"cs", "gg"},  {"tri", "cs"}};
  for (const auto& [sn, dn] : pairs) {
    const estuary::GridGen sg = rtest::grid(sn), dg = rtest::grid(dn);
    const auto w = weights(sg, dg, "block", "cyclic", none);
    double area = 0, inter = 0;
    for (double a : w.dst_area) area += a;
    for (double a : w.links.weight) inter += a;
    area = allsum(area);
    inter = allsum(inter);
    const estuary::Grid src = sg.make();
    double src_area = 0;
    for (double a : src.area) src_area += a;
    if (dn != "tri") {
      EXPECT_NEAR(area, 4 * M_PI, 1e-12) << dn << " cell areas";
    }
    if (sn != "tri") {
      EXPECT_NEAR(src_area, 4 * M_PI, 1e-12) << sn << " cell areas (the grid's own)";
    }
    EXPECT_NEAR(inter, std::min(area, src_area), 1e-12) << sn << "->" << dn << " intersections";
    // The same areas as Grid::compute_areas (a separate implementation: exact lon-lat boxes,
    // great-circle polygons otherwise).
    double own = 0;
    for (double a : dg.make().area) own += a;
    EXPECT_NEAR(area, own, 1e-12) << dn;
    if (dn == "tri") continue;
    // Per source cell: its intersections add up to its area (the whole grid on every rank).
    std::vector<double> per(static_cast<std::size_t>(src.size()), 0.0);
    for (std::size_t k = 0; k < w.links.col.size(); ++k) per[static_cast<std::size_t>(w.links.col[k])] += w.links.weight[k];
    MPI_Allreduce(MPI_IN_PLACE, per.data(), static_cast<int>(per.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double worst = 0;
    for (std::size_t s = 0; s < per.size(); ++s) worst = std::max(worst, std::abs(per[s] - src.area[s]));
    EXPECT_LT(worst, 1e-14) << sn << "->" << dn << ": a source cell's intersections do not add up to its area";
  }
}

// fracarea maps a constant to itself; destarea conserves the global integral of any field.
TEST(Conservative, ConstantAndGlobalIntegral) {
  for (const auto& [sn, dn] : std::vector<std::pair<std::string, std::string>>{{"cs", "gg"}, {"rg", "ll"}, {"gg", "cs"}}) {
    const estuary::GridGen sg = rtest::grid(sn), dg = rtest::grid(dn);
    const estuary::Grid src = sg.make();
    std::vector<double> f(static_cast<std::size_t>(src.size()));
    for (std::size_t s = 0; s < f.size(); ++s) f[s] = rtest::field(1, src.lon[s], src.lat[s]);
    const auto frac = weights(sg, dg, "random", "block");
    std::map<i64, double> rowsum;
    for (std::size_t k = 0; k < frac.links.row.size(); ++k) rowsum[frac.links.row[k]] += frac.links.weight[k];
    double worst = 0;
    for (const auto& [d, v] : rowsum) worst = std::max(worst, std::abs(v - 1.0));
    EXPECT_LT(worst, 1e-12) << sn << "->" << dn << ": a constant does not map to itself";
    ConservativeOptions da;
    da.normalization = ConservNormalization::destarea;
    const auto w = weights(sg, dg, "block", "random", da);
    // sum_d A_d (W f)_d against sum_s A_s f_s.
    double dst_integral = 0, src_integral = 0;
    const estuary::Grid dpart = dg.make(rtest::decomp("random", dg.size(), etest::world_size(), etest::world_rank()));
    std::map<i64, double> area_of;
    for (i64 j = 0; j < dpart.size(); ++j) area_of[dpart.global_index(j)] = w.dst_area[static_cast<std::size_t>(j)];
    for (std::size_t k = 0; k < w.links.row.size(); ++k)
      dst_integral += area_of[w.links.row[k]] * w.links.weight[k] * f[static_cast<std::size_t>(w.links.col[k])];
    for (std::size_t s = 0; s < f.size(); ++s) src_integral += src.area[s] * f[s];
    EXPECT_NEAR(allsum(dst_integral), src_integral, 1e-12 * std::abs(src_integral)) << sn << "->" << dn;
  }
}

// destarea = fracarea * frac and none = destarea * area, on a masked source; masked
// destination cells get no links; masked source cells are never linked.
TEST(Conservative, NormalisationsAndMasks) {
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("tril"), dg = rtest::grid("ll");
  std::vector<estuary::ConservativeWeights> w;
  for (ConservNormalization n : {ConservNormalization::fracarea, ConservNormalization::destarea, ConservNormalization::none}) {
    ConservativeOptions o;
    o.normalization = n;
    w.push_back(weights(sg, dg, "cyclic", "block", o));
  }
  ASSERT_EQ(w[0].links.size(), w[1].links.size());
  ASSERT_EQ(w[0].links.size(), w[2].links.size());
  const estuary::Grid dst = dg.make(estuary::gen::block(dg.size(), r, p));
  std::map<i64, std::size_t> local;
  for (i64 j = 0; j < dst.size(); ++j) local[dst.global_index(j)] = static_cast<std::size_t>(j);
  const estuary::Grid src = sg.make();
  bool partial = false;
  for (std::size_t k = 0; k < w[0].links.row.size(); ++k) {
    const std::size_t j = local.at(w[0].links.row[k]);
    EXPECT_NEAR(w[1].links.weight[k], w[0].links.weight[k] * w[0].dst_frac[j], 1e-15);
    EXPECT_NEAR(w[2].links.weight[k], w[1].links.weight[k] * w[0].dst_area[j], 1e-17);
    EXPECT_TRUE(src.valid(w[0].links.col[k])) << "masked source " << w[0].links.col[k] << " linked";
    partial = partial || w[0].dst_frac[j] < 0.99;
  }
  EXPECT_GT(allsum(partial ? 1.0 : 0.0), 0.0) << "the land mask should leave coast cells partly covered";
  // A masked destination: tril as the destination of ll.
  const estuary::GridGen tg = rtest::grid("tril");
  const estuary::Grid tdst = tg.make(estuary::gen::cyclic(tg.size(), r, p));
  const auto t = estuary::conservative_weights(rtest::grid("ll").make(estuary::gen::block(648, r, p)), tdst, MPI_COMM_WORLD);
  std::map<i64, bool> valid;
  for (i64 j = 0; j < tdst.size(); ++j) valid[tdst.global_index(j)] = tdst.valid(j);
  for (i64 d : t.links.row) EXPECT_TRUE(valid.at(d)) << "masked destination " << d << " has links";
  EXPECT_GT(allsum(static_cast<double>(t.links.size())), 0.0);
}

TEST(Conservative, Errors) {
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen g = rtest::grid("gg");
  const estuary::Grid a = g.make(estuary::gen::block(g.size(), r, p));
  estuary::Grid bare = a;
  bare.ncorner = 0;
  bare.corner_lon.clear();
  bare.corner_lat.clear();
  try {
    estuary::conservative_weights(bare, a, MPI_COMM_WORLD);
    ADD_FAILURE() << "no error for a source without corners";
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no cell corners"), std::string::npos) << e.what();
  }
  ConservativeOptions o;
  o.order = 3;
  try {
    estuary::conservative_weights(a, a, MPI_COMM_WORLD, o);
    ADD_FAILURE() << "no error for order 3";
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find("order must be 1 or 2"), std::string::npos) << e.what();
  }
}

namespace {

// The exact average of f(x) = x + 2z over a lon-lat box (its corners, degrees).
double box_average(const double* clon, const double* clat) {
  const double d = M_PI / 180;
  double l1 = clon[0], l2 = clon[1];
  if (l2 < l1) l2 += 360;
  const double p1 = std::min(clat[0], clat[2]) * d, p2 = std::max(clat[0], clat[2]) * d;
  l1 *= d;
  l2 *= d;
  const double area = (l2 - l1) * (std::sin(p2) - std::sin(p1));
  const double ix = (std::sin(l2) - std::sin(l1)) * ((p2 - p1) / 2 + (std::sin(2 * p2) - std::sin(2 * p1)) / 4);
  const double iz = (l2 - l1) * (std::sin(p2) * std::sin(p2) - std::sin(p1) * std::sin(p1)) / 2;
  return (ix + 2 * iz) / area;
}

// Worst error of the remapped field of cell averages, on destination cells within 60 degrees of
// the equator (the gradient from neighbours is poor in the rows at the poles).
double remap_error(i64 n, int order) {
  const estuary::GridGen sg = estuary::GridGen::lonlat(2 * n, n), dg = estuary::GridGen::lonlat(2 * (n * 2 / 3) + 2, n * 2 / 3 + 1);
  const estuary::Grid src = sg.make();
  std::vector<double> f(static_cast<std::size_t>(src.size()));
  for (std::size_t s = 0; s < f.size(); ++s) f[s] = box_average(&src.corner_lon[4 * s], &src.corner_lat[4 * s]);
  ConservativeOptions o;
  o.order = order;
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::Grid dst = dg.make(estuary::gen::block(dg.size(), r, p));
  const auto w = estuary::conservative_weights(src, dst, MPI_COMM_WORLD, o);  // whole source everywhere: repeats
  std::map<i64, double> got;
  for (std::size_t k = 0; k < w.links.row.size(); ++k) got[w.links.row[k]] += w.links.weight[k] * f[static_cast<std::size_t>(w.links.col[k])];
  double worst = 0;
  for (i64 j = 0; j < dst.size(); ++j) {
    const auto u = static_cast<std::size_t>(j);
    if (std::abs(dst.lat[u]) > 60) continue;
    worst = std::max(worst, std::abs(got[dst.global_index(j)] - box_average(&dst.corner_lon[4 * u], &dst.corner_lat[4 * u])));
  }
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

}  // namespace

// Second order against exact cell averages of a linear field: far more accurate than first
// order, and converging as h^2 (first order as h) when the grids are refined.
TEST(Conservative, SecondOrderConvergesFaster) {
  const double e1 = remap_error(24, 1), e2 = remap_error(24, 2);
  const double f1 = remap_error(48, 1), f2 = remap_error(48, 2);
  if (etest::world_rank() == 0)
    std::printf("max error, h and h/2: first order %.3g %.3g, second order %.3g %.3g\n", e1, f1, e2, f2);
  EXPECT_LT(e2, 0.2 * e1);
  EXPECT_LT(f2, 0.2 * f1);
  EXPECT_GT(e1 / f1, 1.5);  // first order: error halves
  EXPECT_GT(e2 / f2, 3.0);  // second order: error quarters
}

// Second-order weights: a constant still maps to itself; a source grid that is not
// logically rectangular is refused.
TEST(Conservative, SecondOrderConstantAndErrors) {
  ConservativeOptions o;
  o.order = 2;
  const auto w = weights(rtest::grid("tril"), rtest::grid("gg"), "cyclic", "block", o);
  std::map<i64, double> rowsum;
  for (std::size_t k = 0; k < w.links.row.size(); ++k) rowsum[w.links.row[k]] += w.links.weight[k];
  double worst = 0;
  for (const auto& [d, v] : rowsum) worst = std::max(worst, std::abs(v - 1.0));
  EXPECT_LT(worst, 1e-12);
  EXPECT_FALSE(rowsum.empty());
  try {
    weights(rtest::grid("cs"), rtest::grid("gg"), "block", "block", o);
    ADD_FAILURE() << "no error for second order from an unstructured grid";
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find("logically rectangular"), std::string::npos) << e.what();
  }
}

// The fingerprint that keys cached weight files: the same for any decomposition (and ranks
// holding nothing), different for a changed mask or corner.
TEST(Conservative, GridFingerprint) {
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen g = rtest::grid("tri");
  const std::uint64_t a = estuary::grid_fingerprint(g.make(estuary::gen::block(g.size(), r, p)), MPI_COMM_WORLD);
  const std::uint64_t b = estuary::grid_fingerprint(g.make(rtest::decomp("last reversed", g.size(), p, r)), MPI_COMM_WORLD);
  EXPECT_EQ(a, b);
  const std::uint64_t c = estuary::grid_fingerprint(g.with_land().make(estuary::gen::cyclic(g.size(), r, p)), MPI_COMM_WORLD);
  EXPECT_NE(a, c);
  estuary::Grid moved = g.make(estuary::gen::block(g.size(), r, p));
  if (r == 0 && moved.size() > 0) moved.corner_lat[0] += 1e-9;
  EXPECT_NE(a, estuary::grid_fingerprint(moved, MPI_COMM_WORLD));
}

// OASIS's FRACNNEI: destination cells that only land (masked source) overlaps take the nearest
// unmasked source cell, with weight 1; the others keep their fracarea links.
TEST(Conservative, FracnneiFillsUncoveredCells) {
  const estuary::GridGen sg = rtest::grid("tril"), dg = rtest::grid("ll");
  ConservativeOptions o;
  o.nearest_for_uncovered = true;
  const auto plain = gather_sorted(weights(sg, dg, "block", "cyclic").links);
  const auto nnei = gather_sorted(weights(sg, dg, "block", "cyclic", o).links);
  std::map<i64, std::vector<Link>> a, b;
  for (const Link& l : plain) a[l.dst].push_back(l);
  for (const Link& l : nnei) b[l.dst].push_back(l);
  const estuary::Grid src = sg.make(), dst = dg.make();
  int filled = 0;
  for (i64 d = 0; d < dst.size(); ++d) {
    ASSERT_TRUE(b.count(d)) << "dst " << d << " has no link with FRACNNEI";
    if (a.count(d)) {
      ASSERT_EQ(a[d].size(), b[d].size()) << "dst " << d;
      for (std::size_t k = 0; k < a[d].size(); ++k) EXPECT_EQ(a[d][k].w, b[d][k].w);
      continue;
    }
    ++filled;
    ASSERT_EQ(b[d].size(), 1u);
    EXPECT_EQ(b[d][0].w, 1.0);
    // Brute force: the nearest unmasked source centre (chord distance).
    auto xyz = [](double lo, double la) {
      const double r = M_PI / 180;
      return std::array<double, 3>{std::cos(la * r) * std::cos(lo * r), std::cos(la * r) * std::sin(lo * r), std::sin(la * r)};
    };
    const auto q = xyz(dst.lon[static_cast<std::size_t>(d)], dst.lat[static_cast<std::size_t>(d)]);
    auto dist = [&](i64 s) {
      const auto v = xyz(src.lon[static_cast<std::size_t>(s)], src.lat[static_cast<std::size_t>(s)]);
      return (v[0] - q[0]) * (v[0] - q[0]) + (v[1] - q[1]) * (v[1] - q[1]) + (v[2] - q[2]) * (v[2] - q[2]);
    };
    double best = 1e300;
    for (i64 s = 0; s < src.size(); ++s)
      if (src.valid(s)) best = std::min(best, dist(s));
    // (Ties within float rounding, as DISTWGT measures, may go either way.)
    EXPECT_TRUE(src.valid(b[d][0].src)) << "dst " << d;
    EXPECT_LE(dist(b[d][0].src), best * (1 + 1e-6)) << "dst " << d << " src " << b[d][0].src;
  }
  EXPECT_GT(filled, 0) << "the test grid should have destination cells over land only";
}
