// bench/remap — sparse application (Remap::run) and CONSERV for the paper's T799 -> ORCA025
// case and back (paper 000, Tables 1 and 3), with synthetic 5-nearest-neighbour-shaped links:
// destination point j takes the source points around b = j·na/nb in the source numbering (b,
// b±1, b±w with w ≈ one source row), with positive weights adding up to 1 — the pattern and
// link count of distance weights, without the cost of finding true neighbours.
//
//   mpirun -n P build/bench/remap [--direction both|fwd|back] [--iterations 10] [--small]
// One JSON line per (direction, location, order, conserv): the slowest rank's time of run()
// and of Conserv::apply (GLOBAL), median and min over iterations, and conserv's ratio to
// lsum8's. --small uses reduced_gaussian(48) and tripolar(144, 102) instead.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <vector>

#include "bench_util.hpp"
#include "estuary/conserv.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/grid.hpp"
#include "estuary/remap.hpp"

namespace {

using i64 = std::int64_t;

estuary::Links synthetic_links(i64 na, i64 nb, int rank, int ranks) {
  estuary::Links l;
  const i64 lo = rank * nb / ranks, hi = (rank + 1) * nb / ranks;
  const i64 w = std::max<i64>(2, static_cast<i64>(std::llround(std::sqrt(static_cast<double>(na) / 2))));
  const i64 offs[5] = {0, -1, 1, -w, w};
  for (i64 j = lo; j < hi; ++j) {
    const i64 b = static_cast<i64>((static_cast<double>(j) + 0.5) * static_cast<double>(na) / static_cast<double>(nb));
    double wt[5], tot = 0;
    for (int k = 0; k < 5; ++k) {
      std::uint64_t h = static_cast<std::uint64_t>(j) * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(k) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
      wt[k] = 0.5 + static_cast<double>(h % 1000) / 1000.0;
      tot += wt[k];
    }
    for (int k = 0; k < 5; ++k) l.add(j, ((b + offs[k]) % na + na) % na, wt[k] / tot);
  }
  return l;
}

struct Times {
  std::vector<double> run, cons;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  bench::Args args(argc, argv);
  const std::string direction = args.str("direction", "both");
  const int iterations = static_cast<int>(std::max<std::int64_t>(1, args.num("iterations", 10)));
  const bool small = args.str("small", "0") == "1";
  try {
    const estuary::GridGen gt = (small ? estuary::GridGen::reduced_gaussian(48) : estuary::GridGen::t799()).with_land();
    const estuary::GridGen go = (small ? estuary::GridGen::tripolar(144, 102) : estuary::GridGen::orca025()).with_land();
    std::vector<std::pair<const estuary::GridGen*, const estuary::GridGen*>> dirs;
    if (direction != "back") dirs.emplace_back(&gt, &go);
    if (direction != "fwd") dirs.emplace_back(&go, &gt);
    for (const auto& [ga, gb] : dirs) {
      const i64 na = ga->size(), nb = gb->size();
      const estuary::Decomp sd = estuary::gen::block(na, rank, ranks), dd = estuary::gen::block(nb, rank, ranks);
      const estuary::Grid a = ga->make(sd), b = gb->make(dd);
      const estuary::Links links = synthetic_links(na, nb, rank, ranks);
      i64 nlinks = 0, mine = links.size();
      MPI_Allreduce(&mine, &nlinks, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      std::vector<double> x(static_cast<std::size_t>(sd.size())), y(static_cast<std::size_t>(dd.size()));
      for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = 273.15 + 30 * std::cos(a.lat[i] * 0.0174532925199433) + std::sin(a.lon[i] * 0.05);
      for (estuary::RemapLocation loc : {estuary::RemapLocation::src, estuary::RemapLocation::dst})
        for (estuary::RemapOrder order : {estuary::RemapOrder::bfb, estuary::RemapOrder::sum}) {
          estuary::RemapOptions opt;
          opt.location = loc;
          opt.order = order;
          MPI_Barrier(MPI_COMM_WORLD);
          double t0 = MPI_Wtime();
          estuary::Remap rm(links, sd, dd, MPI_COMM_WORLD, opt);
          const double setup = bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD);
          rm.run(x, y);  // warm-up
          double lsum8_med = 0, off_med = 0;
          const std::vector<std::optional<estuary::SumMethod>> settings{
              std::nullopt, estuary::SumMethod::lsum8, estuary::SumMethod::lsum16, estuary::SumMethod::ddpdd,
              estuary::SumMethod::reprosum, estuary::SumMethod::gather};
          for (const auto& m : settings) {
            std::optional<estuary::Conserv> cv;
            if (m) cv.emplace(estuary::ConservSide{&sd, a.area, a.mask}, estuary::ConservSide{&dd, b.area, b.mask},
                              MPI_COMM_WORLD, *m);
            const int its = m == estuary::SumMethod::gather ? std::max(3, iterations / 3) : iterations;
            Times t;
            for (int it = 0; it < its; ++it) {
              MPI_Barrier(MPI_COMM_WORLD);
              t0 = MPI_Wtime();
              rm.run(x, y);
              t.run.push_back(bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD));
              if (cv) {
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
                cv->apply(estuary::ConservMode::global, x, y);
                t.cons.push_back(bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD));
              } else {
                t.cons.push_back(0.0);
              }
            }
            const double run_med = bench::median(t.run), cons_med = bench::median(t.cons);
            if (!m) off_med = run_med;
            if (m == estuary::SumMethod::lsum8) lsum8_med = cons_med;
            bench::Json j;
            j.add("bench", "remap").add("src", ga->name()).add("dst", gb->name()).add("src_n", na).add("dst_n", nb)
                .add("links", nlinks).add("ranks", ranks)
                .add("location", loc == estuary::RemapLocation::src ? "src" : "dst")
                .add("order", order == estuary::RemapOrder::bfb ? "bfb" : "sum")
                .add("conserv", m ? estuary::name_of(*m) : "off").add("iterations", its)
                .add("setup_s", setup)
                .add("run_s_median", run_med).add("run_s_min", *std::min_element(t.run.begin(), t.run.end()))
                .add("conserv_s_median", cons_med).add("conserv_s_min", *std::min_element(t.cons.begin(), t.cons.end()))
                .add("total_s_median", run_med + cons_med)
                .add("total_ratio_to_off", (run_med + cons_med) / off_med);
            if (m && lsum8_med > 0) j.add("conserv_ratio_to_lsum8", cons_med / lsum8_med);
            if (rank == 0) std::cout << j.str() << std::endl;
          }
        }
    }
    MPI_Finalize();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}
