// Butterfly and adaptive schedules: the pure mapping and pairing functions on hand-checked
// cases. The MPI half (results against P2P, adaptive choice, cache) is test_butterfly_mpi.cpp.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <map>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "estuary/adaptive.hpp"
#include "estuary/butterfly.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/exchange.hpp"
#include "mpi_test_util.hpp"

namespace bf = estuary::butterfly;
using estuary::Decomp;
using estuary::Field;
using estuary::Type;
using etest::i64;

namespace {

// ---------- pure functions ----------

// Checks that at every level the pairing put the k-th largest group with the k-th smallest.
bool balanced_pairing(const std::vector<i64>& sizes, const std::vector<int>& order) {
  std::vector<i64> totals;
  for (int i : order) totals.push_back(i < 0 ? 0 : sizes[static_cast<std::size_t>(i)]);
  while (totals.size() > 1) {
    std::vector<i64> sorted = totals, next;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::pair<i64, i64>> want, got;
    for (std::size_t k = 0; k < sorted.size() / 2; ++k) want.emplace_back(sorted[sorted.size() - 1 - k], sorted[k]);
    for (std::size_t k = 0; k < totals.size(); k += 2) {
      got.emplace_back(std::max(totals[k], totals[k + 1]), std::min(totals[k], totals[k + 1]));
      next.push_back(totals[k] + totals[k + 1]);
    }
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    if (want != got) return false;
    totals = next;
  }
  return true;
}

TEST(ButterflyMap, KernelSize) {
  EXPECT_EQ(bf::kernel_size(0), 1);
  EXPECT_EQ(bf::kernel_size(1), 1);
  EXPECT_EQ(bf::kernel_size(3), 2);
  EXPECT_EQ(bf::kernel_size(5), 4);  // Fig. 11: 5 processes, a kernel of 4
  EXPECT_EQ(bf::kernel_size(8), 8);
  EXPECT_EQ(bf::kernel_size(1023), 512);
  EXPECT_EQ(bf::bit_reverse(1, 3), 4);
  EXPECT_EQ(bf::bit_reverse(6, 3), 3);
}

TEST(ButterflyMap, PairingLargestWithSmallest) {
  // 8 processes 1..8: (8,1) (7,2) (6,3) (5,4) all sum to 9; then (8,1)+(5,4), (7,2)+(6,3).
  const std::vector<i64> eight{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(bf::pairing_order(eight), (std::vector<int>{7, 0, 4, 3, 6, 1, 5, 2}));
  // Fig. 11's sender of 5 processes, padded with 3 empty virtual ones: each of the three
  // largest gets a virtual partner, the two smallest pair up; then 50+0 with 20+10.
  const std::vector<i64> five{10, 30, 20, 50, 40};
  EXPECT_EQ(bf::pairing_order(five), (std::vector<int>{3, -1, 2, 0, 4, -1, 1, -1}));
  EXPECT_TRUE(balanced_pairing(five, bf::pairing_order(five)));
  std::mt19937_64 rng(7);
  for (int n = 1; n <= 40; ++n) {
    std::vector<i64> s(static_cast<std::size_t>(n));
    for (i64& v : s) v = static_cast<i64>(rng() % 1000);
    const std::vector<int> order = bf::pairing_order(s);
    EXPECT_TRUE(balanced_pairing(s, order)) << "n=" << n;
    std::vector<int> real;
    for (int i : order) if (i >= 0) real.push_back(i);
    std::sort(real.begin(), real.end());
    EXPECT_EQ(static_cast<int>(real.size()), n);
    EXPECT_TRUE(std::adjacent_find(real.begin(), real.end()) == real.end());
  }
}

TEST(ButterflyMap, SenderMappingsHandChecked) {
  // 5 senders onto 4 positions: level-1 groups of the order above, many-to-one.
  const bf::SideMap m = bf::map_senders(std::vector<i64>{10, 30, 20, 50, 40}, 4);
  EXPECT_EQ(m.members_by_position(), (std::vector<std::vector<int>>{{3}, {0, 2}, {4}, {1}}));
  EXPECT_FALSE(m.many_to_many());
  // 3 senders onto 8 positions: slot t uses t and t + 4 (one-to-many); the empty slot none.
  const bf::SideMap w = bf::map_senders(std::vector<i64>{5, 7, 6}, 8);
  EXPECT_EQ(w.order, (std::vector<int>{2, 0, 1, -1}));
  EXPECT_EQ(w.positions(2), (std::vector<int>{0, 4}));
  EXPECT_EQ(w.positions(0), (std::vector<int>{1, 5}));
  EXPECT_EQ(w.positions(1), (std::vector<int>{2, 6}));
  EXPECT_FALSE(w.many_to_many());
}

TEST(ButterflyMap, ReceiverMappingsHandChecked) {
  // 4 equal receivers on 4 positions, nothing hosted: order 0 3 1 2 bit-reversed onto
  // positions 0 2 1 3, so the last stage (bit 1) pairs 0 with 3 and 1 with 2.
  const bf::SideMap r = bf::map_receivers(std::vector<i64>{1, 1, 1, 1}, 4);
  EXPECT_EQ(r.order, (std::vector<int>{0, 3, 1, 2}));
  EXPECT_EQ(r.base, (std::vector<int>{0, 1, 3, 2}));
  // The same receivers hosting positions 3, 2, 1, 0 stay where they are: no mapping hop.
  const bf::SideMap h = bf::map_receivers(std::vector<i64>{1, 1, 1, 1}, 4, std::vector<int>{3, 2, 1, 0});
  EXPECT_EQ(h.base, (std::vector<int>{3, 2, 1, 0}));
  // 2 receivers on 8 positions: each gathers from the 4 positions sharing its high bit.
  const bf::SideMap g = bf::map_receivers(std::vector<i64>{3, 9}, 8);
  EXPECT_EQ(g.positions(1), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(g.positions(0), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_FALSE(g.many_to_many());
  // Fig. 11's other side: 5 processes onto 4 positions, one position serves two.
  const bf::SideMap f = bf::map_receivers(std::vector<i64>{10, 30, 20, 50, 40}, 4);
  EXPECT_EQ(f.members_by_position(), (std::vector<std::vector<int>>{{3}, {4}, {0, 2}, {1}}));
}

TEST(ButterflyMap, NeverManyToManyAndEveryMemberPlaced) {
  std::mt19937_64 rng(11);
  for (int n = 1; n <= 33; ++n)
    for (int K : {1, 2, 4, 8, 16, 32, 64}) {
      std::vector<i64> s(static_cast<std::size_t>(n));
      for (i64& v : s) v = 1 + static_cast<i64>(rng() % 100);
      for (const bf::SideMap& m : {bf::map_senders(s, K), bf::map_receivers(s, K)}) {
        EXPECT_FALSE(m.many_to_many()) << "n=" << n << " K=" << K;
        std::vector<int> seen(static_cast<std::size_t>(K), 0);
        for (int i = 0; i < n; ++i) {
          const std::vector<int> ps = m.positions(i);
          EXPECT_FALSE(ps.empty());
          for (int j : ps) { ASSERT_TRUE(j >= 0 && j < K); ++seen[static_cast<std::size_t>(j)]; }
        }
        // With at least as many members as positions, every position serves someone.
        if (n >= K) {
          for (int c : seen) EXPECT_GT(c, 0) << "n=" << n << " K=" << K;
        }
      }
    }
}

TEST(ButterflyMap, HostsPreferHeaviestSender) {
  const std::vector<i64> sizes{10, 30, 20, 50, 40};
  const std::vector<int> ranks{0, 1, 2, 3, 4};
  const bf::SideMap m = bf::map_senders(sizes, 4);
  // Position 1 is fed by ranks 0 and 2: rank 2 (20) hosts it, rank 0 sends to it.
  EXPECT_EQ(bf::choose_hosts(m, ranks, sizes, ranks, sizes, 5), (std::vector<int>{3, 2, 4, 1}));
}

// The greedy search (paper Fig. 13) that AdaptiveRedist and the simulator both run, on times
// given by hand: the full butterfly, then each stage skipped on top of the best so far (kept
// when faster), then P2P; the minimum of the repetitions counts; a candidate with the same
// schedule as one timed is passed over.
TEST(AdaptiveSearch, GreedyOrderOnGivenTimes) {
  std::map<std::uint64_t, std::vector<double>> times = {
      {0, {10, 12}}, {1, {9, 8}}, {3, {9, 9}}, {5, {7.5, 7}}, {7, {6, 6.5}}};
  estuary::AdaptiveSearch search(3, 2, [](std::uint64_t a, std::uint64_t b) { return a == b; });
  std::vector<std::uint64_t> order;
  while (!search.done()) {
    const std::uint64_t c = search.candidate();
    order.push_back(c);
    for (double t : times.at(c)) search.record(t);
  }
  // 0 (10); skip 0: 1 (8, kept); skip 1 on top: 3 (9, not kept); skip 2 on top of 1: 5 (7, kept); P2P: 7 (6).
  EXPECT_EQ(order, (std::vector<std::uint64_t>{0, 1, 3, 5, 7}));
  EXPECT_EQ(search.best(), 7u);
  ASSERT_EQ(search.trials().size(), 5u);
  EXPECT_EQ(search.trials()[1].seconds, 8);  // the minimum of its two timings
  // Schedules that coincide are timed once: with masks 1 and 3 the same schedule, and 5 and 7,
  // the search goes 0, 1, 5 and stops (P2P = 7 = 5 already timed).
  estuary::AdaptiveSearch same(3, 1, [](std::uint64_t a, std::uint64_t b) { return (a | 2) == (b | 2); });
  order.clear();
  while (!same.done()) {
    order.push_back(same.candidate());
    same.record(times.at(same.candidate())[0]);
  }
  EXPECT_EQ(order, (std::vector<std::uint64_t>{0, 1, 5}));
  EXPECT_EQ(same.best(), 5u);
  // No kernel: nothing to search, P2P.
  EXPECT_TRUE(estuary::AdaptiveSearch(0, 3, [](std::uint64_t, std::uint64_t) { return false; }).done());
}

// With pruning (what AdaptiveRedist runs): P2P first, then the full butterfly if it can win; a
// butterfly far behind after one timing gets no second; a skip the estimate rules out is passed
// over untimed, and the skips still build on the fastest butterfly, not on P2P.
TEST(AdaptiveSearch, PruningTimesOnlyCandidatesThatCanWin) {
  std::map<std::uint64_t, std::vector<double>> times = {{7, {5, 6}}, {0, {20, 1}}, {2, {6, 4}}};
  estuary::AdaptiveSearch search(3, 2, [](std::uint64_t a, std::uint64_t b) { return a == b; });
  std::vector<std::pair<std::uint64_t, std::size_t>> asked;  // (mask, trials seen) per estimate
  search.prune([&](std::uint64_t mask, const std::vector<estuary::AdaptiveTrial>& trials, double best) {
    asked.push_back({mask, trials.size()});
    EXPECT_EQ(best, mask == 6 ? 4.0 : 5.0);  // the best when the estimate is asked
    return mask == 0 || mask == 2;  // only the full butterfly and "skip stage 1" may win
  }, 2.0);
  std::vector<std::uint64_t> order;
  std::map<std::uint64_t, int> timings;
  while (!search.done()) {
    const std::uint64_t c = search.candidate();
    order.push_back(c);
    for (double t : times.at(c)) {
      if (search.done() || search.candidate() != c) break;
      search.record(t);
      ++timings[c];
    }
  }
  // P2P (5); butterfly 20 > 2 x 5 after one timing: given up; skip 0 (mask 1) ruled out; skip 1
  // (mask 2) timed, 4 the best; skip 2 on top of it (mask 6) ruled out.
  EXPECT_EQ(order, (std::vector<std::uint64_t>{7, 0, 2}));
  EXPECT_EQ(timings[0], 1);
  EXPECT_EQ(timings[7], 2);
  EXPECT_EQ(search.pruned(), (std::vector<std::uint64_t>{1, 6}));
  // After P2P's first timing, whether any butterfly could still win (with that timing as a
  // provisional trial: the full butterfly can, so P2P is timed again); then each step's own.
  EXPECT_EQ(asked, (std::vector<std::pair<std::uint64_t, std::size_t>>{{0, 1}, {0, 1}, {1, 2}, {2, 2}, {6, 3}}));
  EXPECT_EQ(search.best(), 2u);
  ASSERT_EQ(search.trials().size(), 3u);
  EXPECT_EQ(search.trials()[1].seconds, 20);
}

// When P2P's first timing already rules out every butterfly the search could go on to (the full
// one and, that pruned, each single skip), P2P's other repetitions are not run: they could not
// change the choice. A candidate giving P2P's own schedule is not asked about.
TEST(AdaptiveSearch, P2PTimedOnceWhenNoButterflyCanWin) {
  estuary::AdaptiveSearch search(3, 3, [](std::uint64_t a, std::uint64_t b) { return a == b || a + b == 11; });
  std::vector<std::uint64_t> asked;
  search.prune([&](std::uint64_t mask, const std::vector<estuary::AdaptiveTrial>& trials, double) {
    asked.push_back(mask);
    EXPECT_EQ(trials.size(), 1u);  // P2P's one timing
    return false;
  }, 2.0);
  ASSERT_EQ(search.candidate(), 7u);
  search.record(5);
  EXPECT_TRUE(search.done());
  EXPECT_EQ(search.best(), 7u);
  ASSERT_EQ(search.trials().size(), 1u);
  EXPECT_EQ(search.trials()[0].seconds, 5);
  // Mask 4 (skip stage 2) gives P2P's schedule here (4 + 7 == 11): never asked, never pruned.
  EXPECT_EQ(asked, (std::vector<std::uint64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(search.pruned(), (std::vector<std::uint64_t>{0, 1, 2}));

  // The same search with a butterfly that can win times P2P all three times first.
  estuary::AdaptiveSearch open(3, 3, [](std::uint64_t a, std::uint64_t b) { return a == b; });
  open.prune([](std::uint64_t mask, const std::vector<estuary::AdaptiveTrial>&, double) { return mask == 1; }, 2.0);
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(open.candidate(), 7u);
    open.record(5 - k);
  }
  EXPECT_EQ(open.candidate(), 1u);
  EXPECT_EQ(open.trials()[0].seconds, 3);
}

}  // namespace
