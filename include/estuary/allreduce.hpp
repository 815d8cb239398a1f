// Allreduce by the recursive-k algorithm (paper 004, Sect. 3.3), with a fixed, documented
// reduction order so that double sums are reproducible from run to run and equal on all ranks.
//
// With P ranks and radix k, let m = floor(log_k P) and K = k^m.
// - Stage 0 (only when P != K): each extra rank e in [K, P) sends its vector to core rank
//   c = (e - (P - K)) mod K (the paper's e - (P - K), taken modulo K so that k > 2 works for any
//   P); c combines its own vector with its extras' in ascending rank order.
// - Stages j = 1..m: the core ranks with the same i mod k^(j-1), in ascending order, form groups
//   of k consecutive members; every member sends its value to the k-1 others and all of them
//   combine the k values in ascending rank order.
// - Last stage (only when P != K): each core rank sends the result to its extras.
// "Combine in ascending rank order" is a left fold: ((v0 op v1) op v2) op ..., v0 the value of
// the lowest rank. The result is thus a fixed k-ary tree over the ranks that depends only on P
// and k, never on timing, and every rank ends with the same bits. For k >= P (m = 0) it is a
// reduce to rank 0 and a broadcast. MPI_Allreduce may sum in another order: its double sums can
// differ in the last bits, its integer sums and all min/max never do.
//
// Sums of int64 wrap around in two's complement (no undefined overflow). min and max of doubles
// keep the earlier operand unless the later one compares smaller (larger), so a NaN is kept only
// when it comes first in the order above.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <vector>

namespace estuary {

enum class Op { sum, min, max };

// Combines `in` of every rank of comm element-wise into `out` on every rank. Collective: every
// rank passes the same count, op and k (k >= 2). `out` may be `in` itself (in place); other
// overlaps are not allowed. The first call on a communicator duplicates it once (the copy is
// kept as an attribute and freed with the communicator), so messages never mix with the
// caller's.
void allreduce(std::span<const double> in, std::span<double> out, Op op, MPI_Comm comm, int k = 2);
void allreduce(std::span<const std::int64_t> in, std::span<std::int64_t> out, Op op, MPI_Comm comm,
               int k = 2);

// One stage of recursive-k as one rank sees it: plain data, for tests, logs and the simulator.
// Every rank has the same number of stages (some empty for it); the stage number is the tag.
struct AllreduceStage {
  std::vector<int> send_to;  // ranks that receive this rank's current value
  std::vector<int> combine;  // ranks whose values are combined, in order, this rank included
  int result_from = -1;      // last stage of an extra rank: where its result comes from
};

// The stages of recursive-k for `rank` of `ranks` with radix k: m stages, plus 2 when ranks is
// not a power of k.
std::vector<AllreduceStage> recursive_k_stages(int rank, int ranks, int k);

// The shape of recursive-k on `ranks` ranks with radix k: K = k^m core ranks, m core stages,
// and one stage before and after them when there are extra ranks.
struct RecursiveKShape {
  int core = 1, m = 0, extra = 0;
  int stages() const { return m + 2 * extra; }
};
RecursiveKShape recursive_k_shape(int ranks, int k);
// Stage `stage` of recursive_k_stages(rank, ranks, k) alone, in O(k): a core rank's extras are
// listed directly (ascending), not found by scanning the ranks. The executor and the simulator
// (one call per rank and stage at 10^5 ranks) both use it.
AllreduceStage recursive_k_stage(int rank, int ranks, int k, int stage);

}  // namespace estuary
