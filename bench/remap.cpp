// bench/remap — sparse application (Remap::run) and CONSERV for the paper's T799 -> ORCA025
// case and back (paper 000, Tables 1 and 3), with real 5-nearest-neighbour inverse-distance
// weights (estuary::distance_weights, neighbors = 5, CDO gendis's mask rule) made in parallel
// for each direction before the timings.
//
//   mpirun -n P build/bench/remap [--direction both|fwd|back] [--iterations 10] [--small]
//                                 [--triad-mb 80] [--frac-only]
// One JSON line per (direction, location, order, conserv): the slowest rank's time of run()
// and of Conserv::apply (GLOBAL), median and min over iterations, and conserv's ratio to
// lsum8's; with the link count and the weight generation time (slowest rank) of the direction.
// --small uses reduced_gaussian(48) and tripolar(144, 102) instead.
// Besides, one "remap_frac" line per (direction, location, order): a run with a dynamic
// fractional mask (Remap::run of a RemapFracField, as the coupler's put with a fraction does)
// against the static run of the same field, interleaved, and their ratio; with the unfused form
// (f x formed, a run of [f x, f], the division) for comparison, and whether both agree bit for bit.
// On 1 rank, one "remap_frac_floor" line per direction: the same links, x and f through the
// simplest loops that compute the two results (see floor_frac), none of the library's code, so
// the masked step's ratio can be read against what the machine allows (floor_ratio_median:
// the fastest of three masked forms over the static loop).
//
// Memory-bandwidth bound: a STREAM triad a[i] = b[i] + s*c[i] on three arrays of --triad-mb MB
// each (default 80), best of 5, run by rank 0 alone while the others wait at a barrier, counted
// as STREAM does (24 B per element: no write-allocate traffic). Its bandwidth goes in every line
// as triad_GBps. The sparse application's traffic is counted, summed over ranks, as
//   per link:              8 B weight + 4 B source index (Remap keeps it as uint32)
//                          + 8 B source value gathered (x[xi[k]], counted once per link)
//   per destination point: 8 B result written + 8 B row pointer (ptr, int64)
// (app_bytes), and app_GBps = app_bytes / run_s_min. On 1 rank, fraction_of_triad =
// app_GBps / triad_GBps (the target: >= 0.5; fraction_of_triad_median uses the median
// time instead); with more ranks the single-core triad is no bound, and the line leaves it out.
// The count is what the loop touches, not what crosses the memory bus: neighbouring rows share
// most of their source points, so many of the gathered values come from cache, and the figure
// can exceed 1.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>
#include <emmintrin.h>
#include <span>
#include <vector>

#include "bench_util.hpp"
#include "estuary/conserv.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/grid.hpp"
#include "estuary/remap.hpp"
#include "estuary/weightgen.hpp"

namespace {

using i64 = std::int64_t;

// STREAM triad bandwidth in GB/s (1e9 B/s), best of `reps`, 24 B per element.
double triad_gbps(std::size_t bytes_per_array, int reps) {
  const std::size_t n = bytes_per_array / sizeof(double);
  std::vector<double> va(n), vb(n), vc(n);  // value-initialised: pages touched here
  double* __restrict a = va.data();
  const double* __restrict bb = vb.data();
  const double* __restrict c = vc.data();
  for (std::size_t i = 0; i < n; ++i) {
    vb[i] = 1.0 + static_cast<double>(i % 7);
    vc[i] = 2.0 - static_cast<double>(i % 5);
  }
  const double s = 3.0;
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) a[i] = bb[i] + s * c[i];
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, dt);
  }
  volatile double sink = a[n / 3] + a[n - 1];  // keep the stores observable
  (void)sink;
  return 3.0 * static_cast<double>(n * sizeof(double)) / best / 1e9;
}

struct Times {
  std::vector<double> run, cons;
};

// The machine's floor for the dynamic fractional mask: the simplest loops over the same links
// in compressed rows (1 rank; the sources read in place, as Remap does there), one sum a row
// for the static run and two (W f x, W f) and a division for the masked one, in IEEE link
// order as Remap's bfb. No exchange, no set-up, nothing of the library: what is left of the
// masked step's cost over the static one when nothing else is done.
struct Csr {
  std::vector<i64> ptr;
  std::vector<std::uint32_t> col;
  std::vector<double> w;
};

Csr csr_of(const estuary::Links& l, i64 rows) {
  Csr c;
  c.ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (const i64 r : l.row) ++c.ptr[static_cast<std::size_t>(r) + 1];
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) c.ptr[r + 1] += c.ptr[r];
  std::vector<i64> at(c.ptr.begin(), c.ptr.end() - 1);
  c.col.resize(l.col.size());
  c.w.resize(l.col.size());
  for (std::size_t k = 0; k < l.col.size(); ++k) {  // stable: link order kept within a row
    const auto pos = static_cast<std::size_t>(at[static_cast<std::size_t>(l.row[k])]++);
    c.col[pos] = static_cast<std::uint32_t>(l.col[k]);
    c.w[pos] = l.weight[k];
  }
  return c;
}

__attribute__((noinline)) void floor_static(const Csr& c, const double* x, double* y, std::size_t rows) {
  for (std::size_t r = 0; r < rows; ++r) {
    double acc = 0;
    for (i64 k = c.ptr[r]; k < c.ptr[r + 1]; ++k) acc += c.w[static_cast<std::size_t>(k)] * x[c.col[static_cast<std::size_t>(k)]];
    y[r] = acc;
  }
}

__attribute__((noinline)) void floor_frac(const Csr& c, const double* x, const double* f, double* y, std::size_t rows) {
  for (std::size_t r = 0; r < rows; ++r) {
    double num = 0, den = 0;
    for (i64 k = c.ptr[r]; k < c.ptr[r + 1]; ++k) {
      const double w = c.w[static_cast<std::size_t>(k)];
      const std::uint32_t s = c.col[static_cast<std::size_t>(k)];
      const double fs = f[s];
      num += w * (fs * x[s]);
      den += w * fs;
    }
    y[r] = den != 0.0 ? num / den : 0.0;
  }
}


// The same with f x formed once per source value (a pass over the sources, counted), then two
// gathered arrays a link.
__attribute__((noinline)) void floor_frac_fx(const Csr& c, const double* x, const double* f, double* fx, double* y,
                                             std::size_t rows, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) fx[i] = f[i] * x[i];
  for (std::size_t r = 0; r < rows; ++r) {
    double num = 0, den = 0;
    for (i64 k = c.ptr[r]; k < c.ptr[r + 1]; ++k) {
      const double w = c.w[static_cast<std::size_t>(k)];
      const std::uint32_t s = c.col[static_cast<std::size_t>(k)];
      num += w * fx[s];
      den += w * f[s];
    }
    y[r] = den != 0.0 ? num / den : 0.0;
  }
}

// And with [f x, f] side by side (a pass writes them), one 16-byte load a link and both sums in
// the two lanes of one multiply and one add: as many loads a link as the static run.
__attribute__((noinline)) void floor_frac_pairs(const Csr& c, const double* x, const double* f, double* pair, double* y,
                                                std::size_t rows, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) pair[2 * i] = f[i] * x[i], pair[2 * i + 1] = f[i];
  for (std::size_t r = 0; r < rows; ++r) {
    __m128d acc = _mm_setzero_pd();
    for (i64 k = c.ptr[r]; k < c.ptr[r + 1]; ++k)
      acc = _mm_add_pd(acc, _mm_mul_pd(_mm_set1_pd(c.w[static_cast<std::size_t>(k)]),
                                       _mm_loadu_pd(pair + 2 * std::size_t{c.col[static_cast<std::size_t>(k)]})));
    const double num = _mm_cvtsd_f64(acc), den = _mm_cvtsd_f64(_mm_unpackhi_pd(acc, acc));
    y[r] = den != 0.0 ? num / den : 0.0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::string direction = "both";
  int iterations = 10;
  bool small = false, frac_only = false;
  std::int64_t triad_mb = 80;
  bench::Cli cli("bench/remap: sparse application and CONSERV for T799 <-> ORCA025, one JSON line per case");
  cli.opt("direction", direction, "both, fwd (T799 -> ORCA025) or back")->check(CLI::IsMember({"both", "fwd", "back"}));
  cli.opt("iterations", iterations, "timed runs per case")->check(CLI::PositiveNumber);
  cli.flag("small", small, "reduced_gaussian(48) and tripolar(144, 102) instead of the full grids");
  cli.opt("triad-mb", triad_mb, "MB per array of the STREAM triad")->check(CLI::PositiveNumber);
  cli.flag("frac-only", frac_only, "only the remap_frac lines (for profiling the fractional mask)");
  cli.parse(argc, argv);
  try {
    double triad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) triad = triad_gbps(static_cast<std::size_t>(triad_mb) * 1000000, 5);
    MPI_Bcast(&triad, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    const estuary::GridGen gt = (small ? estuary::GridGen::reduced_gaussian(48) : estuary::GridGen::t799()).with_land();
    const estuary::GridGen go = (small ? estuary::GridGen::tripolar(144, 102) : estuary::GridGen::orca025()).with_land();
    std::vector<std::pair<const estuary::GridGen*, const estuary::GridGen*>> dirs;
    if (direction != "back") dirs.emplace_back(&gt, &go);
    if (direction != "fwd") dirs.emplace_back(&go, &gt);
    for (const auto& [ga, gb] : dirs) {
      const i64 na = ga->size(), nb = gb->size();
      const estuary::Decomp sd = estuary::gen::block(na, rank, ranks), dd = estuary::gen::block(nb, rank, ranks);
      const estuary::Grid a = ga->make(sd), b = gb->make(dd);
      estuary::DistanceWeightOptions wopt;
      wopt.neighbors = 5;
      MPI_Barrier(MPI_COMM_WORLD);
      const double tw = MPI_Wtime();
      const estuary::Links links = estuary::distance_weights(*ga, b, MPI_COMM_WORLD, wopt);
      const double weightgen_s = bench::max_over_ranks(MPI_Wtime() - tw, MPI_COMM_WORLD);
      i64 nlinks = 0, mine = links.size();
      MPI_Allreduce(&mine, &nlinks, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      // Traffic of one application, summed over ranks (see the header comment).
      const double app_bytes = 20.0 * static_cast<double>(nlinks) + 16.0 * static_cast<double>(nb);
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
            if (frac_only) break;
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
            const double run_min = *std::min_element(t.run.begin(), t.run.end());
            const double app_gbps = app_bytes / run_min / 1e9;
            if (!m) off_med = run_med;
            if (m == estuary::SumMethod::lsum8) lsum8_med = cons_med;
            bench::Json j;
            j.add("bench", "remap").add("src", ga->name()).add("dst", gb->name()).add("src_n", na).add("dst_n", nb)
                .add("links", nlinks).add("weights", "dis5").add("weightgen_s", weightgen_s).add("ranks", ranks)
                .add("location", loc == estuary::RemapLocation::src ? "src" : "dst")
                .add("order", order == estuary::RemapOrder::bfb ? "bfb" : "sum")
                .add("conserv", m ? estuary::name_of(*m) : "off").add("iterations", its)
                .add("setup_s", setup)
                .add("run_s_median", run_med).add("run_s_min", run_min)
                .add("conserv_s_median", cons_med).add("conserv_s_min", *std::min_element(t.cons.begin(), t.cons.end()))
                .add("total_s_median", run_med + cons_med)
                .add("total_ratio_to_off", (run_med + cons_med) / off_med)
                .add("app_bytes", app_bytes).add("app_GBps", app_gbps).add("triad_GBps", triad);
            if (ranks == 1)
              j.add("fraction_of_triad", app_gbps / triad).add("fraction_of_triad_median", app_bytes / run_med / 1e9 / triad);
            if (m && lsum8_med > 0) j.add("conserv_ratio_to_lsum8", cons_med / lsum8_med);
            if (rank == 0) std::cout << j.str() << std::endl;
          }
          // Dynamic fractional mask (the coupler's put with a fraction, YAC's yac_cput_frac):
          // the whole masked step, Remap::run of a field with a fractional mask (x and f in one
          // exchange, f x formed in the pass over the links, the division where the rows are
          // complete), against the static run of x just before (the same Remap, interleaved
          // iterations). Checked once against the unfused form (the product f x, a run of the
          // two fields [f x, f], the division): bit_identical. One line per location and order.
          std::vector<double> fx(x.size()), f(x.size()), yy(2 * y.size()), unfused(y.size());
          for (std::size_t i = 0; i < x.size(); ++i) {
            f[i] = 0.25 + 0.75 * std::fabs(std::sin(a.lon[i] * 0.1 + a.lat[i] * 0.07));  // changes with the point
            fx[i] = f[i] * x[i];
          }
          const std::size_t nd = y.size();
          const estuary::RemapField two[2] = {{fx, std::span<double>(yy.data(), nd)},
                                               {f, std::span<double>(yy.data() + nd, nd)}};
          const estuary::RemapFracField frac[1] = {{x, f, y}};  // into y, as the static run (a coupling's one buffer)
          rm.run(two);
          for (std::size_t i = 0; i < nd; ++i) unfused[i] = yy[nd + i] != 0.0 ? yy[i] / yy[nd + i] : 0.0;
          rm.run(frac);
          int same = std::equal(y.begin(), y.end(), unfused.begin()) ? 1 : 0;
          MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
          Times st, dy, run2;  // run2: the unfused masked step (product, two-field run, division)
          std::vector<double> st_move, dy_move;  // of which in the exchanges (this rank's)
          for (int it = 0; it < iterations; ++it) {
            MPI_Barrier(MPI_COMM_WORLD);
            double m0 = rm.move_seconds();
            t0 = MPI_Wtime();
            rm.run(x, y);
            st.run.push_back(bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD));
            st_move.push_back(rm.move_seconds() - m0);
            MPI_Barrier(MPI_COMM_WORLD);
            m0 = rm.move_seconds();
            t0 = MPI_Wtime();
            rm.run(frac);
            dy.run.push_back(bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD));
            dy_move.push_back(rm.move_seconds() - m0);
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (std::size_t i = 0; i < x.size(); ++i) fx[i] = f[i] * x[i];
            rm.run(two);
            for (std::size_t i = 0; i < nd; ++i) y[i] = yy[nd + i] != 0.0 ? yy[i] / yy[nd + i] : 0.0;
            run2.run.push_back(bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD));
          }
          // Ranks whose gather would only copy their own source values, read in place instead.
          int in_place = rm.stats().source_in_place ? 1 : 0, in_place_ranks = 0;
          MPI_Allreduce(&in_place, &in_place_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
          bench::Json j;
          j.add("bench", "remap_frac").add("src", ga->name()).add("dst", gb->name()).add("src_n", na).add("dst_n", nb)
              .add("links", nlinks).add("ranks", ranks)
              .add("location", loc == estuary::RemapLocation::src ? "src" : "dst")
              .add("order", order == estuary::RemapOrder::bfb ? "bfb" : "sum").add("iterations", iterations)
              .add("static_s_median", bench::median(st.run)).add("frac_s_median", bench::median(dy.run))
              .add("static_s_min", *std::min_element(st.run.begin(), st.run.end()))
              .add("frac_s_min", *std::min_element(dy.run.begin(), dy.run.end()))
              .add("static_move_s_median", bench::median(st_move)).add("frac_move_s_median", bench::median(dy_move))
              .add("unfused_s_median", bench::median(run2.run))
              .add("unfused_ratio_median", bench::median(run2.run) / bench::median(st.run))
              .add("bit_identical", same == 1).add("source_in_place_ranks", in_place_ranks)
              .add("frac_ratio_median", bench::median(dy.run) / bench::median(st.run))
              .add("frac_ratio_min", *std::min_element(dy.run.begin(), dy.run.end()) /
                                         *std::min_element(st.run.begin(), st.run.end()));
          if (rank == 0) std::cout << j.str() << std::endl;
        }
      if (ranks == 1) {  // the floor (see floor_frac), same links, same x and f as remap_frac
        const Csr c = csr_of(links, nb);
        std::vector<double> f(x.size()), y2(y.size());
        for (std::size_t i = 0; i < x.size(); ++i) f[i] = 0.25 + 0.75 * std::fabs(std::sin(a.lon[i] * 0.1 + a.lat[i] * 0.07));
        std::vector<double> st, dy, dfx, dpair, work(2 * x.size()), y3(y.size()), y4(y.size());
        for (int it = 0; it < iterations + 1; ++it) {
          double t0 = MPI_Wtime();
          floor_static(c, x.data(), y.data(), y.size());
          const double ts = MPI_Wtime() - t0;
          t0 = MPI_Wtime();
          floor_frac(c, x.data(), f.data(), y2.data(), y2.size());
          const double td = MPI_Wtime() - t0;
          t0 = MPI_Wtime();
          floor_frac_fx(c, x.data(), f.data(), work.data(), y3.data(), y3.size(), x.size());
          const double tfx = MPI_Wtime() - t0;
          t0 = MPI_Wtime();
          floor_frac_pairs(c, x.data(), f.data(), work.data(), y4.data(), y4.size(), x.size());
          const double tp = MPI_Wtime() - t0;
          if (it > 0) st.push_back(ts), dy.push_back(td), dfx.push_back(tfx), dpair.push_back(tp);  // the first: warm-up
        }
        const bool same = y2 == y3 && y2 == y4;  // three forms of one IEEE computation
        bench::Json j;
        j.add("bench", "remap_frac_floor").add("src", ga->name()).add("dst", gb->name()).add("links", nlinks)
            .add("iterations", iterations).add("static_s_median", bench::median(st)).add("frac_s_median", bench::median(dy))
            .add("fx_pass_s_median", bench::median(dfx)).add("pairs_s_median", bench::median(dpair))
            .add("same_bits", same)
            .add("floor_ratio_median", std::min({bench::median(dy), bench::median(dfx), bench::median(dpair)}) / bench::median(st))
            .add("per_link_ratio_median", bench::median(dy) / bench::median(st))
            .add("floor_ratio_min", *std::min_element(dy.begin(), dy.end()) / *std::min_element(st.begin(), st.end()));
        std::cout << j.str() << std::endl;
      }
    }
    MPI_Finalize();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}
