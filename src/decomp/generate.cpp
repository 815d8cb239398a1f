#include <cmath>

#include "common/checked.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"

namespace estuary::gen {
namespace {

using i64 = std::int64_t;

// The arguments every generator takes: n >= 0 points, ranks >= 1, 0 <= rank < ranks.
void check_args(const char* gen, i64 n, int rank, int ranks) {
  const std::string where = std::string("gen::") + gen;
  if (ranks < 1) throw Error("ranks " + std::to_string(ranks) + " is not positive", where, "give the communicator size");
  if (rank < 0 || rank >= ranks)
    throw Error("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(ranks) + ")", where);
  if (n < 0) throw Error("global size " + std::to_string(n) + " is negative", where);
}

i64 lo(i64 n, int r, int p) { return static_cast<i64>((static_cast<__int128>(n) * r) / p); }

// A bijection of [0, n): a 4-round Feistel network on the smallest even-bit power of two
// covering n, with cycle-walking to stay inside [0, n).
struct Permutation {
  i64 n;
  std::uint64_t seed;
  int half_bits = 1;
  explicit Permutation(i64 n_, std::uint64_t s) : n(n_), seed(s) {
    while ((std::uint64_t{1} << (2 * half_bits)) < static_cast<std::uint64_t>(n)) ++half_bits;
  }
  static std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  std::uint64_t once(std::uint64_t x) const {
    const std::uint64_t mask = (std::uint64_t{1} << half_bits) - 1;
    std::uint64_t l = x >> half_bits, r = x & mask;
    for (std::uint64_t round = 0; round < 4; ++round) {
      const std::uint64_t f = mix(r ^ (seed + round * 0x632be59bd9b4e019ULL)) & mask;
      const std::uint64_t nl = r;
      r = l ^ f;
      l = nl;
    }
    return (l << half_bits) | r;
  }
  i64 operator()(i64 i) const {
    std::uint64_t x = static_cast<std::uint64_t>(i);
    do x = once(x); while (x >= static_cast<std::uint64_t>(n));
    return static_cast<i64>(x);
  }
};

}  // namespace

Decomp block(i64 n, int rank, int ranks) {
  check_args("block", n, rank, ranks);
  return Decomp::stripes(n, {{lo(n, rank, ranks), lo(n, rank + 1, ranks) - lo(n, rank, ranks), 1}});
}

Decomp cyclic(i64 n, int rank, int ranks) {
  check_args("cyclic", n, rank, ranks);
  const i64 count = n > rank ? (n - rank + ranks - 1) / ranks : 0;
  return Decomp::stripes(n, {{rank, count, ranks}});
}

Decomp random(i64 n, int rank, int ranks, std::uint64_t seed) {
  check_args("random", n, rank, ranks);
  const Permutation perm(n, seed);
  std::vector<i64> idx;
  const i64 a = lo(n, rank, ranks), b = lo(n, rank + 1, ranks);
  idx.reserve(static_cast<std::size_t>(b - a));
  for (i64 i = a; i < b; ++i) idx.push_back(perm(i));
  return Decomp::indices(n, std::move(idx));
}

void grid_shape(i64 n, i64& nx, i64& ny) {
  nx = std::max<i64>(1, static_cast<i64>(std::sqrt(static_cast<double>(n))));
  while (nx > 1 && n % nx != 0) --nx;
  ny = n > 0 ? n / nx : 0;
}

namespace {

// The shape of a 2-D kind: nx, ny >= 0 and nx * ny representable.
i64 check_grid(const char* gen, i64 nx, i64 ny, int rank, int ranks) {
  const std::string where = std::string("gen::") + gen;
  if (nx < 0 || ny < 0)
    throw Error("grid " + std::to_string(nx) + " x " + std::to_string(ny) + " has a negative size", where);
  const i64 n = detail::checked_mul(nx, ny, "the grid size", where.c_str());
  check_args(gen, n, rank, ranks);
  return n;
}

}  // namespace

Decomp rows2d(i64 nx, i64 ny, int rank, int ranks) {
  check_grid("rows2d", nx, ny, rank, ranks);
  const i64 a = lo(nx, rank, ranks), b = lo(nx, rank + 1, ranks);
  return Decomp::box({nx, ny}, {a, 0}, {b - a, ny});
}

Decomp cols2d(i64 nx, i64 ny, int rank, int ranks) {
  check_grid("cols2d", nx, ny, rank, ranks);
  const i64 a = lo(ny, rank, ranks), b = lo(ny, rank + 1, ranks);
  return Decomp::box({nx, ny}, {0, a}, {nx, b - a});
}

void block_grid(int ranks, int& prow, int& pcol) {
  prow = std::max(1, static_cast<int>(std::sqrt(static_cast<double>(std::max(ranks, 1)))));
  while (prow > 1 && ranks % prow != 0) --prow;
  pcol = std::max(ranks, 1) / prow;
}

Decomp colblocks(i64 nx, i64 ny, int rank, int ranks) {
  check_grid("colblocks", nx, ny, rank, ranks);
  int prow, pcol;
  block_grid(ranks, prow, pcol);
  // Down the block columns: ranks 0..prow-1 hold block column 0, top to bottom.
  const int br = rank % prow, bc = rank / prow;
  const i64 r0 = lo(nx, br, prow), r1 = lo(nx, br + 1, prow);
  const i64 c0 = lo(ny, bc, pcol), c1 = lo(ny, bc + 1, pcol);
  return Decomp::box({nx, ny}, {r0, c0}, {r1 - r0, c1 - c0});
}

Decomp rows2d(i64 n, int rank, int ranks) {
  check_args("rows2d", n, rank, ranks);
  i64 nx, ny;
  grid_shape(n, nx, ny);
  return rows2d(nx, ny, rank, ranks);
}

Decomp cols2d(i64 n, int rank, int ranks) {
  check_args("cols2d", n, rank, ranks);
  i64 nx, ny;
  grid_shape(n, nx, ny);
  return cols2d(nx, ny, rank, ranks);
}

Decomp colblocks(i64 n, int rank, int ranks) {
  check_args("colblocks", n, rank, ranks);
  i64 nx, ny;
  grid_shape(n, nx, ny);
  return colblocks(nx, ny, rank, ranks);
}

std::vector<std::string> kinds() { return {"block", "cyclic", "random", "rows2d", "transpose2d", "colblocks"}; }

Decomp from_name(std::string_view kind, i64 n, int rank, int ranks) {
  check_args("from_name", n, rank, ranks);  // before grid_shape, which needs n >= 0
  i64 nx, ny;
  grid_shape(n, nx, ny);
  return from_name(kind, nx, ny, rank, ranks);
}

Decomp from_name(std::string_view kind, i64 nx, i64 ny, int rank, int ranks) {
  const i64 n = check_grid("from_name", nx, ny, rank, ranks);
  if (kind == "block") return block(n, rank, ranks);
  if (kind == "cyclic") return cyclic(n, rank, ranks);
  if (kind == "random") return random(n, rank, ranks);
  if (kind == "rows2d") return rows2d(nx, ny, rank, ranks);
  if (kind == "transpose2d" || kind == "cols2d") return cols2d(nx, ny, rank, ranks);
  if (kind == "colblocks") return colblocks(nx, ny, rank, ranks);
  std::string known;
  for (const auto& k : kinds()) known += (known.empty() ? "" : ", ") + k;
  std::string what = "unknown decomposition kind '";
  what.append(kind).append("'");
  throw Error(what, "rank " + std::to_string(rank),
              "known kinds: " + known);
}

}  // namespace estuary::gen

// ---- paper 001, Algorithm 1 (see decomp_gen.hpp) ----
namespace estuary::gen {

DecompPair messages_pair(std::int64_t nx, std::int64_t ny, int messages, int rank, int ranks) {
  if (nx < 0 || ny < 0)
    throw Error("grid " + std::to_string(nx) + " x " + std::to_string(ny) + " has a negative size", "gen::messages_pair");
  const std::int64_t n = detail::checked_mul(nx, ny, "the grid size", "gen::messages_pair");
  check_args("messages_pair", n, rank, ranks);
  const int m = std::max(1, std::min(messages, std::max(ranks, 1)));
  const std::int64_t r0 = lo(nx, rank, ranks), r1 = lo(nx, rank + 1, ranks);
  Decomp src = Decomp::box({nx, ny}, {r0, 0}, {r1 - r0, ny});
  // Rank `rank` receives piece c of strip s = rank - m + c (mod ranks), c = 0..m-1: the pieces
  // with s + m - c == rank. Local order: piece by piece, each row by row.
  std::vector<Stripe> stripes;
  for (int c = 0; c < m; ++c) {
    const int s = ((rank - m + c) % ranks + ranks) % ranks;
    const std::int64_t c0 = lo(ny, c, m), c1 = lo(ny, c + 1, m);
    if (c1 == c0) continue;
    for (std::int64_t row = lo(nx, s, ranks); row < lo(nx, s + 1, ranks); ++row)
      stripes.push_back({row * ny + c0, c1 - c0, 1});
  }
  return {std::move(src), Decomp::stripes(n, std::move(stripes))};
}

DecompPair messages_pair(std::int64_t n, int messages, int rank, int ranks) {
  check_args("messages_pair", n, rank, ranks);
  std::int64_t nx, ny;
  grid_shape(n, nx, ny);
  return messages_pair(nx, ny, messages, rank, ranks);
}

}  // namespace estuary::gen
