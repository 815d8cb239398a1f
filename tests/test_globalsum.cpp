// Global sums against an exact reference: gather (with global indices) and reprosum give the same
// bits for every rank count and ordering; lsum8, lsum16 and ddpdd stay within the error bounds
// documented in globalsum.hpp on ill-conditioned data; the multi-field form equals single sums.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "estuary/error.hpp"
#include "estuary/globalsum.hpp"
#include "exact_sum.hpp"
#include "mpi_test_util.hpp"

using estuary::SumMethod;
using etest::i64;

namespace {

constexpr double u = 0x1p-53, u_quad = 0x1p-113;

// Data sets, the same on every rank (fixed seeds).
std::vector<double> smooth(i64 n) {  // a temperature-like field: well conditioned
  std::vector<double> x(static_cast<std::size_t>(n));
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> noise(-1, 1);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 273.15 + 30 * std::sin(0.01 * i) + noise(rng);
  return x;
}
std::vector<double> ill(i64 n) {  // huge values that (nearly) cancel among small ones, shuffled
  std::vector<double> x;
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> unit(-1, 1), mag(15, 18);
  while (static_cast<i64>(x.size()) + 2 <= n / 3) {  // exact cancellation
    const double b = unit(rng) * std::pow(10.0, mag(rng));
    x.push_back(b);
    x.push_back(-b);
  }
  while (static_cast<i64>(x.size()) + 2 <= 2 * n / 3) {  // cancellation up to a rounded residue
    const double c = unit(rng) * 1e16;
    x.push_back(c);
    x.push_back(-(c + unit(rng) * 100));
  }
  while (static_cast<i64>(x.size()) < n) x.push_back(unit(rng) * std::pow(10.0, 3 * unit(rng)));
  std::shuffle(x.begin(), x.end(), rng);
  return x;
}
// Random signs and exponents in [lo, hi], one value in seven zero. Over the whole range (with
// subnormals) reprosum adds value by value; 40 and 110 binades take its fast path with 3 and 4
// bins, and the bottom of the range 2 bins, one clamped at 2^-1074.
std::vector<double> binades(i64 n, int lo, int hi, std::uint64_t seed) {
  std::vector<double> x(static_cast<std::size_t>(n));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> m(1, 2);
  std::uniform_int_distribution<int> e(lo, hi), s(0, 1);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = i % 7 == 3 ? 0.0 : (s(rng) ? -1 : 1) * std::ldexp(m(rng), e(rng));
  return x;
}

// Which global indices rank r of p holds, in its local order, for each distribution.
using Layout = std::function<std::vector<i64>(i64 n, int p, int r)>;
struct Dist {
  std::string name;
  Layout indices;
};
std::vector<Dist> dists() {
  const auto range = [](i64 lo, i64 hi) {
    std::vector<i64> v;
    for (i64 g = lo; g < hi; ++g) v.push_back(g);
    return v;
  };
  return {
      {"block", [=](i64 n, int p, int r) { return range(r * n / p, (r + 1) * n / p); }},
      {"permuted blocks", [](i64 n, int p, int r) {
         const std::vector<i64> perm = etest::permutation(n, 77);
         return std::vector<i64>(perm.begin() + r * n / p, perm.begin() + (r + 1) * n / p);
       }},
      {"reversed cyclic", [](i64 n, int p, int r) {
         std::vector<i64> v;
         for (i64 g = r; g < n; g += p) v.push_back(g);
         std::reverse(v.begin(), v.end());
         return v;
       }},
      {"all on the last rank",
       [=](i64 n, int p, int r) { return r == p - 1 ? range(0, n) : range(0, 0); }},
  };
}

std::vector<double> pick(const std::vector<double>& x, const std::vector<i64>& idx) {
  std::vector<double> v;
  for (i64 g : idx) v.push_back(x[static_cast<std::size_t>(g)]);
  return v;
}

double fold(const std::vector<double>& x) {  // left to right, one rounding per addition
  double s = 0;
  for (double v : x) s += v;
  return s;
}

// The documented bound of each method (globalsum.hpp); n = most values on one rank.
double bound(SumMethod m, double exact, double abs_sum, double n, double big_n, double p) {
  switch (m) {
    case SumMethod::lsum8: return big_n * 2 * u * abs_sum;
    case SumMethod::lsum16: return u * std::fabs(exact) + 1.01 * (n + p + 3) * u_quad * abs_sum;
    case SumMethod::ddpdd: return u * std::fabs(exact) + 8 * (n + p + 8) * u * u * abs_sum;
    default: return big_n * u * abs_sum;  // gather (reprosum is checked exactly)
  }
}

struct Data {
  std::string name;
  std::vector<double> x;
};
std::vector<Data> datasets(i64 n) {
  return {{"smooth", smooth(n)},
          {"ill", ill(n)},
          {"wide", binades(n, -1080, 1000, 3)},
          {"40 binades", binades(n, 0, 40, 6)},
          {"110 binades", binades(n, -30, 80, 4)},
          {"tiny", binades(n, -1074, -1000, 5)}};
}

}  // namespace

TEST(GlobalSum, Names) {
  for (SumMethod m : estuary::sum_methods)
    EXPECT_EQ(estuary::sum_method_by_name(estuary::name_of(m)), m);
  try {
    estuary::sum_method_by_name("bfb");
    ADD_FAILURE() << "unknown name accepted";
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bfb'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gather, lsum8, lsum16, ddpdd, reprosum"),
              std::string::npos)
        << e.what();
  }
}

// Every data set × distribution × method against the exact sum and the all-ranks references.
TEST(GlobalSum, AgainstExactSum) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 6007;
  for (const Data& d : datasets(n)) {
    etest::ExactSum exact;
    double abs_sum = 0;
    for (double v : d.x) {
      exact.add(v);
      abs_sum += std::fabs(v);
    }
    const double s = exact.value();
    const double ordered = fold(d.x);  // what gather must give, computed here from the full array
    const double serial_repro = estuary::global_sum(d.x, MPI_COMM_SELF, SumMethod::reprosum);
    EXPECT_TRUE(exact.is_nearest(serial_repro)) << d.name << ": reprosum " << serial_repro;
    for (const Dist& dist : dists()) {
      const std::vector<i64> idx = dist.indices(n, p, r);
      const std::vector<double> mine = pick(d.x, idx);
      std::vector<double> rank_order;  // every rank's values, rank after rank
      double most = 0;
      for (int q = 0; q < p; ++q) {
        const std::vector<double> v = pick(d.x, dist.indices(n, p, q));
        rank_order.insert(rank_order.end(), v.begin(), v.end());
        most = std::max(most, static_cast<double>(v.size()));
      }
      const std::string at = d.name + ", " + dist.name + ", " + std::to_string(p) + " ranks";
      bool ok = true;
      const double g = estuary::global_sum(mine, MPI_COMM_WORLD, SumMethod::gather, idx);
      ok &= etest::same_bits(g, ordered);
      EXPECT_TRUE(etest::same_bits(g, ordered)) << at << ": gather " << g << " vs " << ordered;
      const double gu = estuary::global_sum(mine, MPI_COMM_WORLD, SumMethod::gather);
      ok &= etest::same_bits(gu, fold(rank_order));
      EXPECT_TRUE(etest::same_bits(gu, fold(rank_order))) << at << ": gather without indices";
      const double rs = estuary::global_sum(mine, MPI_COMM_WORLD, SumMethod::reprosum);
      ok &= etest::same_bits(rs, serial_repro) && etest::same_bits(rs, s);
      EXPECT_TRUE(etest::same_bits(rs, serial_repro)) << at << ": reprosum " << rs << " vs "
                                                       << serial_repro;
      EXPECT_TRUE(etest::same_bits(rs, s)) << at << ": reprosum " << rs << " vs exact " << s;
      for (SumMethod m : {SumMethod::lsum8, SumMethod::lsum16, SumMethod::ddpdd}) {
        const double v = estuary::global_sum(mine, MPI_COMM_WORLD, m);
        const double err = std::fabs(exact.minus(v));
        const double b = bound(m, s, abs_sum, most, static_cast<double>(n), p);
        ok &= err <= b;
        EXPECT_LE(err, b) << at << ": " << estuary::name_of(m) << " = " << v << ", exact " << s;
        if (r == 0 && dist.name == "permuted blocks")
          std::printf("  %-11s %-8s error %.3g (bound %.3g, exact sum %.17g)\n", d.name.c_str(),
                      estuary::name_of(m), err, b, s);
      }
      EXPECT_TRUE(etest::all_ok(ok)) << at;
    }
  }
}

// The multi-field form: one call for six fields equals six single calls (bit for bit for
// gather and reprosum, within the bound for the others, whose MPI reduction order may differ).
TEST(GlobalSum, ManyFieldsAtOnce) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 3001;
  const std::vector<Data> data = datasets(n);
  for (const Dist& dist : dists()) {
    const std::vector<i64> idx = dist.indices(n, p, r);
    std::vector<std::vector<double>> mine;
    for (const Data& d : data) mine.push_back(pick(d.x, idx));
    for (bool ragged : {false, true}) {
      // Ragged: field f loses its last f local values, so lengths differ (not for indexed gather).
      std::vector<std::span<const double>> fields;
      for (std::size_t f = 0; f < mine.size(); ++f)
        fields.emplace_back(mine[f].data(),
                            mine[f].size() - (ragged ? std::min(f, mine[f].size()) : 0));
      for (SumMethod m : estuary::sum_methods) {
        const bool indexed = m == SumMethod::gather && !ragged;
        const auto gi = indexed ? std::span<const i64>(idx) : std::span<const i64>();
        std::vector<double> many(fields.size());
        estuary::global_sums(fields, many, MPI_COMM_WORLD, m, gi);
        bool ok = true;
        for (std::size_t f = 0; f < fields.size(); ++f) {
          const double one = estuary::global_sum(fields[f], MPI_COMM_WORLD, m, gi);
          double abs_sum = 0;
          for (double v : data[f].x) abs_sum += std::fabs(v);
          const bool exact_match = m == SumMethod::gather || m == SumMethod::reprosum;
          const double tol = exact_match ? 0 : 2 * bound(m, one, abs_sum, n, n, p);
          const bool same =
              exact_match ? etest::same_bits(one, many[f]) : std::fabs(one - many[f]) <= tol;
          ok &= same;
          EXPECT_TRUE(same) << estuary::name_of(m) << " field " << f << ", " << dist.name
                            << (ragged ? ", ragged" : "") << ": " << many[f] << " vs " << one;
        }
        EXPECT_TRUE(etest::all_ok(ok));
      }
    }
  }
}

// reprosum at the edges: rounding ties, sticky bits, overflow, subnormals, Inf and NaN — each
// value on its own rank (round-robin), so the digits really travel.
TEST(GlobalSum, ReprosumEdges) {
  const int p = etest::world_size(), r = etest::world_rank();
  const double inf = INFINITY, tiny = std::numeric_limits<double>::denorm_min();
  struct Edge {
    std::vector<double> x;
    double want;
  };
  const std::vector<Edge> edges = {
      {{}, 0.0},
      {{1e300, -1e300}, 0.0},
      {{1.0, 0x1p-53}, 1.0},                            // a tie, to even
      {{1.0 + 0x1p-52, 0x1p-53}, 1.0 + 0x1p-51},        // a tie, to even (upwards)
      {{1.0, 0x1p-53, 0x1p-300}, 1.0 + 0x1p-52},        // just above the tie
      {{-1.0, -0x1p-53, -0x1p-1074}, -(1.0 + 0x1p-52)},
      {{DBL_MAX, DBL_MAX, -DBL_MAX}, DBL_MAX},          // no overflow on the way
      {{DBL_MAX, DBL_MAX}, inf},
      {{-DBL_MAX, -0x1p970}, -inf},                     // exactly half an ulp above DBL_MAX
      {{tiny, tiny, 3 * tiny, -tiny}, 4 * tiny},
      {{DBL_MIN, -tiny}, DBL_MIN - tiny},
      {{1.0, inf, 2.0}, inf},
      {{-inf, 1.0}, -inf},
      {{inf, 1.0, -inf}, NAN},
      {{1.0, NAN}, NAN},
  };
  for (std::size_t k = 0; k < edges.size(); ++k) {
    std::vector<double> mine;
    for (std::size_t j = 0; j < edges[k].x.size(); ++j)
      if (static_cast<int>(j % static_cast<std::size_t>(p)) == p - 1 - r)
        mine.push_back(edges[k].x[j]);
    const double got = estuary::global_sum(mine, MPI_COMM_WORLD, SumMethod::reprosum);
    const double want = edges[k].want;
    const bool ok = std::isnan(want) ? std::isnan(got) : etest::same_bits(got, want);
    EXPECT_TRUE(ok) << "case " << k << ": got " << got << ", want " << want;
    EXPECT_TRUE(etest::all_ok(ok));
  }
}

TEST(GlobalSum, GatherErrorsAgreed) {
  const int p = etest::world_size(), r = etest::world_rank();
  const auto message_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const estuary::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::vector<double> x = {1.0, 2.0, 3.0};
  // The last rank's index list is one short: every rank throws, naming that rank.
  std::vector<i64> idx = {3 * r, 3 * r + 1, 3 * r + 2};
  if (r == p - 1) idx.pop_back();
  const auto gather = [&](std::span<const i64> gi) {
    return message_of([&] { estuary::global_sum(x, MPI_COMM_WORLD, SumMethod::gather, gi); });
  };
  std::string m = gather(idx);
  EXPECT_NE(m.find("rank " + std::to_string(p - 1)), std::string::npos) << m;
  EXPECT_TRUE(etest::all_ok(!m.empty()));
  // Index 1 given twice (by rank 0 and the last rank): named, with both ranks.
  idx = {3 * r, 3 * r + 1, 3 * r + 2};
  if (r == p - 1) idx[2] = 1;
  m = gather(idx);
  EXPECT_NE(m.find("global index 1 appears more than once"), std::string::npos) << m;
  EXPECT_NE(m.find("ranks 0 and " + std::to_string(p - 1)), std::string::npos) << m;
  EXPECT_TRUE(etest::all_ok(!m.empty()));
  // Indices on every rank but rank 0, which has values: every rank throws, naming rank 0.
  if (p > 1) {
    idx = {3 * r, 3 * r + 1, 3 * r + 2};
    const std::span<const i64> gi = r == 0 ? std::span<const i64>() : std::span<const i64>(idx);
    m = gather(gi);
    EXPECT_NE(m.find("rank 0 has values without indices"), std::string::npos) << m;
    EXPECT_TRUE(etest::all_ok(!m.empty()));
  }
  // A wrong number of result slots: a local error, before any communication.
  std::vector<double> out(2);
  const std::span<const double> one[1] = {x};
  m = message_of([&] { estuary::global_sums(one, out, MPI_COMM_WORLD, SumMethod::lsum8); });
  EXPECT_NE(m.find("1 fields but 2 results"), std::string::npos) << m;
}
