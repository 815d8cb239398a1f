// All-to-all schedules (burst, Bruck, ring-k): the same bits as p2p on random and structured
// plans, four fields of four types moved at once, and the stage structure of paper 004 Table 2.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/error.hpp"
#include "estuary/exchange.hpp"
#include "estuary/schedule.hpp"
#include "estuary/settings.hpp"
#include "mpi_test_util.hpp"

using estuary::Decomp;
using estuary::Plan;
using estuary::Schedule;
using estuary::Type;
using etest::i64;

namespace {

const std::vector<std::string> kAlgorithms = {"burst",  "bruck",  "ring-k", "ring-1",
                                              "ring-2", "ring-4", "ring-8"};
constexpr std::size_t kGuard = 3;  // sentinel elements past each destination

// The destination buffers of one exchange of four fields, guards included.
struct Result {
  std::vector<double> a;
  std::vector<float> b;
  std::vector<std::int32_t> c;
  std::vector<std::int64_t> d;
};

template <class T>
bool same(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}
bool same(const Result& x, const Result& y) {
  return same(x.a, y.a) && same(x.b, y.b) && same(x.c, y.c) && same(x.d, y.d);
}

template <class T>
std::vector<T> source(const std::vector<i64>& idx, int salt) {
  std::vector<T> v;
  for (i64 g : idx) v.push_back(etest::value<T>(g, salt));
  return v;
}

// Moves the four fields `runs` times (new values each run) with `algorithm`; the last run's
// destinations. Several runs check that nothing of one run (tmp) leaks into the next.
Result move(const Plan& plan, const std::string& algorithm, const std::vector<i64>& src_idx,
            int salt, int runs = 1) {
  const Schedule s = estuary::make_schedule(plan, algorithm);
  estuary::Exchange ex(s, plan.comm(), {Type::f64, Type::f32, Type::i32, Type::i64});
  Result out;
  const std::size_t nd = static_cast<std::size_t>(plan.dst_size()) + kGuard;
  for (int run = 0; run < runs; ++run) {
    const auto a = source<double>(src_idx, salt + run);
    const auto b = source<float>(src_idx, salt + run + 1);
    const auto c = source<std::int32_t>(src_idx, salt + run + 2);
    const auto d = source<std::int64_t>(src_idx, salt + run + 3);
    out.a.assign(nd, -1.5e30);
    out.b.assign(nd, -2.5e30f);
    out.c.assign(nd, -77);
    out.d.assign(nd, -88);
    // The guards lie outside the fields: an algorithm writing past the end shows as a difference.
    const i64 n = plan.dst_size(), ns = static_cast<i64>(src_idx.size());
    ex.run({estuary::Field(Type::f64, a.data(), ns, out.a.data(), n),
            estuary::Field(Type::f32, b.data(), ns, out.b.data(), n),
            estuary::Field(Type::i32, c.data(), ns, out.c.data(), n),
            estuary::Field(Type::i64, d.data(), ns, out.d.data(), n)});
  }
  return out;
}

// Every algorithm against p2p on one case; true on this rank when all agree bit for bit.
bool compare_all(const etest::Case& c, int salt) {
  bool ok = true;
  std::ostringstream why;
  try {
    const Plan plan(c.src, c.dst, MPI_COMM_WORLD, c.options);
    const std::vector<i64> src_idx = c.src.to_indices();
    const Result want = move(plan, "p2p", src_idx, salt, 2);
    for (const std::string& alg : kAlgorithms)
      if (!same(move(plan, alg, src_idx, salt, 2), want)) {
        ok = false;
        why << alg << " differs from p2p; ";
      }
  } catch (const std::exception& e) {
    ok = false;
    why << "threw: " << e.what();
  }
  EXPECT_TRUE(ok) << c.name << " on rank " << etest::world_rank() << ": " << why.str();
  return ok;
}

// Rank r's share of a random permutation of [0, n) cut at random points; about a quarter of
// the ranks get nothing and the others unequal shares. The same on every rank for one seed.
std::vector<i64> random_share(i64 n, int p, int r, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<i64> w(static_cast<std::size_t>(p));
  for (i64& x : w) x = rng() % 4 == 0 ? 0 : 1 + static_cast<i64>(rng() % 9);
  if (std::all_of(w.begin(), w.end(), [](i64 x) { return x == 0; })) w[0] = 1;
  const std::vector<i64> perm = etest::permutation(n, seed * 31 + 1);
  const auto [lo, hi] = etest::weighted_range(n, w, r);
  return std::vector<i64>(perm.begin() + lo, perm.begin() + hi);
}

std::vector<etest::Case> random_cases(int p, int r) {
  std::vector<etest::Case> cases;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed * 977);
    const i64 n = static_cast<i64>(rng() % 400);
    const std::string at = " seed " + std::to_string(seed) + " n=" + std::to_string(n);
    const Decomp src = Decomp::indices(n, random_share(n, p, r, seed));
    cases.push_back({"random->random" + at, src, Decomp::indices(n, random_share(n, p, r, seed + 100))});
    // Ghost cells: a random share plus a few random indices, repeats allowed.
    std::vector<i64> ghosts = random_share(n, p, r, seed + 200);
    std::mt19937_64 local(seed * 1000 + static_cast<std::uint64_t>(r));
    for (int g = 0; n > 0 && g < 7; ++g) ghosts.push_back(static_cast<i64>(local() % static_cast<std::uint64_t>(n)));
    cases.push_back({"random->random with ghosts" + at, src, Decomp::indices(n, std::move(ghosts))});
    cases.push_back({"random->cyclic" + at, src, etest::cyclic(n, p, r)});
    // Sources miss every index divisible by 5; those destinations are filled.
    std::vector<i64> some;
    for (i64 g : random_share(n, p, r, seed + 300))
      if (g % 5 != 0) some.push_back(g);
    etest::Case k{"random with holes->block (fill)" + at, Decomp::indices(n, std::move(some)),
                  etest::block(n, p, r)};
    k.options.missing = estuary::MissingPolicy::fill;
    k.options.fill_value = -3.0;
    cases.push_back(std::move(k));
  }
  return cases;
}

int ceil_log2(int p) {
  int j = 0;
  while ((1 << j) < p) ++j;
  return j;
}

}  // namespace

TEST(Alltoall, RandomPlansBitIdenticalToP2p) {
  const int p = etest::world_size(), r = etest::world_rank();
  for (const etest::Case& c : random_cases(p, r))
    EXPECT_TRUE(etest::all_ok(compare_all(c, 5))) << c.name;
}

TEST(Alltoall, StructuredPlansBitIdenticalToP2p) {
  // Block->cyclic, permutations, uneven blocks, empty ranks, halos, 2-D and 3-D transposes.
  const int p = etest::world_size(), r = etest::world_rank();
  std::vector<etest::Case> cases = etest::index_cases(61, p, r);
  for (etest::Case& c : etest::box_cases(p, r)) cases.push_back(std::move(c));
  for (const etest::Case& c : cases) EXPECT_TRUE(etest::all_ok(compare_all(c, 9))) << c.name;
}

TEST(Alltoall, StagesAndPeersFollowTable2) {
  const int p = etest::world_size(), r = etest::world_rank();
  // Every pair exchanges: each rank's block spreads cyclically over all ranks.
  const i64 n = 3 * p * p;
  const Plan plan(etest::block(n, p, r), etest::cyclic(n, p, r), MPI_COMM_WORLD);
  const estuary::ScheduleStats ref = estuary::make_schedule(plan, "p2p").stats();
  bool ok = true;
  std::ostringstream why;
  auto expect = [&](bool cond, const std::string& what) {
    if (!cond) why << what << "; ";
    ok = ok && cond;
  };
  for (int k : {1, 2, 4, 8}) {
    const Schedule s = estuary::make_schedule(plan, "ring-" + std::to_string(k));
    const estuary::ScheduleStats st = s.stats();
    expect(st.stages == std::max(1, (p - 1 + k - 1) / k), "ring-" + std::to_string(k) + " stages");
    expect(st.messages_sent == p - 1 && st.elements_sent == ref.elements_sent, "ring messages");
    expect(s.tmp_size == 0, "ring uses no tmp");
    for (std::size_t stage = 0; stage < s.stages.size(); ++stage) {
      const auto& sends = s.stages[stage].sends;
      expect(static_cast<int>(sends.size()) <= k, "at most k sends a stage");
      for (std::size_t m = 0; m < sends.size(); ++m) {
        const int step = static_cast<int>(stage) * k + static_cast<int>(m) + 1;
        expect(sends[m].peer == (r + step) % p, "ring send order");
      }
      for (std::size_t m = 0; m < s.stages[stage].recvs.size(); ++m) {
        const int step = static_cast<int>(stage) * k + static_cast<int>(m) + 1;
        expect(s.stages[stage].recvs[m].peer == ((r - step) % p + p) % p, "ring receive order");
      }
    }
  }
  const estuary::ScheduleStats burst = estuary::make_schedule(plan, "burst").stats();
  expect(burst.stages == 1 && burst.messages_sent == p - 1, "burst is one stage with every peer");

  const Schedule b = estuary::make_schedule(plan, "bruck");
  const estuary::ScheduleStats bs = b.stats();
  expect(bs.stages == std::max(1, ceil_log2(p)), "bruck stages");
  expect(bs.elements_sent >= ref.elements_sent && bs.elements_copied == ref.elements_copied,
         "bruck moves at least p2p's elements");
  expect(b.tmp_size <= bs.elements_received && (p < 4 || b.tmp_size > 0), "bruck tmp size");
  for (std::size_t j = 0; j < b.stages.size(); ++j) {
    const int step = 1 << j;
    for (const estuary::Message& m : b.stages[j].sends) expect(m.peer == (r + step) % p, "bruck partner");
    for (const estuary::Message& m : b.stages[j].recvs)
      expect(m.peer == ((r - step) % p + p) % p, "bruck source");
    expect(b.stages[j].sends.size() <= 1 && b.stages[j].recvs.size() <= 1, "one partner a stage");
  }
  expect(!b.describe().empty(), "describe");
  EXPECT_TRUE(ok) << "rank " << r << ": " << why.str();
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Alltoall, RingKFromEnvironment) {
  const int p = etest::world_size(), r = etest::world_rank();
  const Plan plan(etest::block(50, p, r), etest::cyclic(50, p, r), MPI_COMM_WORLD);
  ::unsetenv("ESTUARY_RING_K");
  estuary::Settings::reload();
  bool ok = estuary::make_schedule(plan, "ring-k").stats().stages == std::max(1, (p - 1 + 1) / 2);
  ::setenv("ESTUARY_RING_K", "3", 1);
  estuary::Settings::reload();
  ok = ok && estuary::make_schedule(plan, "ring-k").stats().stages == std::max(1, (p - 1 + 2) / 3);
  EXPECT_TRUE(etest::all_ok(ok));

  // A bad value, or values that differ between ranks, fail on every rank instead of hanging.
  ::setenv("ESTUARY_RING_K", r == 0 ? "zero" : "2", 1);
  estuary::Settings::reload();
  EXPECT_THROW(estuary::make_schedule(plan, "ring-k"), estuary::Error);
  if (p > 1) {
    ::setenv("ESTUARY_RING_K", r == 0 ? "1" : "2", 1);
    estuary::Settings::reload();
    try {
      estuary::make_schedule(plan, "ring-k");
      ADD_FAILURE() << "differing ESTUARY_RING_K accepted";
    } catch (const estuary::Error& e) {
      EXPECT_NE(std::string(e.what()).find("ESTUARY_RING_K"), std::string::npos) << e.what();
    }
  }
  ::unsetenv("ESTUARY_RING_K");
  estuary::Settings::reload();
}
