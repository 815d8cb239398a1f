// netCDF-4 (HDF5) backend. One writer: serial netCDF-4. Several: netCDF-4 parallel
// (nc_create_par over the writers' communicator, every variable in collective access so that
// deflated variables can be written in parallel and the unlimited dimension grows collectively).
// A build whose netCDF lacks parallel support writes with the writers in turn instead: writer 0
// defines the file, then each writer opens it, writes its boxes and closes it, one after another.
#include <netcdf.h>
#include <netcdf_filter.h>
#ifdef ESTUARY_NETCDF_PAR
#include <netcdf_par.h>
#endif

#include <sys/statvfs.h>

#include <cstdlib>
#include <filesystem>
#include <vector>
#include <cstring>

#include "estuary/error.hpp"
#include "estuary/settings.hpp"
#include "estuary/io.hpp"
#include "io/io_detail.hpp"

namespace estuary::io {

bool have_netcdf4_parallel() {
#ifdef ESTUARY_NETCDF_PAR
  return true;
#else
  return false;
#endif
}

namespace detail {

namespace {

class Netcdf4Writer final : public FileWriter {
 public:
  Netcdf4Writer(const std::string& path, MPI_Comm comm) {
    path_ = path;
    comm_ = comm;
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    in_turn_ = size_ > 1 && (!have_netcdf4_parallel() || Settings::get().nc4_in_turn);
    par_ = size_ > 1 && !in_turn_;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    if (par_) {
#ifdef ESTUARY_NETCDF_PAR
      check(nc_create_par(path.c_str(), NC_NETCDF4 | NC_CLOBBER, comm, MPI_INFO_NULL, &id_), "creating it");
#endif
    } else if (rank_ == 0) {
      check(nc_create(path.c_str(), NC_NETCDF4 | NC_CLOBBER, &id_), "creating it");
    }
  }
  ~Netcdf4Writer() override {
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    if (id_ >= 0) nc_close(id_);
  }
  // Define-mode calls: every writer in parallel mode, writer 0 otherwise (ids are the same).
  bool defines() const { return par_ || rank_ == 0; }
  int def_dim(const std::string& name, i64 len) override {
    int d = ndims_++;
    if (!defines()) return d;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    check(nc_def_dim(id_, name.c_str(), len < 0 ? NC_UNLIMITED : static_cast<size_t>(len), &d),
          "dimension " + name);
    return d;
  }
  int def_var(const std::string& name, bool dbl, const std::vector<int>& dims) override {
    int v = nvars_++;
    if (!defines()) return v;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    check(nc_def_var(id_, name.c_str(), dbl ? NC_DOUBLE : NC_FLOAT, static_cast<int>(dims.size()),
                     dims.data(), &v),
          "variable " + name);
#ifdef ESTUARY_NETCDF_PAR
    if (par_) check(nc_var_par_access(id_, v, NC_COLLECTIVE), "variable " + name + " collective access");
#endif
    return v;
  }
  void def_deflate(int var, int level, const std::vector<i64>& chunk) override {
    if (!defines() || level <= 0) return;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    std::vector<size_t> c(chunk.begin(), chunk.end());
    check(nc_def_var_chunking(id_, var, NC_CHUNKED, c.data()), "chunking variable " + std::to_string(var));
    check(nc_def_var_deflate(id_, var, 1, 1, level), "deflate of variable " + std::to_string(var));
  }
  void def_zstd(int var, int level, const std::vector<i64>& chunk, const std::string& name) override {
    if (!defines() || level <= 0) return;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    std::vector<size_t> c(chunk.begin(), chunk.end());
    check(nc_def_var_chunking(id_, var, NC_CHUNKED, c.data()), "chunking variable " + std::to_string(var));
    // H5Z_FILTER_ZSTD (32015) exists only when netCDF was built with it and finds the plugin; a
    // netCDF without it may also accept the call and set nothing (Debian's 4.9.0 does): ask back.
    int has = 0, got_level = 0;
    if (nc_inq_filter_avail(id_, 32015) != NC_NOERR || nc_def_var_zstandard(id_, var, level) != NC_NOERR ||
        nc_inq_var_zstandard(id_, var, &has, &got_level) != NC_NOERR || !has)
      throw Error("this netCDF build has no Zstandard filter", "variable " + name + ", zstd",
                  "use deflate instead, or a netCDF built with zstd (and HDF5_PLUGIN_PATH set to its plugins)");
  }
  static_assert(static_cast<int>(FieldConfig::Quantize::bitgroom) == NC_QUANTIZE_BITGROOM &&
                static_cast<int>(FieldConfig::Quantize::granularbr) == NC_QUANTIZE_GRANULARBR &&
                static_cast<int>(FieldConfig::Quantize::bitround) == NC_QUANTIZE_BITROUND);
  void def_quantize(int var, int mode, int significant) override {
    if (!defines()) return;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    check(nc_def_var_quantize(id_, var, mode, significant), "quantize of variable " + std::to_string(var));
  }
  void put_att(int var, const std::string& name, const std::string& text) override {
    if (!defines()) return;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    check(nc_put_att_text(id_, var < 0 ? NC_GLOBAL : var, name.c_str(), text.size(), text.c_str()),
          "attribute " + name);
  }
  void put_att(int var, const std::string& name, const std::vector<double>& values, bool as_float) override {
    if (!defines()) return;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    check(nc_put_att_double(id_, var < 0 ? NC_GLOBAL : var, name.c_str(), as_float ? NC_FLOAT : NC_DOUBLE, values.size(),
                            values.data()),
          "attribute " + name);
  }
  void enddef() override {
    if (defines()) {
      std::lock_guard<std::recursive_mutex> g(nc_lock());
      check(nc_enddef(id_), "leaving define mode");
    }
    if (par_) require_free_space(0, "the variables without time");
    if (in_turn_) {
      if (rank_ == 0) close_id();
      MPI_Barrier(comm_);
    }
  }
  void put(int var, i64 record, const std::vector<Box>& boxes, const double* data) override {
    if (in_turn_) {
      for (int r = 0; r < size_; ++r) {
        if (r == rank_ && !boxes.empty()) {
          std::lock_guard<std::recursive_mutex> g(nc_lock());
          check(nc_open(path_.c_str(), NC_WRITE, &id_), "opening it (writer " + std::to_string(rank_) + ")");
          put_boxes(var, record, boxes, data, boxes.size());
          close_id();
        }
        MPI_Barrier(comm_);
      }
      return;
    }
    std::size_t calls = boxes.size();
    if (par_) {
      // Collective: every writer makes the same number of calls; extra ones write nothing.
      long mine = static_cast<long>(boxes.size()), most = 0;
      MPI_Allreduce(&mine, &most, 1, MPI_LONG, MPI_MAX, comm_);
      calls = static_cast<std::size_t>(most);
    }
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    put_boxes(var, record, boxes, data, calls);
  }
  // Parallel HDF5 over OpenMPI's MPI-IO meets a full disk on one writer inside its own
  // collective chunk allocation while the others wait in HDF5's barrier: a hang no error
  // handling outside HDF5 can undo. So before each record the writers check, on writer 0,
  // that the filesystem has room for two records' uncompressed data and 1 MiB of HDF5
  // metadata, and fail together, naming the file and record, when it has not. A guard, not a
  // reservation: space taken by another program between the check and the write escapes it.
  void prepare_record(i64 record) override {
    if (par_) require_free_space(2 * record_bytes(), "record " + std::to_string(record));
  }
  void sync() override {
    if (id_ < 0) return;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    check(nc_sync(id_), "syncing it");
  }
  void close() override {
    if (in_turn_) {
      MPI_Barrier(comm_);
      return;
    }
    close_id();
  }

 private:
  void put_boxes(int var, i64 record, const std::vector<Box>& boxes, const double* data, std::size_t calls) {
    const bool rec = record >= 0;
    int nd = 0;
    check(nc_inq_varndims(id_, var, &nd), "variable " + std::to_string(var));
    for (std::size_t k = 0; k < calls; ++k) {
      std::vector<size_t> st, ct;
      i64 n = 1;
      if (k < boxes.size()) {
        const Box& b = boxes[k];
        if (rec) { st.push_back(static_cast<size_t>(record)); ct.push_back(1); }
        for (std::size_t j = 0; j < b.start.size(); ++j) {
          st.push_back(static_cast<size_t>(b.start[j]));
          ct.push_back(static_cast<size_t>(b.count[j]));
          n *= b.count[j];
        }
      } else {
        st.assign(static_cast<std::size_t>(nd), 0);
        ct.assign(static_cast<std::size_t>(nd), 0);
        n = 0;
      }
      static const double dummy = 0;
      check(nc_put_vara_double(id_, var, st.data(), ct.data(), n > 0 ? data : &dummy),
            "writing variable " + std::to_string(var) + (rec ? " record " + std::to_string(record) : ""));
      data += n;
    }
  }
  void require_free_space(i64 bytes, const std::string& what) {
    const i64 need = bytes + (i64{1} << 20);
    long long avail = -1;
    if (rank_ == 0) {
      const std::string dir = std::filesystem::path(path_).parent_path().string();
      struct statvfs st {};
      if (::statvfs(dir.empty() ? "." : dir.c_str(), &st) == 0)
        avail = static_cast<long long>(st.f_bavail) * static_cast<long long>(st.f_frsize);
    }
    MPI_Bcast(&avail, 1, MPI_LONG_LONG, 0, comm_);
    if (avail >= 0 && avail < need)
      throw Error("No space left on device: " + std::to_string(avail) + " bytes free, " + std::to_string(need) +
                      " needed to write safely",
                  "file " + path_ + ", " + what + ", writer 0", "free space on the output filesystem");
  }
  // The bytes of one record of every record variable, uncompressed.
  i64 record_bytes() {
    if (record_bytes_ >= 0) return record_bytes_;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    int nvars = 0, unlim = -1;
    check(nc_inq_nvars(id_, &nvars), "reading its variables");
    check(nc_inq_unlimdim(id_, &unlim), "reading its variables");
    record_bytes_ = 0;
    for (int v = 0; v < nvars; ++v) {
      int nd = 0;
      nc_type type = 0;
      check(nc_inq_varndims(id_, v, &nd), "reading its variables");
      check(nc_inq_vartype(id_, v, &type), "reading its variables");
      std::vector<int> dims(static_cast<std::size_t>(nd) + 1);
      check(nc_inq_vardimid(id_, v, dims.data()), "reading its variables");
      if (nd == 0 || dims[0] != unlim) continue;
      std::size_t size = 0, len = 0;
      check(nc_inq_type(id_, type, nullptr, &size), "reading its variables");
      i64 n = static_cast<i64>(size);
      for (int d = 1; d < nd; ++d) {
        check(nc_inq_dimlen(id_, dims[static_cast<std::size_t>(d)], &len), "reading its variables");
        n *= static_cast<i64>(len);
      }
      record_bytes_ += n;
    }
    return record_bytes_;
  }
  void close_id() {
    if (id_ < 0) return;
    std::lock_guard<std::recursive_mutex> g(nc_lock());
    const int id = id_;
    id_ = -1;
    check(nc_close(id), "closing it");
  }
  void check(int rc, const std::string& what) const {
    if (rc == NC_NOERR) return;
    throw Error(std::string("netCDF-4: ") + nc_strerror(rc),
                "file " + path_ + ", " + what + ", writer " + std::to_string(rank_),
                "check that the directory exists and is writable");
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
  int id_ = -1, rank_ = 0, size_ = 1, ndims_ = 0, nvars_ = 0;
  bool par_ = false, in_turn_ = false;
  i64 record_bytes_ = -1;
};

}  // namespace

std::unique_ptr<FileWriter> create_netcdf4(const std::string& path, MPI_Comm comm) {
  return std::make_unique<Netcdf4Writer>(path, comm);
}

}  // namespace detail
}  // namespace estuary::io
