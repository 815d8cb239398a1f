// The coupler end to end on the process layout of Fig. 1 of the OASIS3-MCT paper (paper 000,
// Sect. 2.5): every coupling arrow A-J, on 8 world ranks, launched either as two executables
// (MPMD) or as one executable whose ranks choose their component by rank:
//
//   mpirun -n 2 test_couple_layout exe1 : -n 6 test_couple_layout exe2
//   mpirun -n 8 test_couple_layout single
//
// Layout (world ranks):
//   exe1 = 0-1: comp1, grid1 (7x5) on {0,1}, cyclic
//   exe2 = 2-7: comp2 on {2,3}: grid2 (6x6) on {2,3}, 2-D column boxes in reversed rank order
//               comp3 on {4,5,6}: grid3 (9x4) on {4,5}, uneven (13/23 points, two stripes /
//                                 one reversed stripe)
//                                 grid4 (5x5) on {6}, the whole grid in reversed order
//                                 grid5 (8x3) on {5,6}, uneven scrambled index lists
//                                 (grid5 overlaps grid3 on rank 5 and contains grid4's rank 6)
//               comp4 on {7}: constructs a Component, enddef, terminate; couples nothing.
//
// The arrows (one coupling each, two for H), in the namcouple order, which is also the order in
// which every rank puts and then gets at each time step:
//   A  comp1/grid1 -> comp2/grid2  different executables            MAPPING src bfb
//   B  comp2/grid2 -> comp3/grid3  one executable, different comps  identity (no MAPPING: 36 = 36
//                                  points), two fields, LOCTRANS AVERAGE
//   C  comp3/grid3 -> comp3/grid4  one component, non-overlapping ranks {4,5} -> {6}, MAPPING dst sum
//   D  comp1/grid1 -> comp3/grid4  different executables, LAG=600, MAPPING dst bfb
//   E  comp3/grid4 -> comp1/grid1  different executables (exe2 -> exe1), MAPPING opt (= src sum)
//   F  comp3/grid5 -> comp2/grid2  one executable, different comps, LAG=600, MAPPING with the
//                                  defaults (src bfb); its source ranks {5,6} exclude comp3's
//                                  root (4), which reads and writes the restart
//   G  comp3/grid3 -> comp3/grid5  one component, partially overlapping ranks {4,5} -> {5,6}
//                                  (rank 5 puts and gets), LAG=1200, MAPPING dst bfb
//   H  comp3/grid4 -> comp3/grid5  one component, {6} -> {5,6}: overlapping on 6, non-overlapping
//                                  on 5, MAPPING src sum; and H2 grid5 -> grid4, {5,6} -> {6},
//                                  MAPPING sum dst
//   I  comp2/grid2 -> comp3/grid5  one executable, different comps, MAPPING dst sum
//   J  comp1/grid1 -> comp3/grid5  different executables, MAPPING bfb src
//
// The model runs twice in the same folder: the first run starts from zeros ($NNOREST T), the
// second from the first's restarts (lagged records, partial LOCTRANS averages). Model fields
// are analytic in the absolute time (run * runtime + t), so one serial reference covers both:
// the value got at t is W applied to the field put at t - lag (LOCTRANS: the average of the puts
// of the period ending there), or zeros before the first run's start.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>

#include "couple_test_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/decomp_gen.hpp"

using namespace estuary;
using namespace ctest_util;

namespace {

std::string g_mode;  // "exe1", "exe2" (MPMD) or "single", from argv[1]

constexpr double kDt = 600, kRuntime = 7200;
constexpr int kRuns = 2;

struct GridSpec {
  std::string name, comp;
  i64 nx, ny;
  std::vector<int> ranks;  // world ranks holding it
  i64 size() const { return nx * ny; }
};

const std::vector<GridSpec>& grids() {
  static const std::vector<GridSpec> g = {
      {"grid1", "comp1", 7, 5, {0, 1}},
      {"grid2", "comp2", 6, 6, {2, 3}},
      {"grid3", "comp3", 9, 4, {4, 5}},
      {"grid4", "comp3", 5, 5, {6}},
      {"grid5", "comp3", 8, 3, {5, 6}},
  };
  return g;
}

std::string component_of(int wrank) {
  if (wrank <= 1) return "comp1";
  if (wrank <= 3) return "comp2";
  if (wrank <= 6) return "comp3";
  return "comp4";
}

bool holds(int grid, int wrank) {
  const auto& r = grids()[static_cast<std::size_t>(grid)].ranks;
  return std::find(r.begin(), r.end(), wrank) != r.end();
}

// Grid `grid`'s points on world rank `wrank` (empty where it does not hold the grid).
Decomp decomp_of(int grid, int wrank) {
  const i64 n = grids()[static_cast<std::size_t>(grid)].size();
  if (!holds(grid, wrank)) return Decomp::empty(n);
  switch (grid) {
    case 0:  // grid1: cyclic over ranks 0, 1
      return gen::cyclic(n, wrank, 2);
    case 1: {  // grid2: 6 rows x 6 columns cut in column boxes, rank 2 the right half
      const i64 c0 = wrank == 2 ? 3 : 0;
      return Decomp::box({6, 6}, {0, c0}, {6, 3});
    }
    case 2:  // grid3: uneven, rank 4 two stripes (13 points), rank 5 one reversed stripe (23)
      return wrank == 4 ? Decomp::stripes(n, {{0, 7, 1}, {30, 6, 1}}) : Decomp::stripes(n, {{29, 23, -1}});
    case 3:  // grid4: all of it on rank 6, reversed
      return Decomp::stripes(n, {{n - 1, n, -1}});
    case 4: {  // grid5: 8 scrambled points on rank 5, the other 16 descending on rank 6
      const std::vector<i64> five = {23, 3, 17, 8, 11, 0, 20, 5};
      if (wrank == 5) return Decomp::indices(n, five);
      std::vector<i64> rest;
      for (i64 i = n - 1; i >= 0; --i)
        if (std::find(five.begin(), five.end(), i) == five.end()) rest.push_back(i);
      return Decomp::indices(n, rest);
    }
  }
  return Decomp::empty(n);
}

struct Arrow {
  std::string name;     // "A", ..., "H2"
  int src, dst;         // grid indices
  double period;
  double lag = 0;
  std::string mapping;  // namcouple MAPPING options after the file name; "-" for none (identity)
  int nfields = 1;
  bool average = false;  // LOCTRANS AVERAGE (else INSTANT)
  int fbase = 0;         // field_value's field number of the first field

  std::string src_field(int k) const { return name + "_S" + std::to_string(k + 1); }
  std::string dst_field(int k) const { return name + "_D" + std::to_string(k + 1); }
  bool identity() const { return mapping == "-"; }
  std::string weights() const { return "w_" + name + ".nc"; }
  // bfb and the identity are bit-reproducible: the value must equal the serial reference exactly.
  bool exact() const { return identity() || (mapping.find("sum") == std::string::npos && mapping.find("opt") == std::string::npos); }
};

const std::vector<Arrow>& arrows() {
  static const std::vector<Arrow> a = {
      {"A", 0, 1, 1200, 0, "src bfb", 1, false, 1},
      {"B", 1, 2, 1800, 0, "-", 2, true, 2},
      {"C", 2, 3, 1200, 0, "dst sum", 1, false, 4},
      {"D", 0, 3, 1800, 600, "dst bfb", 1, false, 5},
      {"E", 3, 0, 3600, 0, "opt", 1, false, 6},
      {"F", 4, 1, 1200, 600, "", 1, false, 7},
      {"G", 2, 4, 2400, 1200, "dst bfb", 1, false, 8},
      {"H", 3, 4, 600, 0, "src sum", 1, false, 9},
      {"H2", 4, 3, 1200, 0, "sum dst", 1, false, 10},
      {"I", 1, 4, 600, 0, "dst sum", 1, false, 11},
      {"J", 0, 4, 2400, 0, "bfb src", 1, false, 12},
  };
  return a;
}

std::string num(double x) { return std::to_string(static_cast<long>(x)); }

std::string namcouple() {
  std::ostringstream s;
  s << "# Fig. 1 of the OASIS3-MCT paper: arrows A-J (tests/test_couple_layout.cpp)\n"
    << " $NFIELDS\n " << arrows().size() << "\n $END\n $RUNTIME\n " << num(kRuntime) << "\n $END\n"
    << " $NLOGPRT\n 1\n $END\n $NNOREST\n T\n $END\n $STRINGS\n";
  for (const Arrow& a : arrows()) {
    const GridSpec &sg = grids()[static_cast<std::size_t>(a.src)], &dg = grids()[static_cast<std::size_t>(a.dst)];
    std::string sf, df;
    for (int k = 0; k < a.nfields; ++k) {
      if (k > 0) {
        sf += ':';
        df += ':';
      }
      sf += a.src_field(k);
      df += a.dst_field(k);
    }
    std::vector<std::pair<std::string, std::string>> tr;
    if (a.average) tr.emplace_back("LOCTRANS", "AVERAGE");
    if (!a.identity()) tr.emplace_back("MAPPING", a.weights() + (a.mapping.empty() ? "" : " " + a.mapping));
    if (tr.empty()) tr.emplace_back("LOCTRANS", "INSTANT");
    s << "# arrow " << a.name << "\n"
      << sf << " " << df << " 1 " << num(a.period) << " " << tr.size() << " rst_" << a.name << ".nc EXPORTED\n"
      << sg.nx << " " << sg.ny << " " << dg.nx << " " << dg.ny << " " << sg.name << " " << dg.name
      << (a.lag != 0 ? " LAG=" + num(a.lag) : "") << "\nR 0 R 0\n";
    for (std::size_t i = 0; i < tr.size(); ++i) s << tr[i].first << (i + 1 < tr.size() ? " " : "\n");
    for (const auto& t : tr) s << t.second << "\n";
  }
  s << " $END\n";
  return s.str();
}

bool is_multiple(double a, double p) { return std::fmod(a, p) == 0.0; }

// What the put of arrow `a` at run time t must return.
Info expected_put(const Arrow& a, double t) {
  const double act = t + a.lag;
  if (act >= 0 && is_multiple(act, a.period)) return act >= kRuntime ? Info::torest : Info::sent;
  return a.average ? Info::loctrans : Info::ok;
}

// What the get of arrow `a` at run time t must return.
Info expected_get(const Arrow& a, double t) {
  if (!is_multiple(t, a.period)) return Info::ok;
  return t - a.lag < 0 ? Info::fromrest : Info::recvd;
}

// The serial reference: arrow a's field k on the whole target grid, got at absolute time `abs`.
std::vector<double> expected_dst(const Arrow& a, int k, double abs) {
  const i64 ns = grids()[static_cast<std::size_t>(a.src)].size(), nd = grids()[static_cast<std::size_t>(a.dst)].size();
  const double ts = abs - a.lag;  // the put time
  if (ts < 0) return std::vector<double>(static_cast<std::size_t>(nd), 0.0);  // $NNOREST T
  std::vector<double> src;
  if (a.average) {  // the puts since the previous coupling time, summed in time order
    const double first = std::max(0.0, ts - a.period + kDt);
    int count = 0;
    for (double s = first; s <= ts; s += kDt, ++count) {
      const std::vector<double> x = global_field(ns, s, a.fbase + k);
      if (src.empty()) src = x;
      else
        for (std::size_t i = 0; i < x.size(); ++i) src[i] += x[i];
    }
    for (double& v : src) v /= count;
  } else {
    src = global_field(ns, ts, a.fbase + k);
  }
  if (a.identity()) return src;
  return apply_serial(synthetic_links(ns, nd), src, nd);
}

// The launch: checks that the ranks are where the mode says (MPMD: two applications).
void check_launch() {
  const int r = world_rank();
  int* appnum = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
  const int app = flag ? *appnum : -1;
  int mode = g_mode == "exe1" ? 1 : g_mode == "exe2" ? 2 : 0;
  std::vector<int> modes(8);
  MPI_Allgather(&mode, 1, MPI_INT, modes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  if (g_mode == "single") {
    for (int m : modes) EXPECT_EQ(m, 0) << "every rank must run in mode single";
    if (flag) {
      EXPECT_EQ(app, 0);
    }
  } else {
    for (int q = 0; q < 8; ++q) EXPECT_EQ(modes[static_cast<std::size_t>(q)], q < 2 ? 1 : 2) << "world rank " << q;
    EXPECT_TRUE(flag) << "MPI_APPNUM is not set: not launched as two applications";
    if (flag) {
      EXPECT_EQ(app, r < 2 ? 0 : 1) << "exe1 must be the first application, exe2 the second";
    }
  }
}

// The decompositions of every grid cover it exactly once.
void check_decomps() {
  for (int g = 0; g < static_cast<int>(grids().size()); ++g) {
    std::vector<int> seen(static_cast<std::size_t>(grids()[static_cast<std::size_t>(g)].size()), 0);
    for (int q = 0; q < 8; ++q)
      for (i64 i : decomp_of(g, q).to_indices()) ++seen[static_cast<std::size_t>(i)];
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << grids()[static_cast<std::size_t>(g)].name << " point " << i;
  }
}

struct Side {
  int var = -1;
  Decomp d = Decomp::empty(0);
};

}  // namespace

TEST(CoupleLayout, EveryArrowOfFigure1) {
  check_launch();
  check_decomps();
  const int wr = world_rank();
  const std::string comp_name = component_of(wr);
  const std::string dir = fresh_dir(std::string("layout_") + (g_mode == "single" ? "single" : "mpmd"));
  for (const Arrow& a : arrows())
    if (!a.identity())
      write_synthetic_weights(dir + "/" + a.weights(), grids()[static_cast<std::size_t>(a.src)].size(),
                              grids()[static_cast<std::size_t>(a.dst)].size());
  write_text(dir + "/namcouple", namcouple());

  const std::size_t na = arrows().size();
  std::map<std::string, int> gets_done;  // arrow -> coupling-time gets checked on this rank
  for (int run = 0; run < kRuns; ++run) {
    SCOPED_TRACE("run " + std::to_string(run + 1));
    ComponentOptions o;
    o.config = dir + "/namcouple";
    o.directory = dir;
    Component comp(comp_name, o);
    int csize = 0;
    MPI_Comm_size(comp.comm(), &csize);
    EXPECT_EQ(csize, comp_name == "comp1" || comp_name == "comp2" ? 2 : comp_name == "comp3" ? 3 : 1);

    // Partitions only for the grids this rank holds, named by the grid (the partition's name
    // must agree across the ranks of a field).
    std::map<int, int> part;  // grid -> partition id
    if (comp_name != "comp4")
      for (int g = 0; g < static_cast<int>(grids().size()); ++g)
        if (holds(g, wr)) part[g] = comp.def_partition(decomp_of(g, wr), grids()[static_cast<std::size_t>(g)].name);
    std::vector<std::vector<Side>> src(na), dst(na);  // per arrow and field, where held here
    for (std::size_t i = 0; i < na; ++i) {
      const Arrow& a = arrows()[i];
      for (int k = 0; k < a.nfields; ++k) {
        if (holds(a.src, wr))
          src[i].push_back({comp.def_var(a.src_field(k), part.at(a.src), Direction::out), decomp_of(a.src, wr)});
        if (holds(a.dst, wr))
          dst[i].push_back({comp.def_var(a.dst_field(k), part.at(a.dst), Direction::in), decomp_of(a.dst, wr)});
      }
    }
    comp.enddef();
    EXPECT_EQ(comp.setup().couplings.size(), na);

    for (double t = 0; t < kRuntime; t += kDt) {
      const double abs = run * kRuntime + t;
      // Puts, every arrow in the same order on every rank.
      for (std::size_t i = 0; i < na; ++i) {
        const Arrow& a = arrows()[i];
        for (int k = 0; k < static_cast<int>(src[i].size()); ++k) {
          const Side& s = src[i][static_cast<std::size_t>(k)];
          const std::vector<double> v = local_of(global_field(grids()[static_cast<std::size_t>(a.src)].size(), abs, a.fbase + k), s.d);
          const Info got = comp.put(s.var, t, v);
          EXPECT_EQ(name_of(got), std::string(name_of(expected_put(a, t))))
              << "arrow " << a.name << " put " << a.src_field(k) << " t=" << t << " world rank " << wr;
        }
      }
      // Gets, likewise.
      for (std::size_t i = 0; i < na; ++i) {
        const Arrow& a = arrows()[i];
        for (int k = 0; k < static_cast<int>(dst[i].size()); ++k) {
          const Side& s = dst[i][static_cast<std::size_t>(k)];
          constexpr double kSentinel = -999.5;
          std::vector<double> v(static_cast<std::size_t>(s.d.size()), kSentinel);
          const Info got = comp.get(s.var, t, v);
          const Info want = expected_get(a, t);
          EXPECT_EQ(name_of(got), std::string(name_of(want)))
              << "arrow " << a.name << " get " << a.dst_field(k) << " t=" << t << " world rank " << wr;
          std::vector<double> ref;
          if (want == Info::ok) {
            ref.assign(v.size(), kSentinel);  // nothing done: the buffer is untouched
          } else {
            ref = local_of(expected_dst(a, k, abs), s.d);
            ++gets_done[a.name];
          }
          const std::vector<i64> gi = s.d.to_indices();
          int bad = 0;
          std::size_t first_bad = 0;
          for (std::size_t p = 0; p < v.size(); ++p) {
            const double tol = a.exact() || want == Info::ok ? 0.0 : 1e-12 * (1.0 + std::fabs(ref[p]));
            if (!(std::fabs(v[p] - ref[p]) <= tol)) {
              if (bad++ == 0) first_bad = p;
            }
          }
          if (bad > 0)
            ADD_FAILURE() << "arrow " << a.name << " (" << a.src_field(k) << " -> " << a.dst_field(k) << ") run "
                          << run + 1 << " t=" << t << " world rank " << wr << ": " << bad << " of " << v.size()
                          << " points wrong, first local point " << first_bad << " (global " << gi[first_bad]
                          << "): got " << v[first_bad] << ", want " << ref[first_bad] << " (diff "
                          << v[first_bad] - ref[first_bad] << ")";
        }
      }
    }
    comp.terminate();
  }
  // Every coupling time of every arrow was got on every target rank, in both runs.
  for (const Arrow& a : arrows()) {
    if (holds(a.dst, wr)) {
      EXPECT_EQ(gets_done[a.name], kRuns * a.nfields * static_cast<int>(kRuntime / a.period))
          << "arrow " << a.name << " world rank " << wr;
    }
  }
  // Every rank took part in the checks it should: comp4 holds nothing, comp3's ranks several grids.
  int held = 0;
  for (std::size_t i = 0; i < na; ++i) held += (holds(arrows()[i].src, wr) ? 1 : 0) + (holds(arrows()[i].dst, wr) ? 1 : 0);
  const std::map<int, int> want_held = {{0, 4}, {1, 4}, {2, 4}, {3, 4}, {4, 3}, {5, 9}, {6, 11}, {7, 0}};
  EXPECT_EQ(held, want_held.at(wr)) << "world rank " << wr;
}

namespace {
// Prints failures from ranks other than 0, tagged with the rank (as tests/mpi_main.cpp does).
class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
  }

 private:
  int rank_;
};
}  // namespace

// Own main: MPI, GoogleTest, and the launch mode (exe1, exe2 or single) as the first argument
// left after GoogleTest's flags.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc >= 2) g_mode = argv[1];
  if (g_mode != "exe1" && g_mode != "exe2" && g_mode != "single") {
    std::fprintf(stderr, "usage: mpirun -n 2 %s exe1 : -n 6 %s exe2, or mpirun -n 8 %s single\n", argv[0], argv[0],
                 argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (ctest_util::world_size() != 8) {
    std::fprintf(stderr, "test_couple_layout: the layout needs 8 world ranks, not %d\n", ctest_util::world_size());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int failed = RUN_ALL_TESTS();
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
