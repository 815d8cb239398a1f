// Internals of the I/O part: file backends (PnetCDF and serial netCDF behind one interface, in
// separate files because their headers define the same NC_* macros) and slab arithmetic.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
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
  // as_float: stored as NC_FLOAT (an attribute that must have its float variable's type, such as
  // _FillValue), else NC_DOUBLE.
  virtual void put_att(int var, const std::string& name, const std::vector<double>& values, bool as_float = false) = 0;
  // netCDF-4 only: deflate `level` with the shuffle filter, chunks of `chunk` (with the record
  // dimension's 1 first when the variable has one).
  virtual void def_deflate(int var, int level, const std::vector<i64>& chunk) {
    (void)var; (void)level; (void)chunk;
  }
  // netCDF-4 only: Zstandard at `level` with chunks of `chunk`; an error naming `name` when the
  // netCDF build has no Zstandard filter.
  virtual void def_zstd(int var, int level, const std::vector<i64>& chunk, const std::string& name) {
    (void)var; (void)level; (void)chunk; (void)name;
  }
  // netCDF-4 only: nc_def_var_quantize (mode 1 BitGroom, 2 Granular BitRound, 3 BitRound).
  virtual void def_quantize(int var, int mode, int significant) { (void)var; (void)mode; (void)significant; }
  virtual void enddef() = 0;
  // Collective: this rank's boxes of `var` at `record` (< 0: no record dimension), the data of
  // the boxes one after the other.
  virtual void put(int var, i64 record, const std::vector<Box>& boxes, const double* data) = 0;
  // Collective: several variables' boxes of one record at once; each put's boxes and data stay
  // valid until this returns. An error names the put's `name`. The default writes them one by
  // one; PnetCDF posts them all and waits once, so that its collective I/O sees the whole record
  // (fewer, larger file writes; one collective a record, not one a variable).
  struct Put {
    int var = -1;
    const std::vector<Box>* boxes = nullptr;
    const double* data = nullptr;
    std::string name;  // for errors: "variable thetao, record 3"
  };
  virtual void put_record(i64 record, const std::vector<Put>& puts) {
    // Every put is made even after one failed here, so that the writers' collective calls still
    // match (a write may fail on one writer only); the first error is thrown at the end.
    std::optional<Error> first;
    for (const Put& p : puts) {
      try {
        put(p.var, record, *p.boxes, p.data);
      } catch (const Error& e) {
        if (!first) first.emplace(e.fault(), e.where() + ", " + p.name, e.fix());
      }
    }
    if (first) throw *first;
  }
  virtual void sync() = 0;
  // Called before record `record` is written (collective): the PnetCDF backend reserves its
  // space here (see reserve_space).
  virtual void prepare_record(i64 record) { (void)record; }
  // Records [0, n) are complete: make the record count that says so reach the file, so that a
  // reader (or the same file after a crash) sees them and nothing beyond. Collective.
  virtual void commit_records(i64 n) { (void)n; sync(); }
  // True for the classic formats (CDF-5), whose record count truncate_records can lower.
  virtual bool classic() const { return false; }
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

// OpenMPI's MPI-IO (OMPIO) prints "No space left on device" for a failed collective write but
// returns success, so PnetCDF does not see a full disk and leaves holes of zeros. The PnetCDF
// backend therefore reserves the file's space before it writes (posix_fallocate: ENOSPC or
// EDQUOT now, not a silent hole later): writer 0 of comm reserves the file's first `end` bytes
// and every writer throws the same Error, naming the file and `what`, when it could not. One
// system call per record.
void reserve_space(const std::string& path, i64 end, MPI_Comm comm, const std::string& what);

// Sets the record count of a closed classic-format (CDF-1/2/5) file to n when it is larger:
// records a failed write left half-written disappear from the file, the complete ones stay.
void truncate_records(const std::string& path, i64 n);

// Wraps w so that the write of record R (of any variable) on writer W fails after the write
// itself, as a disk-full error would, when ESTUARY_IO_FAULT="record=R[,writer=W]" (W: 0) is set.
// The fault-injection suite's switch; unset, w is returned as it is.
std::unique_ptr<FileWriter> with_fault_injection(std::unique_ptr<FileWriter> w, int writer);

// The process-wide netCDF lock of the ncfile layer (ncfile/ncfile.hpp): every netCDF call of the
// I/O part (writers, readers and the reader's prefetch thread) holds it.
using estuary::detail::nc_lock;

}  // namespace estuary::io::detail
