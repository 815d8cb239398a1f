// The one netCDF access layer (ncfile/), used by the grid, remap, couple and io parts: every
// failure becomes an estuary::Error that names the file and the variable or dimension at fault,
// and one process-wide lock serialises the netCDF calls that may run on several threads.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace estuary::detail {

// netCDF-C and HDF5 are not thread-safe: every netCDF call holds this lock — NcFile's methods
// take it themselves, and the I/O part's writers take it around their own calls — so the I/O
// reader's prefetch thread may run beside the coupler, remap and grid parts.
std::recursive_mutex& nc_lock();

// Throws Error("<netCDF message> ...", "file <path>, <what>") when rc is not NC_NOERR.
void nc_check(int rc, const std::string& path, const std::string& what);

// An open netCDF file, closed on destruction; open() checks the file's header and that the
// file is complete (ncfile/cdf_header.hpp).
class NcFile {
 public:
  // netCDF's external types and the unlimited length (NC_INT, NC_INT64, NC_DOUBLE, NC_UNLIMITED,
  // checked against netcdf.h in ncfile.cpp), so that no part but this one includes netcdf.h.
  static constexpr int kInt = 4, kInt64 = 10, kDouble = 6;
  static constexpr std::int64_t kUnlimited = 0;

  static NcFile open(const std::string& path, bool write = false);
  // Creates (clobbering) a classic 64-bit-offset file, or CDF5 when `large` (int64 indices).
  static NcFile create(const std::string& path, bool large = false);
  ~NcFile();
  NcFile(NcFile&& o) noexcept : path_(std::move(o.path_)), id_(o.id_) { o.id_ = -1; }
  NcFile(const NcFile&) = delete;
  NcFile& operator=(const NcFile&) = delete;

  int id() const { return id_; }
  const std::string& path() const { return path_; }
  void close();

  // Reading. find_* return -1 when absent; var() throws naming the missing variable.
  int find_var(const std::string& name) const;
  int find_dim(const std::string& name) const;
  int var(const std::string& name) const;
  std::int64_t dim_len(int dimid) const;
  std::int64_t dim_len(const std::string& name) const;  // throws when absent
  std::vector<std::int64_t> var_shape(int varid) const;  // dimension lengths
  std::vector<std::string> var_dim_names(int varid) const;
  bool var_is_real(int varid) const;  // stored as float or double
  std::string text_att(const std::string& name, int varid = -1) const;  // "" when absent
  int nvars() const;
  std::string var_name(int varid) const;

  // Values of variable `varid`: all of them, or the hyperslab start/count (one entry a
  // dimension). T: int, long long or double; netCDF converts from the stored type. Errors name
  // the file and the variable.
  template <class T>
  void get(int varid, T* out) const;
  template <class T>
  void get(int varid, const std::size_t* start, const std::size_t* count, T* out) const;
  template <class T>
  void put(int varid, const T* in);
  template <class T>
  void put(int varid, const std::size_t* start, const std::size_t* count, const T* in);

  // Defining (file in define mode after create()).
  int def_dim(const std::string& name, std::int64_t len);
  int def_var(const std::string& name, int nc_type, const std::vector<int>& dims);
  void put_att(const std::string& name, const std::string& text, int varid = -1);
  void put_att(const std::string& name, double value, int varid);  // an NC_DOUBLE attribute
  void enddef();
  // Back to define mode in a file opened for writing (to add dimensions or variables).
  void redef();

 private:
  NcFile(std::string path, int id) : path_(std::move(path)), id_(id) {}
  std::string path_;
  int id_ = -1;
};

// Runs `body` on each rank of comm in rank order (rank r waits for ranks below it), for
// writing one file with serial netCDF. Errors are agreed on: every rank throws if one did.
void in_turns(MPI_Comm comm, const std::function<void()>& body);

// Runs of consecutive values in `idx` (in order): f(first position, first value, count).
void for_each_consecutive(const std::vector<std::int64_t>& idx,
                          const std::function<void(std::size_t, std::int64_t, std::int64_t)>& f);

}  // namespace estuary::detail
