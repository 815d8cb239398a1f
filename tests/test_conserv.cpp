// CONSERV (GLOBAL, GLBPOS, BASBAL, BASPOS) after a non-conservative mapping: 4-nearest-neighbour
// inverse-distance weights from a small reduced Gaussian grid to a small tripolar grid, both
// with land masks, applied by Remap (bfb) on 1-8 ranks and several decompositions.
//  - every mode restores the global integral (BASBAL/BASPOS: the area mean over the valid
//    areas) to <= 1e-13 relative, with every sum method;
//  - GLBPOS/BASPOS keep a positive field positive;
//  - with gather and reprosum the corrected field is bit-identical to a serial computation
//    (so across rank counts and decompositions); the other methods agree within 1e-13.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "estuary/conserv.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/remap.hpp"
#include "mpi_test_util.hpp"

using estuary::Conserv;
using estuary::ConservMode;
using estuary::ConservSide;
using estuary::Decomp;
using estuary::SumMethod;
using i64 = std::int64_t;

namespace {

constexpr double kPi = 3.14159265358979323846;

struct Problem {
  estuary::Grid src, dst;
  estuary::Links links;           // the whole matrix, in its global order
  std::vector<double> x;          // source field (positive)
  std::vector<double> y;          // serial product, rows summed in link order (= Remap bfb)
};

std::array<double, 3> xyz(double lon, double lat) {
  const double l = lon * kPi / 180, p = lat * kPi / 180;
  return {std::cos(p) * std::cos(l), std::cos(p) * std::sin(l), std::sin(p)};
}

const Problem& problem() {
  static const Problem s = [] {
    Problem s;
    s.src = estuary::GridGen::reduced_gaussian(12).with_land().make();
    s.dst = estuary::GridGen::tripolar(36, 28).with_land().make();
    const i64 na = s.src.size(), nb = s.dst.size();
    std::vector<std::array<double, 3>> ps(static_cast<std::size_t>(na));
    for (i64 i = 0; i < na; ++i) ps[static_cast<std::size_t>(i)] = xyz(s.src.lon[static_cast<std::size_t>(i)], s.src.lat[static_cast<std::size_t>(i)]);
    // 4 nearest valid source points, weights 1/distance normalised: not conservative.
    for (i64 j = 0; j < nb; ++j) {
      const auto q = xyz(s.dst.lon[static_cast<std::size_t>(j)], s.dst.lat[static_cast<std::size_t>(j)]);
      std::vector<std::pair<double, i64>> d;
      for (i64 i = 0; i < na; ++i) {
        if (!s.src.valid(i)) continue;
        const auto& p = ps[static_cast<std::size_t>(i)];
        const double c = std::clamp(p[0] * q[0] + p[1] * q[1] + p[2] * q[2], -1.0, 1.0);
        d.emplace_back(std::acos(c), i);
      }
      std::partial_sort(d.begin(), d.begin() + 4, d.end());
      double tot = 0;
      for (int k = 0; k < 4; ++k) tot += 1.0 / (d[static_cast<std::size_t>(k)].first + 1e-9);
      for (int k = 0; k < 4; ++k)
        s.links.add(j, d[static_cast<std::size_t>(k)].second, (1.0 / (d[static_cast<std::size_t>(k)].first + 1e-9)) / tot);
    }
    for (i64 i = 0; i < na; ++i) {
      const double lon = s.src.lon[static_cast<std::size_t>(i)] * kPi / 180, lat = s.src.lat[static_cast<std::size_t>(i)] * kPi / 180;
      s.x.push_back(2.0 + std::cos(lat) * std::cos(lat) * std::sin(3 * lon) + 0.5 * std::sin(2 * lat));
    }
    s.y.assign(static_cast<std::size_t>(nb), 0.0);
    for (i64 k = 0; k < s.links.size(); ++k)
      s.y[static_cast<std::size_t>(s.links.row[static_cast<std::size_t>(k)])] +=
          s.links.weight[static_cast<std::size_t>(k)] * s.x[static_cast<std::size_t>(s.links.col[static_cast<std::size_t>(k)])];
    return s;
  }();
  return s;
}

template <class T>
std::vector<T> pick(const std::vector<T>& global, const Decomp& d) {
  std::vector<T> out;
  if (global.empty()) return out;
  for (i64 g : d.to_indices()) out.push_back(global[static_cast<std::size_t>(g)]);
  return out;
}

Decomp decomp(const std::string& kind, i64 n, int p, int r) {
  if (kind == "cyclic") return estuary::gen::cyclic(n, r, p);
  if (kind == "random") return estuary::gen::random(n, r, p, 7);
  if (kind == "rank0") return r == 0 ? Decomp::stripes(n, {{0, n, 1}}) : Decomp::empty(n);
  if (kind == "last reversed") return r == p - 1 ? Decomp::stripes(n, {{n - 1, n, -1}}) : Decomp::empty(n);
  return estuary::gen::block(n, r, p);
}

// Σ v·area over valid points, accurately (long double, in index order): the test's own sum.
long double integral(const std::vector<double>& v, const estuary::Grid& g) {
  long double s = 0, c = 0;
  for (i64 i = 0; i < g.size(); ++i) {
    if (!g.valid(i)) continue;
    const long double t = static_cast<long double>(v[static_cast<std::size_t>(i)]) * g.area[static_cast<std::size_t>(i)];
    const long double u = s + t;
    c += std::fabs(s) >= std::fabs(t) ? (s - u) + t : (t - u) + s;
    s = u;
  }
  return s + c;
}
long double valid_area(const estuary::Grid& g) {
  std::vector<double> one(static_cast<std::size_t>(g.size()), 1.0);
  return integral(one, g);
}

// The serial computation: Conserv on one rank with every point, in index order.
std::vector<double> serial(ConservMode mode, SumMethod method) {
  const Problem& s = problem();
  const Decomp all_s = Decomp::stripes(s.src.size(), {{0, s.src.size(), 1}});
  const Decomp all_d = Decomp::stripes(s.dst.size(), {{0, s.dst.size(), 1}});
  std::vector<double> y = s.y;
  estuary::conserv(mode, {&all_s, s.src.area, s.src.mask}, s.x, {&all_d, s.dst.area, s.dst.mask}, y,
                   MPI_COMM_SELF, method);
  return y;
}

const std::array<ConservMode, 4> kModes{ConservMode::global, ConservMode::glbpos, ConservMode::basbal,
                                        ConservMode::baspos};

}  // namespace

TEST(Conserv, Names) {
  for (ConservMode m : kModes) EXPECT_EQ(estuary::conserv_mode_by_name(estuary::name_of(m)), m);
  EXPECT_EQ(estuary::conserv_mode_by_name("glbpos"), ConservMode::glbpos);
  EXPECT_THROW(estuary::conserv_mode_by_name("GLOBALE"), estuary::Error);
}

TEST(Conserv, MappingIsNotConservative) {
  const Problem& s = problem();
  ASSERT_GT(s.src.size(), 500);
  ASSERT_GT(s.dst.size(), 500);
  ASSERT_EQ(std::count(s.src.mask.begin(), s.src.mask.end(), 0) > 0, true) << "source grid has no land";
  ASSERT_EQ(std::count(s.dst.mask.begin(), s.dst.mask.end(), 0) > 0, true) << "destination grid has no land";
  const long double is = integral(s.x, s.src), id = integral(s.y, s.dst);
  EXPECT_GT(std::fabs(id - is) / std::fabs(is), 1e-4L) << "the test mapping happens to conserve";
  EXPECT_GT(std::fabs(id / valid_area(s.dst) - is / valid_area(s.src)) / std::fabs(is / valid_area(s.src)), 1e-6L);
}

// Serial: each mode restores its integral to 1e-13 with each method; multiplicative modes keep
// the field positive.
TEST(Conserv, SerialRestoresIntegral) {
  const Problem& s = problem();
  const long double is = integral(s.x, s.src), as = valid_area(s.src), ad = valid_area(s.dst);
  for (SumMethod method : estuary::sum_methods)
    for (ConservMode mode : kModes) {
      const std::vector<double> y = serial(mode, method);
      const long double id = integral(y, s.dst);
      const bool basin = mode == ConservMode::basbal || mode == ConservMode::baspos;
      const long double want = basin ? is * (ad / as) : is;
      EXPECT_LE(std::fabs(id - want) / std::fabs(want), 1e-13L)
          << estuary::name_of(mode) << " " << estuary::name_of(method) << ": " << static_cast<double>(id) << " vs "
          << static_cast<double>(want);
      for (i64 j = 0; j < s.dst.size(); ++j) {
        if (!s.dst.valid(j)) {
          EXPECT_TRUE(etest::same_bits(y[static_cast<std::size_t>(j)], s.y[static_cast<std::size_t>(j)])) << "masked point changed";
        } else if (mode == ConservMode::glbpos || mode == ConservMode::baspos) {
          EXPECT_GT(y[static_cast<std::size_t>(j)], 0.0) << estuary::name_of(mode) << " point " << j;
        }
      }
    }
}

// Positivity where it matters: a positive field with small values far from the mean, where the
// additive correction drives points negative and the multiplicative one does not.
TEST(Conserv, PositiveStaysPositive) {
  const Problem& s = problem();
  const Decomp all_s = Decomp::stripes(s.src.size(), {{0, s.src.size(), 1}});
  const Decomp all_d = Decomp::stripes(s.dst.size(), {{0, s.dst.size(), 1}});
  std::vector<double> x(s.x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::pow(s.x[i] - 0.4, 8) * 1e-3;  // tiny near its minimum
  std::vector<double> y0(s.y.size(), 0.0);
  for (i64 k = 0; k < s.links.size(); ++k)
    y0[static_cast<std::size_t>(s.links.row[static_cast<std::size_t>(k)])] +=
        s.links.weight[static_cast<std::size_t>(k)] * x[static_cast<std::size_t>(s.links.col[static_cast<std::size_t>(k)])];
  for (ConservMode mode : kModes) {
    std::vector<double> y = y0;
    estuary::conserv(mode, {&all_s, s.src.area, s.src.mask}, x, {&all_d, s.dst.area, s.dst.mask}, y, MPI_COMM_SELF,
                     SumMethod::reprosum);
    double lo = 1e300;
    for (i64 j = 0; j < s.dst.size(); ++j)
      if (s.dst.valid(j)) lo = std::min(lo, y[static_cast<std::size_t>(j)]);
    if (mode == ConservMode::glbpos || mode == ConservMode::baspos) {
      EXPECT_GT(lo, 0.0) << estuary::name_of(mode);
    } else {
      EXPECT_LT(lo, 0.0) << estuary::name_of(mode) << ": the test field is not hard enough for the additive modes";
    }
  }
}

// Parallel: Remap (bfb) + Conserv on this run's ranks and several decompositions against the
// serial computation; integral restored on the parallel result too.
TEST(Conserv, ParallelMatchesSerial) {
  const Problem& s = problem();
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 na = s.src.size(), nb = s.dst.size();
  const long double is = integral(s.x, s.src), as = valid_area(s.src), ad = valid_area(s.dst);
  // This rank's share of the links: a block of the global order (the bfb order is unchanged).
  estuary::Links mine;
  const i64 nl = s.links.size(), lo = r * nl / p, hi = (r + 1) * nl / p;
  for (i64 k = lo; k < hi; ++k)
    mine.add(s.links.row[static_cast<std::size_t>(k)], s.links.col[static_cast<std::size_t>(k)], s.links.weight[static_cast<std::size_t>(k)]);
  const std::vector<std::pair<std::string, std::string>> pairs{
      {"block", "block"}, {"cyclic", "random"}, {"rank0", "cyclic"}, {"random", "last reversed"}};
  for (const auto& [sk, dk] : pairs) {
    const Decomp sd = decomp(sk, na, p, r), dd = decomp(dk, nb, p, r);
    const std::vector<double> xs = pick(s.x, sd), as_l = pick(s.src.area, sd), ad_l = pick(s.dst.area, dd);
    const std::vector<std::int32_t> ms = pick(s.src.mask, sd), md = pick(s.dst.mask, dd);
    estuary::Remap rm(mine, sd, dd, MPI_COMM_WORLD, {});
    std::vector<double> y0(static_cast<std::size_t>(dd.size()));
    rm.run(xs, y0);
    for (SumMethod method : estuary::sum_methods) {
      Conserv cv({&sd, as_l, ms}, {&dd, ad_l, md}, MPI_COMM_WORLD, method);
      for (ConservMode mode : kModes) {
        const std::string what = std::string(estuary::name_of(mode)) + " " + estuary::name_of(method) + " " + sk +
                                 "/" + dk + " np" + std::to_string(p);
        std::vector<double> y = y0;
        cv.apply(mode, xs, y);
        const std::vector<double> ref = serial(mode, method);
        const bool exact = method == SumMethod::gather || method == SumMethod::reprosum;
        const std::vector<i64> idx = dd.to_indices();
        bool ok = true;
        std::ostringstream why;
        why.precision(17);
        for (std::size_t j = 0; j < idx.size() && ok; ++j) {
          const double want = ref[static_cast<std::size_t>(idx[j])];
          ok = exact ? etest::same_bits(y[j], want) : std::abs(y[j] - want) <= 1e-13 * std::abs(want);
          if (!ok) why << "point " << idx[j] << ": " << y[j] << ", serial " << want;
        }
        EXPECT_TRUE(etest::all_ok(ok)) << what << ": " << why.str();
        // The integral of the parallel result, summed by the library (reprosum: correctly rounded).
        Conserv check({&sd, as_l, ms}, {&dd, ad_l, md}, MPI_COMM_WORLD, SumMethod::reprosum);
        const estuary::RemapField f{xs, y};
        const auto sums = check.integrals(std::span(&f, 1));
        const bool basin = mode == ConservMode::basbal || mode == ConservMode::baspos;
        const long double want = basin ? is * (ad / as) : is;
        EXPECT_LE(std::fabs(sums[0].second - want) / std::fabs(want), 1e-13L) << what;
        EXPECT_LE(std::fabs(sums[0].first - is) / std::fabs(is), 1e-15L) << what;
      }
    }
  }
}

// Several fields in one apply: the same bits as one at a time (gather, reprosum).
TEST(Conserv, SeveralFieldsAtOnce) {
  const Problem& s = problem();
  const int p = etest::world_size(), r = etest::world_rank();
  const Decomp sd = decomp("cyclic", s.src.size(), p, r), dd = decomp("block", s.dst.size(), p, r);
  const std::vector<double> xs = pick(s.x, sd), ys = pick(s.y, dd), as_l = pick(s.src.area, sd),
                            ad_l = pick(s.dst.area, dd);
  const std::vector<std::int32_t> ms = pick(s.src.mask, sd), md = pick(s.dst.mask, dd);
  for (SumMethod method : {SumMethod::gather, SumMethod::reprosum}) {
    Conserv cv({&sd, as_l, ms}, {&dd, ad_l, md}, MPI_COMM_WORLD, method);
    std::vector<double> x2 = xs, y2 = ys;
    for (double& v : x2) v = v * v;
    for (double& v : y2) v = v * v - 0.5;
    std::vector<double> a1 = ys, b1 = y2, a2 = ys, b2 = y2;
    cv.apply(ConservMode::global, xs, a1);
    cv.apply(ConservMode::global, x2, b1);
    const std::array<estuary::RemapField, 2> both{estuary::RemapField{xs, a2}, estuary::RemapField{x2, b2}};
    cv.apply(ConservMode::global, both);
    bool ok = true;
    for (std::size_t j = 0; j < a1.size(); ++j) ok = ok && etest::same_bits(a1[j], a2[j]) && etest::same_bits(b1[j], b2[j]);
    EXPECT_TRUE(etest::all_ok(ok)) << estuary::name_of(method);
  }
}

TEST(Conserv, Errors) {
  const Problem& s = problem();
  const int p = etest::world_size(), r = etest::world_rank();
  const Decomp sd = decomp("block", s.src.size(), p, r), dd = decomp("block", s.dst.size(), p, r);
  const std::vector<double> xs = pick(s.x, sd), as_l = pick(s.src.area, sd), ad_l = pick(s.dst.area, dd);
  const std::vector<std::int32_t> ms = pick(s.src.mask, sd), md = pick(s.dst.mask, dd);
  // Sizes that disagree with the decomposition (on every rank: the bad area is one too long).
  std::vector<double> longer = ad_l;
  longer.push_back(1.0);
  EXPECT_THROW(Conserv({&sd, as_l, ms}, {&dd, longer, md}, MPI_COMM_WORLD, SumMethod::lsum8), estuary::Error);
  Conserv cv({&sd, as_l, ms}, {&dd, ad_l, md}, MPI_COMM_WORLD, SumMethod::reprosum);
  std::vector<double> y(static_cast<std::size_t>(dd.size() + 1), 1.0);
  EXPECT_THROW(cv.apply(ConservMode::global, xs, y), estuary::Error);
  // A zero destination integral cannot be scaled to a nonzero source one.
  std::vector<double> zero(static_cast<std::size_t>(dd.size()), 0.0);
  EXPECT_THROW(cv.apply(ConservMode::glbpos, xs, zero), estuary::Error);
  EXPECT_THROW(cv.apply(ConservMode::baspos, xs, zero), estuary::Error);
  // ... but both zero leave it alone; GLOBAL shifts it.
  std::vector<double> zx(xs.size(), 0.0);
  EXPECT_NO_THROW(cv.apply(ConservMode::glbpos, zx, zero));
  EXPECT_TRUE(std::all_of(zero.begin(), zero.end(), [](double v) { return v == 0.0; }));
  EXPECT_NO_THROW(cv.apply(ConservMode::global, xs, zero));
  // All points masked on the destination: zero valid area.
  std::vector<std::int32_t> none(md.size(), 0);
  Conserv masked({&sd, as_l, ms}, {&dd, ad_l, none}, MPI_COMM_WORLD, SumMethod::lsum8);
  std::vector<double> y1(static_cast<std::size_t>(dd.size()), 1.0);
  EXPECT_THROW(masked.apply(ConservMode::global, xs, y1), estuary::Error);
  EXPECT_THROW(masked.apply(ConservMode::basbal, xs, y1), estuary::Error);
}
