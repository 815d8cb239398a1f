// bench/pingpong — the coupler's ping-pong toy of paper 000 (Sect. 3, Tables 1 and 2): an
// atmosphere on the T799-class reduced Gaussian grid and an ocean on the ORCA025-like tripolar
// grid (both with land) exchange fields through estuary::Component with 5-nearest-neighbour
// weights in both directions.
//
//   mpirun -n 4 build/bench/pingpong [--grids full|small|yac] [--methods nnn,conserv] [--iterations 10] [--warmup 2]
//                                    [--fields 10] [--order bfb|sum] [--atm-ranks P/2]
//                                    [--splits P/2] [--cases all|name,name,...] [--dir DIR]
//                                    [--timeline off|on|both] [--timeline-reps 3] [--noop-calls 50000]
//
// --grids yac (issue 24, the round trip a user measured against YAC): atm a 640x320 lon-lat grid,
// ocn the cubed sphere of 6 x 224 x 224 = 301 056 cells, no land; the weights of each method of
// --methods both ways: nnn (YAC's nnn, 4 nearest, inverse distance: nnn_weights) and conserv
// (first-order conservative, fracarea: conservative_weights), cached in DIR as the 5-NN files
// are; each 1f-* case runs once per method (case "nnn-1f-src"). The other cases are not offered.
// A breakdown line per case and step ("breakdown") gives where the barriered steps' time went
// (FieldTimers: copy, sync (header, acknowledgement, agreements), product, pack, wire, unpack,
// and the rest of the call), slowest rank, median over the ping-pongs.
//
// Ranks [0, a) are the component "atm" (T799), ranks [a, P) "ocn" (ORCA025); each holds a
// contiguous block of its grid. Weights: generated once over all ranks with estuary's
// distance_weights (neighbors = 5, CDO gendis's mask rule) and written as SCRIP files in DIR
// (default /tmp/estuary_pingpong_<grids>); a later run reuses them (delete DIR to regenerate).
// Every case then writes its own YAML configuration (MAPPING with those files) and constructs,
// defines and ends the definition of a fresh Component on every rank (collective over the world).
//
// One ping-pong at model time t: atm puts its fields at t, ocn gets them at t and puts them
// back, atm gets them at t (period = time step: every put and get acts). Two phases per case:
//  - unbarriered: `warmup` ping-pongs not timed, then `iterations` timed; each rank times every
//    ping-pong (from the start of its first call to the end of its last), the slowest rank
//    counts (max over ranks per ping-pong), then the median over ping-pongs (pipo_s);
//    pipo_mean_s is the slowest rank's whole loop / iterations (as the paper's totals);
//  - barriered (as the paper's Table 2 "with barriers"): an MPI_Barrier over the world before
//    each of the four steps (atm put, ocn get, ocn put, atm get), so that the work does not
//    overlap. map_a2o_s and map_o2a_s: the remap time of one exchange in each direction, from
//    the coupler's own timers (FieldTimers::remap_s: Remap::start on the source ranks, which
//    for location src is the product and the source-side rearrangement, plus Remap::finish on
//    the target ranks, which completes the crossing transfer and, for location dst, does the
//    product): slowest source rank + slowest target rank, summed over the direction's
//    couplings, median over ping-pongs. It includes the crossing transfer (the coupler's timers
//    do not separate it). pipo_barrier_s: the barriered ping-pong, median. Per step (same
//    order), slowest rank, median: steps_s (wall), steps_cpu_s (the thread's CPU time of the
//    put/get calls: steadier than wall time when ranks share cores with other jobs) and
//    steps_minflt (minor page faults); cpu_s is the sum of steps_cpu_s.
//
// Cases (--cases, comma-separated, default all of them):
//   1f-src, 1f-dst        1 field each way, mapping on the source / target ranks (both ways)
//   1f-larger, 1f-smaller 1 field, mapping on the ranks of the larger / smaller grid (ORCA025 /
//                         T799 for the full grids: dst / src for atm->ocn, src / dst back)
//   10f-10c               --fields fields each way as as many couplings (location src)
//   10f-1c                --fields fields each way as one multi-field coupling (SRC1:SRC2:...)
//   10f-bundle            one field each way with a bundle of --fields members
//   1f-scripr             1 field, weights generated at enddef (SCRIPR DISTWGT 5; estuary then
//                         maps at dst): the initialisation cost without weight files
// The 1f-src/dst/larger/smaller cases run once per atm rank count in --splits (the shapes of
// Table 1); the others on --atm-ranks ranks (Table 2).
//
// --timeline (the coupling timeline, docs/user-guide.md "Timeline (LUCIA)"): off (default), on
// (every case records it: `timeline: true` in the case's YAML), or both: every case runs
// --timeline-reps times without and with the recording, alternately (so that a drift of the
// machine's load falls on both alike), and a summary line per case gives the medians (and the
// fastest runs: pipo_best_*) and the overheads of the ping-pong (pipo_s) and of its CPU time
// (cpu_s), and the recording's own cost per call: after the ping-pongs every rank makes
// --noop-calls gets that do nothing (past the run's end; with the recording each is an event),
// timed in chunks of 1000 of which the fastest counts (noop_call_ns) and over all of them, the
// timeline's new blocks of memory and the machine's other jobs included (noop_call_mean_ns);
// times the calls of a ping-pong, against the ping-pong: record_share_pct and
// record_share_mean_pct. ESTUARY_TIMELINE is unset for the comparison.
// Timeline files are written into DIR at each case's terminate.
//
// Per case, one JSON line: init_s (Component constructor to the end of enddef, slowest rank),
// enddef_s, heap_peak_mb (peak of estuary's C++ heap during the case above what the benchmark
// held before it: bench/heap_meter; the largest over ranks, and per rank), vm_hwm_mb (the
// process's peak resident size so far, largest over ranks), a checksum of what atm got back
// (the same for every bfb case with the same fields, whatever the split), and the ratios
// (pipo, map, cpu) to the 1f-src case of the same split. The first line reports the weights (links, generation time or
// "cached").
#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "heap_meter.hpp"
#include "estuary/couple.hpp"
#include "estuary/settings.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/grid.hpp"
#include "estuary/weightgen.hpp"
#include "estuary/weights.hpp"

namespace {

using i64 = std::int64_t;
constexpr double kDt = 3600;  // time step = coupling period

// A list for a JSON line, each value rounded to `digits` significant digits (timings carry no more).
std::vector<double> list(const std::vector<double>& v, int digits = 4) {
  std::vector<double> r;
  for (double x : v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.*g", digits, x);
    r.push_back(std::strtod(b, nullptr));
  }
  return r;
}

struct Env {
  int rank = 0, ranks = 1;
  std::string dir;
  estuary::GridGen gt, go;  // atm (T799) and ocn (ORCA025) grids
  std::string w_a2o, w_o2a;  // weight file names, relative to dir
  bool yac = false;          // --grids yac: weights per method, in w_method
  std::map<std::string, std::pair<std::string, std::string>> w_method;  // method -> (a2o, o2a) files
  int fields = 10, iterations = 10, warmup = 2;
  std::string order = "bfb";
  int noop_calls = 50000;  // timeline: gets that do nothing, timed per call
};

std::string two(int k) {
  char b[16];
  std::snprintf(b, sizeof b, "%02d", k);
  return std::string(b);
}

// Field names: atm sends AS.., ocn receives OR.., ocn sends OS.., atm receives AR...
std::vector<std::string> names(const std::string& prefix, int n) {
  std::vector<std::string> v;
  for (int k = 1; k <= n; ++k) v.push_back(prefix + two(k));
  return v;
}

std::string yaml_list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "]";
}

struct Case {
  std::string name;
  int atm_ranks = 1;
  int nfields = 1;      // fields each way as the model sees them (def_var calls)
  int bundle = 1;       // members per field
  bool multi = false;   // the fields in one coupling
  bool scripr = false;  // weights generated at enddef
  std::string loc_a2o = "src", loc_o2a = "src";
  std::string location;  // the case's location word
  bool timeline = false;  // record the coupling timeline
  std::string method = "";  // --grids yac: "nnn" or "conserv"
};

// The configuration of a case: couplings atm -> ocn and ocn -> atm.
std::string config(const Env& e, const Case& c, double runtime) {
  std::ostringstream y;
  y << "# bench/pingpong case " << c.name << "\nruntime: " << static_cast<long>(runtime) << "\ntimeout: 600\n"
    << (c.timeline ? "timeline: true\n" : "") << "couplings:\n";
  const auto coupling = [&](const std::vector<std::string>& src, const std::vector<std::string>& dst, bool a2o) {
    const std::string sc = a2o ? "atm" : "ocn", dc = a2o ? "ocn" : "atm";
    const std::string sg = a2o ? "tgrid" : "ogrid", dg = a2o ? "ogrid" : "tgrid";
    y << "  - source: {component: " << sc << ", fields: " << yaml_list(src) << ", grid: " << sg << "}\n"
      << "    target: {component: " << dc << ", fields: " << yaml_list(dst) << ", grid: " << dg << "}\n"
      << "    period: " << static_cast<long>(kDt) << "\n    transforms:\n";
    if (c.scripr) y << "      - scripr: {method: distwgt, neighbors: 5}\n";
    else
      y << "      - mapping: {file: "
        << (e.yac ? (a2o ? e.w_method.at(c.method).first : e.w_method.at(c.method).second) : (a2o ? e.w_a2o : e.w_o2a))
        << ", location: " << (a2o ? c.loc_a2o : c.loc_o2a)
        << ", order: " << e.order << "}\n";
  };
  for (bool a2o : {true, false}) {
    const auto src = names(a2o ? "AS" : "OS", c.nfields), dst = names(a2o ? "OR" : "AR", c.nfields);
    if (c.multi || c.nfields == 1) coupling(src, dst, a2o);
    else
      for (int k = 0; k < c.nfields; ++k) coupling({src[static_cast<std::size_t>(k)]}, {dst[static_cast<std::size_t>(k)]}, a2o);
  }
  return y.str();
}

// The source side's timers of a coupling (FieldTimers::field "LABEL, source side").
bool source_side(const estuary::FieldTimers& t) {
  const std::string tail = ", source side";
  return t.field.size() >= tail.size() && t.field.compare(t.field.size() - tail.size(), tail.size(), tail) == 0;
}

// Sums of remap_s of this rank's coupling sides: [0] source side (put), [1] target side (get).
std::pair<double, double> remap_sums(const estuary::Component& comp) {
  double s = 0, d = 0;
  for (const estuary::FieldTimers& t : comp.timers()) {
    if (source_side(t)) s += t.remap_s;
    else d += t.remap_s;
  }
  return {s, d};
}

// The breakdown of a side's calls (FieldTimers), summed over this rank's couplings of the side.
constexpr int kParts = 6;
const char* const kPartNames[kParts] = {"copy", "sync", "product", "pack", "wire", "unpack"};
std::array<double, kParts> parts(const estuary::Component& comp, bool put_side) {
  std::array<double, kParts> p{};
  for (const estuary::FieldTimers& t : comp.timers()) {
    if (source_side(t) != put_side) continue;
    const double v[kParts] = {t.copy_s, t.sync_s, t.product_s, t.pack_s, t.wire_s, t.unpack_s};
    for (int k = 0; k < kParts; ++k) p[static_cast<std::size_t>(k)] += v[k];
  }
  return p;
}

std::vector<double> max_over_ranks(std::vector<double> v) {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

struct Result {
  double pipo = 0, map_a2o = 0, map_o2a = 0, cpu = 0;
  double noop_ns = 0;       // one get that does nothing, slowest rank (fastest chunk of 1000)
  double noop_mean_ns = 0;  // the same over all of them
  int calls = 0;       // puts and gets of one ping-pong on a rank (the most on any rank)
};

// Minor page faults of the process so far.
double minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_minflt);
}

// This thread's CPU time, seconds.
double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Result run_case(const Env& e, const Case& c, std::map<int, Result>& reference) {
  const bool atm = e.rank < c.atm_ranks;
  const int side_rank = atm ? e.rank : e.rank - c.atm_ranks;
  const int side_ranks = atm ? c.atm_ranks : e.ranks - c.atm_ranks;
  const estuary::GridGen& g = atm ? e.gt : e.go;
  const estuary::Decomp part = estuary::gen::block(g.size(), side_rank, side_ranks);
  const std::size_t n = static_cast<std::size_t>(part.size());
  const int per_var = c.bundle;  // members per def_var
  const int nvals = c.nfields * c.bundle;

  // The benchmark's own buffers, before the heap baseline: what atm sends, what each side got.
  std::vector<double> send, recv(static_cast<std::size_t>(nvals) * n, 0.0);
  if (atm) {
    const std::vector<i64> idx = part.to_indices();
    send.resize(static_cast<std::size_t>(nvals) * n);
    for (int f = 0; f < nvals; ++f)
      for (std::size_t i = 0; i < n; ++i)
        send[static_cast<std::size_t>(f) * n + i] = 273.15 + f + 20 * std::sin(1e-4 * static_cast<double>(idx[i]) + f);
  }
  const int total_steps = e.warmup + 2 * e.iterations;
  const std::string cfg_path =
      e.dir + "/" + c.name + "_a" + std::to_string(c.atm_ranks) + (c.timeline ? "_timeline" : "") + ".yaml";
  if (e.rank == 0) std::ofstream(cfg_path) << config(e, c, (total_steps + 1) * kDt);
  estuary::Grid grid;  // only for SCRIPR (centres and mask)
  if (c.scripr) grid = g.make(part);
  MPI_Barrier(MPI_COMM_WORLD);

  const double heap_base = static_cast<double>(bench::heap::current());
  bench::heap::reset_peak();
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  estuary::ComponentOptions opt;
  opt.config = cfg_path;
  opt.directory = e.dir;
  estuary::Component comp(atm ? "atm" : "ocn", opt);
  const int p = comp.def_partition(part, atm ? "tpart" : "opart");
  if (c.scripr) comp.def_grid(atm ? "tgrid" : "ogrid", p, std::move(grid));
  std::vector<int> out, in;
  for (const std::string& nm : names(atm ? "AS" : "OS", c.nfields)) out.push_back(comp.def_var(nm, p, estuary::Direction::out, per_var));
  for (const std::string& nm : names(atm ? "AR" : "OR", c.nfields)) in.push_back(comp.def_var(nm, p, estuary::Direction::in, per_var));
  const double t1 = MPI_Wtime();
  comp.enddef();
  const double t2 = MPI_Wtime();
  const double init_s = bench::max_over_ranks(t2 - t0, MPI_COMM_WORLD);
  const double enddef_s = bench::max_over_ranks(t2 - t1, MPI_COMM_WORLD);

  const std::size_t m = static_cast<std::size_t>(per_var) * n;  // values per put/get
  const auto span_of = [&](std::vector<double>& v, std::size_t k) { return std::span<double>(v.data() + k * m, m); };
  const auto put_all = [&](double t, std::vector<double>& v) {
    for (std::size_t k = 0; k < out.size(); ++k) comp.put(out[k], t, span_of(v, k));
  };
  const auto get_all = [&](double t) {
    for (std::size_t k = 0; k < in.size(); ++k) comp.get(in[k], t, span_of(recv, k));
  };

  // Unbarriered ping-pongs.
  std::vector<double> times;
  double t = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double loop_start = 0;
  for (int it = 0; it < e.warmup + e.iterations; ++it, t += kDt) {
    if (it == e.warmup) loop_start = MPI_Wtime();
    const double s = MPI_Wtime();
    if (atm) {
      put_all(t, send);
      get_all(t);
    } else {
      get_all(t);
      put_all(t, recv);  // back what it got
    }
    if (it >= e.warmup) times.push_back(MPI_Wtime() - s);
  }
  const double loop_s = MPI_Wtime() - loop_start;
  times = max_over_ranks(times);
  const double pipo = bench::median(times);
  const double pipo_min = *std::min_element(times.begin(), times.end());
  const double pipo_mean = bench::max_over_ranks(loop_s, MPI_COMM_WORLD) / e.iterations;

  // Barriered ping-pongs, four steps each: [0] atm puts (a2o, source side), [1] ocn gets (a2o,
  // target side), [2] ocn puts (o2a, source side), [3] atm gets (o2a, target side). Per
  // ping-pong and step, on the ranks doing it: the coupler's remap time (remap_s of the step's
  // side), the wall time and the thread's CPU time of the calls; the slowest rank counts.
  const int its = e.iterations;
  // [16 + kParts * step, ...): the step's breakdown (parts()).
  constexpr int kRow = 16 + 4 * kParts;  // [0, 4) remap_s, [4, 8) wall, [8, 12) CPU, [12, 16) minor page faults
  std::vector<double> rows(static_cast<std::size_t>(kRow * its), 0.0), bar(static_cast<std::size_t>(its), 0.0);
  for (int it = 0; it < its; ++it, t += kDt) {
    double* row = rows.data() + kRow * it;
    MPI_Barrier(MPI_COMM_WORLD);
    const double s = MPI_Wtime();
    for (int step = 0; step < 4; ++step) {
      const bool mine = (step == 0 || step == 3) == atm;
      if (mine) {
        const auto r0 = remap_sums(comp);
        const auto p0 = parts(comp, step % 2 == 0);
        const double w0 = MPI_Wtime(), c0 = cpu_s(), f0 = minor_faults();
        if (step == 0) put_all(t, send);
        else if (step == 1) get_all(t);
        else if (step == 2) put_all(t, recv);
        else get_all(t);
        row[8 + step] = cpu_s() - c0;
        row[12 + step] = minor_faults() - f0;
        row[4 + step] = MPI_Wtime() - w0;
        const auto r1 = remap_sums(comp);
        row[step] = step % 2 == 0 ? r1.first - r0.first : r1.second - r0.second;
        const auto p1 = parts(comp, step % 2 == 0);
        for (int k = 0; k < kParts; ++k)
          row[16 + kParts * step + k] = p1[static_cast<std::size_t>(k)] - p0[static_cast<std::size_t>(k)];
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
    bar[static_cast<std::size_t>(it)] = MPI_Wtime() - s;
  }
  rows = max_over_ranks(rows);
  bar = max_over_ranks(bar);
  const auto med = [&](int k) {
    std::vector<double> v;
    for (int it = 0; it < its; ++it) v.push_back(rows[static_cast<std::size_t>(kRow * it + k)]);
    return bench::median(v);
  };
  std::vector<double> a2o, o2a;
  for (int it = 0; it < its; ++it) {
    a2o.push_back(rows[static_cast<std::size_t>(kRow * it)] + rows[static_cast<std::size_t>(kRow * it + 1)]);
    o2a.push_back(rows[static_cast<std::size_t>(kRow * it + 2)] + rows[static_cast<std::size_t>(kRow * it + 3)]);
  }
  std::vector<double> step_wall, step_cpu, step_faults;
  for (int k = 0; k < 4; ++k) {
    step_wall.push_back(med(4 + k));
    step_cpu.push_back(med(8 + k));
    step_faults.push_back(med(12 + k));
  }
  // Gets that do nothing (past the run's end): the cost of a call, with the timeline's event.
  // Timed in chunks of 1000, the fastest chunk counting on each rank: a rank descheduled for a
  // while (4 ranks share 2 cores here) would otherwise add its wait to the per-call cost.
  const double runtime_end = (total_steps + 1) * kDt;
  MPI_Barrier(MPI_COMM_WORLD);
  constexpr int kChunk = 1000;
  double best = 1e30;
  const double all0 = MPI_Wtime();
  for (int k = 0; k < e.noop_calls;) {
    const int n = std::min(kChunk, e.noop_calls - k);
    const double n0 = MPI_Wtime();
    for (int j = 0; j < n; ++j, ++k) comp.get(in[0], runtime_end + 0.5 * (k + 1), span_of(recv, 0));
    best = std::min(best, (MPI_Wtime() - n0) / n);
  }
  const double noop_ns = bench::max_over_ranks(1e9 * best, MPI_COMM_WORLD);
  // And over all the calls (the timeline's new blocks included, and whatever else ran meanwhile).
  const double noop_mean_ns = bench::max_over_ranks(1e9 * (MPI_Wtime() - all0) / e.noop_calls, MPI_COMM_WORLD);
  const int calls = static_cast<int>(bench::max_over_ranks(static_cast<double>(out.size() + in.size()), MPI_COMM_WORLD));
  Result res{pipo, bench::median(a2o), bench::median(o2a), step_cpu[0] + step_cpu[1] + step_cpu[2] + step_cpu[3], noop_ns,
             noop_mean_ns, calls};
  // Checksum of everything atm got back at the last ping-pong: the wrapping sum of the values'
  // bit patterns, which does not depend on the order or the decomposition (bfb results are
  // bit-identical for any split, so every bfb case with the same fields prints the same).
  std::uint64_t local = 0;
  if (atm)
    for (double x : recv) {
      std::uint64_t b = 0;
      std::memcpy(&b, &x, sizeof b);
      local += b;
    }
  std::uint64_t checksum = 0;
  MPI_Allreduce(&local, &checksum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  comp.terminate();

  const double heap_peak = (static_cast<double>(bench::heap::peak()) - heap_base) / 1048576.0;
  std::vector<double> heaps(static_cast<std::size_t>(e.ranks));
  MPI_Gather(&heap_peak, 1, MPI_DOUBLE, heaps.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const double hwm = bench::max_over_ranks(bench::proc_status_mb("VmHWM:"), MPI_COMM_WORLD);
  if (c.name == "1f-src" && !c.timeline) reference[c.atm_ranks] = res;
  if (e.rank == 0) {
    bench::Json j;
    j.add("bench", "pingpong").add("case", c.name).add("grid_atm", e.gt.name()).add("grid_ocn", e.go.name())
        .add("ranks", e.ranks).add("atm_ranks", c.atm_ranks).add("ocn_ranks", e.ranks - c.atm_ranks)
        .add("fields", c.nfields * c.bundle).add("couplings_each_way", c.multi ? 1 : c.nfields)
        .add("bundle", c.bundle).add("location", c.location)
        .add("location_a2o", c.scripr ? "dst" : c.loc_a2o).add("location_o2a", c.scripr ? "dst" : c.loc_o2a)
        .add("order", c.scripr ? "bfb" : e.order).add("weights", c.scripr ? "scripr_enddef" : "mapping_file")
        .add("iterations", e.iterations).add("timeline", c.timeline ? "on" : "off")
        .add("pipo_s", res.pipo).add("pipo_min_s", pipo_min).add("pipo_mean_s", pipo_mean).add("pipo_barrier_s", bench::median(bar))
        .add("map_a2o_s", res.map_a2o).add("map_o2a_s", res.map_o2a).add("map_s", res.map_a2o + res.map_o2a)
        .add("steps_s", list(step_wall)).add("steps_cpu_s", list(step_cpu))
        .add("steps_minflt", list(step_faults, 6)).add("cpu_s", res.cpu)
        .add("init_s", init_s).add("enddef_s", enddef_s)
        .add("heap_peak_mb", *std::max_element(heaps.begin(), heaps.end())).add("heap_peak_mb_ranks", list(heaps))
        .add("vm_hwm_mb", hwm).add("noop_call_ns", noop_ns).add("noop_call_mean_ns", noop_mean_ns)
        .add("calls_per_pipo", calls);
    char hex[24];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(checksum));
    j.add("checksum", std::string(hex));
    const auto ref = reference.find(c.atm_ranks);
    if (c.name != "1f-src" && !c.timeline && ref != reference.end() && ref->second.pipo > 0) {
      j.add("pipo_ratio_to_1f", res.pipo / ref->second.pipo)
          .add("map_ratio_to_1f", (res.map_a2o + res.map_o2a) / (ref->second.map_a2o + ref->second.map_o2a))
          .add("cpu_ratio_to_1f", res.cpu / ref->second.cpu);
    }
    std::cout << j.str() << std::endl;
    // Where each barriered step's time went: the parts (slowest rank, median over the
    // ping-pongs, each alone) and the rest of the call (the step's median wall time less the
    // parts' medians: checks, dispatch, what no timer covers).
    static const char* const kSteps[4] = {"atm_put", "ocn_get", "ocn_put", "atm_get"};
    bench::Json b;
    b.add("bench", "pingpong").add("case", c.name).add("summary", "breakdown").add("atm_ranks", c.atm_ranks)
        .add("ocn_ranks", e.ranks - c.atm_ranks).add("unit", "us");
    std::vector<double> total(kParts + 2, 0.0);
    for (int step = 0; step < 4; ++step) {
      std::vector<double> v{1e6 * step_wall[static_cast<std::size_t>(step)]};
      double rest = v[0];
      for (int k = 0; k < kParts; ++k) {
        v.push_back(1e6 * med(16 + kParts * step + k));
        rest -= v.back();
      }
      v.push_back(rest);
      for (std::size_t k = 0; k < v.size(); ++k) total[k] += v[k];
      b.add(kSteps[step], list(v, 3));
    }
    b.add("round_trip", list(total, 4)).add("columns", std::string("wall,copy,sync,product,pack,wire,unpack,rest"));
    std::cout << b.str() << std::endl;
  }
  return res;
}

// Generates (or finds) the weight file of src -> dst; returns the JSON fields to report.
void weights(const Env& e, const estuary::GridGen& src, const estuary::GridGen& dst, const std::string& file,
             bench::Json& j, const std::string& key) {
  const std::string path = e.dir + "/" + file;
  int have = 0;
  if (e.rank == 0) have = std::filesystem::exists(path) ? 1 : 0;
  MPI_Bcast(&have, 1, MPI_INT, 0, MPI_COMM_WORLD);
  double gen_s = 0, write_s = 0;
  i64 links = 0;
  if (!have) {
    const estuary::Grid b = dst.make(estuary::gen::block(dst.size(), e.rank, e.ranks));
    estuary::DistanceWeightOptions o;
    o.neighbors = 5;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    const estuary::Links l = estuary::distance_weights(src, b, MPI_COMM_WORLD, o);
    gen_s = bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD);
    i64 mine = l.size();
    MPI_Allreduce(&mine, &links, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    estuary::WeightWriteOptions wo;
    wo.map_method = "Distance weighted avg of nearest neighbors";
    wo.title = "bench/pingpong 5-NN " + src.name() + " -> " + dst.name();
    t0 = MPI_Wtime();
    // Written under a temporary name and renamed: an interrupted run leaves no partial cache.
    estuary::write_weights(path + ".tmp", l, src.size(), dst.size(), MPI_COMM_WORLD, wo);
    if (e.rank == 0) std::filesystem::rename(path + ".tmp", path);
    MPI_Barrier(MPI_COMM_WORLD);
    write_s = bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD);
  } else {
    links = estuary::read_weights(path, MPI_COMM_WORLD).info.links;
  }
  j.add(key + "_file", path).add(key + "_links", links);
  if (have) j.add(key + "_weights", "cached");
  else j.add(key + "_gen_s", gen_s).add(key + "_write_s", write_s);
}

// --grids yac: the weights of `method` from src to dst (generated over all ranks, or found).
void method_weights(const Env& e, const std::string& method, const estuary::GridGen& src,
                    const estuary::GridGen& dst, const std::string& file, bench::Json& j, const std::string& key) {
  const std::string path = e.dir + "/" + file;
  int have = 0;
  if (e.rank == 0) have = std::filesystem::exists(path) ? 1 : 0;
  MPI_Bcast(&have, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (have) {
    j.add(key + "_links", estuary::read_weights(path, MPI_COMM_WORLD).info.links).add(key + "_weights", "cached");
    return;
  }
  const estuary::Grid s = src.make(estuary::gen::block(src.size(), e.rank, e.ranks));
  const estuary::Grid d = dst.make(estuary::gen::block(dst.size(), e.rank, e.ranks));
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  estuary::Links l;
  estuary::WeightWriteOptions wo;
  if (method == "nnn") {
    estuary::NnnOptions o;
    o.n = 4;
    o.weighting = estuary::NnnWeighting::distance;
    l = estuary::nnn_weights(s, d, MPI_COMM_WORLD, o);
    wo.map_method = "Distance weighted avg of nearest neighbors";
  } else {
    l = estuary::conservative_weights(s, d, MPI_COMM_WORLD).links;
    wo.map_method = "Conservative remapping";
  }
  const double gen_s = bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD);
  i64 mine = l.size(), links = 0;
  MPI_Allreduce(&mine, &links, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  wo.title = "bench/pingpong " + method + " " + src.name() + " -> " + dst.name();
  estuary::write_weights(path + ".tmp", l, src.size(), dst.size(), MPI_COMM_WORLD, wo);
  if (e.rank == 0) std::filesystem::rename(path + ".tmp", path);
  MPI_Barrier(MPI_COMM_WORLD);
  j.add(key + "_links", links).add(key + "_gen_s", gen_s);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::string grids = "full", dir, order = "bfb", timeline = "off";
  int fields = 10, iterations = 10, warmup = 2, noop_calls = 50000, timeline_reps = 3, atm_ranks = ranks / 2;
  std::vector<int> splits;
  std::vector<std::string> wanted{"all"}, methods{"nnn", "conserv"};
  bench::Cli cli("bench/pingpong: the coupler's ping-pong of paper 000 (T799 <-> ORCA025), one JSON line per case");
  cli.opt("grids", grids, "full (T799, ORCA025), small, or yac (640x320 lon-lat, cubed sphere 6x224x224)")
      ->check(CLI::IsMember({"full", "small", "yac"}));
  cli.list("methods", methods, "--grids yac: nnn and/or conserv, comma-separated");
  cli.opt("dir", dir, "where the weight files are kept (default /tmp/estuary_pingpong_<grids>)");
  cli.opt("fields", fields, "fields each way")->check(CLI::PositiveNumber);
  cli.opt("iterations", iterations, "timed ping-pongs per case")->check(CLI::PositiveNumber);
  cli.opt("warmup", warmup, "untimed ping-pongs first")->check(CLI::NonNegativeNumber);
  cli.opt("order", order, "the remap's summation order")->check(CLI::IsMember({"bfb", "sum"}));
  cli.opt("noop-calls", noop_calls, "timeline: gets that do nothing, timed per call")->check(CLI::PositiveNumber);
  cli.opt("timeline", timeline, "record the coupling timeline: off, on or both")->check(CLI::IsMember({"off", "on", "both"}));
  cli.opt("timeline-reps", timeline_reps, "timeline: repeats of each comparison")->check(CLI::PositiveNumber);
  cli.opt("atm-ranks", atm_ranks, "ranks of the atmosphere (the rest are the ocean's)");
  cli.list("splits", splits, "several --atm-ranks values, comma-separated (default: --atm-ranks)");
  cli.list("cases", wanted, "cases to run, comma-separated, or all");
  cli.parse(argc, argv);
  try {
    if (ranks < 2) throw std::runtime_error("bench/pingpong needs at least 2 ranks (atm and ocn)");
    const bool small = grids == "small", yac = grids == "yac";
    Env e{rank, ranks, dir.empty() ? "/tmp/estuary_pingpong_" + grids : dir,
          yac ? estuary::GridGen::lonlat(640, 320)
              : (small ? estuary::GridGen::reduced_gaussian(48) : estuary::GridGen::t799()).with_land(),
          yac ? estuary::GridGen::cubed_sphere(224)
              : (small ? estuary::GridGen::tripolar(360, 290) : estuary::GridGen::orca025()).with_land(),
          "", "", yac, {}};
    for (const std::string& m : methods)
      if (m != "nnn" && m != "conserv") throw std::runtime_error("--methods takes nnn and conserv, not " + m);
    e.fields = fields;
    e.iterations = iterations;
    e.warmup = warmup;
    e.order = order;
    e.noop_calls = noop_calls;
    // The comparison is of the configuration's switch: the environment's must not override it.
    if (cli.given("timeline")) {
      unsetenv("ESTUARY_TIMELINE");
      estuary::Settings::reload();
    }
    e.w_a2o = "rmp_" + e.gt.name() + "_to_" + e.go.name() + "_dis5.nc";
    e.w_o2a = "rmp_" + e.go.name() + "_to_" + e.gt.name() + "_dis5.nc";
    if (splits.empty()) splits.push_back(atm_ranks);
    for (int s : splits)
      if (s < 1 || s >= ranks) throw std::runtime_error("--atm-ranks/--splits must lie in [1, ranks)");
    const auto want = [&](const std::string& nm) {
      return std::find(wanted.begin(), wanted.end(), "all") != wanted.end() ||
             std::find(wanted.begin(), wanted.end(), nm) != wanted.end();
    };
    if (rank == 0) std::filesystem::create_directories(e.dir);
    MPI_Barrier(MPI_COMM_WORLD);

    bench::Json wj;
    wj.add("bench", "pingpong").add("case", "weights").add("grid_atm", e.gt.name()).add("grid_atm_n", e.gt.size())
        .add("grid_ocn", e.go.name()).add("grid_ocn_n", e.go.size()).add("ranks", ranks);
    if (yac) {
      for (const std::string& m : methods) {
        const std::string a2o = "rmp_" + e.gt.name() + "_to_" + e.go.name() + "_" + m + ".nc";
        const std::string o2a = "rmp_" + e.go.name() + "_to_" + e.gt.name() + "_" + m + ".nc";
        e.w_method[m] = {a2o, o2a};
        method_weights(e, m, e.gt, e.go, a2o, wj, m + "_a2o");
        method_weights(e, m, e.go, e.gt, o2a, wj, m + "_o2a");
      }
    } else {
      wj.add("neighbors", 5);
      weights(e, e.gt, e.go, e.w_a2o, wj, "a2o");
      weights(e, e.go, e.gt, e.w_o2a, wj, "o2a");
    }
    if (rank == 0) std::cout << wj.str() << std::endl;

    // The larger grid's ranks: the target's for atm -> ocn when ocn's grid is the larger.
    const bool ocn_larger = e.go.size() >= e.gt.size();
    std::vector<Case> cases;
    for (int s : splits) {
      if (want("1f-src")) cases.push_back({"1f-src", s, 1, 1, false, false, "src", "src", "src"});
      if (want("1f-dst")) cases.push_back({"1f-dst", s, 1, 1, false, false, "dst", "dst", "dst"});
      if (want("1f-larger"))
        cases.push_back({"1f-larger", s, 1, 1, false, false, ocn_larger ? "dst" : "src", ocn_larger ? "src" : "dst", "larger"});
      if (want("1f-smaller"))
        cases.push_back({"1f-smaller", s, 1, 1, false, false, ocn_larger ? "src" : "dst", ocn_larger ? "dst" : "src", "smaller"});
    }
    // The field cases need the 1-field reference of their split.
    if ((want("10f-10c") || want("10f-1c") || want("10f-bundle")) &&
        (!want("1f-src") || std::find(splits.begin(), splits.end(), atm_ranks) == splits.end()))
      cases.push_back({"1f-src", atm_ranks, 1, 1, false, false, "src", "src", "src"});
    if (want("10f-10c")) cases.push_back({"10f-10c", atm_ranks, e.fields, 1, false, false, "src", "src", "src"});
    if (want("10f-1c")) cases.push_back({"10f-1c", atm_ranks, e.fields, 1, true, false, "src", "src", "src"});
    if (want("10f-bundle")) cases.push_back({"10f-bundle", atm_ranks, 1, e.fields, false, false, "src", "src", "src"});
    if (want("1f-scripr")) cases.push_back({"1f-scripr", atm_ranks, 1, 1, false, true, "dst", "dst", "dst"});
    if (yac) {  // the 1f-* cases once per method; the others need the 5-NN files
      std::vector<Case> per_method;
      for (const std::string& m : methods)
        for (Case c : cases)
          if (c.nfields == 1 && c.bundle == 1 && !c.scripr) {
            c.method = m;
            c.name = m + "-" + c.name;
            per_method.push_back(c);
          }
      cases = per_method;
    }

    std::map<int, Result> reference;
    if (timeline != "both") {
      for (Case c : cases) {
        c.timeline = timeline == "on";
        run_case(e, c, reference);
      }
    } else {
      // Each case off and on, alternately, timeline_reps times; then the medians and overheads.
      for (Case c : cases) {
        std::vector<Result> runs[2];
        for (int r = 0; r < timeline_reps; ++r)
          for (int on = 0; on < 2; ++on) {
            c.timeline = on == 1;
            runs[on].push_back(run_case(e, c, reference));
          }
        const auto med = [&](int on, double Result::*m) {
          std::vector<double> v;
          for (const Result& x : runs[on]) v.push_back(x.*m);
          return bench::median(v);
        };
        // The fastest run of each kind too: on a shared machine the other jobs only ever add time.
        const auto best = [&](int on, double Result::*m) {
          double v = 1e300;
          for (const Result& x : runs[on]) v = std::min(v, x.*m);
          return v;
        };
        const double pipo0 = med(0, &Result::pipo), pipo1 = med(1, &Result::pipo);
        const double cpu0 = med(0, &Result::cpu), cpu1 = med(1, &Result::cpu);
        const double ns0 = med(0, &Result::noop_ns), ns1 = med(1, &Result::noop_ns);
        const double mean0 = med(0, &Result::noop_mean_ns), mean1 = med(1, &Result::noop_mean_ns);
        const int calls = runs[0].front().calls;
        if (rank == 0) {
          bench::Json j;
          j.add("bench", "pingpong").add("case", c.name).add("summary", "timeline").add("ranks", ranks)
              .add("atm_ranks", c.atm_ranks).add("reps", timeline_reps)
              .add("pipo_off_s", pipo0).add("pipo_on_s", pipo1).add("pipo_overhead_pct", 100 * (pipo1 / pipo0 - 1))
              .add("pipo_best_off_s", best(0, &Result::pipo)).add("pipo_best_on_s", best(1, &Result::pipo))
              .add("pipo_best_overhead_pct", 100 * (best(1, &Result::pipo) / best(0, &Result::pipo) - 1))
              .add("cpu_off_s", cpu0).add("cpu_on_s", cpu1).add("cpu_overhead_pct", 100 * (cpu1 / cpu0 - 1))
              .add("noop_call_ns_off", ns0).add("noop_call_ns_on", ns1).add("record_ns", ns1 - ns0)
              .add("noop_call_mean_ns_off", mean0).add("noop_call_mean_ns_on", mean1)
              .add("record_mean_ns", mean1 - mean0)
              .add("calls_per_pipo", calls)
              .add("record_share_pct", 100 * std::max(0.0, ns1 - ns0) * 1e-9 * calls / pipo0)
              .add("record_share_mean_pct", 100 * std::max(0.0, mean1 - mean0) * 1e-9 * calls / pipo0);
          std::cout << j.str() << std::endl;
        }
      }
    }
    MPI_Finalize();
    return 0;
  } catch (const std::exception& ex) {
    std::cerr << "bench/pingpong: " << ex.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}
