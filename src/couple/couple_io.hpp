// The coupler's files: output records (OUTPUT, EXPOUT), input records (INPUT) and restarts.
// Every array is global, ordered by global index, so a file does not depend on how many
// processes wrote it and a run may restart on another process count. Serial netCDF on one
// rank (the side's root): coupling fields are 2-D and written at coupling periods.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace estuary::detail {

// The time axis of an output file: seconds since `start_date` ("YYYY-MM-DD hh:mm:ss"; empty:
// not configured, counted from kDefaultStartDate) in the CF `calendar`.
struct TimeAxis {
  std::string start_date;
  std::string calendar = "standard";
};
inline constexpr const char* kDefaultStartDate = "2000-01-01 00:00:00";  // the I/O layer's reference_time

// Appends the record at model time t of each variable (values: names.size() global arrays,
// one after another) to a netCDF file with an unlimited time axis, creating it on first use.
// dims {nx, ny} with nx*ny = global give the variables (time, y, x); otherwise (time, points).
// The time variable is CF (units, calendar, standard_name) so that CDO and xarray decode dates.
void append_records(const std::string& path, const std::vector<std::string>& names, double t,
                    const std::vector<double>& values, std::int64_t global, const std::vector<std::int64_t>& dims,
                    const TimeAxis& axis);

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
