// Weight files (estuary/weights.hpp) and the distributed sparse matrix Remap (estuary/remap.hpp).
#include "estuary/remap.hpp"
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include "estuary/grid.hpp"
#include "estuary/weights.hpp"

#include "bindings.hpp"

namespace estuary::py {

PyLinks links_to_py(estuary::Links&& l) {
  return {to_numpy(std::move(l.row)), to_numpy(std::move(l.col)), to_numpy(std::move(l.weight))};
}
estuary::Links links_from(const IdxArray& rows, const IdxArray& cols, const InArray& w) {
  if (rows.size() != cols.size() || rows.size() != w.size())
    throw estuary::Error("links of " + std::to_string(rows.size()) + " rows, " + std::to_string(cols.size()) +
                             " columns and " + std::to_string(w.size()) + " weights",
                         "Python links", "pass three arrays of one length");
  estuary::Links l;
  l.row = vec_of(rows);
  l.col = vec_of(cols);
  l.weight.assign(w.data(), w.data() + w.size());
  return l;
}

void bind_remap(nb::module_& m) {
  m.def(
      "write_weights",
      [](const std::string& path, IdxArray rows, IdxArray cols, InArray w, i64 src_size, i64 dst_size, PyComm comm,
         const std::string& map_method, const estuary::Grid* src_grid, const estuary::Grid* dst_grid,
         const std::string& normalization, std::optional<InArray> dst_frac, std::optional<InArray> columns,
         int num_wgts, const std::map<std::string, std::string>& attributes) {
        const estuary::Links l = links_from(rows, cols, w);
        estuary::WeightWriteOptions o;
        o.attributes.assign(attributes.begin(), attributes.end());
        std::vector<double> cols_copy;
        if (columns) {
          cols_copy.assign(columns->data(), columns->data() + columns->size());
          o.columns = &cols_copy;
          o.num_wgts = num_wgts;
        }
        o.map_method = map_method;
        o.normalization = normalization;
        o.src_grid = src_grid;
        o.dst_grid = dst_grid;
        estuary::Grid with_frac;  // the destination grid with its covered fractions (dst_grid_frac)
        if (dst_frac && dst_grid) {
          with_frac = *dst_grid;
          with_frac.frac.assign(dst_frac->data(), dst_frac->data() + dst_frac->size());
          with_frac.check();
          o.dst_grid = &with_frac;
        }
        nb::gil_scoped_release release;
        estuary::write_weights(path, l, src_size, dst_size, comm.comm, o);
      },
      "path"_a, "rows"_a, "cols"_a, "weights"_a, "src_size"_a, "dst_size"_a, "comm"_a = nb::none(), "map_method"_a = "",
      "src_grid"_a = nb::none(), "dst_grid"_a = nb::none(), "normalization"_a = "none", "dst_frac"_a = nb::none(),
      "columns"_a = nb::none(), "num_wgts"_a = 1, "attributes"_a = std::map<std::string, std::string>{},
      "Collective over comm: writes every rank's links as one SCRIP weight file (netCDF), in rank order then "
      "local order.\n\n"
      "path: the file to write (replaced).\n"
      "rows, cols, weights: this rank's links, 0-based destination (rows) and source (cols) indices "
      "(int64) and their weights (float64), three 1-D arrays of one length.\n"
      "src_size, dst_size: the numbers of source and destination points.\n"
      "comm: the mpi4py communicator (None: MPI.COMM_WORLD).\n"
      "map_method: SCRIP's map_method text (CDO applies a file only with one it knows, e.g. \"Bilinear "
      "remapping\"); normalization: none, fracarea or destarea.\n"
      "src_grid, dst_grid: this rank's points of the grids (estuary.Grid, together every point once) to "
      "write as src_grid_* / dst_grid_*, or None on every rank; dst_frac: the destination cells' covered "
      "fractions (dst_grid_frac, 0..1, with dst_grid).\n"
      "columns: several weights per link, links x num_wgts float64 values, link after link (bicubic: "
      "num_wgts 4, CDO genbic); replaces weights.\n"
      "attributes: extra global text attributes {name: text} (e.g. estuary_fixed_value of a stack).\n"
      "Raises estuary.Error for arrays of different lengths, an index outside [0, src_size) or "
      "[0, dst_size), or a file that cannot be written (its path named).");
  m.def(
      "read_weights",
      [](const std::string& path, PyComm comm) {
        estuary::WeightSlice s;
        {
          nb::gil_scoped_release release;
          s = estuary::read_weights(path, comm.comm);
        }
        nb::dict info;
        info["src_size"] = s.info.src_size;
        info["dst_size"] = s.info.dst_size;
        info["links"] = s.info.links;
        info["num_wgts"] = s.info.num_wgts;
        info["first"] = s.info.first;
        info["map_method"] = s.info.map_method;
        info["format"] = s.info.format == estuary::WeightFormat::scrip ? "scrip" : "esmf";
        return std::make_tuple(links_to_py(std::move(s.links)), PyDict(std::move(info)));
      },
      "path"_a, "comm"_a = nb::none(),
      "Collective over comm: reads a SCRIP or ESMF weight file, each rank a contiguous slice of its links.\n\n"
      "path: the weight file; comm: the mpi4py communicator (None: MPI.COMM_WORLD).\n"
      "Returns ((rows, cols, weights), info): this rank's links as 0-based numpy arrays (int64, int64, "
      "float64) and a dict of src_size, dst_size, links (in the file), num_wgts, first (the position of "
      "this rank's first link in the file), map_method and format (\"scrip\" or \"esmf\").\n"
      "Raises estuary.Error naming the file and variable for a missing or malformed file.");

  nb::class_<estuary::Remap>(
      m, "Remap",
      "Applies a distributed sparse weight matrix to fields: dst = W src. Remap(weight_file, src, dst, "
      "comm, location, order, unmapped_value), or Remap.from_links(rows, cols, weights, ...) from links in "
      "memory. The set-up (collective over comm) spreads the links and plans the exchanges once; run() "
      "then applies them many times.\n\n"
      "src, dst: this rank's Decomp of the source and destination points.\n"
      "location: \"dst\" (the products on the ranks owning destination points) or \"src\".\n"
      "order: \"bfb\" (each row summed in file order: bit-identical on any rank count) or \"sum\" (partial "
      "sums where the source values are, then added: fewer values travel, rounding depends on the "
      "decomposition).\n"
      "unmapped_value: the value of destination points no link reaches.")
      .def(
          "__init__",
          [](estuary::Remap* self, const std::string& file, const estuary::Decomp& src, const estuary::Decomp& dst,
             PyComm comm, const std::string& location, const std::string& order, double unmapped) {
            estuary::RemapOptions o;
            o.location = named<estuary::RemapLocation>(location, "Remap");
            o.order = named<estuary::RemapOrder>(order, "Remap");
            o.unmapped_value = unmapped;
            nb::gil_scoped_release release;
            new (self) estuary::Remap(file, src, dst, comm.comm, o);
          },
          "weight_file"_a, "src"_a, "dst"_a, "comm"_a = nb::none(), "location"_a = "dst", "order"_a = "bfb",
          "unmapped_value"_a = 0.0,
          "Collective over comm: reads weight_file (SCRIP or ESMF, in slices) and sets up the exchanges "
          "between the src and dst decompositions; location, order, unmapped_value: see the class.\n"
          "Raises estuary.Error for a missing file, sizes that differ from the decompositions' global sizes, "
          "or a location or order that is not one of the names above.")
      .def_static(
          "from_links",
          [](IdxArray rows, IdxArray cols, InArray w, const estuary::Decomp& src, const estuary::Decomp& dst,
             PyComm comm, const std::string& location, const std::string& order, double unmapped) {
            const estuary::Links l = links_from(rows, cols, w);
            estuary::RemapOptions o;
            o.location = named<estuary::RemapLocation>(location, "Remap.from_links");
            o.order = named<estuary::RemapOrder>(order, "Remap.from_links");
            o.unmapped_value = unmapped;
            nb::gil_scoped_release release;
            return estuary::Remap(l, src, dst, comm.comm, o);
          },
          "rows"_a, "cols"_a, "weights"_a, "src"_a, "dst"_a, "comm"_a = nb::none(), "location"_a = "dst",
          "order"_a = "bfb", "unmapped_value"_a = 0.0,
          "Collective over comm: a Remap of links given in memory, each rank any share of them.\n\n"
          "rows, cols, weights: this rank's links, 0-based destination and source indices (int64) and "
          "weights (float64), three 1-D arrays of one length; src, dst, comm, location, order, "
          "unmapped_value: as for Remap().\n"
          "Raises estuary.Error for arrays of different lengths or indices outside the decompositions' "
          "global sizes.")
      .def(
          "run",
          [](estuary::Remap& r, InArray src, OutArray dst) {
            nb::gil_scoped_release release;
            r.run(span_of(src), span_of(dst));
          },
          "src"_a, "dst"_a.noconvert(),
          "Collective over the Remap's comm: dst = W src for one field.\n\n"
          "src: this rank's source values in the src Decomp's order (float64; converted if needed).\n"
          "dst: this rank's destination values, written in place: a contiguous, writable float64 array of "
          "the dst Decomp's size.\n"
          "Raises TypeError for a dst that is not contiguous float64, estuary.Error for sizes that differ "
          "from the decompositions'.")
      .def(
          "stats",
          [](const estuary::Remap& r) {
            const estuary::RemapStats s = r.stats();
            nb::dict d;
            d["links"] = s.links;
            d["rows"] = s.rows;
            d["gathered"] = s.gathered;
            d["partials"] = s.partials;
            d["exchanges"] = s.exchanges;
            return PyDict(std::move(d));
          },
          "Local: this rank's counts, a dict of links (applied here), rows (rows or partial rows formed "
          "here), gathered (source values received before the product), partials (values received after "
          "it) and exchanges (Redists per run, 1 or 2).");
}

}  // namespace estuary::py
