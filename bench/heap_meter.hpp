// Counts the bytes estuary's C++ code holds on the heap (every operator new/delete of the
// program), so set-up memory can be read apart from MPI's own buffers, which MPI allocates
// with malloc and which grow with the number of peers it has ever talked to.
#pragma once

#include <cstddef>

namespace bench::heap {
std::size_t current();   // bytes held now
std::size_t peak();      // highest since the last reset_peak()
void reset_peak();       // peak := current
}  // namespace bench::heap
