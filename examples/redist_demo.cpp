// redist_demo — what `make demo` runs until the coupler exists: a 2-D field split by rows (as an
// atmosphere might hold it) is moved to a split by columns (as a transposition or another model
// would want it), three fields at once, then checked against the values it should have.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "estuary/estuary.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::int64_t nx = 1500, ny = 2000, n = nx * ny;
  int status = 0;
  try {
    // Rows [r*nx/p, (r+1)*nx/p) of an nx x ny grid → columns [r*ny/p, (r+1)*ny/p).
    auto split = [&](std::int64_t len, int r) { return len * r / ranks; };
    const auto rows = estuary::Decomp::box({nx, ny}, {split(nx, rank), 0},
                                           {split(nx, rank + 1) - split(nx, rank), ny});
    const auto cols = estuary::Decomp::box({nx, ny}, {0, split(ny, rank)},
                                           {nx, split(ny, rank + 1) - split(ny, rank)});
    double t0 = MPI_Wtime();
    estuary::Redist redist(rows, cols, MPI_COMM_WORLD);
    const double setup = MPI_Wtime() - t0;

    // Three fields: temperature (double), humidity (float), a land mask (int32).
    const auto src_idx = rows.to_indices();
    std::vector<double> t(src_idx.size()), t_out(cols.size());
    std::vector<float> q(src_idx.size()), q_out(cols.size());
    std::vector<std::int32_t> m(src_idx.size()), m_out(cols.size());
    for (std::size_t i = 0; i < src_idx.size(); ++i) {
      t[i] = 273.15 + 0.001 * static_cast<double>(src_idx[i]);
      q[i] = static_cast<float>(src_idx[i] % 1000) * 1e-5f;
      m[i] = static_cast<std::int32_t>(src_idx[i] % 7 == 0);
    }
    const int iterations = 20;
    redist.run({{t, t_out}, {q, q_out}, {m, m_out}});  // first run sets up the executor
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int it = 0; it < iterations; ++it) redist.run({{t, t_out}, {q, q_out}, {m, m_out}});
    double per_run = (MPI_Wtime() - t0) / iterations, slowest = 0;
    MPI_Reduce(&per_run, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    const auto dst_idx = cols.to_indices();
    long wrong = 0, wrong_all = 0;
    for (std::size_t i = 0; i < dst_idx.size(); ++i) {
      const std::int64_t g = dst_idx[i];
      wrong += t_out[i] != 273.15 + 0.001 * static_cast<double>(g);
      wrong += q_out[i] != static_cast<float>(g % 1000) * 1e-5f;
      wrong += m_out[i] != static_cast<std::int32_t>(g % 7 == 0);
    }
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    const estuary::PlanStats st = redist.plan().stats();
    if (rank == 0) {
      const double mb = static_cast<double>(n) * (8 + 4 + 4) / 1e6;
      std::printf("estuary redistribution demo on %d ranks\n", ranks);
      std::printf("  grid %lld x %lld, rows -> columns, 3 fields (double, float, int32)\n",
                  static_cast<long long>(nx), static_cast<long long>(ny));
      std::printf("  plan: %lld messages (max %lld per rank), %lld of %lld elements stay local\n",
                  static_cast<long long>(st.messages_total), static_cast<long long>(st.messages_max),
                  static_cast<long long>(st.self_elements_total), static_cast<long long>(n));
      std::printf("  set-up %.3f s; one exchange of %.1f MB: %.2f ms (%.2f GB/s)\n", setup, mb,
                  slowest * 1e3, mb / 1e3 / slowest);
      std::printf("  check against the expected values: %s (%ld wrong)\n",
                  wrong_all == 0 ? "all correct" : "WRONG", wrong_all);
      status = wrong_all == 0 ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
