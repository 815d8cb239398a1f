// Remap against CDO and against the serial product: CDO-generated conservative, distance and
// bilinear weights for pairs of test grids, applied on 1-8 ranks with every location and order
// and several decompositions (halos and empty ranks included).
//  - CDO's own `cdo remap` result: relative difference <= 1e-12;
//  - bfb: bit-identical to the serial product in file order, so across rank counts and
//    decompositions; sum: within 1e-13 relative.
#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <sstream>

#include "estuary/error.hpp"
#include "estuary/redist.hpp"
#include "estuary/remap.hpp"
#include "estuary/schedule.hpp"
#include "remap_test_util.hpp"

using estuary::Remap;
using estuary::RemapOptions;
using rtest::i64;

namespace {

struct Loaded {
  rtest::Case c;
  rtest::Matrix m;
  std::vector<double> x, cdo, ref;  // source field, CDO's result, serial reference
};

// A Remap of `links` in `mode` (location, order), rows without links given `unmapped`.
Remap remap_in(const rtest::Mode& mode, const estuary::Links& links, const estuary::Decomp& src, const estuary::Decomp& dst,
               double unmapped = -5.0) {
  RemapOptions opt;
  opt.location = mode.location;
  opt.order = mode.order;
  opt.unmapped_value = unmapped;
  return Remap(links, src, dst, MPI_COMM_WORLD, opt);
}

Loaded load(const rtest::Case& c) {
  Loaded l{c, rtest::read_matrix(rtest::weight_file(rtest::kData, c)), rtest::read_field(rtest::field_file(rtest::kData, c.src)),
           rtest::read_field(rtest::cdo_out_file(rtest::kData, c)), {}};
  l.ref = rtest::reference(l.m, l.x, rtest::kMissing);
  return l;
}

// Runs one Remap of a loaded case and checks it against CDO and the reference.
bool check_case(const Loaded& l, const rtest::Mode& mode, const std::string& sk, const std::string& dk,
                std::ostringstream& why) {
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::Decomp src = rtest::decomp(sk, l.m.na, p, r), dst = rtest::decomp(dk, l.m.nb, p, r);
  RemapOptions opt;
  opt.location = mode.location;
  opt.order = mode.order;
  opt.unmapped_value = rtest::kMissing;
  try {
    Remap rm(rtest::weight_file(rtest::kData, l.c), src, dst, MPI_COMM_WORLD, opt);
    const std::vector<double> xs = rtest::pick(l.x, src);
    std::vector<double> y(static_cast<std::size_t>(dst.size()), -1.0);
    rm.run(xs, y);
    const double tol = mode.order == estuary::RemapOrder::bfb ? 0.0 : 1e-13;
    std::ostringstream w1, w2;
    const bool ok_ref = rtest::close_to(y, l.ref, dst, tol, w1);
    const bool ok_cdo = rtest::close_to(y, l.cdo, dst, 1e-12, w2);
    if (!ok_ref) why << "vs reference: " << w1.str();
    if (!ok_cdo) why << "vs CDO: " << w2.str();
    return ok_ref && ok_cdo;
  } catch (const std::exception& e) {
    why << "threw: " << e.what() << "\n";
    return false;
  }
}

}  // namespace

TEST(Remap, DataFromCdo) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData
                                   << ": run the fixture test_remap_data first (ctest -R remap)";
  // The reference itself agrees with CDO, unmapped points included (CDO's missing value).
  for (const rtest::Case& c : rtest::cases()) {
    const Loaded l = load(c);
    ASSERT_EQ(static_cast<i64>(l.x.size()), l.m.na) << c.name();
    ASSERT_EQ(static_cast<i64>(l.cdo.size()), l.m.nb) << c.name();
    ASSERT_GT(l.m.w.size(), 0u) << c.name();
    std::ostringstream why;
    const estuary::Decomp all = estuary::Decomp::stripes(l.m.nb, {{0, l.m.nb, 1}});
    EXPECT_TRUE(rtest::close_to(l.ref, l.cdo, all, 1e-12, why)) << c.name() << ": " << why.str();
  }
}

TEST(Remap, MatchesCdoEveryCase) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const auto pairs = rtest::decomp_pairs();
  const auto cases = rtest::cases();
  const auto modes = rtest::modes();
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const Loaded l = load(cases[ci]);
    // One bfb and one sum mode per case, rotating: each mode meets six cases, each with another
    // decomposition pair (EveryDecompositionPairAndMode runs them all on one case).
    for (std::size_t mi : {ci % modes.size(), (ci + 2) % modes.size()}) {
      const auto& [sk, dk] = pairs[(ci + mi) % pairs.size()];
      std::ostringstream why;
      const bool ok = check_case(l, modes[mi], sk, dk, why);
      EXPECT_TRUE(ok) << cases[ci].name() << " " << modes[mi].name() << " " << sk << "->" << dk << " rank "
                      << etest::world_rank() << ": " << why.str();
      EXPECT_TRUE(etest::all_ok(ok));
    }
  }
}

TEST(Remap, EveryDecompositionPairAndMode) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  // Conservative weights (many links per row), every decomposition pair (halos, empty ranks),
  // every location and order: bfb stays bit-identical to the serial product.
  for (const rtest::Case& c : {rtest::Case{"ll", "tri", "gencon"}}) {
    const Loaded l = load(c);
    for (const auto& [sk, dk] : rtest::decomp_pairs())
      for (const rtest::Mode& mode : rtest::modes()) {
        std::ostringstream why;
        const bool ok = check_case(l, mode, sk, dk, why);
        EXPECT_TRUE(ok) << c.name() << " " << mode.name() << " " << sk << "->" << dk << ": " << why.str();
        EXPECT_TRUE(etest::all_ok(ok));
      }
  }
}

TEST(Remap, SeveralFieldsShareOneExchange) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const int p = etest::world_size(), r = etest::world_rank();
  const rtest::Case c{"rg", "cs", "gencon"};
  const rtest::Matrix m = rtest::read_matrix(rtest::weight_file(rtest::kData, c));
  const estuary::Grid sg = rtest::grid(c.src).make();
  const estuary::Decomp src = rtest::decomp("random", m.na, p, r), dst = rtest::decomp("halo", m.nb, p, r);
  bool ok = true;
  for (const rtest::Mode& mode : rtest::modes()) {
    RemapOptions opt;
    opt.location = mode.location;
    opt.order = mode.order;
    Remap rm(rtest::weight_file(rtest::kData, c), src, dst, MPI_COMM_WORLD, opt);
    const int want_exchanges = (mode.order == estuary::RemapOrder::bfb) == (mode.location == estuary::RemapLocation::dst) ? 1 : 2;
    EXPECT_EQ(rm.stats().exchanges, want_exchanges) << mode.name();
    std::vector<std::vector<double>> xs(3), ys(3), single(3);
    std::vector<estuary::RemapField> fields;
    for (int k = 0; k < 3; ++k) {
      std::vector<double> global(static_cast<std::size_t>(m.na));
      for (std::size_t g = 0; g < global.size(); ++g) global[g] = rtest::field(k, sg.lon[g], sg.lat[g]);
      xs[k] = rtest::pick(global, src);
      ys[k].assign(static_cast<std::size_t>(dst.size()), 0.0);
      single[k].assign(ys[k].size(), 0.0);
      rm.run(xs[k], single[k]);
      std::ostringstream why;
      const std::vector<double> ref = rtest::reference(m, global, 0.0);
      const bool close = rtest::close_to(single[k], ref, dst, mode.order == estuary::RemapOrder::bfb ? 0 : 1e-13, why);
      EXPECT_TRUE(close) << mode.name() << " field " << k << ": " << why.str();
      ok = ok && close;
    }
    for (int k = 0; k < 3; ++k) fields.push_back({xs[k], ys[k]});
    for (int rep = 0; rep < 2; ++rep) {  // the same exchange, run again
      rm.run(fields);
      for (int k = 0; k < 3; ++k)
        for (std::size_t j = 0; j < ys[k].size(); ++j) ok = ok && etest::same_bits(ys[k][j], single[k][j]);
    }
    EXPECT_TRUE(ok) << mode.name();
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Remap, LinksInMemory) {
  // Arbitrary links (repeated pairs, negative weights, rows without links, unused columns),
  // spread unevenly: their global order is rank order, then local order.
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 na = 53, nb = 41, L = 400;
  std::mt19937_64 rng(5);
  rtest::Matrix m{na, nb, {}, {}, {}};
  for (i64 k = 0; k < L; ++k) {
    m.dst.push_back(static_cast<i64>(rng() % (nb - 3)));  // the last three rows stay unmapped
    m.src.push_back(static_cast<i64>(rng() % na));
    m.w.push_back(static_cast<double>(static_cast<i64>(rng() % 2001) - 1000) / 997.0);
  }
  std::vector<i64> weights(static_cast<std::size_t>(p));
  for (int k = 0; k < p; ++k) weights[static_cast<std::size_t>(k)] = 1 + (k * 7) % 5;
  const auto [lo, hi] = etest::weighted_range(L, weights, r);
  estuary::Links mine;
  for (i64 k = lo; k < hi; ++k) mine.add(m.dst[static_cast<std::size_t>(k)], m.src[static_cast<std::size_t>(k)], m.w[static_cast<std::size_t>(k)]);
  std::vector<double> x(static_cast<std::size_t>(na));
  for (std::size_t g = 0; g < x.size(); ++g) x[g] = 1.0 + 0.1 * static_cast<double>(g) + 1.0 / (3.0 + static_cast<double>(g));
  const std::vector<double> ref = rtest::reference(m, x, -5.0);
  rtest::Matrix abs_m = m;
  for (double& w : abs_m.w) w = std::abs(w);
  const std::vector<double> scale = rtest::reference(abs_m, x, 5.0);  // x > 0
  bool ok = true;
  const auto pairs = rtest::decomp_pairs();
  const auto modes = rtest::modes();
  for (std::size_t pi = 0; pi < pairs.size(); ++pi)
    for (std::size_t mi : {pi % modes.size(), (pi + 1) % modes.size()}) {  // every mode thrice
      const auto& [sk, dk] = pairs[pi];
      const rtest::Mode& mode = modes[mi];
      const estuary::Decomp src = rtest::decomp(sk, na, p, r), dst = rtest::decomp(dk, nb, p, r);
      Remap rm = remap_in(mode, mine, src, dst);
      std::vector<double> y(static_cast<std::size_t>(dst.size()));
      rm.run(rtest::pick(x, src), y);
      std::ostringstream why;
      bool good = true;
      if (mode.order == estuary::RemapOrder::bfb) {
        good = rtest::close_to(y, ref, dst, 0, why);
      } else {  // mixed signs cancel: measure the sum order's rounding against sum |w x|
        const std::vector<i64> idx = dst.to_indices();
        for (std::size_t j = 0; j < idx.size(); ++j) {
          const std::size_t g = static_cast<std::size_t>(idx[j]);
          good = good && std::abs(y[j] - ref[g]) <= 1e-13 * scale[g];
        }
      }
      EXPECT_TRUE(good) << mode.name() << " " << sk << "->" << dk << ": " << why.str();
      ok = ok && good;
    }
  EXPECT_TRUE(etest::all_ok(ok));
}

// A rank whose gather would only copy its own source values reads them in place (no copy
// before the product), with the same bits: links that stay within each rank's block of rows and
// sources (every rank in place, both orders and locations), and links that reach half-way
// round the grid (in place on one rank only). Source points that no link uses and a source
// decomposition in reverse order make the selection other than the identity.
TEST(Remap, SourceValuesReadInPlace) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 per = 40, n = per * p;
  const auto block = [&](i64 m, bool reversed) {
    std::vector<i64> idx;
    for (i64 g = m * r / p; g < m * (r + 1) / p; ++g) idx.push_back(g);
    if (reversed) std::reverse(idx.begin(), idx.end());
    return estuary::Decomp::indices(m, idx);
  };
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::size_t g = 0; g < x.size(); ++g) x[g] = 1.0 + 1.0 / (3.0 + static_cast<double>(g));
  bool ok = true;
  for (const bool far : {false, true}) {
    rtest::Matrix m{n, n, {}, {}, {}};
    for (i64 row = 0; row < n; ++row)
      for (i64 k = 0; k < 3; ++k) {
        if (row % per == 7) break;  // a row without links
        // Within the row's block: its own point and the next two (wrapping in the block), every
        // fifth point unused; far: the point half-way round the grid.
        const i64 b = row / per * per, c = b + (row - b + 2 * k) % per;
        if (c % 5 == 4 && !far) continue;
        m.dst.push_back(row), m.src.push_back(far ? (c + n / 2) % n : c), m.w.push_back(0.25 + 0.125 * static_cast<double>(k));
      }
    const std::vector<double> ref = rtest::reference(m, x, -5.0);
    estuary::Links mine;
    const auto [lo, hi] = etest::weighted_range(static_cast<i64>(m.w.size()), std::vector<i64>(static_cast<std::size_t>(p), 1), r);
    for (i64 k = lo; k < hi; ++k) mine.add(m.dst[static_cast<std::size_t>(k)], m.src[static_cast<std::size_t>(k)], m.w[static_cast<std::size_t>(k)]);
    for (const bool reversed : {false, true})
      for (const rtest::Mode& mode : rtest::modes()) {
        const estuary::Decomp src = block(n, reversed), dst = block(n, false);
        Remap rm = remap_in(mode, mine, src, dst);
        // bfb brings each row's sources to the rank that forms it: from far, they cross ranks.
        // sum takes the links to their sources' block instead (at dst: the source blocks match;
        // at src it forms partial rows from the caller's source itself, with no gather at all).
        const bool want = mode.order == estuary::RemapOrder::bfb ? p == 1 || !far : mode.location == estuary::RemapLocation::dst;
        EXPECT_EQ(rm.stats().source_in_place, want) << mode.name() << (far ? " far" : " near") << (reversed ? " reversed" : "");
        std::vector<double> y(static_cast<std::size_t>(dst.size()));
        rm.run(rtest::pick(x, src), y);
        std::ostringstream why;
        const bool good = rtest::close_to(y, ref, dst, mode.order == estuary::RemapOrder::bfb ? 0 : 1e-13, why);
        EXPECT_TRUE(good) << mode.name() << (far ? " far" : " near") << (reversed ? " reversed" : "") << ": " << why.str();
        ok = ok && good;
      }
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

// Rows that all have the same number of links (nnn, bilinear, bicubic, GAUSWGT) take a product
// that finds them by row number (RemapStats::row_width; widths 4 and 5 with loops of
// compile-time length, others at run time): for widths 1 to 6, and 4 with one row longer (the
// general path), every mode, the bfb result bit-identical to the serial product in link order,
// sum within 1e-13 of it; one field, two fields (the paired pass) and a fractional mask
// against its unfused form. Each rank checks that the path it took is the one its rows allow.
TEST(Remap, UniformRowWidthsGiveTheSameBits) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 na = 47, nb = 61;
  bool ok = true;
  // k > 100: width k - 100 with every seventh row empty (a masked target), rows found from ptr.
  for (int k : {1, 2, 3, 4, 5, 6, -4, 104, 105, 103}) {
    const bool gaps = k > 100;
    const int width = gaps ? k - 100 : std::abs(k);
    std::mt19937_64 rng(static_cast<std::uint64_t>(11 + k));
    rtest::Matrix m{na, nb, {}, {}, {}};
    for (i64 row = 0; row < nb; ++row)
      for (int l = 0; l < width + (k < 0 && row == nb / 2 ? 1 : 0) && !(gaps && row % 7 == 3); ++l) {
        m.dst.push_back(row);
        m.src.push_back(static_cast<i64>(rng() % na));
        m.w.push_back(0.05 + static_cast<double>(rng() % 1000) / 1013.0);
      }
    // Each rank's share in global order: rows stay whole on their rank for bfb's width.
    const auto [lo, hi] = etest::weighted_range(static_cast<i64>(m.w.size()), std::vector<i64>(static_cast<std::size_t>(p), 1), r);
    estuary::Links mine;
    for (i64 q = lo; q < hi; ++q)
      mine.add(m.dst[static_cast<std::size_t>(q)], m.src[static_cast<std::size_t>(q)], m.w[static_cast<std::size_t>(q)]);
    std::vector<double> x(static_cast<std::size_t>(na)), f(x.size());
    for (std::size_t g = 0; g < x.size(); ++g) {
      x[g] = std::sin(0.3 * static_cast<double>(g)) + 1.0 / (2.0 + static_cast<double>(g));
      f[g] = g % 3 == 0 ? 1.0 : 0.2 + 0.1 * static_cast<double>(g % 7);
    }
    std::vector<double> fx(x.size());
    for (std::size_t g = 0; g < x.size(); ++g) fx[g] = f[g] * x[g];
    const std::vector<double> ref = rtest::reference(m, x, -5.0);
    const std::vector<double> wfx = rtest::reference(m, fx, -5.0), wf = rtest::reference(m, f, -5.0);
    std::vector<double> frac_ref(ref.size());
    for (std::size_t g = 0; g < ref.size(); ++g) frac_ref[g] = wf[g] != 0.0 ? wfx[g] / wf[g] : 0.0;
    for (const rtest::Mode& mode : rtest::modes()) {
      const estuary::Decomp src = rtest::decomp("block", na, p, r), dst = rtest::decomp("block", nb, p, r);
      Remap rm = remap_in(mode, mine, src, dst);
      // The rows formed here all have `width` links, but for the one longer row, and sum's
      // partial rows, which take a rank's share of a row's links.
      const estuary::RemapStats st = rm.stats();
      if (mode.order == estuary::RemapOrder::bfb && st.rows > 0 && k > 0) {
        EXPECT_EQ(st.row_width, width) << mode.name() << " rank " << r;
        EXPECT_EQ(st.row_gaps, gaps && st.rows >= 7) << mode.name() << " rank " << r;  // 7 rows hold an empty one
      }
      if (k < 0 && p == 1) {
        EXPECT_EQ(st.row_width, 0) << mode.name();
      }
      const std::vector<double> xs = rtest::pick(x, src), fs = rtest::pick(f, src);
      std::vector<double> y(static_cast<std::size_t>(dst.size())), y2(y.size()), yf(y.size());
      rm.run(xs, y);
      const estuary::RemapField two[2] = {{xs, y2}, {fs, std::span<double>(yf)}};
      rm.run(two);
      std::vector<double> yfrac(y.size());
      const estuary::RemapFracField frac[1] = {{xs, fs, yfrac}};
      rm.run(frac);
      const double tol = mode.order == estuary::RemapOrder::bfb ? 0.0 : 1e-13;
      std::ostringstream why;
      const bool good = rtest::close_to(y, ref, dst, tol, why) && rtest::close_to(y2, ref, dst, tol, why) &&
                        rtest::close_to(yf, wf, dst, tol, why) && rtest::close_to(yfrac, frac_ref, dst, tol, why);
      EXPECT_TRUE(good) << "width " << k << (gaps ? " with empty rows " : " ") << mode.name() << ": " << why.str();
      ok = ok && good;
    }
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

// Fields with a fractional mask (Remap::run of RemapFracField, the coupler's put with a
// fraction): bit-identical to the unfused form (the product f x, a run of the two fields
// [f x, f], the division W (f x) / W f, 0 where W f = 0), for every mode and decomposition pair
// (halos, empty ranks), rows without links (unmapped value -5: 1 after the division, as before;
// 0: W f = 0, hence 0) and fractions 0, 1 and between; by run() and by start()/finish().
// Second pattern: field 0's fractions 1 everywhere and field 1's 1 on the first half of the
// source points, so that every rank takes the one-column form for field 0 and some ranks for
// field 1 (where they hold only links from the first half), others not.
TEST(Remap, FractionalMaskFusedIsBitIdentical) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 na = 53, nb = 41, L = 300;
  std::mt19937_64 rng(11);
  estuary::Links all;
  for (i64 k = 0; k < L; ++k)
    all.add(static_cast<i64>(rng() % (nb - 3)), static_cast<i64>(rng() % na), 0.05 + static_cast<double>(rng() % 1000) / 997.0);
  estuary::Links mine;  // links spread over the ranks in blocks
  for (i64 k = L * r / p; k < L * (r + 1) / p; ++k) {
    const auto u = static_cast<std::size_t>(k);
    mine.add(all.row[u], all.col[u], all.weight[u]);
  }
  bool ok = true;
  int case_no = 0;
  for (int pattern = 0; pattern < 2; ++pattern) {
    std::vector<double> x[2], f[2];
    for (int v = 0; v < 2; ++v)
      for (i64 g = 0; g < na; ++g) {
        x[v].push_back(1.0 + 0.1 * static_cast<double>(g) + 1.0 / (3.0 + static_cast<double>(g + v)));
        const i64 m = (g + v) % 5;
        const double mixed = m == 0 ? 0.0 : m == 1 ? 1.0 : 0.1 + 0.13 * static_cast<double>((g * 7 + v) % 6);
        f[v].push_back(pattern == 0 ? mixed : v == 0 || g < na / 2 ? 1.0 : mixed);
      }
    for (const auto& [sk, dk] : rtest::decomp_pairs()) {
      ++case_no;
      for (const rtest::Mode& mode : rtest::modes()) {
        const estuary::Decomp src = rtest::decomp(sk, na, p, r), dst = rtest::decomp(dk, nb, p, r);
        Remap rm = remap_in(mode, mine, src, dst, ++case_no % 2 ? 0.0 : -5.0);  // every mode both ways
        rm.prepare(2);
        rm.prepare(4);
        const std::size_t ns = static_cast<std::size_t>(src.size()), nd = static_cast<std::size_t>(dst.size());
        std::vector<double> xs[2], fs[2], fx[2], yy[4], want[2], got[2], split[2];
        std::vector<estuary::RemapField> two;
        std::vector<estuary::RemapFracField> frac, frac_split;
        for (int v = 0; v < 2; ++v) {
          xs[v] = rtest::pick(x[v], src), fs[v] = rtest::pick(f[v], src);
          fx[v].resize(ns);
          for (std::size_t i = 0; i < ns; ++i) fx[v][i] = fs[v][i] * xs[v][i];
          want[v].assign(nd, 0.0), got[v].assign(nd, 0.0), split[v].assign(nd, 0.0);
        }
        for (auto& y : yy) y.assign(nd, 0.0);
        for (int v = 0; v < 2; ++v) two.push_back({fx[v], yy[2 * v]}), two.push_back({fs[v], yy[2 * v + 1]});
        rm.run(two);
        for (int v = 0; v < 2; ++v)
          for (std::size_t j = 0; j < nd; ++j) want[v][j] = yy[2 * v + 1][j] != 0.0 ? yy[2 * v][j] / yy[2 * v + 1][j] : 0.0;
        for (int v = 0; v < 2; ++v) frac.push_back({xs[v], fs[v], got[v]}), frac_split.push_back({xs[v], fs[v], split[v]});
        rm.run(frac);
        rm.start(frac_split);
        rm.finish(frac_split);
        for (int v = 0; v < 2; ++v)
          for (std::size_t j = 0; j < nd; ++j) {
            const bool same = etest::same_bits(got[v][j], want[v][j]) && etest::same_bits(split[v][j], want[v][j]);
            if (!same && ok)
              ADD_FAILURE() << "fraction pattern " << pattern << ", " << mode.name() << " " << sk << "->" << dk
                            << " field " << v << " element " << j << ": " << got[v][j] << " (split " << split[v][j]
                            << "), unfused " << want[v][j];
            ok = ok && same;
          }
      }
    }
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

// The same on a source side larger than the caches (over 1 MB of doubles on every rank) and with
// more rows than one block of bfb's blocked division (997: one whole block and a partial one): each rank's block of 150 001 source points, each
// point one link, to 997 destination rows; with the links at the source (the rank's own points,
// no gather) and at the destination (every rank's points gathered), both orders.
TEST(Remap, FractionalMaskLargeSourceIsBitIdentical) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 per = 150001, na = per * p, nb = 997;
  const estuary::Decomp src = estuary::Decomp::stripes(na, {{per * r, per, 1}}), dst = rtest::decomp("block", nb, p, r);
  estuary::Links mine;
  for (i64 g = per * r; g < per * (r + 1); ++g) mine.add(g % nb, g, 0.25 + static_cast<double>(g % 13) / 7.0);
  const auto ns = static_cast<std::size_t>(per), nd = static_cast<std::size_t>(dst.size());
  std::vector<double> x(ns), f(ns), fx(ns);
  for (std::size_t i = 0; i < ns; ++i) {
    const auto g = static_cast<double>(per * r + static_cast<i64>(i));
    x[i] = 1.0 + 1.0 / (3.0 + g);
    f[i] = i % 4 == 0 ? 0.0 : 0.1 + 0.13 * static_cast<double>(i % 7);
    fx[i] = f[i] * x[i];
  }
  bool ok = true;
  for (const rtest::Mode& mode : rtest::modes()) {
    Remap rm = remap_in(mode, mine, src, dst);
    std::vector<double> y0(nd), y1(nd), got(nd);
    std::vector<estuary::RemapField> two = {{fx, y0}, {f, y1}};
    rm.run(two);
    std::vector<estuary::RemapFracField> frac = {{x, f, got}};
    rm.run(frac);
    for (std::size_t j = 0; j < nd && ok; ++j) {
      const double want = y1[j] != 0.0 ? y0[j] / y1[j] : 0.0;
      if (!etest::same_bits(got[j], want))
        ADD_FAILURE() << mode.name() << " element " << j << ": " << got[j] << ", unfused " << want, ok = false;
    }
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

// CDO's genlaf files (map_method "Largest area fraction": the conservative matrix, which `cdo
// remap` applies as a choice among value classes) on a field of classes: estuary's result equals
// CDO's exactly, at every point CDO mapped, for bfb at dst and src on every decomposition pair;
// order sum and a fractional mask are refused (every rank alike). The rule itself on links in
// memory: classes summed (two links to one value outweigh a larger single link), the first
// class on a tie, NaN a class of its own.
TEST(Remap, LargestAreaFractionAsCdo) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const int p = etest::world_size(), r = etest::world_rank();
  bool ok = true;
  for (const rtest::Case& c : rtest::laf_cases()) {
    const std::string file = rtest::weight_file(rtest::kData, c);
    const std::vector<double> x = rtest::read_field(rtest::class_file(rtest::kData, c.src));
    const std::vector<double> cdo = rtest::read_field(rtest::cdo_out_file(rtest::kData, c));
    const i64 na = static_cast<i64>(x.size()), nb = static_cast<i64>(cdo.size());
    for (const auto& [sk, dk] : rtest::decomp_pairs())
      for (const estuary::RemapLocation loc : {estuary::RemapLocation::dst, estuary::RemapLocation::src}) {
        RemapOptions opt;
        opt.location = loc;
        opt.unmapped_value = rtest::kMissing;
        const estuary::Decomp src = rtest::decomp(sk, na, p, r), dst = rtest::decomp(dk, nb, p, r);
        Remap rm(file, src, dst, MPI_COMM_WORLD, opt);
        EXPECT_EQ(rm.options().rule, estuary::RemapRule::largest_area_fraction);
        std::vector<double> y(static_cast<std::size_t>(dst.size()));
        rm.run(rtest::pick(x, src), y);
        const std::vector<i64> idx = dst.to_indices();
        for (std::size_t j = 0; j < y.size(); ++j) {
          const double want = cdo[static_cast<std::size_t>(idx[j])];
          if (!etest::same_bits(y[j], want) && ok)
            ADD_FAILURE() << c.name() << " " << sk << "->" << dk << " point " << idx[j] << ": " << y[j] << ", CDO " << want;
          ok = ok && etest::same_bits(y[j], want);
        }
      }
    RemapOptions sum;
    sum.order = estuary::RemapOrder::sum;
    const estuary::Decomp src = rtest::decomp("block", na, p, r), dst = rtest::decomp("block", nb, p, r);
    EXPECT_THROW(Remap(file, src, dst, MPI_COMM_WORLD, sum), estuary::Error) << c.name();
    Remap rm(file, src, dst, MPI_COMM_WORLD);
    const std::vector<double> xs = rtest::pick(x, src), fs(xs.size(), 1.0);
    std::vector<double> y(static_cast<std::size_t>(dst.size()));
    const estuary::RemapFracField frac[1] = {{xs, fs, y}};
    EXPECT_THROW(rm.run(frac), estuary::Error) << c.name();
  }
  // The rule on links in memory. Row 0: values 2, 5, 2 with weights 0.3, 0.4, 0.2 -> class 2
  // (0.5) beats 5 (0.4). Row 1: 5 and 7 at 0.5 each -> the first, 5. Row 2: NaN, NaN, 7 at
  // 0.3, 0.3, 0.4 -> 7 (each NaN a class of its own, 0.3, not one of 0.6). Row 3: no links ->
  // unmapped.
  const std::vector<double> xv = {2.0, 5.0, 2.0, 7.0, std::nan("")};
  estuary::Links all;
  all.add(0, 0, 0.3), all.add(0, 1, 0.4), all.add(0, 2, 0.2);
  all.add(1, 1, 0.5), all.add(1, 3, 0.5);
  all.add(2, 4, 0.3), all.add(2, 4, 0.3), all.add(2, 3, 0.4);
  estuary::Links mine;  // in blocks: the global link order (rank order, then local) is the file's
  const std::size_t nl = all.row.size();
  for (std::size_t k = nl * static_cast<std::size_t>(r) / static_cast<std::size_t>(p);
       k < nl * static_cast<std::size_t>(r + 1) / static_cast<std::size_t>(p); ++k)
    mine.add(all.row[k], all.col[k], all.weight[k]);
  for (const rtest::Mode& mode : rtest::modes()) {
    if (mode.order != estuary::RemapOrder::bfb) continue;
    RemapOptions opt;
    opt.location = mode.location;
    opt.rule = estuary::RemapRule::largest_area_fraction;
    opt.unmapped_value = -1.0;
    const estuary::Decomp src = rtest::decomp("block", 5, p, r), dst = rtest::decomp("block", 4, p, r);
    Remap rm(mine, src, dst, MPI_COMM_WORLD, opt);
    std::vector<double> y(static_cast<std::size_t>(dst.size()));
    rm.run(rtest::pick(xv, src), y);
    const std::vector<i64> idx = dst.to_indices();
    for (std::size_t j = 0; j < y.size(); ++j) {
      const i64 g = idx[j];
      const bool good = g == 0 ? y[j] == 2.0 : g == 1 ? y[j] == 5.0 : g == 2 ? y[j] == 7.0 : y[j] == -1.0;
      EXPECT_TRUE(good) << mode.name() << " row " << g << ": " << y[j];
      ok = ok && good;
    }
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Remap, BadLinksAndFieldsAreErrors) {
  const int p = etest::world_size(), r = etest::world_rank();
  estuary::Links bad;
  if (r == p - 1) bad.add(3, 99, 1.0);  // column 99 of a 10-point source
  bool threw = false;
  try {
    Remap rm(bad, estuary::gen::block(10, r, p), estuary::gen::block(8, r, p), MPI_COMM_WORLD);
  } catch (const estuary::Error& e) {
    threw = std::string(e.what()).find("99") != std::string::npos;
  }
  EXPECT_TRUE(threw);
  EXPECT_TRUE(etest::all_ok(threw));
  // Source points no rank holds: fine when no link uses them, an error naming the cause when
  // one does, in every mode.
  for (const rtest::Mode& mode : rtest::modes()) {
    RemapOptions opt;
    opt.location = mode.location;
    opt.order = mode.order;
    estuary::Links links;
    if (r == 0)
      for (i64 k = 0; k < 7; ++k) links.add(k, k, 1.0);  // source points 7-9 unused, row 7 unmapped
    std::vector<i64> held;  // all but 7, cyclic
    for (i64 g = r; g < 10; g += p)
      if (g != 7) held.push_back(g);
    const estuary::Decomp src = estuary::Decomp::indices(10, held), dst = estuary::gen::block(8, r, p);
    bool ok = true;
    try {
      Remap fine(links, src, dst, MPI_COMM_WORLD, opt);
      std::vector<double> x(held.size(), 2.0), y(static_cast<std::size_t>(dst.size()));
      fine.run(x, y);
      const std::vector<i64> rows = dst.to_indices();
      for (std::size_t j = 0; j < y.size(); ++j) ok = ok && y[j] == (rows[j] < 7 ? 2.0 : 0.0);
    } catch (const std::exception& e) {
      ok = false;
      ADD_FAILURE() << mode.name() << ": " << e.what();
    }
    if (r == 0) links.add(7, 7, 1.0);
    bool named = false;
    try {
      Remap broken(links, src, dst, MPI_COMM_WORLD, opt);
    } catch (const estuary::Error& e) {
      named = std::string(e.what()).find("no rank holds") != std::string::npos;
    }
    EXPECT_TRUE(ok && named) << mode.name();
    EXPECT_TRUE(etest::all_ok(ok && named)) << mode.name();
  }
  // A field of the wrong length on one rank: every rank throws, nobody hangs.
  estuary::Links good;
  if (r == 0) good.add(0, 0, 1.0);
  Remap rm(good, estuary::gen::block(10, r, p), estuary::gen::block(8, r, p), MPI_COMM_WORLD);
  std::vector<double> x(static_cast<std::size_t>(estuary::gen::block(10, r, p).size()) + (r == 0 ? 1 : 0));
  std::vector<double> y(static_cast<std::size_t>(estuary::gen::block(8, r, p).size()));
  EXPECT_THROW(rm.run(x, y), estuary::Error);
  // Different numbers of fields on different ranks: every rank throws too.
  x.resize(static_cast<std::size_t>(estuary::gen::block(10, r, p).size()));
  std::vector<estuary::RemapField> fields(r == 0 && p > 1 ? 2 : 1, estuary::RemapField{x, y});
  if (p > 1) {
    EXPECT_THROW(rm.run(fields), estuary::Error);
  }
  rm.run(x, y);  // and the Remap still works
  EXPECT_EQ(r == 0 ? y[0] : 0.0, 0.0);  // x is all zero
}

TEST(Remap, EveryScheduleGivesTheSameBits) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  // The exchanges follow RemapOptions::algorithm; the result must not depend on it, in either
  // order (a fixed decomposition fixes the sum order too).
  const int p = etest::world_size(), r = etest::world_rank();
  const rtest::Case c{"cs", "gg", "gendis"};
  const rtest::Matrix m = rtest::read_matrix(rtest::weight_file(rtest::kData, c));
  const estuary::Decomp src = rtest::decomp("random", m.na, p, r), dst = rtest::decomp("cyclic", m.nb, p, r);
  const std::vector<double> x = rtest::pick(rtest::read_field(rtest::field_file(rtest::kData, c.src)), src);
  bool ok = true;
  for (const rtest::Mode& mode : {rtest::modes()[0], rtest::modes()[2]}) {
    std::vector<double> first;
    for (const std::string& alg : estuary::schedule_names()) {
      // Multi-stage and all-to-all kinds, as registered (adaptive ones time transfers: slow).
      if (alg != "p2p" && alg != "butterfly" && alg != "bruck" && alg != "ring-k") continue;
      RemapOptions opt;
      opt.location = mode.location;
      opt.order = mode.order;
      opt.algorithm = alg;
      try {
        Remap rm(rtest::weight_file(rtest::kData, c), src, dst, MPI_COMM_WORLD, opt);
        std::vector<double> y(static_cast<std::size_t>(dst.size()));
        rm.run(x, y);
        if (first.empty()) first = y;
        for (std::size_t j = 0; j < y.size(); ++j) ok = ok && etest::same_bits(y[j], first[j]);
        EXPECT_TRUE(ok) << mode.name() << " with " << alg;
      } catch (const std::exception& e) {
        ok = false;
        ADD_FAILURE() << mode.name() << " with " << alg << ": " << e.what();
      }
    }
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

// The coupler's form (RemapOptions::split_phase): source and destination on different ranks,
// start() on the source ranks and finish() on the destination ranks. With a staged algorithm
// the exchange within one side (bfb at src: the gather among the source ranks; sum at dst: the
// partial sums among the destination ranks) is built over that side's ranks alone and staged,
// the crossing one stays one P2P stage, and the result has the bits of a P2P run().
TEST(Remap, SplitPhaseStagesWithinOneSide) {
  const int p = etest::world_size(), r = etest::world_rank();
  const int nsrc = (p + 1) / 2;  // ranks [0, nsrc) hold the source, the others the destination (all on 1 rank)
  const bool holds_src = r < nsrc, holds_dst = p == 1 || r >= nsrc;
  const int ndst = p == 1 ? 1 : p - nsrc, src_r = r, dst_r = p == 1 ? 0 : r - nsrc;
  const i64 na = 97, nb = 83, L = 500;
  std::mt19937_64 rng(7);
  estuary::Links all;
  for (i64 k = 0; k < L; ++k)
    all.add(static_cast<i64>(rng() % (nb - 2)), static_cast<i64>(rng() % na), 0.05 + static_cast<double>(rng() % 1000) / 997.0);
  estuary::Links mine;
  for (i64 k = L * r / p; k < L * (r + 1) / p; ++k) {
    const auto u = static_cast<std::size_t>(k);
    mine.add(all.row[u], all.col[u], all.weight[u]);
  }
  // Cyclic on the source side (so that the gather moves values between the source ranks),
  // blocks on the destination side.
  std::vector<i64> sidx, didx;
  if (holds_src)
    for (i64 g = src_r; g < na; g += nsrc) sidx.push_back(g);
  if (holds_dst)
    for (i64 g = nb * dst_r / ndst; g < nb * (dst_r + 1) / ndst; ++g) didx.push_back(g);
  const estuary::Decomp src = estuary::Decomp::indices(na, sidx), dst = estuary::Decomp::indices(nb, didx);
  std::vector<double> x(sidx.size());
  for (std::size_t i = 0; i < sidx.size(); ++i) x[i] = 1.0 + 1.0 / (3.0 + static_cast<double>(sidx[i]));
  bool ok = true;
  for (const rtest::Mode& mode : rtest::modes()) {
    RemapOptions ref_opt;
    ref_opt.location = mode.location;
    ref_opt.order = mode.order;
    ref_opt.algorithm = "p2p";
    std::vector<double> want(didx.size(), -1.0);
    Remap(mine, src, dst, MPI_COMM_WORLD, ref_opt).run(x, want);
    for (const std::string alg : {"butterfly", "adaptive"}) {
      RemapOptions opt = ref_opt;
      opt.algorithm = alg;
      opt.split_phase = true;
      const std::string what = mode.name() + " with " + alg;
      try {
        Remap rm(mine, src, dst, MPI_COMM_WORLD, opt);
        rm.prepare(1);
        std::vector<double> y(didx.size(), -1.0);
        const estuary::RemapField f{x, y};
        if (holds_src) rm.start({&f, 1});
        if (holds_dst) rm.finish({&f, 1});
        for (std::size_t j = 0; j < y.size(); ++j) ok = ok && etest::same_bits(y[j], want[j]);
        EXPECT_TRUE(ok) << what;
        // Which exchange is within one side, and on which ranks it exists.
        const bool side_gather = mode.location == estuary::RemapLocation::src && mode.order == estuary::RemapOrder::bfb;
        const bool side_after = mode.location == estuary::RemapLocation::dst && mode.order == estuary::RemapOrder::sum;
        for (const Remap::Exchange& e : rm.exchanges()) {
          const bool within = (side_gather && std::string(e.name) == "gather") || (side_after && std::string(e.name) == "after");
          int size = 0;
          MPI_Comm_size(e.redist->plan().comm(), &size);
          if (within) {
            const bool on_side = side_gather ? holds_src : holds_dst;
            EXPECT_TRUE(on_side) << what << ": the " << e.name << " exchange exists off its side on rank " << r;
            EXPECT_EQ(size, side_gather ? nsrc : ndst) << what << ": " << e.name;
            EXPECT_EQ(e.redist->schedule().algorithm, alg) << what << ": " << e.name;
          } else {
            EXPECT_EQ(size, p) << what << ": " << e.name;
            EXPECT_EQ(e.redist->schedule().stages.size(), 1u) << what << ": the crossing " << e.name << " is staged";
          }
        }
      } catch (const std::exception& e) {
        ok = false;
        ADD_FAILURE() << what << ": " << e.what();
      }
    }
  }
  EXPECT_TRUE(etest::all_ok(ok));
}
