// Weight generation: estuary's parallel generators against CDO's (`cdo gencon`, `cdo genbic`),
// timed in the same run on the same grids (written as SCRIP grid files for CDO). One JSON line
// per direction (and one per CDO run):
//   mpirun -n P build/bench/weights --grids full|medium|small [--cdo 1] [--order 1|2]
//                                   [--method conservative|bicubic|bilinear|distwgt|gauswgt|nnn|average|runoff|bilinear_reduced|bicubic_reduced]
//                                   [--fold 0|1]
// bicubic needs a logically rectangular source: only the tripolar -> reduced Gaussian direction.
// gauswgt (OASIS's GAUSWGT, 4 neighbours, variance 1) has no CDO counterpart, nor have runoff
// (LOCCDIST, 4 target neighbours, from the land points of the source to the ocean points of the
// target, both grids with land) bilinear_reduced and bicubic_reduced (OASIS's BILINEAR D and BICUBIC D: the reduced
// Gaussian -> tripolar direction only).
// full: ORCA025-like tripolar (1442 x 1021) <-> T799-class reduced Gaussian (842 962 cells).
// Each rank holds a block of both grids. Reports the wall time (max over ranks), each phase's
// max and mean over ranks (search, fetch, intersections), the time to write the SCRIP file (CDO's
// time includes its writing) and the links; the load balance is the intersection phase's max
// over mean.
#include <mpi.h>
#include <sys/resource.h>

#include <array>
#include <ctime>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/grid.hpp"
#include "estuary/runoff.hpp"
#include "estuary/weightgen.hpp"
#include "estuary/weights.hpp"

namespace {

using estuary::GridGen;

std::pair<GridGen, GridGen> grids(const std::string& size) {
  if (size == "full") return {GridGen::orca025(), GridGen::t799()};
  if (size == "medium") return {GridGen::tripolar(720, 510), GridGen::reduced_gaussian(200)};
  return {GridGen::tripolar(180, 128), GridGen::reduced_gaussian(48)};
}

double mean_over_ranks(double x, MPI_Comm comm) {
  double s = 0;
  int p = 1;
  MPI_Comm_size(comm, &p);
  MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, comm);
  return s / p;
}

double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// `cdo OP` (gencon, genbic) on rank 0 (one thread), seconds; -1 when it fails.
double time_cdo(const GridGen& src, const GridGen& dst, const std::string& dir, const std::string& op,
                double* cpu = nullptr) {
  const std::string sg = dir + "/src_" + src.name() + ".nc", dg = dir + "/dst_" + dst.name() + ".nc";
  estuary::write_scrip_grid(sg, src.make());
  estuary::write_scrip_grid(dg, dst.make());
  const std::string field = dir + "/field_" + src.name() + ".nc";
  std::string cmd = "cdo -s -O -f nc -setgrid," + sg + " -const,1," + sg + " " + field;
  if (std::system(cmd.c_str()) != 0) return -1;
  cmd = "OMP_NUM_THREADS=1 cdo -s -O -P 1 " + op + "," + dg + " " + field + " " + dir + "/cdo_weights.nc";
  const auto t0 = std::chrono::steady_clock::now();
  rusage before{}, after{};
  getrusage(RUSAGE_CHILDREN, &before);
  const int rc = std::system(cmd.c_str());
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  getrusage(RUSAGE_CHILDREN, &after);
  auto sec = [](const timeval& v) { return static_cast<double>(v.tv_sec) + 1e-6 * static_cast<double>(v.tv_usec); };
  if (cpu) *cpu = sec(after.ru_utime) - sec(before.ru_utime) + sec(after.ru_stime) - sec(before.ru_stime);
  return rc == 0 ? t : -1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::string size = "small", dir = "/tmp/estuary_bench_weights", method = "conservative";
  bool cdo = false, fold = false;
  estuary::ConservativeOptions opt;
  bench::Cli cli("bench/weights: estuary's parallel weight generation against CDO's, one JSON line per direction");
  cli.opt("grids", size, "full, medium or small")->check(CLI::IsMember({"full", "medium", "small"}));
  cli.flag("cdo", cdo, "also time CDO on the same grids");
  cli.opt("order", opt.order, "conservative order")->check(CLI::Range(1, 2));
  cli.opt("dir", dir, "where grid and weight files go");
  cli.opt("method", method, "weights to generate")
      ->check(CLI::IsMember({"conservative", "bicubic", "bilinear", "distwgt", "gauswgt", "nnn", "average", "runoff",
                              "bilinear_reduced", "bicubic_reduced"}));
  cli.flag("fold", fold, "bicubic: also write the folded one-column matrix");
  cli.parse(argc, argv);
  if (r == 0) std::filesystem::create_directories(dir);
  const auto [a, b] = grids(size);
  // The quad methods need a logically rectangular source: the tripolar grid (a) only.
  const bool one_way = method == "bicubic" || method == "bilinear" || method == "average" ||
                       method == "bilinear_reduced" || method == "bicubic_reduced";
  for (int dirn = 0; dirn < (one_way ? 1 : 2); ++dirn) {
    const bool flip = method.ends_with("_reduced") ? dirn == 0 : dirn != 0;  // reduced as the source
    const GridGen src = method == "runoff" ? (flip ? b : a).with_land() : flip ? b : a;
    const GridGen dst = method == "runoff" ? (flip ? a : b).with_land() : flip ? a : b;
    if (method != "conservative") {
      // The quad and neighbour methods: generation, then the SCRIP file (4 columns for bicubic).
      if (cdo && r == 0 && method == "bicubic") {
        double cpu = 0;
        const double t = time_cdo(src, dst, dir, "genbic", &cpu);
        std::puts(bench::Json().add("bench", "weights").add("tool", "cdo genbic").add("src", src.name())
                      .add("dst", dst.name()).add("threads", 1).add("seconds", t).add("cpu", cpu).str().c_str());
      }
      MPI_Barrier(MPI_COMM_WORLD);
      estuary::Grid s = src.make(estuary::gen::block(src.size(), r, p));
      const estuary::Grid d = dst.make(estuary::gen::block(dst.size(), r, p));
      if (method == "runoff")
        for (auto& m : s.mask) m = 1 - m;  // the land points send
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime(), c0 = thread_cpu();
      estuary::Links links;
      std::vector<std::array<double, 4>> bicubic_columns;
      if (method == "bicubic") {
        // As cdo genbic: the 4 weight columns for the file, no folded matrix (--fold 1 adds it).
        estuary::BilinearWeightOptions bo;
        bo.fold = fold;
        estuary::BicubicWeights w = estuary::bicubic_weights(s, d, MPI_COMM_WORLD, bo);
        bicubic_columns = std::move(w.columns);
        links = std::move(w.value);
      } else if (method == "runoff") {
        estuary::RunoffOptions ro;
        ro.neighbors = 4;
        ro.weighting = estuary::RunoffWeighting::distance;
        links = estuary::runoff_weights(s, d, MPI_COMM_WORLD, ro);
      } else if (method == "bilinear_reduced") {
        links = estuary::bilinear_weights_reduced(s, d, MPI_COMM_WORLD);
      } else if (method == "bicubic_reduced") {
        links = estuary::bicubic_weights_reduced(s, d, MPI_COMM_WORLD);
      } else if (method == "bilinear") {
        links = estuary::bilinear_weights(s, d, MPI_COMM_WORLD);
      } else if (method == "distwgt") {
        links = estuary::distance_weights(s, d, MPI_COMM_WORLD);
      } else if (method == "nnn") {
        links = estuary::nnn_weights(s, d, MPI_COMM_WORLD);
      } else if (method == "average") {
        links = estuary::average_weights(s, d, MPI_COMM_WORLD);
      } else {
        links = estuary::gaussian_weights(s, d, MPI_COMM_WORLD);
      }
      const double wall = bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD);
      // CPU time too: on a shared machine the wall time mostly says how busy the others were.
      // (It includes the MPI library's polling while a rank waits in a collective.)
      const double cpu = thread_cpu() - c0;
      const double cpu_max = bench::max_over_ranks(cpu, MPI_COMM_WORLD);
      const double cpu_mean = mean_over_ranks(cpu, MPI_COMM_WORLD);
      const double t1 = MPI_Wtime();
      // The columns laid out as the writer takes them: part of writing the file, not of the
      // generation (CDO's time includes its writing too, beside which write_seconds is given).
      std::vector<double> columns;
      columns.reserve(4 * bicubic_columns.size());
      for (const auto& c : bicubic_columns) columns.insert(columns.end(), c.begin(), c.end());
      bicubic_columns = {};
      estuary::WeightWriteOptions wo;
      wo.map_method = method == "bicubic" ? "Bicubic remapping"
                      : method == "bilinear_reduced" || method == "bilinear" ? "Bilinear remapping"
                      : method == "bicubic_reduced" ? "OASIS BICUBIC D (one weight per link)"
                      : method == "nnn" || method == "average" ? "YAC " + method
                      : method == "runoff" ? "Runoff (LOCCDIST)" : "Distance weighted avg of nearest neighbors";
      if (method == "bicubic") wo.columns = &columns, wo.num_wgts = 4;
      estuary::write_weights(dir + "/estuary_weights.nc", links, src.size(), dst.size(), MPI_COMM_WORLD, wo);
      const double write = bench::max_over_ranks(MPI_Wtime() - t1, MPI_COMM_WORLD);
      double n = static_cast<double>(links.size());
      MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      // The largest rank's peak: what must fit in one node's share (rank 0's alone hides a rank
      // that holds more).
      const double peak_max = bench::max_over_ranks(bench::proc_status_mb("VmHWM:"), MPI_COMM_WORLD);
      if (r == 0)
        std::puts(bench::Json().add("bench", "weights").add("tool", "estuary").add("method", method)
                      .add("src", src.name()).add("dst", dst.name()).add("ranks", p).add("seconds", wall)
                      .add("cpu_max", cpu_max).add("cpu_mean", cpu_mean).add("write_seconds", write).add("links", n)
                      .add("peak_rss_mb", bench::proc_status_mb("VmHWM:")).add("peak_rss_mb_max", peak_max).str().c_str());
      continue;
    }
    if (cdo && r == 0) {
      const double t = time_cdo(src, dst, dir, "gencon");
      std::puts(bench::Json()
          .add("bench", "weights")
          .add("tool", "cdo gencon")
          .add("src", src.name())
          .add("dst", dst.name())
          .add("threads", 1)
          .add("seconds", t)
          .str().c_str());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const estuary::Grid s = src.make(estuary::gen::block(src.size(), r, p));
    const estuary::Grid d = dst.make(estuary::gen::block(dst.size(), r, p));
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    const estuary::ConservativeWeights w = estuary::conservative_weights(s, d, MPI_COMM_WORLD, opt);
    const double wall = bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD);
    // Written as CDO writes its result (a SCRIP file), for a like-for-like total.
    MPI_Barrier(MPI_COMM_WORLD);
    const double t1 = MPI_Wtime();
    estuary::WeightWriteOptions wo;
    wo.map_method = "Conservative remapping";
    wo.normalization = "fracarea";
    estuary::write_weights(dir + "/estuary_weights.nc", w.links, src.size(), dst.size(), MPI_COMM_WORLD, wo);
    const double write = bench::max_over_ranks(MPI_Wtime() - t1, MPI_COMM_WORLD);
    double links = static_cast<double>(w.links.size());
    MPI_Allreduce(MPI_IN_PLACE, &links, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const double imax = bench::max_over_ranks(w.intersect_seconds, MPI_COMM_WORLD);
    const double imean = mean_over_ranks(w.intersect_seconds, MPI_COMM_WORLD);
    const double pmax = bench::max_over_ranks(static_cast<double>(w.pairs), MPI_COMM_WORLD);
    const double pmean = mean_over_ranks(static_cast<double>(w.pairs), MPI_COMM_WORLD);
    const double search = bench::max_over_ranks(w.search_seconds, MPI_COMM_WORLD);
    const double fetch = bench::max_over_ranks(w.fetch_seconds, MPI_COMM_WORLD);
    if (r == 0)
      std::puts(bench::Json()
          .add("bench", "weights")
          .add("tool", "estuary")
          .add("src", src.name())
          .add("dst", dst.name())
          .add("ranks", p)
          .add("order", opt.order)
          .add("seconds", wall)
          .add("write_seconds", write)
          .add("search_max", search)
          .add("fetch_max", fetch)
          .add("intersect_max", imax)
          .add("intersect_mean", imean)
          .add("intersect_max_over_mean", imean > 0 ? imax / imean : 0.0)
          .add("pairs_max_over_mean", pmean > 0 ? pmax / pmean : 0.0)
          .add("links", links)
          .add("peak_rss_mb", bench::proc_status_mb("VmHWM:"))
          .str().c_str());
  }
  MPI_Finalize();
  return 0;
}
