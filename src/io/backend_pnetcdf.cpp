// PnetCDF backend: CDF-5 files written collectively by the D writer ranks.
#include <pnetcdf.h>

#include <algorithm>

#include "estuary/error.hpp"
#include "io/io_detail.hpp"

namespace estuary::io::detail {
namespace {

class PnetcdfWriter final : public FileWriter {
 public:
  PnetcdfWriter(const std::string& path, MPI_Comm comm) {
    path_ = path;
    comm_ = comm;
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
  void put_att(int var, const std::string& name, const std::vector<double>& values, bool as_float) override {
    check(ncmpi_put_att_double(id_, var < 0 ? NC_GLOBAL : var, name.c_str(), as_float ? NC_FLOAT : NC_DOUBLE,
                               static_cast<MPI_Offset>(values.size()), values.data()),
          "attribute " + name);
  }
  void enddef() override {
    check(ncmpi_enddef(id_), "leaving define mode");
    layout();
    reserve(fixed_end_, "the header and the variables without time");
  }
  void prepare_record(i64 record) override {
    if (record >= reserved_records_ && recsize_ > 0) {
      reserve(begin_rec_ + (record + 1) * recsize_, "record " + std::to_string(record));
      reserved_records_ = record + 1;
    }
  }
  void put(int var, i64 record, const std::vector<Box>& boxes, const double* data) override {
    // One collective call for all boxes (varn), so writers with 0..3 boxes still match up.
    const Starts s(record, boxes);
    check(ncmpi_put_varn_double_all(id_, var, static_cast<int>(boxes.size()), s.sp.data(), s.cp.data(), data),
          "writing variable " + std::to_string(var) + (record >= 0 ? " record " + std::to_string(record) : ""));
  }
  void put_record(i64 record, const std::vector<Put>& puts) override {
    // Every variable's request posted, then one collective wait: PnetCDF merges them into one
    // MPI-IO write of the record. A writer with no boxes posts nothing and still waits.
    std::vector<Starts> starts;
    starts.reserve(puts.size());
    std::vector<int> reqs(puts.size(), NC_REQ_NULL), st(puts.size(), NC_NOERR);
    for (std::size_t k = 0; k < puts.size(); ++k) {
      const Starts& s = starts.emplace_back(record, *puts[k].boxes);
      const int rc = ncmpi_iput_varn_double(id_, puts[k].var, static_cast<int>(puts[k].boxes->size()), s.sp.data(),
                                            s.cp.data(), puts[k].data, &reqs[k]);
      if (rc != NC_NOERR) {
        ncmpi_wait_all(id_, static_cast<int>(k), reqs.data(), st.data());  // (collective: the others wait too)
        check(rc, "writing " + puts[k].name);
      }
    }
    check(ncmpi_wait_all(id_, static_cast<int>(reqs.size()), reqs.data(), st.data()),
          "writing record " + std::to_string(record));
    for (std::size_t k = 0; k < puts.size(); ++k) check(st[k], "writing " + puts[k].name);
  }
  void sync() override { check(ncmpi_sync(id_), "syncing it"); }
  // Only the header's record count: the data is already in the file (collective writes).
  void commit_records(i64) override { check(ncmpi_sync_numrecs(id_), "writing the record count"); }
  bool classic() const override { return true; }
  void close() override {
    if (id_ < 0) return;
    const int id = id_;
    id_ = -1;
    check(ncmpi_close(id), "closing it");
  }

 private:
  // A put's start and count vectors for ncmpi_*_varn (the record first when there is one).
  struct Starts {
    std::vector<std::vector<MPI_Offset>> st, ct;
    std::vector<MPI_Offset*> sp, cp;
    Starts(i64 record, const std::vector<Box>& boxes) : st(boxes.size()), ct(boxes.size()), sp(boxes.size()), cp(boxes.size()) {
      for (std::size_t b = 0; b < boxes.size(); ++b) {
        if (record >= 0) {
          st[b].push_back(record);
          ct[b].push_back(1);
        }
        st[b].insert(st[b].end(), boxes[b].start.begin(), boxes[b].start.end());
        ct[b].insert(ct[b].end(), boxes[b].count.begin(), boxes[b].count.end());
        sp[b] = st[b].data();
        cp[b] = ct[b].data();
      }
    }
  };
  void check(int rc, const std::string& what) const {
    if (rc == NC_NOERR) return;
    throw Error(std::string("PnetCDF: ") + ncmpi_strerror(rc),
                "file " + path_ + ", " + what + ", writer rank " + std::to_string(rank_),
                "check that the directory exists and is writable");
  }
  // Where the data lies (the classic layout): the end of the fixed-size variables, the start
  // and the size of one record.
  void layout() {
    int nvars = 0, unlim = -1;
    check(ncmpi_inq_nvars(id_, &nvars), "reading its layout");
    check(ncmpi_inq_unlimdim(id_, &unlim), "reading its layout");
    check(ncmpi_inq_recsize(id_, &recsize_), "reading its layout");
    begin_rec_ = -1;
    for (int v = 0; v < nvars; ++v) {
      MPI_Offset offset = 0, len = 1, dim = 0;
      nc_type type = 0;
      int nd = 0;
      check(ncmpi_inq_varoffset(id_, v, &offset), "reading its layout");
      check(ncmpi_inq_vartype(id_, v, &type), "reading its layout");
      check(ncmpi_inq_varndims(id_, v, &nd), "reading its layout");
      std::vector<int> dims(static_cast<std::size_t>(nd) + 1);  // (PnetCDF's NC_MAX_VAR_DIMS is INT_MAX)
      check(ncmpi_inq_vardimid(id_, v, dims.data()), "reading its layout");
      const bool rec = nd > 0 && dims[0] == unlim;
      for (int d = rec ? 1 : 0; d < nd; ++d) {
        check(ncmpi_inq_dimlen(id_, dims[d], &dim), "reading its layout");
        len *= dim;
      }
      static const MPI_Offset type_size[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
      const MPI_Offset size = type >= 1 && type <= 11 ? type_size[type] : 8;
      if (rec) begin_rec_ = begin_rec_ < 0 ? offset : std::min<MPI_Offset>(begin_rec_, offset);
      else fixed_end_ = std::max<MPI_Offset>(fixed_end_, offset + len * size);
    }
  }

  void reserve(i64 end, const std::string& what) { reserve_space(path_, end, comm_, what + ", writer rank 0"); }

  int id_ = -1;
  int rank_ = 0;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Offset recsize_ = 0, begin_rec_ = 0, fixed_end_ = 0;
  i64 reserved_records_ = 0;
};

}  // namespace

std::unique_ptr<FileWriter> create_pnetcdf(const std::string& path, MPI_Comm comm) {
  return std::make_unique<PnetcdfWriter>(path, comm);
}

}  // namespace estuary::io::detail
