// PnetCDF backend: CDF-5 files written collectively by the D writer ranks.
#include <pnetcdf.h>

#include "estuary/error.hpp"
#include "io/io_detail.hpp"

namespace estuary::io::detail {
namespace {

class PnetcdfWriter final : public FileWriter {
 public:
  PnetcdfWriter(const std::string& path, MPI_Comm comm) {
    path_ = path;
    MPI_Comm_rank(comm, &rank_);
    check(ncmpi_create(comm, path.c_str(), NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &id_),
          "creating it");
  }
  ~PnetcdfWriter() override {
    // Unwinding: close what is open so that the header and record count reach the disk.
    if (id_ >= 0) ncmpi_close(id_);
  }
  int def_dim(const std::string& name, i64 len) override {
    int d = -1;
    check(ncmpi_def_dim(id_, name.c_str(), len < 0 ? NC_UNLIMITED : len, &d), "dimension " + name);
    return d;
  }
  int def_var(const std::string& name, bool dbl, const std::vector<int>& dims) override {
    int v = -1;
    check(ncmpi_def_var(id_, name.c_str(), dbl ? NC_DOUBLE : NC_FLOAT, static_cast<int>(dims.size()),
                        dims.data(), &v),
          "variable " + name);
    return v;
  }
  void put_att(int var, const std::string& name, const std::string& text) override {
    check(ncmpi_put_att_text(id_, var < 0 ? NC_GLOBAL : var, name.c_str(),
                             static_cast<MPI_Offset>(text.size()), text.c_str()),
          "attribute " + name);
  }
  void put_att(int var, const std::string& name, const std::vector<double>& values) override {
    check(ncmpi_put_att_double(id_, var < 0 ? NC_GLOBAL : var, name.c_str(), NC_DOUBLE,
                               static_cast<MPI_Offset>(values.size()), values.data()),
          "attribute " + name);
  }
  void enddef() override { check(ncmpi_enddef(id_), "leaving define mode"); }
  void put(int var, i64 record, const std::vector<Box>& boxes, const double* data) override {
    // One collective call for all boxes (varn), so writers with 0..3 boxes still match up.
    const bool rec = record >= 0;
    std::vector<std::vector<MPI_Offset>> st(boxes.size()), ct(boxes.size());
    std::vector<MPI_Offset*> sp(boxes.size()), cp(boxes.size());
    for (std::size_t b = 0; b < boxes.size(); ++b) {
      if (rec) { st[b].push_back(record); ct[b].push_back(1); }
      st[b].insert(st[b].end(), boxes[b].start.begin(), boxes[b].start.end());
      ct[b].insert(ct[b].end(), boxes[b].count.begin(), boxes[b].count.end());
      sp[b] = st[b].data();
      cp[b] = ct[b].data();
    }
    check(ncmpi_put_varn_double_all(id_, var, static_cast<int>(boxes.size()), sp.data(), cp.data(), data),
          "writing variable " + std::to_string(var) + (rec ? " record " + std::to_string(record) : ""));
  }
  void sync() override { check(ncmpi_sync(id_), "syncing it"); }
  void close() override {
    if (id_ < 0) return;
    const int id = id_;
    id_ = -1;
    check(ncmpi_close(id), "closing it");
  }

 private:
  void check(int rc, const std::string& what) const {
    if (rc == NC_NOERR) return;
    throw Error(std::string("PnetCDF: ") + ncmpi_strerror(rc),
                "file " + path_ + ", " + what + ", writer rank " + std::to_string(rank_),
                "check that the directory exists and is writable");
  }
  int id_ = -1;
  int rank_ = 0;
};

}  // namespace

std::unique_ptr<FileWriter> create_pnetcdf(const std::string& path, MPI_Comm comm) {
  return std::make_unique<PnetcdfWriter>(path, comm);
}

}  // namespace estuary::io::detail
