// Internals of the I/O part: file backends (PnetCDF and serial netCDF behind one interface, in
// separate files because their headers define the same NC_* macros) and slab arithmetic.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ncfile/ncfile.hpp"

namespace estuary::io::detail {

using i64 = std::int64_t;

// A hyperslab of a variable without its record dimension.
struct Box {
  std::vector<i64> start, count;
};

// The boxes that make up the flattened range [lo, hi) of a row-major array of `shape`: at most
// 2 * rank - 1 of them (partial first row, full rows, partial last row, recursively).
std::vector<Box> range_boxes(const std::vector<i64>& shape, i64 lo, i64 hi);

// [lo, hi) of writer w of d over n elements.
inline std::pair<i64, i64> slab_range(i64 n, int d, int w) { return {n * w / d, n * (w + 1) / d}; }

// A file being written by the writer ranks (collective over their communicator). Variables are
// stored as float or double; data always arrives as double (the library converts).
class FileWriter {
 public:
  virtual ~FileWriter() = default;
  // len < 0: the unlimited (record) dimension.
  virtual int def_dim(const std::string& name, i64 len) = 0;
  virtual int def_var(const std::string& name, bool dbl, const std::vector<int>& dims) = 0;
  virtual void put_att(int var, const std::string& name, const std::string& text) = 0;
  virtual void put_att(int var, const std::string& name, const std::vector<double>& values) = 0;
  // netCDF-4 only: deflate `level` with the shuffle filter, chunks of `chunk` (with the record
  // dimension's 1 first when the variable has one).
  virtual void def_deflate(int var, int level, const std::vector<i64>& chunk) {
    (void)var; (void)level; (void)chunk;
  }
  virtual void enddef() = 0;
  // Collective: this rank's boxes of `var` at `record` (< 0: no record dimension), the data of
  // the boxes one after the other.
  virtual void put(int var, i64 record, const std::vector<Box>& boxes, const double* data) = 0;
  virtual void sync() = 0;
  virtual void close() = 0;
  const std::string& path() const { return path_; }

 protected:
  std::string path_;
};

std::unique_ptr<FileWriter> create_pnetcdf(const std::string& path, MPI_Comm comm);
std::unique_ptr<FileWriter> create_netcdf(const std::string& path);
// netCDF-4 (HDF5). comm of size 1: serial netCDF-4; larger: netCDF-4 parallel with collective
// access, or, in a build without it (or with ESTUARY_NC4_IN_TURN=1), the writers in turn.
std::unique_ptr<FileWriter> create_netcdf4(const std::string& path, MPI_Comm comm);

// The process-wide netCDF lock of the ncfile layer (ncfile/ncfile.hpp): every netCDF call of the
// I/O part (writers, readers and the reader's prefetch thread) holds it.
using estuary::detail::nc_lock;

}  // namespace estuary::io::detail
