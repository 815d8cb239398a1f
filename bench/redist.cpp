// bench/redist — moves F fields of n doubles from one decomposition to another, many times.
//
//   mpirun -n P build/bench/redist --n N --fields F --src KIND --dst KIND --algorithm p2p
//          --iterations I [--messages-per-process M] [--cache FILE]
// KIND: block, cyclic, random, rows2d, transpose2d. Prints one JSON object per line.
// --messages-per-process M replaces the kinds by paper 001's Algorithm 1 pair on the
// grid_shape(n) grid: every rank sends M P2P messages. --algorithm: any registered schedule
// (p2p, butterfly, auto, ...) or adaptive (estuary::AdaptiveRedist: its set-up includes the
// tuning runs, which move the real fields; --cache FILE, default off, keeps its decision).
// exchange times are the slowest rank's, per iteration; memcpy_gbps is one process copying the
// same number of bytes in the same run, the bound a redistribution is compared with.
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>

#include "bench_util.hpp"
#include "heap_meter.hpp"
#include "estuary/estuary.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::int64_t n = 1000000;
  int fields = 1, iterations = 10, messages = 0;
  std::string src_kind = "block", dst_kind = "transpose2d", algorithm = "p2p", cache = "off";
  bench::Cli cli("bench/redist: moves F fields of n doubles from one decomposition to another, one JSON line per run");
  cli.opt("n", n, "global size in doubles")->check(CLI::PositiveNumber);
  cli.opt("fields", fields, "fields moved per exchange")->check(CLI::PositiveNumber);
  cli.opt("iterations", iterations, "exchanges timed")->check(CLI::PositiveNumber);
  cli.opt("src", src_kind, "source decomposition: block, cyclic, random, rows2d, transpose2d");
  cli.opt("dst", dst_kind, "destination decomposition (same kinds)");
  cli.opt("algorithm", algorithm, "a registered schedule (p2p, butterfly, auto, ...) or adaptive");
  cli.opt("messages-per-process", messages, "paper 001's Algorithm 1 pair with M messages per rank instead of the kinds (0: off)");
  cli.opt("cache", cache, "adaptive only: file that keeps its decision (off: none)");
  cli.parse(argc, argv);

  try {
    const estuary::gen::DecompPair pair =
        messages > 0 ? estuary::gen::messages_pair(n, messages, rank, ranks)
                     : estuary::gen::DecompPair{estuary::gen::by_name(src_kind, n, rank, ranks),
                                                estuary::gen::by_name(dst_kind, n, rank, ranks)};
    const estuary::Decomp& src = pair.src;
    const estuary::Decomp& dst = pair.dst;
    std::vector<std::vector<double>> a(fields), b(fields);
    for (int f = 0; f < fields; ++f) {
      const auto idx = src.to_indices();
      a[f].resize(idx.size());
      for (std::size_t i = 0; i < idx.size(); ++i) a[f][i] = static_cast<double>(idx[i] + f);
      b[f].assign(static_cast<std::size_t>(dst.size()), -1.0);
    }
    std::vector<estuary::Field> fl;
    for (int f = 0; f < fields; ++f) fl.emplace_back(a[f], b[f]);

    // Set-up: plan + schedule + executor, timed and measured for memory. MPI's own per-peer
    // buffers are made first (an all-to-all), so the reading is estuary's set-up, not MPI's.
    {
      std::vector<char> warm(static_cast<std::size_t>(ranks) * 65536), back(warm.size());
      MPI_Alltoall(warm.data(), 65536, MPI_CHAR, back.data(), 65536, MPI_CHAR, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double rss0 = bench::proc_status_mb("VmRSS:");
    const double heap0 = static_cast<double>(bench::heap::current());
    bench::heap::reset_peak();
    double t0 = MPI_Wtime();
    estuary::RedistOptions opt;
    opt.algorithm = algorithm;
    std::optional<estuary::Redist> redist;
    std::optional<estuary::AdaptiveRedist> adaptive;
    std::optional<estuary::Exchange> ex;
    if (algorithm == "adaptive") {
      estuary::AdaptiveOptions ao;
      ao.cache_file = cache;
      adaptive.emplace(src, dst, MPI_COMM_WORLD, ao);
    } else {
      redist.emplace(src, dst, MPI_COMM_WORLD, opt);
    }
    const double plan_s = MPI_Wtime() - t0;
    int tuning_runs = 0;
    for (; adaptive && !adaptive->tuned(); ++tuning_runs) adaptive->run(fl);
    if (redist) ex.emplace(redist->make_exchange(std::vector<estuary::Type>(fields, estuary::Type::f64)));
    const estuary::Plan& plan = adaptive ? adaptive->plan() : redist->plan();
    auto run_once = [&] { adaptive ? adaptive->run(fl) : ex->run(fl); };
    const double setup_s = bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD);
    const double plan_max_s = bench::max_over_ranks(plan_s, MPI_COMM_WORLD);
    // Peak process memory growth (MPI's buffers included) and peak estuary heap growth.
    const double setup_mb = bench::max_over_ranks(bench::proc_status_mb("VmHWM:") - rss0, MPI_COMM_WORLD);
    const double setup_heap_mb = bench::max_over_ranks(
        (static_cast<double>(bench::heap::peak()) - heap0) / 1048576.0, MPI_COMM_WORLD);
    const estuary::PlanStats ps = plan.stats();
    const estuary::PlanTimers& pt = plan.timers();
    const double cut_s = bench::max_over_ranks(pt.cut_s, MPI_COMM_WORLD);
    const double to_dir_s = bench::max_over_ranks(pt.to_dir_s, MPI_COMM_WORLD);
    const double match_s = bench::max_over_ranks(pt.match_s, MPI_COMM_WORLD);
    const double replies_s = bench::max_over_ranks(pt.replies_s, MPI_COMM_WORLD);

    // Exchanges: warm-up, then the slowest rank's time per iteration.
    run_once();
    std::vector<double> times;
    for (int it = 0; it < iterations; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double s = MPI_Wtime();
      run_once();
      times.push_back(bench::max_over_ranks(MPI_Wtime() - s, MPI_COMM_WORLD));
    }
    // Correctness: every destination value is its global index (+ field number).
    const auto didx = dst.to_indices();
    long bad = 0;
    for (int f = 0; f < fields; ++f)
      for (std::size_t i = 0; i < didx.size(); ++i) bad += b[f][i] != static_cast<double>(didx[i] + f);
    long bad_all = 0;
    MPI_Allreduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

    // The memcpy bound: one process copies the same bytes, others wait.
    const std::size_t bytes = static_cast<std::size_t>(n) * fields * sizeof(double);
    double memcpy_s = 0;
    if (rank == 0) {
      std::vector<char> from(bytes, 1), to(bytes, 0);
      std::vector<double> m;
      for (int it = 0; it < std::max(3, iterations / 2); ++it) {
        const double s = MPI_Wtime();
        std::memcpy(to.data(), from.data(), bytes);
        m.push_back(MPI_Wtime() - s);
        from[static_cast<std::size_t>(it) % bytes] += to[bytes / 2];  // keep the copy observable
      }
      memcpy_s = *std::min_element(m.begin(), m.end());
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
      const double med = bench::median(times);
      const double gbps = bytes / med / 1e9, memcpy_gbps = bytes / memcpy_s / 1e9;
      const estuary::Schedule& schedule = adaptive ? adaptive->schedule() : redist->schedule();
      const estuary::ScheduleStats ss = schedule.stats();
      std::cout << bench::Json()
                       .add("bench", "redist").add("algorithm", algorithm)
                       .add("choice", adaptive ? adaptive->choice().name() : schedule.algorithm)
                       .add("tuning_runs", tuning_runs)
                       .add("ranks", ranks).add("n", n).add("fields", fields)
                       .add("src", messages > 0 ? "algorithm1" : src_kind).add("dst", messages > 0 ? "algorithm1" : dst_kind)
                       .add("messages_per_process", messages)
                       .add("bytes_moved", bytes)
                       .add("setup_s", setup_s).add("plan_s", plan_max_s)
                       .add("plan_cut_s", cut_s).add("plan_to_directory_s", to_dir_s)
                       .add("plan_match_s", match_s).add("plan_replies_s", replies_s)
                       .add("setup_peak_rss_mb", setup_mb).add("setup_heap_peak_mb", setup_heap_mb)
                       .add("exchange_s_min", *std::min_element(times.begin(), times.end()))
                       .add("exchange_s_median", med)
                       .add("gbps", gbps).add("memcpy_gbps", memcpy_gbps)
                       .add("fraction_of_memcpy", gbps / memcpy_gbps)
                       .add("messages_total", ps.messages_total).add("messages_max", ps.messages_max)
                       .add("messages_avg", ps.messages_avg).add("messages_min", ps.messages_min)
                       .add("stages", ss.stages)
                       .add("errors", bad_all)
                       .str()
                << std::endl;
    }
    MPI_Finalize();
    return bad_all == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}
