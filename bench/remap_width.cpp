// bench/remap_width — Remap::run of one SCRIP weight file with the row-shape paths (rows of one
// common link count found by number: nnn, bilinear, bicubic, GAUSWGT without masked targets;
// rows of varying count summed two links a step: conservative) against the general path that
// reads the row pointers one link a step (ESTUARY_ROW_WIDTH=0), in the same run.
//
//   mpirun -n P build/bench/remap_width --weights FILE [--iterations 200]
//
// Two Remaps of the file per (location, order), one with each path, run in turn on the same
// field (a block decomposition of both grids); one JSON line per case: the slowest rank's median
// and minimum, their ratio, the common width (0: the rows differ), on how many ranks the rows
// are summed two links a step (two_step_ranks; with width 0 on none, both runs take the general
// path), and whether both gave the same bits on every rank. The JSON keys keep their first
// names: by_number is the row-shape path, by_pointer the general one.
#include <mpi.h>
#include <netcdf.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "bench_util.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/remap.hpp"
#include "estuary/settings.hpp"

namespace {

// A dimension of the weight file (src_grid_size, dst_grid_size): its length.
long dim_of(const std::string& file, const char* name) {
  int nc = 0, id = 0;
  std::size_t n = 0;
  if (nc_open(file.c_str(), NC_NOWRITE, &nc) != NC_NOERR) throw std::runtime_error(file + ": cannot open");
  const bool ok = nc_inq_dimid(nc, name, &id) == NC_NOERR && nc_inq_dimlen(nc, id, &n) == NC_NOERR;
  nc_close(nc);
  if (!ok) throw std::runtime_error(file + ": no dimension " + name);
  return static_cast<long>(n);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::string weights;
  int iterations = 200;
  bench::Cli cli("bench/remap_width: a weight file's product with rows found by number and by row pointers");
  cli.opt("weights", weights, "a SCRIP weight file (CDO, ESMF, OASIS or estuary's)")->required();
  cli.opt("iterations", iterations, "timed runs per path and case")->check(CLI::PositiveNumber);
  cli.parse(argc, argv);
  int status = 0;
  try {
    const long na = dim_of(weights, "src_grid_size"), nb = dim_of(weights, "dst_grid_size");
    const estuary::Decomp src = estuary::gen::block(na, rank, ranks), dst = estuary::gen::block(nb, rank, ranks);
    std::vector<double> x(static_cast<std::size_t>(src.size()));
    const std::vector<std::int64_t> idx = src.to_indices();
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 280.0 + 20.0 * std::sin(1e-3 * static_cast<double>(idx[i]));
    for (estuary::RemapLocation loc : {estuary::RemapLocation::src, estuary::RemapLocation::dst})
      for (estuary::RemapOrder order : {estuary::RemapOrder::bfb, estuary::RemapOrder::sum}) {
        estuary::RemapOptions opt;
        opt.location = loc;
        opt.order = order;
        // The path is chosen at set-up: one Remap with each setting.
        estuary::Remap by_number(weights, src, dst, MPI_COMM_WORLD, opt);
        setenv("ESTUARY_ROW_WIDTH", "0", 1);
        estuary::Settings::reload();
        estuary::Remap by_pointer(weights, src, dst, MPI_COMM_WORLD, opt);
        unsetenv("ESTUARY_ROW_WIDTH");
        estuary::Settings::reload();
        std::vector<double> y1(static_cast<std::size_t>(dst.size())), y0(y1.size());
        by_number.run(x, y1);  // first touch of both, untimed
        by_pointer.run(x, y0);
        std::vector<double> t1, t0;
        for (int it = 0; it < iterations; ++it) {
          MPI_Barrier(MPI_COMM_WORLD);
          double s = MPI_Wtime();
          by_number.run(x, y1);
          t1.push_back(bench::max_over_ranks(MPI_Wtime() - s, MPI_COMM_WORLD));
          MPI_Barrier(MPI_COMM_WORLD);
          s = MPI_Wtime();
          by_pointer.run(x, y0);
          t0.push_back(bench::max_over_ranks(MPI_Wtime() - s, MPI_COMM_WORLD));
        }
        int same = y1 == y0 ? 1 : 0;
        MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        int width = by_number.stats().row_width, wmin = 0;
        MPI_Allreduce(&width, &wmin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        int two_step = by_number.stats().row_two_step ? 1 : 0, two_step_ranks = 0;
        MPI_Allreduce(&two_step, &two_step_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        std::int64_t links = by_number.stats().links, all_links = 0;
        MPI_Allreduce(&links, &all_links, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        bench::Json j;
        j.add("bench", "remap_width").add("weights", weights).add("src_n", na).add("dst_n", nb).add("links", all_links)
            .add("ranks", ranks).add("location", loc == estuary::RemapLocation::src ? "src" : "dst")
            .add("order", order == estuary::RemapOrder::bfb ? "bfb" : "sum").add("iterations", iterations)
            .add("row_width_min", wmin).add("two_step_ranks", two_step_ranks)
            .add("by_number_s_median", bench::median(t1)).add("by_pointer_s_median", bench::median(t0))
            .add("by_number_s_min", *std::min_element(t1.begin(), t1.end()))
            .add("by_pointer_s_min", *std::min_element(t0.begin(), t0.end()))
            .add("speedup_median", bench::median(t0) / bench::median(t1))
            .add("bit_identical", same == 1);
        if (rank == 0) std::cout << j.str() << std::endl;
        if (!same) status = 1;
      }
  } catch (const std::exception& e) {
    std::cerr << "bench/remap_width: " << e.what() << std::endl;
    status = 2;
  }
  MPI_Finalize();
  return status;
}
