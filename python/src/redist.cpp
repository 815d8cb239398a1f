// Redistribution (estuary/redist.hpp): Redist between two decompositions, its schedule.
#include "estuary/redist.hpp"
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>
#include "estuary/plan.hpp"
#include "estuary/types.hpp"

#include "bindings.hpp"

namespace estuary::py {

namespace {

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
        "Collective over the Redist's comm: moves one field from the source decomposition to the destination "
        "one.\n\n"
        "src: this rank's values, laid out as the source Decomp (its size elements), a contiguous numpy "
        "array of float64, float32, int32 or int64 (C or Fortran order: the memory order is the local order).\n"
        "dst: this rank's values in the destination Decomp, written in place: a contiguous, writable array "
        "of src's dtype.\n"
        "Raises TypeError for another dtype, a non-contiguous or read-only dst, and estuary.Error when a "
        "size differs from its Decomp's.");
}

std::vector<std::pair<int, i64>> peer_counts(const std::vector<estuary::PeerSegments>& ps) {
  std::vector<std::pair<int, i64>> out;
  for (const auto& p : ps) out.emplace_back(p.peer, p.count());
  return out;
}

}  // namespace

PyDict schedule_stats_dict(const estuary::ScheduleStats& s) {
  nb::dict d;
  d["stages"] = s.stages;
  d["messages_sent"] = s.messages_sent;
  d["messages_received"] = s.messages_received;
  d["elements_sent"] = s.elements_sent;
  d["elements_received"] = s.elements_received;
  d["elements_copied"] = s.elements_copied;
  d["largest_message"] = s.largest_message;
  d["smallest_message"] = s.smallest_message;
  return PyDict(std::move(d));
}

void bind_redist(nb::module_& m) {
  nb::class_<estuary::Redist> redist(
      m, "Redist",
      "Moves data between two decompositions of one global array: Redist(src, dst, comm, algorithm). The "
      "set-up (collective over comm) plans the messages once; run() then moves any number of fields, many "
      "times.\n\n"
      "src: this rank's Decomp of the data it has; dst: its Decomp of the data it wants (same global_size).\n"
      "comm: the mpi4py communicator (None: MPI.COMM_WORLD).\n"
      "algorithm: the exchange schedule (schedule_names(); \"\": $ESTUARY_SCHEDULE or p2p).\n"
      "Raises estuary.Error (on every rank) for decompositions of different global sizes or an unknown "
      "algorithm.");
  redist.def(
      "__init__",
      [](estuary::Redist* self, const estuary::Decomp& src, const estuary::Decomp& dst, PyComm comm,
         const std::string& algorithm) {
        estuary::RedistOptions o;
        o.algorithm = algorithm;
        nb::gil_scoped_release release;
        new (self) estuary::Redist(src, dst, comm.comm, o);
      },
      "src"_a, "dst"_a, "comm"_a = nb::none(), "algorithm"_a = "",
      "Collective over comm: plans the move from src to dst (see the class: src, dst, comm, algorithm).");
  def_redist_run<double>(redist);
  def_redist_run<float>(redist);
  def_redist_run<std::int32_t>(redist);
  def_redist_run<std::int64_t>(redist);
  redist
      .def(
          "schedule_stats", [](const estuary::Redist& r) { return schedule_stats_dict(r.schedule().stats()); },
          "Local: this rank's schedule counts, a dict of stages, messages_sent, messages_received, "
          "elements_sent, elements_received, elements_copied (to itself), largest_message and "
          "smallest_message (elements per field).")
      .def_prop_ro(
          "algorithm", [](const estuary::Redist& r) { return r.schedule().algorithm; },
          "The schedule's algorithm (a name of schedule_names()).")
      .def(
          "schedule_messages",
          [](const estuary::Redist& r) {
            std::vector<std::tuple<int, int, i64>> out;  // (stage, peer, elements) of each message sent
            const auto& stages = r.schedule().stages;
            for (std::size_t k = 0; k < stages.size(); ++k)
              for (const auto& m : stages[k].sends) out.emplace_back(static_cast<int>(k), m.peer, m.count());
            return out;
          },
          "Local: this rank's schedule, a list of (stage, peer rank in comm, elements per field) of every "
          "message it sends.")
      .def(
          "sends", [](const estuary::Redist& r) { return peer_counts(r.plan().sends()); },
          "Local: a list of (peer rank in comm, elements) this rank sends, itself included.")
      .def(
          "recvs", [](const estuary::Redist& r) { return peer_counts(r.plan().recvs()); },
          "Local: a list of (peer rank in comm, elements) this rank receives, itself included.")
      .def(
          "describe", [](const estuary::Redist& r) { return r.schedule().describe(); },
          "Local: the schedule as text (stages and messages), for logs.");
  m.def("schedule_names", &estuary::schedule_names,
        "The exchange schedules Redist's algorithm (and $ESTUARY_SCHEDULE) takes (a list of str).");
}

}  // namespace estuary::py
