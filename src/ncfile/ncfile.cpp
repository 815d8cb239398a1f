#include "ncfile/ncfile.hpp"

#include <netcdf.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>

#include "common/mpi_util.hpp"
#include "ncfile/cdf_header.hpp"
#include "estuary/error.hpp"

namespace estuary::detail {

std::recursive_mutex& nc_lock() {
  static std::recursive_mutex m;
  return m;
}

void nc_check(int rc, const std::string& path, const std::string& what) {
  if (rc == NC_NOERR) return;
  throw Error(std::string("netCDF: ") + nc_strerror(rc),
              "file " + path + (what.empty() ? "" : ", " + what) + ", " + world_rank_label());
}

NcFile NcFile::open(const std::string& path, bool write) {
  int id = -1;
  // netCDF would allocate what a corrupt header's counts say, and read the missing tail of a
  // truncated file as fill values without a word.
  CdfHeaderCheck::check(path);
  const int rc = nc_open(path.c_str(), write ? NC_WRITE : NC_NOWRITE, &id);
  if (rc != NC_NOERR)
    throw Error(std::string("cannot open: ") + nc_strerror(rc), "file " + path + ", " + world_rank_label(),
                "check that the file exists and is netCDF");
  return NcFile(path, id);
}

NcFile NcFile::create(const std::string& path, bool large) {
  int id = -1;
  nc_check(nc_create(path.c_str(), NC_CLOBBER | (large ? NC_64BIT_DATA : NC_64BIT_OFFSET), &id), path,
           "creating it");
  return NcFile(path, id);
}

NcFile::~NcFile() {
  if (id_ >= 0) nc_close(id_);
}

void NcFile::close() {
  if (id_ < 0) return;
  const int id = id_;
  id_ = -1;
  nc_check(nc_close(id), path_, "closing it");
}

int NcFile::find_var(const std::string& name) const {
  int v = -1;
  return nc_inq_varid(id_, name.c_str(), &v) == NC_NOERR ? v : -1;
}

int NcFile::find_dim(const std::string& name) const {
  int d = -1;
  return nc_inq_dimid(id_, name.c_str(), &d) == NC_NOERR ? d : -1;
}

int NcFile::var(const std::string& name) const {
  const int v = find_var(name);
  if (v < 0)
    throw Error("variable " + name + " is missing", "file " + path_ + ", variable " + name,
                "the file is not a complete weight or grid file");
  return v;
}

std::int64_t NcFile::dim_len(int dimid) const {
  std::size_t n = 0;
  nc_check(nc_inq_dimlen(id_, dimid, &n), path_, "dimension " + std::to_string(dimid));
  return static_cast<std::int64_t>(n);
}

std::int64_t NcFile::dim_len(const std::string& name) const {
  const int d = find_dim(name);
  if (d < 0) throw Error("dimension " + name + " is missing", "file " + path_ + ", dimension " + name);
  return dim_len(d);
}

std::vector<std::int64_t> NcFile::var_shape(int varid) const {
  int nd = 0;
  nc_check(nc_inq_varndims(id_, varid, &nd), path_, "variable " + std::to_string(varid));
  std::vector<int> dims(static_cast<std::size_t>(nd));
  nc_check(nc_inq_vardimid(id_, varid, dims.data()), path_, "variable " + std::to_string(varid));
  std::vector<std::int64_t> shape;
  for (int d : dims) shape.push_back(dim_len(d));
  return shape;
}

std::vector<std::string> NcFile::var_dim_names(int varid) const {
  int nd = 0;
  nc_check(nc_inq_varndims(id_, varid, &nd), path_, "variable " + std::to_string(varid));
  std::vector<int> dims(static_cast<std::size_t>(nd));
  nc_check(nc_inq_vardimid(id_, varid, dims.data()), path_, "variable " + std::to_string(varid));
  std::vector<std::string> names;
  for (int d : dims) {
    char name[NC_MAX_NAME + 1] = {};
    nc_check(nc_inq_dimname(id_, d, name), path_, "dimension " + std::to_string(d));
    names.emplace_back(name);
  }
  return names;
}

std::string NcFile::text_att(const std::string& name, int varid) const {
  const int v = varid < 0 ? NC_GLOBAL : varid;
  nc_type type = NC_NAT;
  std::size_t len = 0;
  if (nc_inq_att(id_, v, name.c_str(), &type, &len) != NC_NOERR || type != NC_CHAR) return {};
  std::string s(len, '\0');
  nc_check(nc_get_att_text(id_, v, name.c_str(), s.data()), path_, "attribute " + name);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

int NcFile::def_dim(const std::string& name, std::int64_t len) {
  int d = -1;
  nc_check(nc_def_dim(id_, name.c_str(), static_cast<std::size_t>(len), &d), path_, "dimension " + name);
  return d;
}

int NcFile::def_var(const std::string& name, int nc_type, const std::vector<int>& dims) {
  int v = -1;
  nc_check(nc_def_var(id_, name.c_str(), nc_type, static_cast<int>(dims.size()), dims.data(), &v), path_,
           "variable " + name);
  return v;
}

void NcFile::put_att(const std::string& name, const std::string& text, int varid) {
  nc_check(nc_put_att_text(id_, varid < 0 ? NC_GLOBAL : varid, name.c_str(), text.size(), text.c_str()),
           path_, "attribute " + name);
}

void NcFile::enddef() { nc_check(nc_enddef(id_), path_, "leaving define mode"); }

void NcFile::redef() { nc_check(nc_redef(id_), path_, "entering define mode"); }

void in_turns(MPI_Comm comm, const std::function<void()>& body) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::exception_ptr failure;
  for (int r = 0; r < size; ++r) {
    if (r == rank) {
      try {
        body();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    check_mpi(MPI_Barrier(comm), "MPI_Barrier");
  }
  agree(comm, [&] {
    if (failure) std::rethrow_exception(failure);
  });
}

void for_each_consecutive(const std::vector<std::int64_t>& idx,
                          const std::function<void(std::size_t, std::int64_t, std::int64_t)>& f) {
  std::size_t i = 0;
  while (i < idx.size()) {
    std::size_t j = i + 1;
    while (j < idx.size() && idx[j] == idx[j - 1] + 1) ++j;
    f(i, idx[i], static_cast<std::int64_t>(j - i));
    i = j;
  }
}

}  // namespace estuary::detail
