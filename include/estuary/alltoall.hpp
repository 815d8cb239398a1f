// Stage placement of the all-to-all schedules of paper 004 (Table 2): which stage a message of
// burst, ring-k and Bruck goes in, and what Bruck forwards. Pure functions of the rank count: the
// schedules of src/xfer/alltoall.cpp place real messages with them, and the simulator's
// closed-form skeletons (sim::transposition) compute a rank's stage with them, so the two place
// messages alike by construction.
//
// - ring-k: step i (1 .. n-1) sends to (r + i) mod n and receives from (r - i) mod n; k steps form
//   a stage. burst is ring-k with k = n - 1 (one stage).
// - Bruck: ceil(log2 n) stages; at stage j rank r sends to (r + 2^j) mod n every chunk whose
//   destination offset d = (dest - origin) mod n has bit j set.
#pragma once

#include <utility>

namespace estuary::alltoall {

// (to - from) mod n: the ring step, or the Bruck destination offset.
inline int ring_distance(int from, int to, int n) { return ((to - from) % n + n) % n; }

// Stages of ring-k among n ranks: ceil((n - 1) / k), at least 1 (one rank alone still has a
// stage, holding its local copy).
inline int ring_stages(int n, int k) { return n - 1 <= 0 ? 1 : (n - 1 + k - 1) / k; }
// The stage of ring step i (1 .. n-1).
inline int ring_stage(int step, int k) { return (step - 1) / k; }
// The steps [first, last] of ring-k stage s among n ranks (first > last when it has none).
inline std::pair<int, int> ring_steps(int n, int k, int s) {
  const int first = s * k + 1, last = s * k + k < n - 1 ? s * k + k : n - 1;
  return {first, last};
}

// Stages of Bruck among n ranks: ceil(log2 n), at least 1.
inline int bruck_stages(int n) {
  int s = 0;
  while ((1L << s) < n) ++s;
  return s > 0 ? s : 1;
}
// Whether the chunk of destination offset d moves at Bruck stage j.
inline bool bruck_moves(int d, int j) { return (d >> j) & 1; }
// Whether that chunk, moved at stage j, has then reached its destination (no higher bit left).
inline bool bruck_arrives(int d, int j) { return d < (2 << j); }
// The origin of the chunk of offset d that `holder` holds at the start of stage j: it has
// already moved by the bits of d below j.
inline int bruck_origin(int holder, int d, int j, int n) { return ring_distance(d & ((1 << j) - 1), holder, n); }

}  // namespace estuary::alltoall
