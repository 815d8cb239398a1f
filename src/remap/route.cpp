#include "remap/route.hpp"

#include <algorithm>
#include <numeric>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/redist.hpp"

namespace estuary::detail {

using i64 = std::int64_t;

namespace {

// The items in the order `ord` (a permutation of their positions).
KeyedItems permuted(const KeyedItems& in, const std::vector<std::size_t>& ord) {
  KeyedItems out;
  out.key.resize(ord.size());
  out.ints.assign(in.ints.size(), std::vector<i64>(ord.size()));
  out.reals.assign(in.reals.size(), std::vector<double>(ord.size()));
  for (std::size_t k = 0; k < ord.size(); ++k) {
    out.key[k] = in.key[ord[k]];
    for (std::size_t c = 0; c < in.ints.size(); ++c) out.ints[c][k] = in.ints[c][ord[k]];
    for (std::size_t c = 0; c < in.reals.size(); ++c) out.reals[c][k] = in.reals[c][ord[k]];
  }
  return out;
}

// Sorts the items by key, ties kept in place (so a key's items stay in their global order).
// Weight files are often sorted by destination already: then nothing moves.
void sort_by_key(KeyedItems& items) {
  if (std::is_sorted(items.key.begin(), items.key.end())) return;
  std::vector<std::size_t> ord(items.size());
  std::iota(ord.begin(), ord.end(), std::size_t{0});
  std::stable_sort(ord.begin(), ord.end(), [&](std::size_t a, std::size_t b) { return items.key[a] < items.key[b]; });
  items = permuted(items, ord);
}

// Moves every column of `from` (laid out as `src`) into `to` (laid out as `dst`, `count` items),
// all columns in one exchange.
void move_items(const Decomp& src, const Decomp& dst, const KeyedItems& from, KeyedItems& to, i64 count,
                MPI_Comm comm, const std::string& algorithm) {
  to.key.assign(static_cast<std::size_t>(count), 0);
  to.ints.assign(from.ints.size(), std::vector<i64>(static_cast<std::size_t>(count)));
  to.reals.assign(from.reals.size(), std::vector<double>(static_cast<std::size_t>(count)));
  RedistOptions opt;
  opt.algorithm = algorithm;
  Redist rd(src, dst, comm, opt);
  const i64 n = static_cast<i64>(from.size());
  std::vector<Field> fields{Field(Type::i64, from.key.data(), n, to.key.data(), count)};
  for (std::size_t c = 0; c < from.ints.size(); ++c)
    fields.emplace_back(Type::i64, from.ints[c].data(), n, to.ints[c].data(), count);
  for (std::size_t c = 0; c < from.reals.size(); ++c)
    fields.emplace_back(Type::f64, from.reals[c].data(), n, to.reals[c].data(), count);
  rd.run(fields);
}

}  // namespace

KeyedItems route_by_key(KeyedItems items, i64 n, const std::vector<i64>& wanted, MPI_Comm comm,
                        std::vector<i64>& offsets, const std::string& algorithm) {
  int rank = 0, p = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &p);
  auto block_lo = [&](i64 b) { return b * n / p; };
  // The directory rank of a key: the last b with block_lo(b) <= key.
  auto bucket = [&](i64 key) { return static_cast<int>(((key + 1) * p - 1) / n); };

  // 1. Items sorted by key locally, then to their directory ranks. Item space: rank q's
  //    sorted items are [P_q, P_q + m_q); directory b asks each q for the run it owns.
  sort_by_key(items);
  const KeyedItems& sorted = items;
  const i64 m = static_cast<i64>(sorted.size());
  i64 P = 0, M = 0;
  check_mpi(MPI_Exscan(&m, &P, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Exscan");
  if (rank == 0) P = 0;
  check_mpi(MPI_Allreduce(&m, &M, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
  std::vector<i64> runs(2 * static_cast<std::size_t>(p), 0), two(static_cast<std::size_t>(p), 2), got_counts;
  for (std::size_t k = 0; k < sorted.size();) {
    const int b = bucket(sorted.key[k]);
    std::size_t e = k;
    while (e < sorted.size() && bucket(sorted.key[e]) == b) ++e;
    runs[2 * static_cast<std::size_t>(b)] = P + static_cast<i64>(k);
    runs[2 * static_cast<std::size_t>(b) + 1] = static_cast<i64>(e - k);
    k = e;
  }
  const std::vector<i64> asked = alltoallv(comm, runs, two, got_counts);
  std::vector<Stripe> mine;
  i64 L = 0;
  for (std::size_t q = 0; q < asked.size(); q += 2)
    if (asked[q + 1] > 0) {
      mine.push_back({asked[q], asked[q + 1], 1});
      L += asked[q + 1];
    }
  KeyedItems dir;
  move_items(Decomp::stripes(M, {{P, m, 1}}), Decomp::stripes(M, mine), sorted, dir, L, comm, algorithm);
  items = KeyedItems();  // delivered: free them
  // Arrivals come by source rank, each sorted by key: a stable sort gives (key, global order).
  sort_by_key(dir);

  // 2. The directory's count and start (in the sorted item space) of each key in its block.
  i64 S = 0;
  check_mpi(MPI_Exscan(&L, &S, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Exscan");
  if (rank == 0) S = 0;
  const i64 klo = n > 0 ? block_lo(rank) : 0, khi = n > 0 ? block_lo(rank + 1) : 0;
  std::vector<i64> kstart(static_cast<std::size_t>(khi - klo), 0), kcount(kstart.size(), 0);
  for (std::size_t k = dir.size(); k-- > 0;) {
    const std::size_t at = static_cast<std::size_t>(dir.key[k] - klo);
    kstart[at] = S + static_cast<i64>(k);
    ++kcount[at];
  }
  std::vector<i64> wstart(wanted.size()), wcount(wanted.size());
  {
    Redist rd(Decomp::stripes(n, {{klo, khi - klo, 1}}), Decomp::indices(n, wanted), comm,
              RedistOptions{algorithm, {}});
    rd.run({Field(kstart, wstart), Field(kcount, wcount)});
  }

  // 3. Every wanted key's run of sorted items, to the ranks that want it.
  std::vector<Stripe> want_runs;
  offsets.assign(wanted.size() + 1, 0);
  for (std::size_t w = 0; w < wanted.size(); ++w) {
    if (wcount[w] > 0) {  // consecutive keys' runs touch: one stripe keeps the plan small
      if (!want_runs.empty() && want_runs.back().start + want_runs.back().count == wstart[w])
        want_runs.back().count += wcount[w];
      else
        want_runs.push_back({wstart[w], wcount[w], 1});
    }
    offsets[w + 1] = offsets[w] + wcount[w];
  }
  KeyedItems out;
  move_items(Decomp::stripes(M, {{S, L, 1}}), Decomp::stripes(M, want_runs), dir, out, offsets.back(), comm,
             algorithm);
  return out;
}

}  // namespace estuary::detail
