// The I/O server: model fields to CF netCDF files, and back.
//
// A field written by the model is reduced in time on the model side (instant, average, minimum,
// maximum, accumulate, once), rearranged with a Redist from the model decomposition to
// contiguous slabs of the global array on D writer ranks (remap-and-write, paper 003), and
// written collectively: CDF-5 through PnetCDF when D > 1 and serial netCDF when D = 1, or
// netCDF-4 (HDF5, deflate) through netCDF-4 parallel when D > 1 and serial netCDF-4 when D = 1.
// The file therefore does not depend on the number of model or writer ranks. Files may be split
// by time (split_freq), samples thinned (sampling_freq); Reader prefetches periodic forcing.
//
// Two modes with one configuration (paper 002's CDI-pio / XIOS):
//   serverless — D of the model's own ranks write; a write that completes an output period
//                is collective over the model communicator.
//   server     — the last D ranks of the communicator given to Output are dedicated writers;
//                the model gets model_comm(). A write packs the record into a bounded buffer
//                (buffer_records per variable), posts the transfer and returns; the servers
//                receive and write in the background.
//
// Nothing handed over is lost: close(), the destructor (exception unwinding) and SIGTERM (a
// flag checked at the next output step, agreed by all model ranks) all write every record
// already handed over and close the files. Restart files go to "<name>.nc.tmp" and are renamed
// to "<name>.nc" only when closed.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/names.hpp"

namespace estuary::io {

enum class Operation { instant, average, minimum, maximum, accumulate, once };
enum class Precision { f32, f64 };
enum class Mode { serverless, server };
const char* name_of(Mode m);  // "serverless", "server"
// cdf5: PnetCDF (D > 1) or serial netCDF (D = 1). netcdf4: HDF5, through netCDF-4 parallel
// (nc_create_par, collective) when D > 1, serial netCDF-4 when D = 1; allows deflate.
enum class Format { cdf5, netcdf4 };
const char* name_of(Operation op);

// A period of output, splitting or sampling: a whole number of calendar months (XIOS's "1mo",
// "3mo", "1y" = 12 months), or seconds ("6h", "1d"). Month periods run from the reference time
// to the same day of month and time of day `months` later (day clamped to the month's length),
// in the output's calendar.
struct Frequency {
  double seconds = 0;  // > 0 for a period of fixed length
  int months = 0;      // > 0 for a period of calendar months
  explicit operator bool() const { return seconds > 0 || months > 0; }
  bool operator==(const Frequency&) const = default;
};

struct FieldConfig {
  std::string name;  // the model's field (FieldDef::name) the variable takes its data from
  // The variable's name in the file; empty: `name`. One model field may be written under
  // several names (its average and its maximum, say); XIOS's `<field field_ref="toce"
  // name="thetao"/>` is {name = "toce", output_name = "thetao"}.
  std::string output_name;
  const std::string& variable() const { return output_name.empty() ? name : output_name; }
  Operation operation = Operation::instant;
  Precision precision = Precision::f32;
  int deflate = 0;               // netCDF-4 deflate level 0..9 (0: none); needs format netcdf4
  // netCDF-4 lossy quantization (nc_def_var_quantize; needs format netcdf4): none, bitgroom or
  // granularbr (`significant` decimal digits, 1..15 for double, 1..7 for float) or bitround
  // (`significant` bits, 1..52 / 1..23). The zeroed trailing bits then compress well.
  enum class Quantize { none, bitgroom, granularbr, bitround } quantize = Quantize::none;
  int significant = 0;
  int zstd = 0;                  // netCDF-4 Zstandard level 1..22 (0: none), when the build has it
  double sampling_freq_s = 0;    // > 0: only samples at multiples of it enter the operation
  // CF attributes of the variable; empty: those of the model's FieldDef.
  std::string standard_name, long_name, units;
  // A derived field: an arithmetic expression of the model's fields (muParser syntax,
  // "sqrt(uo*uo + vo*vo)"), evaluated on the model ranks once per step when its last input of
  // the step is written; `operation` then applies to its values. Empty: a model field.
  std::string expr;
  // Temporal operations inside an expression (XIOS's `@`): in "@sst2 - @sst * @sst" each `@x`
  // stands for x's temporal operation (at[x], default average of field x) over each period of
  // `freq_op`; the expression is evaluated on those results at each period's end, and
  // `operation` then applies to the values so made. Unset freq_op: every write is a period
  // (`@x` is then x's value, XIOS's default of one time step). An expression uses `@` terms or
  // plain fields, not both.
  Frequency freq_op;
  struct AtTerm {
    std::string field;                      // the model's (or a derived) field; empty: the term's name
    Operation operation = Operation::average;
    bool operator==(const AtTerm&) const = default;
  };
  std::map<std::string, AtTerm> at;         // by the name after `@`; a name not here: {name, average}
  // A horizontal part of the field's grid (issue 21, XIOS's zoom_domain): a lon-lat box, or
  // index ranges of a 2-D grid. The written grid is the part: a sub-grid of 1-D lon/lat axes
  // for a regular lon-lat or Gaussian grid, the smallest index rectangle holding the box's
  // points for a curvilinear grid, the points inside the box (in grid order) for a reduced or
  // unstructured one (docs/io.md, "Zoom and vertical levels").
  struct Zoom {
    enum class Kind { none, box, index } kind = Kind::none;
    // box, degrees: longitudes from `west` eastwards to `east` (east < west crosses the date
    // line; east - west >= 360: every longitude), latitudes south..north.
    double west = 0, east = 360, south = -90, north = 90;
    // index: inclusive 0-based ranges of columns (i, fastest) and rows (j); i1/j1 < 0: the last.
    std::int64_t i0 = 0, i1 = -1, j0 = 0, j1 = -1;
    bool operator==(const Zoom&) const = default;
  } zoom;
  // Vertical: the levels written, by 0-based index into the field's levels (XIOS zoom_axis);
  // empty: every level.
  std::vector<std::int64_t> level_indices;
  // Or: linear interpolation in the field's level coordinate to `values` (XIOS interpolate_axis,
  // order 1). Outside the levels' range: the fill value, or with `extrapolate` the line through
  // the two end levels (XIOS's choice). `coordinate`: empty or the level axis' name (depth,
  // air_pressure, model_level_number, lev) — interpolation in another field is not supported.
  struct LevelInterpolation {
    std::vector<double> values;
    std::string coordinate;
    bool extrapolate = false;
    bool operator==(const LevelInterpolation&) const = default;
  } interpolate_levels;
  // Where the configuration file gives the field ("PATH:LINE, key output.files[0] (f).fields[1]";
  // a derived field's: its `expr` key), for errors found after reading (end_def); empty for a
  // configuration built in code.
  std::string origin;
  // Where the zoom and the levels/interpolate_levels keys are (errors found at end_def, such as
  // a zoom outside the grid or a level the field does not have); empty: `origin`.
  std::string zoom_origin, levels_origin;
  // false: no _FillValue and missing_value attributes. For a variable that has every point of
  // every record (no mask, operation instant or once), as the coupler's files on a grid without
  // a mask are written: readers then do not look for fill values that cannot occur.
  bool fill_value = true;
};

// Output on another grid (XIOS's interpolate_domain; docs/io.md, "Output on another grid"):
// each sample of the file's fields is remapped on the model ranks to the target grid with
// estuary's own weights, then the temporal operation applies on the target grid (XIOS's order),
// and the file's horizontal grid is the target. Masked source points never enter; targets that
// no valid source reaches are _FillValue.
struct RegridConfig {
  enum class Target { none, recipe, scrip, oasis };
  Target target = Target::none;
  std::string grid;   // recipe: GridGen::from_name's ("lonlat:144x72"); scrip, oasis: the file's path
  std::string name;   // the grid's name in the file (OASIS prefix); empty: the file's only grid
  enum class Method { conservative, bilinear, bicubic, distwgt, nn };
  Method method = Method::conservative;
  int order = 1;      // conservative: 1 or 2 (SCRIP's FIRST, SECOND)
  // conservative: fracarea (a target partly covered by valid sources gets their mean; CDO's
  // default, XIOS's renormalize="true") or destarea (their sum over the whole target cell's area).
  bool destarea = false;
  int neighbors = 4;  // distwgt: the n nearest
  // The weight file: read when it exists and estuary wrote it for the same grids and method
  // (or when estuary did not write it: a CDO or SCRIP file, used as it is), else generated and
  // written there. Empty: generated at every end_def, not kept.
  std::string weights;
  std::string origin;  // where the configuration gives it ("PATH:LINE, key ..."), for errors
  explicit operator bool() const { return target != Target::none; }
  // The target and method as one canonical text ("lonlat:144x72 conservative order=1"): files
  // with the same text share the target grid, the weights and the remapped fields.
  std::string describe() const;
};
const char* name_of(RegridConfig::Method m);  // "conservative", "bilinear", "bicubic", "distwgt", "nn"

struct FileConfig {
  std::string name;            // file path without ".nc", relative to OutputConfig::directory
  // One record a period. Unset (a configuration built in code, the coupler's files): every
  // write is a record at its own model time, so the time axis holds whatever times the model
  // wrote at (coupling times, say); only instant and once fields may be in such a file.
  Frequency output_freq;
  bool restart = false;        // written to a temporary name, renamed when closed
  Frequency split_freq;         // set: one file per split period, "<name>_<period start>.nc"
  Format format = Format::cdf5;
  RegridConfig grid;            // set: the fields are written on this grid instead of the model's
  std::vector<FieldConfig> fields;
};

struct XiosXmlOptions;
struct XiosXmlInfo;

struct OutputConfig {
  Mode mode = Mode::serverless;
  // D, the writer ranks; 0 (the default, YAML `writers: auto` or no key): chosen by Output from
  // the ranks, the output volume and the write bandwidth (choose_tuning; docs/io.md, "Tuning").
  int writers = 0;
  // Server mode: records a variable may have in flight; 0 (the default): chosen likewise.
  int buffer_records = 0;
  // One writer's bandwidth to `directory` in MB/s for the automatic choice; 0: measured once per
  // process and directory (a short timed write, collective), unless ESTUARY_IO_BANDWIDTH gives it.
  double write_bandwidth = 0;
  std::string directory = ".";
  std::string calendar = "standard";
  std::string reference_time = "2000-01-01 00:00:00";  // model time 0
  Format format = Format::cdf5;  // default of the files' `format`
  bool catch_sigterm = true;
  // Global attributes of every file (CF/CMIP): empty ones are left out; `history` gets a line
  // "<UTC date> estuary <version>: written" in front of what is given here.
  std::string title, institution, source_attribute = "estuary I/O (remap-and-write)", comment, history;
  // The `comment` attribute of every file's time variable (empty: none); the coupler says there
  // where its reference time came from when the configuration gave none.
  std::string time_comment;
  std::vector<FileConfig> files;
  // Derived fields that expressions use without any file writing them (YAML `derived:`, XIOS's
  // field_definition expressions): name, expr (freq_op, at), units, long_name, standard_name
  // and origin are read; the rest of each entry is ignored.
  std::vector<FieldConfig> derived;
  std::string source = "<in memory>";  // where it came from, for error messages

  // YAML (see docs/io.md). Errors name the file and the key at fault.
  static OutputConfig from_yaml_file(const std::string& path);
  static OutputConfig from_yaml_string(const std::string& text, const std::string& source = "<string>");
  // XIOS's XML (an iodef.xml, or a file whose root is a <context>; docs/io.md, "XIOS XML"):
  // the context's field_definition and file_definition, with the files they include (src=).
  // Errors name the file, the line, the element and the attribute at fault. Warnings (what
  // estuary does differently from XIOS without changing the numbers written) go to
  // info->warnings, or to std::cerr when info is null.
  static OutputConfig from_xios_xml(const std::string& path, const XiosXmlOptions& options,
                                    XiosXmlInfo* info = nullptr);
  static OutputConfig from_xios_xml(const std::string& path);
};

// How to read an XIOS XML file (OutputConfig::from_xios_xml).
struct XiosXmlOptions {
  std::string context;    // the <context id=...> to read; empty: "nemo" if there is one, else the only one
  double timestep_s = 0;  // the model time step, for durations in time steps ("1ts"); 0: they are errors
  // Values of the @KEY@ templates of file names (NEMO's "@expname@_@freq@_@startdate@_@enddate@"),
  // by KEY. "freq" defaults to the file's output_freq as NEMO writes it (5d, 1m, 1y, 6h, 1ts).
  std::map<std::string, std::string> substitutions;
  // false: a field estuary would write differently from XIOS (an expression, a grid
  // transformation, freq_offset, ...) is an error; true: it is left out with a warning, and so
  // is a file left without fields.
  bool skip_unsupported = false;
};

// What from_xios_xml saw besides the configuration.
struct XiosXmlInfo {
  std::string context;                           // the context read
  std::vector<std::string> warnings;             // each "PATH:LINE, <element>, attribute A: what"
  std::map<std::string, std::string> variables;  // the context's <variable id="...">value</variable>
  struct Field {                                 // one variable of a file, where it came from
    std::string file, variable, source;          // file name, output variable, model field
    std::string grid_ref, domain_ref, axis_ref;  // recorded, not used: the model's def_grid decides
    std::string origin;                          // "PATH:LINE, <field ...>"
  };
  std::vector<Field> fields;
};

// "3600s", "30min" (or XIOS's "30mi"), "6h", "1d", "90" (seconds). Throws Error naming `where`
// otherwise.
double parse_duration(const std::string& text, const std::string& where);
// A duration as above, or calendar months and years as XIOS writes them: "1mo", "3mo", "1y".
Frequency parse_frequency(const std::string& text, const std::string& where);

// Period boundaries in a CF calendar (standard, gregorian, proleptic_gregorian, julian, noleap,
// 365_day, all_leap, 366_day, 360_day), in model seconds since the reference time.
class CalendarClock {
 public:
  CalendarClock(const std::string& calendar, const std::string& reference_time);  // throws Error
  CalendarClock() : CalendarClock("standard", "2000-01-01") {}
  // Seconds from the reference to the reference moved by `months` calendar months.
  double months_after(std::int64_t months) const;
  // The k-th boundary of periods of `f` (k may be negative): k * f.seconds, or the reference
  // moved by k * f.months months.
  double boundary(const Frequency& f, std::int64_t k) const;
  // The smallest k whose boundary is at or after t (within 1e-9 of a period).
  std::int64_t first_boundary_from(const Frequency& f, double t) const;

 private:
  std::string calendar_;
  long y_ = 0;
  int mo_ = 1, d_ = 1, h_ = 0, mi_ = 0;
  double s_ = 0;
};

// The date `seconds` after `reference_time` ("YYYY-MM-DD[ hh:mm:ss]") in a CF calendar, as
// "YYYYMMDD", "YYYYMMDDhhmm" or "YYYYMMDDhhmmss" (the shortest that is exact for every multiple
// of `step_s` after a reference at midnight). Split files are named with it.
std::string date_label(double seconds, const std::string& reference_time, const std::string& calendar,
                       double step_s);
// True when this build has netCDF-4 parallel (Debian's libnetcdf-mpi-dev); without it, a
// netcdf4 file with D > 1 writers is written by the writers in turn through serial netCDF-4.
bool have_netcdf4_parallel();
// True when this build has PnetCDF (option ESTUARY_WITH_PNETCDF): the classic formats (cdf5,
// 64-bit offset) from D > 1 writers need it; without it Output refuses such a configuration.
bool have_pnetcdf();

// The automatic choice of the writer count and the server mode's buffers (OutputConfig's 0s),
// a pure function of what Output measures and knows (docs/io.md, "Tuning"). The model:
//   bandwidth  D writers together write at one * (1 + (min(D, many) - 1) * g) MB/s, g the gain of
//              each added writer measured with `many` writers at once (clamped to 0..1): no
//              gain is assumed beyond what was measured. Bandwidth rule: the fewest D that reach
//              90 % of what `many` writers reach (the last writers would add < 10 %).
//   volume     each writer needs kMinSlabBytes of an output step (the records of every file
//              whose period ends at once): below it the per-record collective steps (space
//              reservation, the record-count commit, ~10 % at 2 writers in docs/performance.md)
//              outweigh the bandwidth gained. So D <= step_bytes / kMinSlabBytes, at least 1 —
//              more volume never gives fewer writers.
//   cores      D <= the cores of the nodes (cores > 0): a writer packs, rearranges and writes
//              on its own core, and on a node whose ranks outnumber its cores the writers take
//              turns with the model (the probe's plain file writes do not show that).
//   ranks      serverless D <= ranks; server mode D <= max(1, ranks / 8), dedicated ranks costing
//              their cores in full (CPMIP), and D <= ranks - 1; several writers need files every
//              writer can write at once (PnetCDF, netCDF-4 parallel), else D = 1.
//   buffers    (server mode) a model rank may run one longest output period ahead of the
//              servers, so that while the servers write the biggest step (a month's 3-D means)
//              the shorter periods' records (daily) keep being handed over: buffer_records =
//              the most records one transfer gets in the longest period, at least 2 (double
//              buffering), at most what buffer_budget_bytes holds over every transfer.
struct TuneInput {
  Mode mode = Mode::serverless;
  int ranks = 1;
  int cores = 0;                        // cores of the nodes the ranks run on (0: unknown)
  int writers = 0, buffer_records = 0;  // as configured: > 0 is kept, 0 is chosen
  bool parallel_files = true;           // several writers can write every file at once
  double one_mb_s = 0;                  // one writer's bandwidth (0: unknown)
  double many_mb_s = 0;                 // `many` writers' together
  int many = 1;
  double step_bytes = -1;               // an output step's bytes (< 0: not known yet, server
                                        // mode's writers are chosen before the fields are)
  // Server mode: per transfer (a model field), the records it gets in the longest output
  // period and the most bytes one of its records takes on a model rank.
  std::vector<double> records_per_period, record_bytes;
  double buffer_budget_bytes = 0;       // what the buffers may take on a model rank
};
struct Tuning {
  int writers = 1, buffer_records = 2;
  bool writers_auto = false, buffers_auto = false;
  std::string reason;  // why, in one line (logged by Output on rank 0, in IoReport)
};
inline constexpr double kMinSlabBytes = 4.0 * (1 << 20);
Tuning choose_tuning(const TuneInput& in);

// A model field. decomp numbers the global array in file order: level slowest, then the
// grid's points in grid order (longitude fastest for 2-D grids).
struct FieldDef {
  std::string name;
  std::string grid;             // a grid defined with def_grid
  std::vector<double> levels;   // vertical axis values; empty: a 2-D field
  std::string level_units = "m";
  Decomp decomp = Decomp::empty(0);
  std::string units, long_name, standard_name;
  // Per local value (the decomp's order): 1 written, 0 masked (land). Empty: the mask of the
  // grid given to def_grid, where this rank's part of it holds the field's points. Masked points
  // are written as the fill value whatever the model put there, and never enter an operation.
  std::vector<std::int32_t> mask;
};

// The _FillValue and missing_value of every field variable (CMIP's), also written for periods
// that got no sample.
inline constexpr double kFillValue = 1.0e20;

// Per-rank counters (seconds are wall time on this rank).
struct IoStats {
  std::int64_t records_handed_over = 0;  // model side: records passed to the writers
  std::int64_t records_written = 0;      // writer side
  std::int64_t bytes_written = 0;        // writer side: bytes of variable data put to files
  double write_s = 0;                    // writer side: time in file writes and closes
  double commit_s = 0;                   // writer side, part of write_s: reserving each record's
                                         // space and committing its record count (atomic records)
  double peer_wait_s = 0;                // writer side, part of write_s: waiting at each record for
                                         // the other writers to have its data (the model's and the
                                         // transfers' pace, not the file system's)
  double transfer_s = 0;                 // time in rearrangement (both sides)
  double model_io_s = 0;                 // model side: time inside write/flush/close
  double derived_s = 0;                  // model side, part of model_io_s: derived fields (copying
                                         // their inputs, evaluating, handing them over)
  double regrid_s = 0;                   // model side, part of model_io_s: remapping samples to
                                         // the grids of files on another grid
  double setup_s = 0;                    // end_def: plans, file creation, coordinates (and the
                                         // weights of files on another grid)
  std::int64_t files_created = 0;        // writer side: files opened (split files count each)
  std::int64_t largest_slab = 0;         // writer side: values in this rank's largest slab of a
                                         // field (one record): about n / D, never n for D > 1
                                         // (coordinates aside: their slabs are ncorner n / D)
};

// A run's I/O metrics over every rank of the Output's communicator (model and servers), with
// the CPMIP measures of paper 002 §1 (Balaji et al. 2017):
//   Data Output Cost = (core-hours of the run with output - without) / without
//   Data Intensity   = GB written / core-hours of the run
// Without a measured run without output, "without" is estimated as the model ranks' time
// outside I/O calls: model_ranks * (run_s - model_io_s), so dedicated server ranks count as
// cost in full.
struct IoReport {
  int ranks = 0, model_ranks = 0, writers = 0;
  int buffer_records = 0;            // server mode's; serverless: as configured (unused)
  bool writers_auto = false;         // writers chosen by Output (choose_tuning), not configured
  std::string tuning;                // why those writers and buffers (Tuning::reason)
  std::int64_t bytes_written = 0;    // all writers
  std::int64_t records_written = 0;  // all writers (a record: one variable at one time)
  std::int64_t files_created = 0;
  double write_s = 0;                // max over writers: time in file writes and closes
  double write_mb_per_s = 0;         // bytes_written / write_s (MB = 1e6 bytes)
  double file_write_s = 0;           // max over writers: write_s without IoStats::peer_wait_s
  double file_write_mb_per_s = 0;    // bytes_written / file_write_s: the writers' own throughput
  double model_io_s = 0;             // max over model ranks: time inside write/flush/close
  double run_s = 0, run_without_io_s = 0;  // as given (the latter 0: estimated)
  double core_hours = 0;
  double data_output_cost = 0;       // fraction (0.05 = 5 %)
  double data_intensity = 0;         // GB per core-hour
  std::string json() const;          // one JSON object, as the benchmarks print
};

// The exception write() throws after SIGTERM: the files are complete and closed; end the run.
class Terminated : public Error {
 public:
  using Error::Error;
};

class Output {
 public:
  // Collective over comm. In server mode the last `writers` ranks become servers.
  Output(const OutputConfig& config, MPI_Comm comm);
  ~Output();  // closes if close() was not called; never throws
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  bool is_server() const;
  MPI_Comm model_comm() const;  // MPI_COMM_NULL on server ranks
  // Server ranks: receive, rearrange and write until the model closes. Returns after close.
  void serve();

  // Model ranks, collective over model_comm() in the same order on every rank.
  // `local` holds this rank's points of the grid (Grid::points global indices, or whole).
  void def_grid(const std::string& name, const Grid& local);
  // A grid known by its shape alone ({nx, ny}: variables (y, x); {n}: (cell)): no coordinate
  // variables, no mask. For fields whose coordinates are unknown (the coupler's restart arrays,
  // a coupling field on a grid in no grid file).
  void def_grid(const std::string& name, const std::vector<std::int64_t>& dims);
  void def_field(const FieldDef& field);
  void end_def();  // builds the rearrangements (collective with the servers) and creates files
  // Hands over one sample of `field` at model time `time` (seconds since reference_time).
  void write(const std::string& field, double time, std::span<const double> data);
  void flush();   // every record handed over reaches the files (fsync'd by the library)
  void close();   // flush, close files, stop servers

  const IoStats& stats() const;
  // The writer ranks: as configured, or chosen (in serverless mode at end_def, 0 before).
  int writers() const;
  const Tuning& tuning() const;  // the choice and its reason (complete after end_def/serve)
  // Collective over the communicator given to the constructor (servers too, after serve()).
  // run_s: the run's wall time; run_without_io_s: a run without output, if measured (else 0).
  IoReport report(double run_s, double run_without_io_s = 0) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Reads variables of a file written by Output (or any netCDF file with the same layout) into
// any decomposition: each rank reads a contiguous slab, then a Redist moves it to `decomp`.
class Reader {
 public:
  Reader(const std::string& path, MPI_Comm comm);  // collective
  ~Reader();
  std::int64_t records() const;                    // length of the time dimension (0: none)
  // The points of one record of `var` (the product of its dimensions but time); -1 when the
  // file has no such variable. From the header, on every rank alike.
  std::int64_t points(const std::string& var) const;
  const std::vector<double>& times() const;        // time coordinate values
  // Collective. Record whose time equals `time` (Error naming file and variable if none).
  void read(const std::string& var, double time, const Decomp& decomp, std::span<double> out);
  // Collective. record < 0: a variable without time dimension.
  void read_record(const std::string& var, std::int64_t record, const Decomp& decomp,
                   std::span<double> out);

  // Periodic forcing (a climatology): the records repeat every `period_s` seconds from the
  // first record's time, so read(var, t) reads the record at t modulo the period. Collective.
  // With a period set, read() also starts reading the next record (wrapping to the first) in a
  // background thread; the next read() of that record only waits for it.
  void set_period(double period_s);
  std::int64_t prefetch_hits() const;  // reads served by a prefetched record
  // Values in the largest slab this rank has read (one record of one variable): n / ranks.
  std::int64_t largest_slab() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace estuary::io

namespace estuary {
// "server", "serverless" (estuary/names.hpp); unknown names throw estuary::Error.
template <>
io::Mode from_name<io::Mode>(std::string_view name);
}  // namespace estuary
