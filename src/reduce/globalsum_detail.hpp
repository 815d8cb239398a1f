// The global-sum methods that need more than a local loop and one reduction (globalsum.cpp holds
// the names, the dispatch, lsum8, lsum16 and ddpdd).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <span>

namespace estuary::detail {

using SumFields = std::span<const std::span<const double>>;

// A pair of doubles in one SSE2 register (a GCC/Clang vector extension, so the compiler need not
// discover the parallelism). The local loops keep eight independent lanes in four pairs: no long
// chain of dependent additions, two values an instruction. Lane order is fixed, so a rerun on the
// same data gives the same bits.
using Pair = double __attribute__((vector_size(16)));
using PairBits = std::int64_t __attribute__((vector_size(16)));
constexpr std::size_t kPairs = 4;
constexpr std::size_t kLanes = 2 * kPairs;

inline Pair load_pair(const double* x) {
  Pair v;
  std::memcpy(&v, x, sizeof v);  // no alignment assumed
  return v;
}

// Gathers every value on rank 0, adds them in global-index order (rank-then-position order when
// global_index is empty) and broadcasts out. Argument errors are agreed by every rank.
void gather_sums(SumFields fields, std::span<double> out, MPI_Comm comm,
                 std::span<const std::int64_t> global_index);

// Exact fixed-point sums (two reductions), rounded to nearest.
void reprosum_sums(SumFields fields, std::span<double> out, MPI_Comm comm);

}  // namespace estuary::detail
