// Output on another grid (a file's `grid:`, src/io/regrid.cpp): the values written against
//  - for conservative weights, the analytic area-weighted mean over the source cells that
//    overlap each target cell (lon-lat boxes: the overlap is dlon x (sin lat2 - sin lat1)), over
//    the unmasked ones, and
//  - for every method, the weights generated serially (one rank, whole grids) applied serially
//    to the whole source field, bit for bit, which also makes the file the same on every rank
//    count;
// 2-D and 3-D fields, an average over steps, masked source points (garbage there must not enter)
// and a target no valid source reaches (the fill value), in serverless and server mode. Then
// the weight cache: a second run reads the file (a doctored cache shows in the values), a stale
// one is regenerated; and the configuration's errors.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <tuple>
#include <limits>
#include <numbers>

#include "estuary/grid_files.hpp"
#include "estuary/weightgen.hpp"
#include "estuary/weights.hpp"
#include "test_io_util.hpp"

namespace io = estuary::io;
using etest::all_ok;
using iotest::i64;
using iotest::kNx;
using iotest::kNy;
using iotest::kNh;

namespace {

std::string out_dir(const std::string& name) { return iotest::out_dir("regrid_", name); }

// Source grid: lonlat 12 x 8 (centres at 30 i, -90 + 22.5 (j + 0.5)). Masked: the six cells
// that target (0, 0) of lonlat:6x4 overlaps (so it gets no valid source), and every 7th.
bool masked(i64 g) {
  const i64 i = g % kNx, j = g / kNx;
  return (j < 2 && (i == 11 || i == 0 || i == 1)) || g % 7 == 3;
}
double lon_of(i64 g) { return 30.0 * static_cast<double>(g % kNx); }
double lat_of(i64 g) { return -90.0 + 22.5 * (static_cast<double>(g / kNx) + 0.5); }
// The field at source point g (level l) and step k: smooth on the sphere.
double value(i64 g, i64 l, i64 k) {
  const double d = std::numbers::pi / 180.0;
  return 2.0 + std::cos(lat_of(g) * d) * std::sin(lon_of(g) * d) + 0.1 * static_cast<double>(k) +
         0.01 * static_cast<double>(l);
}

// The model's part of the grid: the points of its 2-D boxes (which both fields use).
estuary::Grid source_part(int p, int r) {
  estuary::Grid g = estuary::GridGen::lonlat(kNx, kNy).make(iotest::decomp_of("boxes", 1, p, r));
  g.mask.clear();
  for (i64 i = 0; i < g.size(); ++i) g.mask.push_back(masked(g.global_index(i)) ? 0 : 1);
  return g;
}

// The analytic conservative value (fracarea) of target (I, J) of lonlat:6x4, level l, step k;
// NaN where no unmasked source cell overlaps. Target lon cell [60I - 30, 60I + 30] holds source
// cell 2I whole and half of 2I - 1 and 2I + 1; target band J is source bands 2J and 2J + 1.
double conservative_6x4(i64 t, i64 l, i64 k) {
  const i64 I = t % 6, J = t / 6;
  const double d = std::numbers::pi / 180.0;
  double num = 0, den = 0;
  for (i64 dj = 0; dj < 2; ++dj) {
    const i64 j = 2 * J + dj;
    const double band = std::sin((-90.0 + 22.5 * static_cast<double>(j + 1)) * d) -
                        std::sin((-90.0 + 22.5 * static_cast<double>(j)) * d);
    for (i64 di = -1; di <= 1; ++di) {
      const i64 i = ((2 * I + di) % kNx + kNx) % kNx;
      const i64 g = j * kNx + i;
      if (masked(g)) continue;
      const double a = (di == 0 ? 1.0 : 0.5) * band;
      num += a * value(g, l, k);
      den += a;
    }
  }
  return den > 0 ? num / den : std::numeric_limits<double>::quiet_NaN();
}

// Serial reference: the weights generated on one rank over the whole grids, applied to the
// whole source field in link order (the bfb sum), unmapped targets NaN.
struct SerialRef {
  estuary::Links links;
  i64 nt = 0;
  std::vector<double> apply(i64 l, i64 k) const {
    std::vector<double> out(static_cast<std::size_t>(nt), 0.0);
    std::vector<bool> hit(static_cast<std::size_t>(nt), false);
    for (std::size_t e = 0; e < links.row.size(); ++e) {
      out[static_cast<std::size_t>(links.row[e])] += links.weight[e] * value(links.col[e], l, k);
      hit[static_cast<std::size_t>(links.row[e])] = true;
    }
    for (std::size_t t = 0; t < out.size(); ++t)
      if (!hit[t]) out[t] = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
};

SerialRef serial_ref(const std::string& target, const std::string& method) {
  const estuary::Grid src = source_part(1, 0);
  const estuary::Grid dst = estuary::GridGen::from_name(target).make();
  SerialRef r;
  r.nt = dst.global_size;
  if (method == "conservative") r.links = estuary::conservative_weights(src, dst, MPI_COMM_SELF).links;
  else if (method == "bilinear") r.links = estuary::bilinear_weights(src, dst, MPI_COMM_SELF);
  else r.links = estuary::distance_weights(src, dst, MPI_COMM_SELF);
  return r;
}

// Runs the test model: sst (2-D) and t3 (3-D), both on boxes, on the masked source grid, written
// every hour for `nsteps` steps with garbage (NaN) at masked points. False on a server rank.
bool run_model(const io::OutputConfig& cfg, i64 nsteps, io::IoStats* stats = nullptr) {
  io::Output out(cfg, MPI_COMM_WORLD);
  if (out.is_server()) {
    out.serve();
    return false;
  }
  int p = 1, r = 0;
  MPI_Comm_size(out.model_comm(), &p);
  MPI_Comm_rank(out.model_comm(), &r);
  const auto d2 = iotest::decomp_of("boxes", 1, p, r);
  const auto d3 = iotest::decomp_of("boxes", iotest::kNlev, p, r);
  out.def_grid("atm", source_part(p, r));
  out.def_field(iotest::field("sst", false, d2));
  out.def_field(iotest::field("t3", true, d3));
  out.end_def();
  const auto i2 = d2.to_indices(), i3 = d3.to_indices();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (i64 k = 1; k <= nsteps; ++k) {
    std::vector<double> s, t;
    for (i64 g : i2) s.push_back(masked(g) ? nan : value(g, 0, k));
    for (i64 g : i3) t.push_back(masked(g % kNh) ? nan : value(g % kNh, g / kNh, k));
    out.write("sst", 3600.0 * static_cast<double>(k), s);
    out.write("t3", 3600.0 * static_cast<double>(k), t);
  }
  out.close();
  if (stats) *stats = out.stats();
  return true;
}

// Compares record `rec` of `var` (nlev levels of nt points) with want(level, point): NaN wants
// the fill value; tol 0 wants the same bits. Counts the differences (reported on this rank).
int compare(io::Reader& rd, const std::string& var, i64 rec, i64 nlev, i64 nt, double tol,
            const std::function<double(i64, i64)>& want) {
  const int p = etest::world_size(), r = etest::world_rank();
  const auto d = etest::permuted_block(nlev * nt, p, r, 5);
  std::vector<double> got(static_cast<std::size_t>(d.size()));
  rd.read_record(var, rec, d, got);
  const auto idx = d.to_indices();
  int bad = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    const double w = want(idx[i] / nt, idx[i] % nt);
    const bool ok = std::isnan(w) ? got[i] == io::kFillValue
                    : tol == 0    ? got[i] == w
                                  : std::abs(got[i] - w) <= tol * std::max(1.0, std::abs(w));
    if (!ok && bad < 5)
      ADD_FAILURE() << var << " record " << rec << " value " << idx[i] << ": " << got[i] << " != " << w;
    bad += ok ? 0 : 1;
  }
  return bad;
}

// Collective: the set-up of every test here, and the SCRIP grid file one file's target is read
// from (lonlat:6x4 again, as CDO would describe it).
std::string yaml_for(const std::string& mode, const std::string& dir, const std::string& weights) {
  const int wp = etest::world_size();
  if (etest::world_rank() == 0) {
    std::filesystem::create_directories(dir);
    const estuary::Grid r = estuary::GridGen::lonlat(6, 4).make();
    estuary::write_scrip_grid(dir + "/r6x4_grid.nc", r);
    // And as OASIS's grids.nc (grid "r6x4"): corners point fastest, corner slowest.
    const std::string oasis = dir + "/oasis/grids.nc";
    std::filesystem::create_directories(dir + "/oasis");
    std::filesystem::remove(oasis);
    std::vector<double> clo, cla;
    for (int c = 0; c < r.ncorner; ++c)
      for (i64 q = 0; q < r.size(); ++q) {
        clo.push_back(r.corner_lon[static_cast<std::size_t>(q * r.ncorner + c)]);
        cla.push_back(r.corner_lat[static_cast<std::size_t>(q * r.ncorner + c)]);
      }
    estuary::write_oasis_grid_var(oasis, "r6x4", ".lon", 6, 4, 0, r.lon);
    estuary::write_oasis_grid_var(oasis, "r6x4", ".lat", 6, 4, 0, r.lat);
    estuary::write_oasis_grid_var(oasis, "r6x4", ".clo", 6, 4, r.ncorner, clo);
    estuary::write_oasis_grid_var(oasis, "r6x4", ".cla", 6, 4, r.ncorner, cla);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string con = "{target: \"lonlat:6x4\", method: conservative" +
                          (weights.empty() ? std::string() : ", weights: " + weights) + "}";
  return "output:\n  mode: " + mode + "\n  writers: " + std::to_string(std::min(2, std::max(1, wp - 1))) +
         "\n  directory: " + dir +
         "\n  files:\n"
         "    - name: con\n      output_freq: 2h\n      grid: " + con + "\n"
         "      fields: [{name: sst, precision: double}, {name: t3, precision: double}]\n"
         "    - name: con_avg\n      output_freq: 2h\n      grid: " + con + "\n"
         "      fields: [{name: sst, operation: average, precision: double}]\n"
         "    - name: bil\n      output_freq: 2h\n      grid: {target: \"lonlat:9x6\", method: bilinear}\n"
         "      fields: [{name: sst, precision: double}]\n"
         "    - name: dis\n      output_freq: 2h\n      grid: {target: \"gaussian:16x8\", method: distwgt}\n"
         "      fields: [{name: sst, precision: double}]\n"
         "    - name: scr\n      output_freq: 2h\n      grid: {target: {scrip: " + dir + "/r6x4_grid.nc}}\n"
         "      fields: [{name: sst, precision: double}]\n"
         "    - name: oas\n      output_freq: 2h\n      grid: {target: {oasis: " + dir + "/oasis/grids.nc, name: r6x4}}\n"
         "      fields: [{name: sst, precision: double}]\n"
         "    - name: native\n      output_freq: 2h\n      fields: [{name: sst, precision: double}]\n";
}

}  // namespace

TEST(IoRegrid, ValuesMatchAnalyticAndSerialReferences) {
  const int wp = etest::world_size();
  const SerialRef con = serial_ref("lonlat:6x4", "conservative"), bil = serial_ref("lonlat:9x6", "bilinear"),
                  dis = serial_ref("gaussian:16x8", "distwgt");
  for (const std::string mode : {"serverless", "server"}) {
    if (mode == "server" && wp < 2) continue;
    SCOPED_TRACE(mode);
    const std::string dir = out_dir(mode);
    const i64 nsteps = 4;
    io::IoStats stats;
    if (run_model(io::OutputConfig::from_yaml_string(yaml_for(mode, dir, ""), "regrid.yaml"), nsteps, &stats)) {
      // Model ranks remapped, and that time is counted.
      EXPECT_GT(stats.regrid_s, 0.0);
    }
    int bad = 0;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    {
      io::Reader rd(dir + "/con.nc", MPI_COMM_WORLD);
      ASSERT_EQ(rd.records(), 2);
      for (i64 rec = 0; rec < 2; ++rec) {
        const i64 k = 2 * (rec + 1);
        bad += compare(rd, "sst", rec, 1, 24, 1e-13, [&](i64, i64 t) { return conservative_6x4(t, 0, k); });
        bad += compare(rd, "t3", rec, iotest::kNlev, 24, 1e-13, [&](i64 l, i64 t) { return conservative_6x4(t, l, k); });
        const std::vector<double> ref0 = con.apply(0, k), ref2 = con.apply(2, k);
        bad += compare(rd, "sst", rec, 1, 24, 0, [&](i64, i64 t) { return ref0[static_cast<std::size_t>(t)]; });
        bad += compare(rd, "t3", rec, iotest::kNlev, 24, 0, [&](i64 l, i64 t) {
          return l == 2 ? ref2[static_cast<std::size_t>(t)] : con.apply(l, k)[static_cast<std::size_t>(t)];
        });
      }
      // The target no valid source reaches is the fill value (not 0, not NaN).
      bad += compare(rd, "sst", 0, 1, 24, 0, [&](i64, i64 t) { return t == 0 ? nan : con.apply(0, 2)[static_cast<std::size_t>(t)]; });
    }
    {
      // XIOS's order: each sample remapped, then averaged on the target grid.
      io::Reader rd(dir + "/con_avg.nc", MPI_COMM_WORLD);
      ASSERT_EQ(rd.records(), 2);
      for (i64 rec = 0; rec < 2; ++rec)
        bad += compare(rd, "sst", rec, 1, 24, 1e-13, [&](i64, i64 t) {
          return 0.5 * (conservative_6x4(t, 0, 2 * rec + 1) + conservative_6x4(t, 0, 2 * rec + 2));
        });
    }
    {
      // Targets from a SCRIP and an OASIS grid file: 2-D (y, x) with 2-D coordinates, the values
      // those of the recipe's.
      for (const char* file : {"/scr.nc", "/oas.nc"}) {
        io::Reader rd(dir + file, MPI_COMM_WORLD);
        ASSERT_EQ(rd.records(), 2);
        bad += compare(rd, "sst", 1, 1, 24, 1e-13, [&](i64, i64 t) { return conservative_6x4(t, 0, 4); });
      }
    }
    for (const auto& [file, ref, nt] : {std::tuple{"bil", &bil, i64{54}}, std::tuple{"dis", &dis, i64{128}}}) {
      io::Reader rd(dir + "/" + file + ".nc", MPI_COMM_WORLD);
      ASSERT_EQ(rd.records(), 2);
      for (i64 rec = 0; rec < 2; ++rec) {
        const std::vector<double> want = ref->apply(0, 2 * (rec + 1));
        bad += compare(rd, "sst", rec, 1, nt, 0, [&](i64, i64 t) { return want[static_cast<std::size_t>(t)]; });
      }
    }
    EXPECT_TRUE(all_ok(bad == 0)) << bad << " values differ on rank " << etest::world_rank();
  }
}

// The cache: the first run writes it; a second run reads it (a cache doctored to twice the
// weights, with the same key, gives twice the values); one with another key is regenerated; one
// without a key is used as it is, and refused (naming it) when its sizes are not the grids'.
TEST(IoRegrid, CachedWeightsAreReusedAndStaleOnesRegenerated) {
  const std::string dir = out_dir("cache");
  const std::string cache = dir + "/rmp_atm_to_r6x4.nc";
  if (etest::world_rank() == 0) std::filesystem::remove(cache);
  MPI_Barrier(MPI_COMM_WORLD);
  const io::OutputConfig cfg = io::OutputConfig::from_yaml_string(yaml_for("serverless", dir, cache), "cache.yaml");
  run_model(cfg, 2);
  ASSERT_TRUE(std::filesystem::exists(cache));
  const std::string key = estuary::read_global_attribute(cache, "estuary_fingerprint", MPI_COMM_WORLD);
  ASSERT_NE(key.find("-IO-lonlat:6x4 conservative order=1"), std::string::npos) << key;
  // Rewrites the cache with the weights scaled by `scale` and the key `k` (rank 0 alone).
  // (k empty: no key, a file estuary did not write; dst_extra: a target grid that size larger.)
  auto doctor = [&](double scale, const std::string& k, i64 dst_extra = 0) {
    if (etest::world_rank() == 0) {
      estuary::WeightSlice w = estuary::read_weights(cache, MPI_COMM_SELF);
      for (double& x : w.links.weight) x *= scale;
      estuary::WeightWriteOptions wo;
      if (!k.empty()) wo.attributes = {{"estuary_fingerprint", k}};
      estuary::write_weights(cache, w.links, w.info.src_size, w.info.dst_size + dst_extra, MPI_COMM_SELF, wo);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  };
  auto sst_at = [&](double factor) {
    io::Reader rd(dir + "/con.nc", MPI_COMM_WORLD);
    return compare(rd, "sst", 0, 1, 24, 1e-13, [&](i64, i64 t) { return factor * conservative_6x4(t, 0, 2); });
  };
  doctor(2.0, key);
  run_model(cfg, 2);
  EXPECT_TRUE(all_ok(sst_at(2.0) == 0)) << "the second run did not read the cache";
  doctor(2.0, "stale");
  run_model(cfg, 2);
  EXPECT_TRUE(all_ok(sst_at(1.0) == 0)) << "a stale cache was used";
  EXPECT_EQ(estuary::read_global_attribute(cache, "estuary_fingerprint", MPI_COMM_WORLD), key);
  // A file estuary did not write (CDO's, say) is used as it is: three times the weights show.
  doctor(3.0, "");
  run_model(cfg, 2);
  EXPECT_TRUE(all_ok(sst_at(3.0) == 0)) << "a foreign weight file was not used as it is";
  // One for another target grid is an error naming the file, on every rank.
  doctor(1.0 / 3.0, "", 1);
  std::string m = "no error";
  try {
    run_model(cfg, 2);
  } catch (const estuary::Error& e) {
    m = e.what();
  }
  EXPECT_NE(m.find(cache), std::string::npos) << m;
  EXPECT_NE(m.find("cache.yaml:"), std::string::npos) << m;
}

TEST(IoRegrid, ConfigErrorsNameTheLine) {
  const std::string head = "output:\n  files:\n    - name: f\n      output_freq: 1h\n";
  const std::string fields = "      fields: [sst]\n";
  auto err = [&](const std::string& grid) { return iotest::config_error(head + "      grid: " + grid + "\n" + fields); };
  std::string m = err("{target: \"lonlat:1x\"}");
  EXPECT_NE(m.find("bad.yaml:5, key output.files[0] (f).grid.target"), std::string::npos) << m;
  m = err("{target: \"lonlat:6x4\", method: spline}");
  EXPECT_NE(m.find("unknown method 'spline'"), std::string::npos) << m;
  EXPECT_NE(m.find("key output.files[0] (f).grid.method"), std::string::npos) << m;
  m = err("{target: \"lonlat:6x4\", method: bilinear, order: 2}");
  EXPECT_NE(m.find("order goes with method conservative only"), std::string::npos) << m;
  m = err("{target: {scrip: a.nc, oasis: b.nc}}");
  EXPECT_NE(m.find("exactly one of scrip: or oasis:"), std::string::npos) << m;
  m = err("{method: conservative}");
  EXPECT_NE(m.find("target"), std::string::npos) << m;
  m = err("{target: \"lonlat:6x4\", colour: red}");
  EXPECT_NE(m.find("colour"), std::string::npos) << m;
  EXPECT_EQ(err("{target: {oasis: grids.nc, name: torc}, method: distwgt, neighbors: 8, weights: w.nc}"), "no error");
}

// A field the model does not declare, named at its line; a target file that does not exist.
TEST(IoRegrid, EndDefErrorsNameTheConfiguration) {
  for (const std::string mode : {"serverless", "server"}) {
    if (mode == "server" && etest::world_size() < 2) continue;
    auto end_def_error = [&](const std::string& grid, const std::string& field) {
      const std::string yaml = "output:\n  mode: " + mode + "\n  directory: " + out_dir("errors") +
                               "\n  files:\n    - name: f\n      output_freq: 1h\n      grid: " + grid +
                               "\n      fields: [" + field + "]\n";
      const io::OutputConfig cfg = io::OutputConfig::from_yaml_string(yaml, "e.yaml");
      std::string msg = "no error";
      try {
        iotest::run_output(cfg, [&](io::Output& out, int p, int r) {
          out.def_grid("atm", source_part(p, r));
          out.def_field(iotest::field("sst", false, iotest::decomp_of("boxes", 1, p, r)));
          out.end_def();
        });
      } catch (const estuary::Error& e) {
        msg = e.what();
      }
      return msg;
    };
    std::string m = end_def_error("{target: \"lonlat:6x4\"}", "tos");
    EXPECT_NE(m.find("field 'tos' is not declared by the model"), std::string::npos) << m;
    EXPECT_NE(m.find("e.yaml:8"), std::string::npos) << m;
    m = end_def_error("{target: {scrip: /nonexistent/grid.nc}}", "sst");
    EXPECT_NE(m.find("/nonexistent/grid.nc"), std::string::npos) << m;
    EXPECT_NE(m.find("e.yaml:7, key output.files[0] (f).grid"), std::string::npos) << m;
  }
}

// XIOS's <interpolate_domain> on a field's grid (grid_ref to a grid whose domain is generated
// rectilinear) becomes the file's grid; a file mixing grids, or an attribute that changes the
// values estuary does not follow, is refused at its line (or the field left out with
// skip_unsupported).
TEST(IoRegrid, XiosInterpolateDomainBecomesTheFileGrid) {
  const std::string dir = out_dir("xios");
  auto xml = [&](const std::string& name, const std::string& interp, const std::string& files) {
    const std::string path = dir + "/" + name;
    if (etest::world_rank() == 0) {
      std::filesystem::create_directories(dir);
      std::ofstream(path) << "<?xml version=\"1.0\"?>\n<simulation>\n<context id=\"nemo\">\n"
                             "<field_definition>\n"
                             "  <field id=\"sst\" grid_ref=\"grid_T_2D\" operation=\"average\"/>\n"
                             "  <field id=\"t3\" grid_ref=\"grid_T_2D\" operation=\"average\"/>\n"
                             "</field_definition>\n"
                             "<domain_definition>\n"
                             "  <domain id=\"grid_T\"/>\n"
                             "  <domain id=\"regular\" type=\"rectilinear\" ni_glo=\"6\" nj_glo=\"4\">\n"
                             "    <generate_rectilinear_domain/>\n"
                             "    <interpolate_domain " + interp + "/>\n"
                             "  </domain>\n"
                             "</domain_definition>\n"
                             "<grid_definition>\n"
                             "  <grid id=\"grid_T_2D\"><domain domain_ref=\"grid_T\"/></grid>\n"
                             "  <grid id=\"grid_reg\"><domain domain_ref=\"regular\"/></grid>\n"
                             "</grid_definition>\n"
                             "<file_definition>\n" + files + "</file_definition>\n</context>\n</simulation>\n";
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return path;
  };
  auto error = [&](const std::string& path, io::XiosXmlInfo* info = nullptr, bool skip = false) {
    io::XiosXmlOptions o;
    o.skip_unsupported = skip;
    try {
      io::OutputConfig::from_xios_xml(path, o, info);
    } catch (const estuary::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string one = "  <file id=\"f\" name=\"reg\" output_freq=\"1d\">\n"
                          "    <field field_ref=\"sst\" grid_ref=\"grid_reg\"/>\n"
                          "    <field field_ref=\"t3\" grid_ref=\"grid_reg\"/>\n  </file>\n";
  const std::string p1 = xml("one.xml", "order=\"1\" renormalize=\"true\" weight_filename=\"rmp_reg.nc\"", one);
  io::XiosXmlInfo info;
  io::XiosXmlOptions o;
  const io::OutputConfig c = io::OutputConfig::from_xios_xml(p1, o, &info);
  ASSERT_EQ(c.files.size(), 1u);
  const io::RegridConfig& g = c.files[0].grid;
  EXPECT_EQ(g.target, io::RegridConfig::Target::recipe);
  EXPECT_EQ(g.describe(), "lonlat:6x4 conservative order=1");
  EXPECT_EQ(g.weights, "rmp_reg.nc");
  EXPECT_NE(g.origin.find("one.xml:12, <interpolate_domain>"), std::string::npos) << g.origin;
  ASSERT_EQ(c.files[0].fields.size(), 2u);
  std::string warnings;
  for (const auto& w : info.warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("one.xml:10, <domain id=\"regular\""), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("the target is estuary's lonlat:6x4"), std::string::npos) << warnings;
  // XIOS's defaults: second order, not renormalised.
  EXPECT_EQ(io::OutputConfig::from_xios_xml(xml("defaults.xml", "", one), o, &info).files[0].grid.describe(),
            "lonlat:6x4 conservative order=2 destarea");
  // A file with a field on the model's grid and one interpolated: refused at the field's line.
  const std::string mixed = "  <file id=\"f\" name=\"mixed\" output_freq=\"1d\">\n"
                            "    <field field_ref=\"sst\" grid_ref=\"grid_reg\"/>\n"
                            "    <field field_ref=\"t3\"/>\n  </file>\n";
  const std::string p2 = xml("mixed.xml", "order=\"1\"", mixed);
  std::string m = error(p2);
  EXPECT_NE(m.find("field 't3' is on another grid than the file's earlier fields"), std::string::npos) << m;
  EXPECT_NE(m.find("mixed.xml:22, <field field_ref=\"t3\">"), std::string::npos) << m;
  io::XiosXmlInfo skipped;
  EXPECT_EQ(error(p2, &skipped, true), "no error");
  // What would change the values: refused, naming the attribute.
  m = error(xml("quantity.xml", "quantity=\"true\"", one));
  EXPECT_NE(m.find("quantity.xml:12, <interpolate_domain>, attribute quantity"), std::string::npos) << m;
}
