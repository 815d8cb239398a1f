// bench/sim — paper 004's skeletons replayed on simulated machines (SimGrid), over a rank sweep.
//
//   build/bench/sim --pattern allreduce --ranks 1e3,1e4,1e5 --topology dragonfly
//   build/bench/sim --pattern transposition --algo ring-4 --ranks 100,1e3,1e4 --topology fattree
//   build/bench/sim --pattern halo --width 20 --ranks 1e3,1e4 --platform torus-L
// Options: --pattern allreduce|halo|transposition|coupling; --ranks list; --topology
// torus|fattree|dragonfly (a machine just large enough, rebuilt per rank count) or --platform
// <paper 004 Table 1 name>; --routing minimal|valiant|ugal|ugal-l; --bw GB/s (12.5), --lat ns (100); --algo burst|bruck|ring-<k>
// (ring-1), --transpositions 1..3 (3); --width (20); --k radix (2), --doubles (3), --repeat (50,
// GCR's 2N with N = 25); --nx --ny --nz (paper 004 Table 3: 28800, 14400, 256); --points
// (coupling, 10^8), --dst-chunk c (coupling: 0 block, else round-robin chunks of c points), --fields,
// coupling --algo p2p|butterfly|adaptive (--skip mask for butterfly; adaptive replays the
// candidates and reports the choice); coupling --src-kind K --dst-kind K (gen::by_name kinds:
// block, cyclic, random, rows2d, cols2d): the plan the ranks would build from those
// decompositions (sources on the first half of the ranks, destinations on the rest), built in
// this one process by sim::plan_flows, replayed with the engine's own schedules (also reports
// the plan's build time and the peak memory of this process); --matrix-bins N (the rank-to-rank byte matrix of Fig. 9d,
// summed into N x N blocks); --overhead ns (CPU time per message sent or received, LogP's o);
// topology switch (one crossbar: alpha-beta's machine); --crosstraffic; --network cm02|ib
// (SimOptions::network); --stack-kib; --cfg name:value,... (more SimGrid settings).
// One JSON object per rank count: simulated time, wall times (platform build, replay) and the
// peak resident memory of the simulating process (each run is a child process of its own).
//
//   mpirun -n 8 build/bench/sim --calibrate [--algo ring-2] [--nx 256 --ny 64 --nz 256]
// measures latency and bandwidth here by ping-pong (ranks 0 and 1), times a real slab
// transposition (estuary's Redist, the algorithm given) on all ranks, replays the very schedules
// of every rank on a one-switch platform with those link parameters, and prints the ratio.
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <sstream>

#include "bench_util.hpp"
#include "sim_config.hpp"
#include "estuary/decomp.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/redist.hpp"
#include "estuary/sim.hpp"

using namespace estuary::sim;

namespace {

// The most square px x py = ranks, px <= py.
void grid2(std::int64_t ranks, int& px, int& py) {
  px = static_cast<int>(std::sqrt(static_cast<double>(ranks)));
  while (px > 1 && ranks % px != 0) --px;
  py = static_cast<int>(ranks / px);
}

unsigned root_up(std::int64_t n, int d) {
  unsigned r = static_cast<unsigned>(std::pow(static_cast<double>(n), 1.0 / d));
  while (std::pow(static_cast<double>(r), d) < static_cast<double>(n)) ++r;
  return std::max(r, 1u);
}

// The most cubic a >= b >= c with a * b * c == n and c >= 2 (largest c, then largest b), or
// false when n has no such factorisation that is not too flat (a <= 8 c).
bool cube_factors(std::int64_t n, unsigned& a, unsigned& b, unsigned& c) {
  for (std::int64_t z = root_up(n, 3); z >= 2; --z) {
    if (n % z != 0) continue;
    const std::int64_t m = n / z;
    for (std::int64_t y = static_cast<std::int64_t>(std::sqrt(static_cast<double>(m))); y >= z; --y)
      if (m % y == 0 && m / y >= y) {
        if (m / y > 8 * z) return false;
        a = static_cast<unsigned>(m / y), b = static_cast<unsigned>(y), c = static_cast<unsigned>(z);
        return true;
      }
  }
  return false;
}

// A machine of the named topology with at least `ranks` hosts. Where the rank count allows,
// the machine has exactly `ranks` hosts (the job fills it): rank r on host r then has the same
// neighbours' offsets everywhere, as on a machine allocated to the job, rather than rows of
// ranks wrapping irregularly around an oversized torus (which also costs SimGrid 10x: flows
// of unequal rates finish one by one, each re-solving the sharing).
Platform machine(const std::string& topology, std::int64_t ranks) {
  if (topology == "torus") {
    if (unsigned a, b, c; cube_factors(ranks, a, b, c)) return Platform::torus(a, b, c);
    const unsigned a = root_up(ranks, 3);
    unsigned c = a;  // shrink the last dimension while the hosts still suffice
    while (c > 1 && std::int64_t{a} * a * (c - 1) >= ranks) --c;
    return Platform::torus(a, a, c);
  }
  if (topology == "fattree") {
    for (int levels = 3; levels <= 4; ++levels)  // exactly `ranks` hosts (5 levels: SimGrid builds too slowly)
      if (const unsigned k = root_up(ranks, levels); std::pow(static_cast<double>(k), levels) == static_cast<double>(ranks))
        return Platform::fat_tree(static_cast<unsigned>(levels), k);
    return Platform::fat_tree(3, root_up(ranks, 3));
  }
  // One crossbar switch: every route is host - switch - host (two links), contention only on a
  // host's own links (the alpha-beta model's machine).
  if (topology == "switch") return Platform::fat_tree(1, static_cast<unsigned>(ranks));
  if (topology == "dragonfly") {
    // 4 hosts a router, groups x chassis x routers = ranks / 4 with groups <= routers (SimGrid
    // needs routers >= groups) and chassis between them, when ranks / 4 factors so.
    if (unsigned a, b, c; ranks % 4 == 0 && cube_factors(ranks / 4, a, b, c)) return Platform::dragonfly(c, b, a, 4);
    // Otherwise groups = chassis = routers (SimGrid needs routers >= groups).
    const unsigned g = root_up((ranks + 3) / 4, 3);
    return Platform::dragonfly(g, g, g, 4);
  }
  throw estuary::Error("unknown topology '" + topology + "'", "bench/sim", "use torus, fattree, dragonfly or switch");
}

// One-way time of a `bytes` message from `iters` round trips between ranks 0 and 1 (others
// idle), or, with `all_pairs`, between ranks 2i and 2i+1 all at once: the load of a real
// exchange, where every rank competes for the cores and the memory bus. The slowest pair's.
double pingpong(int bytes, int iters, bool all_pairs) {
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const bool active = all_pairs ? (rank ^ 1) < p : rank < 2;
  std::vector<char> buf(static_cast<std::size_t>(bytes));
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; active && i < iters; ++i) {
    if (rank % 2 == 0) {
      MPI_Send(buf.data(), bytes, MPI_CHAR, rank + 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), bytes, MPI_CHAR, rank + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf.data(), bytes, MPI_CHAR, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), bytes, MPI_CHAR, rank - 1, 0, MPI_COMM_WORLD);
    }
  }
  return bench::max_over_ranks(active ? (MPI_Wtime() - t0) / (2.0 * iters) : 0.0, MPI_COMM_WORLD);
}

// Time of a `bytes` message when every rank sends one to rank + 1 and receives one from rank - 1
// at once (a ring shift, MPI_Sendrecv): the load of one stage of a ring-k or pairwise exchange,
// where all ranks move data together and compete for the cores and the memory bus. The slowest
// rank's time per shift.
double shift(int bytes, int iters) {
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::vector<char> out(static_cast<std::size_t>(bytes)), in(static_cast<std::size_t>(bytes));
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i)
    MPI_Sendrecv(out.data(), bytes, MPI_CHAR, (rank + 1) % p, 0, in.data(), bytes, MPI_CHAR, (rank + p - 1) % p, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return bench::max_over_ranks((MPI_Wtime() - t0) / iters, MPI_COMM_WORLD);
}


// The command line; options of one mode are ignored by the other, and defaults that differ by
// mode (--algo, --nx, --ny, --nz) are filled in after parsing when not given.
struct Options {
  bool calibrate = false;
  std::string pattern = "allreduce", topology = "dragonfly", platform, routing = "minimal", network = "cm02";
  std::vector<std::int64_t> ranks{64, 512, 4096};
  std::string algo;
  std::int64_t nx = 0, ny = 0, nz = 0, width = 20, points = 100000000, dst_chunk = 0, matrix_bins = 0;
  std::uint64_t skip = 0;
  std::string src_kind, dst_kind;  // coupling: a plan without the ranks
  int k = 2, doubles = 3, repeat = 50, transpositions = 3, fields = 1, stack_kib = 0, ranks_per_host = 1;
  double bw_GBps = 12.5, lat_ns = 100, overhead_ns = 0;
  bool crosstraffic = false;
  std::vector<std::string> cfg;
  // --config: a coupled set-up's own exchanges (bench/sim_config.cpp)
  std::string config, rundir = ".", workdir;
  std::vector<std::string> components, grids, locations{"src", "dst"};
  std::vector<std::int64_t> total_ranks;
};

int calibrate(const Options& args) {
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 2) {
    std::cerr << "bench/sim --calibrate: run under mpirun with 2 or more ranks\n";
    return 1;
  }
  // Three calibrations: one pair alone (the usual ping-pong), all pairs at once, and every rank
  // at once (a ring shift: each rank sends and receives, as in an exchange stage).
  const int big = 4 << 20;
  double lat[3], bw[3];
  for (int all = 0; all < 2; ++all) {
    lat[all] = pingpong(8, 2000, all != 0);
    bw[all] = big / std::max(pingpong(big, 20, all != 0) - lat[all], 1e-9);
  }
  lat[2] = shift(8, 2000);
  bw[2] = big / std::max(shift(big, 20) - lat[2], 1e-9);
  // Packing and unpacking are memory copies the network model does not see: their speed with
  // every rank copying at once (the cores and the memory bus shared as in the exchange).
  double copy_Bps = 0;
  {
    std::vector<char> from(static_cast<std::size_t>(big), 1), to(static_cast<std::size_t>(big));
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < 20; ++i) {
      std::copy(from.begin(), from.end(), to.begin());
      from[static_cast<std::size_t>(i)] = to[static_cast<std::size_t>(big - 1 - i)];  // keep the copies
    }
    copy_Bps = 20.0 * big / bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD);
  }
  // A slab transposition (a) -> (b) of an nx x ny x nz grid of doubles: x slabs to z slabs.
  const std::int64_t nx = args.nx ? args.nx : 256, ny = args.ny ? args.ny : 64, nz = args.nz ? args.nz : 256;
  auto lo = [](std::int64_t n, int i, int q) { return n * i / q; };
  const estuary::Decomp src = estuary::Decomp::box({nx, ny, nz}, {lo(nx, rank, p), 0, 0},
                                                   {lo(nx, rank + 1, p) - lo(nx, rank, p), ny, nz});
  const estuary::Decomp dst = estuary::Decomp::box({nx, ny, nz}, {0, 0, lo(nz, rank, p)},
                                                   {nx, ny, lo(nz, rank + 1, p) - lo(nz, rank, p)});
  const std::string algo = args.algo.empty() ? "ring-2" : args.algo;
  estuary::Redist rd(src, dst, MPI_COMM_WORLD, {algo, {}});
  std::vector<double> a(static_cast<std::size_t>(src.size()), 1.0), b(static_cast<std::size_t>(dst.size()));
  for (int w = 0; w < 3; ++w) rd.run({estuary::Field(a, b)});
  std::vector<double> times;
  for (int it = 0; it < 20; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    rd.run({estuary::Field(a, b)});
    times.push_back(bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD));
  }
  const auto all_stages = gather_rank_stages(rank_stages(rd.schedule(), 8), MPI_COMM_WORLD);
  if (rank == 0) {
    const double real = bench::median(times);
    // With packing: each stage first copies what it sends and receives, at copy_Bps.
    auto with_copies = all_stages;
    for (auto& stages : with_copies)
      for (RankStage& st : stages) {
        std::int64_t bytes = 0;
        for (const Msg& m : st.sends) bytes += m.bytes;
        for (const Msg& m : st.recvs) bytes += m.bytes;
        st.compute_s = static_cast<double>(bytes) / copy_Bps;
      }
    static const char* const names[] = {"one pair", "all pairs at once", "all pairs at once + packing",
                                        "every rank at once (shift)", "every rank at once (shift) + packing"};
    for (int c = 0; c < 5; ++c) {
      const int m = c < 2 ? c : c == 2 ? 1 : 2;  // which measurement
      const bool packing = c == 2 || c == 4;
      // One switch: host - switch - host is two links, so each gets half the measured latency.
      Platform pl = Platform::fat_tree(1, static_cast<unsigned>(p));
      pl.latency_s = lat[m] / 2;
      pl.bandwidth_Bps = bw[m];
      const SimResult r = simulate(pl, *table_pattern("real " + algo, packing ? with_copies : all_stages));
      bench::Json j;
      j.add("bench", "sim-calibrate").add("ranks", p).add("algorithm", algo);
      j.add("grid", std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz));
      j.add("calibration", names[c]);
      j.add("pingpong_latency_s", lat[m]).add("pingpong_bandwidth_Bps", bw[m]);
      if (packing) j.add("copy_Bps", copy_Bps);
      j.add("real_median_s", real).add("real_min_s", *std::min_element(times.begin(), times.end()));
      j.add("simulated_s", r.simulated_s).add("ratio_real_over_sim", real / r.simulated_s);
      j.add("platform", r.platform);
      std::cout << j.str() << std::endl;
    }
  }
  return 0;
}


// The bytes each rank sends each rank over all stages (paper 004 Fig. 9d), summed into
// bins x bins blocks of consecutive ranks: [[row of sender block 0], ...].
std::vector<std::vector<double>> comm_matrix(const Pattern& p, int bins) {
  const int n = p.ranks();
  bins = std::max(1, std::min(bins, n));
  std::vector<double> m(static_cast<std::size_t>(bins) * static_cast<std::size_t>(bins), 0.0);
  RankStage st;
  auto bin = [&](int r) { return static_cast<std::size_t>(static_cast<std::int64_t>(r) * bins / n); };
  for (int r = 0; r < n; ++r)
    for (int s = 0; s < p.stages(); ++s) {
      p.stage(r, s, st);
      for (const Msg& msg : st.sends) m[bin(r) * static_cast<std::size_t>(bins) + bin(msg.peer)] += static_cast<double>(msg.bytes);
    }
  std::vector<std::vector<double>> rows(static_cast<std::size_t>(bins));
  for (int i = 0; i < bins; ++i)
    rows[static_cast<std::size_t>(i)].assign(m.begin() + i * static_cast<std::ptrdiff_t>(bins), m.begin() + (i + 1) * static_cast<std::ptrdiff_t>(bins));
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  Options args;
  bench::Cli cli("bench/sim: paper 004's skeletons replayed on simulated machines (SimGrid), one JSON line per rank count");
  cli.flag("calibrate", args.calibrate, "under mpirun: time a real slab transposition and compare with its replay");
  cli.opt("pattern", args.pattern, "skeleton")->check(CLI::IsMember({"allreduce", "halo", "transposition", "coupling"}));
  cli.list("ranks", args.ranks, "simulated rank counts, comma-separated");
  cli.opt("topology", args.topology, "a machine just large enough: torus, fattree, dragonfly or switch");
  cli.opt("platform", args.platform, "a paper 004 Table 1 machine by name instead of --topology");
  cli.opt("routing", args.routing, "minimal, valiant, ugal (global knowledge) or ugal-l (SST/macro's local UGAL)");
  cli.opt("bw", args.bw_GBps, "link bandwidth, GB/s");
  cli.opt("lat", args.lat_ns, "link latency, ns");
  cli.opt("algo", args.algo, "transposition: burst|bruck|ring-<k> (ring-1); coupling: p2p|butterfly|adaptive (p2p); calibrate: a schedule (ring-2)");
  cli.opt("transpositions", args.transpositions, "transposition: 1..3")->check(CLI::Range(1, 3));
  cli.opt("width", args.width, "halo: width in points");
  cli.opt("k", args.k, "allreduce: radix")->check(CLI::Range(2, 64));
  cli.opt("doubles", args.doubles, "allreduce: doubles per call");
  cli.opt("repeat", args.repeat, "allreduce: calls (GCR's 2N with N = 25)");
  cli.opt("nx", args.nx, "grid points along x (default 28800; calibrate 256)");
  cli.opt("ny", args.ny, "grid points along y (default 14400; calibrate 64)");
  cli.opt("nz", args.nz, "grid points along z (default 256)");
  cli.opt("points", args.points, "coupling: points of the field");
  cli.opt("dst-chunk", args.dst_chunk, "coupling: 0 block, else round-robin chunks of this many points");
  cli.opt("fields", args.fields, "coupling: fields per exchange");
  cli.opt("skip", args.skip, "coupling butterfly: the stages skipped, as a bit mask");
  cli.opt("src-kind", args.src_kind,
          "coupling: the sources' decomposition (block, cyclic, random, rows2d, cols2d): with --dst-kind, the plan "
          "the ranks would build, made in this one process (sim::plan_flows)");
  cli.opt("dst-kind", args.dst_kind, "coupling: the destinations' decomposition (as --src-kind)");
  cli.opt("matrix-bins", args.matrix_bins, "the rank-to-rank byte matrix summed into N x N blocks (0: none)");
  cli.opt("overhead", args.overhead_ns, "CPU time per message sent or received, ns (LogP's o)");
  cli.flag("crosstraffic", args.crosstraffic, "SimGrid's cross-traffic");
  cli.opt("network", args.network, "SimGrid network model")->check(CLI::IsMember({"cm02", "ib"}));
  cli.opt("stack-kib", args.stack_kib, "actor stack size, KiB (0: SimGrid's)");
  cli.opt("ranks-per-host", args.ranks_per_host,
          "ranks a simulated host (a node): one flow per host pair and stage, intra-host messages free; the "
          "machine is sized for the hosts (1: a host per rank, exact)")
      ->check(CLI::Range(1, 1 << 20));
  cli.list("cfg", args.cfg, "more SimGrid settings name:value, comma-separated");
  cli.opt("config", args.config,
          "a namcouple or YAML: each coupling's Remap exchanges (sim::remap_flows) replayed for mapping at src and "
          "dst with --algo p2p,butterfly,adaptive (default p2p,butterfly); needs --component");
  cli.opt("component", args.components,
          "config: NAME:RANKS:KIND[:GRID[=RECIPE],...] (KIND serial, apple, box, orange, points), once per component");
  cli.opt("grid", args.grids, "config: GRID=RECIPE (an `estuary weights` grid recipe), repeatable");
  cli.opt("rundir", args.rundir, "config: where the configuration's weight files and grids.nc/masks.nc are");
  cli.opt("workdir", args.workdir, "config: where generated weights are cached (default: --rundir)");
  cli.list("locations", args.locations, "config: mapping locations to replay (src,dst)");
  cli.list("total-ranks", args.total_ranks, "config: total rank counts, the components scaled (default: as given)");
  cli.parse(argc, argv);
  if (!args.config.empty()) {
    bench::ConfigRun run;
    run.config = args.config;
    run.components = args.components;
    run.grids = args.grids;
    run.rundir = args.rundir;
    run.workdir = args.workdir;
    run.totals = args.total_ranks;
    run.locations = args.locations;
    if (!args.algo.empty()) {
      run.algos.clear();
      std::stringstream ss(args.algo);
      for (std::string a; std::getline(ss, a, ',');)
        if (!a.empty()) run.algos.push_back(a);
    }
    for (const std::string& a : run.algos)
      if (a != "p2p" && a != "butterfly" && a != "adaptive" && a != "none") {
        std::cerr << "bench/sim --config: unknown algorithm '" << a << "' (use p2p, butterfly, adaptive; none: the "
                     "exchanges' flows only)\n";
        return 2;
      }
    for (const std::string& l : run.locations)
      if (l != "src" && l != "dst") {
        std::cerr << "bench/sim --config: unknown location '" << l << "' (use src, dst)\n";
        return 2;
      }
    run.platform = [&](std::int64_t ranks) {
      const std::int64_t hosts = (ranks + args.ranks_per_host - 1) / args.ranks_per_host;
      Platform pl = args.platform.empty() ? machine(args.topology, hosts) : Platform::by_name(args.platform);
      pl.bandwidth_Bps = args.bw_GBps * 1e9;
      pl.latency_s = args.lat_ns * 1e-9;
      pl.routing = parse_routing(args.routing);
      return pl;
    };
    run.options.crosstraffic = args.crosstraffic;
    if (args.network == "ib") run.options.network = SimOptions::Network::ib;
    run.options.stack_kib = args.stack_kib;
    run.options.ranks_per_host = args.ranks_per_host;
    run.options.message_overhead_s = args.overhead_ns * 1e-9;
    run.options.config = args.cfg;
    run.matrix_bins = args.matrix_bins;
    return bench::simulate_config(run, &argc, &argv) == 0 ? 0 : 1;
  }
  if (args.calibrate) {
    MPI_Init(&argc, &argv);
    int rc = 1;
    try {
      rc = calibrate(args);
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
    }
    MPI_Finalize();
    return rc;
  }
  const std::string& kind = args.pattern;
  const std::string& topology = args.topology;
  const std::string& named = args.platform;
  const std::int64_t nx = args.nx ? args.nx : 28800, ny = args.ny ? args.ny : 14400, nz = args.nz ? args.nz : 256;
  SimOptions opt;
  opt.crosstraffic = args.crosstraffic;
  if (args.network == "ib") opt.network = SimOptions::Network::ib;
  opt.stack_kib = args.stack_kib;
  opt.ranks_per_host = args.ranks_per_host;
  opt.message_overhead_s = args.overhead_ns * 1e-9;
  opt.config = args.cfg;  // further SimGrid settings
  int failures = 0;
  for (std::int64_t ranks : args.ranks) {
    bench::Json j;
    try {
      const std::int64_t hosts = (ranks + args.ranks_per_host - 1) / args.ranks_per_host;
      Platform pl = named.empty() ? machine(topology, hosts) : Platform::by_name(named);
      pl.bandwidth_Bps = args.bw_GBps * 1e9;
      pl.latency_s = args.lat_ns * 1e-9;
      pl.routing = parse_routing(args.routing);
      std::unique_ptr<Pattern> p;
      CouplingSpec cspec;
      CouplingChoice choice;
      std::vector<estuary::butterfly::Flow> flows;  // --src-kind/--dst-kind: the plan's flows
      double plan_s = 0;
      std::string calgo;
      int px = 1, py = 1;
      grid2(ranks, px, py);
      if (kind == "allreduce") {
        p = allreduce({static_cast<int>(ranks), args.k, args.doubles, args.repeat});
      } else if (kind == "halo") {
        p = halo({nx, ny, nz, py, px, args.width, 8});  // more ranks along the longer x
      } else if (kind == "transposition") {
        TranspositionSpec s;
        s.nx = nx, s.ny = ny, s.nz = nz, s.cx = px, s.cy = py;
        s.algo = AlltoallAlgo::parse(args.algo.empty() ? "ring-1" : args.algo);
        s.transpositions = args.transpositions;
        p = transposition(s);
      } else if (kind == "coupling") {
        const int a = static_cast<int>(ranks - ranks / 2), b = static_cast<int>(ranks / 2);
        cspec = {args.points, a, b, 8, args.fields, args.dst_chunk};
        calgo = args.algo.empty() ? "p2p" : args.algo;
        const std::string& sk = args.src_kind;
        const std::string& dk = args.dst_kind;
        if (!sk.empty() || !dk.empty()) {
          // Plans without the ranks: every rank's decompositions, one at a time, in this process.
          const auto t0 = std::chrono::steady_clock::now();
          const std::int64_t n = cspec.points;
          const std::string src_kind = sk.empty() ? "block" : sk, dst_kind = dk.empty() ? "block" : dk;
          flows = plan_flows(
              a + b,
              [&](int r) { return r < a ? estuary::gen::by_name(src_kind, n, r, a) : estuary::Decomp::empty(n); },
              [&](int r) { return r >= a ? estuary::gen::by_name(dst_kind, n, r - a, b) : estuary::Decomp::empty(n); });
          plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          const std::int64_t eb = 8 * std::int64_t{cspec.fields};
          const std::string name = "coupling " + src_kind + " -> " + dst_kind;
          if (calgo == "p2p") p = p2p_pattern(name + " p2p", a + b, flows, eb);
          else if (calgo == "butterfly")
            p = butterfly_pattern(name + " butterfly", a + b, flows, args.skip, eb);
          else if (calgo != "adaptive")
            throw estuary::Error("unknown coupling algorithm '" + calgo + "'", "bench/sim", "use p2p, butterfly or adaptive");
          if (calgo == "adaptive") {
            choice = butterfly_adaptive(pl, name, a + b, flows, eb, opt);
            p = butterfly_pattern(choice.name, a + b, flows, choice.skip_mask, eb);
          }
        } else if (calgo == "p2p") p = coupling_p2p(cspec);
        else if (calgo == "butterfly") p = coupling_butterfly(cspec, args.skip);
        else if (calgo == "adaptive") p = coupling_butterfly(cspec, 0);  // replaced by the choice below
        else
          throw estuary::Error("unknown coupling algorithm '" + calgo + "'", "bench/sim", "use p2p, butterfly or adaptive");
      } else {
        throw estuary::Error("unknown pattern '" + kind + "'", "bench/sim",
                             "use allreduce, halo, transposition or coupling");
      }
      SimResult r;
      if (calgo == "adaptive") {
        if (flows.empty()) {
          choice = coupling_adaptive(pl, cspec, opt);
          p = coupling_butterfly(cspec, choice.skip_mask);
        }
        r = choice.result;
      } else {
        r = simulate(pl, *p, opt);
      }
      j.add("bench", "sim").add("pattern", r.pattern).add("platform", r.platform).add("ranks", r.ranks);
      j.add("routing", routing_name(pl.routing)).add("ranks_per_host", args.ranks_per_host);
      if (calgo == "adaptive") {
        nlohmann::ordered_json trials = nlohmann::ordered_json::array();
        for (const auto& t : choice.trials) trials.push_back({{"skip_mask", t.skip_mask}, {"simulated_s", t.simulated_s}});
        j.add("choice", choice.name).add("kernel_stages", choice.kernel_stages).add("skip_mask", choice.skip_mask);
        j.add("profiling_s", choice.profiling_s).add("trials", trials);
      }
      if (!flows.empty())
        j.add("plan_flows", static_cast<std::int64_t>(flows.size()))
            .add("plan_build_s", plan_s)
            .add("host_peak_rss_mb", bench::proc_status_mb("VmHWM"));
      if (kind == "halo" || kind == "transposition") j.add("grid", std::to_string(py) + "x" + std::to_string(px));
      j.add("stages", r.stages)
          .add("messages", r.messages)
          .add("bytes", r.bytes)
          .add("simulated_s", r.simulated_s)
          .add("wall_build_s", r.wall_build_s)
          .add("wall_run_s", r.wall_run_s)
          .add("cpu_build_s", r.cpu_build_s)
          .add("cpu_run_s", r.cpu_run_s)
          .add("peak_rss_mb", r.peak_rss_mb)
          .add("maxmin_precision", r.maxmin_precision)
          .add("detoured", r.detoured)
          .add("crosstraffic", r.crosstraffic ? "on" : "off")
          .add("network", r.network)
          .add("message_overhead_s", r.message_overhead_s);
      // The contention-free estimate: per stage, alpha (the route latency between two hosts
      // under one switch: two links) plus the busiest rank's bytes / bandwidth.
      // With several ranks a host, the busiest host of the hosts' pattern (what is replayed).
      const int k = args.ranks_per_host;
      j.add("alpha_beta_s", alpha_beta_s(k > 1 ? *per_host(*p, k) : *p, 2 * pl.latency_s, pl.bandwidth_Bps));
      if (args.matrix_bins > 0) j.add("matrix_bytes", comm_matrix(*p, static_cast<int>(args.matrix_bins)));
    } catch (const std::exception& e) {
      ++failures;
      j.add("bench", "sim").add("pattern", kind).add("ranks", ranks).add("error", std::string(e.what()));
    }
    std::cout << j.str() << std::endl;
  }
  return failures == 0 ? 0 : 1;
}
