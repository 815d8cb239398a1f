// OASIS partitions as estuary decompositions (the decomposition part; couple.hpp re-exports it).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>

#include "estuary/decomp.hpp"

namespace estuary {

// The OASIS partition forms, from OASIS's ig_paral arrays with 0-based offsets:
// serial {0, 0, gsize}, apple {1, offset, size}, box {2, offset, nx, ny, global_nx},
// orange {3, nseg, off1, len1, off2, len2, ...}, points {4, npts, idx1, idx2, ...}.
// Throws estuary::Error naming the form and the entry at fault.
Decomp oasis_partition(std::span<const std::int64_t> ig_paral, std::int64_t global_size);

// The end of this rank's points in an ig_paral array: one past its largest global index (0 for
// an empty partition). Throws estuary::Error for an unknown partition kind or a short array.
std::int64_t oasis_partition_end(std::span<const std::int64_t> ig_paral);

// The global size OASIS infers for an oasis_def_partition without ig_size: the largest
// oasis_partition_end over the ranks of comm (MCT's gsize). Collective over comm (MPI_COMM_NULL:
// this rank's end); a bad array on any rank throws the same Error on every rank. Every binding
// (C API est_comp_partition_global_size and est_comp_def_partition with global_size < 0,
// Fortran estuary_def_partition without ig_size, Python's partitions without global_size)
// infers through this one function.
std::int64_t oasis_partition_global_size(std::span<const std::int64_t> ig_paral, MPI_Comm comm);

}  // namespace estuary
