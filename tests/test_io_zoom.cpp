// Zoom and vertical levels of output variables (`zoom`, `levels`, `interpolate_levels`, issue
// 21): the values written against a serial reference computed here from global indices alone —
// a lon-lat box across the date line on a regular grid (1-D axes, columns in order from the
// box's west edge), index ranges, a box on a Gaussian grid (1-D axes too), a box on a
// curvilinear (tripolar) grid (the index rectangle
// of the points inside) and on an unstructured one (the points inside, in grid order), levels
// selected by index, interpolated to values (fill outside, or XIOS's extrapolation), means
// over steps and masked points — in serverless and server mode; and the configuration errors,
// each with its file, line and key.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "test_io_util.hpp"

namespace io = estuary::io;
using etest::all_ok;
using iotest::i64;

namespace {

using iotest::config_error;

std::string out_dir(const std::string& name) { return iotest::out_dir("zoom_", name); }

// The model's fields at global index g (level * grid size + point) of step k.
double t3(i64 g, i64 k) { return 270.0 + 0.37 * static_cast<double>(g) + std::sin(static_cast<double>(g + k)); }
double uo(i64 g, i64 k) { return std::cos(0.21 * static_cast<double>(g)) + 0.5 * static_cast<double>(k); }
bool t3_masked(i64 g) { return g % 7 == 3; }
bool uo_masked(i64 g) { return g % 5 == 1; }

constexpr double kLevels[3] = {10.0, 50.0, 200.0};
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Reference interpolation of a column (v[l] on kLevels, NaN = masked) to x: the straight line
// through the two levels around x (or, extrapolating, the two end levels); NaN outside without
// extrapolation or where a level used is masked.
double interp(const double v[3], double x, bool extrapolate) {
  for (int l = 0; l < 3; ++l)
    if (x == kLevels[l]) return v[l];
  int j = x < kLevels[1] ? 0 : 1;
  if ((x < kLevels[0] || x > kLevels[2]) && !extrapolate) return kNaN;
  const double a = v[j], b = v[j + 1];
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return a + (b - a) * (x - kLevels[j]) / (kLevels[j + 1] - kLevels[j]);
}

// Reads variable `var` record `rec` (n values in all) on this rank's part of a permuted
// decomposition and compares value q with want(q) (NaN: the fill value).
template <class F>
int check(io::Reader& rd, const std::string& var, i64 rec, i64 n, F want) {
  const int p = etest::world_size(), r = etest::world_rank();
  const auto d = etest::permuted_block(n, p, r, 5);
  std::vector<double> got(static_cast<std::size_t>(d.size()));
  rd.read_record(var, rec, d, got);
  const auto idx = d.to_indices();
  int bad = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    const double w = want(idx[i]);
    const bool ok =
        std::isnan(w) ? got[i] == io::kFillValue : std::abs(got[i] - w) <= 1e-12 * std::max(1.0, std::abs(w));
    if (!ok && bad < 5)
      ADD_FAILURE() << var << " record " << rec << " value " << idx[i] << ": " << got[i] << " != " << w;
    bad += ok ? 0 : 1;
  }
  return bad;
}

}  // namespace

TEST(IoZoom, ConfigErrorsNameTheLine) {
  const std::string head = "output:\n  files:\n    - name: f\n      output_freq: 1h\n      fields:\n";
  auto err = [&](const std::string& fields) { return config_error(head + fields); };
  std::string m = err("        - {name: t, zoom: {lon: [0, 10], i: [0, 3]}}\n");
  EXPECT_NE(m.find("a zoom is either a lon-lat box or index ranges, not both (bad.yaml:6, key output.files[0] "
                   "(f).fields[0] (t).zoom)"),
            std::string::npos)
      << m;
  m = err("        - {name: t, zoom: {lat: [40, -40]}}\n");
  EXPECT_NE(m.find("zoom latitudes [40, -40] are not south <= north within [-90, 90] (bad.yaml:6, key output.files[0] "
                   "(f).fields[0] (t).zoom)"),
            std::string::npos)
      << m;
  m = err("        - {name: t, zoom: {i: [5, 2]}}\n");
  EXPECT_NE(m.find("zoom index ranges i [5, 2], j [0, last] are not first <= last"), std::string::npos) << m;
  m = err("        - {name: t, zoom: {lon: [0]}}\n");
  EXPECT_NE(
      m.find(
          "expected a list of two values, [first, last] (bad.yaml:6, key output.files[0] (f).fields[0] (t).zoom.lon)"),
      std::string::npos)
      << m;
  m = err("        - {name: t, zoom: {x: [0, 1]}}\n");
  EXPECT_NE(m.find("(bad.yaml:6, key output.files[0] (f).fields[0] (t).zoom.x)"), std::string::npos) << m;
  m = err("        - {name: t, levels: [2, 1]}\n");
  EXPECT_NE(m.find("level indices are not strictly increasing (2 then 1) (bad.yaml:6, key output.files[0] "
                   "(f).fields[0] (t).levels)"),
            std::string::npos)
      << m;
  m = err("        - {name: t, levels: [0], interpolate_levels: {values: [5]}}\n");
  EXPECT_NE(m.find("levels and interpolate_levels together (bad.yaml:6, key output.files[0] (f).fields[0] "
                   "(t).interpolate_levels)"),
            std::string::npos)
      << m;
  m = err("        - name: t\n          interpolate_levels:\n            values: [10, 5, 20]\n");
  EXPECT_NE(m.find("interpolation values are not strictly monotonic (bad.yaml:8, key output.files[0] (f).fields[0] "
                   "(t).interpolate_levels)"),
            std::string::npos)
      << m;
  m = err("        - {name: t, interpolate_levels: {values: [1], order: 2}}\n");
  EXPECT_NE(m.find("key output.files[0] (f).fields[0] (t).interpolate_levels.order"), std::string::npos) << m;
  // A file's zoom: the same checks at the file's key.
  m = config_error(
      "output:\n  files:\n    - name: f\n      output_freq: 1h\n      zoom: {j: [3, 1]}\n      fields: [t]\n");
  EXPECT_NE(m.find("(bad.yaml:5, key output.files[0] (f).zoom)"), std::string::npos) << m;
  EXPECT_EQ(err("        - {name: t, zoom: {lon: [170, -170], lat: [-10, 10]}, levels: [0, 2]}\n"
                "        - {name: u, zoom: {i: [0, 3]}, interpolate_levels: {values: [5, 1], coordinate: depth, "
                "extrapolate: true}}\n"),
            "no error");
}

namespace {

// end_def's error on every rank ("no error" when it passes) for `fields_yaml` over the test's
// fields: t3 (3 levels) and uo on the lon-lat grid atm, sc on an unstructured grid.
// sc_block: sc on blocks, other points than the rank's part of `cells` (a cyclic one).
std::string end_def_error(const std::string& fields_yaml, bool server = false, bool sc_block = false) {
  return iotest::end_def_error(out_dir("errors"), fields_yaml, server, [&](io::Output& out, int p, int r) {
    out.def_grid("atm", iotest::grid_part(p, r));
    const estuary::GridGen cs = estuary::GridGen::cubed_sphere(3);
    out.def_grid("cells", cs.make(etest::cyclic(cs.size(), p, r)));
    out.def_field(iotest::field("uo", false, iotest::decomp_of("boxes", 1, p, r)));
    out.def_field(iotest::field("t3", true, iotest::decomp_of("cyclic", iotest::kNlev, p, r)));
    io::FieldDef sc;
    sc.name = "sc";
    sc.grid = "cells";
    sc.decomp = sc_block ? etest::block(cs.size(), p, r) : etest::cyclic(cs.size(), p, r);
    out.def_field(sc);
  });
}

}  // namespace

TEST(IoZoom, EndDefErrorsNameTheKey) {
  std::string m = end_def_error("        - {name: t3, levels: [0, 3]}\n");
  EXPECT_NE(m.find("level index 3 is beyond the 3 levels of field 't3' (e.yaml:7, key output.files[0] (f).fields[0] "
                   "(t3).levels)"),
            std::string::npos)
      << m;
  m = end_def_error("        - {name: uo, levels: [0]}\n");
  EXPECT_NE(m.find("levels selected from field 'uo', which has no levels (a 2-D field) (e.yaml:7"), std::string::npos)
      << m;
  m = end_def_error("        - {name: t3, interpolate_levels: {values: [20], coordinate: air_pressure}}\n");
  EXPECT_NE(
      m.find("interpolation coordinate 'air_pressure' is not the level axis of field 't3' (depth, in m) (e.yaml:7"),
      std::string::npos)
      << m;
  m = end_def_error("        - {name: uo, zoom: {i: [0, 12]}}\n");
  EXPECT_NE(m.find("zoom i [0, 12], j [0, last] is outside grid 'atm' of 12 x 8 points (i, j from 0) (field 'uo') "
                   "(e.yaml:7, key "
                   "output.files[0] (f).fields[0] (uo).zoom)"),
            std::string::npos)
      << m;
  m = end_def_error("        - {name: sc, zoom: {i: [0, 3]}}\n");
  EXPECT_NE(m.find("an index zoom needs a 2-D grid; grid 'cells' (unstructured) has one dimension of 54 points"),
            std::string::npos)
      << m;
  m = end_def_error("        - {name: uo, zoom: {lat: [80, 85]}}\n");
  EXPECT_NE(m.find("no point of grid 'atm' lies in the zoom box lon [0, 360], lat [80, 85] (field 'uo')"),
            std::string::npos)
      << m;
  EXPECT_EQ(end_def_error("        - {name: uo, zoom: {lat: [0, 85]}}\n        - {name: sc, zoom: {lat: [0, 85]}}\n"),
            "no error");
  // A box of an unstructured grid is known for the points of the rank's def_grid part only.
  if (etest::world_size() >= 2) {
    m = end_def_error("        - {name: sc, zoom: {lat: [0, 85]}}\n", false, true);
    EXPECT_NE(
        m.find("of grid cells, which this rank's def_grid part does not hold, so whether the zoom keeps it is unknown"),
        std::string::npos)
        << m;
  }
  if (etest::world_size() >= 2) {  // server mode: servers and model ranks fail alike
    m = end_def_error("        - {name: t3, levels: [0, 3]}\n", true);
    EXPECT_NE(m.find("level index 3 is beyond the 3 levels of field 't3'"), std::string::npos) << m;
    m = end_def_error("        - {name: uo, zoom: {lat: [80, 85]}}\n", true);
    EXPECT_NE(m.find("no point of grid 'atm' lies in the zoom box"), std::string::npos) << m;
  }
}

// Every kind of zoom and vertical view in one run, both modes, read back and compared with the
// serial reference.
TEST(IoZoom, ValuesMatchSerialReference) {
  const int wp = etest::world_size();
  const estuary::GridGen tri = estuary::GridGen::tripolar(16, 12), cs = estuary::GridGen::cubed_sphere(4);
  const estuary::GridGen gau = estuary::GridGen::gaussian(16, 10);
  const estuary::Grid tri_all = tri.make(), cs_all = cs.make(), gau_all = gau.make();
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server}) {
    if (mode == io::Mode::server && wp < 2) continue;
    const std::string tag = mode == io::Mode::server ? "server" : "serverless";
    SCOPED_TRACE(tag);
    const std::string dir = out_dir(tag);
    const std::string yaml =
        "output:\n  mode: " + tag + "\n  writers: " + std::to_string(std::min(2, std::max(1, wp - 1))) +
        "\n  directory: " + dir +
        "\n  files:\n"
        "    - name: box\n      output_freq: 2h\n      zoom: {lon: [-60, 60], lat: [-40, 60]}\n      fields:\n"
        "        - {name: uo, precision: double}\n"
        "        - {name: t3, output_name: t3sel, levels: [0, 2], precision: double}\n"
        "        - {name: t3, output_name: t3whole, zoom: {i: [0, 11]}, precision: double}\n"
        "    - name: idx\n      output_freq: 2h\n      fields:\n"
        "        - {name: t3, zoom: {i: [2, 7], j: [1, 4]}, interpolate_levels: {values: [5, 10, 30, 125, 300]}, "
        "precision: double}\n"
        "        - {name: t3, output_name: t3x, interpolate_levels: {values: [5, 30, 300], extrapolate: true}, "
        "precision: double}\n"
        "    - name: tri\n      output_freq: 2h\n      fields:\n"
        "        - {name: to, zoom: {lon: [100, 200], lat: [-30, 30]}, precision: double}\n"
#ifdef ESTUARY_TEST_HAVE_MUPARSER
        // A derived field with a zoom of its own: its grid is its input's.
        "    - name: tri2\n      output_freq: 2h\n      fields:\n"
        "        - {name: to2, expr: \"2 * to + 1\", zoom: {lon: [150, 250], lat: [-20, 40]}, precision: double}\n"
#endif
        "    - name: gau\n      output_freq: 2h\n      fields:\n"
        "        - {name: tg, zoom: {lon: [90, 180], lat: [-50, 50]}, precision: double}\n"
        "    - name: cs\n      output_freq: 2h\n      fields:\n"
        "        - {name: sc, zoom: {lon: [300, 30], lat: [-20, 90]}, precision: double}\n"
        "    - name: mean\n      output_freq: 3h\n      fields:\n"
        "        - {name: t3, operation: average, zoom: {lon: [170, -170]}, interpolate_levels: {values: [30, 125]}, "
        "precision: double}\n";
    const io::OutputConfig cfg = io::OutputConfig::from_yaml_string(yaml, "zoom.yaml");
    const i64 nsteps = 6, nh = iotest::kNh, ntri = tri.size(), ncs = cs.size();
    {
      io::Output out(cfg, MPI_COMM_WORLD);
      if (out.is_server()) {
        out.serve();
      } else {
        int p = 1, r = 0;
        MPI_Comm_size(out.model_comm(), &p);
        MPI_Comm_rank(out.model_comm(), &r);
        const auto d2 = iotest::decomp_of("boxes", 1, p, r);
        const auto d3 = iotest::decomp_of("perm", iotest::kNlev, p, r);  // columns split over ranks
        const auto dt = etest::permuted_block(ntri, p, r, 7), dc = etest::cyclic(ncs, p, r);
        out.def_grid("atm", iotest::grid_part(p, r));
        out.def_grid("ocn", tri.make(etest::cyclic(ntri, p, r)));
        out.def_grid("cells", cs.make(dc));
        const auto dg = etest::cyclic(gau.size(), p, r);
        out.def_grid("gau", gau.make(dg));
        io::FieldDef fu = iotest::field("uo", false, d2), ft = iotest::field("t3", true, d3);
        for (i64 g : d2.to_indices()) fu.mask.push_back(uo_masked(g) ? 0 : 1);
        for (i64 g : d3.to_indices()) ft.mask.push_back(t3_masked(g) ? 0 : 1);
        io::FieldDef fo = iotest::field("to", false, dt), fc = iotest::field("sc", false, dc);
        fo.grid = "ocn";
        fc.grid = "cells";
        out.def_field(fu);
        out.def_field(ft);
        out.def_field(fo);
        out.def_field(fc);
        io::FieldDef fg = iotest::field("tg", false, dg);
        fg.grid = "gau";
        out.def_field(fg);
        out.end_def();
        for (i64 k = 1; k <= nsteps; ++k) {
          const double time = 3600.0 * static_cast<double>(k);
          std::vector<double> u, t, o, c, tg;
          for (i64 g : dg.to_indices()) tg.push_back(uo(g, k));
          for (i64 g : d2.to_indices()) u.push_back(uo_masked(g) ? kNaN : uo(g, k));
          for (i64 g : d3.to_indices()) t.push_back(t3_masked(g) ? -1e300 : t3(g, k));
          for (i64 g : dt.to_indices()) o.push_back(uo(g, k));
          for (i64 g : dc.to_indices()) c.push_back(t3(g, k));
          out.write("uo", time, u);
          out.write("t3", time, t);
          out.write("to", time, o);
          out.write("sc", time, c);
          out.write("tg", time, tg);
        }
        out.close();
      }
    }
    int bad = 0;
    // The box on the lon-lat grid (12 x 8, lon i * 30, lat bands of 22.5 degrees): the
    // columns from the box's west edge eastwards, so 300, 330, 0, 30, 60 written as -60 .. 60.
    const std::vector<i64> cols = {10, 11, 0, 1, 2}, rows = {2, 3, 4, 5, 6};
    const i64 nb = static_cast<i64>(cols.size() * rows.size());
    auto box_point = [&](i64 q) {
      return rows[static_cast<std::size_t>(q / 5)] * iotest::kNx + cols[static_cast<std::size_t>(q % 5)];
    };
    io::Reader rb(dir + "/box.nc", MPI_COMM_WORLD), ri(dir + "/idx.nc", MPI_COMM_WORLD),
        rm(dir + "/mean.nc", MPI_COMM_WORLD);
    io::Reader rt(dir + "/tri.nc", MPI_COMM_WORLD), rc(dir + "/cs.nc", MPI_COMM_WORLD),
        rg(dir + "/gau.nc", MPI_COMM_WORLD);
    // The Gaussian grid (16 x 10, longitudes i * 22.5): columns 4..8 (90 .. 180), the rows whose
    // Gaussian latitude is within 50 degrees, with 1-D axes as for a lon-lat grid.
    std::vector<i64> grows;
    for (i64 j = 0; j < 10; ++j)
      if (std::abs(gau_all.lat[static_cast<std::size_t>(j * 16)]) <= 50) grows.push_back(j);
    ASSERT_GE(grows.size(), 2u);
    const i64 ngr = static_cast<i64>(grows.size());
    bad += check(rg, "lon", -1, 5, [&](i64 q) { return 90.0 + 22.5 * static_cast<double>(q); });
    bad += check(rg, "lat", -1, ngr,
                 [&](i64 q) { return gau_all.lat[static_cast<std::size_t>(grows[static_cast<std::size_t>(q)] * 16)]; });
    ASSERT_EQ(rb.records(), 3);
    ASSERT_EQ(rm.records(), 2);
    bad += check(rb, "lon", -1, 5, [&](i64 q) { return -60.0 + 30.0 * static_cast<double>(q); });
    bad += check(rb, "lat", -1, 5,
                 [&](i64 q) { return -90.0 + 22.5 * (static_cast<double>(rows[static_cast<std::size_t>(q)]) + 0.5); });
    bad += check(rb, "lon_bnds", -1, 10,
                 [&](i64 q) { return -75.0 + 30.0 * static_cast<double>(q / 2) + 30.0 * static_cast<double>(q % 2); });
    const double t3_fill = kNaN;
    auto t3v = [&](i64 g, i64 k) { return t3_masked(g) ? t3_fill : t3(g, k); };
    for (i64 rec = 0; rec < 3; ++rec) {
      const i64 k = 2 * (rec + 1);
      bad += check(rb, "uo", rec, nb, [&](i64 q) {
        const i64 g = box_point(q);
        return uo_masked(g) ? kNaN : uo(g, k);
      });
      bad += check(rb, "t3sel", rec, 2 * nb, [&](i64 q) { return t3v((q / nb) * 2 * nh + box_point(q % nb), k); });
      // A field's own zoom over the file's: all columns, every level.
      bad += check(rb, "t3whole", rec, 3 * nh, [&](i64 q) { return t3v(q, k); });
      // Index ranges i 2..7, j 1..4, interpolated (5 and 300 are outside 10..200: the fill value).
      const double xs[5] = {5, 10, 30, 125, 300};
      bad += check(ri, "t3", rec, 5 * 24, [&](i64 q) {
        const i64 h = q % 24, pt = (1 + h / 6) * iotest::kNx + 2 + h % 6;
        double v[3];
        for (int l = 0; l < 3; ++l) v[l] = t3v(l * nh + pt, k);
        return interp(v, xs[q / 24], false);
      });
      const double xx[3] = {5, 30, 300};
      bad += check(ri, "t3x", rec, 3 * nh, [&](i64 q) {
        double v[3];
        for (int l = 0; l < 3; ++l) v[l] = t3v(l * nh + q % nh, k);
        return interp(v, xx[q / nh], true);
      });
      // The tripolar grid: the index rectangle of the points inside the box, every point of it.
      auto rectangle = [&](double w, double e, double s, double n) {
        i64 r[4] = {1 << 30, -1, 1 << 30, -1};  // i0, i1, j0, j1
        for (i64 g = 0; g < ntri; ++g) {
          const double lon = std::fmod(tri_all.lon[static_cast<std::size_t>(g)] + 720.0, 360.0);
          const double lat = tri_all.lat[static_cast<std::size_t>(g)];
          if (lon < w || lon > e || lat < s || lat > n) continue;
          r[0] = std::min(r[0], g % 16), r[1] = std::max(r[1], g % 16), r[2] = std::min(r[2], g / 16),
          r[3] = std::max(r[3], g / 16);
        }
        return std::vector<i64>(r, r + 4);
      };
      const std::vector<i64> box = rectangle(100, 200, -30, 30);
      const i64 i0 = box[0], j0 = box[2];
      ASSERT_GE(box[1], i0);
      const i64 ni = box[1] - i0 + 1, nj = box[3] - j0 + 1;
      bad += check(rt, "to", rec, ni * nj, [&](i64 q) { return uo((j0 + q / ni) * 16 + i0 + q % ni, k); });
      bad += check(rt, "lon", -1, ni * nj,
                   [&](i64 q) { return tri_all.lon[static_cast<std::size_t>((j0 + q / ni) * 16 + i0 + q % ni)]; });
#ifdef ESTUARY_TEST_HAVE_MUPARSER
      {
        io::Reader rt2(dir + "/tri2.nc", MPI_COMM_WORLD);
        const std::vector<i64> b2 = rectangle(150, 250, -20, 40);
        ASSERT_GE(b2[1], b2[0]);
        const i64 n2i = b2[1] - b2[0] + 1, n2j = b2[3] - b2[2] + 1;
        bad += check(rt2, "to2", rec, n2i * n2j,
                     [&](i64 q) { return 2 * uo((b2[2] + q / n2i) * 16 + b2[0] + q % n2i, k) + 1; });
      }
#endif
      bad += check(rg, "tg", rec, 5 * ngr,
                   [&](i64 q) { return uo(grows[static_cast<std::size_t>(q / 5)] * 16 + 4 + q % 5, k); });
      // The cubed sphere: the points inside the box, in grid order.
      std::vector<i64> inside;
      for (i64 g = 0; g < ncs; ++g) {
        const double lon = std::fmod(cs_all.lon[static_cast<std::size_t>(g)] + 720.0, 360.0),
                     lat = cs_all.lat[static_cast<std::size_t>(g)];
        if ((lon >= 300 || lon <= 30) && lat >= -20) inside.push_back(g);
      }
      ASSERT_FALSE(inside.empty());
      bad += check(rc, "sc", rec, static_cast<i64>(inside.size()),
                   [&](i64 q) { return t3(inside[static_cast<std::size_t>(q)], k); });
      bad += check(rc, "lat", -1, static_cast<i64>(inside.size()),
                   [&](i64 q) { return cs_all.lat[static_cast<std::size_t>(inside[static_cast<std::size_t>(q)])]; });
    }
    // The mean over 3 steps, interpolated; the box 170..-170 holds the column at 180 alone.
    for (i64 rec = 0; rec < 2; ++rec) {
      const double xs[2] = {30, 125};
      bad += check(rm, "t3", rec, 2 * iotest::kNy, [&](i64 q) {
        const i64 pt = (q % iotest::kNy) * iotest::kNx + 6;
        double v[3];
        for (int l = 0; l < 3; ++l) {
          const i64 g = l * nh + pt;
          v[l] = t3_masked(g) ? kNaN : (t3(g, 3 * rec + 1) + t3(g, 3 * rec + 2) + t3(g, 3 * rec + 3)) / 3;
        }
        return interp(v, xs[q / iotest::kNy], false);
      });
    }
    EXPECT_TRUE(all_ok(bad == 0)) << bad << " values differ on rank " << etest::world_rank();
  }
}
