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
  // Where the configuration file gives the field ("PATH:LINE, key output.files[0] (f).fields[1]";
  // a derived field's: its `expr` key), for errors found after reading (end_def); empty for a
  // configuration built in code.
  std::string origin;
  // false: no _FillValue and missing_value attributes. For a variable that has every point of
  // every record (no mask, operation instant or once), as the coupler's files on a grid without
  // a mask are written: readers then do not look for fill values that cannot occur.
  bool fill_value = true;
};

struct FileConfig {
  std::string name;            // file path without ".nc", relative to OutputConfig::directory
  // One record a period. Unset (a configuration built in code, the coupler's files): every
  // write is a record at its own model time, so the time axis holds whatever times the model
  // wrote at (coupling times, say); only instant and once fields may be in such a file.
  Frequency output_freq;
  bool restart = false;        // written to a temporary name, renamed when closed
  Frequency split_freq;         // set: one file per split period, "<name>_<period start>.nc"
  Format format = Format::cdf5;
  std::vector<FieldConfig> fields;
};

struct XiosXmlOptions;
struct XiosXmlInfo;

struct OutputConfig {
  Mode mode = Mode::serverless;
  int writers = 1;             // D
  int buffer_records = 2;      // server mode: records a variable may have in flight
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
  double transfer_s = 0;                 // time in rearrangement (both sides)
  double model_io_s = 0;                 // model side: time inside write/flush/close
  double derived_s = 0;                  // model side, part of model_io_s: derived fields (copying
                                         // their inputs, evaluating, handing them over)
  double setup_s = 0;                    // end_def: plans, file creation, coordinates
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
  std::int64_t bytes_written = 0;    // all writers
  std::int64_t records_written = 0;  // all writers (a record: one variable at one time)
  std::int64_t files_created = 0;
  double write_s = 0;                // max over writers: time in file writes and closes
  double write_mb_per_s = 0;         // bytes_written / write_s (MB = 1e6 bytes)
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
