// The coupler's files: output records (OUTPUT, EXPOUT), input records (INPUT) and restarts.
// Every array is global, ordered by global index, so a file does not depend on how many
// processes wrote it and a run may restart on another process count. Serial netCDF on one
// rank (the side's root): coupling fields are 2-D and written at coupling periods.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace estuary::detail {

// A grid as the OASIS grid files of a run folder hold it (grids.nc, masks.nc): the CF
// coordinates and fill values of the coupler's files.
struct FileGrid {
  std::string name;              // "": unknown (per-variable dimensions, no coordinates)
  std::vector<double> lon, lat;  // degrees; empty: not in grids.nc (or of another size)
  int corners = 0;               // clo/cla: corner slowest (OASIS's (nx, ny, nc))
  std::vector<double> clo, cla;
  std::vector<int> masked;       // OASIS's mask, 1 = masked; empty: none in masks.nc
};
// Grid `name` of `global` points from <directory>/grids.nc and masks.nc; what is absent, or
// there with another size, stays empty.
FileGrid read_file_grid(const std::string& directory, const std::string& name, std::int64_t global);

// An output file's time axis and grid: seconds since `start_date` ("YYYY-MM-DD hh:mm:ss";
// empty: not configured, counted from kDefaultStartDate) in the CF `calendar`.
struct RecordFile {
  std::string start_date;
  std::string calendar = "standard";
  const FileGrid* grid = nullptr;  // null: unknown
};
inline constexpr const char* kDefaultStartDate = "2000-01-01 00:00:00";  // the I/O layer's reference_time
inline constexpr double kCouplerFillValue = 1.0e20;  // the I/O layer's (CMIP's) fill value

// Appends the record at model time t of each variable (values: names.size() global arrays,
// one after another) to a netCDF file with an unlimited time axis, creating it on first use.
// dims {nx, ny} with nx*ny = global give the variables (time, y, x); otherwise (time, points).
// CF, so that CDO and xarray decode it: the time variable has units and calendar; with the
// grid's lon/lat the variables get coordinates (and bounds from the corners), and with its mask
// masked points are written as _FillValue.
void append_records(const std::string& path, const std::vector<std::string>& names, double t,
                    const std::vector<double>& values, std::int64_t global, const std::vector<std::int64_t>& dims,
                    const RecordFile& file);

// Reads the record whose `time` equals t of each variable into values (names.size() arrays of
// `global`). Throws estuary::Error naming the file, variable or time that is missing.
void read_records(const std::string& path, const std::vector<std::string>& names, double t,
                  std::vector<double>& values, std::int64_t global);

struct RestartVar {
  std::string name;
  std::vector<double> values;          // global array (or a few scalars)
  std::vector<std::int64_t> dims;      // {nx, ny} for a 2-D grid, {} for 1-D
};
// Writes all variables to `path` atomically: a temporary file in the same folder, renamed.
void write_restart(const std::string& path, const std::vector<RestartVar>& vars);
// Reads variable `name` of `count` values; false when the file or the variable does not exist.
// Throws when it exists with another size.
bool read_restart_var(const std::string& path, const std::string& name, std::int64_t count, std::vector<double>& out);

}  // namespace estuary::detail
