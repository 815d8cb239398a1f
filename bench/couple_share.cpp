// bench/couple_share — issue 24's shared remaps: the set-up time and memory of N couplings that
// use one weight file, with each coupling setting up its own Remap (ESTUARY_SHARE_REMAPS=0, as
// before) and with the couplings sharing one (the default).
//
//   mpirun -n 4 build/bench/couple_share [--src 360x180] [--dst 300x200] [--links 4]
//                                        [--couplings 1,10] [--rounds 3] [--location dst]
//                                        [--order bfb] [--dir /tmp/estuary_couple_share]
//
// Ranks [0, P/2) are the component "atm" (source grid, cyclic points), [P/2, P) "ocn" (target
// grid, blocks); on one rank one component holds both. Rank 0 writes a synthetic SCRIP file
// (--links links per target point, scrambled columns). Each case constructs a Component,
// defines N fields each way and ends the definition (the set-up: Remaps, plans, executors),
// moves one coupling time and terminates. Per case, slowest rank, fastest of --rounds rounds:
// setup_s (the enddef), heap_mb (estuary's C++ heap held after enddef, above what was held
// before the Component: bench/heap_meter), heap_run_mb (the same after one coupling time: the
// executors' buffers are made at the first transfer), rss_mb (VmRSS growth over the same span, MPI's
// buffers included; the first case of a process pays MPI's own start-up in it), remaps (Remap
// set-ups done). Each N runs three ways: N couplings with a Remap each (shared 0), N couplings
// sharing (shared 1), and one multi-field coupling of N fields (couplings 1) — the baseline of
// issue 24. A last line per N gives the ratios shared / one coupling of one field, shared /
// the multi-field coupling, and own / shared.
// One JSON object per line.
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/remap.hpp"
#include "estuary/settings.hpp"
#include "estuary/weights.hpp"
#include "heap_meter.hpp"

using namespace estuary;
using i64 = std::int64_t;

namespace {

std::pair<i64, i64> dims(const std::string& s) {
  const auto x = s.find('x');
  return {std::stoll(s.substr(0, x)), std::stoll(s.substr(x + 1))};
}

// n couplings of one field each, or (multi) one coupling of n fields (A_F0:A_F1:... O_F0:...).
std::string namcouple(int n, bool multi, i64 snx, i64 sny, i64 dnx, i64 dny, const std::string& mapping) {
  std::string s = " $NFIELDS\n " + std::to_string(multi ? 1 : n) + "\n $END\n $RUNTIME\n 3600\n $END\n $NLOGPRT\n 0\n $END\n" +
                  " $NNOREST\n T\n $END\n $STRINGS\n";
  const std::string rest = " 1 3600 1 rst.nc EXPORTED\n" + std::to_string(snx) + " " + std::to_string(sny) + " " +
                           std::to_string(dnx) + " " + std::to_string(dny) + " agrd ogrd\nR 0 R 0\nMAPPING\nw.nc " + mapping + "\n";
  std::string srcs, dsts;
  for (int k = 0; k < n; ++k) {
    if (!multi) s += "A_F" + std::to_string(k) + " O_F" + std::to_string(k) + rest;
    srcs.append(k ? ":" : "").append("A_F").append(std::to_string(k));
    dsts.append(k ? ":" : "").append("O_F").append(std::to_string(k));
  }
  if (multi) s += srcs + " " + dsts + rest;
  return s + " $END\n";
}

struct Sample {
  double setup_s = 0, heap_mb = 0, heap_run_mb = 0, rss_mb = 0;
  i64 remaps = 0;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::string src_dims = "360x180", dst_dims = "300x200", location = "dst", order = "bfb";
  std::string dir = "/tmp/estuary_couple_share";
  i64 per_row = 4;
  std::vector<i64> counts = {1, 10};
  int rounds = 3;
  bench::Cli cli("bench/couple_share: set-up time and memory of N couplings of one weight file, own or shared Remaps");
  cli.opt("src", src_dims, "source grid NXxNY");
  cli.opt("dst", dst_dims, "target grid NXxNY");
  cli.opt("links", per_row, "links per target point")->check(CLI::PositiveNumber);
  cli.list("couplings", counts, "coupling counts, comma-separated (the first is the baseline)");
  cli.opt("rounds", rounds, "rounds; the fastest counts")->check(CLI::PositiveNumber);
  cli.opt("location", location, "MAPPING location (src or dst)");
  cli.opt("order", order, "MAPPING order (bfb or sum)");
  cli.opt("dir", dir, "folder for the weight file and the namcouple");
  cli.parse(argc, argv);
  const auto [snx, sny] = dims(src_dims);
  const auto [dnx, dny] = dims(dst_dims);
  const i64 ns = snx * sny, nd = dnx * dny;
  const std::string mapping = location + " " + order;
  if (r == 0) {
    std::filesystem::create_directories(dir);
    Links l;
    for (i64 row = 0; row < nd; ++row)
      for (i64 j = 0; j < per_row; ++j) l.add(row, (row * 7919 + j * 104729) % ns, 1.0 / static_cast<double>(per_row));
    write_weights(dir + "/w.nc", l, ns, nd, MPI_COMM_SELF);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  const bool solo = p == 1, atm = solo || r < p / 2, ocn = solo || r >= p / 2;
  const int side_ranks = solo ? 1 : (atm ? p / 2 : p - p / 2), index = solo ? 0 : (atm ? r : r - p / 2);
  const Decomp sd = atm ? gen::cyclic(ns, index, side_ranks) : Decomp::empty(ns);
  const Decomp dd = ocn ? gen::block(nd, index, side_ranks) : Decomp::empty(nd);

  // mode 0: n couplings, each its own Remap; 1: n couplings sharing; 2: one coupling of n fields.
  auto run_case = [&](int n, int mode) {
    const bool share = mode != 0;
    if (r == 0) std::ofstream(dir + "/namcouple") << namcouple(n, mode == 2, snx, sny, dnx, dny, mapping);
    if (share) ::unsetenv("ESTUARY_SHARE_REMAPS");
    else ::setenv("ESTUARY_SHARE_REMAPS", "0", 1);
    Settings::reload();
    MPI_Barrier(MPI_COMM_WORLD);
    Sample s;
    const std::size_t heap0 = bench::heap::current();
    const double rss0 = bench::proc_status_mb("VmRSS:");
    const i64 remaps0 = Remap::setups();
    {
      ComponentOptions o;
      o.config = dir + "/namcouple";
      o.directory = dir;
      Component comp(solo ? "solo" : atm ? "atm" : "ocn", o);
      std::vector<int> ov, iv;
      if (atm) {
        const int part = comp.def_partition(sd, "agrd");
        for (int k = 0; k < n; ++k) ov.push_back(comp.def_var("A_F" + std::to_string(k), part, Direction::out));
      }
      if (ocn) {
        const int part = comp.def_partition(dd, "ogrd");
        for (int k = 0; k < n; ++k) iv.push_back(comp.def_var("O_F" + std::to_string(k), part, Direction::in));
      }
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      comp.enddef();
      s.setup_s = MPI_Wtime() - t0;
      s.heap_mb = static_cast<double>(bench::heap::current() - heap0) / (1 << 20);
      s.rss_mb = bench::proc_status_mb("VmRSS:") - rss0;
      s.remaps = Remap::setups() - remaps0;
      std::vector<double> x(static_cast<std::size_t>(sd.size()), 1.0), y(static_cast<std::size_t>(dd.size()));
      for (int v : ov) comp.put(v, 0, x);
      for (int v : iv) comp.get(v, 0, y);
      s.heap_run_mb = static_cast<double>(bench::heap::current() - heap0) / (1 << 20);
      comp.terminate();
    }
    s.setup_s = bench::max_over_ranks(s.setup_s, MPI_COMM_WORLD);
    s.heap_mb = bench::max_over_ranks(s.heap_mb, MPI_COMM_WORLD);
    s.heap_run_mb = bench::max_over_ranks(s.heap_run_mb, MPI_COMM_WORLD);
    s.rss_mb = bench::max_over_ranks(s.rss_mb, MPI_COMM_WORLD);
    return s;
  };

  run_case(1, 1);  // warm-up: MPI connections, the file in the page cache
  std::map<std::pair<int, int>, Sample> best;
  for (int round = 0; round < rounds; ++round)
    for (i64 n : counts)
      for (int mode : {0, 1, 2}) {
        if (mode == 2 && n == 1) continue;  // the same as one coupling
        const Sample s = run_case(static_cast<int>(n), mode);
        auto [it, fresh] = best.try_emplace({static_cast<int>(n), mode}, s);
        if (!fresh) {
          it->second.setup_s = std::min(it->second.setup_s, s.setup_s);
          it->second.heap_mb = std::min(it->second.heap_mb, s.heap_mb);
          it->second.heap_run_mb = std::min(it->second.heap_run_mb, s.heap_run_mb);
          it->second.rss_mb = std::min(it->second.rss_mb, s.rss_mb);
        }
      }
  if (r == 0) {
    for (const auto& [key, s] : best)
      std::printf("%s\n", bench::Json()
                              .add("bench", "couple_share")
                              .add("ranks", p)
                              .add("src_points", ns)
                              .add("dst_points", nd)
                              .add("links", nd * per_row)
                              .add("mapping", mapping)
                              .add("fields", key.first)
                              .add("couplings", key.second == 2 ? 1 : key.first)
                              .add("shared", key.second == 1 ? 1 : 0)
                              .add("rounds", rounds)
                              .add("setup_s", s.setup_s)
                              .add("heap_mb", s.heap_mb)
                              .add("heap_run_mb", s.heap_run_mb)
                              .add("rss_mb", s.rss_mb)
                              .add("remaps", s.remaps)
                              .str()
                              .c_str());
    const Sample one = best.at({static_cast<int>(counts.front()), 1});
    for (i64 n : counts) {
      if (n == counts.front()) continue;
      const Sample sh = best.at({static_cast<int>(n), 1}), own = best.at({static_cast<int>(n), 0});
      const Sample multi = best.at({static_cast<int>(n), 2});
      std::printf("%s\n", bench::Json()
                              .add("bench", "couple_share_ratio")
                              .add("ranks", p)
                              .add("couplings", n)
                              .add("vs_couplings", counts.front())
                              .add("setup_shared_over_one", sh.setup_s / one.setup_s)
                              .add("heap_shared_over_one", sh.heap_mb / one.heap_mb)
                              .add("setup_shared_over_multifield", sh.setup_s / multi.setup_s)
                              .add("heap_shared_over_multifield", sh.heap_mb / multi.heap_mb)
                              .add("heap_run_shared_over_multifield", sh.heap_run_mb / multi.heap_run_mb)
                              .add("setup_own_over_shared", own.setup_s / sh.setup_s)
                              .add("heap_own_over_shared", own.heap_mb / sh.heap_mb)
                              .str()
                              .c_str());
    }
  }
  MPI_Finalize();
  return 0;
}
