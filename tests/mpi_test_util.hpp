// Helpers shared by the MPI tests: rank agreement, decompositions, and the decomposition pairs
// that test_plan (against an all-to-all oracle) and test_redist (against a serial reference) run.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/plan.hpp"

namespace etest {

using i64 = std::int64_t;
using estuary::Decomp;
using estuary::Order;
using estuary::Stripe;

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

// True when `ok` holds on every rank. Collective: every rank must call it, so a test computes
// its local verdict first and never returns early before this.
inline bool all_ok(bool ok, MPI_Comm comm = MPI_COMM_WORLD) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm);
  return all != 0;
}

// [lo, hi) of part r when [0, n) is cut into p nearly equal blocks.
inline std::pair<i64, i64> block_range(i64 n, int p, int r) { return {r * n / p, (r + 1) * n / p}; }

// [lo, hi) of part r when [0, n) is cut into p blocks with sizes proportional to weights.
inline std::pair<i64, i64> weighted_range(i64 n, const std::vector<i64>& w, int r) {
  const i64 total = std::accumulate(w.begin(), w.end(), i64{0});
  const i64 before = std::accumulate(w.begin(), w.begin() + r, i64{0});
  return {before * n / total, (before + w[static_cast<std::size_t>(r)]) * n / total};
}

inline Decomp range_decomp(i64 n, std::pair<i64, i64> lh) {
  return Decomp::stripes(n, {{lh.first, lh.second - lh.first, 1}});
}
inline Decomp block(i64 n, int p, int r) { return range_decomp(n, block_range(n, p, r)); }

// Indices congruent to r modulo p, ascending.
inline Decomp cyclic(i64 n, int p, int r) {
  const i64 count = r < n ? (n - r + p - 1) / p : 0;
  return Decomp::stripes(n, {{r, count, p}});
}

// Indices congruent to r modulo p, descending (a negative stride).
inline Decomp reverse_cyclic(i64 n, int p, int r) {
  const i64 count = r < n ? (n - r + p - 1) / p : 0;
  const i64 last = r + (count - 1) * p;
  return Decomp::stripes(n, {{count > 0 ? last : 0, count, -p}});
}

// Blocks of `b` consecutive indices dealt round-robin to the ranks.
inline Decomp block_cyclic(i64 n, int p, int r, i64 b) {
  std::vector<Stripe> s;
  for (i64 start = r * b; start < n; start += b * p) s.push_back({start, std::min(b, n - start), 1});
  return Decomp::stripes(n, std::move(s));
}

// The even indices of the rank's block, then its odd ones (two stripes of stride 2).
inline Decomp evens_then_odds(i64 n, int p, int r) {
  const auto [lo, hi] = block_range(n, p, r);
  std::vector<Stripe> s;
  for (i64 parity = 0; parity < 2; ++parity) {
    i64 first = lo + ((lo % 2) != parity ? 1 : 0);
    if (first < hi) s.push_back({first, (hi - first + 1) / 2, 2});
  }
  return Decomp::stripes(n, std::move(s));
}

// The same permutation of [0, n) on every rank (fixed seed).
inline std::vector<i64> permutation(i64 n, std::uint64_t seed = 20240611) {
  std::vector<i64> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), i64{0});
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// Rank r's block of a permutation: an explicit index list in shuffled order.
inline Decomp permuted_block(i64 n, int p, int r, std::uint64_t seed = 20240611) {
  const std::vector<i64> perm = permutation(n, seed);
  const auto [lo, hi] = block_range(n, p, r);
  return Decomp::indices(n, std::vector<i64>(perm.begin() + lo, perm.begin() + hi));
}

// The rank's block with a periodic halo of width w on each side (ghost cells): indices repeat
// when the block plus its halo is longer than n.
inline Decomp halo_block(i64 n, int p, int r, i64 w) {
  const auto [lo, hi] = block_range(n, p, r);
  std::vector<i64> idx;
  if (n > 0)
    for (i64 g = lo - w; g < hi + w; ++g) idx.push_back(((g % n) + n) % n);
  return Decomp::indices(n, std::move(idx));
}

// The rank's block widened by w on each side, clipped to [0, n): neighbouring sources overlap.
inline std::pair<i64, i64> widened_range(i64 n, int p, int r, i64 w) {
  const auto [lo, hi] = block_range(n, p, r);
  if (lo == hi) return {lo, hi};
  return {std::max<i64>(0, lo - w), std::min(n, hi + w)};
}

// A decomposition pair and what the serial reference needs to know about it.
struct Case {
  std::string name;
  Decomp src, dst;
  estuary::PlanOptions options{};
  // Which global indices some source owns (empty: all of them).
  std::function<bool(i64)> covered{};
};

// Pairs on a 1-D index space of size n, for this rank of p.
inline std::vector<Case> index_cases(i64 n, int p, int r) {
  const std::string at = " n=" + std::to_string(n);
  const int last = p - 1;
  std::vector<Case> c;
  c.push_back({"block->block" + at, block(n, p, r), block(n, p, r)});
  c.push_back({"block->cyclic" + at, block(n, p, r), cyclic(n, p, r)});
  c.push_back({"cyclic->block" + at, cyclic(n, p, r), block(n, p, r)});
  c.push_back({"permutation->block" + at, permuted_block(n, p, r), block(n, p, r)});
  c.push_back({"block->permutation" + at, block(n, p, r), permuted_block(n, p, r, 7)});
  c.push_back({"block->reverse cyclic" + at, block(n, p, r), reverse_cyclic(n, p, r)});
  c.push_back({"reverse cyclic->permutation" + at, reverse_cyclic(n, p, r), permuted_block(n, p, r, 99)});
  {
    std::vector<i64> up(static_cast<std::size_t>(p)), down(static_cast<std::size_t>(p));
    for (int k = 0; k < p; ++k) {
      up[static_cast<std::size_t>(k)] = k + 1;
      down[static_cast<std::size_t>(k)] = 2 * (p - k) + 1;
    }
    c.push_back({"uneven blocks->other uneven blocks" + at, range_decomp(n, weighted_range(n, up, r)),
                 range_decomp(n, weighted_range(n, down, r))});
  }
  c.push_back({"all on rank 0->block" + at,
               r == 0 ? Decomp::stripes(n, {{0, n, 1}}) : Decomp::empty(n), block(n, p, r)});
  c.push_back({"block->all on last rank, reversed" + at, block(n, p, r),
               r == last && n > 0 ? Decomp::stripes(n, {{n - 1, n, -1}}) : Decomp::empty(n)});
  c.push_back({"all on last rank->all on rank 0" + at,
               r == last ? Decomp::indices(n, permutation(n, 3)) : Decomp::empty(n),
               r == 0 ? Decomp::stripes(n, {{0, n, 1}}) : Decomp::empty(n)});
  c.push_back({"block cyclic 3->evens then odds" + at, block_cyclic(n, p, r, 3), evens_then_odds(n, p, r)});
  c.push_back({"block->halo 2" + at, block(n, p, r), halo_block(n, p, r, 2)});
  c.push_back({"permutation->halo 2" + at, permuted_block(n, p, r, 5), halo_block(n, p, r, 2)});
  {
    Case k{"overlapping windows (lowest rank)->block" + at, range_decomp(n, widened_range(n, p, r, 2)),
           block(n, p, r)};
    k.options.duplicate = estuary::DuplicatePolicy::lowest_rank;
    c.push_back(std::move(k));
  }
  {
    // Sources hold only the even indices of their block; odd destination entries are filled.
    const auto [lo, hi] = block_range(n, p, r);
    const i64 first = lo + (lo % 2);
    Case k{"evens only->halo 1 (fill)" + at,
           Decomp::stripes(n, {{first, first < hi ? (hi - first + 1) / 2 : 0, 2}}),
           halo_block(n, p, r, 1)};
    k.options.missing = estuary::MissingPolicy::fill;
    k.options.fill_value = -7.0;
    k.covered = [](i64 g) { return g % 2 == 0; };
    c.push_back(std::move(k));
  }
  return c;
}

// Factors p = a * b with a the largest factor not above sqrt(p).
inline std::pair<int, int> grid_2d(int p) {
  int a = 1;
  for (int k = 1; k * k <= p; ++k)
    if (p % k == 0) a = k;
  return {a, p / a};
}

// Box pairs: 2-D transpositions (rows split -> columns split) and 3-D slabs -> pencils, in both
// orders, including shapes smaller than the rank count and an empty shape.
inline std::vector<Case> box_cases(int p, int r) {
  std::vector<Case> c;
  for (Order order : {Order::row_major, Order::column_major}) {
    const std::string on = order == Order::row_major ? " row_major" : " column_major";
    for (auto [R, C] : std::vector<std::pair<i64, i64>>{{7, 5}, {16, 9}, {2, 3}, {0, 4}}) {
      const auto [r0, r1] = block_range(R, p, r);
      const auto [c0, c1] = block_range(C, p, r);
      c.push_back({"2-D " + std::to_string(R) + "x" + std::to_string(C) + " rows->columns" + on,
                   Decomp::box({R, C}, {r0, 0}, {r1 - r0, C}, order),
                   Decomp::box({R, C}, {0, c0}, {R, c1 - c0}, order)});
      // The transposition the other way, with the destination a reversed index list.
      const Decomp cols = Decomp::box({R, C}, {0, c0}, {R, c1 - c0}, order);
      std::vector<i64> rows_rev = Decomp::box({R, C}, {r0, 0}, {r1 - r0, C}, order).to_indices();
      std::reverse(rows_rev.begin(), rows_rev.end());
      c.push_back({"2-D " + std::to_string(R) + "x" + std::to_string(C) + " columns->reversed rows" + on,
                   cols, Decomp::indices(R * C, std::move(rows_rev))});
    }
    const auto [px, py] = grid_2d(p);
    for (const std::vector<i64>& shape : {std::vector<i64>{4, 5, 6}, std::vector<i64>{9, 2, 7}}) {
      const std::string sh = std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + "x" +
                             std::to_string(shape[2]);
      // Slabs along dimension 0 -> pencils over a px x py grid of dimensions 1 and 2.
      const auto [a0, a1] = block_range(shape[0], p, r);
      const auto [b0, b1] = block_range(shape[1], px, r % px);
      const auto [d0, d1] = block_range(shape[2], py, r / px);
      c.push_back({"3-D " + sh + " slabs->pencils" + on,
                   Decomp::box(shape, {a0, 0, 0}, {a1 - a0, shape[1], shape[2]}, order),
                   Decomp::box(shape, {0, b0, d0}, {shape[0], b1 - b0, d1 - d0}, order)});
      // Slabs along dimension 2 -> slabs along dimension 0.
      const auto [e0, e1] = block_range(shape[2], p, r);
      c.push_back({"3-D " + sh + " z-slabs->x-slabs" + on,
                   Decomp::box(shape, {0, 0, e0}, {shape[0], shape[1], e1 - e0}, order),
                   Decomp::box(shape, {a0, 0, 0}, {a1 - a0, shape[1], shape[2]}, order)});
    }
  }
  return c;
}

// Every pair the suites run, on this rank.
inline std::vector<Case> all_cases(int p, int r) {
  std::vector<Case> c;
  for (i64 n : {0, 1, 3, 7, 64, 301}) {
    std::vector<Case> k = index_cases(n, p, r);
    std::move(k.begin(), k.end(), std::back_inserter(c));
  }
  std::vector<Case> b = box_cases(p, r);
  std::move(b.begin(), b.end(), std::back_inserter(c));
  return c;
}

// Source value of global index g in field `salt` (distinct per field, type and run), exact in
// every type for the sizes the tests use.
template <class T>
T value(i64 g, int salt) {
  if constexpr (std::is_same_v<T, double>) return static_cast<double>(g) * 3.0 + 7.0 + 0.5 * salt;
  else if constexpr (std::is_same_v<T, float>) return static_cast<float>(g) * 2.0f + 0.25f + static_cast<float>(salt);
  else if constexpr (std::is_same_v<T, std::int32_t>) return static_cast<std::int32_t>(g * 5 + 11 + 100003 * salt);
  else return g * 4294967311LL + 13 + 1000003LL * salt - (i64{1} << 62);
}

// Bit-identical comparison (a double's -0.0 differs from 0.0, NaNs compare by bits).
template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace etest
