// bench/redist — moves F fields of n doubles from one decomposition to another, many times.
//
//   mpirun -n P build/bench/redist --n N --fields F --src KIND --dst KIND --algorithm p2p
//          --iterations I [--messages-per-process M] [--cache FILE] [--nx X --ny Y] [--references 0]
// KIND: block, cyclic, random, rows2d, transpose2d, colblocks. Prints one JSON object per line.
// The 2-D kinds lie on the --nx x --ny grid (then n = nx * ny), by default on grid_shape(n)
// (10^7: 3125 x 3200). --references (default on) also times the same redistribution by plain
// MPI on index lists built without estuary (bench/mpi_reference.hpp): pack + MPI_Alltoallv +
// unpack, and derived datatypes with Isend/Irecv; iterations alternate estuary and both, and
// the run aborts unless all three deliver the same destination arrays.
// --messages-per-process M replaces the kinds by paper 001's Algorithm 1 pair on the
// grid_shape(n) grid: every rank sends M P2P messages. --algorithm: any registered schedule
// (p2p, butterfly, auto, ...) or adaptive (estuary::AdaptiveRedist: its set-up includes the
// tuning runs, which move the real fields; --cache FILE, default off, keeps its decision).
// exchange times are the slowest rank's, per iteration; memcpy_gbps is one process copying the
// same number of bytes in the same run, the bound a redistribution is compared with;
// copy_all_ranks_s is every rank copying its share of those bytes at once, from a barrier to
// the barrier after the last copy (best of several): the least time in which the ranks can
// write every byte once, the floor of any exchange on one node whatever its method.
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>

#include "bench_util.hpp"
#include "heap_meter.hpp"
#include "mpi_reference.hpp"
#include "estuary/estuary.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::int64_t n = 1000000, nx = 0, ny = 0;
  int fields = 1, iterations = 10, messages = 0;
  bool references = true;
  std::string src_kind = "block", dst_kind = "transpose2d", algorithm = "p2p", cache = "off";
  bench::Cli cli("bench/redist: moves F fields of n doubles from one decomposition to another, one JSON line per run");
  cli.opt("n", n, "global size in doubles")->check(CLI::PositiveNumber);
  cli.opt("fields", fields, "fields moved per exchange")->check(CLI::PositiveNumber);
  cli.opt("iterations", iterations, "exchanges timed")->check(CLI::PositiveNumber);
  cli.opt("src", src_kind, "source decomposition: block, cyclic, random, rows2d, transpose2d, colblocks");
  cli.opt("dst", dst_kind, "destination decomposition (same kinds)");
  cli.opt("algorithm", algorithm, "a registered schedule (p2p, butterfly, auto, ...) or adaptive");
  cli.opt("messages-per-process", messages, "paper 001's Algorithm 1 pair with M messages per rank instead of the kinds (0: off)");
  cli.opt("cache", cache, "adaptive only: file that keeps its decision (off: none)");
  cli.opt("nx", nx, "rows of the 2-D kinds' grid, with --ny (then n = nx * ny; 0: grid_shape(n))")->check(CLI::NonNegativeNumber);
  cli.opt("ny", ny, "columns of the 2-D kinds' grid, with --nx")->check(CLI::NonNegativeNumber);
  cli.flag("references", references, "also time MPI_Alltoallv and a derived-datatype exchange on the same index lists");
  cli.parse(argc, argv);
  if ((nx > 0) != (ny > 0)) {
    if (rank == 0) std::cerr << "bench/redist: give --nx and --ny together" << std::endl;
    MPI_Finalize();
    return 2;
  }
  if (nx > 0) n = nx * ny;
  else estuary::gen::grid_shape(n, nx, ny);

  try {
    auto pair_of = [&](int r) {
      return messages > 0 ? estuary::gen::messages_pair(nx, ny, messages, r, ranks)
                          : estuary::gen::DecompPair{estuary::gen::from_name(src_kind, nx, ny, r, ranks),
                                                     estuary::gen::from_name(dst_kind, nx, ny, r, ranks)};
    };
    const estuary::gen::DecompPair pair = pair_of(rank);
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

    // The plain-MPI references (not part of estuary's set-up), on their own output arrays.
    std::optional<bench::MpiReference> ref;
    std::vector<std::vector<double>> b_a2a, b_dt;
    if (references) {
      ref.emplace([&](int r) {
        estuary::gen::DecompPair p = pair_of(r);
        return std::make_pair(std::move(p.src), std::move(p.dst));
      }, n, MPI_COMM_WORLD);
      b_a2a.assign(static_cast<std::size_t>(fields), std::vector<double>(static_cast<std::size_t>(dst.size()), -2.0));
      b_dt.assign(static_cast<std::size_t>(fields), std::vector<double>(static_cast<std::size_t>(dst.size()), -3.0));
    }
    auto run_alltoallv = [&] {
      for (int f = 0; f < fields; ++f) ref->alltoallv(a[f].data(), b_a2a[f].data());
    };
    auto run_datatype = [&] {
      for (int f = 0; f < fields; ++f) ref->datatype_exchange(a[f].data(), b_dt[f].data());
    };
    // The slowest rank's time of one call.
    auto timed = [&](auto&& run) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double s = MPI_Wtime();
      run();
      return bench::max_over_ranks(MPI_Wtime() - s, MPI_COMM_WORLD);
    };

    // Exchanges: warm-up, then the slowest rank's time per iteration, estuary and the references
    // alternating so that the machine's load falls on all alike.
    run_once();
    if (ref) { run_alltoallv(); run_datatype(); }
    const estuary::ExchangeTimers t_before = ex ? ex->timers() : estuary::ExchangeTimers{};
    std::vector<double> times, a2a_times, dt_times;
    for (int it = 0; it < iterations; ++it) {
      times.push_back(timed(run_once));
      if (ref) {
        a2a_times.push_back(timed(run_alltoallv));
        dt_times.push_back(timed(run_datatype));
      }
    }
    // Where estuary's exchange time went (the slowest rank's seconds per exchange).
    const estuary::ExchangeTimers t_after = ex ? ex->timers() : estuary::ExchangeTimers{};
    auto per_run = [&](double after, double before) {
      return bench::max_over_ranks((after - before) / iterations, MPI_COMM_WORLD);
    };
    const double pack_s = per_run(t_after.pack_s, t_before.pack_s);
    const double copy_s = per_run(t_after.copy_s, t_before.copy_s);
    const double wait_s = per_run(t_after.wait_s, t_before.wait_s);
    const double unpack_s = per_run(t_after.unpack_s, t_before.unpack_s);
    // Which paths the messages took, per exchange, summed over the ranks.
    auto messages_per_run = [&](std::int64_t after, std::int64_t before) {
      long n = static_cast<long>((after - before) / iterations), all = 0;
      MPI_Allreduce(&n, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      return all;
    };
    const long typed_sends = messages_per_run(t_after.typed_sends, t_before.typed_sends);
    const long typed_recvs = messages_per_run(t_after.typed_recvs, t_before.typed_recvs);
    const long zero_copy_recvs = messages_per_run(t_after.zero_copy_recvs, t_before.zero_copy_recvs);
    // The three must agree element for element (the same doubles, moved, not computed).
    long differ = 0;
    if (ref)
      for (int f = 0; f < fields; ++f)
        for (std::size_t i = 0; i < b[f].size(); ++i)
          differ += b[f][i] != b_a2a[f][i] || b[f][i] != b_dt[f][i];
    long differ_all = 0;
    MPI_Allreduce(&differ, &differ_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (differ_all > 0) {
      if (rank == 0)
        std::cerr << "bench/redist: estuary and the MPI references disagree on " << differ_all
                  << " destination elements" << std::endl;
      MPI_Abort(MPI_COMM_WORLD, 3);
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
    double copy_all_s = 1e300;
    {
      const std::size_t share = bytes / static_cast<std::size_t>(ranks);
      std::vector<char> from(share, 1), to(share, 0);
      for (int it = 0; it < std::max(3, iterations / 2); ++it) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double s = MPI_Wtime();
        std::memcpy(to.data(), from.data(), share);
        MPI_Barrier(MPI_COMM_WORLD);  // until the last rank's copy is done (ranks may share cores)
        copy_all_s = std::min(copy_all_s, bench::max_over_ranks(MPI_Wtime() - s, MPI_COMM_WORLD));
        if (share > 0) from[static_cast<std::size_t>(it) % share] += to[share / 2];
      }
    }

    if (rank == 0) {
      const double med = bench::median(times);
      const double gbps = bytes / med / 1e9, memcpy_gbps = bytes / memcpy_s / 1e9;
      const estuary::Schedule& schedule = adaptive ? adaptive->schedule() : redist->schedule();
      const estuary::ScheduleStats ss = schedule.stats();
      bench::Json js;
      js.add("bench", "redist").add("algorithm", algorithm)
                       .add("choice", adaptive ? adaptive->choice().name() : schedule.algorithm)
                       .add("tuning_runs", tuning_runs)
                       .add("latency_probe_s", adaptive ? adaptive->choice().probe_seconds : 0.0)
                       .add("ranks", ranks).add("n", n).add("fields", fields)
                       .add("src", messages > 0 ? "algorithm1" : src_kind).add("dst", messages > 0 ? "algorithm1" : dst_kind)
                       .add("messages_per_process", messages)
                       .add("nx", nx).add("ny", ny)
                       .add("bytes_moved", bytes)
                       .add("setup_s", setup_s).add("plan_s", plan_max_s)
                       .add("plan_cut_s", cut_s).add("plan_to_directory_s", to_dir_s)
                       .add("plan_match_s", match_s).add("plan_replies_s", replies_s)
                       .add("setup_peak_rss_mb", setup_mb).add("setup_heap_peak_mb", setup_heap_mb)
                       .add("exchange_s_min", *std::min_element(times.begin(), times.end()))
                       .add("exchange_s_median", med)
                       .add("exchange_pack_s", pack_s).add("exchange_copy_s", copy_s)
                       .add("exchange_wait_s", wait_s).add("exchange_unpack_s", unpack_s)
                       .add("typed_sends", typed_sends).add("typed_recvs", typed_recvs)
                       .add("zero_copy_recvs", zero_copy_recvs);
      if (ref) {
        const double a2a = bench::median(a2a_times), dt = bench::median(dt_times);
        js.add("alltoallv_s_min", *std::min_element(a2a_times.begin(), a2a_times.end()))
            .add("alltoallv_s_median", a2a)
            .add("datatype_s_min", *std::min_element(dt_times.begin(), dt_times.end()))
            .add("datatype_s_median", dt)
            .add("estuary_over_alltoallv", med / a2a).add("estuary_over_datatype", med / dt);
      }
      js.add("gbps", gbps).add("memcpy_gbps", memcpy_gbps)
                       .add("fraction_of_memcpy", gbps / memcpy_gbps)
                       .add("copy_all_ranks_s", copy_all_s).add("exchange_over_copy_all_ranks", med / copy_all_s)
                       .add("messages_total", ps.messages_total).add("messages_max", ps.messages_max)
                       .add("messages_avg", ps.messages_avg).add("messages_min", ps.messages_min)
                       .add("stages", ss.stages)
                       .add("errors", bad_all);
      std::cout << js.str() << std::endl;
    }
    ex.reset();  // requests and datatypes go before MPI does
    ref.reset();
    MPI_Finalize();
    return bad_all == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}
