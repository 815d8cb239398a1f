// OASIS grid files (grids.nc, masks.nc, areas.nc: Component.write_grid ...) and SCRIP grid files
// (estuary/grid_files.hpp).
#include "estuary/grid_files.hpp"
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>
#include "estuary/couple.hpp"
#include "estuary/grid.hpp"

#include "bindings.hpp"

namespace estuary::py {

namespace {

// The docstring of a grid-writing call: its own first lines, then the arguments they share. Kept
// for the module's lifetime (nanobind keeps the pointer).
const char* grid_writing_doc(const char* head) {
  static std::deque<std::string> docs;
  docs.emplace_back(std::string(head) +
                    "\n\nname: the grid's name (OASIS's 4-character prefix, e.g. \"torc\").\n"
                    "nx, ny: the whole grid's size (ny 1 for an unstructured grid).\n"
                    "partition: -1 (OASIS's classic call: this rank gives the whole grid, nx * ny values x "
                    "fastest) or a partition id (this rank gives its points, in the partition's local order).\n"
                    "Raises estuary.Error for a wrong size or a call outside start/terminate_grids_writing.");
  return docs.back().c_str();
}

}  // namespace

void bind_grid_files(nb::module_& m) {
  // ---- OASIS grid files (grids.nc, masks.nc, areas.nc) and SCRIP grid files ----
  // The grid-writing calls are added to Component here, apart from its class definition above.
  // Arrays are 1-D in OASIS's order (x fastest; corners point fastest, corner slowest):
  // estuary.couple.Grid flattens pyOASIS-style (nx, ny) and (nx, ny, nc) arrays so.
  {
    using MaskArray = nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
    const nb::handle comp_cls = nb::type<estuary::Component>();
    nb::cpp_function_def(
        [](estuary::Component& c) { return c.start_grids_writing(); }, nb::scope(comp_cls),
        nb::name("start_grids_writing"), nb::is_method(),
        "oasis_start_grids_writing (local): begins the grid-writing calls; returns 1 (OASIS's flag: grids are "
        "always written).");
    nb::cpp_function_def([](estuary::Component& c, const std::string& name, i64 nx, i64 ny, InArray lon, InArray lat,
                            int partition) { c.write_grid(name, nx, ny, span_of(lon), span_of(lat), partition); },
                         nb::scope(comp_cls), nb::name("write_grid"), nb::is_method(), "name"_a, "nx"_a, "ny"_a,
                         "lon"_a, "lat"_a, "partition"_a = -1,
                         grid_writing_doc("oasis_write_grid (local): the cell centres lon, lat (degrees, float64)"));
    nb::cpp_function_def(
        [](estuary::Component& c, const std::string& name, i64 nx, i64 ny, int nc, InArray clo, InArray cla,
           int partition) { c.write_corner(name, nx, ny, nc, span_of(clo), span_of(cla), partition); },
        nb::scope(comp_cls), nb::name("write_corner"), nb::is_method(), "name"_a, "nx"_a, "ny"_a, "nc"_a, "clo"_a,
        "cla"_a, "partition"_a = -1,
        grid_writing_doc(
            "oasis_write_corner (local): the cell corners clo, cla (degrees, float64, nc per point; point fastest, "
            "corner slowest: a Fortran (nx, ny, nc) array)"));
    nb::cpp_function_def(
        [](estuary::Component& c, const std::string& name, i64 nx, i64 ny, MaskArray mask, int partition) {
          c.write_mask(name, nx, ny, {mask.data(), mask.size()}, partition);
        },
        nb::scope(comp_cls), nb::name("write_mask"), nb::is_method(), "name"_a, "nx"_a, "ny"_a, "mask"_a,
        "partition"_a = -1,
        grid_writing_doc("oasis_write_mask (local): the mask, int32 in OASIS's convention (1 = masked, 0 = valid)"));
    nb::cpp_function_def(
        [](estuary::Component& c, const std::string& name, i64 nx, i64 ny, InArray area, int partition) {
          c.write_area(name, nx, ny, span_of(area), partition);
        },
        nb::scope(comp_cls), nb::name("write_area"), nb::is_method(), "name"_a, "nx"_a, "ny"_a, "area"_a,
        "partition"_a = -1,
        grid_writing_doc(
            "oasis_write_area (local): the cell areas area (float64, m^2 or rad^2 as the model has them)"));
    nb::cpp_function_def(
        [](estuary::Component& c) { c.terminate_grids_writing(); }, nb::scope(comp_cls),
        nb::name("terminate_grids_writing"), nb::is_method(),
        "oasis_terminate_grids_writing (local): ends the grid-writing calls; grids.nc, masks.nc and areas.nc are "
        "written at enddef.");

    m.def(
        "grid_file_info",
        [](const std::string& path, const std::string& grid) {
          const estuary::GridFileInfo i = estuary::grid_file_info(path, grid);
          nb::dict d;
          d["format"] = i.format;
          d["name"] = i.name;
          d["dims"] = i.dims;
          d["size"] = i.size;
          d["ncorner"] = i.ncorner;
          d["mask"] = i.mask;
          d["area"] = i.area;
          return PyDict(std::move(d));
        },
        "path"_a, "grid"_a = "",
        "Local: a grid file's description.\n\n"
        "path: a SCRIP grid file or an OASIS grids.nc.\n"
        "grid: the OASIS grid prefix (\"\": the only one, or a SCRIP file).\n"
        "Returns a dict of format (\"scrip\" or \"oasis\"), name, dims, size, ncorner and whether it has a "
        "mask and areas.\n"
        "Raises estuary.Error naming the file for a missing or unreadable file or an unknown grid.");
    m.def("oasis_grid_names", &estuary::oasis_grid_names, "path"_a,
          "Local: the grid prefixes of the OASIS grids.nc at `path` (a list of str). Raises estuary.Error for a "
          "missing or unreadable file.");
    m.def(
        "read_grid_file",
        [](const std::string& path, const std::string& grid, const estuary::Decomp& part, PyComm comm, bool corners,
           bool mask, bool area) {
          estuary::GridFileNeeds needs;
          needs.corners = corners;
          needs.mask = mask;
          needs.area = area;
          nb::gil_scoped_release release;
          return estuary::read_grid_file(path, grid, part, comm.comm, needs);
        },
        "path"_a, "grid"_a, "part"_a, "comm"_a = nb::none(), "corners"_a = false, "mask"_a = false, "area"_a = false,
        "Collective: part's points of the grid in a SCRIP file or an OASIS grids.nc (masks.nc, areas.nc next to "
        "it; grid: the prefix, '' for the only one). corners/mask/area: required (else estuary.Error).\n\n"
        "path: the grid file; grid: its OASIS prefix.\n"
        "part: this rank's points (an estuary.Decomp of the grid).\n"
        "comm: the mpi4py communicator (None: MPI.COMM_WORLD).\n"
        "corners, mask, area: read them too; each is required when True.\n"
        "Returns this rank's points as an estuary.Grid (degrees; mask 1 = valid).\n"
        "Raises estuary.Error naming the file and variable when one is missing or part does not fit.");
  }
  // ---- end of OASIS grid files ----
}

}  // namespace estuary::py
