// Decompositions (estuary/decomp.hpp) and their generators (estuary.gen).
#include "estuary/decomp.hpp"
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <string>
#include <tuple>
#include <utility>
#include <vector>
#include "estuary/decomp_gen.hpp"

#include "bindings.hpp"

namespace estuary::py {

void bind_decomp(nb::module_& m) {
  nb::class_<estuary::Decomp>(
      m, "Decomp",
      "The global indices one rank owns, in its local order: element k of the rank's array is global "
      "element to_indices()[k]. Local (no communication); made by the static constructors below or by "
      "estuary.gen.")
      .def_static(
          "indices", [](i64 n, IdxArray idx) { return estuary::Decomp::indices(n, vec_of(idx)); }, "global_size"_a,
          "indices"_a,
          "An explicit list of global indices.\n\n"
          "global_size: the number of elements of the global array.\n"
          "indices: this rank's global indices, in its local order (1-D int64, each in [0, global_size)).\n"
          "Returns the Decomp. Raises estuary.Error for an index out of range.")
      .def_static(
          "stripes",
          [](i64 n, const std::vector<std::tuple<i64, i64, i64>>& s) {
            std::vector<estuary::Stripe> v;
            for (auto [a, c, st] : s) v.push_back({a, c, st});
            return estuary::Decomp::stripes(n, std::move(v));
          },
          "global_size"_a, "stripes"_a,
          "Runs of regularly spaced indices.\n\n"
          "global_size: the number of elements of the global array.\n"
          "stripes: (start, count, stride) runs, in local order: start, start + stride, ... (count of them).\n"
          "Returns the Decomp. Raises estuary.Error for a run outside [0, global_size).")
      .def_static(
          "box",
          [](std::vector<i64> shape, std::vector<i64> start, std::vector<i64> count, const std::string& order) {
            if (order != "C" && order != "F")
              throw estuary::Error("box order \"" + order + "\"", "Decomp.box",
                                   "use \"C\" (last dimension fastest) or \"F\"");
            return estuary::Decomp::box(std::move(shape), std::move(start), std::move(count),
                                        order == "C" ? estuary::Order::row_major : estuary::Order::column_major);
          },
          "global_shape"_a, "start"_a, "count"_a, "order"_a = "C",
          "The sub-box [start, start + count) of an N-D array.\n\n"
          "global_shape: the global array's shape (elements per dimension).\n"
          "start, count: the box's first index and extent per dimension.\n"
          "order: \"C\" (row-major, last dimension fastest; numpy's default) or \"F\" (column-major): the "
          "order of both the global numbering and the local one.\n"
          "Returns the Decomp. Raises estuary.Error for another order or a box outside the array.")
      .def_static("empty", &estuary::Decomp::empty, "global_size"_a,
                  "A rank that owns nothing of a global array of global_size elements.")
      .def_prop_ro("size", &estuary::Decomp::size, "The number of elements this rank owns (its local array's size).")
      .def_prop_ro("global_size", &estuary::Decomp::global_size, "The number of elements of the global array.")
      .def_prop_ro(
          "kind",
          [](const estuary::Decomp& d) {
            return d.kind() == estuary::Decomp::Kind::indices   ? "indices"
                   : d.kind() == estuary::Decomp::Kind::stripes ? "stripes"
                                                                : "box";
          },
          "How it is stored: \"indices\", \"stripes\" or \"box\".")
      .def(
          "__len__", [](const estuary::Decomp& d) { return d.size(); }, "The number of local elements (size).")
      .def(
          "to_indices", [](const estuary::Decomp& d) { return to_numpy(d.to_indices()); },
          "The global index of every local element, in local order (a new numpy int64 array).");

  nb::module_ gen = m.def_submodule(
      "gen",
      "Decomposition generators: each rank computes its own share of [0, n) over `ranks` ranks, locally "
      "(no communication). They raise estuary.Error for n < 0, ranks < 1 or rank outside [0, ranks).");
  gen.def("block", &estuary::gen::block, "n"_a, "rank"_a, "ranks"_a,
          "Contiguous blocks: rank `rank` of `ranks` owns [rank*n/ranks, (rank+1)*n/ranks) of n elements.");
  gen.def("cyclic", &estuary::gen::cyclic, "n"_a, "rank"_a, "ranks"_a,
          "Round robin: rank `rank` of `ranks` owns rank, rank + ranks, ... of n elements.");
  gen.def("random", &estuary::gen::random, "n"_a, "rank"_a, "ranks"_a, "seed"_a = 42,
          "A pseudo-random permutation of n elements (the same on every rank for one seed) cut into blocks; "
          "this is rank `rank` of `ranks`'s block.");
  // The n forms (each 2-D kind also has an nx, ny form in C++).
  using GridGen = estuary::Decomp (*)(std::int64_t, int, int);
  using NamedGen = estuary::Decomp (*)(std::string_view, std::int64_t, int, int);
  gen.def("rows2d", static_cast<GridGen>(&estuary::gen::rows2d), "n"_a, "rank"_a, "ranks"_a,
          "The grid_shape(n) grid, row-major, in blocks of rows: rank `rank` of `ranks`'s (equals block).");
  gen.def("cols2d", static_cast<GridGen>(&estuary::gen::cols2d), "n"_a, "rank"_a, "ranks"_a,
          "The grid_shape(n) grid, row-major, in blocks of columns: rank `rank` of `ranks`'s (a transpose of "
          "rows2d).");
  gen.def("colblocks", static_cast<GridGen>(&estuary::gen::colblocks), "n"_a, "rank"_a, "ranks"_a,
          "The grid_shape(n) grid in 2-D blocks: the ranks form a prow x pcol grid (prow the largest divisor "
          "<= sqrt(ranks)), numbered down the block columns; each block row-major. This is rank `rank` of "
          "`ranks`'s block.");
  gen.def("from_name", static_cast<NamedGen>(&estuary::gen::from_name), "kind"_a, "n"_a, "rank"_a, "ranks"_a,
          "A generated decomposition by its name.\n\n"
          "kind: block, cyclic, random, rows2d, transpose2d (= cols2d) or colblocks; see kinds().\n"
          "n, rank, ranks: n elements, this rank's share of `ranks`.\n"
          "Raises estuary.Error naming the known kinds for another name.");
  gen.def("by_name", static_cast<NamedGen>(&estuary::gen::from_name), "kind"_a, "n"_a, "rank"_a, "ranks"_a,
          "The older name of from_name(kind, n, rank, ranks).");
  gen.def("kinds", &estuary::gen::kinds, "The names from_name reads (a list of str).");
  gen.def(
      "grid_shape",
      [](i64 n) {
        i64 nx = 0, ny = 0;
        estuary::gen::grid_shape(n, nx, ny);
        return std::make_pair(nx, ny);
      },
      "n"_a, "The (nx, ny) grid of n elements rows2d and cols2d use: nx * ny == n, nx the largest divisor <= sqrt(n).");
}

}  // namespace estuary::py
