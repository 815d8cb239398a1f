// The simulator on scaled-down platforms: real SimGrid runs of a few seconds in all. Each
// check is one the issue lists (alpha-beta agreement, the paper's trends) or a guard against
// a silently wrong replay (unmatched messages, patterns that do not fit the platform).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "estuary/allreduce.hpp"
#include "estuary/error.hpp"
#include "estuary/sim.hpp"

using namespace estuary;
using namespace estuary::sim;

namespace {

// Every rank sends `bytes` to rank + shift and receives from rank - shift, `stages` times.
class Shift : public Pattern {
 public:
  Shift(int ranks, int shift, int stages, std::int64_t bytes) : p_(ranks), d_(shift), s_(stages), b_(bytes) {}
  std::string name() const override { return "shift"; }
  int ranks() const override { return p_; }
  int stages() const override { return s_; }
  void stage(int r, int, RankStage& out) const override {
    out.clear();
    out.sends.push_back({(r + d_) % p_, b_});
    out.recvs.push_back({(r - d_ + p_) % p_, b_});
  }

 private:
  int p_, d_, s_;
  std::int64_t b_;
};

// Pairs (2i, 2i+1) exchange `bytes` once per stage.
class Pairs : public Pattern {
 public:
  Pairs(int ranks, int stages, std::int64_t bytes) : p_(ranks), s_(stages), b_(bytes) {}
  std::string name() const override { return "pairs"; }
  int ranks() const override { return p_; }
  int stages() const override { return s_; }
  void stage(int r, int, RankStage& out) const override {
    out.clear();
    out.sends.push_back({r ^ 1, b_});
    out.recvs.push_back({r ^ 1, b_});
  }

 private:
  int p_, s_;
  std::int64_t b_;
};

double sim_time(const Platform& pl, const Pattern& p) {
  check_matching(p);
  return simulate(pl, p).simulated_s;
}

// Transposition of an n x ny x nz grid; (b) splits z over cx, so nz >= cx keeps every pair
// busy (with fewer levels than ranks most ranks would receive nothing and one would take all).
double transposition_time(const Platform& pl, std::int64_t n, std::int64_t ny, std::int64_t nz, int cx, int cy,
                          const std::string& algo, int transpositions = 3) {
  TranspositionSpec s;
  s.nx = n;
  s.ny = ny;
  s.nz = nz;
  s.cx = cx;
  s.cy = cy;
  s.algo = AlltoallAlgo::parse(algo);
  s.transpositions = transpositions;
  return sim_time(pl, *transposition(s));
}

}  // namespace

// Contention-free: a ring shift on a 1-D torus uses each link once per direction, so every
// stage costs one link latency plus size / bandwidth.
TEST(Sim, ShiftOnRingEqualsAlphaBeta) {
  for (std::int64_t bytes : {std::int64_t{8}, std::int64_t{1} << 16, std::int64_t{1} << 22}) {
    Platform pl = Platform::torus(32, 1, 1);
    pl.bandwidth_Bps = 10e9;
    pl.latency_s = 1e-6;
    const Shift p(32, 1, 5, bytes);
    const double model = alpha_beta_s(p, pl.latency_s, pl.bandwidth_Bps);
    const double sim = sim_time(pl, p);
    EXPECT_NEAR(sim / model, 1.0, 0.05) << bytes << " bytes: simulated " << sim << " s, alpha-beta " << model;
  }
}

// Neighbours under one fat-tree leaf switch: two links (host-switch-host), disjoint per pair.
TEST(Sim, PairsOnFatTreeEqualAlphaBeta) {
  Platform pl = Platform::fat_tree(2, 4);
  pl.latency_s = 500e-9;
  const Pairs p(16, 3, 1 << 20);
  const double model = alpha_beta_s(p, 2 * pl.latency_s, pl.bandwidth_Bps);
  const double sim = sim_time(pl, p);
  EXPECT_NEAR(sim / model, 1.0, 0.05) << "simulated " << sim << " s, alpha-beta " << model;
}

// Two messages leaving one host share its link: the stage takes twice the bytes' time, as the
// alpha-beta model with one port per rank says (and not the time of one message).
TEST(Sim, MessagesOfOneRankShareItsLink) {
  class Two : public Pattern {
   public:
    std::string name() const override { return "two"; }
    int ranks() const override { return 3; }
    int stages() const override { return 1; }
    void stage(int r, int, RankStage& out) const override {
      out.clear();
      if (r == 0) out.sends = {{1, 1 << 22}, {2, 1 << 22}};
      else out.recvs = {{0, 1 << 22}};
    }
  } p;
  Platform pl = Platform::fat_tree(1, 4);  // one switch, four hosts
  const double model = alpha_beta_s(p, 2 * pl.latency_s, pl.bandwidth_Bps);
  EXPECT_NEAR(sim_time(pl, p) / model, 1.0, 0.05);
}

TEST(Sim, SkeletonsPairUp) {
  for (const char* a : {"burst", "bruck", "ring-1", "ring-3"}) {
    TranspositionSpec s;
    s.nx = 37, s.ny = 29, s.nz = 11, s.cx = 5, s.cy = 3, s.algo = AlltoallAlgo::parse(a);
    EXPECT_NO_THROW(check_matching(*transposition(s))) << a;
  }
  // Wide halos: wider than a subdomain (neighbours' neighbours), and wrapping past the rank
  // itself on a 2-rank dimension.
  for (std::int64_t w : {1, 3, 10, 20}) {
    EXPECT_NO_THROW(check_matching(*halo({64, 48, 2, 8, 6, w, 8}))) << w;
    EXPECT_NO_THROW(check_matching(*halo({40, 30, 1, 2, 3, w, 8}))) << w;
  }
  for (int p : {1, 7, 64, 100})
    for (int k : {2, 3, 5, 32}) EXPECT_NO_THROW(check_matching(*allreduce({p, k, 3, 2}))) << p << " " << k;
  EXPECT_NO_THROW(check_matching(*coupling_p2p({1000, 7, 3, 8, 2})));
  EXPECT_NO_THROW(check_matching(*coupling_p2p({1000, 3, 7, 8, 1})));
}

// Halo volumes: a width-w halo of a px x py decomposition moves, per rank, 2w rows of its
// x-extent... counted exactly: every rank receives (bx + 2w)(by + 2w) - bx*by points.
TEST(Sim, HaloReceivesExactlyTheHaloPoints) {
  const HaloSpec s{60, 45, 3, 4, 3, 20, 8};  // width 20 > subdomain (15 x 15)
  const auto p = halo(s);
  RankStage st;
  for (int r = 0; r < p->ranks(); ++r) {
    std::int64_t got = 0;
    for (int k = 0; k < p->stages(); ++k) {
      p->stage(r, k, st);
      for (const Msg& m : st.recvs) got += m.bytes;
    }
    const std::int64_t bx = 15, by = 15, w = 20;
    EXPECT_EQ(got, ((bx + 2 * w) * (by + 2 * w) - bx * by) * s.nz * s.elem_bytes) << "rank " << r;
  }
}

// The closed-form allreduce is the executor's recursive_k_stages, message for message.
TEST(Sim, AllreduceEqualsRecursiveKStages) {
  for (int p : {1, 2, 5, 8, 27, 30, 100, 131})
    for (int k : {2, 3, 4, 5, 7, 32}) {
      const auto pat = allreduce({p, k, 3, 2});
      RankStage st;
      for (int r = 0; r < p; ++r) {
        const std::vector<AllreduceStage> real = recursive_k_stages(r, p, k);
        ASSERT_EQ(pat->stages(), 2 * static_cast<int>(real.size())) << p << " " << k;
        for (int s = 0; s < pat->stages(); ++s) {
          const AllreduceStage& a = real[static_cast<std::size_t>(s) % real.size()];
          RankStage want;
          for (int q : a.send_to) want.sends.push_back({q, 24});
          for (int q : a.combine)
            if (q != r) want.recvs.push_back({q, 24});
          if (a.result_from >= 0) want.recvs.push_back({a.result_from, 24});
          pat->stage(r, s, st);
          EXPECT_EQ(st, want) << "P " << p << " k " << k << " rank " << r << " stage " << s;
        }
      }
    }
}

// A pattern whose receives do not pair with sends is refused before it could deadlock, and a
// replay that deadlocks anyway is reported, not hung.
TEST(Sim, UnmatchedPatternsAreReported) {
  class Lonely : public Pattern {
   public:
    std::string name() const override { return "lonely"; }
    int ranks() const override { return 2; }
    int stages() const override { return 1; }
    void stage(int r, int, RankStage& out) const override {
      out.clear();
      if (r == 1) out.recvs.push_back({0, 8});
    }
  } p;
  try {
    check_matching(p);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 -> rank 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(simulate(Platform::torus(2, 1, 1), p), Error);
}

TEST(Sim, PlatformsAreChecked) {
  EXPECT_THROW(simulate(Platform::torus(2, 2, 1), *allreduce({5, 2, 1, 1})), Error);  // 5 ranks, 4 hosts
  EXPECT_THROW(simulate(Platform::dragonfly(4, 2, 2, 1), *allreduce({16, 2, 1, 1})), Error);
  EXPECT_THROW(Platform::by_name("torus-X"), Error);
  EXPECT_EQ(Platform::by_name("torus-M").hosts(), 390625);
  EXPECT_EQ(Platform::by_name("fattree-M").hosts(), 390625);
  EXPECT_EQ(Platform::by_name("dragonfly-MM").hosts(), 390625);
  EXPECT_EQ(Platform::by_name("dragonfly-LS").hosts(), 390625);
  EXPECT_EQ(Platform::by_name("torus-L").hosts(), 1171875);
  EXPECT_EQ(Platform::by_name("fattree-L").hosts(), 1185921);
  EXPECT_EQ(Platform::by_name("dragonfly-ML").hosts(), 1171875);
}

// All three topologies replay the same pattern; more hops cost more, so a torus line of 64 is
// slower than the fat tree for an allreduce whose partners are far apart in rank.
TEST(Sim, AllTopologiesRun) {
  const auto p = allreduce({64, 2, 3, 4});
  const double torus = sim_time(Platform::torus(64, 1, 1), *p);
  const double fat = sim_time(Platform::fat_tree(3, 4), *p);
  const double fly = sim_time(Platform::dragonfly(4, 4, 4, 1), *p);
  for (double t : {torus, fat, fly}) EXPECT_GT(t, 0);
  EXPECT_GT(torus, fat);
}

// Paper 004 Fig. 5a at moderate counts: ring-k beats Bruck when messages are large (Bruck
// moves each byte log2(n)/2 times), and ring-4 beats ring-1 (more messages in flight).
TEST(Sim, RingBeatsBruckAtModerateCounts) {
  const Platform pl = Platform::dragonfly(4, 4, 4, 1);
  const double bruck = transposition_time(pl, 256, 256, 64, 8, 8, "bruck");
  const double ring1 = transposition_time(pl, 256, 256, 64, 8, 8, "ring-1");
  const double ring4 = transposition_time(pl, 256, 256, 64, 8, 8, "ring-4");
  EXPECT_LT(ring1, bruck);
  EXPECT_LT(ring4, bruck);
  EXPECT_LT(ring4, ring1);
}

// Fig. 5a at large counts: with a fixed grid the messages shrink as ranks grow, latency
// dominates and Bruck's log2(n) stages overtake ring-1's n-1 (one all-to-all of a 128 x 16 x 128
// grid: 256 KiB per pair on 8 ranks, 128 B on 128).
TEST(Sim, BruckOvertakesRing1AtLargeCountsWithSmallMessages) {
  for (const Platform& pl : {Platform::fat_tree(3, 8), Platform::torus(8, 8, 8)}) {
    const double ring_small = transposition_time(pl, 128, 16, 128, 8, 1, "ring-1", 1);
    const double bruck_small = transposition_time(pl, 128, 16, 128, 8, 1, "bruck", 1);
    const double ring_large = transposition_time(pl, 128, 16, 128, 128, 1, "ring-1", 1);
    const double bruck_large = transposition_time(pl, 128, 16, 128, 128, 1, "bruck", 1);
    EXPECT_LT(ring_small, bruck_small) << "8 ranks, " << pl.describe();
    EXPECT_LT(bruck_large, ring_large) << "128 ranks, " << pl.describe();
  }
}

// Fig. 9a: with a fixed grid, transposition time falls faster with ranks than halo time
// (halo messages shrink with the subdomain's side, transposition messages with its area). On
// a full-bisection fat tree, so that the rank-to-host mapping favours neither (on a 16 x 16
// torus the 4 x 4 rank grid would sit on one row of hosts).
TEST(Sim, HaloFallsMoreSlowlyThanTransposition) {
  const Platform pl = Platform::fat_tree(2, 16);
  const std::int64_t n = 256, nz = 16;
  const double tr16 = transposition_time(pl, n, n, nz, 4, 4, "ring-1");
  const double tr256 = transposition_time(pl, n, n, nz, 16, 16, "ring-1");
  const double ha16 = sim_time(pl, *halo({n, n, nz, 4, 4, 10, 8}));
  const double ha256 = sim_time(pl, *halo({n, n, nz, 16, 16, 10, 8}));
  EXPECT_LT(tr256, tr16);
  EXPECT_LT(ha256, ha16);
  EXPECT_GT(tr16 / tr256, ha16 / ha256) << "transposition " << tr16 << " -> " << tr256 << ", halo " << ha16
                                        << " -> " << ha256;
}

// Fig. 10a: GCR's allreduces get slower as ranks grow (more stages, longer routes).
TEST(Sim, AllreduceTimeGrowsWithRanks) {
  const Platform pl = Platform::torus(8, 8, 8);
  double last = 0;
  for (int p : {16, 128, 512}) {
    const double t = sim_time(pl, *allreduce({p, 2, 3, 4}));
    EXPECT_GT(t, last) << p << " ranks";
    last = t;
  }
}

// Fig. 10c: the best recursive-k radix for a few doubles is at least 5 (fewer stages win
// while the k-1 messages of a stage are tiny).
TEST(Sim, BestRecursiveKRadixIsAtLeast5) {
  const Platform pl = Platform::fat_tree(3, 8);  // 512 hosts
  for (int p : {100, 300}) {
    int best = 0;
    double best_t = 1e30;
    for (int k = 2; k <= 32; ++k) {
      const double t = sim_time(pl, *allreduce({p, k, 3, 1}));
      if (t < best_t) best_t = t, best = k;
    }
    EXPECT_GE(best, 5) << p << " ranks";
  }
}

// Valiant (an approximation on top of SimGrid, see docs/simulator.md) beats minimal routing on
// a dragonfly under heavy adversarial congestion: every host of group g sends to group g + 1,
// which minimal routing squeezes through the one global link between the two groups.
TEST(Sim, ValiantBeatsMinimalUnderGroupShiftOnDragonfly) {
  Platform pl = Platform::dragonfly(8, 2, 8, 2);  // 8 groups of 32 hosts
  pl.group_links = 1;
  const Shift p(256, 32, 1, 1 << 22);
  const double minimal = sim_time(pl, p);
  pl.routing = Routing::valiant;
  const double valiant = sim_time(pl, p);
  EXPECT_LT(valiant, 0.7 * minimal) << "minimal " << minimal << " s, valiant " << valiant << " s";
  // Without congestion the detour only costs: neighbours under one router.
  const Pairs q(256, 1, 1 << 22);
  EXPECT_GT(sim_time(pl, q), sim_time(Platform::dragonfly(8, 2, 8, 2), q));
}
