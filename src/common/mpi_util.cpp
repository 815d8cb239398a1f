#include "common/mpi_util.hpp"

#include <algorithm>
#include <climits>

#include "estuary/error.hpp"

namespace estuary::detail {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw MpiError(std::string(call) + " failed: " + std::string(text, len), world_rank_label());
}

std::string world_rank_label() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return "this process";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return "rank " + std::to_string(rank);
}

void agree(MPI_Comm comm, const std::function<void()>& body) {
  std::string message;
  std::exception_ptr failure;
  try {
    body();
  } catch (const std::exception& e) {
    message = e.what();
    failure = std::current_exception();
  } catch (...) {
    message = "unknown exception";
    failure = std::current_exception();
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = failure ? rank : INT_MAX, first = INT_MAX;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (first == INT_MAX) return;
  int len = static_cast<int>(message.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_INT, first, comm), "MPI_Bcast");
  std::string text = message;
  text.resize(static_cast<std::size_t>(len));
  check_mpi(MPI_Bcast(text.data(), len, MPI_CHAR, first, comm), "MPI_Bcast");
  if (rank == first) std::rethrow_exception(failure);  // the original, with its type
  // Other ranks re-throw the same text so that logs on every rank say what went wrong.
  if (text.rfind("estuary: ", 0) == 0) text = text.substr(9);
  throw Error(text, "reported by rank " + std::to_string(first));
}

std::vector<std::int64_t> alltoallv(MPI_Comm comm, const std::vector<std::int64_t>& send,
                                    const std::vector<std::int64_t>& send_counts,
                                    std::vector<std::int64_t>& recv_counts) {
  const int p = static_cast<int>(send_counts.size());
  std::vector<int> scount(p), sdispl(p), rcount(p), rdispl(p);
  std::int64_t at = 0;
  for (int i = 0; i < p; ++i) {
    if (send_counts[i] > INT_MAX || at > INT_MAX)
      throw Error("set-up messages of " + std::to_string(at + send_counts[i]) +
                      " values exceed MPI's int count", world_rank_label());
    scount[i] = static_cast<int>(send_counts[i]);
    sdispl[i] = static_cast<int>(at);
    at += send_counts[i];
  }
  check_mpi(MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, comm),
            "MPI_Alltoall");
  std::int64_t rtotal = 0;
  recv_counts.assign(p, 0);
  for (int i = 0; i < p; ++i) {
    rdispl[i] = static_cast<int>(rtotal);
    rtotal += rcount[i];
    recv_counts[i] = rcount[i];
  }
  if (rtotal > INT_MAX)
    throw Error("set-up messages of " + std::to_string(rtotal) + " values exceed MPI's int count",
                world_rank_label());
  std::vector<std::int64_t> rbuf(static_cast<std::size_t>(rtotal));
  check_mpi(MPI_Alltoallv(send.data(), scount.data(), sdispl.data(), MPI_INT64_T, rbuf.data(),
                          rcount.data(), rdispl.data(), MPI_INT64_T, comm),
            "MPI_Alltoallv");
  return rbuf;
}

std::vector<std::int64_t> alltoallv(MPI_Comm comm, const std::vector<std::vector<std::int64_t>>& send,
                                    std::vector<std::int64_t>& recv_counts) {
  std::vector<std::int64_t> flat, counts;
  std::size_t total = 0;
  for (const auto& v : send) total += v.size();
  flat.reserve(total);
  for (const auto& v : send) {
    flat.insert(flat.end(), v.begin(), v.end());
    counts.push_back(static_cast<std::int64_t>(v.size()));
  }
  return alltoallv(comm, flat, counts, recv_counts);
}

}  // namespace estuary::detail
