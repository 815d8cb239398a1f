// bench/allreduce — recursive-k allreduce (k = 2..8) against MPI_Allreduce, sum of doubles.
//
//   mpirun -n P build/bench/allreduce --counts 1,3,64,1024,65536 --iterations 200
// One JSON object per (algorithm, k, count). Times are per call, the slowest rank's, after a
// barrier; min and median over the iterations. "max_rel_diff" is the largest relative
// difference from MPI_Allreduce's result (the orders of summation differ, see allreduce.hpp).
#include <mpi.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <sstream>

#include "bench_util.hpp"
#include "estuary/allreduce.hpp"

namespace {

// Per-iteration times of `call`, each the slowest rank's (one reduction at the end, so the
// timing loop itself holds no extra collective but the barrier).
std::vector<double> time_calls(int iterations, const std::function<void()>& call) {
  for (int w = 0; w < 3; ++w) call();  // warm-up: connections, the allreduce's private comm
  std::vector<double> mine;
  for (int it = 0; it < iterations; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    call();
    mine.push_back(MPI_Wtime() - t0);
  }
  std::vector<double> slowest(mine.size());
  MPI_Allreduce(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<std::int64_t> counts{1, 3, 64, 1024, 65536};
  int iterations = 200, kmin = 2, kmax = 8;
  bench::Cli cli("bench/allreduce: recursive-k allreduce (k = kmin..kmax) against MPI_Allreduce, one JSON line each");
  cli.list("counts", counts, "doubles per call, comma-separated");
  cli.opt("iterations", iterations, "calls timed per (algorithm, k, count)")->check(CLI::PositiveNumber);
  cli.opt("kmin", kmin, "smallest radix k")->check(CLI::Range(2, 64));
  cli.opt("kmax", kmax, "largest radix k")->check(CLI::Range(2, 64));
  cli.parse(argc, argv);

  long errors = 0;
  try {
    for (std::int64_t count : counts) {
      const std::size_t n = static_cast<std::size_t>(count);
      // Positive values of several magnitudes: sums in different orders stay close.
      std::vector<double> in(n), out(n), mpi(n);
      for (std::size_t i = 0; i < n; ++i)
        in[i] = std::ldexp(1.0 + static_cast<double>((i * 7 + static_cast<std::size_t>(rank) * 13) % 101) / 101.0,
                           static_cast<int>((i + static_cast<std::size_t>(rank)) % 9) - 4);
      const int c = static_cast<int>(count);
      const std::vector<double> t_mpi = time_calls(iterations, [&] {
        MPI_Allreduce(in.data(), mpi.data(), c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      });
      auto report = [&](const std::string& algorithm, int k, const std::vector<double>& t,
                        double max_rel, int stages) {
        if (rank != 0) return;
        std::cout << bench::Json()
                         .add("bench", "allreduce").add("algorithm", algorithm).add("k", k)
                         .add("ranks", ranks).add("count", count)
                         .add("bytes", count * static_cast<std::int64_t>(sizeof(double)))
                         .add("op", "sum").add("type", "double").add("stages", stages)
                         .add("iterations", iterations)
                         .add("time_s_min", *std::min_element(t.begin(), t.end()))
                         .add("time_s_median", bench::median(t))
                         .add("max_rel_diff", max_rel)
                         .str()
                  << std::endl;
      };
      report("mpi", 0, t_mpi, 0.0, 0);
      for (int k = kmin; k <= kmax; ++k) {
        const std::vector<double> t = time_calls(iterations, [&] {
          estuary::allreduce(in, out, estuary::Op::sum, MPI_COMM_WORLD, k);
        });
        double rel = 0;
        for (std::size_t i = 0; i < n; ++i) rel = std::max(rel, std::abs(out[i] - mpi[i]) / std::abs(mpi[i]));
        double rel_all = 0;
        MPI_Allreduce(&rel, &rel_all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (!(rel_all <= 1e-14)) ++errors;
        report("recursive-k", k, t, rel_all,
               static_cast<int>(estuary::recursive_k_stages(rank, ranks, k).size()));
      }
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return errors == 0 ? 0 : 1;
}
