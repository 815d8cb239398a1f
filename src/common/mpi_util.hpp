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

// Waits for `req` at most `timeout` seconds (<= 0: forever); false when it did not complete
// (then a point-to-point request is cancelled and freed; a collective one, which MPI cannot
// cancel, is left as it is). Spins, pausing after a while only where ranks outnumber cores.
bool wait_bounded(MPI_Request& req, double timeout, MPI_Status* status = MPI_STATUS_IGNORE,
                  bool collective = false);

// True when this node runs more of the job's ranks than it has cores (the launcher's local rank
// count — Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's MPI_LOCALNRANKS — against the cores
// this process or its launcher may run on: a rank bound to one core of several is not
// oversubscribed): then a rank that spins while it waits takes the core from the rank it
// waits for. Local, read once; false when the launcher does not say.
bool ranks_outnumber_cores();

// The one bounded wait under every other (wait_bounded, the executor's stages): waits for all
// `n` requests at most `timeout` seconds (<= 0: forever, MPI_Waitall); false when they did not
// all complete (the requests are left as they are, for the caller to report). `yield`: after a
// short spin, pause between tests (ranks outnumber cores); without it, spin throughout,
// offering the core (sched_yield) between tests after the same short spin.
// The time-out itself comes from one setting, Settings::timeout_s (ESTUARY_TIMEOUT).
bool wait_all_bounded(int n, MPI_Request* reqs, double timeout, bool yield,
                      MPI_Status* statuses = MPI_STATUSES_IGNORE);

// As agree, but the agreement waits at most timeout_s seconds (<= 0: forever) for the other
// ranks: a rank whose partner died (or never comes) throws an Error naming `step` instead of
// waiting forever. For the steps where a partner's failure cannot be excluded (terminate).
void agree_within(MPI_Comm comm, double timeout_s, const std::string& step, const std::function<void()>& body);

// Checks that `value` — a setting that decides which collectives a rank enters next (an
// algorithm name, a configuration's contents, a writer count) — is the same on every rank of
// comm. Collective. On a mismatch every rank throws the same Error naming `setting`, rank 0's
// value and the first rank with another one (values longer than 200 characters are compared
// by hash and named by it), instead of the ranks entering different collectives and hanging.
void agree_same(MPI_Comm comm, const std::string& setting, const std::string& value);

// For an MPI_Allgatherv of `n` values from this rank: every rank's count, and in `displs` where
// its values start. Collective. Throws estuary::Error (`where`) when the total exceeds an int.
std::vector<int> allgather_counts(int n, MPI_Comm comm, std::vector<int>& displs, const char* where);

// Every rank's string, gathered on every rank (in rank order). Collective.
std::vector<std::string> allgather_strings(const std::string& mine, MPI_Comm comm);

// Alltoallv of int64 values: `send` holds the values for rank 0, then rank 1, ...
// (send_counts[i] of them for rank i). Returns what each rank sent here, concatenated in rank
// order, with `recv_counts` filled per source rank.
std::vector<std::int64_t> alltoallv(MPI_Comm comm, const std::vector<std::int64_t>& send,
                                    const std::vector<std::int64_t>& send_counts,
                                    std::vector<std::int64_t>& recv_counts);
// The same with one vector per destination rank.
std::vector<std::int64_t> alltoallv(MPI_Comm comm, const std::vector<std::vector<std::int64_t>>& send,
                                    std::vector<std::int64_t>& recv_counts);

// A block decomposition of n indices over p ranks, as the distributed set-ups (the D grids'
// rows, creep fill's targets) use it to give every global index one owner: rank r owns
// [block_start(n, r, p), block_start(n, r + 1, p)).
inline std::int64_t block_start(std::int64_t n, int r, int p) {
  return static_cast<std::int64_t>((static_cast<__int128>(n) * r) / p);
}
inline int block_owner(std::int64_t n, int p, std::int64_t g) {
  auto r = static_cast<int>((static_cast<__int128>(g) * p) / (n > 0 ? n : 1));
  while (r + 1 < p && block_start(n, r + 1, p) <= g) ++r;
  while (r > 0 && block_start(n, r, p) > g) --r;
  return r;
}

}  // namespace estuary::detail
