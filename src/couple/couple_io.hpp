// The coupler's files: output records (OUTPUT, EXPOUT), input records (INPUT) and restarts,
// written and read through the I/O layer (io::Output, io::Reader) by the ranks that hold the
// points: each rank hands over or receives only its own points, the layer moves them to or from
// contiguous slabs of the file on its writers (every rank of the side or component), so no rank
// holds a global field. Every array in a file is ordered by global index, so a file does not
// depend on how many processes wrote it and a run may restart on another process count.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "estuary/decomp.hpp"

namespace estuary::io {
class Output;
}

namespace estuary::detail {

inline constexpr const char* kDefaultStartDate = "2000-01-01 00:00:00";  // the I/O layer's reference_time
inline constexpr double kCouplerFillValue = 1.0e20;  // the I/O layer's (CMIP's) fill value

// The largest buffer of one field's values this process held for the coupler's files (its own
// points, or a slab the I/O layer wrote or read for it; the grid's coordinates aside), over
// every file since the start or the reset: what the tests check stays below a field's size.
std::int64_t coupler_file_buffer_peak();
void reset_coupler_file_buffer_peak();

// An output file's time axis and grid: seconds since `start_date` ("YYYY-MM-DD hh:mm:ss";
// empty: not configured, counted from kDefaultStartDate) in the CF `calendar`; the grid `grid`
// ("" unknown) of OASIS's grid files in `directory` (grids.nc, masks.nc) gives the coordinates,
// bounds and mask when it is there with the field's size.
struct RecordFile {
  std::string start_date;
  std::string calendar = "standard";
  std::string directory;
  std::string grid;
};

// The EXPOUT/OUTPUT file of one side of a coupling: a netCDF file (CDF-5) with an unlimited
// time axis and one variable per name, a record appended at each coupling time. dims {nx, ny}
// with nx*ny = mine.global_size() give the variables (time, y, x); otherwise (time, cell). CF, so
// that CDO and xarray decode it: the time variable has units and calendar; with the grid's
// lon/lat the variables get coordinates (and bounds from the corners), and with its mask masked
// points are written as _FillValue. Every rank of the side writes a slab (D = the side's ranks).
class RecordWriter {
 public:
  // Collective over `side` (every rank holding `mine`, its points of the field); reads the grid
  // files and creates the file (an existing one is replaced).
  RecordWriter(const std::string& path, const std::vector<std::string>& names, const Decomp& mine,
               const std::vector<std::int64_t>& dims, const RecordFile& file, MPI_Comm side);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  // Collective: the record at model time t of each variable (values: names.size() local arrays
  // of mine.size(), one after another).
  void append(double t, std::span<const double> values);
  // Collective: writes what is pending and closes the file.
  void close();

 private:
  std::unique_ptr<io::Output> out_;
  std::vector<std::string> names_;
  std::int64_t n_ = 0;
};

// Collective over comm: reads the record whose `time` equals t of each variable into values
// (names.size() arrays of decomp.size(), this rank's points). Throws estuary::Error naming the
// file, variable or time that is missing, the same on every rank.
void read_records(const std::string& path, const std::vector<std::string>& names, double t, const Decomp& decomp,
                  std::span<double> values, MPI_Comm comm);

// One restart variable: this rank's points (in decomp's order) of an array ordered by global
// index; dims {nx, ny} for a 2-D grid, {} for 1-D; grid names the dimensions' grid ("" none).
struct RestartVar {
  std::string name;
  std::vector<double> values;
  Decomp decomp = Decomp::empty(0);
  std::vector<std::int64_t> dims;
  std::string grid;
};
// Collective over comm: writes all variables to `path` atomically through the I/O layer (a
// temporary "<path>.tmp", renamed once every writer closed it without error).
void write_restart(const std::string& path, const std::vector<RestartVar>& vars, MPI_Comm comm);

// A restart file opened for reading, collectively over comm (absent: every read says false).
class RestartReader {
 public:
  RestartReader(const std::string& path, MPI_Comm comm);
  ~RestartReader();
  RestartReader(const RestartReader&) = delete;
  RestartReader& operator=(const RestartReader&) = delete;
  bool exists() const;
  // Collective: variable `name` of decomp.global_size() values into out (this rank's points);
  // false when the file or the variable does not exist. Throws when it exists with another size.
  bool read(const std::string& name, const Decomp& decomp, std::span<double> out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace estuary::detail
