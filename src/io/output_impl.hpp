// The I/O server's inside, shared by the files of Output (src/io/output*.cpp): the control
// messages and the catalog's packing, the grids, fields, transfers, variables and files of an
// output set, and Output::Impl, whose members are defined by concept:
//   output.cpp          the public calls: set-up, write (temporal operations), flush, close
//   output_catalog.cpp  the catalog the model sends the writers, axes, masks, variables, transfers
//   output_files.cpp    the netCDF files: create, write records, coordinates, close
//   output_signal.cpp   SIGTERM and write failures, agreed over the ranks
//   output_server.cpp   the servers' loop
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "common/mpi_util.hpp"
#include "common/time_accumulator.hpp"
#include "common/cf_calendar.hpp"
#include "estuary/io.hpp"
#include "estuary/redist.hpp"
#include "io/derived.hpp"
#include "io/io_detail.hpp"
#include "io/zoom.hpp"
#include "io/regrid.hpp"

namespace estuary::io {

using detail::Box;
using detail::FileWriter;
using detail::i64;

// The temporal operations are the time accumulator's (common/time_accumulator.hpp), which the
// coupler's LOCTRANS uses too. (once takes one sample and accumulates nothing.)
inline estuary::detail::TimeOp time_op(Operation op) {
  switch (op) {
    case Operation::average: return estuary::detail::TimeOp::average;
    case Operation::accumulate: return estuary::detail::TimeOp::sum;
    case Operation::minimum: return estuary::detail::TimeOp::minimum;
    case Operation::maximum: return estuary::detail::TimeOp::maximum;
    case Operation::instant:
    case Operation::once: return estuary::detail::TimeOp::instant;
  }
  return estuary::detail::TimeOp::instant;
}

// Set by the SIGTERM handler; read at output steps (the only async-signal-safe hand-over).
inline volatile std::sig_atomic_t g_sigterm = 0;

enum CtrlKind : int { kRecord = 1, kFlush = 2, kClose = 3 };
// kTagError: the servers' first write error, text sent once by the first server to model rank 0.
constexpr int kTagCatalog = 1, kTagCtrl = 2, kTagAck = 3, kTagError = 4;

struct Ctrl {
  int kind = 0;
  int var = 0;
  int slot = 0;
  int fault = 0;  // kClose: after a fault (drop incomplete records)
  i64 record = 0;
  double time = 0, tb0 = 0, tb1 = 0;
};

// A small byte stream for the catalog the model sends to the servers.
struct Packer {
  std::vector<char> b;
  void i(i64 v) { raw(&v, sizeof v); }
  void d(double v) { raw(&v, sizeof v); }
  void s(const std::string& v) { i(static_cast<i64>(v.size())); raw(v.data(), v.size()); }
  void vi(const std::vector<i64>& v) { i(static_cast<i64>(v.size())); for (i64 x : v) i(x); }
  void vd(const std::vector<double>& v) { i(static_cast<i64>(v.size())); for (double x : v) d(x); }
  void raw(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    b.insert(b.end(), c, c + n);
  }
};
struct Unpacker {
  const std::vector<char>& b;
  std::size_t at = 0;
  i64 i() { i64 v; get(&v, sizeof v); return v; }
  double d() { double v; get(&v, sizeof v); return v; }
  std::string s() { std::string v(static_cast<std::size_t>(i()), '\0'); get(v.data(), v.size()); return v; }
  std::vector<i64> vi() { std::vector<i64> v(static_cast<std::size_t>(i())); for (auto& x : v) x = i(); return v; }
  std::vector<double> vd() { std::vector<double> v(static_cast<std::size_t>(i())); for (auto& x : v) x = d(); return v; }
  void get(void* p, std::size_t n) {
    if (at + n > b.size()) throw Error("truncated catalog message", "I/O server");
    std::memcpy(p, b.data() + at, n);
    at += n;
  }
};

// The line this run adds to a file's `history` (CF): when and by what it was written.
inline std::string history_line() {
  return estuary::detail::utc_timestamp() + " estuary " ESTUARY_VERSION_STRING ": written by estuary::io::Output";
}

// Every setting of `c` that shapes the ranks' collectives, as text (for agree_same).
inline std::string describe(const OutputConfig& c) {
  std::ostringstream o;
  o.precision(17);
  o << static_cast<int>(c.mode) << ' ' << c.writers << ' ' << c.buffer_records << ' ' << c.write_bandwidth << ' '
    << c.directory << '\n'
    << c.calendar << ' ' << c.reference_time << ' ' << static_cast<int>(c.format) << ' ' << c.catch_sigterm << '\n'
    << c.time_comment << '\n';
  for (const FileConfig& f : c.files) {
    o << f.name << ' ' << f.output_freq.seconds << '/' << f.output_freq.months << ' ' << f.restart << ' '
      << f.split_freq.seconds << '/' << f.split_freq.months << ' '
      << static_cast<int>(f.format) << ' ' << f.grid.describe() << ' ' << f.grid.weights << ':';
    for (const FieldConfig& x : f.fields) {
      o << ' ' << x.name << '>' << x.variable() << '/' << static_cast<int>(x.operation) << '/'
        << static_cast<int>(x.precision) << '/' << x.deflate << '/' << x.sampling_freq_s << '/'
        << static_cast<int>(x.quantize) << '/' << x.significant << '/' << x.zstd << '/' << x.expr << '/'
        << detail::describe(x.zoom) << '/' << x.level_indices.size() << '/' << x.interpolate_levels.values.size() << '/'
        << x.interpolate_levels.extrapolate << '/' << x.fill_value << '/' << x.freq_op.seconds << '/'
        << x.freq_op.months;
      for (const auto& [name, t] : x.at) o << '@' << name << '=' << t.field << '/' << static_cast<int>(t.operation);
    }
    o << '\n';
  }
  for (const FieldConfig& d : c.derived) {
    o << "derived " << d.name << '=' << d.expr << '/' << d.freq_op.seconds << '/' << d.freq_op.months;
    for (const auto& [name, t] : d.at) o << '@' << name << '=' << t.field << '/' << static_cast<int>(t.operation);
    o << '\n';
  }
  return o.str();
}

inline const char* coord_name(int kind) {
  static const char* n[] = {"lon", "lat", "lon_bnds", "lat_bnds"};
  return n[kind];
}

struct GridInfo {
  std::string name;
  GridKind kind = GridKind::unstructured;
  std::vector<i64> dims;
  i64 global_size = 0;
  int ncorner = 0;
  // Model side only: this rank's points and their coordinates.
  std::vector<i64> points;
  std::vector<double> lon, lat, clon, clat;
  std::vector<std::int32_t> mask;  // per point of `points`; empty: none masked
  bool coordinates = true;         // false: def_grid by shape, no coordinate variables
  // Regular lon-lat and Gaussian grids: longitude constant along each column and latitude along
  // each row, written as 1-D coordinate variables lon(lon), lat(lat) with their bounds (CF,
  // what CDO and xarray's sel(lat=...) expect). Known on every rank (model ranks reduce them,
  // servers get them in the catalog).
  bool rectilinear = false;
  std::vector<double> axis_lon, axis_lat, axis_lon_bnds, axis_lat_bnds;  // nx, ny, 2 nx, 2 ny
  // A zoom of grids[parent] (io/zoom.cpp, made by the model ranks at end_def, in the catalog):
  // every rank knows its shape, model ranks their points of it (`points` numbered in the
  // zoomed grid, with those points' coordinates and mask).
  int parent = -1;
  FieldConfig::Zoom zoom;
  std::string zoom_error;                 // why the zoom does not apply to the parent ("": it does)
  std::vector<i64> ipos, jpos;            // 2-D zooms: each parent column's zoomed column (-1: left out), rows alike
  std::unordered_map<i64, i64> renumber;  // model side, 1-D zooms: parent point -> zoomed point
  // The zoomed point of parent point p (-1: outside the zoom). Model side for 1-D zooms.
  i64 zoomed(i64 p, const GridInfo& par) const {
    if (!ipos.empty()) {
      const i64 c = ipos[static_cast<std::size_t>(p % par.dims[0])],
                r = jpos[static_cast<std::size_t>(p / par.dims[0])];
      return c < 0 || r < 0 ? -1 : r * dims[0] + c;
    }
    auto it = renumber.find(p);
    return it == renumber.end() ? -1 : it->second;
  }
  // Model side: this rank's part `local` of a grid (def_grid's, or a file grid's target).
  static GridInfo of(const std::string& name, const Grid& local) {
    GridInfo g;
    g.name = name;
    g.kind = local.kind;
    g.dims = local.dims;
    g.global_size = local.global_size;
    g.ncorner = local.ncorner;
    for (i64 i = 0; i < local.size(); ++i) g.points.push_back(local.global_index(i));
    g.lon = local.lon;
    g.lat = local.lat;
    g.clon = local.corner_lon;
    g.clat = local.corner_lat;
    g.mask = local.mask;
    return g;
  }
  // File shape of the horizontal grid: {ny, nx} for 2-D kinds, {n} otherwise.
  std::vector<i64> hshape() const {
    if (dims.size() == 2 && kind != GridKind::reduced_gaussian && kind != GridKind::unstructured)
      return {dims[1], dims[0]};
    return {global_size};
  }
};

struct FieldInfo {
  FieldDef def;
  int grid = -1;
  std::vector<std::size_t> masked;  // model side: local values written as the fill value
  bool derived = false;             // an expression of other fields (io/derived.hpp)
};

// One Redist from a source decomposition to the writers' slabs, shared by every variable fed
// from that source (a field in several files, a grid's coordinates in several files).
struct Transfer {
  std::unique_ptr<Redist> redist;
  std::vector<Exchange> slots;  // server mode: the bounded client buffer, one record each
  std::vector<bool> busy;
  i64 next_slot = 0;
  i64 n = 0, local_n = 0;       // global size, model-side local size
  i64 lo = 0, hi = 0;           // this writer's slab
  std::vector<double> slab;
  // A variable's view of its field (a zoom, levels): model side, the local values it sends
  // (`pick`, indices into the field's local values) and their places in the written array.
  bool view = false;
  std::vector<i64> pick, dst;
  std::vector<double> picked;
};

struct Var {
  int file = 0;
  std::string name;
  int field = -1;               // FieldInfo index, or -1 for a coordinate
  // The horizontal grid (a zoomed one for a zoomed field); coordinates: kind (0 lon, 1 lat, 2/3 bounds).
  int grid = -1, coord = -1;
  std::string standard_name, long_name, units;  // fields: from the file's config, else the FieldDef
  int transfer = -1;
  // Written levels (fields): the field's, or a selection or interpolation of them (`lmap`, set
  // then). Interpolated levels come in two transfers, the lower source level's values in
  // `transfer` and the upper's in `transfer2`; the writers weigh them (io/zoom.hpp, LevelMap).
  std::vector<double> level_values;
  detail::LevelMap lmap;
  bool weigh = false;  // writers apply lmap (interpolation or fill levels)
  int transfer2 = -1;
  std::vector<double> weighed;  // writers: the slab after the weights
  std::vector<i64> shape;       // without time
  std::vector<std::string> dim_names;
  bool has_time = false, dbl = true;
  Operation op = Operation::once;
  int ncvar = -1;
  std::vector<Box> boxes;       // this writer's part of its slab
  // Model side: the temporal operation's state.
  std::vector<double> acc;
  i64 nsamples = 0;
  double next_out = std::numeric_limits<double>::quiet_NaN();  // end of the current period
  i64 next_k = 0;                                              // its boundary's index
  bool done_once = false;
  i64 record = 0;
  int deflate = 0;
  FieldConfig::Quantize quantize = FieldConfig::Quantize::none;
  int significant = 0, zstd = 0;
  double sampling_s = 0;
  bool fill = true;             // fields: _FillValue and missing_value (FieldConfig::fill_value)
  // Writers, split files: coordinates and `once` fields, written into every split file.
  std::vector<double> keep;
  bool kept = false;
};

struct FileState {
  FileConfig cfg;
  std::string path, final_path;
  std::unique_ptr<FileWriter> w;
  bool has_time = false, has_bounds = false;
  int time_var = -1, tb_var = -1;
  std::vector<std::pair<int, std::string>> axes1d;  // rectilinear grids used: (grid, name suffix)
  i64 time_written = -1;
  i64 split = std::numeric_limits<i64>::min();  // the split period of the open file
  i64 rec_base = 0;                              // the first record of the open split file
  // Atomic records: a record's slabs wait here until every time-varying variable of the file
  // has delivered it; only then is the record written and its count committed to the file.
  struct Pending {
    double time = 0, tb0 = 0, tb1 = 0;
    std::map<int, std::vector<double>> slabs;  // by Var index
  };
  std::map<i64, Pending> pending;  // by record (of the whole run, before splitting)
  int time_vars = 0;               // variables with a time dimension
  i64 committed = 0;               // records of the open file complete on disk
};

struct Output::Impl {
  OutputConfig cfg;
  std::vector<double> masked_copy;  // model side: a written field with its masked points filled
  CalendarClock clock;  // period boundaries of cfg's calendar
  bool server_mode = false;
  bool model = true, writer = false, server = false;
  MPI_Comm model_comm = MPI_COMM_NULL, xcomm = MPI_COMM_NULL, ctrl = MPI_COMM_NULL,
           wcomm = MPI_COMM_NULL;
  int xrank = 0, xsize = 1, windex = -1, nwriters = 1, model_rank = 0;
  std::vector<int> server_xranks;  // server mode: xcomm ranks of the servers
  std::vector<GridInfo> grids;
  std::vector<FieldInfo> fields;
  std::map<std::string, std::vector<int>> vars_of_field;
  std::vector<Transfer> transfers;
  std::vector<Var> vars;
  std::vector<FileState> files;
  DerivedFields derived;  // the configuration's expressions, appended to `fields` at end_def
  Regrids regrids;        // files on another grid: their grids and remapped fields, added at end_def
  bool defined = false, closed = false;
  // Model ranks: the output's failure, the same text on every rank once agreed; every later
  // call throws it again. Servers: their first (agreed) write error. Model rank 0: the text a
  // server sent, until the next agreement point hands it to every model rank.
  std::string failure, server_error;
  std::string error_sent;  // server 0: the text of its pending error message
  MPI_Request error_request = MPI_REQUEST_NULL;
  IoStats stats;
  Tuning tuning;  // the writers and buffers used, and why (io/tune.cpp)
  struct sigaction old_action {};
  bool handler_installed = false;

  std::string where_rank() const { return estuary::detail::world_rank_label(); }

  // ---- set-up ----

  // Serverless: writers D of xcomm's ranks (w * P / D) and their communicator. Collective.
  void assign_writers(int d);
  void split_writers();  // wcomm: the writers of xcomm (collective over xcomm)
  // io/tune.cpp. Server mode with writers left to choose: the servers, before the fields are
  // known (collective over xcomm). Both modes at end_def/serve, after plan_vars: serverless
  // writers and server buffers from the volume, logged on rank 0 (collective over xcomm).
  void tune_writers_at_start(int size);
  void tune_at_end_def();
  void bandwidth_into(TuneInput& in, MPI_Comm comm) const;
  bool parallel_files() const;  // every file can take several writers at once

  std::vector<char> pack_catalog() const;

  void unpack_catalog(const std::vector<char>& b);

  // Model side, collective over the model ranks, before the catalog: the 1-D axes of lon-lat and
  // Gaussian grids. Each rank puts its points' longitudes at their column and latitudes at their
  // row; the max and min over ranks must agree (a grid that is not rectilinear after all, or one
  // whose points no rank holds, keeps 2-D coordinates). Bounds come from the corners: the cell's
  // extent in longitude around its centre (across the date line too) and in latitude.
  void compute_axes();

  // Model side, collective over the model ranks, after compute_axes and before the catalog
  // (io/zoom.cpp): a zoomed grid for each grid and each zoom of the configuration, appended to
  // `grids`; one a zoom does not apply to keeps the reason in zoom_error, an error only if a
  // variable uses it.
  void make_zoom_grids();
  // A box zoom of a reduced or unstructured grid: numbers the points inside (model side).
  void renumber_box(const GridInfo& parent, GridInfo& zoomed);
  // The zoomed grid of grid g for field config fd (Error at its zoom's place if it does not apply).
  int zoom_grid_of(int g, const FieldConfig& fd, const std::string& where) const;
  // Model side, after plan_vars: the values each view transfer takes from its field and their
  // places in the written array (Error naming field and rank for a point of a 1-D zoom that
  // the rank's grid part does not hold).
  void plan_views();
  // Writers: the slab of variable v to write (its transfer's, or weighed between levels).
  const std::vector<double>& slab_of(Var& v);

  // Model side, after plan_vars: the local values of each field that are written as the fill
  // value, from the field's own mask or its grid's (through this rank's part of the grid).
  void resolve_masks();

  // Variables of every file, in an order every rank derives from the config and the catalog.
  void plan_vars();

  // The model-side source decomposition of transfer t.
  Decomp source_of(std::size_t t) const;

  void build_transfers();

  void create_files();

  // Creates and defines one file, then writes what every file of `fs` holds: level axes, and
  // for split files the kept coordinates and `once` fields.
  void open_file(FileState& fs, const std::string& path);

  void put_slab(FileState& fs, Var& v, i64 record, const double* data);

  // Writers: the slab of `v`'s transfer is in place. Variables without time are written at
  // once; a time record waits in its file's pending set until it is complete (atomic records).
  void write_record(Var& v, i64 record, double time, double tb0, double tb1);

  // Writes the oldest pending record of fs whole (time, bounds, variables), then commits the
  // record count so that the file shows it only now. Collective over the writers.
  void commit_record(FileState& fs);

  // put_slab with the variable's name and record added to any error, which every writer
  // throws alike (a write that failed on one writer must not leave the others in the next
  // collective call).
  void put_named(FileState& fs, Var& v, i64 record, const double* data);

  // Runs a step of the writers' collective file work; an error on any writer is every writer's.
  void on_writers(const std::function<void()>& step) { estuary::detail::agree(wcomm, step); }

  // Closes every file. A normal close writes the records still pending (a variable the model
  // did not write at the last step keeps the fill value there). After a fault (an error,
  // SIGTERM, an exception unwinding) the incomplete records are dropped, and a classic file's
  // record count is set back to the records completed, so no half-written record shows.
  void close_files(bool fault);

  void sync_files();

  // Model ranks: runs a step whose failure (on any rank of xcomm, agreed) fails the output.
  void or_fail(const std::function<void()>& step);

  // Throws the output's earlier failure again: nothing more is written after an error.
  void check_not_failed(const std::string& call) const;

  // Model ranks: everyone gets rank 0's `text` (empty: no failure).
  std::string share_from_root(std::string text) const;

  // Model rank 0: takes the servers' error message if it has arrived (block: wait for it).
  void poll_server_error(bool block);

  // ---- model side ----

  // One sample of field f (a model field or a derived one) at `time`: the temporal operations,
  // and the records it completes handed to the writers. True when the ranks agreed to stop
  // (SIGTERM): the caller closes and throws Terminated.
  bool write_field(int f, double time, std::span<const double> data);
  // Whether `time` reaches the end of v's current output period (its first sample sets the
  // period), and whether a sample at `time` enters v's operation (sampling_freq).
  bool ends_period(Var& v, double time);
  static bool sampled(const Var& v, double time);
  // Whether a sample of field f at `time` changes what any of its variables writes (an
  // operation takes it, a record or a `once` falls due): else it need not be computed.
  bool needs_sample(int f, double time);

  // Hands the values of variable `v` (local layout of its transfer) to the writers.
  void emit(Var& v, const double* values, double time, double tb0, double tb1);

  void drain_slots();

  // Model root: sends `kind` to every server and waits for each one's acknowledgement (1, or
  // 0 when the servers failed). Returns the servers' error on every model rank ("" if none).
  std::string command_servers(int kind, bool fault = false);

  void write_coordinates();

  void install_handler();
  void restore_handler();

  // fault: closing after an error, SIGTERM or an exception — incomplete records are dropped.
  // Throws the output's failure unless fault (a destructor or an error path calls it then).
  void do_close(bool fault);

  // ---- server side ----

  // After a write error the servers keep receiving (the model's transfers and commands must
  // complete) but write nothing more; the first server tells model rank 0 at once, every
  // server acknowledges flush and close with 0, and serve() throws the error after close.
  void serve_loop();
};

}  // namespace estuary::io
