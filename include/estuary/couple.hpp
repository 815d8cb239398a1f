// The coupler: components exchange fields through put and get, as in OASIS3-MCT (paper 000).
//
// Every rank of the coupled run (MPI_COMM_WORLD, or the communicator given) belongs to exactly
// one component; one executable may hold several components (ranks choose their name), and the
// components may be in separate executables launched together (mpirun -n 2 ./atm : -n 3 ./ocn).
// The call sequence is OASIS's:
//
//   estuary::Component comp("ocean");                  // collective over the world
//   MPI_Comm local = comp.comm();                      // the component's own ranks
//   int part = comp.def_partition(decomp);             // the points this rank holds
//   comp.def_grid("torc", part, grid);                 // optional: lon, lat, corners, mask, area
//   int sst = comp.def_var("SST", part, Direction::out);
//   comp.enddef();                                     // collective: builds every coupling
//   for (t = 0; t < runtime; t += dt) { comp.put(sst, t, values); comp.get(...); }
//   comp.terminate();                                  // collective: restarts, timers
//
// The configuration (YAML or namcouple, see couple_config.hpp) says which fields move where,
// how often, with what lag and transformations. Partitions, grids and fields are defined by
// the ranks that hold them (a grid may live on a subset of the component's ranks).
//
// Time: model seconds since the start of this run. A put at time t acts when t + lag is a
// multiple of the coupling period: what LOCTRANS made of the puts since the last action is
// transformed and sent, and the get at t + lag receives it. A put whose t + lag reaches the
// run length is kept for the next run (restart). Puts never block more than one coupling
// period ahead of the receiver; gets block until their data is there, at most the time-out
// (configuration `timeout`, or ESTUARY_COUPLE_TIMEOUT), after which the run stops with an
// error naming the field, the time, the partner component and the last time it put the field.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "estuary/couple_config.hpp"
#include "estuary/decomp.hpp"
#include "estuary/grid.hpp"
#include "estuary/oasis_partition.hpp"
#include "estuary/schedule.hpp"
#include "estuary/weights.hpp"

namespace estuary {

// The info codes OASIS3-MCT returns from put and get (same values), so ported models keep their
// checks.
enum class Info : int {
  ok = 0,             // nothing done at this time
  recvd = 3,          // get: received from the partner
  sent = 4,           // put: sent to the partner
  loctrans = 5,       // put: only accumulated (LOCTRANS) for a later coupling time
  torest = 6,         // put: kept in the restart file for the next run
  output = 7,         // put: written to the output file (OUTPUT)
  sentout = 8,        // put: sent and written (EXPOUT)
  torestout = 9,      // put: kept for restart and written (EXPOUT)
  fromrest = 10,      // get: from the restart file of the previous run
  input = 11,         // get: read from the input file (INPUT)
  recvout = 12,       // get: received and written (EXPOUT)
  fromrestout = 13,   // get: from the restart file and written (EXPOUT)
};
const char* name_of(Info i);  // "Sent", "Recvd", ... as OASIS names them

// ---- OASIS3-MCT's parameter values (mod_oasis_parameters), for code ported from OASIS: the
// directions of oasis_def_var (kinout), its types, its return codes. ----
namespace oasis {
inline constexpr int Ok = 0;          // OASIS_Ok
inline constexpr int Success = 0;     // OASIS_Success (OASIS's C bindings)
inline constexpr int Var_Uncpl = -1;  // OASIS_Var_Uncpl
inline constexpr int NotDef = -2;     // OASIS_NotDef
inline constexpr int Out = 20;        // OASIS_Out
inline constexpr int In = 21;         // OASIS_In
inline constexpr int InOut = 2;       // OASIS_InOut
inline constexpr int Real = 4;        // OASIS_Real
inline constexpr int Double = 8;      // OASIS_Double
}  // namespace oasis

enum class Direction { in, out };

// What a put may carry besides the values (Component::put's overload); spans of bundle *
// (partition size) values each, laid out as the values.
struct PutExtras {
  // OASIS's fld2..fld4: the model's own source gradients for a coupling whose weights have
  // several columns (a num_wgts 3 or 4 weight file, SCRIPR BICUBIC), in the order of the
  // columns 2.. (CONSERV SECOND: d/dlat, d/dlon; bicubic: d/di, d/dj, d2/didj). The target
  // gets W1 x + W2 g1 + W3 g2 (+ W4 g3) instead of the matrix folded with estuary's own (CDO's)
  // gradients. Give all of them or none.
  std::vector<std::span<const double>> gradients;
  // YAC's yac_cput_frac: the fraction (0..1) of each source value that is valid, changing at
  // every put. The target gets W (f x) / W f, and the unmapped value (0) where W f = 0; the
  // weights stay as they are. All fields of a coupling give one, or none.
  std::span<const double> fraction;
};

struct ComponentOptions {
  // The configuration file. Empty: $ESTUARY_CONFIG, else "estuary.yaml" in the working
  // directory if it exists, else "namcouple" (OASIS's name).
  std::string config;
  // Where restart, output and log files are read and written ("" = working directory).
  std::string directory;
  // The world of the coupled run: every rank of it constructs exactly one Component.
  MPI_Comm world = MPI_COMM_WORLD;
  // Set up only, to look at the couplings (`estuary inspect schedule --config`): enddef builds
  // every coupling and its Remap (generating weights if needed) but reads no restart and sends
  // nothing (no lagged first transfer); put and get throw. Logs and generated weights still go
  // to `directory`.
  bool setup_only = false;
  // OASIS's oasis_init_comp(..., coupled = .false.): the component takes no part in the coupling.
  // It is left out of the world of the coupled components (every rank of the world says whether
  // it couples, the same on every rank of a component), its enddef reads no configuration, and
  // its puts and gets do nothing (Info::ok).
  bool coupled = true;
};

// oasis_partition (OASIS ig_paral arrays as a Decomp) is in estuary/oasis_partition.hpp, included
// above: a decomposition, usable without the coupler.

// Per-field timers (seconds, this rank) and counts, for the summary at terminate.
struct FieldTimers {
  std::string field;
  int puts = 0, gets = 0, exchanges = 0;
  double put_s = 0, get_s = 0, wait_s = 0, remap_s = 0;
  // Where put_s or get_s went, finer (bench/pingpong's breakdown, docs/performance.md):
  //  copy_s     the user's values into the coupler's buffers (put) and out of them (get);
  //  sync_s     the protocol: announcing an action and checking its time, the source side's
  //             agreements, waiting for the partner's announcement (get) or for the last
  //             action's completion to be confirmed (put);
  //  product_s  the sparse products of the Remap (and its finalize);
  //  pack_s     the Remap's exchanges packing their send buffers (and their local copies);
  //  wire_s     the Remap's exchanges waiting for their messages;
  //  unpack_s   the Remap's exchanges unpacking what arrived.
  double copy_s = 0, sync_s = 0, product_s = 0, pack_s = 0, wire_s = 0, unpack_s = 0;
};

// One exchange of a coupling's Remap as this rank runs it at every coupling time: its schedule's
// counts (elements per value field; the coupling moves all its value fields in one exchange)
// and messages, with peers as ranks of the world.
struct CouplingExchange {
  std::string name;       // "gather" (source values to the link holders) or "after" (results or
                          // partial sums to the destination's ranks), as Remap::exchanges()
  std::string algorithm;  // of the schedule ("p2p": coupling needs a single stage)
  ScheduleStats stats;
  struct Message {
    int stage = 0, peer = 0;  // peer: world rank
    std::int64_t count = 0;   // elements per value field
  };
  std::vector<Message> sends, recvs;
};

// What a configured coupling moves, as this rank sees it (Component::schedules, after enddef).
struct CouplingSchedules {
  std::string label;                         // "SST -> A_SST (namcouple:12)"
  std::string src_component, dst_component;  // "" for INPUT (no source) or OUTPUT (no target)
  int values = 0;                            // value fields moved together (fields x bundles)
  std::string location, order;               // of the Remap: "src"/"dst", "bfb"/"sum" ("" if none)
  bool member = false;                       // this rank takes part (defines a field of a side)
  std::string shares_remap_of;               // label of the coupling whose Remap (weights, plans)
                                             // this one shares; "" if it set up its own
  std::vector<CouplingExchange> exchanges;   // in execution order; empty off the coupling and
                                             // for INPUT/OUTPUT (no Remap)
};

// YAC's callback interpolation: the weights of a SCRIPR CALLBACK coupling (YAML `scripr:
// {method: callback, name: NAME}`) come from a function the target component registers under
// NAME (Component::register_weights) before enddef. At enddef every rank holding target points
// calls it once with every source point's centre (global order; masked points included, see
// src_mask) and its own target points; it returns links (target, source, weight) by global
// index, for its own targets only. A link to a source index out of range or to a target the
// rank does not hold is an error naming the coupling and the rank.
struct WeightQuery {
  std::string coupling;                    // "A_F -> O_F (estuary.yaml:12)"
  std::span<const double> src_lon, src_lat;   // degrees, every source point, global order
  std::span<const std::int32_t> src_mask;     // 1 valid, 0 masked; empty: all valid
  std::span<const std::int64_t> dst_index;    // this rank's target points (global indices)
  std::span<const double> dst_lon, dst_lat;   // their centres, degrees
};
using WeightFunction = std::function<Links(const WeightQuery&)>;

class Component {
 public:
  // Collective over options.world.
  explicit Component(const std::string& name, ComponentOptions options = {});
  // Terminates if terminate() was not called (errors then go to stderr, not thrown).
  ~Component();
  Component(const Component&) = delete;
  Component& operator=(const Component&) = delete;

  const std::string& name() const;
  MPI_Comm comm() const;  // the component's ranks

  // Local (this rank's share): returns an id. `name` matches the partition across ranks; the
  // default names partitions by the order of definition.
  int def_partition(const Decomp& points, const std::string& name = "");
  std::int64_t partition_size(int partition) const;  // this rank's points of a partition
  // Local: the grid's cells at the partition's points, in its local order (lon, lat required;
  // corners, mask, area optional; dims {nx, ny} or {n}). Needed for SCRIPR (centres, mask)
  // and CONSERV (area, mask).
  void def_grid(const std::string& name, int partition, Grid grid);
  // ---- OASIS grid files (grids.nc, masks.nc, areas.nc; src/couple/grid_writing.cpp) ----
  // OASIS3-MCT's grid-writing calls, for models that describe their grids that way instead of
  // (or besides) def_grid. Local calls between start_grids_writing and terminate_grids_writing;
  // the files are written at enddef (collective over the world, all components together, each
  // file by one rank) in the run folder (ComponentOptions::directory), a variable only when the
  // file lacks it (OASIS never overwrites grid fields). A SCRIPR or CONSERV coupling whose grid
  // no rank gave with def_grid reads it from these files at enddef, as OASIS does.
  // Either one rank gives the whole grid (partition -1, OASIS's classic call: nx * ny values,
  // x fastest) or every rank holding points of a partition gives its points (partition id, as
  // OASIS 4/5's partid: the partition's size values in its local order). Corners: nc values per
  // point, point fastest and corner slowest (a Fortran (nx, ny, nc) or (npts, nc) array).
  // Masks use OASIS's convention: 1 = MASKED, 0 = valid (def_grid's Grid::mask is the reverse).
  // Areas as the model has them (m^2 or rad^2; see estuary/grid_files.hpp for the reading).
  bool start_grids_writing();  // OASIS's flag: always true (grids are always written)
  void write_grid(const std::string& name, std::int64_t nx, std::int64_t ny, std::span<const double> lon,
                  std::span<const double> lat, int partition = -1);
  void write_corner(const std::string& name, std::int64_t nx, std::int64_t ny, int nc, std::span<const double> clo,
                    std::span<const double> cla, int partition = -1);
  void write_mask(const std::string& name, std::int64_t nx, std::int64_t ny, std::span<const std::int32_t> mask,
                  int partition = -1);
  void write_area(const std::string& name, std::int64_t nx, std::int64_t ny, std::span<const double> area,
                  int partition = -1);
  void terminate_grids_writing();
  // ---- end of OASIS grid files ----
  // Local: a coupling field on a partition; `bundle` values per point (a bundle moves as one
  // field with an extra, slowest dimension: value (point i, member b) at b*size + i).
  int def_var(const std::string& name, int partition, Direction direction, int bundle = 1);
  // Local, before enddef: the weight function of the SCRIPR CALLBACK couplings that name it
  // (WeightQuery above); registered on the target component's ranks. A second registration of
  // a name replaces the first.
  void register_weights(const std::string& name, WeightFunction f);
  // Collective over the world: reads the configuration, matches every field with it, checks
  // that both sides agree, sets up every mapping and transfer, reads restarts.
  void enddef();

  // `values`: bundle * (partition size) values. Returns what was done (OASIS's info code).
  Info put(int var, double time, std::span<const double> values);
  // The same, with the model's gradients or a fractional mask (PutExtras). Every coupling the
  // field goes to must take them: gradients to a coupling whose weights have one column are an
  // error naming the field and the coupling.
  Info put(int var, double time, std::span<const double> values, const PutExtras& extra);
  Info get(int var, double time, std::span<double> values);

  // Collective over the world: finishes the transfers in flight, writes restarts (lagged
  // fields, partial LOCTRANS accumulations) and the timer summary.
  void terminate();

  const CouplingSetup& setup() const;  // after enddef
  // Local, after enddef: every configured coupling, in the configuration's order (the same list
  // on every rank), with the schedules of the exchanges its Remap runs.
  std::vector<CouplingSchedules> schedules() const;
  std::vector<FieldTimers> timers() const;
  // Target side of a CONSERV coupling: the source integral (sum of value x area over valid
  // points) of the last get of this field (of its first bundle member), 0 before any; for
  // diagnostics such as the demo's conservation error.
  double last_source_integral(int var) const;

  // ---- OASIS3-MCT's run-time queries, coupling communicator and communicators between
  // components (oasis_put_inquire, oasis_get_ncpl, oasis_get_freqs, oasis_set_couplcomm,
  // oasis_get_intercomm, oasis_get_intracomm, oasis_get_multi_intracomm, oasis_get/set_debug),
  // with OASIS's semantics; docs/user-guide.md lists every OASIS call next to estuary's. ----

  // oasis_set_couplcomm. Local, before enddef, on every rank of the component or on none: the
  // ranks of the component that take part in the coupling are those of `couplcomm` (a
  // communicator of this component's ranks, e.g. from create_couplcomm); the others pass
  // MPI_COMM_NULL. Ranks outside it define no fields, and the queries and communicators below
  // refuse to run there (OASIS aborts). Only this rank's membership and its rank in couplcomm
  // are kept: enddef makes estuary's own copy, so the caller may free couplcomm at any time.
  void set_couplcomm(MPI_Comm couplcomm);
  // The handle given to set_couplcomm (what OASIS's oasis_get_localcomm returns after
  // oasis_set_couplcomm; it may have been freed since), or comm() when it was never called.
  MPI_Comm coupling_comm() const;
  bool coupling_rank() const;  // false on the ranks set_couplcomm left out

  // oasis_put_inquire. Local, after enddef, on an output field: the info code a put of `var` at
  // `time` would return (Info::sent, loctrans, torest, output, sentout, torestout or ok), without
  // putting anything (estuary's put and put_inquire share the decision).
  Info put_inquire(int var, double time) const;
  // oasis_get_ncpl. Local, after enddef: the number of configured couplings (namcouple entries)
  // field `var` takes part in (0: it is not coupled).
  int get_ncpl(int var) const;
  // oasis_get_freqs. Local, after enddef: their coupling periods (seconds), in the
  // configuration's order; `direction` must be the field's own (OASIS's kinout).
  std::vector<double> get_freqs(int var, Direction direction) const;

  // oasis_get_intercomm. After enddef, collective over the coupling ranks of this component and
  // of component `other`: an intercommunicator between them (local group: this component's
  // coupling ranks in their coupling communicator's order). The caller frees it.
  MPI_Comm get_intercomm(const std::string& other) const;
  // oasis_get_intracomm: the same ranks merged into one intracommunicator; the component whose
  // first rank comes first in the world comes first (OASIS leaves the order to MPI).
  MPI_Comm get_intracomm(const std::string& other) const;
  // oasis_get_multi_intracomm. After enddef, collective over the coupling ranks of the
  // components named (this one among them; blank names are skipped): one intracommunicator of
  // them all, components in the order of their first world rank, each in its coupling
  // communicator's order. root_ranks (if given) gets, per name, the rank of that component's
  // root in the new communicator (-1 for a blank name). The caller frees it.
  MPI_Comm get_multi_intracomm(const std::vector<std::string>& names, std::vector<int>* root_ranks = nullptr) const;

  // oasis_get_debug / oasis_set_debug: the debug level, initially the configuration's $NLOGPRT
  // (0 before enddef and for YAML). Kept and returned; estuary's log does not depend on it.
  int debug_level() const;
  void set_debug_level(int level);

  // Whether a coupling of the configuration names `field` (as source or target; OASIS: "in the
  // namcouple"). OASIS's def_var of a field that none names returns OASIS_Var_Uncpl, and models
  // test for it (NEMO skips such fields); the OASIS-shaped def_var of the bindings does the same.
  bool in_configuration(const std::string& field) const;

  // Appends "error on rank R: message" to the component's log (estuary.NAME.log) from any rank:
  // the C and Fortran APIs record there every error they return through ierror.
  void log_error(const std::string& message) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace estuary
