// Recursive-k allreduce (paper 004, Sect. 3.3). The stage structure is computed as plain data
// (recursive_k_stages) and executed here with non-blocking point-to-point messages; the
// reduction order is the one documented in allreduce.hpp.
#include "estuary/allreduce.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "common/mpi_util.hpp"
#include "common/shared_comm.hpp"
#include "estuary/error.hpp"

namespace estuary {
namespace {

using detail::check_mpi;

// The library's shared copy of a user communicator (one per communicator, not per call: an
// MPI_Comm_dup is as costly as a small allreduce). Its stage messages complete within the call
// and use tags below detail::kFirstObjectTag, apart from the executors' in-flight ones.
MPI_Comm inner_comm(MPI_Comm comm) { return detail::shared_comm(comm)->comm; }

template <class T>
T add(T a, T b) {
  if constexpr (std::is_same_v<T, std::int64_t>)
    return static_cast<T>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  else
    return a + b;
}

// acc[i] = acc[i] op v[i]: acc is always the left operand, which fixes the order. The switch is
// outside the loops so that each loop vectorises.
template <class T>
void fold(Op op, T* acc, const T* v, std::size_t n) {
  switch (op) {
    case Op::sum:
      for (std::size_t i = 0; i < n; ++i) acc[i] = add(acc[i], v[i]);
      break;
    case Op::min:
      for (std::size_t i = 0; i < n; ++i) acc[i] = v[i] < acc[i] ? v[i] : acc[i];
      break;
    case Op::max:
      for (std::size_t i = 0; i < n; ++i) acc[i] = acc[i] < v[i] ? v[i] : acc[i];
      break;
  }
}

template <class T>
void recursive_k(std::span<const T> in, std::span<T> out, Op op, MPI_Comm comm, int k,
                 MPI_Datatype type) {
  const std::string here = detail::world_rank_label();
  if (in.size() != out.size())
    throw Error("allreduce input has " + std::to_string(in.size()) + " elements, output " +
                    std::to_string(out.size()),
                here, "pass buffers of the same length");
  if (k < 2)
    throw Error("allreduce radix k = " + std::to_string(k) + " is below 2", here,
                "use k >= 2 (2 is recursive doubling)");
  if (in.size() > static_cast<std::size_t>(INT_MAX))
    throw Error("allreduce of " + std::to_string(in.size()) + " elements exceeds MPI's int count",
                here, "reduce in parts");
  // Every rank has the same count, so all return here together (no half-made collective).
  if (in.empty()) return;
  const MPI_Comm c = inner_comm(comm);
  int rank = 0, size = 1;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  if (out.data() != in.data()) std::copy(in.begin(), in.end(), out.begin());

  const std::size_t n = in.size();
  const int count = static_cast<int>(n);
  const std::vector<AllreduceStage> stages = recursive_k_stages(rank, size, k);
  std::vector<T> slots;  // one vector per rank combined with, in combine order
  std::vector<MPI_Request> requests;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const AllreduceStage& st = stages[s];
    const int tag = static_cast<int>(s);
    slots.resize(std::max(slots.size(), st.combine.size() * n));
    requests.clear();
    std::vector<const T*> value(st.combine.size());
    for (std::size_t t = 0; t < st.combine.size(); ++t) {
      if (st.combine[t] == rank) {
        value[t] = out.data();
        continue;
      }
      T* slot = slots.data() + t * n;
      value[t] = slot;
      requests.emplace_back();
      check_mpi(MPI_Irecv(slot, count, type, st.combine[t], tag, c, &requests.back()), "MPI_Irecv");
    }
    if (st.result_from >= 0) {
      requests.emplace_back();
      check_mpi(MPI_Irecv(out.data(), count, type, st.result_from, tag, c, &requests.back()),
                "MPI_Irecv");
    }
    for (int peer : st.send_to) {
      requests.emplace_back();
      check_mpi(MPI_Isend(out.data(), count, type, peer, tag, c, &requests.back()), "MPI_Isend");
    }
    if (!requests.empty())
      check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
                "MPI_Waitall");
    if (st.combine.empty()) continue;
    // Left fold in combine (ascending rank) order, into out when this rank comes first,
    // else into the first received slot and then copied to out.
    T* acc = st.combine[0] == rank ? out.data() : slots.data();
    for (std::size_t t = 1; t < value.size(); ++t) fold(op, acc, value[t], n);
    if (acc != out.data()) std::copy(acc, acc + n, out.data());
  }
}

}  // namespace

RecursiveKShape recursive_k_shape(int ranks, int k) {
  RecursiveKShape sh;  // core = K = k^m, the largest power of k not above ranks
  while (sh.core <= ranks / k) {
    sh.core *= k;
    ++sh.m;
  }
  sh.extra = ranks != sh.core ? 1 : 0;
  return sh;
}

AllreduceStage recursive_k_stage(int rank, int ranks, int k, int stage) {
  const RecursiveKShape sh = recursive_k_shape(ranks, k);
  const int core = sh.core;
  AllreduceStage st;
  // The paper sends extra rank e to e - (ranks - K); modulo K it also works when there are
  // more extras than core ranks (k > 2), several extras then sharing one core rank.
  if (sh.extra && (stage == 0 || stage == sh.stages() - 1)) {
    if (rank >= core) {
      const int c = ((rank - (ranks - core)) % core + core) % core;
      if (stage == 0) st.send_to = {c};
      else st.result_from = c;
      return st;
    }
    // This core rank's extras: e >= K with e = rank + (ranks - K) (mod K), ascending (fewer
    // than k of them).
    std::vector<int> mine;
    for (long e = core + ((rank + (ranks - core)) % core + core) % core; e < ranks; e += core)
      mine.push_back(static_cast<int>(e));
    if (!mine.empty()) {
      if (stage == 0) {
        st.combine.push_back(rank);  // below every extra: first in the order
        st.combine.insert(st.combine.end(), mine.begin(), mine.end());
      } else {
        st.send_to = std::move(mine);
      }
    }
    return st;
  }
  if (rank >= core) return st;
  // Core stage j = 1..m: members base, base + k^(j-1), ..., base + (k-1) k^(j-1), ascending.
  const int j = stage - sh.extra + 1;
  long step = 1;
  for (int x = 1; x < j; ++x) step *= k;
  const long base = rank % step + rank / (step * k) * (step * k);
  for (int t = 0; t < k; ++t) {
    const int member = static_cast<int>(base + t * step);
    st.combine.push_back(member);
    if (member != rank) st.send_to.push_back(member);
  }
  return st;
}

std::vector<AllreduceStage> recursive_k_stages(int rank, int ranks, int k) {
  if (k < 2 || ranks < 1 || rank < 0 || rank >= ranks)
    throw Error("recursive-k needs k >= 2 and 0 <= rank < ranks (got k " + std::to_string(k) +
                    ", rank " + std::to_string(rank) + " of " + std::to_string(ranks) + ")",
                detail::world_rank_label());
  const int n = recursive_k_shape(ranks, k).stages();
  std::vector<AllreduceStage> stages;
  stages.reserve(static_cast<std::size_t>(n));
  for (int s = 0; s < n; ++s) stages.push_back(recursive_k_stage(rank, ranks, k, s));
  return stages;
}

void allreduce(std::span<const double> in, std::span<double> out, Op op, MPI_Comm comm, int k) {
  recursive_k(in, out, op, comm, k, MPI_DOUBLE);
}

void allreduce(std::span<const std::int64_t> in, std::span<std::int64_t> out, Op op, MPI_Comm comm,
               int k) {
  recursive_k(in, out, op, comm, k, MPI_INT64_T);
}

}  // namespace estuary
