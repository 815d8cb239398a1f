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

static_assert(NcFile::kInt == NC_INT && NcFile::kInt64 == NC_INT64 && NcFile::kDouble == NC_DOUBLE &&
              NcFile::kUnlimited == NC_UNLIMITED);

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
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
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
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  int id = -1;
  nc_check(nc_create(path.c_str(), NC_CLOBBER | (large ? NC_64BIT_DATA : NC_64BIT_OFFSET), &id), path,
           "creating it");
  return NcFile(path, id);
}

NcFile::~NcFile() {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  if (id_ >= 0) nc_close(id_);
}

void NcFile::close() {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  if (id_ < 0) return;
  const int id = id_;
  id_ = -1;
  nc_check(nc_close(id), path_, "closing it");
}

int NcFile::find_var(const std::string& name) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  int v = -1;
  return nc_inq_varid(id_, name.c_str(), &v) == NC_NOERR ? v : -1;
}

int NcFile::find_dim(const std::string& name) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  int d = -1;
  return nc_inq_dimid(id_, name.c_str(), &d) == NC_NOERR ? d : -1;
}

int NcFile::var(const std::string& name) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  const int v = find_var(name);
  if (v < 0)
    throw Error("variable " + name + " is missing", "file " + path_ + ", variable " + name,
                "the file is not a complete weight or grid file");
  return v;
}

std::int64_t NcFile::dim_len(int dimid) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  std::size_t n = 0;
  nc_check(nc_inq_dimlen(id_, dimid, &n), path_, "dimension " + std::to_string(dimid));
  return static_cast<std::int64_t>(n);
}

std::int64_t NcFile::dim_len(const std::string& name) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  const int d = find_dim(name);
  if (d < 0) throw Error("dimension " + name + " is missing", "file " + path_ + ", dimension " + name);
  return dim_len(d);
}

std::vector<std::int64_t> NcFile::var_shape(int varid) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  int nd = 0;
  nc_check(nc_inq_varndims(id_, varid, &nd), path_, "variable " + std::to_string(varid));
  std::vector<int> dims(static_cast<std::size_t>(nd));
  nc_check(nc_inq_vardimid(id_, varid, dims.data()), path_, "variable " + std::to_string(varid));
  std::vector<std::int64_t> shape;
  for (int d : dims) shape.push_back(dim_len(d));
  return shape;
}

bool NcFile::var_is_real(int varid) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  nc_type t = NC_NAT;
  nc_check(nc_inq_vartype(id_, varid, &t), path_, "variable " + std::to_string(varid));
  return t == NC_FLOAT || t == NC_DOUBLE;
}

std::vector<std::string> NcFile::var_dim_names(int varid) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
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
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
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
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  int d = -1;
  nc_check(nc_def_dim(id_, name.c_str(), static_cast<std::size_t>(len), &d), path_, "dimension " + name);
  return d;
}

int NcFile::def_var(const std::string& name, int nc_type, const std::vector<int>& dims) {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  int v = -1;
  nc_check(nc_def_var(id_, name.c_str(), nc_type, static_cast<int>(dims.size()), dims.data(), &v), path_,
           "variable " + name);
  return v;
}

void NcFile::put_att(const std::string& name, const std::string& text, int varid) {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  nc_check(nc_put_att_text(id_, varid < 0 ? NC_GLOBAL : varid, name.c_str(), text.size(), text.c_str()),
           path_, "attribute " + name);
}

void NcFile::put_att(const std::string& name, double value, int varid) {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  nc_check(nc_put_att_double(id_, varid < 0 ? NC_GLOBAL : varid, name.c_str(), NC_DOUBLE, 1, &value), path_,
           "attribute " + name);
}

void NcFile::enddef() {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  nc_check(nc_enddef(id_), path_, "leaving define mode");
}

void NcFile::redef() {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  nc_check(nc_redef(id_), path_, "entering define mode");
}

int NcFile::nvars() const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  int n = 0;
  nc_check(nc_inq_nvars(id_, &n), path_, "its variables");
  return n;
}

std::string NcFile::var_name(int varid) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  char name[NC_MAX_NAME + 1] = {};
  nc_check(nc_inq_varname(id_, varid, name), path_, "variable " + std::to_string(varid));
  return name;
}

namespace {
// The netCDF call of each type; start == nullptr: the whole variable.
int nc_get(int id, int v, const std::size_t* s, const std::size_t* c, int* out) {
  return s ? nc_get_vara_int(id, v, s, c, out) : nc_get_var_int(id, v, out);
}
int nc_get(int id, int v, const std::size_t* s, const std::size_t* c, long long* out) {
  return s ? nc_get_vara_longlong(id, v, s, c, out) : nc_get_var_longlong(id, v, out);
}
int nc_get(int id, int v, const std::size_t* s, const std::size_t* c, double* out) {
  return s ? nc_get_vara_double(id, v, s, c, out) : nc_get_var_double(id, v, out);
}
int nc_put(int id, int v, const std::size_t* s, const std::size_t* c, const int* in) {
  return s ? nc_put_vara_int(id, v, s, c, in) : nc_put_var_int(id, v, in);
}
int nc_put(int id, int v, const std::size_t* s, const std::size_t* c, const long long* in) {
  return s ? nc_put_vara_longlong(id, v, s, c, in) : nc_put_var_longlong(id, v, in);
}
int nc_put(int id, int v, const std::size_t* s, const std::size_t* c, const double* in) {
  return s ? nc_put_vara_double(id, v, s, c, in) : nc_put_var_double(id, v, in);
}
}  // namespace

template <class T>
void NcFile::get(int varid, T* out) const {
  get(varid, nullptr, nullptr, out);
}

template <class T>
void NcFile::get(int varid, const std::size_t* start, const std::size_t* count, T* out) const {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  const int rc = nc_get(id_, varid, start, count, out);
  if (rc != NC_NOERR) nc_check(rc, path_, "variable " + var_name(varid));
}

template <class T>
void NcFile::put(int varid, const T* in) {
  put(varid, nullptr, nullptr, in);
}

template <class T>
void NcFile::put(int varid, const std::size_t* start, const std::size_t* count, const T* in) {
  const std::lock_guard<std::recursive_mutex> lock(nc_lock());
  const int rc = nc_put(id_, varid, start, count, in);
  if (rc != NC_NOERR) nc_check(rc, path_, "variable " + var_name(varid));
}

template void NcFile::get(int, int*) const;
template void NcFile::get(int, long long*) const;
template void NcFile::get(int, double*) const;
template void NcFile::get(int, const std::size_t*, const std::size_t*, int*) const;
template void NcFile::get(int, const std::size_t*, const std::size_t*, long long*) const;
template void NcFile::get(int, const std::size_t*, const std::size_t*, double*) const;
template void NcFile::put(int, const int*);
template void NcFile::put(int, const long long*);
template void NcFile::put(int, const double*);
template void NcFile::put(int, const std::size_t*, const std::size_t*, const int*);
template void NcFile::put(int, const std::size_t*, const std::size_t*, const long long*);
template void NcFile::put(int, const std::size_t*, const std::size_t*, const double*);

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
