// The coupler (estuary/couple.hpp): Component, OASIS partitions, info codes. estuary/couple.py is
// the pyOASIS-shaped layer over these.
#include "estuary/couple.hpp"
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
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
#include "estuary/decomp.hpp"
#include "estuary/grid.hpp"

#include "bindings.hpp"

namespace estuary::py {

void bind_couple(nb::module_& m) {
  m.def(
      "oasis_partition",
      [](IdxArray ig_paral, i64 global_size) {
        return estuary::oasis_partition(std::span<const i64>(ig_paral.data(), ig_paral.size()), global_size);
      },
      "ig_paral"_a, "global_size"_a,
      "Local: the Decomp of an OASIS partition.\n\n"
      "ig_paral: OASIS's ig_paral array (int64; serial [0, 0, size], apple [1, offset, size], box [2, "
      "offset, nx, ny, global_nx], orange [3, nseg, offset, extent, ...], points [4, npts, index, ...]; "
      "0-based offsets).\n"
      "global_size: the number of points of the whole grid.\n"
      "Raises estuary.Error naming the entry for a malformed array or points outside [0, global_size).");
  m.def(
      "oasis_partition_global_size",
      [](IdxArray ig_paral, PyComm comm) {
        return estuary::oasis_partition_global_size(std::span<const i64>(ig_paral.data(), ig_paral.size()), comm.comm);
      },
      "ig_paral"_a, "comm"_a,
      "Collective over comm: the global size OASIS infers for a partition defined without one (the largest "
      "index end of the ig_paral arrays over the ranks of comm; MPI.COMM_NULL: this rank's). The same rule "
      "as the C API's and Fortran's.\n\n"
      "ig_paral: this rank's OASIS ig_paral array (int64; see oasis_partition).\n"
      "comm: the ranks that define the partition (an mpi4py communicator).\n"
      "Raises estuary.Error for a malformed array.");

  nb::class_<estuary::Component>(
      m, "Component",
      "A coupled component, the low-level one (estuary.couple.Component is the pyOASIS-shaped layer over "
      "it, and gives it as .native). Component(name, config, directory, world, setup_only, coupled) is "
      "collective over world: every rank of it constructs exactly one. Fields are ids from def_var; values "
      "are float64 arrays in the partition's local order; times are seconds since the run's start.")
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
          "coupled"_a = true,
          "Collective over world: joins the coupled run as component `name`.\n\n"
          "name: the component's name (as the configuration names it; the ranks with one name form it).\n"
          "config: the namcouple or YAML file (\"\": $ESTUARY_CONFIG, else estuary.yaml, else namcouple).\n"
          "directory: where restarts, outputs and logs go (\"\": the working directory).\n"
          "world: the mpi4py communicator of the coupled run (None: MPI.COMM_WORLD).\n"
          "setup_only: set up every coupling at enddef but move nothing (put and get raise).\n"
          "coupled: OASIS's flag; False leaves the component out of the coupling (its puts and gets do "
          "nothing).\n"
          "Raises estuary.Error (on every rank) for an MPI failure.")
      .def_prop_ro("name", &estuary::Component::name, "The component's name.")
      .def_prop_ro(
          "comm", [](const estuary::Component& c) { return PyComm{c.comm()}; },
          "The component's own ranks (an mpi4py communicator owned by estuary: do not free it).")
      .def("def_partition", &estuary::Component::def_partition, "decomp"_a, "name"_a = "",
           "Local: defines a partition, the points this rank holds of a grid; returns its id.\n\n"
           "decomp: this rank's points (an estuary.Decomp, e.g. oasis_partition(ig_paral, n)).\n"
           "name: matches the partition across ranks (\"\": by the order of definition).")
      .def("partition_size", &estuary::Component::partition_size, "partition"_a,
           "Local: the number of points this rank holds of the partition with id `partition`.")
      .def("def_grid", &estuary::Component::def_grid, "name"_a, "partition"_a, "grid"_a,
           "Local: the cells of grid `name` at a partition's points, for SCRIPR and CONSERV couplings.\n\n"
           "name: the grid's name in the configuration.\n"
           "partition: the partition id (def_partition).\n"
           "grid: the cells in the partition's local order (an estuary.Grid: lon, lat in degrees; corners, "
           "mask 1 = valid, area optional).\n"
           "Raises estuary.Error when the grid's size is not the partition's.")
      .def(
          "def_var",
          [](estuary::Component& c, const std::string& name, int part, bool out, int bundle) {
            return c.def_var(name, part, out ? estuary::Direction::out : estuary::Direction::in, bundle);
          },
          "name"_a, "partition"_a, "out"_a, "bundle"_a = 1,
          "Local: defines a coupling field; returns its id.\n\n"
          "name: the field's name in the configuration.\n"
          "partition: the partition id it lives on (def_partition).\n"
          "out: True for a field this component puts (OASIS_OUT), False for one it gets (OASIS_IN).\n"
          "bundle: values per point (a bundle moves as one field, members slowest).\n"
          "Raises estuary.Error for an unknown partition or bundle < 1.")
      .def(
          "register_weights",
          [](estuary::Component& c, const std::string& name, nb::typed<nb::callable, nb::object(PyDict)> fn) {
            // Called from enddef (GIL released there): the wrapper takes the GIL back, hands the
            // query over as numpy arrays (copies) and converts the returned (rows, cols, weights).
            c.register_weights(name, [fn](const estuary::WeightQuery& q) {
              nb::gil_scoped_acquire gil;
              const auto vec = [](auto sp) {
                return to_numpy(
                    std::vector<std::remove_const_t<typename decltype(sp)::element_type>>(sp.begin(), sp.end()));
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
                throw estuary::Error(
                    "the weight function did not return (rows, cols, weights), three 1-D arrays "
                    "(int64, int64, float64)",
                    "weight function " + q.coupling);
              }
            });
          },
          "name"_a, "fn"_a,
          "SCRIPR CALLBACK (YAML scripr: {method: callback, name: NAME}): fn(query) -> (rows, cols, weights), "
          "global indices; query: dict of coupling, src_lon, src_lat, src_mask (every source point), dst_index, "
          "dst_lon, dst_lat (this rank's targets; degrees). Register on the target's ranks before enddef.\n\n"
          "name: the weight function's name in the configuration.\n"
          "fn: the Python callable. An exception it raises becomes estuary.Error at enddef, naming the "
          "coupling.")
      .def(
          "enddef",
          [](estuary::Component& c) {
            nb::gil_scoped_release release;
            c.enddef();
          },
          "Collective over the world: reads the configuration, matches every field with it, sets up every "
          "coupling (reading or generating weights) and reads restarts. Raises estuary.Error naming the file "
          "and line, the field or the component at fault.")
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
          "oasis_put: hands a field's values over at model time `time`; returns OASIS's info code as an "
          "int (estuary.couple.OasisParameters names it).\n\n"
          "var: the field id (def_var, an output field).\n"
          "time: the model time, seconds since the start of the run.\n"
          "values: bundle * partition size float64 values in the partition's local order.\n"
          "gradients: the model's source gradients, one array per extra weight column (OASIS's fld2..fld4); "
          "fraction: YAC's fractional mask, values in [0, 1] (the target gets W (f x) / W f).\n"
          "Raises estuary.Error for a time that is not a coupling step's, a wrong size, or an input field.")
      .def(
          "get",
          [](estuary::Component& c, int var, double time, OutArray values) {
            nb::gil_scoped_release release;
            return static_cast<int>(c.get(var, time, span_of(values)));
          },
          "var"_a, "time"_a, "values"_a.noconvert(),
          "oasis_get: receives a field's values at model time `time` into `values` (in place, when the "
          "info code says something arrived); returns OASIS's info code as an int.\n\n"
          "var: the field id (def_var, an input field).\n"
          "time: the model time, seconds since the start of the run.\n"
          "values: a contiguous, writable float64 array of bundle * partition size values.\n"
          "Raises TypeError for another array, estuary.Error for a wrong size, an output field or a partner "
          "that does not answer within the time-out.")
      .def(
          "terminate",
          [](estuary::Component& c) {
            nb::gil_scoped_release release;
            c.terminate();
          },
          "Collective over the world: finishes the transfers in flight, writes restarts and the timer "
          "summary.")
      .def("last_source_integral", &estuary::Component::last_source_integral, "var"_a,
           "Local, target side of a CONSERV coupling: the source integral (sum of value x area over valid "
           "points) of the last get of field id `var`; 0 before any.")
      .def_prop_ro(
          "runtime", [](const estuary::Component& c) { return static_cast<double>(c.setup().runtime); },
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
            return PyDictList(std::move(out));
          },
          "After enddef, local: per configured coupling, its label and the exchanges its Remap runs (name, "
          "algorithm, this rank's schedule stats, and (stage, world peer, elements per value field) of every "
          "message sent and received).")
      .def(
          "timers",
          [](const estuary::Component& c) {
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
              d["copy_s"] = t.copy_s;
              d["sync_s"] = t.sync_s;
              d["product_s"] = t.product_s;
              d["pack_s"] = t.pack_s;
              d["wire_s"] = t.wire_s;
              d["unpack_s"] = t.unpack_s;
              out.append(d);
            }
            return PyDictList(std::move(out));
          },
          "Local: per field, a dict of field, puts, gets, exchanges (counts) and put_s, get_s, wait_s, remap_s "
          "and their breakdown copy_s, sync_s, product_s, pack_s, wire_s, unpack_s (this rank's seconds; "
          "estuary::FieldTimers).");

  // ---- OASIS3-MCT's run-time queries and communicators (Component::put_inquire ...;
  // estuary/couple.py gives them pyOASIS's names). Added to the class after its definition. ----
  {
    const nb::handle cls = nb::type<estuary::Component>();
    using C = estuary::Component;
    nb::cpp_function_def<C>(
        [](C& c, PyComm comm) { c.set_couplcomm(comm.comm); }, nb::scope(cls), nb::name("set_couplcomm"),
        nb::is_method(), "couplcomm"_a,
        "oasis_set_couplcomm: before enddef, the component's ranks that couple are those of couplcomm, an "
        "mpi4py communicator (MPI.COMM_NULL on the others).");
    nb::cpp_function_def<C>([](const C& c) { return PyComm{c.coupling_comm()}; }, nb::scope(cls),
                            nb::name("coupling_comm"), nb::is_method(),
                            "The communicator given to set_couplcomm, else the component's (mpi4py).");
    nb::cpp_function_def<C>([](const C& c) { return c.coupling_rank(); }, nb::scope(cls), nb::name("coupling_rank"),
                            nb::is_method(), "Whether this rank couples: False on the ranks set_couplcomm left out.");
    nb::cpp_function_def<C>(
        [](const C& c, int var, double time) { return static_cast<int>(c.put_inquire(var, time)); }, nb::scope(cls),
        nb::name("put_inquire"), nb::is_method(), "var"_a, "time"_a,
        "oasis_put_inquire, after enddef: the info code (int) a put of field id `var` at `time` (seconds) would "
        "return, without putting.");
    nb::cpp_function_def<C>([](const C& c, int var) { return c.get_ncpl(var); }, nb::scope(cls), nb::name("get_ncpl"),
                            nb::is_method(), "var"_a,
                            "oasis_get_ncpl: the number of couplings field id `var` takes part in.");
    nb::cpp_function_def<C>(
        [](const C& c, int var, bool out) {
          return c.get_freqs(var, out ? estuary::Direction::out : estuary::Direction::in);
        },
        nb::scope(cls), nb::name("get_freqs"), nb::is_method(), "var"_a, "out"_a,
        "oasis_get_freqs: the periods (seconds) of the couplings field id `var` takes part in, in the "
        "configuration's order; out: True for an output field, False for an input one.");
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
        "oasis_get_intercomm, collective over the coupling ranks of both components: the Fortran handle of a new "
        "intercommunicator with component `other` (estuary.couple wraps it as an MPI.Intercomm).");
    nb::cpp_function_def<C>(
        [](const C& c, const std::string& other) {
          nb::gil_scoped_release release;
          return PyComm{c.get_intracomm(other)};
        },
        nb::scope(cls), nb::name("get_intracomm"), nb::is_method(), "other"_a,
        "oasis_get_intracomm, collective over the coupling ranks of both components: a new mpi4py "
        "intracommunicator with component `other` (the caller may Free it).");
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
        "oasis_get_multi_intracomm, collective over the coupling ranks of the components in `names` (this "
        "one among them): (a new mpi4py intracommunicator, each name's root rank in it).");
    nb::cpp_function_def<C>([](const C& c) { return c.debug_level(); }, nb::scope(cls), nb::name("debug_level"),
                            nb::is_method(),
                            "oasis_get_debug: the debug level ($NLOGPRT of the configuration, after enddef).");
    nb::cpp_function_def<C>([](C& c, int level) { c.set_debug_level(level); }, nb::scope(cls),
                            nb::name("set_debug_level"), nb::is_method(), "level"_a,
                            "oasis_set_debug: sets the debug level to `level` (kept; estuary's log does not "
                            "depend on it).");
  }

  m.def(
      "info_name", [](int i) { return std::string(estuary::name_of(static_cast<estuary::Info>(i))); }, "info"_a,
      "OASIS's name of the info code `info` that put and get return (\"Sent\" for 4, \"Recvd\" for 3, ...; "
      "\"?\" for an integer that is none).");
}

}  // namespace estuary::py
