// _estuary: the low-level Python module over estuary's C++ API (python/estuary/ is the Python
// layer users import).
//
// Why nanobind rather than pybind11: it is several times smaller (module size and compile
// time), its calls are faster, and nb::ndarray hands numpy arrays to C++ as pointer + shape
// without copies (checked dtype, contiguity and writability), which is what put/get and the
// redistribution need. pybind11's py::array_t can do the last too, but with more machinery.
//
// Communicators: Python passes mpi4py communicators (or None for MPI.COMM_WORLD, or a Fortran
// handle as an int). The caster below converts with comm.py2f() and MPI_Comm_f2c, and back with
// MPI_Comm_c2f and MPI.Comm.f2py. We do not use mpi4py's C API (mpi4py/mpi4py.h,
// PyMPIComm_Get): its binary wheels may be built for another MPI ABI than the one estuary links,
// while a Fortran handle is an int that means the same thing to both sides.
//
// Arrays: float64 arrays, C- or Fortran-contiguous (the memory order is the local order of the
// partition or decomposition; a (nx, ny) Fortran array of a box partition has x fastest, as
// OASIS wants). Inputs may be converted (a copy); outputs must already be contiguous float64
// (no conversion: the results would land in a temporary), else TypeError. Redist.run takes
// both arrays as they are (its overloads for float64, float32, int32, int64 pick by dtype).
//
// Errors: estuary::Error becomes estuary.Error (a RuntimeError) carrying estuary's message;
// estuary::MpiError becomes estuary.MpiError, a subclass.
#include <cstring>
#include <map>
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "estuary/couple.hpp"
#include "estuary/decomp.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/grid_files.hpp"  // OASIS grid files
#include "estuary/io.hpp"
#include "estuary/plan.hpp"
#include "estuary/redist.hpp"
#include "estuary/remap.hpp"
#include "estuary/schedule.hpp"
#include "estuary/types.hpp"
#include "estuary/weightgen.hpp"
#include "estuary/weights.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using i64 = std::int64_t;

// An MPI communicator as Python sees it (an mpi4py communicator).
struct PyComm {
  MPI_Comm comm = MPI_COMM_WORLD;
};

namespace nanobind::detail {
template <>
struct type_caster<PyComm> {
  NB_TYPE_CASTER(PyComm, const_name("mpi4py.MPI.Comm"))

  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    if (src.is_none()) {
      value.comm = MPI_COMM_WORLD;
      return true;
    }
    PyObject* f = nullptr;
    if (PyLong_Check(src.ptr())) {
      f = src.ptr();
      Py_INCREF(f);
    } else if (PyObject_HasAttrString(src.ptr(), "py2f")) {
      f = PyObject_CallMethod(src.ptr(), "py2f", nullptr);
    }
    if (!f) {
      PyErr_Clear();
      return false;
    }
    const long h = PyLong_AsLong(f);
    Py_DECREF(f);
    if (h == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    value.comm = MPI_Comm_f2c(static_cast<MPI_Fint>(h));
    return true;
  }

  static handle from_cpp(const PyComm& c, rv_policy, cleanup_list*) noexcept {
    PyObject* mod = PyImport_ImportModule("mpi4py.MPI");
    if (!mod) return handle();
    PyObject* cls = PyObject_GetAttrString(mod, "Intracomm");
    PyObject* comm = nullptr;
    if (cls) {
      PyObject* base = PyObject_CallMethod(cls, "f2py", "i", static_cast<int>(MPI_Comm_c2f(c.comm)));
      // Intracomm(comm) makes the intracommunicator class of the same handle (no duplicate).
      if (base) comm = PyObject_CallOneArg(cls, base);
      Py_XDECREF(base);
    }
    Py_XDECREF(cls);
    Py_DECREF(mod);
    return comm;
  }
};
}  // namespace nanobind::detail

namespace {

// Float64 arrays, C or Fortran order; the memory order is the local order.
using InArray = nb::ndarray<const double, nb::any_contig, nb::device::cpu>;
using OutArray = nb::ndarray<double, nb::any_contig, nb::device::cpu>;
using IdxArray = nb::ndarray<const i64, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

std::span<const double> span_of(const InArray& a) { return {a.data(), a.size()}; }
std::span<double> span_of(const OutArray& a) { return {a.data(), a.size()}; }

// A numpy array that owns a vector (moved, no copy).
template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(heap->data(), {heap->size()}, owner);
}

std::vector<i64> vec_of(const IdxArray& a) { return {a.data(), a.data() + a.size()}; }

// Links <-> (rows, cols, weights) numpy arrays.
nb::tuple links_to_py(estuary::Links&& l) {
  return nb::make_tuple(to_numpy(std::move(l.row)), to_numpy(std::move(l.col)), to_numpy(std::move(l.weight)));
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

estuary::RemapLocation location_of(const std::string& s) {
  if (s == "src") return estuary::RemapLocation::src;
  if (s == "dst") return estuary::RemapLocation::dst;
  throw estuary::Error("remap location \"" + s + "\"", "Remap", "use \"src\" or \"dst\"");
}
estuary::RemapOrder order_of(const std::string& s) {
  if (s == "bfb") return estuary::RemapOrder::bfb;
  if (s == "sum") return estuary::RemapOrder::sum;
  throw estuary::Error("remap order \"" + s + "\"", "Remap", "use \"bfb\" or \"sum\"");
}

// Redist.run for one element type: one field, source and destination arrays.
template <class T>
void redist_run(estuary::Redist& r, nb::ndarray<const T, nb::any_contig, nb::device::cpu> src,
                nb::ndarray<T, nb::any_contig, nb::device::cpu> dst) {
  const estuary::Field f(estuary::type_of<T>(), src.data(), static_cast<i64>(src.size()), dst.data(),
                         static_cast<i64>(dst.size()));
  nb::gil_scoped_release release;
  r.run({f});
}

template <class T>
void def_redist_run(nb::class_<estuary::Redist>& c) {
  c.def("run", &redist_run<T>, "src"_a.noconvert(), "dst"_a.noconvert(),
        "Collective: moves src (laid out as the source Decomp) into dst (the destination Decomp).");
}

nb::dict schedule_stats_dict(const estuary::ScheduleStats& s) {
  nb::dict d;
  d["stages"] = s.stages;
  d["messages_sent"] = s.messages_sent;
  d["messages_received"] = s.messages_received;
  d["elements_sent"] = s.elements_sent;
  d["elements_received"] = s.elements_received;
  d["elements_copied"] = s.elements_copied;
  d["largest_message"] = s.largest_message;
  d["smallest_message"] = s.smallest_message;
  return d;
}

std::vector<std::pair<int, i64>> peer_counts(const std::vector<estuary::PeerSegments>& ps) {
  std::vector<std::pair<int, i64>> out;
  for (const auto& p : ps) out.emplace_back(p.peer, p.count());
  return out;
}

estuary::Grid make_grid(const std::string& name, std::vector<i64> dims, i64 global_size, const InArray& lon,
                        const InArray& lat, std::optional<IdxArray> points, std::optional<InArray> area,
                        std::optional<nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig>> mask) {
  estuary::Grid g;
  g.name = name;
  g.dims = std::move(dims);
  g.global_size = global_size;
  g.kind = g.dims.size() == 2 ? estuary::GridKind::curvilinear : estuary::GridKind::unstructured;
  g.lon.assign(lon.data(), lon.data() + lon.size());
  g.lat.assign(lat.data(), lat.data() + lat.size());
  if (points) g.points = vec_of(*points);
  if (area) g.area.assign(area->data(), area->data() + area->size());
  if (mask) g.mask.assign(mask->data(), mask->data() + mask->size());
  g.check();
  return g;
}

}  // namespace

// ---- the I/O server (estuary::io) ----
//
// Output and Reader are held through a unique_ptr so that free() (and close() for Reader) ends
// them at a point every rank reaches alike, not whenever the garbage collector gets to them:
// the C++ destructors are collective (Output's closes the files if close() was not called).
namespace {

namespace eio = estuary::io;

struct PyOutput {
  std::unique_ptr<eio::Output> out;
  eio::Mode mode = eio::Mode::serverless;
  int writers = 1;
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
  if (mode) {
    if (*mode == "server") cfg.mode = eio::Mode::server;
    else if (*mode == "serverless") cfg.mode = eio::Mode::serverless;
    else
      throw estuary::Error("mode \"" + *mode + "\"", "estuary.io.Output, config " + cfg.source,
                           "use \"server\" or \"serverless\"");
  }
  if (writers) cfg.writers = *writers;
  if (directory) cfg.directory = fspath(*directory);
  p.mode = cfg.mode;
  p.writers = cfg.writers;
  nb::gil_scoped_release release;
  p.opened = MPI_Wtime();
  p.out = std::make_unique<eio::Output>(cfg, comm.comm);
}

nb::dict io_stats_dict(const eio::IoStats& s) {
  nb::dict d;
  d["records_handed_over"] = s.records_handed_over;
  d["records_written"] = s.records_written;
  d["bytes_written"] = s.bytes_written;
  d["files_created"] = s.files_created;
  d["write_s"] = s.write_s;
  d["transfer_s"] = s.transfer_s;
  d["model_io_s"] = s.model_io_s;
  d["derived_s"] = s.derived_s;  // part of model_io_s: derived fields (expr: in the configuration)
  d["setup_s"] = s.setup_s;
  return d;
}

nb::dict io_report_dict(const eio::IoReport& r) {
  nb::dict d;
  d["ranks"] = r.ranks;
  d["model_ranks"] = r.model_ranks;
  d["writers"] = r.writers;
  d["bytes_written"] = r.bytes_written;
  d["records_written"] = r.records_written;
  d["files_created"] = r.files_created;
  d["write_s"] = r.write_s;
  d["write_mb_per_s"] = r.write_mb_per_s;
  d["model_io_s"] = r.model_io_s;
  d["run_s"] = r.run_s;
  d["run_without_io_s"] = r.run_without_io_s;
  d["core_hours"] = r.core_hours;
  d["data_output_cost"] = r.data_output_cost;
  d["data_intensity"] = r.data_intensity;
  d["json"] = r.json();
  return d;
}

estuary::GridKind grid_kind_of(const std::string& kind) {
  for (auto k : {estuary::GridKind::lonlat, estuary::GridKind::gaussian, estuary::GridKind::reduced_gaussian,
                 estuary::GridKind::curvilinear, estuary::GridKind::unstructured})
    if (kind == estuary::name_of(k)) return k;
  throw estuary::Error("grid kind \"" + kind + "\"", "estuary.io.Output.def_grid",
                       "use lonlat, gaussian, curvilinear, reduced_gaussian or unstructured");
}

using CornerArray = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// Reader.read(..., out): `out` must be a contiguous float64 array already (TypeError otherwise).
OutArray out_array(nb::handle out) {
  OutArray a;
  if (!nb::try_cast<OutArray>(out, a, false))
    throw nb::type_error("out must be a writable C- or Fortran-contiguous float64 numpy array");
  return a;
}

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
nb::dict xios_dict(const eio::OutputConfig& c, const eio::XiosXmlInfo& info) {
  nb::dict d;
  d["context"] = info.context;
  d["calendar"] = c.calendar;
  d["reference_time"] = c.reference_time;
  nb::list files;
  std::size_t k = 0;
  for (const eio::FileConfig& f : c.files) {
    nb::dict fd;
    fd["name"] = f.name;
    fd["output_freq"] = nb::make_tuple(f.output_freq.seconds, f.output_freq.months);  // (seconds, months)
    fd["split_freq"] = nb::make_tuple(f.split_freq.seconds, f.split_freq.months);
    fd["format"] = f.format == eio::Format::netcdf4 ? "netcdf4" : "cdf5";
    nb::list fields;
    for (const eio::FieldConfig& x : f.fields) {
      nb::dict v;
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
  nb::list warnings;
  for (const auto& w : info.warnings) warnings.append(w);
  d["warnings"] = warnings;
  nb::dict vars;
  for (const auto& [key, value] : info.variables) vars[key.c_str()] = value;
  d["variables"] = vars;
  return d;
}

void bind_io(nb::module_& m, nb::handle error) {
  nb::module_ io = m.def_submodule("io", "The I/O server: model fields to CF netCDF files (Output), and back (Reader).");
  nb::exception<eio::Terminated>(io, "Terminated", error.ptr());
  io.def("have_netcdf4_parallel", &eio::have_netcdf4_parallel,
         "True when this build writes netCDF-4 from several writers in parallel (netCDF-4 parallel).");

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
      "The output set-up an XIOS iodef.xml gives (no MPI): {context, calendar, reference_time, files: "
      "[{name, output_freq and split_freq as (seconds, months), format, fields: [{variable, source, operation, precision, deflate, "
      "sampling_freq, units, long_name, standard_name, origin, grid_ref, domain_ref, axis_ref}]}], warnings, "
      "variables}.");
  nb::class_<PyOutput>(io, "Output",
                       "Model fields to CF netCDF files (collective over comm; see docs/io.md). In server mode "
                       "the last `writers` ranks of comm are servers: they call serve(), the others use model_comm.")
      .def(
          "__init__",
          [](PyOutput* self, nb::object config, PyComm comm, std::optional<std::string> mode,
             std::optional<int> writers, std::optional<nb::object> directory) {
            eio::OutputConfig cfg = eio::OutputConfig::from_yaml_file(fspath(config));
            open_output(*new (self) PyOutput(), std::move(cfg), comm, mode, writers, std::move(directory));
          },
          "config"_a, "comm"_a = nb::none(), "mode"_a = nb::none(), "writers"_a = nb::none(),
          "directory"_a = nb::none(),
          "Opens from a YAML file (its `output:` section); mode, writers and directory override the file's.")
      .def_static(
          "from_yaml",
          [](const std::string& text, PyComm comm, std::optional<std::string> mode, std::optional<int> writers,
             std::optional<nb::object> directory) {
            auto p = std::make_unique<PyOutput>();
            open_output(*p, eio::OutputConfig::from_yaml_string(text, "<string>"), comm, mode, writers,
                        std::move(directory));
            return p;
          },
          "text"_a, "comm"_a = nb::none(), "mode"_a = nb::none(), "writers"_a = nb::none(),
          "directory"_a = nb::none(), "Opens from YAML text (an `output:` section).")
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
          "Opens from XIOS XML (an iodef.xml; docs/io.md, \"XIOS XML\"); warnings go to Python's warnings on rank 0.")
      .def_prop_ro("is_server", [](PyOutput& o) { return o.get().is_server(); })
      .def_prop_ro("mode", [](const PyOutput& o) { return o.mode == eio::Mode::server ? "server" : "serverless"; })
      .def_prop_ro("writers", [](const PyOutput& o) { return o.writers; })
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
          "Server ranks: receive, rearrange and write until the model closes.")
      .def(
          "def_grid", [](PyOutput& o, const std::string& name, const estuary::Grid& grid) { o.get().def_grid(name, grid); },
          "name"_a, "grid"_a, "This rank's points of a grid (an estuary.Grid, e.g. GridGen.make(part)).")
      .def(
          "def_grid",
          [](PyOutput& o, const std::string& name, const std::string& kind, std::vector<i64> dims, InArray lon,
             InArray lat, std::optional<IdxArray> points, std::optional<CornerArray> corner_lon,
             std::optional<CornerArray> corner_lat) {
            estuary::Grid g;
            g.name = name;
            g.kind = grid_kind_of(kind);
            const bool two_d = g.kind != estuary::GridKind::reduced_gaussian && g.kind != estuary::GridKind::unstructured;
            if (dims.empty() || dims.size() > 2 || (two_d && dims.size() != 2))
              throw estuary::Error("grid dims of " + std::to_string(dims.size()) + " values for kind " + kind,
                                   "estuary.io.Output.def_grid, grid " + name,
                                   "give (nx, ny), longitude fastest, for 2-D kinds and (n,) otherwise");
            g.global_size = 1;
            for (i64 d : dims) g.global_size *= d;
            g.dims = two_d ? dims : std::vector<i64>{g.global_size};
            g.lon.assign(lon.data(), lon.data() + lon.size());
            g.lat.assign(lat.data(), lat.data() + lat.size());
            if (points) g.points = vec_of(*points);
            if (corner_lon.has_value() != corner_lat.has_value())
              throw estuary::Error("corner_lon without corner_lat or the reverse", "estuary.io.Output.def_grid, grid " + name);
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
          "corners: (points, ncorner) arrays.")
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
          "grid's mask.")
      .def(
          "enddef",
          [](PyOutput& o) {
            eio::Output& out = o.get();
            nb::gil_scoped_release release;
            out.end_def();
          },
          "Collective (servers too): builds the rearrangements and creates the files.")
      .def(
          "write",
          [](PyOutput& o, const std::string& field, double time, InArray data) {
            eio::Output& out = o.get();
            nb::gil_scoped_release release;
            out.write(field, time, span_of(data));
          },
          "field"_a, "time"_a, "data"_a,
          "One sample at model time `time` (seconds since reference_time), in the decomposition's order. "
          "Raises estuary.io.Terminated after SIGTERM (every record written, files closed).")
      .def(
          "flush",
          [](PyOutput& o) {
            eio::Output& out = o.get();
            nb::gil_scoped_release release;
            out.flush();
          },
          "Every record handed over reaches the files.")
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
      .def("stats", [](PyOutput& o) { return io_stats_dict(o.get().stats()); }, "This rank's counters (a dict).")
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
          "measures as a dict. run_s: the run's wall time (default: since the Output was opened).")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
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
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(), "Closes (the files are complete after the with block).");

  nb::class_<PyReader>(io, "Reader", "Reads variables of a file written by Output into any decomposition (collective).")
      .def(
          "__init__",
          [](PyReader* self, nb::object path, PyComm comm) {
            const std::string p = fspath(path);
            auto* r = new (self) PyReader();
            r->path = p;
            nb::gil_scoped_release release;
            r->reader = std::make_unique<eio::Reader>(p, comm.comm);
          },
          "path"_a, "comm"_a = nb::none())
      .def_prop_ro("path", [](const PyReader& r) { return r.path; })
      .def_prop_ro("records", [](PyReader& r) { return r.get().records(); }, "Length of the time dimension (0: none).")
      .def_prop_ro(
          "times", [](PyReader& r) { return to_numpy(std::vector<double>(r.get().times())); }, nb::rv_policy::move,
          "The time coordinate (a copy).")
      .def(
          "read",
          [](PyReader& r, const std::string& var, double time, const estuary::Decomp& decomp, nb::object out) -> nb::object {
            eio::Reader& rd = r.get();
            if (out.is_none()) {
              std::vector<double> v(static_cast<std::size_t>(decomp.size()));
              {
                nb::gil_scoped_release release;
                rd.read(var, time, decomp, v);
              }
              return nb::cast(to_numpy(std::move(v)), nb::rv_policy::move);
            }
            OutArray a = out_array(out);
            {
              nb::gil_scoped_release release;
              rd.read(var, time, decomp, span_of(a));
            }
            return out;
          },
          "var"_a, "time"_a, "decomp"_a, "out"_a = nb::none(),
          "Collective: the record at model time `time`, in decomp's order (into `out` if given; returned).")
      .def(
          "read_record",
          [](PyReader& r, const std::string& var, i64 record, const estuary::Decomp& decomp, nb::object out) -> nb::object {
            eio::Reader& rd = r.get();
            if (out.is_none()) {
              std::vector<double> v(static_cast<std::size_t>(decomp.size()));
              {
                nb::gil_scoped_release release;
                rd.read_record(var, record, decomp, v);
              }
              return nb::cast(to_numpy(std::move(v)), nb::rv_policy::move);
            }
            OutArray a = out_array(out);
            {
              nb::gil_scoped_release release;
              rd.read_record(var, record, decomp, span_of(a));
            }
            return out;
          },
          "var"_a, "record"_a, "decomp"_a, "out"_a = nb::none(),
          "Collective: record number `record` (-1: a variable without time dimension).")
      .def("set_period", [](PyReader& r, double period) { r.get().set_period(period); }, "period"_a,
           "Periodic forcing: records repeat every `period` seconds; each read prefetches the next record.")
      .def_prop_ro("prefetch_hits", [](PyReader& r) { return r.get().prefetch_hits(); })
      .def(
          "close",
          [](PyReader& r) {
            nb::gil_scoped_release release;
            r.reader.reset();
          },
          "Closes the file (collective); the Reader is unusable after.")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def(
          "__exit__",
          [](PyReader& r, nb::handle, nb::handle, nb::handle) {
            nb::gil_scoped_release release;
            r.reader.reset();
            return false;
          },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none());
}

}  // namespace

// distance_weights and bilinear_weights, for a source given by its recipe (GridGen: each rank
// builds what it needs) or by each rank's share (Grid, e.g. read from a grid file).
template <class Src>
void def_point_weights(nb::module_& m, const char* distance_doc, const char* bilinear_doc) {
  m.def(
      "distance_weights",
      [](const Src& src, const estuary::Grid& dst, PyComm comm, int neighbors) {
        estuary::DistanceWeightOptions o;
        o.neighbors = neighbors;
        estuary::Links l;
        {
          nb::gil_scoped_release release;
          l = estuary::distance_weights(src, dst, comm.comm, o);
        }
        return links_to_py(std::move(l));
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(), "neighbors"_a = 4, distance_doc);
  m.def(
      "bilinear_weights",
      [](const Src& src, const estuary::Grid& dst, PyComm comm, bool extrapolate) {
        estuary::BilinearWeightOptions o;
        o.extrapolate = extrapolate;
        estuary::Links l;
        {
          nb::gil_scoped_release release;
          l = estuary::bilinear_weights(src, dst, comm.comm, o);
        }
        return links_to_py(std::move(l));
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(), "extrapolate"_a = true, bilinear_doc);
}

NB_MODULE(_estuary, m) {
  m.doc() = "estuary's C++ API (low level; import estuary instead)";
  // MPI is initialised by mpi4py (estuary never calls MPI_Init itself).
  nb::module_::import_("mpi4py.MPI");

  auto error = nb::exception<estuary::Error>(m, "Error", PyExc_RuntimeError);
  auto mpi_error = nb::exception<estuary::MpiError>(m, "MpiError", error.ptr());
  // Tried before the two above (nanobind tries the latest first): a message with bytes that are
  // not UTF-8 (a file name, a value quoted from a file) still becomes estuary.Error, its bad
  // bytes shown as \xNN, where PyErr_SetString would raise UnicodeDecodeError instead.
  static PyObject* error_types[2] = {error.ptr(), mpi_error.ptr()};
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* payload) {
        auto* types = static_cast<PyObject**>(payload);
        const auto raise = [](PyObject* type, const char* what) {
          PyObject* msg = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)), "backslashreplace");
          if (!msg) return;  // the decoding error is then the one raised
          PyErr_SetObject(type, msg);
          Py_DECREF(msg);
        };
        try {
          std::rethrow_exception(p);
        } catch (const estuary::MpiError& e) {
          raise(types[1], e.what());
        } catch (const estuary::Error& e) {
          raise(types[0], e.what());
        }
      },
      error_types);

  // ---- decompositions ----
  nb::class_<estuary::Decomp>(m, "Decomp", "The global indices one rank owns, in its local order.")
      .def_static("indices", [](i64 n, IdxArray idx) { return estuary::Decomp::indices(n, vec_of(idx)); },
                  "global_size"_a, "indices"_a, "An explicit list of global indices.")
      .def_static(
          "stripes",
          [](i64 n, const std::vector<std::tuple<i64, i64, i64>>& s) {
            std::vector<estuary::Stripe> v;
            for (auto [a, c, st] : s) v.push_back({a, c, st});
            return estuary::Decomp::stripes(n, std::move(v));
          },
          "global_size"_a, "stripes"_a, "Runs of (start, count, stride).")
      .def_static(
          "box",
          [](std::vector<i64> shape, std::vector<i64> start, std::vector<i64> count, const std::string& order) {
            if (order != "C" && order != "F")
              throw estuary::Error("box order \"" + order + "\"", "Decomp.box", "use \"C\" (last dimension fastest) or \"F\"");
            return estuary::Decomp::box(std::move(shape), std::move(start), std::move(count),
                                        order == "C" ? estuary::Order::row_major : estuary::Order::column_major);
          },
          "global_shape"_a, "start"_a, "count"_a, "order"_a = "C",
          "The sub-box [start, start + count) of an N-D array; order \"C\" (row-major) or \"F\".")
      .def_static("empty", &estuary::Decomp::empty, "global_size"_a, "A rank that owns nothing.")
      .def_prop_ro("size", &estuary::Decomp::size, "Local elements.")
      .def_prop_ro("global_size", &estuary::Decomp::global_size)
      .def_prop_ro("kind", [](const estuary::Decomp& d) {
        return d.kind() == estuary::Decomp::Kind::indices ? "indices" : d.kind() == estuary::Decomp::Kind::stripes ? "stripes" : "box";
      })
      .def("__len__", [](const estuary::Decomp& d) { return d.size(); })
      .def("to_indices", [](const estuary::Decomp& d) { return to_numpy(d.to_indices()); },
           "The global index of every local element (numpy int64).");

  nb::module_ gen = m.def_submodule("gen", "Decomposition generators: each rank computes its own share.");
  gen.def("block", &estuary::gen::block, "n"_a, "rank"_a, "ranks"_a);
  gen.def("cyclic", &estuary::gen::cyclic, "n"_a, "rank"_a, "ranks"_a);
  gen.def("random", &estuary::gen::random, "n"_a, "rank"_a, "ranks"_a, "seed"_a = 42);
  gen.def("rows2d", &estuary::gen::rows2d, "n"_a, "rank"_a, "ranks"_a);
  gen.def("cols2d", &estuary::gen::cols2d, "n"_a, "rank"_a, "ranks"_a);
  gen.def("from_name", &estuary::gen::from_name, "kind"_a, "n"_a, "rank"_a, "ranks"_a,
          "A generated decomposition by its name (block, cyclic, random, rows2d, transpose2d).");
  gen.def("by_name", &estuary::gen::from_name, "kind"_a, "n"_a, "rank"_a, "ranks"_a, "The older name of from_name.");
  gen.def("kinds", &estuary::gen::kinds);
  gen.def("grid_shape", [](i64 n) {
    i64 nx = 0, ny = 0;
    estuary::gen::grid_shape(n, nx, ny);
    return std::make_pair(nx, ny);
  }, "n"_a);

  // ---- redistribution ----
  nb::class_<estuary::Redist> redist(m, "Redist", "Moves data between two decompositions (collective).");
  redist.def(
      "__init__",
      [](estuary::Redist* self, const estuary::Decomp& src, const estuary::Decomp& dst, PyComm comm,
         const std::string& algorithm) {
        estuary::RedistOptions o;
        o.algorithm = algorithm;
        nb::gil_scoped_release release;
        new (self) estuary::Redist(src, dst, comm.comm, o);
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(), "algorithm"_a = "");
  def_redist_run<double>(redist);
  def_redist_run<float>(redist);
  def_redist_run<std::int32_t>(redist);
  def_redist_run<std::int64_t>(redist);
  redist.def("schedule_stats", [](const estuary::Redist& r) { return schedule_stats_dict(r.schedule().stats()); },
             "This rank's schedule counts (local).")
      .def_prop_ro("algorithm", [](const estuary::Redist& r) { return r.schedule().algorithm; })
      .def(
          "schedule_messages",
          [](const estuary::Redist& r) {
            std::vector<std::tuple<int, int, i64>> out;  // (stage, peer, elements) of each message sent
            const auto& stages = r.schedule().stages;
            for (std::size_t k = 0; k < stages.size(); ++k)
              for (const auto& m : stages[k].sends) out.emplace_back(static_cast<int>(k), m.peer, m.count());
            return out;
          },
          "This rank's schedule: (stage, peer, elements per field) of every message it sends.")
      .def("sends", [](const estuary::Redist& r) { return peer_counts(r.plan().sends()); },
           "(peer, elements) this rank sends, itself included.")
      .def("recvs", [](const estuary::Redist& r) { return peer_counts(r.plan().recvs()); },
           "(peer, elements) this rank receives, itself included.")
      .def("describe", [](const estuary::Redist& r) { return r.schedule().describe(); });
  m.def("schedule_names", &estuary::schedule_names);

  // ---- weights and remapping ----
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
      "path"_a, "rows"_a, "cols"_a, "weights"_a, "src_size"_a, "dst_size"_a, "comm"_a = nb::none(),
      "map_method"_a = "", "src_grid"_a = nb::none(), "dst_grid"_a = nb::none(), "normalization"_a = "none",
      "dst_frac"_a = nb::none(), "columns"_a = nb::none(), "num_wgts"_a = 1,
      "attributes"_a = std::map<std::string, std::string>{},
      "Collective: writes every rank's links (0-based rows = destination, cols = source) as one SCRIP file; "
      "columns (links x num_wgts values, flat) gives several weights per link (bicubic: 4); attributes: "
      "extra global text attributes (e.g. estuary_fixed_value of a stack).");
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
        return nb::make_tuple(links_to_py(std::move(s.links)), info);
      },
      "path"_a, "comm"_a = nb::none(),
      "Collective: this rank's slice ((rows, cols, weights), info) of a SCRIP or ESMF weight file.");

  nb::class_<estuary::Remap>(m, "Remap", "Applies a distributed weight matrix: dst = W src (collective).")
      .def(
          "__init__",
          [](estuary::Remap* self, const std::string& file, const estuary::Decomp& src, const estuary::Decomp& dst,
             PyComm comm, const std::string& location, const std::string& order, double unmapped) {
            estuary::RemapOptions o;
            o.location = location_of(location);
            o.order = order_of(order);
            o.unmapped_value = unmapped;
            nb::gil_scoped_release release;
            new (self) estuary::Remap(file, src, dst, comm.comm, o);
          },
          "weight_file"_a, "src"_a, "dst"_a, "comm"_a = nb::none(), "location"_a = "dst", "order"_a = "bfb",
          "unmapped_value"_a = 0.0)
      .def_static(
          "from_links",
          [](IdxArray rows, IdxArray cols, InArray w, const estuary::Decomp& src, const estuary::Decomp& dst,
             PyComm comm, const std::string& location, const std::string& order, double unmapped) {
            const estuary::Links l = links_from(rows, cols, w);
            estuary::RemapOptions o;
            o.location = location_of(location);
            o.order = order_of(order);
            o.unmapped_value = unmapped;
            nb::gil_scoped_release release;
            return estuary::Remap(l, src, dst, comm.comm, o);
          },
          "rows"_a, "cols"_a, "weights"_a, "src"_a, "dst"_a, "comm"_a = nb::none(), "location"_a = "dst",
          "order"_a = "bfb", "unmapped_value"_a = 0.0, "This rank's share of links, any distribution.")
      .def(
          "run",
          [](estuary::Remap& r, InArray src, OutArray dst) {
            nb::gil_scoped_release release;
            r.run(span_of(src), span_of(dst));
          },
          "src"_a, "dst"_a.noconvert())
      .def("stats", [](const estuary::Remap& r) {
        const estuary::RemapStats s = r.stats();
        nb::dict d;
        d["links"] = s.links;
        d["rows"] = s.rows;
        d["gathered"] = s.gathered;
        d["partials"] = s.partials;
        d["exchanges"] = s.exchanges;
        return d;
      });

  // ---- grids and weight generation ----
  // The array properties return fresh copies (rv_policy::move: a property's default,
  // reference_internal, cannot apply to an array that already owns its data).
  nb::class_<estuary::Grid>(m, "Grid", "Cells of a horizontal grid (this rank's points).")
      .def("__init__",
           [](estuary::Grid* self, const std::string& name, std::vector<i64> dims, i64 global_size, InArray lon,
              InArray lat, std::optional<IdxArray> points, std::optional<InArray> area,
              std::optional<nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig>> mask) {
             new (self) estuary::Grid(make_grid(name, std::move(dims), global_size, lon, lat, points, area, mask));
           },
           "name"_a, "dims"_a, "global_size"_a, "lon"_a, "lat"_a, "points"_a = nb::none(), "area"_a = nb::none(),
           "mask"_a = nb::none())
      .def_ro("name", &estuary::Grid::name)
      .def_ro("dims", &estuary::Grid::dims)
      .def_ro("global_size", &estuary::Grid::global_size)
      .def_prop_ro("size", &estuary::Grid::size)
      .def_prop_ro("lon", [](const estuary::Grid& g) { return to_numpy(std::vector<double>(g.lon)); }, nb::rv_policy::move)
      .def_prop_ro("lat", [](const estuary::Grid& g) { return to_numpy(std::vector<double>(g.lat)); }, nb::rv_policy::move)
      .def_prop_ro("area", [](const estuary::Grid& g) { return to_numpy(std::vector<double>(g.area)); }, nb::rv_policy::move)
      .def_prop_ro("mask", [](const estuary::Grid& g) { return to_numpy(std::vector<std::int32_t>(g.mask)); }, nb::rv_policy::move)
      .def_prop_ro("points", [](const estuary::Grid& g) { return to_numpy(std::vector<i64>(g.points)); }, nb::rv_policy::move);

  nb::class_<estuary::GridGen>(m, "GridGen", "A grid recipe: builds any rank's share of a grid.")
      .def_static("lonlat", &estuary::GridGen::lonlat, "nlon"_a, "nlat"_a)
      .def_static("gaussian", &estuary::GridGen::gaussian, "nlon"_a, "nlat"_a)
      .def_static("reduced_gaussian", &estuary::GridGen::reduced_gaussian, "n"_a)
      .def_static("t799", &estuary::GridGen::t799)
      .def_static("tripolar", &estuary::GridGen::tripolar, "nx"_a, "ny"_a)
      .def_static("orca025", &estuary::GridGen::orca025)
      .def_static("cubed_sphere", &estuary::GridGen::cubed_sphere, "n"_a)
      .def_static("from_name", &estuary::GridGen::from_name, "recipe"_a,
                  "A recipe by its name: lonlat:NLONxNLAT, gaussian:NLONxNLAT, tripolar:NXxNY, reduced_gaussian:N, "
                  "cubed_sphere:N, t799, orca025, each with an optional +land (the core reads the names).")
      .def_static("recipe_forms", &estuary::GridGen::recipe_forms, "The recipe names from_name reads.")
      .def("with_land", &estuary::GridGen::with_land)
      .def_prop_ro("name", &estuary::GridGen::name)
      .def_prop_ro("dims", &estuary::GridGen::dims)
      .def_prop_ro("size", &estuary::GridGen::size)
      .def("make", [](const estuary::GridGen& g) { return g.make(); }, "Every point.")
      .def("make", [](const estuary::GridGen& g, const estuary::Decomp& d) { return g.make(d); }, "part"_a,
           "The points `part` holds, in its local order.");

  def_point_weights<estuary::GridGen>(m, "Collective: inverse-distance weights (CDO remapdis) for the dst points this rank holds.",
                                      "Collective: bilinear weights (CDO remapbil) for the dst points this rank holds.");

  m.def(
      "bicubic_weights",
      [](const estuary::Grid& src, const estuary::Grid& dst, PyComm comm) {
        estuary::BicubicWeights b;
        {
          nb::gil_scoped_release release;
          b = estuary::bicubic_weights(src, dst, comm.comm);
        }
        std::vector<double> flat;
        flat.reserve(4 * b.columns.size());
        for (const auto& c : b.columns) flat.insert(flat.end(), c.begin(), c.end());
        const std::size_t n = b.columns.size();
        auto* data = new std::vector<double>(std::move(flat));
        nb::capsule owner(data, [](void* q) noexcept { delete static_cast<std::vector<double>*>(q); });
        nb::ndarray<nb::numpy, double, nb::ndim<2>> cols(data->data(), {n, 4}, owner);
        return nb::make_tuple(links_to_py(std::move(b.value)), cols, links_to_py(std::move(b.links)));
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(),
      "Collective: bicubic weights (CDO genbic) for the dst points this rank holds, from each rank's share "
      "of the source grid (an estuary.Grid): ((rows, cols, value "
      "weights), the 4 weight columns as an (n, 4) array, (rows, cols, weights) folded with CDO's "
      "source gradients).");

  m.def(
      "conservative_weights",
      [](const estuary::Grid& src, const estuary::Grid& dst, PyComm comm, int order, const std::string& normalization) {
        estuary::ConservativeOptions o;
        o.order = order;
        if (normalization == "fracarea") o.normalization = estuary::ConservNormalization::fracarea;
        else if (normalization == "destarea") o.normalization = estuary::ConservNormalization::destarea;
        else if (normalization == "none") o.normalization = estuary::ConservNormalization::none;
        else
          throw estuary::Error("normalization \"" + normalization + "\" is not fracarea, destarea or none",
                               "conservative_weights");
        estuary::ConservativeWeights w;
        {
          nb::gil_scoped_release release;
          w = estuary::conservative_weights(src, dst, comm.comm, o);
        }
        return nb::make_tuple(to_numpy(std::move(w.links.row)), to_numpy(std::move(w.links.col)),
                              to_numpy(std::move(w.links.weight)), to_numpy(std::move(w.dst_frac)),
                              to_numpy(std::move(w.dst_area)));
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(), "order"_a = 1, "normalization"_a = "fracarea",
      "Collective: conservative weights (CDO gencon; order 2: with gradients) for the dst cells this rank "
      "holds, from each rank's share of the source cells. Returns (rows, cols, weights, dst_frac, dst_area).");

  m.def(
      "stack_weights",
      [](const estuary::Grid& src, const estuary::Grid& dst, PyComm comm, const std::string& stack) {
        const std::vector<estuary::StackStage> stages = estuary::stack_from_text(stack, "stack_weights");
        estuary::StackWeights w;
        {
          nb::gil_scoped_release release;
          w = estuary::stack_weights(src, dst, comm.comm, stages);
        }
        nb::object fixed = w.has_fixed ? nb::cast(w.fixed_value) : nb::none();
        return nb::make_tuple(links_to_py(std::move(w.links)), fixed, w.filled, estuary::describe(stages));
      },
      // stack with a default (an empty stack is refused by the core) so that the signature, and its
      // stub, keeps Python's rule: no parameter without a default after one with a default.
      "src"_a, "dst"_a, "comm"_a = nb::none(), "stack"_a = "",
      "Collective: an interpolation stack (YAC-style; e.g. \"bilinear | nnn n=4 | creep steps=2 | fixed value=-999\") "
      "for the dst points this rank holds, from each rank's share of the source grid. Returns ((rows, cols, "
      "weights), the fixed value or None, targets filled per stage, the stack's canonical text).");

  // ---- the coupler ----
  m.def(
      "oasis_partition",
      [](IdxArray ig_paral, i64 global_size) {
        return estuary::oasis_partition(std::span<const i64>(ig_paral.data(), ig_paral.size()), global_size);
      },
      "ig_paral"_a, "global_size"_a, "The Decomp of an OASIS ig_paral array (0-based offsets).");
  m.def(
      "oasis_partition_global_size",
      [](IdxArray ig_paral, PyComm comm) {
        return estuary::oasis_partition_global_size(std::span<const i64>(ig_paral.data(), ig_paral.size()), comm.comm);
      },
      "ig_paral"_a, "comm"_a,
      "Collective over comm: the global size OASIS infers for a partition defined without one (the largest "
      "index end of the ig_paral arrays over the ranks of comm; MPI.COMM_NULL: this rank's). The same rule "
      "as the C API's and Fortran's.");

  nb::class_<estuary::Component>(m, "Component", "A coupled component (collective over the world).")
      .def(
          "__init__",
          [](estuary::Component* self, const std::string& name, const std::string& config, const std::string& directory,
             PyComm world, bool setup_only, bool coupled) {
            estuary::ComponentOptions o;
            o.config = config;
            o.directory = directory;
            o.world = world.comm;
            o.setup_only = setup_only;
            o.coupled = coupled;  // OASIS's coupled flag (ComponentOptions::coupled)
            nb::gil_scoped_release release;
            new (self) estuary::Component(name, o);
          },
          "name"_a, "config"_a = "", "directory"_a = "", "world"_a = nb::none(), "setup_only"_a = false,
          "coupled"_a = true)
      .def_prop_ro("name", &estuary::Component::name)
      .def_prop_ro("comm", [](const estuary::Component& c) { return PyComm{c.comm()}; })
      .def("def_partition", &estuary::Component::def_partition, "decomp"_a, "name"_a = "")
      .def("partition_size", &estuary::Component::partition_size, "partition"_a)
      .def("def_grid", &estuary::Component::def_grid, "name"_a, "partition"_a, "grid"_a)
      .def(
          "def_var",
          [](estuary::Component& c, const std::string& name, int part, bool out, int bundle) {
            return c.def_var(name, part, out ? estuary::Direction::out : estuary::Direction::in, bundle);
          },
          "name"_a, "partition"_a, "out"_a, "bundle"_a = 1)
      .def(
          "register_weights",
          [](estuary::Component& c, const std::string& name, nb::callable fn) {
            // Called from enddef (GIL released there): the wrapper takes the GIL back, hands the
            // query over as numpy arrays (copies) and converts the returned (rows, cols, weights).
            c.register_weights(name, [fn](const estuary::WeightQuery& q) {
              nb::gil_scoped_acquire gil;
              const auto vec = [](auto sp) {
                return to_numpy(std::vector<std::remove_const_t<typename decltype(sp)::element_type>>(sp.begin(), sp.end()));
              };
              nb::dict d;
              d["coupling"] = q.coupling;
              d["src_lon"] = vec(q.src_lon);
              d["src_lat"] = vec(q.src_lat);
              d["src_mask"] = vec(q.src_mask);
              d["dst_index"] = vec(q.dst_index);
              d["dst_lon"] = vec(q.dst_lon);
              d["dst_lat"] = vec(q.dst_lat);
              try {
                nb::object r = fn(d);
                auto t = nb::cast<std::tuple<IdxArray, IdxArray, InArray>>(r);
                return links_from(std::get<0>(t), std::get<1>(t), std::get<2>(t));
              } catch (const nb::python_error& e) {
                throw estuary::Error(std::string("Python raised ") + e.what(), "weight function " + q.coupling);
              } catch (const nb::cast_error&) {
                throw estuary::Error("the weight function did not return (rows, cols, weights), three 1-D arrays "
                                     "(int64, int64, float64)",
                                     "weight function " + q.coupling);
              }
            });
          },
          "name"_a, "fn"_a,
          "SCRIPR CALLBACK (YAML scripr: {method: callback, name: NAME}): fn(query) -> (rows, cols, weights), "
          "global indices; query: dict of coupling, src_lon, src_lat, src_mask (every source point), dst_index, "
          "dst_lon, dst_lat (this rank's targets). Register on the target's ranks before enddef.")
      .def("enddef", [](estuary::Component& c) {
        nb::gil_scoped_release release;
        c.enddef();
      })
      .def(
          "put",
          [](estuary::Component& c, int var, double time, InArray values, std::optional<std::vector<InArray>> gradients,
             std::optional<InArray> fraction) {
            // estuary::PutExtras: the model's gradients (OASIS's fld2..fld4) or a fractional
            // mask (YAC's yac_cput_frac). A given fraction is given even when empty (a rank
            // without points): the span must not be null then.
            static const double none = 0;
            estuary::PutExtras extra;
            if (gradients)
              for (const InArray& g : *gradients) extra.gradients.push_back(span_of(g));
            if (fraction) extra.fraction = {fraction->data() ? fraction->data() : &none, fraction->size()};
            nb::gil_scoped_release release;
            return static_cast<int>(c.put(var, time, span_of(values), extra));
          },
          "var"_a, "time"_a, "values"_a, "gradients"_a = nb::none(), "fraction"_a = nb::none(),
          "gradients: the model's source gradients, one array per extra weight column (OASIS's fld2..fld4); "
          "fraction: YAC's fractional mask, values in [0, 1] (the target gets W (f x) / W f).")
      .def(
          "get",
          [](estuary::Component& c, int var, double time, OutArray values) {
            nb::gil_scoped_release release;
            return static_cast<int>(c.get(var, time, span_of(values)));
          },
          "var"_a, "time"_a, "values"_a.noconvert())
      .def("terminate", [](estuary::Component& c) {
        nb::gil_scoped_release release;
        c.terminate();
      })
      .def("last_source_integral", &estuary::Component::last_source_integral, "var"_a)
      .def_prop_ro("runtime", [](const estuary::Component& c) { return static_cast<double>(c.setup().runtime); },
                   "The run length of the configuration (seconds), after enddef.")
      .def(
          "schedules",
          [](const estuary::Component& c) {
            nb::list out;
            for (const estuary::CouplingSchedules& cs : c.schedules()) {
              nb::list exchanges;
              for (const estuary::CouplingExchange& e : cs.exchanges) {
                const auto messages = [](const std::vector<estuary::CouplingExchange::Message>& ms) {
                  std::vector<std::tuple<int, int, i64>> v;  // (stage, world peer, elements per value field)
                  for (const auto& x : ms) v.emplace_back(x.stage, x.peer, x.count);
                  return v;
                };
                nb::dict d;
                d["name"] = e.name;
                d["algorithm"] = e.algorithm;
                d["stats"] = schedule_stats_dict(e.stats);
                d["sends"] = messages(e.sends);
                d["recvs"] = messages(e.recvs);
                exchanges.append(d);
              }
              nb::dict d;
              d["label"] = cs.label;
              d["src_component"] = cs.src_component;
              d["dst_component"] = cs.dst_component;
              d["values"] = cs.values;
              d["location"] = cs.location;
              d["order"] = cs.order;
              d["member"] = cs.member;
              d["exchanges"] = exchanges;
              out.append(d);
            }
            return out;
          },
          "After enddef, local: per configured coupling, its label and the exchanges its Remap runs (name, "
          "algorithm, this rank's schedule stats, and (stage, world peer, elements per value field) of every "
          "message sent and received).")
      .def("timers", [](const estuary::Component& c) {
        nb::list out;
        for (const auto& t : c.timers()) {
          nb::dict d;
          d["field"] = t.field;
          d["puts"] = t.puts;
          d["gets"] = t.gets;
          d["exchanges"] = t.exchanges;
          d["put_s"] = t.put_s;
          d["get_s"] = t.get_s;
          d["wait_s"] = t.wait_s;
          d["remap_s"] = t.remap_s;
          out.append(d);
        }
        return out;
      });

  // ---- OASIS3-MCT's run-time queries and communicators (Component::put_inquire ...;
  // estuary/couple.py gives them pyOASIS's names). Added to the class after its definition. ----
  {
    const nb::handle cls = nb::type<estuary::Component>();
    using C = estuary::Component;
    nb::cpp_function_def<C>(
        [](C& c, PyComm comm) { c.set_couplcomm(comm.comm); }, nb::scope(cls), nb::name("set_couplcomm"),
        nb::is_method(), "couplcomm"_a,
        "oasis_set_couplcomm: before enddef, the component's ranks that couple are those of couplcomm "
        "(MPI.COMM_NULL on the others).");
    nb::cpp_function_def<C>([](const C& c) { return PyComm{c.coupling_comm()}; }, nb::scope(cls),
                            nb::name("coupling_comm"), nb::is_method(),
                            "The communicator given to set_couplcomm, else the component's.");
    nb::cpp_function_def<C>([](const C& c) { return c.coupling_rank(); }, nb::scope(cls), nb::name("coupling_rank"),
                            nb::is_method(), "False on the ranks set_couplcomm left out.");
    nb::cpp_function_def<C>([](const C& c, int var, double time) { return static_cast<int>(c.put_inquire(var, time)); },
                            nb::scope(cls), nb::name("put_inquire"), nb::is_method(), "var"_a, "time"_a,
                            "oasis_put_inquire: the info code a put at `time` would return.");
    nb::cpp_function_def<C>([](const C& c, int var) { return c.get_ncpl(var); }, nb::scope(cls), nb::name("get_ncpl"),
                            nb::is_method(), "var"_a, "oasis_get_ncpl: the couplings the field takes part in.");
    nb::cpp_function_def<C>(
        [](const C& c, int var, bool out) {
          return c.get_freqs(var, out ? estuary::Direction::out : estuary::Direction::in);
        },
        nb::scope(cls), nb::name("get_freqs"), nb::is_method(), "var"_a, "out"_a,
        "oasis_get_freqs: their periods (seconds), in the configuration's order.");
    // Collective over the coupling ranks of the components concerned: without the GIL. The
    // intercommunicator goes back as a Fortran handle (couple.py makes an MPI.Intercomm of it).
    nb::cpp_function_def<C>(
        [](const C& c, const std::string& other) {
          MPI_Comm out = MPI_COMM_NULL;
          {
            nb::gil_scoped_release release;
            out = c.get_intercomm(other);
          }
          return static_cast<int>(MPI_Comm_c2f(out));
        },
        nb::scope(cls), nb::name("get_intercomm"), nb::is_method(), "other"_a,
        "oasis_get_intercomm: the Fortran handle of a new intercommunicator with component `other`.");
    nb::cpp_function_def<C>(
        [](const C& c, const std::string& other) {
          nb::gil_scoped_release release;
          return PyComm{c.get_intracomm(other)};
        },
        nb::scope(cls), nb::name("get_intracomm"), nb::is_method(), "other"_a,
        "oasis_get_intracomm: a new intracommunicator with component `other` (the caller may Free it).");
    nb::cpp_function_def<C>(
        [](const C& c, const std::vector<std::string>& names) {
          std::vector<int> roots;
          MPI_Comm out = MPI_COMM_NULL;
          {
            nb::gil_scoped_release release;
            out = c.get_multi_intracomm(names, &roots);
          }
          return std::make_pair(PyComm{out}, roots);
        },
        nb::scope(cls), nb::name("get_multi_intracomm"), nb::is_method(), "names"_a,
        "oasis_get_multi_intracomm: (new intracommunicator, each name's root rank in it).");
    nb::cpp_function_def<C>([](const C& c) { return c.debug_level(); }, nb::scope(cls), nb::name("debug_level"),
                            nb::is_method(), "oasis_get_debug.");
    nb::cpp_function_def<C>([](C& c, int level) { c.set_debug_level(level); }, nb::scope(cls),
                            nb::name("set_debug_level"), nb::is_method(), "level"_a, "oasis_set_debug.");
  }

  // ---- OASIS grid files (grids.nc, masks.nc, areas.nc) and SCRIP grid files ----
  // The grid-writing calls are added to Component here, apart from its class definition above.
  // Arrays are 1-D in OASIS's order (x fastest; corners point fastest, corner slowest):
  // estuary.couple.Grid flattens pyOASIS-style (nx, ny) and (nx, ny, nc) arrays so.
  {
    using MaskArray = nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
    const nb::handle comp_cls = nb::type<estuary::Component>();
    nb::cpp_function_def([](estuary::Component& c) { return c.start_grids_writing(); }, nb::scope(comp_cls),
                         nb::name("start_grids_writing"), nb::is_method(),
                         "OASIS's oasis_start_grids_writing (local); returns 1.");
    nb::cpp_function_def(
        [](estuary::Component& c, const std::string& name, i64 nx, i64 ny, InArray lon, InArray lat, int partition) {
          c.write_grid(name, nx, ny, span_of(lon), span_of(lat), partition);
        },
        nb::scope(comp_cls), nb::name("write_grid"), nb::is_method(), "name"_a, "nx"_a, "ny"_a, "lon"_a, "lat"_a,
        "partition"_a = -1, "oasis_write_grid: centres, nx*ny values x fastest (partition -1) or the partition's points.");
    nb::cpp_function_def(
        [](estuary::Component& c, const std::string& name, i64 nx, i64 ny, int nc, InArray clo, InArray cla,
           int partition) { c.write_corner(name, nx, ny, nc, span_of(clo), span_of(cla), partition); },
        nb::scope(comp_cls), nb::name("write_corner"), nb::is_method(), "name"_a, "nx"_a, "ny"_a, "nc"_a, "clo"_a,
        "cla"_a, "partition"_a = -1, "oasis_write_corner: corners, point fastest and corner slowest.");
    nb::cpp_function_def(
        [](estuary::Component& c, const std::string& name, i64 nx, i64 ny, MaskArray mask, int partition) {
          c.write_mask(name, nx, ny, {mask.data(), mask.size()}, partition);
        },
        nb::scope(comp_cls), nb::name("write_mask"), nb::is_method(), "name"_a, "nx"_a, "ny"_a, "mask"_a,
        "partition"_a = -1, "oasis_write_mask: int32, OASIS's convention (1 = masked).");
    nb::cpp_function_def(
        [](estuary::Component& c, const std::string& name, i64 nx, i64 ny, InArray area, int partition) {
          c.write_area(name, nx, ny, span_of(area), partition);
        },
        nb::scope(comp_cls), nb::name("write_area"), nb::is_method(), "name"_a, "nx"_a, "ny"_a, "area"_a,
        "partition"_a = -1, "oasis_write_area: cell areas (m^2 or rad^2).");
    nb::cpp_function_def([](estuary::Component& c) { c.terminate_grids_writing(); }, nb::scope(comp_cls),
                         nb::name("terminate_grids_writing"), nb::is_method(),
                         "OASIS's oasis_terminate_grids_writing (local); the files are written at enddef.");

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
          return d;
        },
        "path"_a, "grid"_a = "",
        "Local: a SCRIP or OASIS grid file's description (format, name, dims, size, ncorner, mask, area).");
    m.def("oasis_grid_names", &estuary::oasis_grid_names, "path"_a, "The grid prefixes of an OASIS grids.nc.");
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
        "it; grid: the prefix, '' for the only one). corners/mask/area: required (else estuary.Error).");
    def_point_weights<estuary::Grid>(m, "Collective: as above with each rank's share of the source grid (an estuary.Grid).",
                                     "Collective: as above with each rank's share of the source grid (an estuary.Grid).");
  }
  // ---- end of OASIS grid files ----

  m.def(
      "read_coupling_config",
      [](const std::string& path) {
        const estuary::CouplingSetup setup = estuary::read_coupling_config(path);
        const auto grid = [](const estuary::GridRef& g) {
          nb::dict d;
          d["name"] = g.name;
          d["nx"] = g.nx;
          d["ny"] = g.ny;
          d["periodicity"] = g.periodicity == estuary::Periodicity::periodic ? "P" : "R";
          d["overlap"] = g.overlap;
          return d;
        };
        const auto blas = [](const std::optional<estuary::BlasSpec>& b) -> nb::object {
          if (!b) return nb::none();
          nb::dict d;
          d["scale"] = b->scale;
          d["add"] = b->add;
          return d;
        };
        nb::list couplings;
        for (const estuary::CouplingConfig& c : setup.couplings) {
          nb::dict d;
          const auto colon = c.origin.rfind(':');
          d["line"] = colon == std::string::npos ? 0 : std::atoi(c.origin.c_str() + colon + 1);
          d["src_fields"] = c.src_fields;
          d["dst_fields"] = c.dst_fields;
          d["period"] = c.period;
          d["lag"] = c.lag;
          d["seq"] = c.seq;
          d["status"] = std::string(estuary::name_of(c.status));
          d["restart_file"] = c.restart_file;
          d["input_file"] = c.input_file;
          d["src_grid"] = grid(c.src_grid);
          d["dst_grid"] = grid(c.dst_grid);
          d["src_component"] = c.src_component;
          d["dst_component"] = c.dst_component;
          d["origin"] = c.origin;
          d["transforms"] = c.transforms;
          d["loctrans"] = c.loctrans ? nb::object(nb::str(estuary::name_of(*c.loctrans))) : nb::none();
          if (c.mapping) {
            nb::dict mp;
            mp["file"] = c.mapping->file;
            mp["location"] = c.mapping->location == estuary::RemapLocation::src ? "src" : "dst";
            mp["order"] = c.mapping->order == estuary::RemapOrder::bfb ? "bfb" : "sum";
            d["mapping"] = mp;
          } else {
            d["mapping"] = nb::none();
          }
          if (c.scripr) {
            const estuary::ScriprSpec& s = *c.scripr;
            nb::dict sc;
            sc["method"] = s.method;
            sc["nearest_fill"] = s.nearest_fill;
            sc["grid_type"] = s.grid_type;
            sc["field_type"] = s.field_type;
            sc["restriction"] = s.restriction;
            sc["bins"] = s.bins;
            sc["neighbors"] = s.method == "DISTWGT" || s.method == "GAUSWGT" || s.method.rfind("LOCC", 0) == 0 ? s.neighbors : 0;
            sc["variance"] = s.variance;
            sc["normalization"] = s.normalization;
            sc["order"] = s.order;
            d["scripr"] = sc;
          } else {
            d["scripr"] = nb::none();
          }
          nb::list stages;
          for (const estuary::StageSpec& st : c.interpolation) {
            nb::dict sd, params;
            for (const auto& [k, v] : st.params) params[k.c_str()] = v;
            sd["name"] = st.name;
            sd["params"] = params;
            stages.append(sd);
          }
          d["interpolation"] = stages;
          if (c.conserv) {
            nb::dict cs;
            cs["mode"] = std::string(estuary::name_of(c.conserv->mode));
            cs["method"] = std::string(estuary::name_of(c.conserv->method));
            d["conserv"] = cs;
          } else {
            d["conserv"] = nb::none();
          }
          d["blasold"] = blas(c.blasold);
          d["blasnew"] = blas(c.blasnew);
          d["checkin"] = c.checkin;
          d["checkout"] = c.checkout;
          couplings.append(d);
        }
        nb::dict out;
        out["path"] = setup.path;
        out["runtime"] = setup.runtime;
        out["nfields"] = setup.nfields < 0 ? nb::object(nb::none()) : nb::object(nb::int_(setup.nfields));
        out["log_level"] = setup.log_level;
        out["timeline"] = setup.timeline;  // timeline: the coupling timeline switch (as read; ESTUARY_TIMELINE applies at enddef)
        out["notes"] = setup.notes;
        out["couplings"] = couplings;
        return out;
      },
      "path"_a,
      "A coupling configuration (namcouple or YAML) as a dict: path, runtime, nfields (namcouple), "
      "log_level, timeline (the coupling timeline switch), notes (what was skipped or read differently, for the log) and couplings, each "
      "with line, fields, period, lag, seq, status, restart/input file, grids {name, nx, ny, "
      "periodicity, overlap}, transforms and their settings (loctrans, mapping, scripr, conserv, "
      "blasold, blasnew, checkin, checkout). Raises estuary.Error naming the file and line.");

  m.def("info_name", [](int i) { return std::string(estuary::name_of(static_cast<estuary::Info>(i))); }, "info"_a,
        "OASIS's name of an info code (\"Sent\", \"Recvd\", ...).");

  // ---- the I/O server ----
  bind_io(m, error);
}
