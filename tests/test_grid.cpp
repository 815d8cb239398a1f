// Grids: generator sizes, cell areas against exact sphere integrals, shares of a grid equal to
// the whole grid's points, the land mask, and the SCRIP grid file read back with netCDF.
#include <gtest/gtest.h>
#include <mpi.h>
#include <netcdf.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numbers>
#include <numeric>
#include <string>
#include <vector>

#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"

using estuary::Grid;
using estuary::GridGen;
using i64 = std::int64_t;

namespace {

constexpr double kPi = std::numbers::pi;

double total_area(const Grid& g) { return std::accumulate(g.area.begin(), g.area.end(), 0.0); }

std::string temp_dir() {
  char tmpl[] = "/tmp/estuary_grid_XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "/tmp";
}

}  // namespace

TEST(Grid, AreasCoverTheSphere) {
  for (const GridGen& gen : {GridGen::lonlat(36, 18), GridGen::gaussian(64, 32), GridGen::reduced_gaussian(16),
                             GridGen::cubed_sphere(7)}) {
    const Grid g = gen.make();
    ASSERT_EQ(g.size(), gen.size()) << gen.name();
    EXPECT_TRUE(g.whole());
    EXPECT_NEAR(total_area(g), 4 * kPi, 1e-12 * 4 * kPi) << gen.name();
    for (double a : g.area) EXPECT_GT(a, 0.0) << gen.name();
  }
  // The tripolar grid starts at 78S: the cap above it has area 2 pi (1 - sin(-78)), up to the
  // great-circle edges of its cells along the 78S circle (second order in the spacing).
  for (i64 nx : {36, 360}) {
    const Grid t = GridGen::tripolar(nx, nx * 2 / 3).make();
    const double want = 2 * kPi * (1 + std::sin(78 * kPi / 180));
    EXPECT_NEAR(total_area(t), want, want * 0.2 / static_cast<double>(nx * nx)) << nx;
    for (double a : t.area) EXPECT_GT(a, 0.0);
  }
}

TEST(Grid, GaussianCellAreasAreQuadratureWeights) {
  // A band's area is 2 pi times its Gaussian weight; the weights integrate cos^2 exactly.
  const Grid g = GridGen::gaussian(5, 24).make();
  double integral = 0;  // integral of sin^2(lat) over the sphere = 4 pi / 3
  for (i64 k = 0; k < g.size(); ++k) integral += g.area[k] * std::pow(std::sin(g.lat[k] * kPi / 180), 2);
  EXPECT_NEAR(integral, 4 * kPi / 3, 1e-13);
}

TEST(Grid, BenchmarkGridSizes) {
  EXPECT_EQ(GridGen::orca025().size(), 1442 * 1021);
  EXPECT_EQ(GridGen::orca025().dims(), (std::vector<i64>{1442, 1021}));
  const i64 t799 = GridGen::t799().size();
  EXPECT_GT(t799, 830000);
  EXPECT_LT(t799, 860000);
  // A share is built without the rest: the last points of T799 and ORCA025.
  for (const GridGen& gen : {GridGen::t799(), GridGen::orca025()}) {
    const i64 n = gen.size();
    const Grid g = gen.make(estuary::Decomp::stripes(n, {{n - 1000, 1000, 1}}));
    EXPECT_EQ(g.size(), 1000);
    EXPECT_EQ(g.global_index(999), n - 1);
    for (double a : g.area) EXPECT_GT(a, 0.0);
  }
}

TEST(Grid, SharesMatchTheWholeGrid) {
  const GridGen gen = GridGen::tripolar(20, 16).with_land();
  const Grid whole = gen.make();
  const estuary::Decomp part = estuary::gen::random(gen.size(), 1, 3, 7);
  const Grid g = gen.make(part);
  const std::vector<i64> idx = part.to_indices();
  ASSERT_EQ(g.size(), static_cast<i64>(idx.size()));
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const std::size_t w = static_cast<std::size_t>(idx[k]);
    EXPECT_EQ(g.global_index(static_cast<i64>(k)), idx[k]);
    EXPECT_EQ(g.lon[k], whole.lon[w]);
    EXPECT_EQ(g.lat[k], whole.lat[w]);
    EXPECT_EQ(g.mask[k], whole.mask[w]);
    EXPECT_EQ(g.area[k], whole.area[w]);
    for (int c = 0; c < 4; ++c) EXPECT_EQ(g.corner_lat[4 * k + c], whole.corner_lat[4 * w + c]);
  }
  // Some land, mostly ocean.
  const i64 land = std::count(whole.mask.begin(), whole.mask.end(), 0);
  EXPECT_GT(land, whole.size() / 10);
  EXPECT_LT(land, whole.size() / 2);
}

TEST(Grid, PolygonArea) {
  // An octant: three right angles, area pi/2, either orientation; a repeated vertex adds nothing.
  const std::vector<double> lon{0, 90, 0}, lat{0, 0, 90};
  EXPECT_NEAR(estuary::spherical_polygon_area(lon, lat), kPi / 2, 1e-14);
  EXPECT_NEAR(estuary::spherical_polygon_area(std::vector<double>{0, 0, 90}, std::vector<double>{0, 90, 0}), kPi / 2, 1e-14);
  EXPECT_NEAR(estuary::spherical_polygon_area(std::vector<double>{0, 90, 0, 0}, std::vector<double>{0, 0, 90, 90}),
              kPi / 2, 1e-14);
  Grid bad;
  bad.lon = {1, 2};
  bad.lat = {1};
  EXPECT_THROW(bad.check(), estuary::Error);
  bad.lat = {1, 2};
  EXPECT_THROW(bad.compute_areas(), estuary::Error);  // no corners
}

TEST(Grid, ScripFileReadsBack) {
  const Grid g = GridGen::gaussian(8, 6).with_land().make();
  const std::string dir = temp_dir(), path = dir + "/g.nc";
  estuary::write_scrip_grid(path, g);
  int nc = -1, v = -1;
  ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
  std::size_t n = 0;
  int d = -1;
  ASSERT_EQ(nc_inq_dimid(nc, "grid_size", &d), NC_NOERR);
  nc_inq_dimlen(nc, d, &n);
  EXPECT_EQ(static_cast<i64>(n), g.size());
  std::vector<int> dims(2), mask(n);
  std::vector<double> clat(n * 4);
  ASSERT_EQ(nc_inq_varid(nc, "grid_dims", &v), NC_NOERR);
  nc_get_var_int(nc, v, dims.data());
  EXPECT_EQ(dims, (std::vector<int>{8, 6}));
  ASSERT_EQ(nc_inq_varid(nc, "grid_imask", &v), NC_NOERR);
  nc_get_var_int(nc, v, mask.data());
  ASSERT_EQ(nc_inq_varid(nc, "grid_corner_lat", &v), NC_NOERR);
  nc_get_var_double(nc, v, clat.data());
  char units[32] = {};
  nc_get_att_text(nc, v, "units", units);
  EXPECT_STREQ(units, "degrees");
  nc_close(nc);
  for (std::size_t k = 0; k < n; ++k) EXPECT_EQ(mask[k], g.mask[k]);
  EXPECT_EQ(clat, g.corner_lat);
  // A share alone is not a whole grid.
  const Grid part = GridGen::gaussian(8, 6).make(estuary::Decomp::stripes(48, {{0, 10, 1}}));
  EXPECT_THROW(estuary::write_scrip_grid(path, part), estuary::Error);
  std::filesystem::remove_all(dir);
}
