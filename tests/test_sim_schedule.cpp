// The simulator's closed-form skeletons are estuary's own schedules: on a real MPI run, every
// rank's Schedule (make_schedule over a real Plan) equals the closed-form pattern message for
// message, and the gathered real schedules replay on SimGrid to the same simulated time.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "estuary/adaptive.hpp"
#include "estuary/butterfly.hpp"
#include "estuary/decomp.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/plan.hpp"
#include "estuary/schedule.hpp"
#include "estuary/sim.hpp"

using namespace estuary;
using namespace estuary::sim;

namespace {

std::int64_t lo(std::int64_t n, int i, int p) { return n * i / p; }

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int size_of(MPI_Comm c) {
  int p = 0;
  MPI_Comm_size(c, &p);
  return p;
}

// Transposition (a) -> (b) of Fig. 3 with cy = 1: x slabs to z slabs of an nx x ny x nz grid.
Plan slab_plan(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  const int r = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  const Decomp src = Decomp::box({nx, ny, nz}, {lo(nx, r, p), 0, 0}, {lo(nx, r + 1, p) - lo(nx, r, p), ny, nz});
  const Decomp dst = Decomp::box({nx, ny, nz}, {0, 0, lo(nz, r, p)}, {nx, ny, lo(nz, r + 1, p) - lo(nz, r, p)});
  return Plan(src, dst, MPI_COMM_WORLD);
}

void expect_same(const std::vector<RankStage>& real, const Pattern& closed, int rank, const std::string& what) {
  ASSERT_EQ(static_cast<int>(real.size()), closed.stages()) << what << ": stage count, rank " << rank;
  RankStage st;
  for (int s = 0; s < closed.stages(); ++s) {
    closed.stage(rank, s, st);
    EXPECT_EQ(real[static_cast<std::size_t>(s)].sends, st.sends) << what << ": sends of stage " << s << ", rank " << rank;
    EXPECT_EQ(real[static_cast<std::size_t>(s)].recvs, st.recvs) << what << ": receives of stage " << s << ", rank " << rank;
  }
}

// Every flow of the plan (each rank's sends to other ranks), on every rank: what the simulator
// needs to build every rank's butterfly in one process.
std::vector<butterfly::Flow> all_flows(const Plan& plan) {
  std::vector<std::int64_t> mine;
  for (const PeerSegments& ps : plan.sends())
    if (ps.peer != plan.rank() && ps.count() > 0) mine.insert(mine.end(), {plan.rank(), ps.peer, ps.count()});
  const int p = plan.size();
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; i < p; ++i) displs[static_cast<std::size_t>(i)] = total, total += counts[static_cast<std::size_t>(i)];
  std::vector<std::int64_t> all(static_cast<std::size_t>(std::max(total, 1)));
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, MPI_COMM_WORLD);
  std::vector<butterfly::Flow> flows;
  for (int i = 0; i + 2 < total; i += 3)
    flows.push_back({static_cast<int>(all[static_cast<std::size_t>(i)]), static_cast<int>(all[static_cast<std::size_t>(i) + 1]),
                     all[static_cast<std::size_t>(i) + 2]});
  return flows;
}

// The coupler exchange of `spec` as a real plan on this run's ranks: sources are ranks
// [0, src_ranks), destinations the next dst_ranks; destination point q belongs to destination
// (q / dst_chunk) mod dst_ranks when dst_chunk > 0, else the destination blocks.
Plan coupling_plan(const CouplingSpec& spec) {
  const int r = rank_of(MPI_COMM_WORLD), pa = spec.src_ranks, pb = spec.dst_ranks;
  const std::int64_t n = spec.points;
  const Decomp src = r < pa ? gen::block(n, r, pa) : Decomp::empty(n);
  Decomp dst = Decomp::empty(n);
  if (r >= pa && r < pa + pb) {
    if (spec.dst_chunk == 0) {
      dst = gen::block(n, r - pa, pb);
    } else {
      std::vector<std::int64_t> idx;
      for (std::int64_t q = 0; q < n; ++q)
        if ((q / spec.dst_chunk) % pb == r - pa) idx.push_back(q);
      dst = Decomp::indices(n, std::move(idx));
    }
  }
  return Plan(src, dst, MPI_COMM_WORLD);
}

std::vector<CouplingSpec> coupling_cases(int p) {
  const int pa = p - p / 2, pb = p / 2;  // uneven components when p is odd
  return {CouplingSpec{1001, pa, pb, 8, 1, 0}, CouplingSpec{997, pa, pb, 8, 1, 3},
          CouplingSpec{640, pb, pa, 8, 1, 1}, CouplingSpec{300, 1, p - 1, 8, 1, 7}};
}

}  // namespace

TEST(SimSchedule, AlltoallSchedulesEqualTheClosedForm) {
  const int r = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  const std::int64_t nx = 23, ny = 5, nz = 19;  // uneven blocks: message sizes differ per pair
  const Plan plan = slab_plan(nx, ny, nz);
  for (const char* algo : {"burst", "bruck", "ring-1", "ring-2", "ring-4"}) {
    const Schedule real = make_schedule(plan, algo);
    TranspositionSpec spec;
    spec.nx = nx, spec.ny = ny, spec.nz = nz, spec.cx = p, spec.cy = 1, spec.transpositions = 1;
    spec.algo = AlltoallAlgo::parse(algo);
    expect_same(rank_stages(real, 8), *transposition(spec), r, algo);
  }
}

TEST(SimSchedule, CouplerP2PEqualsTheClosedForm) {
  const int r = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  if (p < 2) GTEST_SKIP() << "a coupling needs two components: run on 2 or more ranks";
  const int pa = p - p / 2, pb = p / 2;  // uneven components when p is odd
  const std::int64_t n = 1001;
  const Decomp src = r < pa ? gen::block(n, r, pa) : Decomp::empty(n);
  const Decomp dst = r >= pa ? gen::block(n, r - pa, pb) : Decomp::empty(n);
  const Plan plan(src, dst, MPI_COMM_WORLD);
  expect_same(rank_stages(make_schedule(plan, "p2p"), 8), *coupling_p2p({n, pa, pb, 8, 1}), r, "p2p");
}

// The real schedules of every rank, gathered and replayed, take exactly the simulated time of
// the closed-form pattern on the same platform.
TEST(SimSchedule, RealSchedulesReplayLikeTheClosedForm) {
  const int r = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  const std::int64_t nx = 64, ny = 32, nz = 64;
  const Plan plan = slab_plan(nx, ny, nz);
  for (const char* algo : {"bruck", "ring-2"}) {
    const auto all = gather_rank_stages(rank_stages(make_schedule(plan, algo), 8), MPI_COMM_WORLD);
    if (r != 0) continue;
    const auto real = table_pattern(std::string("real ") + algo, all);
    ASSERT_NO_THROW(check_matching(*real));
    TranspositionSpec spec;
    spec.nx = nx, spec.ny = ny, spec.nz = nz, spec.cx = p, spec.cy = 1, spec.transpositions = 1;
    spec.algo = AlltoallAlgo::parse(algo);
    const auto closed = transposition(spec);
    const Platform pl = Platform::fat_tree(2, 4);
    const SimResult a = simulate(pl, *real), b = simulate(pl, *closed);
    EXPECT_EQ(a.messages, b.messages) << algo;
    EXPECT_EQ(a.bytes, b.bytes) << algo;
    EXPECT_DOUBLE_EQ(a.simulated_s, b.simulated_s) << algo;
    if (p >= 2) {
      EXPECT_GT(a.simulated_s, 0) << algo;  // messages cross the network
    }
  }
}

// The simulated butterfly is the schedule estuary runs: for coupler exchanges (block or chunked
// destinations, uneven components) the closed-form flows routed by the engine's mapping equal
// every rank's ButterflyRouting schedule message for message (peer, bytes, stage), for every
// skip mask.
TEST(SimSchedule, CouplingButterflyEqualsTheEngine) {
  const int r = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  if (p < 2) GTEST_SKIP() << "a coupling needs two components: run on 2 or more ranks";
  for (const CouplingSpec& spec : coupling_cases(p)) {
    const Plan plan = coupling_plan(spec);
    const ButterflyRouting routing(plan);
    ASSERT_EQ(coupling_kernel_stages(spec), routing.kernel_stages());
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << routing.kernel_stages()); ++mask) {
      const auto sim = coupling_butterfly(spec, mask);
      const std::string what = sim->name() + " " + std::to_string(spec.src_ranks) + " -> " +
                               std::to_string(spec.dst_ranks) + " chunk " + std::to_string(spec.dst_chunk);
      expect_same(rank_stages(routing.schedule(mask), 8), *sim, r, what);
    }
    // Every kernel stage skipped: the engine's P2P schedule.
    expect_same(rank_stages(make_schedule(plan, "p2p"), 8), *coupling_butterfly(spec, ~std::uint64_t{0}), r, "p2p");
  }
}

// The same for general plans (several decomposition pairs): the plan's flows, routed in one
// process by butterfly_pattern, give every rank's engine schedule for every skip mask.
TEST(SimSchedule, ButterflyOfAnyPlanEqualsTheEngine) {
  const int r = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  const std::int64_t n = 211;
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"block", "cyclic"}, {"random", "block"}, {"rows2d", "cols2d"}, {"cyclic", "random"}};
  for (const auto& [a, b] : pairs) {
    const Plan plan(gen::by_name(a, n, r, p), gen::by_name(b, n, r, p), MPI_COMM_WORLD);
    const ButterflyRouting routing(plan);
    const std::vector<butterfly::Flow> flows = all_flows(plan);
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << routing.kernel_stages()); ++mask)
      expect_same(rank_stages(routing.schedule(mask), 8), *butterfly_pattern(a + " -> " + b, p, flows, mask, 8), r,
                  a + " -> " + b + " mask " + std::to_string(mask));
  }
  // Uneven message counts per rank (the generator's pairs): mappings in and out move data.
  const auto pair = gen::messages_pair(5 * p + 3, 3 * p + 1, std::max(1, p - 1), r, p);
  const Plan plan(pair.src, pair.dst, MPI_COMM_WORLD);
  const ButterflyRouting routing(plan);
  const std::vector<butterfly::Flow> flows = all_flows(plan);
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << routing.kernel_stages()); ++mask)
    expect_same(rank_stages(routing.schedule(mask), 8), *butterfly_pattern("messages", p, flows, mask, 8), r,
                "messages_pair mask " + std::to_string(mask));
}

// The simulated adaptive search is the engine's: fed the simulated times of coupling_adaptive's
// trials, the engine's AdaptiveSearch over the real ButterflyRouting proposes the same
// candidates in the same order, and the chosen schedule is the one the simulator replayed.
TEST(SimSchedule, CouplingAdaptiveEqualsTheEngine) {
  const int r = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  if (p < 2) GTEST_SKIP() << "a coupling needs two components: run on 2 or more ranks";
  const Platform pl = Platform::fat_tree(2, 4);  // 16 hosts
  for (const CouplingSpec& spec : coupling_cases(p)) {
    for (double overhead : {0.0, 2e-6}) {  // with an overhead, fewer larger messages may win
      std::vector<double> masks_times;  // (mask, seconds) of each trial, then the choice
      if (r == 0) {
        SimOptions opt;
        opt.message_overhead_s = overhead;
        const CouplingChoice c = coupling_adaptive(pl, spec, opt);
        for (const CouplingTrial& t : c.trials) masks_times.insert(masks_times.end(), {double(t.skip_mask), t.simulated_s});
        masks_times.push_back(double(c.skip_mask));
      }
      int n = static_cast<int>(masks_times.size());
      MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
      masks_times.resize(static_cast<std::size_t>(n));
      MPI_Bcast(masks_times.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      const auto chosen = static_cast<std::uint64_t>(masks_times.back());

      const Plan plan = coupling_plan(spec);
      const ButterflyRouting routing(plan);
      AdaptiveSearch search(routing.kernel_stages(), 1, [&routing](std::uint64_t a, std::uint64_t b) {
        return routing.stage_hops(a) == routing.stage_hops(b);
      });
      std::size_t t = 0;
      for (; !search.done() && 2 * t + 1 < masks_times.size(); ++t) {
        ASSERT_EQ(search.candidate(), static_cast<std::uint64_t>(masks_times[2 * t])) << "trial " << t;
        search.record(masks_times[2 * t + 1]);
      }
      EXPECT_TRUE(search.done()) << "the simulator stopped early";
      EXPECT_EQ(2 * t + 1, masks_times.size()) << "the simulator replayed more candidates";
      EXPECT_EQ(butterfly::canonical_mask(routing.kernel_stages(), routing.moving_hops(), search.best()), chosen);
      expect_same(rank_stages(routing.schedule(chosen), 8), *coupling_butterfly(spec, chosen), r,
                  "adaptive choice " + std::to_string(chosen));
    }
  }
}

// Plans without the ranks: plan_flows, built in one process from every rank's decompositions,
// equals the real Plan flow for flow (the per-peer counts of every rank's sends and receives),
// and its P2P and butterfly patterns are every rank's engine schedules message for message.
TEST(SimSchedule, PlanFlowsEqualTheRealPlan) {
  const int r = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  const std::int64_t n = 307;
  struct Case {
    std::string src, dst;
    PlanOptions options;
  };
  PlanOptions dup;
  dup.duplicate = DuplicatePolicy::lowest_rank;
  PlanOptions fill;
  fill.missing = MissingPolicy::fill;
  const std::vector<Case> cases = {{"block", "cyclic", {}},   {"random", "block", {}}, {"rows2d", "cols2d", {}},
                                   {"cyclic", "random", {}},  {"halo", "block", dup},  {"block", "ghost", {}},
                                   {"sparse", "block", fill}};
  // Beyond gen::by_name: a source with overlapping halos (two ranks own an index), a destination
  // repeating indices (ghost cells), a source that leaves indices unowned.
  auto make = [n](const std::string& kind, int q, int ranks) {
    if (kind == "halo" || kind == "ghost") {
      const std::int64_t lo = n * q / ranks, hi = n * (q + 1) / ranks;
      std::vector<std::int64_t> idx;
      for (std::int64_t g = std::max<std::int64_t>(0, lo - 2); g < std::min(n, hi + 2); ++g) idx.push_back(g);
      if (kind == "ghost" && !idx.empty()) idx.push_back(idx.front());
      return Decomp::indices(n, std::move(idx));
    }
    if (kind == "sparse") {
      std::vector<std::int64_t> idx;
      for (std::int64_t g = q; g < n; g += ranks)
        if (g % 5 != 0) idx.push_back(g);
      return Decomp::indices(n, std::move(idx));
    }
    return gen::by_name(kind, n, q, ranks);
  };
  for (const Case& c : cases) {
    const std::string what = c.src + " -> " + c.dst;
    const Plan plan(make(c.src, r, p), make(c.dst, r, p), MPI_COMM_WORLD, c.options);
    const std::vector<butterfly::Flow> real = all_flows(plan);
    const std::vector<butterfly::Flow> serial = plan_flows(
        p, [&](int q) { return make(c.src, q, p); }, [&](int q) { return make(c.dst, q, p); }, c.options);
    ASSERT_EQ(serial.size(), real.size()) << what;
    for (std::size_t i = 0; i < real.size(); ++i) {
      EXPECT_EQ(serial[i].from, real[i].from) << what << " flow " << i;
      EXPECT_EQ(serial[i].to, real[i].to) << what << " flow " << i;
      EXPECT_EQ(serial[i].count, real[i].count) << what << " flow " << i;
    }
    // This rank's receives as well (all_flows gathers only the senders' side).
    std::int64_t from_plan = 0, from_serial = 0;
    for (const PeerSegments& ps : plan.recvs())
      if (ps.peer != r) from_plan += ps.count();
    for (const butterfly::Flow& f : serial)
      if (f.to == r) from_serial += f.count;
    EXPECT_EQ(from_serial, from_plan) << what;
    expect_same(rank_stages(make_schedule(plan, "p2p"), 8), *p2p_pattern(what, p, serial, 8), r, what + " p2p");
    const ButterflyRouting routing(plan);
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << routing.kernel_stages()); ++mask)
      expect_same(rank_stages(routing.schedule(mask), 8), *butterfly_pattern(what, p, serial, mask, 8), r,
                  what + " butterfly mask " + std::to_string(mask));
  }
  // The Plan's faults are plan_flows' faults.
  EXPECT_THROW(plan_flows(2, [&](int) { return gen::block(n, 0, 1); }, [&](int q) { return gen::block(n, q, 2); }),
               Error);
  EXPECT_THROW(plan_flows(2, [&](int q) { return make("sparse", q, 2); }, [&](int q) { return gen::block(n, q, 2); }),
               Error);
}
