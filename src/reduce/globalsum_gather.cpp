// gather: the global sums OASIS calls bfb (now gather): every value goes to rank 0, which adds
// them in one fixed order and broadcasts the results. With global indices the order is the
// global one, so the result does not depend on how the values are distributed.
#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "reduce/globalsum_detail.hpp"

namespace estuary::detail {
namespace {

using i64 = std::int64_t;

// Positions (into the concatenation of all ranks' indices) in ascending index order. Ties
// cannot matter: a repeated index is reported and nothing is summed.
std::vector<i64> index_order(const std::vector<i64>& idx, i64* dup_a, i64* dup_b) {
  const i64 n = static_cast<i64>(idx.size());
  std::vector<i64> order;
  order.reserve(idx.size());
  if (n == 0) return order;
  const auto [lo, hi] = std::minmax_element(idx.begin(), idx.end());
  // Dense indices (the usual grid numbering): a counting placement, linear time.
  const std::uint64_t span = static_cast<std::uint64_t>(*hi) - static_cast<std::uint64_t>(*lo);
  if (span < 2 * static_cast<std::uint64_t>(n)) {
    std::vector<i64> slot(static_cast<std::size_t>(span + 1), -1);
    for (i64 q = 0; q < n; ++q) {
      i64& s = slot[static_cast<std::size_t>(idx[static_cast<std::size_t>(q)] - *lo)];
      if (s >= 0) {
        *dup_a = s;
        *dup_b = q;
        return {};
      }
      s = q;
    }
    for (i64 s : slot)
      if (s >= 0) order.push_back(s);
    return order;
  }
  order.resize(idx.size());
  std::iota(order.begin(), order.end(), i64{0});
  std::sort(order.begin(), order.end(), [&](i64 a, i64 b) {
    return idx[static_cast<std::size_t>(a)] < idx[static_cast<std::size_t>(b)];
  });
  for (std::size_t k = 1; k < order.size(); ++k)
    if (idx[static_cast<std::size_t>(order[k])] == idx[static_cast<std::size_t>(order[k - 1])]) {
      *dup_a = std::min(order[k - 1], order[k]);
      *dup_b = std::max(order[k - 1], order[k]);
      return {};
    }
  return order;
}

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) d[r] = d[r - 1] + counts[r - 1];
  return d;
}

}  // namespace

void gather_sums(SumFields fields, std::span<double> out, MPI_Comm comm,
                 std::span<const i64> global_index) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::size_t nf = fields.size();

  // Every rank learns every rank's counts: [mode, length of field 0, ...], so that argument
  // errors are seen by all ranks at once and nobody hangs in the gathers below. Modes: 0 = values
  // without an index, 1 = an index of matching length, 2 = an index whose length differs from a
  // field's, 3 = neither values nor index (an empty span cannot say whether an index was meant).
  std::vector<i64> mine(nf + 1), all(static_cast<std::size_t>(size) * (nf + 1));
  bool has_values = false;
  mine[0] = global_index.empty() ? 0 : 1;
  for (std::size_t f = 0; f < nf; ++f) {
    mine[f + 1] = static_cast<i64>(fields[f].size());
    has_values = has_values || !fields[f].empty();
    if (!global_index.empty() && fields[f].size() != global_index.size()) mine[0] = 2;
  }
  if (global_index.empty() && !has_values) mine[0] = 3;
  check_mpi(MPI_Allgather(mine.data(), static_cast<int>(nf + 1), MPI_INT64_T, all.data(),
                          static_cast<int>(nf + 1), MPI_INT64_T, comm),
            "MPI_Allgather");
  const auto row = [&](int r) { return &all[static_cast<std::size_t>(r) * (nf + 1)]; };
  i64 total = 0;
  int with_index = -1, without_index = -1;
  for (int r = 0; r < size; ++r) {
    const i64* c = row(r);
    if (c[0] == 2)
      throw Error("gather global sum: global_index has a different length than a field",
                  "rank " + std::to_string(r) + " of the communicator",
                  "pass one global index per local value");
    if (c[0] == 1 && with_index < 0) with_index = r;
    if (c[0] == 0 && without_index < 0) without_index = r;
    for (std::size_t f = 0; f < nf; ++f) total += c[f + 1];
  }
  if (with_index >= 0 && without_index >= 0)
    throw Error("gather global sum: global_index given on some ranks only",
                "rank " + std::to_string(without_index) + " has values without indices, rank " +
                    std::to_string(with_index) + " has indices",
                "pass global indices on every rank that has values, or on none");
  const bool indexed = with_index >= 0;
  if (total > INT_MAX)
    throw Error("gather global sum: " + std::to_string(total) + " values exceed what one " +
                    "MPI_Gatherv can collect on rank 0",
                "communicator of " + std::to_string(size) + " ranks",
                "use reprosum, which is also bit-reproducible and does not gather");

  // Indexed: point-major values (all fields of point 0, then point 1, ...) so that one sorted
  // order serves every field. Otherwise field-major, fields may differ in length.
  std::vector<double> send;
  send.reserve(static_cast<std::size_t>(std::accumulate(mine.begin() + 1, mine.end(), i64{0})));
  if (indexed) {
    for (std::size_t j = 0; j < global_index.size(); ++j)
      for (std::size_t f = 0; f < nf; ++f) send.push_back(fields[f][j]);
  } else {
    for (std::size_t f = 0; f < nf; ++f)
      send.insert(send.end(), fields[f].begin(), fields[f].end());
  }
  std::vector<int> counts(static_cast<std::size_t>(size)), points(counts.size());
  for (int r = 0; r < size; ++r) {
    i64 c = 0;
    for (std::size_t f = 0; f < nf; ++f) c += row(r)[f + 1];
    counts[static_cast<std::size_t>(r)] = static_cast<int>(c);
    points[static_cast<std::size_t>(r)] = static_cast<int>(row(r)[1]);
  }
  const std::vector<int> displs = displacements(counts), pdispls = displacements(points);
  std::vector<double> values(rank == 0 ? static_cast<std::size_t>(total) : 0);
  check_mpi(MPI_Gatherv(send.data(), static_cast<int>(send.size()), MPI_DOUBLE, values.data(),
                        counts.data(), displs.data(), MPI_DOUBLE, 0, comm),
            "MPI_Gatherv");
  std::vector<i64> idx;
  if (indexed) {
    idx.resize(rank == 0 ? static_cast<std::size_t>(pdispls.back() + points.back()) : 0);
    check_mpi(MPI_Gatherv(global_index.data(), static_cast<int>(global_index.size()), MPI_INT64_T,
                          idx.data(), points.data(), pdispls.data(), MPI_INT64_T, 0, comm),
              "MPI_Gatherv");
  }

  // Rank 0 adds, left to right. One broadcast carries its verdict and the sums: [repeated index,
  // its two ranks (-1: none), sums as bits], so that every rank throws the same error.
  std::vector<i64> message(3 + nf, -1);
  if (rank == 0) {
    std::vector<double> s(nf, 0.0);
    if (indexed) {
      i64 a = -1, b = -1;
      const std::vector<i64> order = index_order(idx, &a, &b);
      const auto owner = [&](i64 q) {
        return static_cast<i64>(std::upper_bound(pdispls.begin(), pdispls.end(), q) -
                                pdispls.begin() - 1);
      };
      if (a >= 0) {
        message[0] = idx[static_cast<std::size_t>(a)];
        message[1] = owner(a);
        message[2] = owner(b);
      }
      for (i64 q : order)
        for (std::size_t f = 0; f < nf; ++f) s[f] += values[static_cast<std::size_t>(q) * nf + f];
    } else {
      std::size_t at = 0;
      for (int r = 0; r < size; ++r)
        for (std::size_t f = 0; f < nf; ++f)
          for (i64 j = 0; j < row(r)[f + 1]; ++j) s[f] += values[at++];
    }
    std::memcpy(&message[3], s.data(), nf * sizeof(double));
  }
  check_mpi(MPI_Bcast(message.data(), static_cast<int>(message.size()), MPI_INT64_T, 0, comm),
            "MPI_Bcast");
  if (message[1] >= 0)
    throw Error("gather global sum: global index " + std::to_string(message[0]) +
                    " appears more than once",
                "ranks " + std::to_string(message[1]) + " and " + std::to_string(message[2]),
                "give each value a unique global index (owned points only, no halo copies)");
  std::memcpy(out.data(), &message[3], nf * sizeof(double));
}

}  // namespace estuary::detail
