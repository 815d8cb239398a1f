// OASIS partitions as estuary decompositions (the decomposition part; couple.hpp re-exports it).
#pragma once

#include <cstdint>
#include <span>

#include "estuary/decomp.hpp"

namespace estuary {

// The OASIS partition forms, from OASIS's ig_paral arrays with 0-based offsets:
// serial {0, 0, gsize}, apple {1, offset, size}, box {2, offset, nx, ny, global_nx},
// orange {3, nseg, off1, len1, off2, len2, ...}, points {4, npts, idx1, idx2, ...}.
// Throws estuary::Error naming the form and the entry at fault.
Decomp oasis_partition(std::span<const std::int64_t> ig_paral, std::int64_t global_size);

}  // namespace estuary
