// The coupler end to end: two components (or one, on one rank) exchange fields through
// namcouple configurations; every received value is compared with a serial reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include <netcdf.h>

#include "couple/couple_io.hpp"  // coupler_file_buffer_peak
#include "couple_test_util.hpp"
#include "nc_test_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/runoff.hpp"
#include "estuary/weightgen.hpp"
#include "estuary/weights.hpp"
#include "estuary/settings.hpp"

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

Layout layout(MPI_Comm world = MPI_COMM_WORLD) {
  int r = 0, p = 1;
  MPI_Comm_rank(world, &r);
  MPI_Comm_size(world, &p);
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

// A model run: the source side puts each OUT field (bundle members b: field number 10 f + b)
// at every time step, the target side gets each IN field. Values use model time t + t0.
struct Model {
  std::vector<std::pair<std::string, int>> out, in;  // (name, bundle)
  double runtime = 4 * kPeriod, t0 = 0;
  MPI_Comm world = MPI_COMM_WORLD;
};
struct Got {
  double t;
  Info info;
  std::vector<double> v;
};

Decomp src_decomp(const Layout& l);
Decomp dst_decomp(const Layout& l);

// Per IN field: what each get returned (all gets, including Ok ones).
std::vector<std::vector<Got>> run_model(const std::string& dir, const Model& m, std::vector<std::vector<Info>>* put_infos = nullptr) {
  const Layout l = layout(m.world);
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  o.world = m.world;
  Component comp(l.comp, o);
  const Decomp sd = src_decomp(l), dd = dst_decomp(l);
  std::vector<int> ov, iv;
  if (l.src) {
    const int part = comp.def_partition(sd, "agrd");
    for (const auto& [n, b] : m.out) ov.push_back(comp.def_var(n, part, Direction::out, b));
  }
  if (l.dst) {
    const int part = comp.def_partition(dd, "ogrd");
    for (const auto& [n, b] : m.in) iv.push_back(comp.def_var(n, part, Direction::in, b));
  }
  comp.enddef();
  std::vector<std::vector<Got>> got(iv.size());
  if (put_infos) put_infos->assign(ov.size(), {});
  for (double t = 0; t < m.runtime; t += kDt) {
    for (std::size_t f = 0; f < ov.size(); ++f) {
      std::vector<double> v;
      for (int b = 0; b < m.out[f].second; ++b) {
        const std::vector<double> x = local_of(global_field(kNs, t + m.t0, static_cast<int>(10 * f) + b), sd);
        v.insert(v.end(), x.begin(), x.end());
      }
      const Info i = comp.put(ov[f], t, v);
      // The put has read the values (a field alone in its coupling goes straight from the
      // caller's array): poisoned now, they would show in every later get if the coupler kept them.
      std::fill(v.begin(), v.end(), std::numeric_limits<double>::quiet_NaN());
      if (put_infos) (*put_infos)[f].push_back(i);
    }
    for (std::size_t f = 0; f < iv.size(); ++f) {
      std::vector<double> v(static_cast<std::size_t>(dd.size() * m.in[f].second), -999.0);
      const Info i = comp.get(iv[f], t, v);
      got[f].push_back({t, i, v});
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

namespace {
// A YAC weight file (YAC's layout: SCRIP's link variables, num_src_fields 1, the version and
// grid-name attributes, fixed values) of the synthetic links without those of point `fixed`,
// which takes `value` instead; for grids src_name -> dst_name.
void write_yac_weights(const std::string& path, i64 fixed, double value, const std::string& src_name,
                       const std::string& dst_name) {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  if (r == 0) {
    const Links all = synthetic_links(kNs, kNd);
    Links w;
    for (i64 k = 0; k < all.size(); ++k) {
      const auto u = static_cast<std::size_t>(k);
      if (all.row[u] != fixed) w.add(all.row[u], all.col[u], all.weight[u]);
    }
    estuary::write_weights(path, w, kNs, kNd, MPI_COMM_SELF);
    int nc = -1, d[4];
    ASSERT_EQ(nc_open(path.c_str(), NC_WRITE, &nc), NC_NOERR);
    nc_redef(nc);
    for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
             {"version", "yac weight file 1.0"}, {"src_grid_name", src_name}, {"dst_grid_name", dst_name},
             {"contains_links", "TRUE"}, {"contains_fixed_dst", "TRUE"}})
      nc_put_att_text(nc, NC_GLOBAL, name.c_str(), text.size(), text.data());
    nc_def_dim(nc, "num_src_fields", 1, &d[0]);
    nc_def_dim(nc, "max_loc_str_len", 10, &d[1]);
    nc_def_dim(nc, "num_fixed_values", 1, &d[2]);
    nc_def_dim(nc, "num_fixed_dst", 1, &d[3]);
    int vl = -1, vv = -1, vn = -1, va = -1;
    nc_def_var(nc, "num_links_per_src_field", NC_INT, 1, &d[0], &vl);
    nc_def_var(nc, "fixed_values", NC_DOUBLE, 1, &d[2], &vv);
    nc_def_var(nc, "num_dst_per_fixed_value", NC_INT, 1, &d[2], &vn);
    nc_def_var(nc, "dst_address_fixed", NC_INT, 1, &d[3], &va);
    nc_enddef(nc);
    const int links = static_cast<int>(w.size()), one = 1, address = static_cast<int>(fixed + 1);
    nc_put_var_int(nc, vl, &links);
    nc_put_var_double(nc, vv, &value);
    nc_put_var_int(nc, vn, &one);
    nc_put_var_int(nc, va, &address);
    nc_close(nc);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
}  // namespace

// A YAC weight file as a MAPPING: its fixed value reaches its point and the links the others,
// as YAC applies it; a file whose grid names are not the coupling's grids is refused on every
// rank, naming the attributes (YAC checks the names; the file has no grid sizes to check).
TEST(Couple, YacWeightFileWithFixedValueAndGridNames) {
  const Layout l = layout();
  const i64 fixed = 17;
  const std::string dir = fresh_dir("yac_mapping");
  write_yac_weights(dir + "/w.nc", fixed, -7.25, "agrd", "ogrd");
  write_text(dir + "/namcouple", namcouple(2 * kPeriod, "A_F O_F", 1, "MAPPING\nw.nc\n"));
  const Decomp sd = src_decomp(l), dd = dst_decomp(l);
  const auto got = run_pair(dir, 2 * kPeriod, sd, dd);
  if (l.dst) {
    const Links all = synthetic_links(kNs, kNd);
    Links w;
    for (i64 k = 0; k < all.size(); ++k) {
      const auto u = static_cast<std::size_t>(k);
      if (all.row[u] != fixed) w.add(all.row[u], all.col[u], all.weight[u]);
    }
    ASSERT_EQ(got.size(), 2u);
    for (const auto& [t, v] : got) {
      std::vector<double> want = apply_serial(w, global_field(kNs, t), kNd);
      want[static_cast<std::size_t>(fixed)] = -7.25;
      const std::vector<double> mine = local_of(want, dd);
      ASSERT_EQ(v.size(), mine.size());
      for (std::size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(v[i], mine[i], 1e-13) << "t=" << t << " point " << i;
    }
  }
  write_yac_weights(dir + "/w.nc", fixed, -7.25, "icon_atm", "ogrd");
  try {
    run_pair(dir, 2 * kPeriod, sd, dd);
    ADD_FAILURE() << "a YAC file for other grids was applied";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("src_grid_name"), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"icon_atm\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("w.nc"), std::string::npos) << msg;
  }
}

namespace {
// The global source field of field number f, transformed by LOCTRANS over the puts in
// (t_prev, t] (time steps kDt), as the reference computes it.
std::vector<double> loctrans_ref(const std::string& op, double t_prev, double t, int f = 0) {
  std::vector<double> r;
  int n = 0;
  for (double s = t_prev + kDt; s <= t + 1e-9; s += kDt, ++n) {
    const std::vector<double> x = global_field(kNs, s, f);
    if (r.empty()) r = x;
    else
      for (std::size_t i = 0; i < r.size(); ++i)
        r[i] = op == "T_MIN" ? std::min(r[i], x[i]) : op == "T_MAX" ? std::max(r[i], x[i]) : r[i] + x[i];
  }
  if (op == "AVERAGE")
    for (double& v : r) v /= n;
  return r;
}
}  // namespace

// LOCTRANS over the puts of a period, with and without a lag: each coupling time's values equal
// W op(f) over the right puts; Info codes say LocTrans between coupling times.
TEST(Couple, LoctransAndLag) {
  const Layout l = layout();
  const Links w = synthetic_links(kNs, kNd);
  for (const std::string op : {"AVERAGE", "ACCUMUL", "T_MIN", "T_MAX", "INSTANT"})
    for (const double lag : {0.0, kDt}) {
      SCOPED_TRACE(op + " lag " + std::to_string(lag));
      const std::string dir = fresh_dir("loctrans");
      write_synthetic_weights(dir + "/w.nc", kNs, kNd);
      write_text(dir + "/namcouple", namcouple(4 * kPeriod, "A_F O_F", 2, "LOCTRANS MAPPING\n" + op + "\nw.nc dst bfb\n",
                                               "EXPORTED", "LAG=" + std::to_string(static_cast<long>(lag))));
      Model m;
      m.out = {{"A_F", 1}};
      m.in = {{"O_F", 1}};
      std::vector<std::vector<Info>> puts;
      const auto got = run_model(dir, m, &puts);
      const Decomp dd = dst_decomp(l);
      if (l.src) {
        ASSERT_EQ(puts[0].size(), 12u);
        for (std::size_t k = 0; k < 12; ++k) {
          const double t = static_cast<double>(k) * kDt;
          const bool action = std::fmod(t + lag, kPeriod) == 0.0;
          const Info want = action ? (t + lag >= 4 * kPeriod ? Info::torest : Info::sent)
                                   : (op == "INSTANT" ? Info::ok : Info::loctrans);
          EXPECT_EQ(puts[0][k], want) << "put at t=" << t;
        }
      }
      if (!l.dst) continue;
      ASSERT_EQ(got[0].size(), 12u);
      for (const Got& g : got[0]) {
        if (std::fmod(g.t, kPeriod) != 0.0) {
          EXPECT_EQ(g.info, Info::ok);
          EXPECT_EQ(g.v[0], -999.0) << "a get between coupling times must leave the field alone";
          continue;
        }
        const double tp = g.t - lag;  // the put time of the action received
        std::vector<double> want;
        if (tp < 0) {
          EXPECT_EQ(g.info, Info::fromrest);
          want.assign(static_cast<std::size_t>(dd.size()), 0.0);  // $NNOREST T: zeros
        } else {
          EXPECT_EQ(g.info, Info::recvd);
          const double prev = op == "INSTANT" ? tp - kDt : std::max(tp - kPeriod, -kDt);
          want = local_of(apply_serial(w, loctrans_ref(op, prev, tp), kNd), dd);
        }
        for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(g.v[i], want[i], 1e-12) << "t=" << g.t << " point " << i;
      }
    }
}

// Two fields as one multi-field coupling, as two couplings, and as one bundle of two: the
// values got are bit-identical.
TEST(Couple, MultiFieldAndBundleEqualSingle) {
  const Layout l = layout();
  const std::string rest = "2\nLOCTRANS MAPPING\nAVERAGE\nw.nc src sum\n";
  const auto run = [&](const std::string& strings, const Model& m) {
    const std::string dir = fresh_dir("multi");
    write_synthetic_weights(dir + "/w.nc", kNs, kNd);
    write_text(dir + "/namcouple", " $NFIELDS\n 2\n $END\n $RUNTIME\n 14400\n $END\n $NNOREST\n T\n $END\n $STRINGS\n" +
                                       strings + " $END\n");
    return run_model(dir, m);
  };
  const std::string line = " 1 3600 2 rst.nc EXPORTED\n12 10 8 9 agrd ogrd\nR 0 R 0\nLOCTRANS MAPPING\nAVERAGE\nw.nc src sum\n";
  Model multi, single, bundle;
  multi.out = single.out = {{"A_F", 1}, {"A_G", 1}};
  multi.in = single.in = {{"O_F", 1}, {"O_G", 1}};
  bundle.out = {{"A_B", 2}};
  bundle.in = {{"O_B", 2}};
  const auto a = run("A_F:A_G O_F:O_G" + line, multi);
  const auto b = run("A_F O_F" + line + "A_G O_G" + line, single);
  // The bundle's member b is field number b; the separate fields are 0 and 10: shift A_G.
  Model bundle_same = bundle;
  const auto c = run("A_B O_B" + line, bundle_same);
  if (!l.dst) return;
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (std::size_t f = 0; f < 2; ++f)
    for (std::size_t k = 0; k < a[f].size(); ++k) {
      EXPECT_EQ(a[f][k].info, b[f][k].info);
      ASSERT_EQ(a[f][k].v, b[f][k].v) << "field " << f << " t=" << a[f][k].t;
    }
  // The bundle against the first field (member 0 = field number 0) run alone: bit-identical.
  const std::size_t n = static_cast<std::size_t>(dst_decomp(l).size());
  for (std::size_t k = 0; k < c[0].size(); ++k)
    ASSERT_TRUE(std::equal(a[0][k].v.begin(), a[0][k].v.end(), c[0][k].v.begin())) << "t=" << c[0][k].t;
  ASSERT_EQ(c[0][0].v.size(), 2 * n);
}

// 4 periods in one run equal 2 periods, a restart, and 2 more — bit for bit — also when the
// first half runs on fewer processes: a lagged field (its last put kept for the next run) and
// a field whose LOCTRANS average is cut by the end of the run (partial sum kept).
TEST(Couple, RestartEqualsOneLongRun) {
  const int p = world_size(), r = world_rank();
  const std::string strings =
      "A_F O_F 1 3600 2 atm_rst.nc EXPORTED\n12 10 8 9 agrd ogrd LAG=1200\nR 0 R 0\nLOCTRANS MAPPING\nAVERAGE\nw.nc dst bfb\n"
      "A_G O_G 1 3600 2 atm_rst.nc EXPORTED\n12 10 8 9 agrd ogrd\nR 0 R 0\nLOCTRANS MAPPING\nAVERAGE\nw.nc src sum\n";
  const auto config = [&](const std::string& dir, double runtime, bool norest) {
    write_synthetic_weights(dir + "/w.nc", kNs, kNd);
    write_text(dir + "/namcouple", " $NFIELDS\n 2\n $END\n $RUNTIME\n " + std::to_string(static_cast<long>(runtime)) +
                                       "\n $END\n $NNOREST\n " + (norest ? "T" : "F") + "\n $END\n $STRINGS\n" + strings +
                                       " $END\n");
  };
  Model m;
  m.out = {{"A_F", 1}, {"A_G", 1}};
  m.in = {{"O_F", 1}, {"O_G", 1}};
  // One long run.
  const std::string one = fresh_dir("restart_one");
  config(one, 4 * kPeriod, true);
  const auto whole = run_model(one, m);
  // Two halves; the first on p-1 processes when there are 3 or more.
  const std::string two = fresh_dir("restart_two");
  config(two, 2 * kPeriod, true);
  MPI_Comm first = MPI_COMM_WORLD;
  const bool fewer = p >= 3;
  if (fewer) MPI_Comm_split(MPI_COMM_WORLD, r < p - 1 ? 0 : MPI_UNDEFINED, r, &first);
  if (first != MPI_COMM_NULL) {
    Model a = m;
    a.runtime = 2 * kPeriod;
    a.world = first;
    run_model(two, a);
    if (fewer) MPI_Comm_free(&first);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (r == 0) {
    EXPECT_TRUE(std::filesystem::exists(two + "/atm_rst.nc")) << "the first half wrote no restart";
    EXPECT_FALSE(std::filesystem::exists(two + "/atm_rst.nc.tmp")) << "a temporary file was left";
  }
  config(two, 2 * kPeriod, false);  // the second half must find the restart
  Model b = m;
  b.runtime = 2 * kPeriod;
  b.t0 = 2 * kPeriod;
  const auto second = run_model(two, b);
  if (!layout().dst) return;
  for (std::size_t f = 0; f < 2; ++f) {
    ASSERT_EQ(second[f].size(), 6u);
    for (std::size_t k = 0; k < 6; ++k) {
      const Got& g = second[f][k];
      const Got& w = whole[f][k + 6];  // the same model time in the long run
      EXPECT_EQ(g.info == Info::fromrest ? Info::recvd : g.info, w.info) << "field " << f << " t=" << g.t;
      ASSERT_EQ(g.v, w.v) << "field " << f << " t=" << g.t << " (" << w.t << " in the long run)";
    }
    EXPECT_EQ(second[f][0].info, f == 0 ? Info::fromrest : Info::recvd);
  }
}

namespace {
// A fresh folder with the synthetic weights and a namcouple coupling A_F -> O_F through them,
// and a get/put time-out of 1 s (read at enddef; the caller unsets it afterwards).
ComponentOptions one_mapping_with_short_timeout(const std::string& name) {
  const std::string dir = fresh_dir(name);
  write_synthetic_weights(dir + "/w.nc", kNs, kNd);
  write_text(dir + "/namcouple", namcouple(4 * kPeriod, "A_F O_F", 1, "MAPPING\nw.nc\n"));
  setenv("ESTUARY_COUPLE_TIMEOUT", "1", 1);
  estuary::Settings::reload();
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  return o;
}

}  // namespace

// A get whose partner never puts stops with a message naming the partner, the field and the
// last time it was put, after the configured time-out — not a hang.
TEST(Couple, DeadlockTimesOutWithMessage) {
  const Layout l = layout();
  const ComponentOptions o = one_mapping_with_short_timeout("deadlock");
  Component comp(l.comp, o);
  int dv = -1;
  if (l.src) comp.def_var("A_F", comp.def_partition(src_decomp(l), "agrd"), Direction::out);
  if (l.dst) dv = comp.def_var("O_F", comp.def_partition(dst_decomp(l), "ogrd"), Direction::in);
  comp.enddef();
  unsetenv("ESTUARY_COUPLE_TIMEOUT");
  estuary::Settings::reload();
  EXPECT_EQ(comp.setup().timeout, 1.0);
  if (l.dst) {  // the source side never puts
    std::vector<double> v(static_cast<std::size_t>(dst_decomp(l).size()));
    const double t0 = MPI_Wtime();
    try {
      comp.get(dv, 0, v);
      ADD_FAILURE() << "the get returned although nobody put";
    } catch (const Error& e) {
      const std::string msg = e.what();
      const std::string partner = l.src ? "solo" : "atm";
      EXPECT_NE(msg.find("component " + partner + " to put A_F"), std::string::npos) << msg;
      EXPECT_NE(msg.find("get of O_F at t=0"), std::string::npos) << msg;
      EXPECT_NE(msg.find("last put it never"), std::string::npos) << msg;
    }
    EXPECT_GE(MPI_Wtime() - t0, 0.9);
  }
  comp.terminate();
}

// Faults reported with the field's name: a coupled field nobody defines (at enddef, on every
// rank), and a get called twice for the same time.
TEST(Couple, ErrorsNameTheField) {
  const Layout l = layout();
  const std::string dir = fresh_dir("errors");
  write_synthetic_weights(dir + "/w.nc", kNs, kNd);
  write_text(dir + "/namcouple", namcouple(4 * kPeriod, "A_F O_X", 1, "MAPPING\nw.nc\n"));
  {
    ComponentOptions o;
    o.config = dir + "/namcouple";
    Component comp(l.comp, o);
    if (l.src) comp.def_var("A_F", comp.def_partition(src_decomp(l), "agrd"), Direction::out);
    if (l.dst) comp.def_var("O_F", comp.def_partition(dst_decomp(l), "ogrd"), Direction::in);
    try {
      comp.enddef();
      ADD_FAILURE() << "enddef accepted a coupling of an undefined field";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("field O_X"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("Direction::in"), std::string::npos) << e.what();
    }
  }
  write_text(dir + "/namcouple", namcouple(4 * kPeriod, "A_F O_F", 1, "MAPPING\nw.nc\n"));
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  Component comp(l.comp, o);
  int sv = -1, dv = -1;
  if (l.src) sv = comp.def_var("A_F", comp.def_partition(src_decomp(l), "agrd"), Direction::out);
  if (l.dst) dv = comp.def_var("O_F", comp.def_partition(dst_decomp(l), "ogrd"), Direction::in);
  comp.enddef();
  if (l.src) {
    EXPECT_EQ(comp.put(sv, 0, local_of(global_field(kNs, 0), src_decomp(l))), Info::sent);
  }
  if (l.dst) {
    std::vector<double> v(static_cast<std::size_t>(dst_decomp(l).size()));
    EXPECT_EQ(comp.get(dv, 0, v), Info::recvd);
    try {
      comp.get(dv, 0, v);
      ADD_FAILURE() << "a second get of the same time was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("get of O_F at t=0 called twice"), std::string::npos) << e.what();
    }
  }
  comp.terminate();
}

namespace {
// Every record of a variable in a netCDF file (read with the netCDF library directly).
std::vector<std::vector<double>> nc_records(const std::string& path, const std::string& var, std::vector<double>& times) {
  int nc = -1, tv = -1, vv = -1, td = -1;
  EXPECT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR) << path;
  EXPECT_EQ(nc_inq_varid(nc, "time", &tv), NC_NOERR);
  EXPECT_EQ(nc_inq_varid(nc, var.c_str(), &vv), NC_NOERR) << var;
  EXPECT_EQ(nc_inq_dimid(nc, "time", &td), NC_NOERR);
  std::size_t nt = 0;
  nc_inq_dimlen(nc, td, &nt);
  times.assign(nt, 0.0);
  if (nt) nc_get_var_double(nc, tv, times.data());
  int nd = 0;
  nc_inq_varndims(nc, vv, &nd);
  std::vector<int> dims(static_cast<std::size_t>(nd));
  nc_inq_vardimid(nc, vv, dims.data());
  std::size_t per = 1;
  for (int d = 1; d < nd; ++d) {
    std::size_t len = 0;
    nc_inq_dimlen(nc, dims[static_cast<std::size_t>(d)], &len);
    per *= len;
  }
  std::vector<double> all(nt * per);
  if (!all.empty()) nc_get_var_double(nc, vv, all.data());
  nc_close(nc);
  std::vector<std::vector<double>> out;
  for (std::size_t r = 0; r < nt; ++r) out.emplace_back(all.begin() + static_cast<long>(r * per), all.begin() + static_cast<long>((r + 1) * per));
  return out;
}
}  // namespace

namespace {

// The grid "agrd" of ExpoutOutputAndInputFiles (nx x ny): centres, corners (counter-clockwise
// from the lower left) and a mask (every 7th point masked).
std::pair<double, double> agrd_centre(i64 p) { return {10.0 * static_cast<double>(p % 12) + 5.0, -45.0 + 9.0 * static_cast<double>(p / 12)}; }
std::pair<double, double> agrd_corner(i64 p, int c) {
  const auto [x, y] = agrd_centre(p);
  return {x + (c == 1 || c == 2 ? 5.0 : -5.0), y + (c >= 2 ? 4.5 : -4.5)};
}
bool agrd_masked(i64 p) { return p % 7 == 3; }

// grids.nc (lon, lat, clo, cla) and masks.nc (msk, OASIS's 1 = masked) of grid `name`, laid out
// as OASIS writes them: dims (y_<name>, x_<name>), corners slowest.
void write_oasis_grid_files(const std::string& dir, const std::string& name, int nx, int ny) {
  const i64 n = static_cast<i64>(nx) * ny;
  std::vector<double> lon(static_cast<std::size_t>(n)), lat(lon.size()), clo(4 * lon.size()), cla(clo.size());
  std::vector<int> msk(lon.size());
  for (i64 p = 0; p < n; ++p) {
    const auto u = static_cast<std::size_t>(p);
    std::tie(lon[u], lat[u]) = agrd_centre(p);
    for (int c = 0; c < 4; ++c) std::tie(clo[static_cast<std::size_t>(c * n + p)], cla[static_cast<std::size_t>(c * n + p)]) = agrd_corner(p, c);
    msk[u] = agrd_masked(p) ? 1 : 0;
  }
  int nc = -1, y = -1, x = -1, crn = -1, v = -1;
  nc_create((dir + "/grids.nc").c_str(), NC_CLOBBER, &nc);
  nc_def_dim(nc, ("y_" + name).c_str(), static_cast<std::size_t>(ny), &y);
  nc_def_dim(nc, ("x_" + name).c_str(), static_cast<std::size_t>(nx), &x);
  nc_def_dim(nc, ("crn_" + name).c_str(), 4, &crn);
  const int d2[2] = {y, x}, d3[3] = {crn, y, x};
  for (const char* s : {".lon", ".lat"}) nc_def_var(nc, (name + s).c_str(), NC_DOUBLE, 2, d2, &v);
  for (const char* s : {".clo", ".cla"}) nc_def_var(nc, (name + s).c_str(), NC_DOUBLE, 3, d3, &v);
  nc_enddef(nc);
  const std::pair<const char*, const std::vector<double>*> vars[] = {{".lon", &lon}, {".lat", &lat}, {".clo", &clo}, {".cla", &cla}};
  for (const auto& [s, data] : vars) {
    nc_inq_varid(nc, (name + s).c_str(), &v);
    nc_put_var_double(nc, v, data->data());
  }
  nc_close(nc);
  nc_create((dir + "/masks.nc").c_str(), NC_CLOBBER, &nc);
  nc_def_dim(nc, ("y_" + name).c_str(), static_cast<std::size_t>(ny), &y);
  nc_def_dim(nc, ("x_" + name).c_str(), static_cast<std::size_t>(nx), &x);
  nc_def_var(nc, (name + ".msk").c_str(), NC_INT, 2, d2, &v);
  nc_enddef(nc);
  nc_put_var_int(nc, v, msk.data());
  nc_close(nc);
}

}  // namespace

namespace {
// The run folder of the file tests: the weights, an INPUT file written with the netCDF library
// (O_IN(time, n) at 0, 3600, 7200, 10800), the source grid's grids.nc and masks.nc, and a
// namcouple with an EXPOUT, an OUTPUT and an INPUT coupling. Collective over the world.
void write_files_case(const std::string& dir) {
  write_synthetic_weights(dir + "/w.nc", kNs, kNd);
  if (world_rank() == 0) {
    int nc = -1, td = -1, nd = -1, tv = -1, vv = -1;
    nc_create((dir + "/forcing.nc").c_str(), NC_CLOBBER, &nc);
    nc_def_dim(nc, "time", NC_UNLIMITED, &td);
    nc_def_dim(nc, "n", static_cast<std::size_t>(kNd), &nd);
    nc_def_var(nc, "time", NC_DOUBLE, 1, &td, &tv);
    const int d2[2] = {td, nd};
    nc_def_var(nc, "O_IN", NC_DOUBLE, 2, d2, &vv);
    nc_enddef(nc);
    for (std::size_t r = 0; r < 4; ++r) {
      const double t = 3600.0 * static_cast<double>(r);
      const std::vector<double> v = global_field(kNd, t, 5);
      const std::size_t start[2] = {r, 0}, count[2] = {1, static_cast<std::size_t>(kNd)};
      nc_put_vara_double(nc, tv, start, count, &t);
      nc_put_vara_double(nc, vv, start, count, v.data());
    }
    nc_close(nc);
    // The source grid in the run folder as OASIS's grids.nc and masks.nc hold it (written here
    // with the netCDF library): EXPOUT's file takes its coordinates, bounds and mask from them.
    write_oasis_grid_files(dir, "agrd", 12, 10);
  }
  write_text(dir + "/namcouple",
             " $NFIELDS\n 3\n $END\n $RUNTIME\n 14400\n $END\n $STRINGS\n"
             "A_F O_F 1 3600 2 rst.nc EXPOUT\n12 10 8 9 agrd ogrd\nR 0 R 0\nLOCTRANS MAPPING\nAVERAGE\nw.nc src bfb\n"
             "A_G A_G 1 3600 1 OUTPUT\nagrd agrd\nLOCTRANS\nINSTANT\n"
             "O_IN O_IN 1 3600 0 forcing.nc INPUT\n $END\n");
}
const Model kFilesModel = [] {
  Model m;
  m.out = {{"A_F", 1}, {"A_G", 1}};
  m.in = {{"O_F", 1}, {"O_IN", 1}};
  return m;
}();
}  // namespace

namespace {
// A file's variable: whether it has lon coordinates and a _FillValue (1e20 when it has one).
void expect_coords_and_fill(const std::string& path, const char* var, bool coords, bool fill) {
  int nc = -1, v = -1;
  ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR) << path;
  EXPECT_EQ(nc_inq_varid(nc, "lon", &v) == NC_NOERR, coords) << path;
  nc_inq_varid(nc, var, &v);
  double value = 0;
  EXPECT_EQ(nc_get_att_double(nc, v, "_FillValue", &value) == NC_NOERR, fill) << path;
  if (fill) {
    EXPECT_EQ(value, 1e20) << path;
  }
  nc_close(nc);
}
}  // namespace

// EXPOUT writes both sides' values at every coupling time; OUTPUT writes the source's values
// to a file and sends nothing; INPUT gets its values from a file another tool wrote.
TEST(Couple, ExpoutOutputAndInputFiles) {
  const Layout l = layout();
  const Links w = synthetic_links(kNs, kNd);
  const std::string dir = fresh_dir("files");
  write_files_case(dir);
  std::vector<std::vector<Info>> puts;
  const auto got = run_model(dir, kFilesModel, &puts);
  const Decomp dd = dst_decomp(l);
  if (l.src) {
    for (std::size_t k = 0; k < puts[0].size(); ++k) {
      EXPECT_EQ(puts[0][k], k % 3 == 0 ? Info::sentout : Info::loctrans) << k;
      EXPECT_EQ(puts[1][k], k % 3 == 0 ? Info::output : Info::ok) << k;
    }
  }
  if (l.dst) {
    for (const Got& g : got[1]) {  // INPUT: the file's record at each coupling time
      if (std::fmod(g.t, kPeriod) != 0) continue;
      EXPECT_EQ(g.info, Info::input);
      const std::vector<double> want = local_of(global_field(kNd, g.t, 5), dd);
      ASSERT_EQ(g.v, want) << "t=" << g.t;
    }
    for (const Got& g : got[0]) {
      if (std::fmod(g.t, kPeriod) == 0) {
        EXPECT_EQ(g.info, Info::recvout);
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() != 0) return;
  const std::string src_comp = l.dst && l.src ? "solo" : "atm", dst_comp = l.dst && l.src ? "solo" : "ocn";
  std::vector<double> times;
  // EXPOUT source side: the LOCTRANS averages; target side: W times them.
  const auto srec = nc_records(dir + "/A_F_" + src_comp + ".nc", "A_F", times);
  ASSERT_EQ(times, (std::vector<double>{0, 3600, 7200, 10800}));
  const auto drec = nc_records(dir + "/O_F_" + dst_comp + ".nc", "O_F", times);
  ASSERT_EQ(times, (std::vector<double>{0, 3600, 7200, 10800}));
  for (std::size_t r = 0; r < 4; ++r) {
    const double t = 3600.0 * static_cast<double>(r);
    const std::vector<double> avg = loctrans_ref("AVERAGE", std::max(t - kPeriod, -kDt), t);
    ASSERT_EQ(srec[r].size(), static_cast<std::size_t>(kNs));
    for (std::size_t i = 0; i < avg.size(); ++i) {
      if (agrd_masked(static_cast<i64>(i))) ASSERT_EQ(srec[r][i], 1e20) << "masked point " << i << " t=" << t;
      else ASSERT_NEAR(srec[r][i], avg[i], 1e-14) << "t=" << t;
    }
    const std::vector<double> want = apply_serial(w, avg, kNd);
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(drec[r][i], want[i], 1e-12) << "t=" << t;
  }
  // OUTPUT: the value put at each coupling time, nothing in between (masked points filled).
  const auto orec = nc_records(dir + "/A_G_" + src_comp + ".nc", "A_G", times);
  ASSERT_EQ(times, (std::vector<double>{0, 3600, 7200, 10800}));
  for (std::size_t r = 0; r < 4; ++r) {
    std::vector<double> want = global_field(kNs, 3600.0 * static_cast<double>(r), 10);
    for (i64 i = 0; i < kNs; ++i)
      if (agrd_masked(i)) want[static_cast<std::size_t>(i)] = 1e20;
    ASSERT_EQ(orec[r], want);
  }
  // CF: the source side's files carry the grid's coordinates (OASIS's corner-slowest corners as
  // CF's corner-fastest bounds) and the fill value; the target grid is in no grid file: neither.
  for (const std::string& f : {"/A_F_" + src_comp + ".nc", "/A_G_" + src_comp + ".nc"}) {
    int nc = -1, v = -1;
    ASSERT_EQ(nc_open((dir + f).c_str(), NC_NOWRITE, &nc), NC_NOERR) << f;
    std::vector<double> lon(kNs), lat(kNs), lon_b(4 * kNs), lat_b(4 * kNs);
    ASSERT_EQ(nc_inq_varid(nc, "lon", &v), NC_NOERR) << f;
    nc_get_var_double(nc, v, lon.data());
    nc_inq_varid(nc, "lat", &v);
    nc_get_var_double(nc, v, lat.data());
    ASSERT_EQ(nc_inq_varid(nc, "lon_bnds", &v), NC_NOERR) << f;
    nc_get_var_double(nc, v, lon_b.data());
    nc_inq_varid(nc, "lat_bnds", &v);
    nc_get_var_double(nc, v, lat_b.data());
    for (i64 p = 0; p < kNs; ++p) {
      const auto [x, y] = agrd_centre(p);
      ASSERT_EQ(lon[static_cast<std::size_t>(p)], x) << f << " point " << p;
      ASSERT_EQ(lat[static_cast<std::size_t>(p)], y) << f << " point " << p;
      for (int c = 0; c < 4; ++c) {
        const auto [cx, cy] = agrd_corner(p, c);
        ASSERT_EQ(lon_b[static_cast<std::size_t>(4 * p + c)], cx) << f << " point " << p << " corner " << c;
        ASSERT_EQ(lat_b[static_cast<std::size_t>(4 * p + c)], cy) << f << " point " << p << " corner " << c;
      }
    }
    const std::string field = f.substr(1, 3);
    nc_inq_varid(nc, field.c_str(), &v);
    double fill = 0;
    EXPECT_EQ(nc_get_att_double(nc, v, "_FillValue", &fill), NC_NOERR) << f;
    EXPECT_EQ(fill, 1e20) << f;
    std::size_t len = 0;
    ASSERT_EQ(nc_inq_attlen(nc, v, "coordinates", &len), NC_NOERR) << f;
    std::string coords(len, '\0');
    nc_get_att_text(nc, v, "coordinates", coords.data());
    EXPECT_EQ(coords, "lon lat") << f;
    nc_close(nc);
  }
  expect_coords_and_fill(dir + "/O_F_" + dst_comp + ".nc", "O_F", false, false);
}

// A grid whose mask is in masks.nc but whose coordinates are in no grids.nc: EXPOUT's file has
// no coordinates, but its masked points are still the fill value, declared as _FillValue.
TEST(Couple, ExpoutMaskWithoutGridFile) {
  const Layout l = layout();
  const std::string dir = fresh_dir("files_mask_only");
  write_files_case(dir);
  if (world_rank() == 0) std::filesystem::remove(dir + "/grids.nc");
  MPI_Barrier(MPI_COMM_WORLD);
  run_model(dir, kFilesModel, nullptr);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() != 0) return;
  const std::string src_comp = l.dst && l.src ? "solo" : "atm";
  std::vector<double> times;
  const auto srec = nc_records(dir + "/A_F_" + src_comp + ".nc", "A_F", times);
  ASSERT_EQ(times, (std::vector<double>{0, 3600, 7200, 10800}));
  for (std::size_t r = 0; r < 4; ++r) {
    const double t = 3600.0 * static_cast<double>(r);
    const std::vector<double> avg = loctrans_ref("AVERAGE", std::max(t - kPeriod, -kDt), t);
    for (std::size_t i = 0; i < avg.size(); ++i) {
      if (agrd_masked(static_cast<i64>(i))) ASSERT_EQ(srec[r][i], 1e20) << "masked point " << i << " t=" << t;
      else ASSERT_NEAR(srec[r][i], avg[i], 1e-14) << "t=" << t;
    }
  }
  expect_coords_and_fill(dir + "/A_F_" + src_comp + ".nc", "A_F", false, true);
}

namespace {
// Every variable of a netCDF file as doubles, by name (read with the netCDF library directly).
std::map<std::string, std::vector<double>> nc_variables(const std::string& path) {
  std::map<std::string, std::vector<double>> out;
  int nc = -1, nvars = 0;
  EXPECT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR) << path;
  nc_inq_nvars(nc, &nvars);
  for (int v = 0; v < nvars; ++v) {
    char name[NC_MAX_NAME + 1] = {};
    nc_inq_varname(nc, v, name);
    const std::size_t n = nc_values(nc, v);
    std::vector<double>& values = out[name];
    values.resize(n);
    if (n) {
      EXPECT_EQ(nc_get_var_double(nc, v, values.data()), NC_NOERR) << path << " " << name;
    }
  }
  nc_close(nc);
  return out;
}
}  // namespace

// The coupler's files do not depend on the process count, and no rank holds a global field for
// them. The files of ExpoutOutputAndInputFiles's run (EXPOUT both sides, OUTPUT, the restart) on
// every rank equal, variable by variable and bit for bit, those of the same run on one rank
// fewer (whose sides have other counts, so other slabs and writers); and each rank's largest
// buffer of a field for the files (its points, the slabs the I/O layer wrote or read for it)
// is at most 1/count of the field, count being the ranks of its side.
TEST(Couple, FilesSameOnFewerRanksNoGlobalBuffer) {
  const int p = world_size(), r = world_rank();
  const Layout l = layout();
  const std::string all = fresh_dir("files_all"), fewer = fresh_dir("files_fewer");
  write_files_case(all);
  write_files_case(fewer);
  estuary::detail::reset_coupler_file_buffer_peak();
  run_model(all, kFilesModel);
  const i64 peak = estuary::detail::coupler_file_buffer_peak(), largest = l.src ? kNs : kNd;
  EXPECT_GT(peak, 0) << "nothing metered";
  EXPECT_LE(peak, (largest + l.count - 1) / l.count) << "rank " << r << " of " << l.count << " on its side";
  if (l.count > 1) {
    EXPECT_LT(peak, largest) << "rank " << r << " held a whole field";
  }
  if (p < 3) return;  // one rank fewer must still have both sides
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, r < p - 1 ? 0 : MPI_UNDEFINED, r, &sub);
  if (sub != MPI_COMM_NULL) {
    Model m = kFilesModel;
    m.world = sub;
    run_model(fewer, m);
    MPI_Comm_free(&sub);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (r != 0) return;
  for (const std::string f : {"A_F_atm.nc", "O_F_ocn.nc", "A_G_atm.nc", "rst.nc"}) {
    const auto a = nc_variables(all + "/" + f), b = nc_variables(fewer + "/" + f);
    ASSERT_FALSE(a.empty()) << f;
    ASSERT_EQ(a.size(), b.size()) << f;
    for (const auto& [name, values] : a) {
      ASSERT_TRUE(b.count(name)) << f << " " << name;
      const std::vector<double>& other = b.at(name);
      ASSERT_EQ(values.size(), other.size()) << f << " " << name;
      EXPECT_EQ(std::memcmp(values.data(), other.data(), values.size() * sizeof(double)), 0)
          << f << " " << name << ": not bit for bit the same on " << p << " and " << p - 1 << " ranks";
    }
  }
}

namespace {
// Synthetic cell areas (any positive numbers serve CONSERV) and a mask with a few holes.
double area_of(i64 i, bool source) { return source ? 1.0 + 0.01 * static_cast<double>(i % 17) : 2.0 + 0.03 * static_cast<double>(i % 5); }
std::int32_t mask_of(i64 i) { return i % 11 == 3 ? 0 : 1; }

Grid grid_of(const Decomp& d, bool source) {
  Grid g;
  for (i64 i : d.to_indices()) {
    g.lon.push_back(static_cast<double>(i % 12) * 30.0);
    g.lat.push_back(-60.0 + static_cast<double>(i / 12) * 10.0);
    g.area.push_back(area_of(i, source));
    if (!source) g.mask.push_back(mask_of(i));
  }
  return g;
}
}  // namespace

// One source field to two targets: one through BLASOLD, the mapping, CONSERV GLOBAL (gather)
// and BLASNEW, with CHECKIN/CHECKOUT lines in the log; the other plain. Values equal the
// serial formulas of OASIS's CONSERV applied to W times the transformed source.
TEST(Couple, ConservBlasAndOneSourceToTwoTargets) {
  const Layout l = layout();
  const Links w = synthetic_links(kNs, kNd);
  const std::string dir = fresh_dir("conserv");
  write_synthetic_weights(dir + "/w.nc", kNs, kNd);
  write_text(dir + "/namcouple",
             " $NFIELDS\n 2\n $END\n $RUNTIME\n 7200\n $END\n $STRINGS\n"
             "A_F O_F 1 3600 6 rst.nc EXPORTED\n12 10 8 9 agrd ogrd\nR 0 R 0\n"
             "CHECKIN BLASOLD MAPPING CONSERV BLASNEW CHECKOUT\nINT=1\n2.0 1\nCONSTANT 1.0\nw.nc dst bfb\nGLOBAL gather\n"
             "0.5 1\nCONSTANT -3.0\nINT=1\n"
             "A_F O_P 1 3600 1 rst2.nc EXPORTED\n12 10 8 9 agrd ogrd\nR 0 R 0\nMAPPING\nw.nc\n $END\n");
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  Component comp(l.comp, o);
  const Decomp sd = src_decomp(l), dd = dst_decomp(l);
  int sv = -1, dv = -1, pv = -1;
  if (l.src) {
    const int part = comp.def_partition(sd, "agrd");
    comp.def_grid("agrd", part, grid_of(sd, true));
    sv = comp.def_var("A_F", part, Direction::out);
  }
  if (l.dst) {
    const int part = comp.def_partition(dd, "ogrd");
    comp.def_grid("ogrd", part, grid_of(dd, false));
    dv = comp.def_var("O_F", part, Direction::in);
    pv = comp.def_var("O_P", part, Direction::in);
  }
  comp.enddef();
  for (double t = 0; t < 7200; t += kPeriod) {
    if (l.src) {
      EXPECT_EQ(comp.put(sv, t, local_of(global_field(kNs, t), sd)), Info::sent);
    }
    if (!l.dst) continue;
    std::vector<double> f(static_cast<std::size_t>(dd.size())), p(f.size());
    EXPECT_EQ(comp.get(dv, t, f), Info::recvd);
    EXPECT_EQ(comp.get(pv, t, p), Info::recvd);
    // The reference: x = 2 src + 1; y = W x; GLOBAL over valid target points; z = 0.5 y - 3.
    std::vector<double> x = global_field(kNs, t);
    const std::vector<double> plain = apply_serial(w, x, kNd);
    for (double& v : x) v = 2.0 * v + 1.0;
    std::vector<double> y = apply_serial(w, x, kNd);
    double ss = 0, sdst = 0, ad = 0;
    for (i64 i = 0; i < kNs; ++i) ss += x[static_cast<std::size_t>(i)] * area_of(i, true);
    for (i64 j = 0; j < kNd; ++j)
      if (mask_of(j)) {
        sdst += y[static_cast<std::size_t>(j)] * area_of(j, false);
        ad += area_of(j, false);
      }
    for (i64 j = 0; j < kNd; ++j)
      if (mask_of(j)) y[static_cast<std::size_t>(j)] -= (sdst - ss) / ad;
    for (double& v : y) v = 0.5 * v - 3.0;
    const std::vector<double> want = local_of(y, dd), want_plain = local_of(plain, dd);
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(f[i], want[i], 1e-11) << "t=" << t << " point " << i;
      ASSERT_EQ(p[i], want_plain[i]) << "the plain target of the same source, t=" << t << " point " << i;
    }
    EXPECT_NEAR(comp.last_source_integral(dv), ss, 1e-9 * std::fabs(ss));
  }
  comp.terminate();
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() != 0) return;
  // CHECKIN (source) and CHECKOUT (target) wrote one line per coupling time to the logs, with
  // the global sum of the values before BLASOLD and after BLASNEW.
  std::string logs;
  for (const char* c : {"atm", "ocn", "solo"}) {
    std::ifstream in(dir + "/estuary." + std::string(c) + ".log");
    logs += std::string(std::istreambuf_iterator<char>(in), {});
  }
  for (const std::string what : {"CHECKIN A_F -> O_F", "CHECKOUT A_F -> O_F"})
    for (const std::string t : {"t=0 ", "t=3600 "})
      EXPECT_NE(logs.find(what + " (" + dir + "/namcouple:8) " + t), std::string::npos) << what << " " << t << "\n" << logs;
  double s0 = 0;
  for (double v : global_field(kNs, 0)) s0 += v;
  const std::size_t at = logs.find("CHECKIN A_F -> O_F (" + dir + "/namcouple:8) t=0 value 0:");
  ASSERT_NE(at, std::string::npos) << logs;
  const std::size_t sum_at = logs.find("sum ", at);
  ASSERT_NE(sum_at, std::string::npos) << logs;
  EXPECT_NEAR(std::stod(logs.substr(sum_at + 4, 30)), s0, 1e-12 * std::max(1.0, std::fabs(s0))) << logs;
}

// OASIS ig_paral arrays (0-based offsets) give the points OASIS's documentation says, in order;
// malformed ones are refused with the entry at fault.
TEST(Couple, OasisPartitions) {
  using V = std::vector<i64>;
  const auto pts = [](std::initializer_list<i64> p, i64 n) {
    const V a(p);
    return oasis_partition(a, n).to_indices();
  };
  EXPECT_EQ(pts({0, 0, 6}, 6), (V{0, 1, 2, 3, 4, 5}));                     // serial
  EXPECT_EQ(pts({1, 3, 4}, 10), (V{3, 4, 5, 6}));                          // apple
  EXPECT_EQ(pts({2, 5, 2, 3, 4}, 20), (V{5, 6, 9, 10, 13, 14}));           // box: 2 x 3 in rows of 4
  EXPECT_EQ(pts({3, 2, 7, 2, 1, 3}, 10), (V{7, 8, 1, 2, 3}));              // orange: two segments
  EXPECT_EQ(pts({4, 3, 9, 0, 4}, 10), (V{9, 0, 4}));                       // points
  const auto refused = [](std::initializer_list<i64> p, i64 n, const std::string& words) {
    const V a(p);
    try {
      oasis_partition(a, n);
      ADD_FAILURE() << "accepted " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused({1, 8, 4}, 10, "outside the grid's 10 points");
  refused({2, 3, 2, 2, 4}, 20, "does not fit rows of 4");
  refused({3, 2, 0, 2}, 10, "the orange form needs 6");
  refused({4, 2, 3, 10}, 10, "point 2 is 10");
  refused({7, 1}, 10, "unknown partition kind 7");
  refused({0, 0, 5}, 6, "serial size 5 differs");
}

// A put runs at most one coupling period ahead: when the target never gets, the next coupling
// time's put stops after the time-out naming the target and the time it did not get; on ranks
// that both put and get, putting the next time before getting this one is refused at once.
// terminate() then reports the transfer that was never got, on every rank.
TEST(Couple, PutWaitsAtMostOnePeriod) {
  const Layout l = layout();
  const ComponentOptions o = one_mapping_with_short_timeout("putwait");
  Component comp(l.comp, o);
  int sv = -1;
  if (l.src) sv = comp.def_var("A_F", comp.def_partition(src_decomp(l), "agrd"), Direction::out);
  if (l.dst) comp.def_var("O_F", comp.def_partition(dst_decomp(l), "ogrd"), Direction::in);
  comp.enddef();  // reads the time-out
  unsetenv("ESTUARY_COUPLE_TIMEOUT");
  estuary::Settings::reload();
  if (l.src) {
    const std::vector<double> v = local_of(global_field(kNs, 0), src_decomp(l));
    EXPECT_EQ(comp.put(sv, 0, v), Info::sent);  // the target never gets it
    try {
      comp.put(sv, kPeriod, v);
      ADD_FAILURE() << "the next coupling time's put returned";
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (l.dst) {
        EXPECT_NE(msg.find("before the get of the coupling time 0 on a rank that both puts and gets"), std::string::npos) << msg;
      } else {
        EXPECT_NE(msg.find("waited 1 s for component ocn to get the coupling time 0"), std::string::npos) << msg;
        EXPECT_NE(msg.find("ocn last got it never"), std::string::npos) << msg;
      }
    }
  }
  try {
    comp.terminate();
    ADD_FAILURE() << "terminate accepted a transfer that was never got";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("terminate before the get of the coupling time 0") != std::string::npos ||
                msg.find("terminate waited 1 s for component ocn to get the coupling time 0") != std::string::npos)
        << msg;
  }
}

// SCRIPR CONSERV without a weight file: estuary generates first-order FRACAREA weights at
// enddef (lon-lat source, tripolar target), the coupled values equal W f computed serially
// with conservative_weights; the weights are cached in rmp_agrd_to_ogrd_CONSERV_FRACAREA.nc
// with the grids' fingerprint and reused by the next run; a changed grid (a land mask) makes
// the next run generate them again.
namespace {

struct ConservRun {
  std::vector<std::vector<double>> got;  // per coupling time, this rank's target values
  std::string log;                       // this component's log
};

// One coupling (A_F on agrd -> O_F on ogrd) run for `times` coupling times: the source puts
// field(t) on the grid src_grid makes of its partition, the target (tripolar 8 x 9, with land
// if `ocean_land`) gets.
ConservRun run_scripr(const std::string& dir, const std::function<estuary::Grid(const Decomp&)>& src_grid,
                      const std::function<std::vector<double>(double)>& field, int times, bool ocean_land = false,
                      i64 src_size = kNs, const std::string& config = "namcouple") {
  const Layout l = layout();
  ComponentOptions o;
  o.config = dir + "/" + config;
  o.directory = dir;
  ConservRun out;
  {
    Component comp(l.comp, o);
    const Decomp sd = l.src ? gen::cyclic(src_size, l.index, l.count) : Decomp::empty(src_size), dd = dst_decomp(l);
    const GridGen dg = ocean_land ? GridGen::tripolar(8, 9).with_land() : GridGen::tripolar(8, 9);
    int sv = -1, dv = -1;
    if (l.src) {
      const int part = comp.def_partition(sd, "agrd");
      comp.def_grid("agrd", part, src_grid(sd));
      sv = comp.def_var("A_F", part, Direction::out);
    }
    if (l.dst) {
      const int part = comp.def_partition(dd, "ogrd");
      comp.def_grid("ogrd", part, dg.make(dd));
      dv = comp.def_var("O_F", part, Direction::in);
    }
    comp.enddef();
    for (int k = 0; k < times; ++k) {
      const double t = k * kPeriod;
      if (l.src) comp.put(sv, t, local_of(field(t), sd));
      if (l.dst) {
        std::vector<double> v(static_cast<std::size_t>(dd.size()), -999.0);
        comp.get(dv, t, v);
        out.got.push_back(v);
      }
    }
    comp.terminate();
  }
  std::ifstream f(dir + "/estuary." + l.comp + ".log");
  std::stringstream ss;
  ss << f.rdbuf();
  out.log = ss.str();
  return out;
}

ConservRun run_scripr_conserv(const std::string& dir, bool land, const std::string& config = "namcouple") {
  const GridGen sg = land ? GridGen::lonlat(12, 10).with_land() : GridGen::lonlat(12, 10);
  return run_scripr(dir, [&](const Decomp& d) { return sg.make(d); }, [](double t) { return global_field(kNs, t); }, 2,
                    false, kNs, config);
}

// The target values of each coupling time against W f(t) computed serially, at the targets W
// reaches (the others keep what the coupler gives targets without links).
void expect_coupled(const ConservRun& r, const Links& w, const Layout& l) {
  const Decomp dd = dst_decomp(l);
  ASSERT_EQ(r.got.size(), 2u);
  std::vector<char> mapped(static_cast<std::size_t>(kNd), 0);
  for (i64 k = 0; k < w.size(); ++k) mapped[static_cast<std::size_t>(w.row[static_cast<std::size_t>(k)])] = 1;
  const std::vector<i64> idx = dd.to_indices();
  for (std::size_t ti = 0; ti < r.got.size(); ++ti) {
    const std::vector<double> f = global_field(kNs, static_cast<double>(ti) * kPeriod);
    std::vector<double> ref(static_cast<std::size_t>(kNd), 0.0);
    for (i64 k = 0; k < w.size(); ++k) {
      const auto u = static_cast<std::size_t>(k);
      ref[static_cast<std::size_t>(w.row[u])] += w.weight[u] * f[static_cast<std::size_t>(w.col[u])];
    }
    const std::vector<double> want = local_of(ref, dd);
    for (std::size_t j = 0; j < want.size(); ++j) {
      if (!mapped[static_cast<std::size_t>(idx[j])]) continue;
      EXPECT_NEAR(r.got[ti][j], want[j], 1e-12 * (1 + std::abs(want[j]))) << "point " << idx[j] << " time " << ti;
    }
  }
}

}  // namespace

TEST(Couple, ScriprConservGeneratedAndCached) {
  const Layout l = layout();
  const std::string dir = fresh_dir("scripr_conserv");
  write_text(dir + "/namcouple", namcouple(2 * kPeriod, "A_F O_F", 1, "SCRIPR\nCONSERV LR SCALAR LATLON 1 FRACAREA FIRST\n"));
  const std::string cache = dir + "/rmp_agrd_to_ogrd_CONSERV_FRACAREA.nc";
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const bool land = run == 2;
    const ConservRun r = run_scripr_conserv(dir, land);
    const std::string expect = run == 1 ? "CONSERV weights reused from" : "CONSERV weights generated in";
    EXPECT_NE(r.log.find(expect), std::string::npos) << r.log;
    EXPECT_TRUE(std::filesystem::exists(cache));
    EXPECT_FALSE(read_global_attribute(cache, "estuary_fingerprint", MPI_COMM_SELF).empty());
    if (!l.dst) continue;
    // The serial reference: the same weights computed on this rank alone, applied to f(t).
    const GridGen sg = land ? GridGen::lonlat(12, 10).with_land() : GridGen::lonlat(12, 10);
    const ConservativeWeights w = conservative_weights(sg.make(), GridGen::tripolar(8, 9).make(), MPI_COMM_SELF);
    ASSERT_GT(w.links.size(), 0);
    const Decomp dd = dst_decomp(l);
    ASSERT_EQ(r.got.size(), 2u);
    for (std::size_t ti = 0; ti < r.got.size(); ++ti) {
      const std::vector<double> f = global_field(kNs, static_cast<double>(ti) * kPeriod);
      std::vector<double> ref(static_cast<std::size_t>(kNd), 0.0);
      for (i64 k = 0; k < w.links.size(); ++k) {
        const auto u = static_cast<std::size_t>(k);
        ref[static_cast<std::size_t>(w.links.row[u])] += w.links.weight[u] * f[static_cast<std::size_t>(w.links.col[u])];
      }
      const std::vector<double> want = local_of(ref, dd);
      for (std::size_t j = 0; j < want.size(); ++j)
        EXPECT_NEAR(r.got[ti][j], want[j], 1e-12 * (1 + std::abs(want[j]))) << "point " << j << " time " << ti;
    }
  }
}

// SCRIPR BICUBIC, BILINEAR(NF) and GAUSWGT generated at enddef on a source with land: the coupled values
// equal W f with W computed serially (CDO's genbic links folded with its gradients, or bilinear
// links), plus OASIS's nearest-neighbour fill of the targets the method leaves without links
// unless the method ends in NF.
TEST(Couple, ScriprBicubicAndBilinearWithNearestFill) {
  const Layout l = layout();
  for (const std::string method : {"BICUBIC", "BILINEAR", "BILINEARNF", "GAUSWGT"}) {
    SCOPED_TRACE(method);
    const std::string dir = fresh_dir("scripr_" + method);
    const std::string params = method == "GAUSWGT" ? " 3 1.5" : "";
    write_text(dir + "/namcouple", namcouple(2 * kPeriod, "A_F O_F", 1, "SCRIPR\n" + method + " LR SCALAR LATLON 1" + params + "\n"));
    const ConservRun r = run_scripr_conserv(dir, true);
    if (!l.dst) continue;
    const estuary::Grid sg = GridGen::lonlat(12, 10).with_land().make(), dg = GridGen::tripolar(8, 9).make();
    estuary::GaussianWeightOptions go;
    go.neighbors = 3;
    go.variance = 1.5;
    Links w = method == "BICUBIC" ? estuary::bicubic_weights(sg, dg, MPI_COMM_SELF).links
              : method == "GAUSWGT" ? estuary::gaussian_weights(sg, dg, MPI_COMM_SELF, go)
                                    : estuary::bilinear_weights(sg, dg, MPI_COMM_SELF);
    const i64 before = w.size();
    if (method != "BILINEARNF") estuary::fill_nearest(sg, dg, MPI_COMM_SELF, w);
    if (method == "BILINEAR") {
      EXPECT_GT(w.size(), before) << "the case must leave targets for the fill";
      EXPECT_NE(r.log.find("filled from the nearest unmasked source point"), std::string::npos) << r.log;
    }
    expect_coupled(r, w, l);
  }
}


// MAPPING with SCRIPR in one entry (ACCESS-OM2's "LOCTRANS MAPPING SCRIPR"; OASIS3-MCT's
// mod_oasis_coupler): the MAPPING file when it is there, as it is; else the SCRIPR weights,
// generated at enddef and written under the MAPPING name for the next run. Run 0: no file, the
// DISTWGT weights (with OASIS's nearest fill) are generated and written there; run 1: that file
// is read; run 2: a user's file (bilinear weights) put there is read as it stands. CONSERV
// likewise writes its weights under the MAPPING name, not rmp_..._CONSERV_....nc.
TEST(Couple, MappingWithScriprReadsTheFileOrWritesIt) {
  const Layout l = layout();
  const std::string dir = fresh_dir("mapping_scripr");
  write_text(dir + "/namcouple", namcouple(2 * kPeriod, "A_F O_F", 2, "MAPPING SCRIPR\nw_dist.nc\nDISTWGT LR SCALAR LATLON 1 4\n"));
  const std::string file = dir + "/w_dist.nc";
  const estuary::Grid sg = GridGen::lonlat(12, 10).with_land().make(), dg = GridGen::tripolar(8, 9).make();
  estuary::DistanceWeightOptions o;
  o.neighbors = 4;
  Links dist = estuary::distance_weights(sg, dg, MPI_COMM_SELF, o);
  estuary::fill_nearest(sg, dg, MPI_COMM_SELF, dist);
  const Links user = estuary::bilinear_weights(sg, dg, MPI_COMM_SELF);
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    if (run == 2) {  // a user's file in its place (written by one rank, while the others wait)
      MPI_Barrier(MPI_COMM_WORLD);
      int world_rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
      if (world_rank == 0) {
        std::filesystem::remove(file);
        estuary::write_weights(file, user, kNs, kNd, MPI_COMM_SELF);
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
    const ConservRun r = run_scripr_conserv(dir, true);
    EXPECT_TRUE(std::filesystem::exists(file));
    if (run == 0) {
      EXPECT_NE(r.log.find("SCRIPR DISTWGT weights generated in"), std::string::npos) << r.log;
    } else {
      EXPECT_NE(r.log.find("MAPPING file " + file + " is there: read as it is, SCRIPR DISTWGT not run"), std::string::npos) << r.log;
    }
    if (run < 2) {  // the file holds the generated weights (in the order the ranks made them)
      const auto triples = [](const Links& a) {
        std::vector<std::tuple<i64, i64, double>> t;
        for (i64 k = 0; k < a.size(); ++k) {
          const auto u = static_cast<std::size_t>(k);
          t.emplace_back(a.row[u], a.col[u], a.weight[u]);
        }
        std::sort(t.begin(), t.end());
        return t;
      };
      EXPECT_EQ(triples(estuary::read_weights(file, MPI_COMM_SELF).links), triples(dist));
    }
    if (!l.dst) continue;
    expect_coupled(r, run < 2 ? dist : user, l);
  }
  // CONSERV: generated into the MAPPING name.
  const std::string cdir = fresh_dir("mapping_scripr_conserv");
  write_text(cdir + "/namcouple",
             namcouple(2 * kPeriod, "A_F O_F", 2, "MAPPING SCRIPR\nw_cons.nc\nCONSERV LR SCALAR LATLON 1 FRACAREA FIRST\n"));
  const ConservRun r = run_scripr_conserv(cdir, false);
  EXPECT_TRUE(std::filesystem::exists(cdir + "/w_cons.nc"));
  EXPECT_FALSE(std::filesystem::exists(cdir + "/rmp_agrd_to_ogrd_CONSERV_FRACAREA.nc"));
  EXPECT_NE(r.log.find("CONSERV weights generated in"), std::string::npos) << r.log;
}

// SCRIPR LOCCUNIF / LOCCDIST / LOCCGAUS (OASIS3-MCT 5's runoff mapping) generated at enddef: a land
// model (lon-lat, its land points valid) sends the runoff of one river mouth, the ocean (tripolar
// with land) receives it on its nearest ocean points. The coupled values equal W f with W from
// runoff_weights computed serially, only ocean points receive, and the area-weighted total of the
// river arrives whole: sum_t A_t g_t = A_s f_s.
TEST(Couple, ScriprRunoffRiverMouth) {
  const Layout l = layout();
  const GridGen sg = GridGen::lonlat(12, 10).with_land(), dg = GridGen::tripolar(8, 9).with_land();
  auto land_model = [&](const Decomp& d) {
    estuary::Grid g = sg.make(d);
    for (auto& m : g.mask) m = 1 - m;  // the land points are the ones with runoff
    return g;
  };
  const estuary::Grid s_all = land_model(gen::block(kNs, 0, 1)), d_all = dg.make();
  // The river mouth: the land point nearest to the ocean point 20 (on the coast).
  i64 mouth = -1;
  for (i64 i = 0; i < kNs; ++i)
    if (s_all.valid(i) && (mouth < 0 || std::abs(s_all.lat[i] - d_all.lat[20]) + std::abs(s_all.lon[i] - d_all.lon[20]) <
                                           std::abs(s_all.lat[mouth] - d_all.lat[20]) + std::abs(s_all.lon[mouth] - d_all.lon[20])))
      mouth = i;
  ASSERT_GE(mouth, 0);
  std::vector<double> f(static_cast<std::size_t>(kNs), 0.0);
  f[static_cast<std::size_t>(mouth)] = 2500.0;
  for (const std::string method : {"LOCCUNIF", "LOCCDIST", "LOCCGAUS", "SPMAP"}) {
    SCOPED_TRACE(method);
    const std::string dir = fresh_dir("scripr_" + method);
    const std::string params = method == "LOCCGAUS" ? " 3 0.8" : " 3";
    if (method == "SPMAP")  // YAC's, from a YAML configuration
      write_text(dir + "/namcouple", "runtime: " + std::to_string(static_cast<long>(kPeriod)) +
                                         "\ncouplings:\n  - source: {field: A_F, grid: agrd}\n"
                                         "    target: {field: O_F, grid: ogrd}\n    period: " +
                                         std::to_string(static_cast<long>(kPeriod)) +
                                         "\n    transforms:\n      - scripr: {method: spmap, spread_distance: 60, "
                                         "weighting: dist, scaling: fracarea}\n");
    else
      write_text(dir + "/namcouple", namcouple(kPeriod, "A_F O_F", 1, "SCRIPR\n" + method + " LR SCALAR LATLON 1" + params + "\n"));
    const ConservRun run = run_scripr(dir, land_model, [&](double) { return f; }, 1, true);
    const std::vector<double> got = l.dst ? run.got.at(0) : std::vector<double>();
    const Decomp dd = dst_decomp(l);
    // The serial reference, and the river's total where it arrives.
    estuary::RunoffOptions ro;
    ro.neighbors = 3;
    ro.variance = 0.8;
    ro.weighting = method == "LOCCUNIF"   ? estuary::RunoffWeighting::uniform
                   : method == "LOCCGAUS" ? estuary::RunoffWeighting::gaussian
                                          : estuary::RunoffWeighting::distance;
    if (method == "SPMAP") ro.spread_distance = 60;
    const Links w = estuary::runoff_weights(s_all, d_all, MPI_COMM_SELF, ro);
    const auto reached = std::count(w.col.begin(), w.col.end(), mouth);
    EXPECT_EQ(reached > 3, method == "SPMAP") << reached << " ocean points reached from the mouth";
    std::vector<double> ref(static_cast<std::size_t>(kNd), 0.0);
    std::vector<char> mapped(static_cast<std::size_t>(kNd), 0);
    for (i64 k = 0; k < w.size(); ++k) {
      const auto u = static_cast<std::size_t>(k);
      ref[static_cast<std::size_t>(w.row[u])] += w.weight[u] * f[static_cast<std::size_t>(w.col[u])];
      mapped[static_cast<std::size_t>(w.row[u])] = 1;
    }
    double total = 0;  // sum over this rank's target points of A_t g_t
    if (l.dst) {
      const std::vector<double> want = local_of(ref, dd);
      const std::vector<i64> idx = dd.to_indices();
      for (std::size_t j = 0; j < want.size(); ++j) {
        const auto t = static_cast<std::size_t>(idx[j]);
        if (!mapped[t]) continue;
        EXPECT_TRUE(d_all.valid(idx[j])) << "land point " << idx[j] << " receives runoff";
        EXPECT_NEAR(got[j], want[j], 1e-12 * (1 + std::abs(want[j]))) << "point " << idx[j];
        total += d_all.area[t] * got[j];
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const double river = s_all.area[static_cast<std::size_t>(mouth)] * f[static_cast<std::size_t>(mouth)];
    EXPECT_NEAR(total, river, 1e-13 * river);
  }
}

// SCRIPR BILINEAR D, BICUBIC D and BICUBICNF D on a reduced Gaussian source (the toy atmosphere's
// grid kind, stored south to north, with land): the coupled values equal W f with W from
// bilinear_weights_reduced / bicubic_weights_reduced computed serially (OASIS's searches for a
// grid of type D, with their own nearest fill, so that the coupler's fill finds nothing left).
TEST(Couple, ScriprBilinearAndBicubicOnReducedGaussianSource) {
  const Layout l = layout();
  const GridGen sg = GridGen::reduced_gaussian(6).with_land();
  const i64 ns = sg.size();
  auto field = [&](double t) {
    std::vector<double> f(static_cast<std::size_t>(ns));
    const estuary::Grid g = sg.make();
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::cos(g.lat[i] * 0.017) * std::sin(g.lon[i] * 0.0349) + 1e-4 * t;
    return f;
  };
  auto text = [&](const std::string& method) {
    return " $NFIELDS\n 1\n $END\n $RUNTIME\n " + std::to_string(static_cast<long>(kPeriod)) +
           "\n $END\n $NLOGPRT\n 1\n $END\n $STRINGS\nA_F O_F 1 " + std::to_string(static_cast<long>(kPeriod)) +
           " 1 rst.nc EXPORTED\nagrd ogrd\nR 0 R 0\nSCRIPR\n" + method + " D SCALAR LATITUDE 1\n $END\n";
  };
  for (const std::string method : {"BILINEAR", "BICUBIC", "BICUBICNF"}) {
    SCOPED_TRACE(method);
    std::string lower = method;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string dir = fresh_dir("scripr_" + lower + "_d");
    write_text(dir + "/namcouple", text(method));
    const ConservRun r = run_scripr(dir, [&](const Decomp& d) { return sg.make(d); }, field, 1, false, ns);
    if (l.dst) {
      const estuary::Grid dg = GridGen::tripolar(8, 9).make();
      Links w;
      if (method == "BILINEAR") {
        w = estuary::bilinear_weights_reduced(sg.make(), dg, MPI_COMM_SELF);
      } else {
        estuary::ReducedBicubicOptions o;
        o.nearest_fill = method == "BICUBIC";
        w = estuary::bicubic_weights_reduced(sg.make(), dg, MPI_COMM_SELF, o);
      }
      const i64 before = w.size();
      if (method != "BICUBICNF") {
        estuary::fill_nearest(sg.make(), dg, MPI_COMM_SELF, w);
        EXPECT_EQ(w.size(), before) << "OASIS's own fallback leaves nothing to fill";
      }
      const std::vector<double> f = field(0);
      std::vector<double> ref(static_cast<std::size_t>(kNd), 0.0);
      for (i64 k = 0; k < w.size(); ++k) {
        const auto u = static_cast<std::size_t>(k);
        ref[static_cast<std::size_t>(w.row[u])] += w.weight[u] * f[static_cast<std::size_t>(w.col[u])];
      }
      const Decomp dd = dst_decomp(l);
      const std::vector<double> want = local_of(ref, dd);
      ASSERT_EQ(r.got.size(), 1u);
      for (std::size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(r.got[0][j], want[j], 1e-12) << "point " << j;
    }
  }
}

// The interpolation stack (estuary's STACK namcouple transform and YAML `interpolation`):
// bilinear on a source with land, creep one step, -999 for the rest. The coupled values equal
// W f with W from stack_weights computed serially, -999 where W has no row; the weights are
// cached in rmp_agrd_to_ogrd_STACK.nc (with the fixed value) and reused by the next run, whose
// values are the same; YAML and namcouple give the same values.
TEST(Couple, StackThroughNamcoupleAndYaml) {
  const Layout l = layout();
  const std::string stack_line = "bilinear | creep steps=1 | fixed value=-999";
  const estuary::Grid sg = GridGen::lonlat(12, 10).with_land().make(), dg = GridGen::tripolar(8, 9).make();
  const std::vector<StackStage> stages = {make_stage("bilinear", {}, "t"), make_stage("creep", {{"steps", "1"}}, "t"),
                                          make_stage("fixed", {{"value", "-999"}}, "t")};
  const StackWeights w = stack_weights(sg, dg, MPI_COMM_SELF, stages);
  ASSERT_EQ(w.filled.size(), 3u);
  ASSERT_GT(w.filled[1], 0) << "the case must leave targets for creep";
  ASSERT_GT(w.filled[2], 0) << "the case must leave targets for the fixed value";
  std::vector<std::vector<double>> first;
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const bool yaml = run == 2;
    static std::string dir;
    if (run != 1) dir = fresh_dir(yaml ? "stack_yaml" : "stack_namcouple");  // run 1 reuses run 0's folder
    if (run == 0) write_text(dir + "/namcouple", namcouple(2 * kPeriod, "A_F O_F", 1, "STACK\n" + stack_line + "\n"));
    if (yaml)
      write_text(dir + "/estuary.yaml",
                 "runtime: 7200\ncouplings:\n  - source: {field: A_F, grid: agrd, nx: 12, ny: 10}\n"
                 "    target: {field: O_F, grid: ogrd, nx: 8, ny: 9}\n    period: 3600\n"
                 "    interpolation: [bilinear, {creep: {steps: 1}}, {fixed: {value: -999}}]\n");
    const ConservRun r = run_scripr_conserv(dir, true, yaml ? "estuary.yaml" : "namcouple");
    const std::string expect = run == 1 ? "STACK weights reused from" : "STACK weights generated in";
    EXPECT_NE(r.log.find(expect), std::string::npos) << r.log;
    const std::string cache = dir + "/rmp_agrd_to_ogrd_STACK.nc";
    EXPECT_EQ(read_global_attribute(cache, "estuary_fixed_value", MPI_COMM_SELF), "-999");
    if (!l.dst) continue;
    const Decomp dd = dst_decomp(l);
    const std::vector<i64> idx = dd.to_indices();
    ASSERT_EQ(r.got.size(), 2u);
    for (std::size_t ti = 0; ti < r.got.size(); ++ti) {
      const std::vector<double> f = global_field(kNs, static_cast<double>(ti) * kPeriod);
      std::vector<double> ref(static_cast<std::size_t>(kNd), 0.0);
      std::vector<char> mapped(static_cast<std::size_t>(kNd), 0);
      for (i64 k = 0; k < w.links.size(); ++k) {
        const auto u = static_cast<std::size_t>(k);
        ref[static_cast<std::size_t>(w.links.row[u])] += w.links.weight[u] * f[static_cast<std::size_t>(w.links.col[u])];
        mapped[static_cast<std::size_t>(w.links.row[u])] = 1;
      }
      for (std::size_t j = 0; j < idx.size(); ++j) {
        const auto g = static_cast<std::size_t>(idx[j]);
        const double want = mapped[g] ? ref[g] : -999.0;
        EXPECT_NEAR(r.got[ti][j], want, 1e-12 * (1 + std::abs(want))) << "point " << idx[j] << " time " << ti;
      }
    }
    if (run == 0) first = r.got;
    else EXPECT_EQ(r.got, first);  // the cached file and YAML give the same values, bit for bit
  }
}
