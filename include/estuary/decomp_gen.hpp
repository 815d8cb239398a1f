// Decomposition generators for examples, tests and benchmarks: every rank computes its own share
// from (n, rank, ranks) without any global list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/decomp.hpp"

namespace estuary::gen {

// Contiguous blocks: rank r owns [r*n/p, (r+1)*n/p).
Decomp block(std::int64_t n, int rank, int ranks);
// Round-robin: rank r owns r, r+p, r+2p, ...
Decomp cyclic(std::int64_t n, int rank, int ranks);
// A pseudo-random permutation of [0, n) (the same for every rank with the same seed) cut into
// blocks. The permutation is a keyed bijection evaluated per element, so no rank stores it.
Decomp random(std::int64_t n, int rank, int ranks, std::uint64_t seed = 42);
// The grid shape used by the 2-D kinds: nx * ny == n with nx the largest divisor <= sqrt(n).
void grid_shape(std::int64_t n, std::int64_t& nx, std::int64_t& ny);
// An nx x ny row-major grid split into row blocks (this equals block()), or into column blocks
// (the transposed distribution; each rank's columns row by row). The n forms use grid_shape(n).
Decomp rows2d(std::int64_t n, int rank, int ranks);
Decomp cols2d(std::int64_t n, int rank, int ranks);
Decomp rows2d(std::int64_t nx, std::int64_t ny, int rank, int ranks);
Decomp cols2d(std::int64_t nx, std::int64_t ny, int rank, int ranks);
// 2-D blocks: the ranks form a prow x pcol grid (block_grid: prow the largest divisor of ranks
// <= sqrt(ranks), so pcol >= prow), numbered down the block columns (rank r holds block row
// r % prow of block column r / prow); rows and columns are cut as evenly as block() cuts, and
// each block lists its indices row by row. With prow == 1 (2 or 3 ranks) this is cols2d. The
// destination of YAXT's rows -> column-blocks measurement (issue 24).
void block_grid(int ranks, int& prow, int& pcol);
Decomp colblocks(std::int64_t n, int rank, int ranks);
Decomp colblocks(std::int64_t nx, std::int64_t ny, int rank, int ranks);
// Paper 001, Algorithm 1: a source and a destination decomposition of an nx x ny row-major
// grid such that every source rank sends `messages` P2P messages (1 <= messages <= ranks;
// clamped). Sources own row strips; each strip is cut into `messages` column pieces and piece c
// of strip s goes to rank (s + messages - c) mod ranks, so every destination rank also gets
// `messages` pieces of equal size (balanced), from the strips of the ranks just before it, and
// no piece stays on its own rank unless messages == ranks. Needs nx >= ranks and
// ny >= messages for every piece to be non-empty. (The paper gives the algorithm's contract,
// a requested average number of messages per sender; this construction meets it exactly.)
struct DecompPair {
  Decomp src, dst;
};
DecompPair messages_pair(std::int64_t nx, std::int64_t ny, int messages, int rank, int ranks);
// The same on the grid_shape(n) grid.
DecompPair messages_pair(std::int64_t n, int messages, int rank, int ranks);
// By name (estuary/names.hpp): block, cyclic, random, rows2d, transpose2d (= cols2d),
// colblocks. Unknown names throw estuary::Error listing the known ones. The first form puts the
// 2-D kinds on the grid_shape(n) grid, the second on nx x ny (the 1-D kinds on n = nx * ny).
Decomp from_name(std::string_view kind, std::int64_t n, int rank, int ranks);
Decomp from_name(std::string_view kind, std::int64_t nx, std::int64_t ny, int rank, int ranks);
// The older spelling of from_name.
inline Decomp by_name(const std::string& kind, std::int64_t n, int rank, int ranks) {
  return from_name(kind, n, rank, ranks);
}
std::vector<std::string> kinds();

}  // namespace estuary::gen
