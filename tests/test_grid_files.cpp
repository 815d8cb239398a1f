// OASIS grid files (grids.nc, masks.nc, areas.nc): the grid-writing calls of Component (whole
// grids from one rank, partitions from every rank, two components sharing the files), the files
// checked with the netCDF C library directly (names, dimensions, types, values, OASIS's mask
// convention), read back at enddef for SCRIPR DISTWGT and CONSERV couplings whose results and
// weights must equal bit for bit those of the same grids given with def_grid, and the errors.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "couple_test_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/grid_files.hpp"

using namespace estuary;
using namespace ctest_util;

namespace {

// Source: a tripolar grid with land (curvilinear, 4 corners); target: a lon-lat grid with land.
constexpr i64 kSnx = 12, kSny = 10, kDnx = 16, kDny = 8, kNs = kSnx * kSny, kNd = kDnx * kDny;
constexpr double kPeriod = 3600;

GridGen src_gen() { return GridGen::tripolar(kSnx, kSny).with_land(); }
GridGen dst_gen() { return GridGen::lonlat(kDnx, kDny).with_land(); }

// As a model gives it to def_grid (a Fortran model's estuary_def_grid makes it curvilinear):
// the same cells as the files hold, so both ways must give the same weights.
Grid as_model_grid(Grid g) {
  g.kind = GridKind::curvilinear;
  return g;
}

struct Layout {
  bool src = false, dst = false;
  std::string comp;
  int index = 0, count = 1;
};

Layout layout() {
  const int r = world_rank(), p = world_size();
  if (p == 1) return {true, true, "solo", 0, 1};
  const int h = p / 2;
  if (r < h) return {true, false, "atm", r, h};
  return {false, true, "ocn", r - h, p - h};
}

Decomp src_decomp(const Layout& l) { return l.src ? gen::cyclic(kNs, l.index, l.count) : Decomp::empty(kNs); }
Decomp dst_decomp(const Layout& l) { return l.dst ? gen::block(kNd, l.index, l.count) : Decomp::empty(kNd); }

// One coupling A_F -> O_F from agrd to ogrd with these transformations.
std::string namcouple(int ntrans, const std::string& rest) {
  return " $NFIELDS\n 1\n $END\n $RUNTIME\n " + std::to_string(static_cast<long>(2 * kPeriod)) +
         "\n $END\n $NLOGPRT\n 1\n $END\n $NNOREST\n T\n $END\n $STRINGS\nA_F O_F 1 " +
         std::to_string(static_cast<long>(kPeriod)) + " " + std::to_string(ntrans) + " rst.nc EXPORTED\n" +
         std::to_string(kSnx) + " " + std::to_string(kSny) + " " + std::to_string(kDnx) + " " + std::to_string(kDny) +
         " agrd ogrd\nR 0 R 0\n" + rest + " $END\n";
}

// OASIS's mask (1 = masked) of a Grid's (1 = valid).
std::vector<std::int32_t> oasis_mask(const Grid& g) {
  std::vector<std::int32_t> m(static_cast<std::size_t>(g.size()), 0);
  for (i64 k = 0; k < g.size(); ++k) m[static_cast<std::size_t>(k)] = g.valid(k) ? 0 : 1;
  return m;
}

// Corners point-major (Grid) -> point fastest, corner slowest (OASIS's (n, nc) layout).
std::vector<double> corner_slowest(const std::vector<double>& c, i64 n, int nc) {
  std::vector<double> out(c.size());
  for (i64 k = 0; k < n; ++k)
    for (int j = 0; j < nc; ++j)
      out[static_cast<std::size_t>(j * n + k)] = c[static_cast<std::size_t>(k * nc + j)];
  return out;
}

// Gives a grid with the grid-writing calls: the whole grid (part -1) or this rank's points.
void write_pieces(Component& comp, const std::string& name, i64 nx, i64 ny, const Grid& g, int part,
                  bool corners = true, bool mask = true, bool area = true) {
  comp.write_grid(name, nx, ny, g.lon, g.lat, part);
  if (corners)
    comp.write_corner(name, nx, ny, g.ncorner, corner_slowest(g.corner_lon, g.size(), g.ncorner),
                      corner_slowest(g.corner_lat, g.size(), g.ncorner), part);
  if (mask) comp.write_mask(name, nx, ny, oasis_mask(g), part);
  if (area) comp.write_area(name, nx, ny, g.area, part);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ---- raw netCDF, independent of estuary's reader ----
struct Raw {
  int id = -1;
  explicit Raw(const std::string& path) { EXPECT_EQ(nc_open(path.c_str(), NC_NOWRITE, &id), NC_NOERR) << path; }
  ~Raw() {
    if (id >= 0) nc_close(id);
  }
  int var(const std::string& v) const {
    int x = -1;
    EXPECT_EQ(nc_inq_varid(id, v.c_str(), &x), NC_NOERR) << v;
    return x;
  }
  std::vector<std::string> dims(const std::string& v) const {
    int nd = 0, d[NC_MAX_VAR_DIMS];
    nc_inq_varndims(id, var(v), &nd);
    nc_inq_vardimid(id, var(v), d);
    std::vector<std::string> out;
    for (int k = 0; k < nd; ++k) {
      char name[NC_MAX_NAME + 1] = {};
      std::size_t len = 0;
      nc_inq_dim(id, d[k], name, &len);
      out.push_back(std::string(name) + "=" + std::to_string(len));
    }
    return out;
  }
  nc_type type(const std::string& v) const {
    nc_type t = NC_NAT;
    nc_inq_vartype(id, var(v), &t);
    return t;
  }
  std::vector<double> doubles(const std::string& v, std::size_t n) const {
    std::vector<double> x(n);
    EXPECT_EQ(nc_get_var_double(id, var(v), x.data()), NC_NOERR) << v;
    return x;
  }
  std::vector<int> ints(const std::string& v, std::size_t n) const {
    std::vector<int> x(n);
    EXPECT_EQ(nc_get_var_int(id, var(v), x.data()), NC_NOERR) << v;
    return x;
  }
};

// The file holds grid `name` = g (whole) with OASIS's names, layout and mask convention.
void expect_grid_in_files(const std::string& dir, const std::string& name, const Grid& g, i64 nx, i64 ny) {
  const std::size_t n = static_cast<std::size_t>(nx * ny), nc = static_cast<std::size_t>(g.ncorner);
  const std::string x = "x_" + name + "=" + std::to_string(nx), y = "y_" + name + "=" + std::to_string(ny);
  Raw grids(dir + "/grids.nc"), masks(dir + "/masks.nc"), areas(dir + "/areas.nc");
  EXPECT_EQ(grids.dims(name + ".lon"), (std::vector<std::string>{y, x}));
  EXPECT_EQ(grids.dims(name + ".lat"), (std::vector<std::string>{y, x}));
  EXPECT_EQ(grids.dims(name + ".clo"), (std::vector<std::string>{"crn_" + name + "=" + std::to_string(nc), y, x}));
  EXPECT_EQ(masks.dims(name + ".msk"), (std::vector<std::string>{y, x}));
  EXPECT_EQ(areas.dims(name + ".srf"), (std::vector<std::string>{y, x}));
  EXPECT_EQ(grids.type(name + ".lon"), NC_DOUBLE);
  EXPECT_EQ(masks.type(name + ".msk"), NC_INT);
  const std::vector<double> lon = grids.doubles(name + ".lon", n), lat = grids.doubles(name + ".lat", n);
  const std::vector<double> clo = grids.doubles(name + ".clo", n * nc), cla = grids.doubles(name + ".cla", n * nc);
  const std::vector<int> msk = masks.ints(name + ".msk", n);
  const std::vector<double> srf = areas.doubles(name + ".srf", n);
  int masked = 0;
  for (std::size_t k = 0; k < n; ++k) {  // netCDF (y, x) = Fortran (x, y): point i + nx j at k
    EXPECT_EQ(lon[k], g.lon[k]) << name << " point " << k;
    EXPECT_EQ(lat[k], g.lat[k]) << name << " point " << k;
    EXPECT_EQ(msk[k], g.valid(static_cast<i64>(k)) ? 0 : 1) << name << " point " << k << " (1 = masked)";
    EXPECT_EQ(srf[k], g.area[k]) << name << " point " << k;
    masked += msk[k];
    for (std::size_t c = 0; c < nc; ++c) {  // (crn, y, x)
      EXPECT_EQ(clo[c * n + k], g.corner_lon[k * nc + c]) << name << " point " << k << " corner " << c;
      EXPECT_EQ(cla[c * n + k], g.corner_lat[k * nc + c]) << name << " point " << k << " corner " << c;
    }
  }
  EXPECT_GT(masked, 0) << name << ": the test grid has land";
}

// Received values of a coupled run: per coupling time, this rank's target values.
struct RunResult {
  std::vector<std::vector<double>> got;
  std::string log;
};

// A two-sided run of A_F -> O_F. by_files: the grids are given with the grid-writing calls
// (source whole from the source side's first rank, target by partitions); else with def_grid.
RunResult coupled_run(const std::string& dir, bool by_files) {
  const Layout l = layout();
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  RunResult out;
  {
    Component comp(l.comp, o);
    const Decomp sd = src_decomp(l), dd = dst_decomp(l);
    int sv = -1, dv = -1;
    if (by_files) comp.start_grids_writing();
    if (l.src) {
      const int part = comp.def_partition(sd, "agrd");
      if (!by_files) comp.def_grid("agrd", part, as_model_grid(src_gen().make(sd)));
      else if (l.index == 0) write_pieces(comp, "agrd", kSnx, kSny, src_gen().make(), -1);
      sv = comp.def_var("A_F", part, Direction::out);
    }
    if (l.dst) {
      const int part = comp.def_partition(dd, "ogrd");
      if (!by_files) comp.def_grid("ogrd", part, as_model_grid(dst_gen().make(dd)));
      else write_pieces(comp, "ogrd", kDnx, kDny, dst_gen().make(dd), part);
      dv = comp.def_var("O_F", part, Direction::in);
    }
    if (by_files) comp.terminate_grids_writing();
    comp.enddef();
    for (double t = 0; t < 2 * kPeriod; t += kPeriod) {
      if (l.src) comp.put(sv, t, local_of(global_field(kNs, t), sd));
      if (l.dst) {
        std::vector<double> v(static_cast<std::size_t>(dd.size()), -999.0);
        comp.get(dv, t, v);
        out.got.push_back(v);
      }
    }
    comp.terminate();
  }
  out.log = read_text(dir + "/estuary." + l.comp + ".log");
  return out;
}

}  // namespace

// One component over the world gives two grids: "wgrd" whole from its last rank (OASIS's
// classic call), "pgrd" by partitions from every rank (a cyclic decomposition: scattered
// points). The files hold both exactly; estuary's reader gives them back in another
// decomposition.
TEST(GridFiles, WholeFromOneRankAndPartitionsFromAll) {
  const std::string dir = fresh_dir("gridfiles_write");
  write_text(dir + "/namcouple", namcouple(1, "SCRIPR\nDISTWGT LR SCALAR LATLON 1 4\n"));  // its fields unused
  const int r = world_rank(), p = world_size();
  const Grid whole_w = src_gen().make(), whole_p = dst_gen().make();
  {
    ComponentOptions o;
    o.config = dir + "/namcouple";
    o.directory = dir;
    Component comp("grids", o);
    const Decomp pd = gen::cyclic(kNd, r, p);
    const int part = comp.def_partition(pd, "pgrd");
    EXPECT_TRUE(comp.start_grids_writing());
    if (r == p - 1) write_pieces(comp, "wgrd", kSnx, kSny, whole_w, -1);
    write_pieces(comp, "pgrd", kDnx, kDny, dst_gen().make(pd), part);
    comp.terminate_grids_writing();
    comp.enddef();
    comp.terminate();
    const std::string log = read_text(dir + "/estuary.grids.log");
    EXPECT_NE(log.find("wgrd.lon written (from world rank " + std::to_string(p - 1) + ")"), std::string::npos) << log;
    EXPECT_NE(log.find("pgrd.msk written (gathered from the " + std::to_string(p) + " rank(s) of partition pgrd)"),
              std::string::npos)
        << log;
  }
  if (r == 0) {
    expect_grid_in_files(dir, "wgrd", whole_w, kSnx, kSny);
    expect_grid_in_files(dir, "pgrd", whole_p, kDnx, kDny);
  }
  // Back through estuary's reader, a block of each grid per rank.
  for (const auto& [name, recipe] : {std::pair{std::string("wgrd"), src_gen()}, std::pair{std::string("pgrd"), dst_gen()}}) {
    const Decomp d = gen::block(recipe.size(), r, p);
    GridFileNeeds needs;
    needs.corners = needs.mask = needs.area = true;
    const Grid got = read_oasis_grid(OasisGridFiles::in(dir), name, d, MPI_COMM_WORLD, needs);
    const Grid want = recipe.make(d);
    EXPECT_EQ(got.dims, recipe.dims());
    EXPECT_EQ(got.kind, GridKind::curvilinear);
    EXPECT_EQ(got.points, d.to_indices());
    EXPECT_EQ(got.lon, want.lon) << name;
    EXPECT_EQ(got.lat, want.lat) << name;
    EXPECT_EQ(got.ncorner, want.ncorner) << name;
    EXPECT_EQ(got.corner_lon, want.corner_lon) << name;
    EXPECT_EQ(got.corner_lat, want.corner_lat) << name;
    EXPECT_EQ(got.area, want.area) << name << " (steradians: kept as they are)";
    for (i64 k = 0; k < want.size(); ++k) EXPECT_EQ(got.valid(k), want.valid(k)) << name << " point " << k;
  }
}

// Two components write into the same files in the same enddef: each its own grid, and both the
// grid "both" (the first component, by world rank, writes it; the other's is not rewritten). A
// grid already in grids.nc ("keep", from an earlier run) is left as it was, and a second run
// rewrites nothing.
TEST(GridFiles, ComponentsShareTheFilesWithoutClobbering) {
  const Layout l = layout();
  const std::string dir = fresh_dir("gridfiles_share");
  write_text(dir + "/namcouple", namcouple(1, "SCRIPR\nDISTWGT LR SCALAR LATLON 1 4\n"));
  const Grid keep_old = GridGen::lonlat(4, 3).make(), keep_new = GridGen::lonlat(4, 3).with_land().make();
  std::vector<double> shifted = keep_new.lon;
  for (double& x : shifted) x += 1.0;
  if (world_rank() == 0) write_oasis_grid_var(dir + "/grids.nc", "keep", ".lon", 4, 3, 0, keep_old.lon);
  MPI_Barrier(MPI_COMM_WORLD);
  const Grid both = GridGen::cubed_sphere(2).make();  // 24 cells, (24, 1)
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    ComponentOptions o;
    o.config = dir + "/namcouple";
    o.directory = dir;
    std::string log;
    {
      Component comp(l.comp, o);
      comp.start_grids_writing();
      if (l.src && l.index == 0) {
        write_pieces(comp, "agrd", kSnx, kSny, src_gen().make(), -1);
        comp.write_grid("both", both.size(), 1, both.lon, both.lat);
        comp.write_grid("keep", 4, 3, shifted, keep_new.lat);
      }
      if (l.dst) {
        const Decomp dd = dst_decomp(l);
        write_pieces(comp, "ogrd", kDnx, kDny, dst_gen().make(dd), comp.def_partition(dd, "ogrd"));
        const Decomp bd = gen::block(both.size(), l.index, l.count);
        const Grid bg = GridGen::cubed_sphere(2).make(bd);
        std::vector<double> lat = bg.lat;
        if (l.src) {  // one component: the second call replaces the first (as in OASIS)
          comp.write_grid("both", both.size(), 1, bg.lon, lat, comp.def_partition(bd, "both"));
        } else {
          for (double& x : lat) x = -x;  // another component's "both" (never written: the first wins)
          comp.write_grid("both", both.size(), 1, bg.lon, lat, comp.def_partition(bd, "both"));
        }
      }
      comp.terminate_grids_writing();
      comp.enddef();
      comp.terminate();
    }
    log = read_text(dir + "/estuary." + l.comp + ".log");
    if (l.src && l.index == 0) {
      EXPECT_NE(log.find("keep.lon is in the file already: not rewritten (as in OASIS)"), std::string::npos) << log;
    }
    if (run == 1 && ((l.src && l.index == 0) || (l.dst && l.index == 0))) {
      EXPECT_EQ(log.find(" written ("), std::string::npos) << "the second run rewrote a variable:\n" << log;
    }
    if (run == 0 && l.dst && !l.src && l.index == 0) {
      EXPECT_NE(log.find("both.lat also given by component atm, which wrote it: not rewritten"), std::string::npos) << log;
    }
    if (world_rank() == 0) {
      expect_grid_in_files(dir, "agrd", src_gen().make(), kSnx, kSny);
      expect_grid_in_files(dir, "ogrd", dst_gen().make(), kDnx, kDny);
      Raw grids(dir + "/grids.nc");
      EXPECT_EQ(grids.doubles("keep.lon", 12), keep_old.lon);  // the earlier run's
      EXPECT_EQ(grids.doubles("keep.lat", 12), keep_new.lat);  // added: the file lacked it
      EXPECT_EQ(grids.doubles("both.lon", 24), both.lon);
      EXPECT_EQ(grids.doubles("both.lat", 24), both.lat);  // the first component's values
      EXPECT_EQ(grids.dims("both.lon"), (std::vector<std::string>{"y_both=1", "x_both=24"}));
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

// SCRIPR DISTWGT (4 neighbours, nearest fill): the grids read from the files at enddef give the
// same values, bit for bit, as the same grids given with def_grid.
TEST(GridFiles, DistwgtFromFilesEqualsDefGrid) {
  const Layout l = layout();
  const std::string d1 = fresh_dir("gridfiles_distwgt_defgrid"), d2 = fresh_dir("gridfiles_distwgt_files");
  for (const std::string& d : {d1, d2}) write_text(d + "/namcouple", namcouple(1, "SCRIPR\nDISTWGT LR SCALAR LATLON 1 4\n"));
  const RunResult a = coupled_run(d1, false), b = coupled_run(d2, true);
  if (l.dst) {
    ASSERT_EQ(a.got.size(), 2u);
    ASSERT_EQ(b.got.size(), 2u);
    for (std::size_t t = 0; t < a.got.size(); ++t) {
      EXPECT_EQ(a.got[t], b.got[t]) << "time " << t;
      for (double v : b.got[t]) EXPECT_NE(v, -999.0);
    }
    EXPECT_NE(b.log.find("grid ogrd read from " + d2 + "/grids.nc"), std::string::npos) << b.log;
    EXPECT_EQ(a.log.find("read from"), std::string::npos) << a.log;
  }
}

// SCRIPR CONSERV FRACAREA and the CONSERV GLOBAL correction (areas from areas.nc): the weight
// file generated from the files equals, link for link, the one generated from def_grid, and so
// do the values got.
TEST(GridFiles, ConservFromFilesEqualsDefGrid) {
  const Layout l = layout();
  const std::string d1 = fresh_dir("gridfiles_conserv_defgrid"), d2 = fresh_dir("gridfiles_conserv_files");
  for (const std::string& d : {d1, d2})
    write_text(d + "/namcouple", namcouple(2, "SCRIPR CONSERV\nCONSERV LR SCALAR LATLON 1 FRACAREA FIRST\nGLOBAL\n"));
  const RunResult a = coupled_run(d1, false), b = coupled_run(d2, true);
  if (l.dst) {
    ASSERT_EQ(a.got.size(), 2u);
    ASSERT_EQ(b.got.size(), 2u);
    for (std::size_t t = 0; t < a.got.size(); ++t) EXPECT_EQ(a.got[t], b.got[t]) << "time " << t;
    EXPECT_NE(b.log.find("CONSERV weights generated"), std::string::npos) << b.log;
  }
  if (world_rank() == 0) {
    const std::string f = "/rmp_agrd_to_ogrd_CONSERV_FRACAREA.nc";
    Raw w1(d1 + f), w2(d2 + f);
    std::size_t n1 = 0, n2 = 0;
    int dim = -1;
    nc_inq_dimid(w1.id, "num_links", &dim);
    nc_inq_dimlen(w1.id, dim, &n1);
    nc_inq_dimid(w2.id, "num_links", &dim);
    nc_inq_dimlen(w2.id, dim, &n2);
    ASSERT_EQ(n1, n2);
    ASSERT_GT(n1, 0u);
    EXPECT_EQ(w1.ints("src_address", n1), w2.ints("src_address", n2));
    EXPECT_EQ(w1.ints("dst_address", n1), w2.ints("dst_address", n2));
    EXPECT_EQ(w1.doubles("remap_matrix", n1), w2.doubles("remap_matrix", n2));
    EXPECT_EQ(read_global_attribute(d1 + f, "estuary_fingerprint", MPI_COMM_SELF),
              read_global_attribute(d2 + f, "estuary_fingerprint", MPI_COMM_SELF));
  }
}

// A variable the coupling needs and nobody wrote: enddef fails on every rank with a message
// naming the file, the variable and the coupling.
TEST(GridFiles, MissingVariableNamesFileVariableAndCoupling) {
  const Layout l = layout();
  struct Case {
    std::string transformations, missing_file, missing_var;
    bool corners, mask;
    int ntrans;
  };
  const std::vector<Case> cases = {
      {"SCRIPR\nCONSERV LR SCALAR LATLON 1 FRACAREA FIRST\n", "grids.nc", "agrd.clo", false, true, 1},
      {"SCRIPR\nDISTWGT LR SCALAR LATLON 1 4\n", "masks.nc", "agrd.msk", true, false, 1},
      {"SCRIPR CONSERV\nDISTWGT LR SCALAR LATLON 1 4\nGLOBAL\n", "areas.nc", "agrd.srf", true, true, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.missing_var);
    const std::string dir = fresh_dir("gridfiles_missing_" + c.missing_var);
    write_text(dir + "/namcouple", namcouple(c.ntrans, c.transformations));
    ComponentOptions o;
    o.config = dir + "/namcouple";
    o.directory = dir;
    Component comp(l.comp, o);
    comp.start_grids_writing();
    if (l.src) {
      const Decomp sd = src_decomp(l);
      const int part = comp.def_partition(sd, "agrd");
      write_pieces(comp, "agrd", kSnx, kSny, src_gen().make(sd), part, c.corners, c.mask, false);
      comp.def_var("A_F", part, Direction::out);
    }
    if (l.dst) {
      const Decomp dd = dst_decomp(l);
      const int part = comp.def_partition(dd, "ogrd");
      write_pieces(comp, "ogrd", kDnx, kDny, dst_gen().make(dd), part);
      comp.def_var("O_F", part, Direction::in);
    }
    comp.terminate_grids_writing();
    try {
      comp.enddef();
      ADD_FAILURE() << "enddef accepted a coupling without " << c.missing_var;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(dir + "/" + c.missing_file), std::string::npos) << m;
      EXPECT_NE(m.find("variable " + c.missing_var), std::string::npos) << m;
      EXPECT_NE(m.find("A_F -> O_F (" + dir + "/namcouple:"), std::string::npos) << m;
    }
  }
}

// Areas in m^2 (OASIS's usual unit): turned into steradians, by the units attribute or, without
// one, by their size; the rest of a SCRIP file round trip.
TEST(GridFiles, AreaUnitsAndScripFiles) {
  const std::string dir = fresh_dir("gridfiles_units");
  const Grid g = GridGen::lonlat(6, 4).make();
  const double r2 = kOasisEarthRadius * kOasisEarthRadius;
  std::vector<double> m2 = g.area;
  for (double& a : m2) a *= r2;
  if (world_rank() == 0) {
    write_oasis_grid_var(dir + "/grids.nc", "unit", ".lon", 6, 4, 0, g.lon);
    write_oasis_grid_var(dir + "/grids.nc", "unit", ".lat", 6, 4, 0, g.lat);
    write_oasis_grid_var(dir + "/areas.nc", "unit", ".srf", 6, 4, 0, m2);
    write_scrip_grid(dir + "/scrip.nc", src_gen().make());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const Decomp d = gen::cyclic(g.global_size, world_rank(), world_size());
  const Grid got = read_oasis_grid(OasisGridFiles::in(dir), "unit", d, MPI_COMM_WORLD);
  const Grid want = GridGen::lonlat(6, 4).make(d);
  for (i64 k = 0; k < got.size(); ++k)
    EXPECT_NEAR(got.area[static_cast<std::size_t>(k)], want.area[static_cast<std::size_t>(k)], 1e-15 * want.area[static_cast<std::size_t>(k)]);
  EXPECT_TRUE(got.mask.empty());  // no masks.nc: every point valid (not required here)
  // With a units attribute saying m2 (values that the size rule would take for steradians too).
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    int id = -1, v = -1;
    ASSERT_EQ(nc_open((dir + "/areas.nc").c_str(), NC_WRITE, &id), NC_NOERR);
    nc_redef(id);
    const std::vector<double> tiny(24, 1.0);
    int dims[2];
    nc_inq_dimid(id, "y_unit", &dims[0]);
    nc_inq_dimid(id, "x_unit", &dims[1]);
    nc_def_var(id, "tiny.srf", NC_DOUBLE, 2, dims, &v);
    nc_put_att_text(id, v, "units", 2, "m2");
    nc_enddef(id);
    nc_put_var_double(id, v, tiny.data());
    nc_close(id);
    write_oasis_grid_var(dir + "/grids.nc", "tiny", ".lon", 6, 4, 0, g.lon);
    write_oasis_grid_var(dir + "/grids.nc", "tiny", ".lat", 6, 4, 0, g.lat);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const Grid tiny = read_oasis_grid(OasisGridFiles::in(dir), "tiny", d, MPI_COMM_WORLD);
  for (double a : tiny.area) EXPECT_DOUBLE_EQ(a, 1.0 / r2);
  // SCRIP: grid_imask 1 = valid, corners point-major.
  const Decomp sd = gen::block(kNs, world_rank(), world_size());
  const Grid s = read_grid_file(dir + "/scrip.nc", "", sd, MPI_COMM_WORLD);
  const Grid sw = src_gen().make(sd);
  EXPECT_EQ(s.dims, sw.dims);
  EXPECT_EQ(s.lon, sw.lon);
  EXPECT_EQ(s.lat, sw.lat);
  EXPECT_EQ(s.corner_lon, sw.corner_lon);
  EXPECT_EQ(s.corner_lat, sw.corner_lat);
  for (i64 k = 0; k < sw.size(); ++k) EXPECT_EQ(s.valid(k), sw.valid(k));
  const GridFileInfo info = grid_file_info(dir + "/grids.nc", "unit");
  EXPECT_EQ(info.format, "oasis");
  EXPECT_EQ(info.dims, (std::vector<i64>{6, 4}));
  EXPECT_TRUE(info.area);
  EXPECT_FALSE(info.mask);
  EXPECT_THROW(grid_file_info(dir + "/grids.nc"), Error);  // two grids: name one
}

// The calls' own checks (local, immediate).
TEST(GridFiles, CallErrors) {
  const std::string dir = fresh_dir("gridfiles_calls");
  write_text(dir + "/namcouple", namcouple(1, "SCRIPR\nDISTWGT LR SCALAR LATLON 1 4\n"));
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  Component comp("calls", o);
  const int r = world_rank(), p = world_size();
  const Decomp d = gen::block(12, r, p);
  const int part = comp.def_partition(d, "calls");
  const std::vector<double> twelve(12, 1.0), mine(static_cast<std::size_t>(d.size()), 1.0),
      wrong(static_cast<std::size_t>(d.size() + 1), 1.0);
  const auto message = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { comp.write_grid("g", 4, 3, twelve, twelve); }).find("call start_grids_writing first"),
            std::string::npos);
  comp.start_grids_writing();
  EXPECT_NE(message([&] { comp.write_grid("g", 4, 4, twelve, twelve); }).find("lon has 12 values, nx * ny = 16"),
            std::string::npos);
  EXPECT_NE(message([&] { comp.write_grid("g", 4, 3, wrong, wrong, part); }).find("values, the partition's points = "),
            std::string::npos);
  EXPECT_NE(message([&] { comp.write_grid("g.x", 4, 3, twelve, twelve); }).find("holds a dot"), std::string::npos);
  EXPECT_NE(message([&] { comp.write_grid("g", 4, 3, twelve, twelve, 7); }).find("partition id 7 is not defined"),
            std::string::npos);
  EXPECT_NE(message([&] { comp.write_grid("g", 6, 3, twelve, twelve, part); }).find("nx * ny = 18 but partition"),
            std::string::npos);
  comp.write_grid("g", 4, 3, mine, mine, part);
  EXPECT_NE(message([&] { comp.write_area("g", 4, 3, twelve); }).find("give every piece of a grid with the same"),
            std::string::npos);
  comp.terminate_grids_writing();
  comp.enddef();
  EXPECT_NE(message([&] { comp.start_grids_writing(); }).find("after enddef"), std::string::npos);
  comp.terminate();
}
