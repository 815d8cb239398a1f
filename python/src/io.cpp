// The I/O server (estuary/io.hpp): Output writes model fields to CF netCDF files, Reader reads them
// back into any decomposition (the submodule estuary.io).
//
// Output and Reader are held through a unique_ptr so that free() (and close() for Reader) ends
// them at a point every rank reaches alike, not whenever the garbage collector gets to them:
// the C++ destructors are collective (Output's closes the files if close() was not called).
#include <cstdint>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "estuary/grid.hpp"
#include "estuary/io.hpp"

namespace estuary::py {

namespace {

namespace eio = estuary::io;

struct PyOutput {
  std::unique_ptr<eio::Output> out;
  eio::Mode mode = eio::Mode::serverless;
  double opened = 0;  // MPI_Wtime at open: report()'s default run time

  eio::Output& get() {
    if (!out) throw estuary::Error("the Output is freed", "estuary.io.Output", "open a new one");
    return *out;
  }
};

struct PyReader {
  std::unique_ptr<eio::Reader> reader;
  std::string path;

  eio::Reader& get() {
    if (!reader) throw estuary::Error("the Reader is closed", "estuary.io.Reader, file " + path, "open a new one");
    return *reader;
  }
};

std::string fspath(nb::handle p) { return nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(p)); }

void open_output(PyOutput& p, eio::OutputConfig cfg, PyComm comm, const std::optional<std::string>& mode,
                 std::optional<int> writers, std::optional<nb::object> directory) {
  if (mode) cfg.mode = named<eio::Mode>(*mode, "estuary.io.Output, config " + cfg.source);
  if (writers) cfg.writers = *writers;
  if (directory) cfg.directory = fspath(*directory);
  p.mode = cfg.mode;
  nb::gil_scoped_release release;
  p.opened = MPI_Wtime();
  p.out = std::make_unique<eio::Output>(cfg, comm.comm);
}

PyDict io_stats_dict(const eio::IoStats& s) {
  nb::dict d;
  d["records_handed_over"] = s.records_handed_over;
  d["records_written"] = s.records_written;
  d["bytes_written"] = s.bytes_written;
  d["files_created"] = s.files_created;
  d["write_s"] = s.write_s;
  d["transfer_s"] = s.transfer_s;
  d["model_io_s"] = s.model_io_s;
  d["derived_s"] = s.derived_s;  // part of model_io_s: derived fields (expr: in the configuration)
  d["regrid_s"] = s.regrid_s;  // part of model_io_s: remapping samples for files on another grid
  d["setup_s"] = s.setup_s;
  return PyDict(std::move(d));
}

PyDict io_report_dict(const eio::IoReport& r) {
  nb::dict d;
  d["ranks"] = r.ranks;
  d["model_ranks"] = r.model_ranks;
  d["writers"] = r.writers;
  d["writers_auto"] = r.writers_auto;      // chosen by estuary (no `writers` given)
  d["buffer_records"] = r.buffer_records;
  d["tuning"] = r.tuning;                  // why those writers and buffers
  d["bytes_written"] = r.bytes_written;
  d["records_written"] = r.records_written;
  d["files_created"] = r.files_created;
  d["write_s"] = r.write_s;
  d["write_mb_per_s"] = r.write_mb_per_s;
  d["file_write_s"] = r.file_write_s;  // write_s without waiting for the other writers' data
  d["file_write_mb_per_s"] = r.file_write_mb_per_s;
  d["model_io_s"] = r.model_io_s;
  d["run_s"] = r.run_s;
  d["run_without_io_s"] = r.run_without_io_s;
  d["core_hours"] = r.core_hours;
  d["data_output_cost"] = r.data_output_cost;
  d["data_intensity"] = r.data_intensity;
  d["json"] = r.json();
  return PyDict(std::move(d));
}

// Reader.read's result: `out` itself when given (the same object), else a new array; typed as a
// float64 array for the stubs.
using ReadResult = nb::typed<nb::object, NumpyVec<double>>;

using CornerArray = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// Reader.read(..., out): `out` must be a contiguous float64 array already (TypeError otherwise).
OutArray out_array(nb::handle out) {
  OutArray a;
  if (!nb::try_cast<OutArray>(out, a, false))
    throw nb::type_error("out must be a writable C- or Fortran-contiguous float64 numpy array");
  return a;
}

// Reader.read and read_record: into `out` when given (a contiguous float64 array, else
// TypeError), else into a new array; `read(span)` runs without the GIL.
template <class Read>
ReadResult read_into(const estuary::Decomp& decomp, nb::typed<nb::object, OutArray> out, Read read) {
  if (out.is_none()) {
    std::vector<double> v(static_cast<std::size_t>(decomp.size()));
    {
      nb::gil_scoped_release release;
      read(std::span<double>(v));
    }
    return ReadResult(nb::cast(to_numpy(std::move(v)), nb::rv_policy::move));
  }
  OutArray a = out_array(out);
  {
    nb::gil_scoped_release release;
    read(span_of(a));
  }
  return ReadResult(std::move(out));
}

}  // namespace

eio::XiosXmlOptions xios_options(const std::optional<std::string>& context, double timestep,
                                 const std::optional<std::map<std::string, std::string>>& substitutions,
                                 bool skip_unsupported) {
  eio::XiosXmlOptions o;
  if (context) o.context = *context;
  o.timestep_s = timestep;
  if (substitutions) o.substitutions = *substitutions;
  o.skip_unsupported = skip_unsupported;
  return o;
}

// The set-up read from XIOS XML as plain Python data (what the files and their variables are).
PyDict xios_dict(const eio::OutputConfig& c, const eio::XiosXmlInfo& info) {
  PyDict d;
  d["context"] = info.context;
  d["calendar"] = c.calendar;
  d["reference_time"] = c.reference_time;
  PyDictList files;
  std::size_t k = 0;
  for (const eio::FileConfig& f : c.files) {
    PyDict fd;
    fd["name"] = f.name;
    fd["output_freq"] = nb::make_tuple(f.output_freq.seconds, f.output_freq.months);  // (seconds, months)
    fd["split_freq"] = nb::make_tuple(f.split_freq.seconds, f.split_freq.months);
    fd["format"] = f.format == eio::Format::netcdf4 ? "netcdf4" : "cdf5";
    fd["grid"] = f.grid ? f.grid.describe() : std::string();  // output on another grid ("": the model's)
    fd["weights"] = f.grid.weights;
    PyDictList fields;
    for (const eio::FieldConfig& x : f.fields) {
      PyDict v;
      v["variable"] = x.variable();
      v["source"] = x.name;
      v["operation"] = eio::name_of(x.operation);
      v["precision"] = x.precision == eio::Precision::f64 ? "double" : "float";
      v["deflate"] = x.deflate;
      v["sampling_freq"] = x.sampling_freq_s;
      v["units"] = x.units;
      v["long_name"] = x.long_name;
      v["standard_name"] = x.standard_name;
      v["origin"] = x.origin;
      // A derived field's expression ("" for a model field); its `@` terms: name -> (field,
      // operation), over periods of freq_op (seconds, months).
      v["expr"] = x.expr;
      v["freq_op"] = nb::make_tuple(x.freq_op.seconds, x.freq_op.months);
      nb::dict at;
      for (const auto& [name, t] : x.at) at[name.c_str()] = nb::make_tuple(t.field, eio::name_of(t.operation));
      v["at"] = at;
      // Zoom and levels (an XIOS zoom_domain, zoom_axis or interpolate_axis): None when absent.
      using Kind = eio::FieldConfig::Zoom::Kind;
      nb::dict zoom;
      if (x.zoom.kind == Kind::box) {
        zoom["lon"] = nb::make_tuple(x.zoom.west, x.zoom.east);
        zoom["lat"] = nb::make_tuple(x.zoom.south, x.zoom.north);
      } else if (x.zoom.kind == Kind::index) {
        zoom["i"] = nb::make_tuple(x.zoom.i0, x.zoom.i1);  // inclusive, 0-based; -1: the last
        zoom["j"] = nb::make_tuple(x.zoom.j0, x.zoom.j1);
      }
      v["zoom"] = x.zoom.kind == Kind::none ? nb::object(nb::none()) : nb::object(zoom);
      v["levels"] = x.level_indices.empty() ? nb::object(nb::none()) : nb::cast(x.level_indices);
      v["interpolate_levels"] =
          x.interpolate_levels.values.empty() ? nb::object(nb::none()) : nb::cast(x.interpolate_levels.values);
      if (k < info.fields.size()) {
        v["grid_ref"] = info.fields[k].grid_ref;
        v["domain_ref"] = info.fields[k].domain_ref;
        v["axis_ref"] = info.fields[k].axis_ref;
      }
      ++k;
      fields.append(v);
    }
    fd["fields"] = fields;
    files.append(fd);
  }
  d["files"] = files;
  // The derived fields that expressions use without a file writing them (XIOS's field_definition
  // expressions): name -> {expr, freq_op, at}.
  nb::dict derived;
  for (const eio::FieldConfig& x : c.derived) {
    nb::dict v;
    v["expr"] = x.expr;
    v["freq_op"] = nb::make_tuple(x.freq_op.seconds, x.freq_op.months);
    nb::dict at;
    for (const auto& [name, t] : x.at) at[name.c_str()] = nb::make_tuple(t.field, eio::name_of(t.operation));
    v["at"] = at;
    derived[x.name.c_str()] = v;
  }
  d["derived"] = derived;
  nb::list warnings;
  for (const auto& w : info.warnings) warnings.append(w);
  d["warnings"] = warnings;
  nb::dict vars;
  for (const auto& [key, value] : info.variables) vars[key.c_str()] = value;
  d["variables"] = vars;
  return d;
}

void bind_io(nb::module_& m, nb::handle error) {
  nb::module_ io =
      m.def_submodule("io", "The I/O server: model fields to CF netCDF files (Output), and back (Reader).");
  nb::exception<eio::Terminated> terminated(io, "Terminated", error.ptr());
  terminated.attr("__doc__") =
      "Output.write after SIGTERM (an estuary.Error): every record handed over was written and the files "
      "closed; the model should stop.";
  io.def("have_netcdf4_parallel", &eio::have_netcdf4_parallel,
         "Local: True when this build writes netCDF-4 from several writers in parallel (netCDF-4 parallel).");
  io.def(
      "read_xios_xml",
      [](nb::object path, std::optional<std::string> context, double timestep,
         std::optional<std::map<std::string, std::string>> substitutions, bool skip_unsupported) {
        eio::XiosXmlInfo info;
        const eio::OutputConfig c = eio::OutputConfig::from_xios_xml(
            fspath(path), xios_options(context, timestep, substitutions, skip_unsupported), &info);
        return xios_dict(c, info);
      },
      "path"_a, "context"_a = nb::none(), "timestep"_a = 0.0, "substitutions"_a = nb::none(),
      "skip_unsupported"_a = false,
      "Local (no MPI): the output set-up an XIOS iodef.xml gives (docs/io.md, \"XIOS XML\").\n\n"
      "path: the iodef.xml (str or os.PathLike; its src= includes are read relative to it).\n"
      "context: the <context> id (None: the only one, or \"nemo\").\n"
      "timestep: the model time step in seconds, for durations in \"ts\" (0: none given).\n"
      "substitutions: values of NEMO's @KEY@ file-name templates ({\"expname\": \"ORCA2\"}); @freq@ is filled in.\n"
      "skip_unsupported: leave out (with a warning) the fields estuary cannot write as XIOS would, instead of "
      "raising.\n"
      "Returns {context, calendar, reference_time, files: [{name, output_freq and split_freq as (seconds, "
      "months), format, grid (XIOS's interpolate_domain as the file's grid, 'lonlat:360x180 conservative "
      "order=2 destarea'; '' on the model's), weights (its cache file), fields: [{variable, source, operation, precision, deflate, sampling_freq, units, "
      "long_name, standard_name, origin, zoom, levels, interpolate_levels, grid_ref, domain_ref, axis_ref}]}], "
      "warnings, variables}; zoom: None, {lon, lat} or {i, j}; levels, interpolate_levels: None or a list.\n"
      "Raises estuary.Error naming the file, line, element and attribute at fault.");

  nb::class_<PyOutput>(io, "Output",
                       "Model fields to CF netCDF files (collective over comm; see docs/io.md). In server mode "
                       "the last `writers` ranks of comm are servers: they call serve(), the others use model_comm. "
                       "A context manager: the with block closes it. Failures raise estuary.Error naming the "
                       "field, file or rank.")
      .def(
          "__init__",
          [](PyOutput* self, nb::object config, PyComm comm, std::optional<std::string> mode,
             std::optional<int> writers, std::optional<nb::object> directory) {
            eio::OutputConfig cfg = eio::OutputConfig::from_yaml_file(fspath(config));
            open_output(*new (self) PyOutput(), std::move(cfg), comm, mode, writers, std::move(directory));
          },
          "config"_a, "comm"_a = nb::none(), "mode"_a = nb::none(), "writers"_a = nb::none(),
          "directory"_a = nb::none(),
          "Collective over comm: opens from a YAML file (its `output:` section).\n\n"
          "config: the YAML file (str or os.PathLike).\n"
          "comm: the mpi4py communicator of the model ranks and servers (None: MPI.COMM_WORLD).\n"
          "mode: \"server\" or \"serverless\"; writers: the number of writer ranks; directory: where the files "
          "go (str or os.PathLike). Each None: the file's value.\n"
          "Raises estuary.Error naming the file and key for a bad configuration or another mode.")
      .def_static(
          "from_yaml",
          [](const std::string& text, PyComm comm, std::optional<std::string> mode, std::optional<int> writers,
             std::optional<nb::object> directory) {
            auto p = std::make_unique<PyOutput>();
            open_output(*p, eio::OutputConfig::from_yaml_string(text, "<string>"), comm, mode, writers,
                        std::move(directory));
            return p;
          },
          "text"_a, "comm"_a = nb::none(), "mode"_a = nb::none(), "writers"_a = nb::none(), "directory"_a = nb::none(),
          "Collective over comm: opens from YAML text (an `output:` section); comm, mode, writers, "
          "directory as for Output(). Raises estuary.Error naming the key for a bad configuration.")
      .def_static(
          "from_xios_xml",
          [](nb::object path, PyComm comm, std::optional<std::string> context, double timestep,
             std::optional<std::map<std::string, std::string>> substitutions, bool skip_unsupported,
             std::optional<std::string> mode, std::optional<int> writers, std::optional<nb::object> directory) {
            eio::XiosXmlInfo info;
            eio::OutputConfig cfg = eio::OutputConfig::from_xios_xml(
                fspath(path), xios_options(context, timestep, substitutions, skip_unsupported), &info);
            int rank = 0;  // every rank reads the same XML: its warnings once, from rank 0 of comm
            MPI_Comm_rank(comm.comm, &rank);
            auto warn = nb::module_::import_("warnings").attr("warn");
            if (rank == 0)
              for (const auto& w : info.warnings) warn(w);
            auto p = std::make_unique<PyOutput>();
            open_output(*p, std::move(cfg), comm, mode, writers, std::move(directory));
            return p;
          },
          "path"_a, "comm"_a = nb::none(), "context"_a = nb::none(), "timestep"_a = 0.0,
          "substitutions"_a = nb::none(), "skip_unsupported"_a = false, "mode"_a = nb::none(),
          "writers"_a = nb::none(), "directory"_a = nb::none(),
          "Collective over comm: opens from XIOS XML (an iodef.xml; docs/io.md, \"XIOS XML\"); its warnings go to "
          "Python's warnings on rank 0.\n\n"
          "path, context, timestep, substitutions, skip_unsupported: as for estuary.io.read_xios_xml.\n"
          "comm, mode, writers, directory: as for Output().\n"
          "Raises estuary.Error naming the file, line, element and attribute at fault.")
      .def_prop_ro(
          "is_server", [](PyOutput& o) { return o.get().is_server(); },
          "True on the server ranks (server mode), which call serve() and nothing else.")
      .def_prop_ro(
          "mode", [](const PyOutput& o) { return eio::name_of(o.mode); }, "\"server\" or \"serverless\".")
      .def_prop_ro(
          "writers", [](PyOutput& o) { return o.get().writers(); },
          "The number of writer ranks: as given, or chosen by estuary (serverless: at end_def, 0 before).")
      .def_prop_ro(
          "model_comm",
          [](PyOutput& o) -> std::optional<PyComm> {
            const MPI_Comm c = o.get().model_comm();
            if (c == MPI_COMM_NULL) return std::nullopt;
            return PyComm{c};
          },
          "The model's communicator (an mpi4py view of estuary's; do not free it); None on server ranks.")
      .def(
          "serve",
          [](PyOutput& o) {
            eio::Output& out = o.get();
            nb::gil_scoped_release release;
            out.serve();
          },
          "Server ranks: receive, rearrange and write until the model ranks close (collective with them).")
      .def(
          "def_grid",
          [](PyOutput& o, const std::string& name, const estuary::Grid& grid) { o.get().def_grid(name, grid); },
          "name"_a, "grid"_a,
          "Model ranks, before enddef: this rank's points of grid `name`, an estuary.Grid (e.g. "
          "GridGen.make(part)). Raises estuary.Error for a name defined twice.")
      .def(
          "def_grid",
          [](PyOutput& o, const std::string& name, const std::string& kind, std::vector<i64> dims, InArray lon,
             InArray lat, std::optional<IdxArray> points, std::optional<CornerArray> corner_lon,
             std::optional<CornerArray> corner_lat) {
            estuary::Grid g;
            g.name = name;
            const std::string where = "estuary.io.Output.def_grid, grid " + name;
            g.kind = named<estuary::GridKind>(kind, where);
            try {
              g.dims = estuary::grid_dims_of(g.kind, dims);
            } catch (const estuary::Error& e) {
              throw estuary::Error(e.fault(), where, e.fix());
            }
            g.global_size = 1;
            for (i64 d : g.dims) g.global_size *= d;
            g.lon.assign(lon.data(), lon.data() + lon.size());
            g.lat.assign(lat.data(), lat.data() + lat.size());
            if (points) g.points = vec_of(*points);
            if (corner_lon.has_value() != corner_lat.has_value())
              throw estuary::Error("corner_lon without corner_lat or the reverse",
                                   "estuary.io.Output.def_grid, grid " + name);
            if (corner_lon) {
              if (corner_lon->shape(0) != lon.size() || corner_lat->shape(0) != lon.size() ||
                  corner_lon->shape(1) != corner_lat->shape(1))
                throw estuary::Error("corner arrays are not (points, corners) arrays of one shape",
                                     "estuary.io.Output.def_grid, grid " + name);
              g.ncorner = static_cast<int>(corner_lon->shape(1));
              g.corner_lon.assign(corner_lon->data(), corner_lon->data() + corner_lon->size());
              g.corner_lat.assign(corner_lat->data(), corner_lat->data() + corner_lat->size());
            }
            o.get().def_grid(name, g);
          },
          "name"_a, "kind"_a, "dims"_a, "lon"_a, "lat"_a, "points"_a = nb::none(), "corner_lon"_a = nb::none(),
          "corner_lat"_a = nb::none(),
          "This rank's points of a grid: kind lonlat, gaussian, curvilinear (dims (nx, ny)) or reduced_gaussian, "
          "unstructured (dims (n,)); points: their global indices (longitude fastest; None: all, in order); "
          "corners: (points, ncorner) arrays.\n\n"
          "name: the grid's name (def_field refers to it).\n"
          "kind: lonlat, gaussian, curvilinear, reduced_gaussian or unstructured.\n"
          "dims: (nx, ny) for the 2-D kinds, (n,) otherwise (longitude fastest).\n"
          "lon, lat: this rank's cell centres, degrees (float64).\n"
          "points: their global indices (int64; None: every point, in order).\n"
          "corner_lon, corner_lat: the cell corners, degrees, two (points, ncorner) float64 arrays (None: no "
          "bounds written).\n"
          "Raises estuary.Error naming the grid for an unknown kind, dims that do not fit it, or corner "
          "arrays of other shapes.")
      .def(
          "def_field",
          [](PyOutput& o, const std::string& name, const std::string& grid, const estuary::Decomp& decomp,
             std::optional<std::vector<double>> levels, const std::string& level_units, const std::string& units,
             const std::string& long_name, const std::string& standard_name,
             std::optional<std::vector<std::int32_t>> mask) {
            eio::FieldDef f;
            if (mask) f.mask = std::move(*mask);
            f.name = name;
            f.grid = grid;
            if (levels) f.levels = std::move(*levels);
            f.level_units = level_units;
            f.decomp = decomp;
            f.units = units;
            f.long_name = long_name;
            f.standard_name = standard_name;
            o.get().def_field(f);
          },
          "name"_a, "grid"_a, "decomp"_a, "levels"_a = nb::none(), "level_units"_a = "m", "units"_a = "",
          "long_name"_a = "", "standard_name"_a = "", "mask"_a = nb::none(),
          "A model field; decomp numbers the global array as level * grid size + point. mask: per local "
          "value, 1 written and 0 masked (written as the fill value 1e20, never in an operation); None: the "
          "grid's mask.\n\n"
          "name: the variable's name; grid: the grid it lives on (def_grid).\n"
          "decomp: this rank's values (an estuary.Decomp).\n"
          "levels: the vertical coordinate's values (None: a 2-D field); level_units: their units (m).\n"
          "units, long_name, standard_name: the CF attributes.\n"
          "Raises estuary.Error naming the field for an unknown grid, a decomp that does not fit, or a "
          "field the configuration does not list.")
      .def(
          "enddef",
          [](PyOutput& o) {
            eio::Output& out = o.get();
            nb::gil_scoped_release release;
            out.end_def();
          },
          "Collective over comm (servers too): builds the rearrangements and creates the files. Raises "
          "estuary.Error naming the file when one cannot be created.")
      .def(
          "write",
          [](PyOutput& o, const std::string& field, double time, InArray data) {
            eio::Output& out = o.get();
            nb::gil_scoped_release release;
            out.write(field, time, span_of(data));
          },
          "field"_a, "time"_a, "data"_a,
          "Model ranks: one sample of a field.\n\n"
          "field: the field's name (def_field).\n"
          "time: the model time, seconds since reference_time.\n"
          "data: this rank's values in the decomposition's order (float64, converted if needed).\n"
          "Raises estuary.io.Terminated after SIGTERM (every record written, files closed), estuary.Error "
          "for an unknown field or a wrong size.")
      .def(
          "flush",
          [](PyOutput& o) {
            eio::Output& out = o.get();
            nb::gil_scoped_release release;
            out.flush();
          },
          "Model ranks: every record handed over reaches the files (collective over the model ranks).")
      .def(
          "close",
          [](PyOutput& o) {
            eio::Output& out = o.get();
            nb::gil_scoped_release release;
            out.close();
          },
          "Flushes, closes the files, stops the servers (model ranks; nothing on servers).")
      .def(
          "free",
          [](PyOutput& o) {
            nb::gil_scoped_release release;
            o.out.reset();
          },
          "Closes if needed and releases the communicators (collective); the object is unusable after.")
      .def(
          "stats", [](PyOutput& o) { return io_stats_dict(o.get().stats()); },
          "Local: this rank's counters, a dict of records_handed_over, records_written, bytes_written, "
          "files_created and write_s, transfer_s, model_io_s, derived_s (the part of model_io_s spent on derived "
          "fields), regrid_s (the part spent remapping for files on another grid), setup_s (seconds).")
      .def(
          "report",
          [](PyOutput& o, std::optional<double> run_s, double run_without_io_s) {
            eio::Output& out = o.get();
            eio::IoReport r;
            {
              nb::gil_scoped_release release;
              const double run = run_s ? *run_s : MPI_Wtime() - o.opened;
              r = out.report(run, run_without_io_s);
            }
            return io_report_dict(r);
          },
          "run_s"_a = nb::none(), "run_without_io_s"_a = 0.0,
          "Collective over every rank of comm (servers too), after close: the run's I/O metrics and CPMIP "
          "measures as a dict (ranks, writers, bytes_written, write_mb_per_s, run_s, core_hours, "
          "data_output_cost, data_intensity, json ...). run_s: the run's wall time in seconds (default: since "
          "the Output was opened); run_without_io_s: the same run's wall time without I/O (seconds; 0: "
          "unknown).")
      .def(
          "__enter__", [](PyOutput& o) -> PyOutput& { return o; }, nb::rv_policy::reference,
          "Returns the Output itself (with ... as out).")
      .def(
          "__exit__",
          [](PyOutput& o, nb::handle exc_type, nb::handle, nb::handle) {
            if (!o.out) return false;
            if (exc_type.is_none()) {
              nb::gil_scoped_release release;
              o.out->close();
              return false;
            }
            try {  // already failing: closing is best effort, the first exception is the one raised
              nb::gil_scoped_release release;
              o.out->close();
            } catch (const std::exception&) {
            }
            return false;
          },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(),
          "Closes (the files are complete after the with block); exc_type, exc, tb: the exception leaving the "
          "block, if any (closing is then best effort and that exception is the one raised).");

  nb::class_<PyReader>(io, "Reader",
                       "Reads variables of a file written by Output into any decomposition, on any rank count "
                       "(collective over comm). A context manager: the with block closes it.")
      .def(
          "__init__",
          [](PyReader* self, nb::object path, PyComm comm) {
            const std::string p = fspath(path);
            auto* r = new (self) PyReader();
            r->path = p;
            nb::gil_scoped_release release;
            r->reader = std::make_unique<eio::Reader>(p, comm.comm);
          },
          "path"_a, "comm"_a = nb::none(),
          "Collective over comm: opens the netCDF file at path (str or os.PathLike); comm: the mpi4py "
          "communicator (None: MPI.COMM_WORLD). Raises estuary.Error naming the file when it cannot be read.")
      .def_prop_ro(
          "path", [](const PyReader& r) { return r.path; }, "The file's path.")
      .def_prop_ro(
          "records", [](PyReader& r) { return r.get().records(); }, "The length of the time dimension (0: none).")
      .def_prop_ro(
          "times", [](PyReader& r) { return to_numpy(std::vector<double>(r.get().times())); }, nb::rv_policy::move,
          "The time coordinate, seconds since reference_time (a float64 copy).")
      .def(
          "read",
          [](PyReader& r, const std::string& var, double time, const estuary::Decomp& decomp,
             nb::typed<nb::object, OutArray> out) -> ReadResult {
            eio::Reader& rd = r.get();
            return read_into(decomp, std::move(out), [&](std::span<double> to) { rd.read(var, time, decomp, to); });
          },
          "var"_a, "time"_a, "decomp"_a, "out"_a = nb::none(),
          "Collective over comm: a variable's record at a model time.\n\n"
          "var: the variable's name.\n"
          "time: the model time, seconds since reference_time.\n"
          "decomp: the values this rank wants (an estuary.Decomp, any decomposition).\n"
          "out: a contiguous, writable float64 array of decomp.size values to fill (None: a new one).\n"
          "Returns the values in decomp's order (out when given).\n"
          "Raises TypeError for another out, estuary.Error naming the file and variable for an unknown "
          "variable or a time the file lacks.")
      .def(
          "read_record",
          [](PyReader& r, const std::string& var, i64 record, const estuary::Decomp& decomp,
             nb::typed<nb::object, OutArray> out) -> ReadResult {
            eio::Reader& rd = r.get();
            return read_into(decomp, std::move(out),
                             [&](std::span<double> to) { rd.read_record(var, record, decomp, to); });
          },
          "var"_a, "record"_a, "decomp"_a, "out"_a = nb::none(),
          "Collective over comm: record number `record` of a variable (-1: a variable without time "
          "dimension); var, decomp, out as for read(). Returns the values in decomp's order.")
      .def(
          "set_period", [](PyReader& r, double period) { r.get().set_period(period); }, "period"_a,
          "Periodic forcing: records repeat every `period` seconds; each read prefetches the next record.")
      .def_prop_ro(
          "prefetch_hits", [](PyReader& r) { return r.get().prefetch_hits(); },
          "How many reads found their record prefetched (set_period).")
      .def(
          "close",
          [](PyReader& r) {
            nb::gil_scoped_release release;
            r.reader.reset();
          },
          "Closes the file (collective); the Reader is unusable after.")
      .def(
          "__enter__", [](PyReader& r) -> PyReader& { return r; }, nb::rv_policy::reference,
          "Returns the Reader itself (with ... as rd).")
      .def(
          "__exit__",
          [](PyReader& r, nb::handle, nb::handle, nb::handle) {
            nb::gil_scoped_release release;
            r.reader.reset();
            return false;
          },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(),
          "Closes the file (collective); exc_type, exc, tb: the exception leaving the with block, if any.");
}

}  // namespace estuary::py
