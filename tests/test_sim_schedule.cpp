// The simulator's closed-form skeletons are estuary's own schedules: on a real MPI run, every
// rank's Schedule (make_schedule over a real Plan) equals the closed-form pattern message for
// message, and the gathered real schedules replay on SimGrid to the same simulated time.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/decomp_gen.hpp"
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
  ASSERT_GE(p, 2) << "a coupling needs two components: run on 2 or more ranks";
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
    EXPECT_GT(a.simulated_s, 0) << algo;  // p >= 2: messages cross the network
  }
}
