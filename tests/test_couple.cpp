// The coupler end to end: two components (or one, on one rank) exchange fields through
// namcouple configurations; every received value is compared with a serial reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "couple_test_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"

using namespace estuary;
using namespace ctest_util;

namespace {

constexpr i64 kNs = 12 * 10, kNd = 8 * 9;  // source and target grids (nx x ny)
constexpr double kDt = 1200, kPeriod = 3600;

// The two sides: on one rank a single component holds both grids (sequential coupling).
struct Layout {
  bool src = false, dst = false;
  std::string comp;
  int index = 0, count = 1;  // this rank's place among its side's ranks
};

Layout layout() {
  const int r = world_rank(), p = world_size();
  Layout l;
  if (p == 1) return {true, true, "solo", 0, 1};
  const int h = p / 2;
  l.src = r < h;
  l.dst = !l.src;
  l.comp = l.src ? "atm" : "ocn";
  l.index = l.src ? r : r - h;
  l.count = l.src ? h : p - h;
  return l;
}

// A namcouple with one coupling A_F -> O_F, line 4 onwards given.
std::string namcouple(double runtime, const std::string& fields, int ntrans, const std::string& rest,
                      const std::string& status = "EXPORTED", const std::string& line2_extra = "") {
  return " $NFIELDS\n 1\n $END\n $RUNTIME\n " + std::to_string(static_cast<long>(runtime)) +
         "\n $END\n $NLOGPRT\n 1\n $END\n $NNOREST\n T\n $END\n $STRINGS\n" + fields + " 1 " +
         std::to_string(static_cast<long>(kPeriod)) + " " + std::to_string(ntrans) + " rst.nc " + status + "\n12 10 8 9 agrd ogrd " +
         line2_extra + "\nR 0 R 0\n" + rest + " $END\n";
}

struct Run {
  std::vector<std::pair<double, std::vector<double>>> got;  // (time, global reconstructed? no: local values)
  std::vector<Info> infos;
};

// Runs a model loop: the source side puts field f(t) for every time step, the target gets.
// Returns, on target ranks, the values got at each coupling time.
std::vector<std::pair<double, std::vector<double>>> run_pair(const std::string& dir, double runtime,
                                                             const Decomp& sd, const Decomp& dd, std::vector<Info>* infos = nullptr) {
  const Layout l = layout();
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  Component comp(l.comp, o);
  int sv = -1, dv = -1;
  if (l.src) sv = comp.def_var("A_F", comp.def_partition(sd, "agrd"), Direction::out);
  if (l.dst) dv = comp.def_var("O_F", comp.def_partition(dd, "ogrd"), Direction::in);
  comp.enddef();
  std::vector<std::pair<double, std::vector<double>>> got;
  for (double t = 0; t < runtime; t += kDt) {
    if (l.src) {
      const Info i = comp.put(sv, t, local_of(global_field(kNs, t), sd));
      if (infos) infos->push_back(i);
    }
    if (l.dst) {
      std::vector<double> v(static_cast<std::size_t>(dd.size()), -999.0);
      const Info i = comp.get(dv, t, v);
      if (infos) infos->push_back(i);
      if (i != Info::ok) got.emplace_back(t, v);
    }
  }
  comp.terminate();
  return got;
}

Decomp src_decomp(const Layout& l) {
  return l.src ? gen::cyclic(kNs, l.index, l.count) : Decomp::empty(kNs);
}
Decomp dst_decomp(const Layout& l) {
  return l.dst ? gen::block(kNd, l.count - 1 - l.index, l.count) : Decomp::empty(kNd);
}

}  // namespace

// MAPPING with a weight file, at src or dst, bfb or sum: every coupling time's values equal
// W f(t) computed serially from the same links.
TEST(Couple, MappingEqualsSerialReference) {
  const Layout l = layout();
  for (const std::string opt : {"src bfb", "dst bfb", "src sum", "dst sum"}) {
    SCOPED_TRACE(opt);
    const std::string dir = fresh_dir("mapping");
    write_synthetic_weights(dir + "/w.nc", kNs, kNd);
    write_text(dir + "/namcouple", namcouple(4 * kPeriod, "A_F O_F", 1, "MAPPING\nw.nc " + opt + "\n"));
    const Decomp sd = src_decomp(l), dd = dst_decomp(l);
    std::vector<Info> infos;
    const auto got = run_pair(dir, 4 * kPeriod, sd, dd, &infos);
    const Links w = synthetic_links(kNs, kNd);
    if (l.src && !l.dst) {  // puts: Sent at coupling times, nothing in between (INSTANT)
      ASSERT_EQ(infos.size(), 12u);
      for (std::size_t k = 0; k < infos.size(); ++k) EXPECT_EQ(infos[k], k % 3 == 0 ? Info::sent : Info::ok) << k;
    }
    if (l.dst) {
      ASSERT_EQ(got.size(), 4u);
      for (const auto& [t, v] : got) {
        EXPECT_EQ(std::fmod(t, kPeriod), 0.0);
        const std::vector<double> want = local_of(apply_serial(w, global_field(kNs, t), kNd), dd);
        ASSERT_EQ(v.size(), want.size());
        for (std::size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(v[i], want[i], 1e-13) << "t=" << t << " point " << i;
      }
    }
  }
}
