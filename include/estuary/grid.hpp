// Grid — the cells of a horizontal grid on the sphere: centres, corners, mask and areas, for
// the points one rank holds or for the whole grid.
//
// Points are numbered 0..global_size-1 in the grid's global order (for 2-D kinds: longitude
// index fastest, as SCRIP and CDO number them), the same numbering a Decomp of the grid uses.
// GridGen computes any point from its global index alone, so a rank builds just its share of
// an 843 000- or 1.47-million-point grid without anyone holding all of it.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/names.hpp"

namespace estuary {

enum class GridKind { lonlat, gaussian, reduced_gaussian, curvilinear, unstructured };
const char* name_of(GridKind k);
template <>
GridKind from_name<GridKind>(std::string_view name);  // estuary/names.hpp

// The dims (SCRIP grid_dims) of a grid of `kind` given by the sizes a caller passes: (nx, ny)
// for the 2-D kinds (lonlat, gaussian, curvilinear), (n) for reduced_gaussian and unstructured,
// which also take (nx, ny) and fold it to (nx * ny), as the C API passes every kind. Throws
// estuary::Error (no place: the caller adds its own) for no size, more than 2, or one size for
// a 2-D kind.
std::vector<std::int64_t> grid_dims_of(GridKind kind, std::span<const std::int64_t> sizes);
// The kind of a grid known by its dims alone (no recipe): curvilinear for (nx, ny), unstructured
// otherwise.
GridKind grid_kind_of_dims(std::size_t ndims);

struct Grid {
  GridKind kind = GridKind::unstructured;
  std::string name;
  std::vector<std::int64_t> dims;  // SCRIP grid_dims, fastest first: {nx, ny} or {n}
  std::int64_t global_size = 0;
  std::vector<std::int64_t> points;  // global index of each held point; empty: all, in order
  std::vector<double> lon, lat;      // cell centres, degrees
  int ncorner = 0;                   // corners per cell; 0: no corners
  std::vector<double> corner_lon, corner_lat;  // size() * ncorner, degrees, counter-clockwise
  std::vector<std::int32_t> mask;    // 1 valid, 0 masked; empty: every point valid
  std::vector<double> area;          // steradians; empty until given or compute_areas()
  // The fraction of each cell that a remapping uses (SCRIP grid_frac: conservative weights
  // set it for the destination). Empty: 1 on valid points, 0 on masked ones.
  std::vector<double> frac;

  std::int64_t size() const { return static_cast<std::int64_t>(lon.size()); }
  bool whole() const { return points.empty() && size() == global_size; }
  std::int64_t global_index(std::int64_t local) const {
    return points.empty() ? local : points[static_cast<std::size_t>(local)];
  }
  bool valid(std::int64_t local) const {
    return mask.empty() || mask[static_cast<std::size_t>(local)] != 0;
  }
  // Fills `area` from the corners (spherical polygons). Throws if the grid has no corners.
  void compute_areas();
  // Throws estuary::Error when array sizes disagree with size() and ncorner.
  void check() const;
};

// Area in steradians of the spherical polygon with these vertices (degrees), either
// orientation. Repeated vertices (a triangle stored as a degenerate quadrilateral) add nothing.
double spherical_polygon_area(std::span<const double> lon, std::span<const double> lat);

// A 64-bit fingerprint of the grid's cells (global indices, centres, corners, mask), the same
// for any decomposition: collective over comm, each point counted once per rank holding it (so
// hold each point once). Keys cached weight files to the grids they were made for.
std::uint64_t grid_fingerprint(const Grid& grid, MPI_Comm comm);

// Writes `grid` as a SCRIP grid file (grid_dims, grid_center_lat/lon, grid_corner_lat/lon,
// grid_imask; units "degrees") that CDO reads as a grid description. Collective over comm:
// each rank writes the points it holds, in turns, so together they must hold every point
// once. With MPI_COMM_SELF, `grid` must be whole.
void write_scrip_grid(const std::string& path, const Grid& grid, MPI_Comm comm = MPI_COMM_SELF);

// A grid recipe: kind, dimensions and a function from a global index to a cell.
class GridGen {
 public:
  // Regular longitude-latitude: nlon x nlat cells, centres at lon = i*360/nlon and the middles
  // of nlat equal latitude bands (CDO's rNLONxNLAT).
  static GridGen lonlat(std::int64_t nlon, std::int64_t nlat);
  // Regular Gaussian: nlon longitudes, nlat Gaussian latitudes; cell edges where the Gaussian
  // weights add up, so the cell areas are the quadrature weights.
  static GridGen gaussian(std::int64_t nlon, std::int64_t nlat);
  // Reduced Gaussian with n latitudes per hemisphere, rows of 2-3-5-smooth lengths of at least
  // 4n cos(lat) + n/25 points (and 18): a "classic" reduced grid.
  static GridGen reduced_gaussian(std::int64_t n);
  // T799-class: reduced_gaussian(400), about 843 000 points.
  static GridGen t799();
  // Tripolar-style curvilinear nx x ny: Mercator rows from 78S to 40N, then a northern cap of
  // nested ellipses folded along a line between two poles over land (ORCA's construction
  // simplified); the geographic north pole is an ordinary point of the cap.
  static GridGen tripolar(std::int64_t nx, std::int64_t ny);
  // ORCA025-like: tripolar(1442, 1021), about 1.47 million points.
  static GridGen orca025();
  // Unstructured equiangular cubed sphere with 6 n^2 quadrilateral cells.
  static GridGen cubed_sphere(std::int64_t n);

  // The same grid with an analytic land mask (mask 0 on made-up continents).
  GridGen with_land() const;

  // A recipe by its name, as the command line, the bindings and run set-ups write it (the one
  // place that reads recipe names; estuary's from_name convention): "lonlat:NLONxNLAT",
  // "gaussian:NLONxNLAT", "tripolar:NXxNY", "reduced_gaussian:N", "cubed_sphere:N", "t799",
  // "orca025"; "+land" at the end adds with_land(). Throws estuary::Error naming the recipe and
  // listing the forms (recipe_forms()).
  static GridGen from_name(std::string_view recipe);
  static const char* recipe_forms();
  // A recipe by kind and sizes, as the C API and Fortran pass them: n1 x n2 for lonlat,
  // gaussian, tripolar; n1 for reduced_gaussian, cubed_sphere; none for t799, orca025 (sizes a
  // kind does not take are ignored). kind_dims: how many sizes a kind takes, -1 for no kind.
  static GridGen from_kind(std::string_view kind, std::int64_t n1, std::int64_t n2);
  static int kind_dims(std::string_view kind);

  GridKind kind() const;
  const std::string& name() const;
  const std::vector<std::int64_t>& dims() const;
  std::int64_t size() const;
  int ncorner() const;

  Grid make() const;                    // every point, areas computed
  Grid make(const Decomp& part) const;  // the points `part` holds, in its local order

  struct Impl;

 private:
  explicit GridGen(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace estuary
