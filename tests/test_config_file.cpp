// estuary's one configuration file: a YAML file with both a `couplings:` section (read by the
// coupler) and an `output:` section (read by the I/O layer) drives a coupled run and an output
// set at once, and both readers report errors in one shape: "PATH:LINE, key KEY".
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "couple_test_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/couple_config.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/io.hpp"

using namespace estuary;
using namespace ctest_util;

namespace {

constexpr i64 kNs = 12 * 10, kNd = 8 * 9;  // source and target grids (nx x ny)
constexpr double kDt = 1200, kPeriod = 3600, kRuntime = 4 * kPeriod;

// One file, both sections (line numbers used by the error test below).
std::string both_sections(const std::string& dir) {
  return "runtime: 14400\n"                                           // 1
         "no_restart: true\n"                                         // 2
         "couplings:\n"                                               // 3
         "  - source: {field: A_F, grid: agrd, nx: 12, ny: 10}\n"     // 4
         "    target: {field: O_F, grid: ogrd, nx: 8, ny: 9}\n"       // 5
         "    period: 3600\n"                                         // 6
         "    transforms:\n"                                          // 7
         "      - mapping: {file: w.nc, location: dst}\n"             // 8
         "output:\n"                                                  // 9
         "  mode: serverless\n"                                       // 10
         "  writers: 1\n"                                             // 11
         "  directory: " + dir + "\n"                                 // 12
         "  files:\n"                                                 // 13
         "    - name: got\n"                                          // 14
         "      output_freq: 1h\n"                                    // 15
         "      fields: [{name: O_F, precision: double}]\n";          // 16
}

// Runs `read` and returns the Error's place ("no error" when it does not fail).
template <class Read>
std::string place_of(Read read) {
  try {
    read();
  } catch (const Error& e) {
    return e.where();
  }
  return "no error";
}

}  // namespace

// The coupler reads the couplings (and ignores the output section), the I/O layer the output
// section (and ignores the couplings): the target side writes what it gets, and the file holds,
// at every coupling time, W f(t) computed serially from the same links.
TEST(ConfigFile, OneFileDrivesACoupledRunAndAnOutputSet) {
  const int p = world_size(), r = world_rank();
  const std::string dir = fresh_dir("config_file");
  write_synthetic_weights(dir + "/w.nc", kNs, kNd);
  const std::string cfg = dir + "/estuary.yaml";
  write_text(cfg, both_sections(dir));

  // The sides as in test_couple: one rank holds both, else the first half is the source.
  const bool src = p == 1 || r < p / 2, dst = p == 1 || r >= p / 2;
  const std::string name = p == 1 ? "solo" : src ? "atm" : "ocn";
  const int index = p == 1 ? 0 : src ? r : r - p / 2, count = p == 1 ? 1 : src ? p / 2 : p - p / 2;
  const Decomp sd = src ? gen::cyclic(kNs, index, count) : Decomp::empty(kNs);
  const Decomp dd = dst ? gen::block(kNd, index, count) : Decomp::empty(kNd);

  ComponentOptions o;
  o.config = cfg;
  o.directory = dir;
  Component comp(name, o);
  int sv = -1, dv = -1;
  if (src) sv = comp.def_var("A_F", comp.def_partition(sd, "agrd"), Direction::out);
  if (dst) dv = comp.def_var("O_F", comp.def_partition(dd, "ogrd"), Direction::in);
  comp.enddef();

  std::vector<double> times;
  {
    io::Output out(io::OutputConfig::from_yaml_file(cfg), MPI_COMM_WORLD);
    out.def_grid("ogrd", GridGen::lonlat(8, 9).make(dd));
    io::FieldDef f;
    f.name = "O_F";
    f.grid = "ogrd";
    f.decomp = dd;
    out.def_field(f);
    out.end_def();
    for (double t = 0; t < kRuntime; t += kDt) {
      if (src) comp.put(sv, t, local_of(global_field(kNs, t), sd));
      std::vector<double> v(static_cast<std::size_t>(dd.size()), -999.0);
      if (dst) comp.get(dv, t, v);
      if (std::fmod(t, kPeriod) == 0.0) {  // every rank writes (source ranks hold no points)
        out.write("O_F", t, v);
        times.push_back(t);
      }
    }
    out.close();
  }
  comp.terminate();

  const Links w = synthetic_links(kNs, kNd);
  const Decomp all = gen::block(kNd, r, p);
  io::Reader rd(dir + "/got.nc", MPI_COMM_WORLD);
  ASSERT_EQ(rd.records(), static_cast<std::int64_t>(times.size()));
  for (double t : times) {
    std::vector<double> got(static_cast<std::size_t>(all.size()));
    rd.read("O_F", t, all, got);
    const std::vector<double> want = local_of(apply_serial(w, global_field(kNs, t), kNd), all);
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << "t=" << t << " point " << i;
  }
}

// An unknown key in either section, and at the top, fails in both readers with the same shape:
// the file, the line and the key.
TEST(ConfigFile, BothReadersNameFileLineAndKey) {
  const std::string dir = fresh_dir("config_file_errors");
  auto bad = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string text = both_sections(dir);
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    write_text(dir + "/" + name, text.replace(at, from.size(), to));
    return dir + "/" + name;
  };
  auto couple = [](const std::string& path) { return place_of([&] { read_coupling_config(path); }); };
  auto output = [](const std::string& path) { return place_of([&] { io::OutputConfig::from_yaml_file(path); }); };

  // Each section's own reader names its unknown key; the other reader ignores that section.
  const std::string c = bad("c.yaml", "    period: 3600\n", "    period: 3600\n    perod: 1\n");
  EXPECT_EQ(couple(c), c + ":7, key couplings[0].perod");
  EXPECT_EQ(output(c), "no error");
  const std::string o = bad("o.yaml", "      output_freq: 1h\n", "      output_freq: 1h\n      colour: red\n");
  EXPECT_EQ(output(o), o + ":16, key output.files[0] (got).colour");
  EXPECT_EQ(couple(o), "no error");
  // A key of neither section: both refuse it, at the same place.
  const std::string t = bad("t.yaml", "no_restart: true\n", "no_restart: true\noutputs: {}\n");
  EXPECT_EQ(couple(t), t + ":3, key outputs");
  EXPECT_EQ(output(t), t + ":3, key outputs");
  // A bad value: the same shape from both.
  const std::string v = bad("v.yaml", "period: 3600", "period: hourly");
  EXPECT_EQ(couple(v), v + ":6, key couplings[0].period");
  const std::string w = bad("w.yaml", "writers: 1", "writers: many");
  EXPECT_EQ(output(w), w + ":11, key output.writers");
}
