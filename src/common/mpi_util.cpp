#include "common/mpi_util.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <ctime>

#include "estuary/error.hpp"

namespace estuary::detail {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw MpiError(std::string(call) + " failed: " + std::string(text, len), world_rank_label());
}

std::vector<int> allgather_counts(int n, MPI_Comm comm, std::vector<int>& displs, const char* where) {
  int p = 0;
  MPI_Comm_size(comm, &p);
  std::vector<int> counts(static_cast<std::size_t>(p));
  displs.assign(static_cast<std::size_t>(p), 0);
  check_mpi(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  std::int64_t total = 0;
  for (int r = 0; r < p; ++r) {
    displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += counts[static_cast<std::size_t>(r)];
    if (total > INT32_MAX) throw Error("more than 2^31 values to gather", where);
  }
  return counts;
}

std::vector<std::string> allgather_strings(const std::string& mine, MPI_Comm comm) {
  int p = 0;
  MPI_Comm_size(comm, &p);
  int n = static_cast<int>(mine.size());
  std::vector<int> displs;
  const std::vector<int> counts = allgather_counts(n, comm, displs, "allgather_strings");
  const int total = displs.back() + counts.back();
  std::string all(static_cast<std::size_t>(total), '\0');
  check_mpi(MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, comm),
            "MPI_Allgatherv");
  std::vector<std::string> out;
  for (int r = 0; r < p; ++r)
    out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(counts[static_cast<std::size_t>(r)])));
  return out;
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

bool ranks_outnumber_cores() {
  static const bool outnumber = [] {
    long local = 0;
    for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"})
      if (const char* v = std::getenv(var)) {
        local = std::atol(v);
        break;
      }
    // The cores the job may use on this node: not this process's own mask alone, since a
    // launcher that binds each rank to one core (Open MPI does for 2 ranks or fewer) would make
    // every rank count one core and pause in its waits, which slows Open MPI's pipelined
    // messages 5x (docs/performance.md, "2-D block transposes"). The launcher, our parent
    // (mpirun, orted, slurmstepd or a shell), keeps the mask it was given.
    long cores = 0;
    for (const pid_t pid : {pid_t{0}, getppid()}) {
      cpu_set_t set;
      CPU_ZERO(&set);
      if (sched_getaffinity(pid, sizeof set, &set) == 0) cores = std::max<long>(cores, CPU_COUNT(&set));
    }
    if (cores == 0) cores = sysconf(_SC_NPROCESSORS_ONLN);
    return local > 0 && cores > 0 && local > cores;
  }();
  return outnumber;
}

bool wait_all_bounded(int n, MPI_Request* reqs, double timeout, bool yield, MPI_Status* statuses) {
  if (n == 0) return true;
  if (timeout <= 0) {
    check_mpi(MPI_Waitall(n, reqs, statuses), "MPI_Waitall");
    return true;
  }
  const double deadline = MPI_Wtime() + timeout;
  for (long spin = 0;; ++spin) {
    int done = 0;
    check_mpi(MPI_Testall(n, reqs, &done, statuses), "MPI_Testall");
    if (done) return true;
    if (spin % 256 == 0 && MPI_Wtime() > deadline) return false;
    if (spin <= 2048) continue;
    // Ranks outnumber cores on a laptop or CI: spin briefly, then let the partner run.
    // Otherwise keep testing, but offer the core between tests: sched_yield returns at once
    // when nothing else wants it, and lets another job's rank run when something does (ctest
    // -j, a second mpirun). A pause there would cost Open MPI's pipelined messages, which move
    // one fragment per test, 5x (docs/performance.md, "2-D block transposes").
    if (yield) {
      const timespec pause{0, 50000};
      nanosleep(&pause, nullptr);
    } else {
      sched_yield();
    }
  }
}

bool wait_bounded(MPI_Request& req, double timeout, MPI_Status* status, bool collective) {
  if (wait_all_bounded(1, &req, timeout, ranks_outnumber_cores(), status)) return true;
  if (collective) return false;
  MPI_Cancel(&req);
  MPI_Request_free(&req);
  return false;
}

namespace {
// agree's body: the lowest failing rank (INT_MAX: none), found by `reduce`.
void agree_impl(MPI_Comm comm, const std::function<void()>& body, const std::function<int(int)>& reduce) {
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
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int first = reduce(failure ? rank : INT_MAX);
  if (first == INT_MAX) return;
  int len = static_cast<int>(message.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_INT, first, comm), "MPI_Bcast");
  std::string text = message;
  text.resize(static_cast<std::size_t>(len));
  check_mpi(MPI_Bcast(text.data(), len, MPI_CHAR, first, comm), "MPI_Bcast");
  if (rank == first) {
    // The original with its type when it is estuary's; any other exception (a library's
    // std::out_of_range, bad_alloc) becomes an estuary::Error too, so callers that catch
    // estuary::Error see every failure.
    try {
      std::rethrow_exception(failure);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(e.what(), world_rank_label());
    }
  }
  // Other ranks re-throw the same text so that logs on every rank say what went wrong.
  if (text.rfind("estuary: ", 0) == 0) text = text.substr(9);
  throw Error(text, "reported by rank " + std::to_string(first));
}
}  // namespace

void agree(MPI_Comm comm, const std::function<void()>& body) {
  agree_impl(comm, body, [&](int mine) {
    int first = INT_MAX;
    check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    return first;
  });
}

void agree_within(MPI_Comm comm, double timeout_s, const std::string& step, const std::function<void()>& body) {
  agree_impl(comm, body, [&](int mine) {
    // On the heap: a collective that timed out stays posted and may complete later, writing
    // into its buffers — which are then left to it (8 bytes, once, on a path that fails).
    int* buf = new int[2]{mine, INT_MAX};
    MPI_Request req;
    check_mpi(MPI_Iallreduce(&buf[0], &buf[1], 1, MPI_INT, MPI_MIN, comm, &req), "MPI_Iallreduce");
    if (!wait_bounded(req, timeout_s, MPI_STATUS_IGNORE, true)) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", timeout_s);
      throw Error(step + ": the other ranks did not all arrive within " + std::string(limit) + " s",
                  world_rank_label(),
                  "a partner failed or stopped before this point; see its log (the time-out is `timeout` in the "
                  "configuration or ESTUARY_TIMEOUT)");
    }
    const int first = buf[1];
    delete[] buf;
    return first;
  });
}

namespace {
// FNV-1a: a stable 64-bit digest, the same on every rank and every run.
std::uint64_t digest(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string shown(const std::string& v) {
  if (v.size() <= 200) return "'" + v + "'";
  char b[64];
  std::snprintf(b, sizeof b, "%zu bytes with digest %016llx", v.size(),
                static_cast<unsigned long long>(digest(v)));
  return b;
}
}  // namespace

void agree_same(MPI_Comm comm, const std::string& setting, const std::string& value) {
  // The digest and the size together: equal on every rank means the same value.
  std::uint64_t mine[2] = {digest(value), static_cast<std::uint64_t>(value.size())}, root[2] = {mine[0], mine[1]};
  check_mpi(MPI_Bcast(root, 2, MPI_UINT64_T, 0, comm), "MPI_Bcast");
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int differs = (mine[0] != root[0] || mine[1] != root[1]) ? rank : INT_MAX, first = INT_MAX;
  check_mpi(MPI_Allreduce(&differs, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (first == INT_MAX) return;
  // Rank 0's and the first differing rank's values, shown the same way on every rank.
  std::string text[2] = {rank == 0 ? shown(value) : std::string(), rank == first ? shown(value) : std::string()};
  for (int k = 0; k < 2; ++k) {
    const int from = k == 0 ? 0 : first;
    int len = static_cast<int>(text[k].size());
    check_mpi(MPI_Bcast(&len, 1, MPI_INT, from, comm), "MPI_Bcast");
    text[k].resize(static_cast<std::size_t>(len));
    check_mpi(MPI_Bcast(text[k].data(), len, MPI_CHAR, from, comm), "MPI_Bcast");
  }
  throw Error(setting + " differs between ranks: rank 0 has " + text[0] + ", rank " + std::to_string(first) +
                  " has " + text[1],
              "rank " + std::to_string(first),
              "every rank must be given the same " + setting);
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
