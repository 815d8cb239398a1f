// When a waiting rank pauses (src/common/mpi_util.hpp, ranks_outnumber_cores): only when the
// node's ranks outnumber the cores they run on. A launcher that binds each rank to its own core
// (Open MPI does for 2 ranks or fewer) must not count as oversubscription: waits that pause
// there slowed derived-datatype messages 5x. The reference is independent of the code's
// launcher-mask rule: the union of every node-local rank's affinity mask, gathered over MPI.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>

#include <vector>

#include "common/mpi_util.hpp"
#include "mpi_test_util.hpp"

TEST(WaitPolicy, PausesOnlyWhenRanksOutnumberTheirCores) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_size(node, &local);
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  std::vector<cpu_set_t> all(static_cast<std::size_t>(local));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node);
  MPI_Comm_free(&node);
  cpu_set_t joint;
  CPU_ZERO(&joint);
  bool same_masks = true;
  for (cpu_set_t& s : all) {
    CPU_OR(&joint, &joint, &s);
    same_masks = same_masks && CPU_EQUAL(&s, &all[0]);
  }
  const int cores = CPU_COUNT(&joint);
  const bool outnumber = estuary::detail::ranks_outnumber_cores();
  // The ranks cover as many cores as there are ranks (bound one a core, or free on enough).
  if (cores >= local) {
    EXPECT_FALSE(outnumber) << local << " ranks on " << cores << " cores";
  }
  // Unbound (or bound alike) on fewer cores than ranks: the launcher's mask is theirs.
  if (same_masks && cores < local) {
    EXPECT_TRUE(outnumber) << local << " ranks on " << cores << " cores";
  }
  // Every run meets one of the two cases on this machine's test rank counts (1-4 on 2 cores
  // and more); a rank count where neither holds checks nothing, so say so.
  EXPECT_TRUE(cores >= local || same_masks) << "ranks bound unevenly: neither case applies";
}
