// Small MPI helpers shared by the parts: checked calls, agreement on errors, rank labels.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace estuary::detail {

// Throws estuary::Error naming the MPI call when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call);

// "rank R" of MPI_COMM_WORLD when MPI is running, else "this process".
std::string world_rank_label();

// Runs `body` on every rank of comm; if it throws on any rank, every rank throws an
// estuary::Error carrying the message of the lowest failing rank. Keeps ranks from hanging in
// the next collective when one of them found a fault.
void agree(MPI_Comm comm, const std::function<void()>& body);

// Alltoallv of int64 values: `send` holds the values for rank 0, then rank 1, ...
// (send_counts[i] of them for rank i). Returns what each rank sent here, concatenated in rank
// order, with `recv_counts` filled per source rank.
std::vector<std::int64_t> alltoallv(MPI_Comm comm, const std::vector<std::int64_t>& send,
                                    const std::vector<std::int64_t>& send_counts,
                                    std::vector<std::int64_t>& recv_counts);
// The same with one vector per destination rank.
std::vector<std::int64_t> alltoallv(MPI_Comm comm, const std::vector<std::vector<std::int64_t>>& send,
                                    std::vector<std::int64_t>& recv_counts);

}  // namespace estuary::detail
