// Redist correctness: every decomposition pair, several fields of all four types in one run,
// compared bit for bit with a serial reference computed from each destination's global index.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <functional>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/redist.hpp"
#include "estuary/settings.hpp"
#include "mpi_test_util.hpp"

using estuary::Field;
using estuary::Redist;
using estuary::RedistOptions;
using estuary::Type;
using etest::i64;

namespace {

constexpr std::size_t kGuard = 2;  // sentinel elements after each buffer, never to be touched

template <class T>
T sentinel() {
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(-1.5e30);
  else return std::numeric_limits<T>::min() + 5;
}

// One buffer pair of element type T; field `slot` gets salt base + slot.
template <class T>
struct Buffers {
  std::vector<T> src, dst;
  int slot = 0;

  void setup(const std::vector<i64>& src_idx, i64 dst_size, int salt) {
    src.assign(src_idx.size() + kGuard, static_cast<T>(-99));
    for (std::size_t k = 0; k < src_idx.size(); ++k) src[k] = etest::value<T>(src_idx[k], salt + slot);
    dst.assign(static_cast<std::size_t>(dst_size) + kGuard, sentinel<T>());
  }
  Field field() {
    return Field(estuary::type_of<T>(), src.data(), static_cast<i64>(src.size() - kGuard), dst.data(),
                 static_cast<i64>(dst.size() - kGuard));
  }
  // Compares with the reference; appends the first mismatch to `why`.
  bool check(const std::vector<i64>& dst_idx, const std::function<int(i64)>& salt_of,
             const std::function<bool(i64)>& covered, double fill, std::ostringstream& why) const {
    for (std::size_t j = 0; j < dst_idx.size(); ++j) {
      const i64 g = dst_idx[j];
      const bool has = !covered || covered(g);
      const T want = has ? etest::value<T>(g, salt_of(g) + slot) : static_cast<T>(fill);
      if (!etest::same_bits(dst[j], want)) {
        why << estuary::name_of(estuary::type_of<T>()) << " field " << slot << ": dst[" << j
            << "] (index " << g << ") = " << +dst[j] << ", want " << +want << "\n";
        return false;
      }
    }
    for (std::size_t j = dst_idx.size(); j < dst.size(); ++j)
      if (!etest::same_bits(dst[j], sentinel<T>())) {
        why << "field " << slot << ": write past the end of the destination at " << j << "\n";
        return false;
      }
    return true;
  }
};

// Five fields of the four types (two doubles), moved together.
struct FieldSet {
  Buffers<double> a;
  Buffers<float> b;
  Buffers<std::int32_t> c;
  Buffers<std::int64_t> d;
  Buffers<double> e;

  FieldSet() {
    b.slot = 1;
    c.slot = 2;
    d.slot = 3;
    e.slot = 4;
  }
  void setup(const std::vector<i64>& src_idx, i64 dst_size, int salt) {
    a.setup(src_idx, dst_size, salt);
    b.setup(src_idx, dst_size, salt);
    c.setup(src_idx, dst_size, salt);
    d.setup(src_idx, dst_size, salt);
    e.setup(src_idx, dst_size, salt);
  }
  std::vector<Field> fields() { return {a.field(), b.field(), c.field(), d.field(), e.field()}; }
  bool check(const std::vector<i64>& dst_idx, const std::function<int(i64)>& salt_of,
             const std::function<bool(i64)>& covered, double fill, std::ostringstream& why) const {
    bool ok = a.check(dst_idx, salt_of, covered, fill, why);
    ok = b.check(dst_idx, salt_of, covered, fill, why) && ok;
    ok = c.check(dst_idx, salt_of, covered, fill, why) && ok;
    ok = d.check(dst_idx, salt_of, covered, fill, why) && ok;
    ok = e.check(dst_idx, salt_of, covered, fill, why) && ok;
    return ok;
  }
};

std::function<int(i64)> constant_salt(int s) {
  return [s](i64) { return s; };
}

// Builds the Redist of `c`, moves a FieldSet once (split phase when asked) and checks it.
bool run_case(const etest::Case& c, const std::string& algorithm, bool split, int salt) {
  std::ostringstream why;
  bool ok = true;
  try {
    RedistOptions opt;
    opt.algorithm = algorithm;
    opt.plan = c.options;
    Redist rd(c.src, c.dst, MPI_COMM_WORLD, opt);
    FieldSet fs;
    const std::vector<i64> dst_idx = c.dst.to_indices();
    fs.setup(c.src.to_indices(), c.dst.size(), salt);
    std::vector<Field> fields = fs.fields();
    if (split) {
      rd.start(fields);
      rd.finish();
    } else {
      rd.run(fields);
    }
    ok = fs.check(dst_idx, constant_salt(salt), c.covered, c.options.fill_value, why);
  } catch (const std::exception& e) {
    why << "threw: " << e.what();
    ok = false;
  }
  EXPECT_TRUE(ok) << c.name << " [" << algorithm << "] on rank " << etest::world_rank() << ": "
                  << why.str();
  return ok;
}

std::vector<std::string> algorithms() { return estuary::schedule_names(); }

}  // namespace

TEST(Redist, AllPairsDefaultAlgorithm) {
  // The default schedule (p2p, or ESTUARY_SCHEDULE when set) on every pair.
  const int p = etest::world_size(), r = etest::world_rank();
  for (const etest::Case& c : etest::all_cases(p, r)) {
    const bool ok = run_case(c, "", false, 0);
    EXPECT_TRUE(etest::all_ok(ok)) << c.name;
  }
}

TEST(Redist, AllPairsEveryAlgorithm) {
  // Every registered algorithm on every fourth pair (rotating, so each pair meets several
  // algorithms and each algorithm meets every kind of pair), to keep the run short. The tuned
  // algorithms time trial exchanges while they set up: every eighth pair for them.
  const int p = etest::world_size(), r = etest::world_rank();
  const std::vector<etest::Case> cases = etest::all_cases(p, r);  // same list on every rank
  const std::vector<std::string> algs = algorithms();
  EXPECT_FALSE(algs.empty());
  for (std::size_t a = 0; a < algs.size(); ++a)
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const bool tuned = algs[a] == "adaptive" || algs[a] == "auto";
      if ((i + a) % (tuned ? 8 : 4) != 0) continue;
      const bool ok = run_case(cases[i], algs[a], false, 1);
      EXPECT_TRUE(etest::all_ok(ok)) << cases[i].name << " [" << algs[a] << "]";
    }
}

TEST(Redist, SplitPhase) {
  const int p = etest::world_size(), r = etest::world_rank();
  for (const etest::Case& c : etest::index_cases(64, p, r)) {
    const bool ok = run_case(c, "", true, 3);
    EXPECT_TRUE(etest::all_ok(ok)) << c.name;
  }
  // Work between start() and finish(): the reference is computed while the messages fly.
  const i64 n = 301;
  Redist rd(etest::permuted_block(n, p, r), etest::halo_block(n, p, r, 2), MPI_COMM_WORLD);
  FieldSet fs;
  const std::vector<i64> dst_idx = etest::halo_block(n, p, r, 2).to_indices();
  fs.setup(etest::permuted_block(n, p, r).to_indices(), static_cast<i64>(dst_idx.size()), 11);
  std::vector<Field> fields = fs.fields();
  rd.start(fields);
  std::vector<double> expect_a;
  for (i64 g : dst_idx) expect_a.push_back(etest::value<double>(g, 11));
  rd.finish();
  std::ostringstream why;
  bool ok = fs.check(dst_idx, constant_salt(11), {}, 0.0, why);
  for (std::size_t j = 0; j < dst_idx.size(); ++j) ok = ok && etest::same_bits(fs.a.dst[j], expect_a[j]);
  EXPECT_TRUE(ok) << why.str();
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Redist, ManyRunsWithDifferentData) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 301;
  const estuary::Decomp src = etest::block_cyclic(n, p, r, 4);
  const estuary::Decomp dst = etest::halo_block(n, p, r, 2);
  const std::vector<i64> src_idx = src.to_indices(), dst_idx = dst.to_indices();
  Redist rd(src, dst, MPI_COMM_WORLD);
  bool ok = true;
  std::ostringstream why;
  for (int it = 0; it < 20; ++it) {
    if (it % 3 == 2) {
      // A different list of types in between: a second executor, the first one kept.
      Buffers<float> f;
      Buffers<std::int64_t> g;
      g.slot = 1;
      f.setup(src_idx, dst.size(), 50 + it);
      g.setup(src_idx, dst.size(), 50 + it);
      rd.run({f.field(), g.field()});
      ok = f.check(dst_idx, constant_salt(50 + it), {}, 0, why) && ok;
      ok = g.check(dst_idx, constant_salt(50 + it), {}, 0, why) && ok;
    } else {
      FieldSet fs;
      fs.setup(src_idx, dst.size(), 7 * it);
      std::vector<Field> fields = fs.fields();
      if (it % 2) {
        rd.run(fields);
      } else {
        rd.start(fields);
        rd.finish();
      }
      ok = fs.check(dst_idx, constant_salt(7 * it), {}, 0, why) && ok;
    }
  }
  EXPECT_TRUE(ok) << why.str();
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Redist, SameBuffersReused) {
  // The same buffers, refilled in place between runs (persistent executors keep addresses).
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 100;
  const estuary::Decomp src = etest::cyclic(n, p, r), dst = etest::reverse_cyclic(n, p, (r + 1) % p);
  const std::vector<i64> src_idx = src.to_indices(), dst_idx = dst.to_indices();
  Redist rd(src, dst, MPI_COMM_WORLD);
  std::vector<std::int32_t> s(src_idx.size()), d(dst_idx.size());
  bool ok = true;
  for (int it = 0; it < 10; ++it) {
    for (std::size_t k = 0; k < s.size(); ++k) s[k] = etest::value<std::int32_t>(src_idx[k], it);
    std::fill(d.begin(), d.end(), -1);
    rd.run({Field(s, d)});
    for (std::size_t j = 0; j < d.size(); ++j) ok = ok && d[j] == etest::value<std::int32_t>(dst_idx[j], it);
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Redist, MakeExchangeWithOwnBuffers) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 257;
  const estuary::Decomp src = etest::permuted_block(n, p, r), dst = etest::cyclic(n, p, r);
  const std::vector<i64> src_idx = src.to_indices(), dst_idx = dst.to_indices();
  Redist rd(src, dst, MPI_COMM_WORLD);
  estuary::Exchange ex1 = rd.make_exchange({Type::f64, Type::i32});
  estuary::Exchange ex2 = rd.make_exchange({Type::i64});
  EXPECT_EQ(ex1.types(), (std::vector<Type>{Type::f64, Type::i32}));
  EXPECT_EQ(ex2.schedule().algorithm, rd.schedule().algorithm);

  bool ok = true;
  std::ostringstream why;
  for (int it = 0; it < 3; ++it) {
    Buffers<double> a;
    Buffers<std::int32_t> b;
    Buffers<std::int64_t> c;
    b.slot = 1;
    FieldSet fs;
    a.setup(src_idx, dst.size(), 100 + it);
    b.setup(src_idx, dst.size(), 100 + it);
    c.setup(src_idx, dst.size(), 200 + it);
    fs.setup(src_idx, dst.size(), 300 + it);
    std::vector<Field> fields = fs.fields();
    // Three exchanges in flight at once, finished in another order than started.
    ex1.start({a.field(), b.field()});
    ex2.start({c.field()});
    rd.start(fields);
    ex2.finish();
    rd.finish();
    ex1.finish();
    ok = a.check(dst_idx, constant_salt(100 + it), {}, 0, why) && ok;
    ok = b.check(dst_idx, constant_salt(100 + it), {}, 0, why) && ok;
    ok = c.check(dst_idx, constant_salt(200 + it), {}, 0, why) && ok;
    ok = fs.check(dst_idx, constant_salt(300 + it), {}, 0, why) && ok;
  }
  EXPECT_EQ(ex1.timers().runs, 3);
  EXPECT_EQ(ex2.timers().runs, 3);
  EXPECT_TRUE(ok) << why.str();
  EXPECT_TRUE(etest::all_ok(ok));

  // An exchange outlives a move.
  estuary::Exchange moved = std::move(ex2);
  Buffers<std::int64_t> c;
  c.setup(src_idx, dst.size(), 400);
  moved.run({c.field()});
  std::ostringstream why2;
  const bool ok2 = c.check(dst_idx, constant_salt(400), {}, 0, why2);
  EXPECT_TRUE(ok2) << why2.str();
  EXPECT_TRUE(etest::all_ok(ok2));
}

TEST(Redist, MissingFill) {
  const int p = etest::world_size(), r = etest::world_rank();
  for (i64 n : {1, 9, 120}) {
    // Sources hold the indices divisible by 3 only; destinations a halo'd block.
    std::vector<i64> mine;
    for (i64 g = r; g < n; g += p)
      if (g % 3 == 0) mine.push_back(g);
    const estuary::Decomp src = estuary::Decomp::indices(n, mine);
    const estuary::Decomp dst = etest::halo_block(n, p, r, 2);
    const std::vector<i64> dst_idx = dst.to_indices();
    const auto covered = [](i64 g) { return g % 3 == 0; };

    RedistOptions opt;
    opt.plan.missing = estuary::MissingPolicy::fill;
    opt.plan.fill_value = -7.0;
    Redist rd(src, dst, MPI_COMM_WORLD, opt);
    bool ok = true;
    std::ostringstream why;
    for (int it = 0; it < 2; ++it) {  // the fill happens at every run, not only the first
      FieldSet fs;
      fs.setup(mine, dst.size(), it);
      rd.run(fs.fields());
      ok = fs.check(dst_idx, constant_salt(it), covered, -7.0, why) && ok;
    }
    EXPECT_TRUE(ok) << "n=" << n << ": " << why.str();
    EXPECT_TRUE(etest::all_ok(ok)) << "n=" << n;

    // A fractional fill value, converted per floating type.
    opt.plan.fill_value = 0.1;
    Redist rf(src, dst, MPI_COMM_WORLD, opt);
    Buffers<double> a;
    Buffers<float> b;
    b.slot = 1;
    a.setup(mine, dst.size(), 5);
    b.setup(mine, dst.size(), 5);
    rf.run({a.field(), b.field()});
    std::ostringstream why2;
    bool ok2 = a.check(dst_idx, constant_salt(5), covered, 0.1, why2);
    ok2 = b.check(dst_idx, constant_salt(5), covered, 0.1, why2) && ok2;  // static_cast<float>(0.1)
    EXPECT_TRUE(ok2) << why2.str();
    EXPECT_TRUE(etest::all_ok(ok2));
  }
}

TEST(Redist, MissingFillNoSourceAtAll) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 40;
  RedistOptions opt;
  opt.plan.missing = estuary::MissingPolicy::fill;
  opt.plan.fill_value = 123456789.0;  // exact in every type but float, where it is rounded
  Redist rd(estuary::Decomp::empty(n), etest::halo_block(n, p, r, 1), MPI_COMM_WORLD, opt);
  FieldSet fs;
  fs.setup({}, rd.plan().dst_size(), 0);
  rd.run(fs.fields());
  std::ostringstream why;
  const bool ok = fs.check(etest::halo_block(n, p, r, 1).to_indices(), constant_salt(0),
                           [](i64) { return false; }, 123456789.0, why);
  EXPECT_TRUE(ok) << why.str();
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Redist, DuplicateLowestRank) {
  const int p = etest::world_size(), r = etest::world_rank();
  RedistOptions opt;
  opt.plan.duplicate = estuary::DuplicatePolicy::lowest_rank;
  for (i64 n : {2, 13, 200}) {
    // 1. Every rank owns every index, with values that tell the ranks apart: rank 0's arrive.
    {
      const estuary::Decomp src = estuary::Decomp::stripes(n, {{n - 1, n, -1}});
      const estuary::Decomp dst = etest::cyclic(n, p, r);
      Redist rd(src, dst, MPI_COMM_WORLD, opt);
      FieldSet fs;
      fs.setup(src.to_indices(), dst.size(), 10 * r);
      rd.run(fs.fields());
      std::ostringstream why;
      const bool ok = fs.check(dst.to_indices(), constant_salt(0), {}, 0, why);
      EXPECT_TRUE(ok) << "all own all, n=" << n << ": " << why.str();
      EXPECT_TRUE(etest::all_ok(ok));
    }
    // 2. Overlapping windows (block widened by 3): the lowest rank whose window holds g wins.
    {
      const estuary::Decomp src = etest::range_decomp(n, etest::widened_range(n, p, r, 3));
      const estuary::Decomp dst = etest::permuted_block(n, p, r);
      const auto lowest = [n, p](i64 g) {
        for (int k = 0; k < p; ++k) {
          const auto [lo, hi] = etest::widened_range(n, p, k, 3);
          if (lo <= g && g < hi) return 10 * k;
        }
        return -1;
      };
      Redist rd(src, dst, MPI_COMM_WORLD, opt);
      FieldSet fs;
      fs.setup(src.to_indices(), dst.size(), 10 * r);
      rd.run(fs.fields());
      std::ostringstream why;
      const bool ok = fs.check(dst.to_indices(), lowest, {}, 0, why);
      EXPECT_TRUE(ok) << "overlapping windows, n=" << n << ": " << why.str();
      EXPECT_TRUE(etest::all_ok(ok));
    }
  }
}

TEST(Redist, ContainerAndSpanFields) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 50;
  const estuary::Decomp src = etest::cyclic(n, p, r), dst = etest::block(n, p, r);
  const std::vector<i64> src_idx = src.to_indices(), dst_idx = dst.to_indices();
  std::vector<float> sf(src_idx.size()), df(dst_idx.size(), -1.f);
  std::vector<std::int64_t> si(src_idx.size()), di(dst_idx.size(), -1);
  for (std::size_t k = 0; k < src_idx.size(); ++k) {
    sf[k] = etest::value<float>(src_idx[k], 0);
    si[k] = etest::value<std::int64_t>(src_idx[k], 1);
  }
  std::span<const float> ssf(sf);
  std::span<float> sdf(df);
  Redist rd(src, dst, MPI_COMM_WORLD);
  rd.run({Field(ssf, sdf), Field(si, di)});
  bool ok = true;
  for (std::size_t j = 0; j < dst_idx.size(); ++j)
    ok = ok && etest::same_bits(df[j], etest::value<float>(dst_idx[j], 0)) &&
         di[j] == etest::value<std::int64_t>(dst_idx[j], 1);
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Redist, ScheduleFromEnvironment) {
  const int p = etest::world_size(), r = etest::world_rank();
  ::setenv("ESTUARY_SCHEDULE", "p2p", 1);
  estuary::Settings::reload();
  bool ok = false;
  {
    Redist rd(etest::block(30, p, r), etest::cyclic(30, p, r), MPI_COMM_WORLD);
    ok = rd.schedule().algorithm == "p2p";
    const bool ran = run_case({"env p2p", etest::block(30, p, r), etest::cyclic(30, p, r)}, "", false, 1);
    ok = ok && ran;
  }
  ::unsetenv("ESTUARY_SCHEDULE");
  estuary::Settings::reload();
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Redist, SubCommunicator) {
  // Two independent redistributions on the two halves of the world, at the same time.
  const int r = etest::world_rank();
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
  int hp = 1, hr = 0;
  MPI_Comm_size(half, &hp);
  MPI_Comm_rank(half, &hr);
  const i64 n = 77 + 10 * (r % 2);
  const estuary::Decomp src = etest::permuted_block(n, hp, hr), dst = etest::halo_block(n, hp, hr, 2);
  bool ok = true;
  std::ostringstream why;
  try {
    Redist rd(src, dst, half);
    FieldSet fs;
    fs.setup(src.to_indices(), dst.size(), r % 2);
    rd.run(fs.fields());
    ok = fs.check(dst.to_indices(), constant_salt(r % 2), {}, 0, why);
  } catch (const std::exception& e) {
    ok = false;
    why << e.what();
  }
  EXPECT_TRUE(ok) << why.str();
  EXPECT_TRUE(etest::all_ok(ok));
  MPI_Comm_free(&half);
}
