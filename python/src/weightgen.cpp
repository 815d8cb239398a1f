// Grids (estuary/grid.hpp: Grid, the GridGen recipes) and weight generation (estuary/weightgen.hpp).
#include "estuary/weightgen.hpp"
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include "estuary/grid.hpp"

#include "bindings.hpp"

namespace estuary::py {

namespace {

estuary::Grid make_grid(const std::string& name, std::vector<i64> dims, i64 global_size, const InArray& lon,
                        const InArray& lat, std::optional<IdxArray> points, std::optional<InArray> area,
                        std::optional<nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig>> mask) {
  estuary::Grid g;
  g.name = name;
  g.dims = std::move(dims);
  g.global_size = global_size;
  g.kind = estuary::grid_kind_of_dims(g.dims.size());
  g.lon.assign(lon.data(), lon.data() + lon.size());
  g.lat.assign(lat.data(), lat.data() + lat.size());
  if (points) g.points = vec_of(*points);
  if (area) g.area.assign(area->data(), area->data() + area->size());
  if (mask) g.mask.assign(mask->data(), mask->data() + mask->size());
  g.check();
  return g;
}

// A weight generator's links, computed without the GIL (collective: the other ranks' Python
// threads may run meanwhile).
template <class Generate>
PyLinks released_links(Generate generate) {
  estuary::Links l;
  {
    nb::gil_scoped_release release;
    l = generate();
  }
  return links_to_py(std::move(l));
}

// distance_weights and bilinear_weights, for a source given by its recipe (GridGen: each rank
// builds what it needs) or by each rank's share (Grid, e.g. read from a grid file).
template <class Src>
void def_point_weights(nb::module_& m, const char* distance_doc, const char* bilinear_doc) {
  m.def(
      "distance_weights",
      [](const Src& src, const estuary::Grid& dst, PyComm comm, int neighbors) {
        estuary::DistanceWeightOptions o;
        o.neighbors = neighbors;
        return released_links([&] { return estuary::distance_weights(src, dst, comm.comm, o); });
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(), "neighbors"_a = 4, distance_doc);
  m.def(
      "bilinear_weights",
      [](const Src& src, const estuary::Grid& dst, PyComm comm, std::optional<bool> extrapolate) {
        estuary::BilinearWeightOptions o;
        o.extrapolate = extrapolate;
        return released_links([&] { return estuary::bilinear_weights(src, dst, comm.comm, o); });
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(), "extrapolate"_a = nb::none(), bilinear_doc);
}

}  // namespace

void bind_weightgen(nb::module_& m) {
  // The array properties return fresh copies (rv_policy::move: a property's default,
  // reference_internal, cannot apply to an array that already owns its data).
  nb::class_<estuary::Grid>(
      m, "Grid",
      "Cells of a horizontal grid: this rank's points (centres, mask, areas; corners when made by "
      "GridGen or read from a file). Grid(name, dims, global_size, lon, lat, points, area, mask) makes one "
      "from arrays: a curvilinear grid for dims (nx, ny), unstructured for (n,). Local; the array "
      "properties return copies.")
      .def(
          "__init__",
          [](estuary::Grid* self, const std::string& name, std::vector<i64> dims, i64 global_size, InArray lon,
             InArray lat, std::optional<IdxArray> points, std::optional<InArray> area,
             std::optional<nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig>> mask) {
            new (self) estuary::Grid(make_grid(name, std::move(dims), global_size, lon, lat, points, area, mask));
          },
          "name"_a, "dims"_a, "global_size"_a, "lon"_a, "lat"_a, "points"_a = nb::none(), "area"_a = nb::none(),
          "mask"_a = nb::none(),
          "A grid's points from arrays (local).\n\n"
          "name: the grid's name (in files and messages).\n"
          "dims: SCRIP's grid_dims, fastest first: (nx, ny) (curvilinear) or (n,) (unstructured).\n"
          "global_size: the number of points of the whole grid.\n"
          "lon, lat: this rank's cell centres, degrees (float64, one per point).\n"
          "points: their global indices (int64; None: every point, in order).\n"
          "area: cell areas in steradians (None: none given).\n"
          "mask: int32 per point, 1 valid and 0 masked (None: every point valid).\n"
          "Raises estuary.Error when array sizes disagree.")
      .def_ro("name", &estuary::Grid::name, "The grid's name.")
      .def_ro("dims", &estuary::Grid::dims, "SCRIP's grid_dims, fastest first: [nx, ny] or [n].")
      .def_ro("global_size", &estuary::Grid::global_size, "The number of points of the whole grid.")
      .def_prop_ro("size", &estuary::Grid::size, "The number of points this rank holds.")
      .def_prop_ro(
          "lon", [](const estuary::Grid& g) { return to_numpy(std::vector<double>(g.lon)); }, nb::rv_policy::move,
          "Cell centre longitudes, degrees (a float64 copy, one per held point).")
      .def_prop_ro(
          "lat", [](const estuary::Grid& g) { return to_numpy(std::vector<double>(g.lat)); }, nb::rv_policy::move,
          "Cell centre latitudes, degrees (a float64 copy, one per held point).")
      .def_prop_ro(
          "area", [](const estuary::Grid& g) { return to_numpy(std::vector<double>(g.area)); }, nb::rv_policy::move,
          "Cell areas, steradians (a float64 copy; empty when unknown).")
      .def_prop_ro(
          "mask", [](const estuary::Grid& g) { return to_numpy(std::vector<std::int32_t>(g.mask)); },
          nb::rv_policy::move, "1 valid, 0 masked per held point (an int32 copy; empty: every point valid).")
      .def_prop_ro(
          "points", [](const estuary::Grid& g) { return to_numpy(std::vector<i64>(g.points)); }, nb::rv_policy::move,
          "The global index of each held point (an int64 copy; empty: every point, in order).");

  nb::class_<estuary::GridGen>(
      m, "GridGen",
      "A grid recipe: computes any point from its global index, so each rank builds just its share "
      "(make(part)) of a grid no rank holds whole. Local; made by the static constructors or from_name. "
      "Sizes must be positive (estuary.Error otherwise).")
      .def_static("lonlat", &estuary::GridGen::lonlat, "nlon"_a, "nlat"_a,
                  "Regular longitude-latitude: nlon x nlat cells, centres at lon = i*360/nlon degrees and the "
                  "middles of nlat equal latitude bands (CDO's rNLONxNLAT).")
      .def_static("gaussian", &estuary::GridGen::gaussian, "nlon"_a, "nlat"_a,
                  "Regular Gaussian: nlon longitudes x nlat Gaussian latitudes.")
      .def_static("reduced_gaussian", &estuary::GridGen::reduced_gaussian, "n"_a,
                  "Reduced Gaussian with n latitudes per hemisphere (a classic reduced grid; unstructured dims).")
      .def_static("t799", &estuary::GridGen::t799, "T799-class: reduced_gaussian(400), about 843 000 points.")
      .def_static("tripolar", &estuary::GridGen::tripolar, "nx"_a, "ny"_a,
                  "Tripolar-style curvilinear nx x ny (ORCA's construction simplified).")
      .def_static("orca025", &estuary::GridGen::orca025,
                  "ORCA025-like: tripolar(1442, 1021), about 1.47 million points.")
      .def_static("cubed_sphere", &estuary::GridGen::cubed_sphere, "n"_a,
                  "Unstructured equiangular cubed sphere of 6 n^2 quadrilateral cells.")
      .def_static("from_name", &estuary::GridGen::from_name, "recipe"_a,
                  "A recipe by its name.\n\n"
                  "recipe: lonlat:NLONxNLAT, gaussian:NLONxNLAT, tripolar:NXxNY, reduced_gaussian:N, "
                  "cubed_sphere:N, t799 or orca025, each with an optional +land (the core reads the names; "
                  "recipe_forms()).\n"
                  "Raises estuary.Error naming the recipe and listing the forms for another text.")
      .def_static("recipe_forms", &estuary::GridGen::recipe_forms, "The recipe forms from_name reads (text).")
      .def("with_land", &estuary::GridGen::with_land,
           "The same grid with an analytic land mask (mask 0 on made-up continents).")
      .def_prop_ro("name", &estuary::GridGen::name, "The recipe's name (as from_name reads it).")
      .def_prop_ro("dims", &estuary::GridGen::dims, "SCRIP's grid_dims, fastest first: [nx, ny] or [n].")
      .def_prop_ro("size", &estuary::GridGen::size, "The number of points of the whole grid.")
      .def(
          "make", [](const estuary::GridGen& g) { return g.make(); },
          "Every point of the grid, areas computed (an estuary.Grid).")
      .def(
          "make", [](const estuary::GridGen& g, const estuary::Decomp& d) { return g.make(d); }, "part"_a,
          "The points the Decomp `part` holds, in its local order (an estuary.Grid with centres, corners, "
          "mask and areas). Raises estuary.Error when part's global size is not the grid's.");

  def_point_weights<estuary::GridGen>(
      m,
      "Collective over comm: inverse-distance weights (CDO remapdis/gendis) for the dst points this rank "
      "holds.\n\n"
      "src: the source grid, a GridGen recipe (each rank builds what it needs) or each rank's share of it "
      "(an estuary.Grid, together every point once).\n"
      "dst: this rank's destination points (an estuary.Grid).\n"
      "comm: the mpi4py communicator (None: MPI.COMM_WORLD).\n"
      "neighbors: the source neighbours per target (CDO's default 4).\n"
      "Returns (rows, cols, weights): 0-based destination and source indices (int64) and weights "
      "(float64), numpy arrays, the same on any rank count.\n"
      "Raises estuary.Error for neighbors < 1 or grids whose sizes disagree between ranks.",
      "Collective over comm: bilinear weights (CDO remapbil/genbil) for the dst points this rank holds.\n\n"
      "src: the source grid (2-D, lon-lat or curvilinear), a GridGen recipe or each rank's share of it "
      "(an estuary.Grid).\n"
      "dst: this rank's destination points (an estuary.Grid).\n"
      "comm: the mpi4py communicator (None: MPI.COMM_WORLD).\n"
      "extrapolate: targets no source quad holds (poles, beyond the edge) get CDO's fallback, the 4 "
      "nearest source points by inverse distance. None (the default): as CDO, when the source is cyclic "
      "in longitude (global) and not for a regional one; True/False as REMAP_EXTRAPOLATE=on/off.\n"
      "Returns (rows, cols, weights) as distance_weights does.\n"
      "Raises estuary.Error for a source grid that is not 2-D.");
  def_point_weights<estuary::Grid>(m, "As above with src each rank's share of the source grid (an estuary.Grid).",
                                   "As above with src each rank's share of the source grid (an estuary.Grid).");

  m.def(
      "bicubic_weights",
      [](const estuary::Grid& src, const estuary::Grid& dst, PyComm comm, std::optional<bool> extrapolate) {
        estuary::BicubicWeights b;
        {
          nb::gil_scoped_release release;
          estuary::BilinearWeightOptions o;
          o.extrapolate = extrapolate;
          b = estuary::bicubic_weights(src, dst, comm.comm, o);
        }
        std::vector<double> flat;
        flat.reserve(4 * b.columns.size());
        for (const auto& c : b.columns) flat.insert(flat.end(), c.begin(), c.end());
        const std::size_t n = b.columns.size();
        auto* data = new std::vector<double>(std::move(flat));
        nb::capsule owner(data, [](void* q) noexcept { delete static_cast<std::vector<double>*>(q); });
        nb::ndarray<nb::numpy, double, nb::ndim<2>> cols(data->data(), {n, 4}, owner);
        return std::make_tuple(links_to_py(std::move(b.value)), cols, links_to_py(std::move(b.links)));
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(), "extrapolate"_a = nb::none(),
      "Collective over comm: bicubic weights (CDO genbic) for the dst points this rank holds.\n\n"
      "src: each rank's share of the 2-D source grid (an estuary.Grid, together every point once).\n"
      "dst: this rank's destination points (an estuary.Grid).\n"
      "comm: the mpi4py communicator (None: MPI.COMM_WORLD).\n"
      "extrapolate: as bilinear_weights (None: CDO's default, by whether the source is cyclic).\n"
      "Returns ((rows, cols, value weights), the 4 weight columns of each link as an (n, 4) float64 "
      "array (value and three gradient weights, SCRIP num_wgts 4), (rows, cols, weights) folded with "
      "CDO's source gradients: the matrix Remap applies).\n"
      "Raises estuary.Error for a source grid that is not 2-D.");

  m.def(
      "conservative_weights",
      [](const estuary::Grid& src, const estuary::Grid& dst, PyComm comm, int order, const std::string& normalization) {
        estuary::ConservativeOptions o;
        o.order = order;
        o.normalization = named<estuary::ConservNormalization>(normalization, "conservative_weights");
        estuary::ConservativeWeights w;
        {
          nb::gil_scoped_release release;
          w = estuary::conservative_weights(src, dst, comm.comm, o);
        }
        return std::make_tuple(to_numpy(std::move(w.links.row)), to_numpy(std::move(w.links.col)),
                               to_numpy(std::move(w.links.weight)), to_numpy(std::move(w.dst_frac)),
                               to_numpy(std::move(w.dst_area)));
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(), "order"_a = 1, "normalization"_a = "fracarea",
      "Collective over comm: conservative weights (CDO gencon) for the dst cells this rank holds.\n\n"
      "src: each rank's share of the source cells (an estuary.Grid with corners).\n"
      "dst: this rank's destination cells (an estuary.Grid with corners).\n"
      "comm: the mpi4py communicator (None: MPI.COMM_WORLD).\n"
      "order: 1 (first order) or 2 (with the source gradients, CDO gencon2).\n"
      "normalization: fracarea (divide by the covered area), destarea (by the cell's area) or none.\n"
      "Returns (rows, cols, weights, dst_frac, dst_area): the links as numpy arrays, each held "
      "destination cell's covered fraction (0..1) and its area (steradians).\n"
      "Raises estuary.Error for cells without corners, an order other than 1 or 2, or another "
      "normalization.");

  m.def(
      "stack_weights",
      [](const estuary::Grid& src, const estuary::Grid& dst, PyComm comm, const std::string& stack) {
        const std::vector<estuary::StackStage> stages = estuary::stack_from_text(stack, "stack_weights");
        estuary::StackWeights w;
        {
          nb::gil_scoped_release release;
          w = estuary::stack_weights(src, dst, comm.comm, stages);
        }
        const std::optional<double> fixed = w.has_fixed ? std::optional<double>(w.fixed_value) : std::nullopt;
        return std::make_tuple(links_to_py(std::move(w.links)), fixed, std::move(w.filled), estuary::describe(stages));
      },
      // stack with a default (an empty stack is refused by the core) so that the signature, and its
      // stub, keeps Python's rule: no parameter without a default after one with a default.
      "src"_a, "dst"_a, "comm"_a = nb::none(), "stack"_a = "",
      "Collective over comm: the weights of an interpolation stack (YAC-style: each stage fills the "
      "targets the stages before it left) for the dst points this rank holds.\n\n"
      "src: each rank's share of the source grid (an estuary.Grid).\n"
      "dst: this rank's destination points (an estuary.Grid).\n"
      "comm: the mpi4py communicator (None: MPI.COMM_WORLD).\n"
      "stack: the stages, e.g. \"bilinear | nnn n=4 | creep steps=2 | fixed value=-999\" (docs/remap.md).\n"
      "Returns ((rows, cols, weights), the fixed value or None, the targets filled per stage (a list of "
      "int), the stack's canonical text).\n"
      "Raises estuary.Error naming the stage for an empty or malformed stack.");
}

}  // namespace estuary::py
