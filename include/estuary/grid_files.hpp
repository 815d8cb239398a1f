// Grid files as other tools have them: OASIS3-MCT's grids.nc / masks.nc / areas.nc and SCRIP
// grid files, read into any decomposition (each rank reads only the rows its points lie in), and
// the serial writer of one OASIS grid variable that the coupler's grid-writing calls use.
//
// OASIS grid files (OASIS3-MCT user guide, "Grid data files"; mod_oasis_io.F90 writes them):
//   grids.nc  <grid>.lon, <grid>.lat  (nx, ny) in Fortran order, i.e. netCDF dims (y_<grid>,
//             x_<grid>); degrees. <grid>.clo, <grid>.cla (nx, ny, nc): netCDF (crn_<grid>,
//             y_<grid>, x_<grid>), counter-clockwise corners.
//   masks.nc  <grid>.msk  integer, OASIS's convention: 1 = MASKED (land), 0 = valid.
//   areas.nc  <grid>.srf  cell areas, m^2 or rad^2.
// Point (i, j) is global index i + nx * j, estuary's numbering (x fastest). Unstructured grids
// are (n, 1). The readers accept any dimension names and numeric types (files made by
// scripts often use nxo/nyo, float or a double mask).
//
// What estuary's Grid holds differs in two conventions, converted on reading:
//  - mask: Grid::mask is 1 = valid; a .msk value v becomes (v == 0 ? 1 : 0);
//  - area: Grid::area is in steradians. A .srf whose units attribute names square metres (m2,
//    m^2, m**2, "square meters") is divided by kOasisEarthRadius^2; one naming radians or
//    steradians is kept; without units the values decide: a grid whose largest cell exceeds
//    4 pi (no cell in rad^2 can) is in m^2.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/grid.hpp"

namespace estuary {

// The Earth radius (m) that turns areas in m^2 into steradians: NEMO's and the ECMWF IFS's.
// CONSERV with areas in the same unit on both sides of a coupling does not depend on it.
inline constexpr double kOasisEarthRadius = 6371229.0;

// The three files of a set (same folder).
struct OasisGridFiles {
  std::string grids, masks, areas;
  // grids.nc, masks.nc, areas.nc in `directory` ("" = the working directory).
  static OasisGridFiles in(const std::string& directory);
  // masks.nc and areas.nc in the folder of `grids_path` (which may have any name).
  static OasisGridFiles next_to(const std::string& grids_path);
};

// What a reader must find, else it throws an Error naming the file and the variable (and
// `context`, e.g. the coupling that needs it). Centres are always required; what is not
// required is read when present (areas from the corners otherwise, as def_grid does).
struct GridFileNeeds {
  bool corners = false, mask = false, area = false;
  std::string context;
};

// A grid file's description, from its header only (local, not collective).
struct GridFileInfo {
  std::string format;               // "oasis" or "scrip"
  std::string name;                 // OASIS prefix; SCRIP: the title, else the file's stem
  std::vector<std::int64_t> dims;   // {nx, ny} or {n}
  std::int64_t size = 0;            // points
  int ncorner = 0;                  // 0: no corners in the file
  bool mask = false, area = false;  // found (OASIS: in masks.nc / areas.nc next to grids.nc)
};

// "scrip" when the file has grid_center_lat, else "oasis". `name`: the OASIS grid prefix; empty
// picks the file's only grid (Error listing them when it has several).
GridFileInfo grid_file_info(const std::string& path, const std::string& name = "");
// The grid prefixes of an OASIS grids.nc (every "<grid>.lon" with its "<grid>.lat").
std::vector<std::string> oasis_grid_names(const std::string& grids_path);

// Collective over comm: this rank's points of the grid (part's points, in its local order;
// part.global_size() must be the grid's size). Errors are agreed: every rank throws the same.
// Grid kind: curvilinear for two dimensions with ny > 1, else unstructured.
Grid read_oasis_grid(const OasisGridFiles& files, const std::string& name, const Decomp& part, MPI_Comm comm,
                     const GridFileNeeds& needs = {});
// Collective over comm: this rank's points (part's, in its local order) of grid `name`'s mask in
// masks.nc alone (a grid whose coordinates are in no grids.nc), as Grid::mask has it (1 valid,
// 0 masked); empty when masks.nc or the variable is absent. Error (agreed) when it has another
// size than part.global_size(); `context` is added to the message.
std::vector<std::int32_t> read_oasis_mask(const OasisGridFiles& files, const std::string& name, const Decomp& part,
                                 MPI_Comm comm, const std::string& context = "");
// SCRIP grid file (grid_dims, grid_center_lat/lon in degrees or radians, optional grid_imask
// (1 valid), grid_corner_lat/lon, grid_area).
Grid read_scrip_grid(const std::string& path, const Decomp& part, MPI_Comm comm, const GridFileNeeds& needs = {});
// Either format (grid_file_info's choice); OASIS: masks.nc and areas.nc next to `path`.
Grid read_grid_file(const std::string& path, const std::string& name, const Decomp& part, MPI_Comm comm,
                    const GridFileNeeds& needs = {});

// One OASIS grid variable "<grid><suffix>" (suffix ".lon", ".lat", ".clo", ".cla", ".msk",
// ".srf"), as OASIS3-MCT's oasis_io_write_*gridfld_fromroot writes it: serial (one writer per
// file), the file created when absent (64-bit offset), dims x_<grid>, y_<grid> [, crn_<grid>]
// added when absent (an existing one of another length is an Error), and the variable written
// only when the file does not have it yet — OASIS never overwrites grid fields. `values`:
// nx * ny (x fastest), or nx * ny * nc for corners (point fastest, corner slowest: a Fortran
// (nx, ny, nc) array). ".msk" is written as int (values as given: 1 = masked). Returns whether
// it wrote. Holds detail::nc_lock() while it works on the file.
bool write_oasis_grid_var(const std::string& path, const std::string& grid, const std::string& suffix,
                          std::int64_t nx, std::int64_t ny, int nc, std::span<const double> values);
// Whether `path` exists and holds variable `var` (local).
bool oasis_grid_var_exists(const std::string& path, const std::string& var);

}  // namespace estuary
