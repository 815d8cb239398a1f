// The OASIS partition global-size inference of the core (estuary::oasis_partition_global_size),
// which the C API, Fortran and Python all call: checked against an independent reference — the
// points each rank's ig_paral array really holds (oasis_partition's to_indices on a grid large
// enough), gathered over the ranks, the largest index plus one — for every partition form, on
// any number of ranks; and a bad array on one rank is the same error on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "estuary/error.hpp"
#include "estuary/oasis_partition.hpp"

namespace {

using i64 = std::int64_t;
using V = std::vector<i64>;

// The reference: one past the largest point held by any rank (0 when none holds one).
i64 reference(const V& ig) {
  const V idx = estuary::oasis_partition(ig, i64{1} << 40).to_indices();
  i64 end = idx.empty() ? 0 : *std::max_element(idx.begin(), idx.end()) + 1;
  MPI_Allreduce(MPI_IN_PLACE, &end, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return end;
}

struct Ranks {
  int rank = 0, size = 1;
  Ranks() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

TEST(OasisPartition, GlobalSizeOfEveryFormEqualsTheHeldPoints) {
  const Ranks r;
  const i64 n = 37, nx = 7, ny = 5;  // a 1-D grid of n points, a 2-D one of nx x ny
  const i64 lo = r.rank * n / r.size, hi = (r.rank + 1) * n / r.size;
  const i64 ylo = r.rank * ny / r.size, yhi = (r.rank + 1) * ny / r.size;
  std::vector<V> forms = {
      {1, lo, hi - lo},                     // apple
      {2, ylo * nx, nx, yhi - ylo, nx},     // box: rows
      {2, ylo * nx + 1, nx - 2, yhi - ylo, nx},  // box: an inner box (the last row's end is not nx * ny)
      {3, 2, lo, (hi - lo) / 2, lo + (hi - lo) / 2, hi - lo - (hi - lo) / 2},  // orange: two segments
  };
  V pts = {4, hi - lo};  // points, in reverse order
  for (i64 k = hi - 1; k >= lo; --k) pts.push_back(k);
  forms.push_back(pts);
  V only_first = {1, 0, r.rank == 0 ? 3 : 0};  // an empty apple on the other ranks adds nothing
  forms.push_back(only_first);
  for (const V& ig : forms) {
    const i64 got = estuary::oasis_partition_global_size(ig, MPI_COMM_WORLD);
    EXPECT_EQ(got, reference(ig)) << "form " << ig[0] << " on " << r.size << " ranks";
    // MPI_COMM_NULL: this rank's own end, as without a coupling communicator.
    EXPECT_EQ(estuary::oasis_partition_global_size(ig, MPI_COMM_NULL), estuary::oasis_partition_end(ig));
    // The inferred size is one oasis_partition accepts for every rank.
    EXPECT_NO_THROW(estuary::oasis_partition(ig, got));
  }
  // serial: the whole grid on every rank, its size in ig_paral[2]
  EXPECT_EQ(estuary::oasis_partition_global_size(V{0, 0, n}, MPI_COMM_WORLD), n);
}

TEST(OasisPartition, ABadArrayOnOneRankIsTheSameErrorOnEvery) {
  const Ranks r;
  const int bad = r.size - 1;
  const V mine = r.rank == bad ? V{7, 0, 1} : V{1, r.rank, 1};
  try {
    estuary::oasis_partition_global_size(mine, MPI_COMM_WORLD);
    ADD_FAILURE() << "partition kind 7 accepted";
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown partition kind 7"), std::string::npos) << e.what();
  }
  const V short_box = r.rank == bad ? V{2, 0, 3} : V{1, r.rank, 1};
  try {
    estuary::oasis_partition_global_size(short_box, MPI_COMM_WORLD);
    ADD_FAILURE() << "a box of 3 entries accepted";
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the box form needs 5"), std::string::npos) << e.what();
  }
}

}  // namespace
