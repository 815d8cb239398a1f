#include "ncfile/ncfile.hpp"

#include <netcdf.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>

#include "common/mpi_util.hpp"
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

namespace {

// Reads the classic header (CDF-1, CDF-2 and CDF-5, netCDF's "file format specification")
// only as far as it must to know where every variable's data ends.
class ClassicHeader {
 public:
  ClassicHeader(std::ifstream& in, const std::string& path) : in_(in), path_(path) {}

  // The least size a complete file has: the end of the last byte of data it claims, counting
  // every fixed-size variable whole and every record variable through numrecs records.
  std::int64_t data_end() {
    char magic[4];
    bytes(magic, 4);
    if (std::memcmp(magic, "CDF", 3) != 0 || (magic[3] != 1 && magic[3] != 2 && magic[3] != 5)) bad("magic number");
    version_ = magic[3];
    const std::int64_t numrecs = nonneg();
    // Dimensions.
    std::vector<std::int64_t> dims;
    for (std::int64_t n = list(0x0A), k = 0; k < n; ++k) {
      name();
      dims.push_back(nonneg());  // 0: the record dimension
    }
    attributes();
    struct Var {
      std::int64_t begin, len;
      bool rec;
    };
    std::vector<Var> vars;
    for (std::int64_t n = list(0x0B), k = 0; k < n; ++k) {
      name();
      const std::int64_t nd = nonneg();
      bool rec = false;
      std::int64_t elems = 1;
      for (std::int64_t d = 0; d < nd; ++d) {
        const std::int64_t id = nonneg();
        if (id < 0 || id >= static_cast<std::int64_t>(dims.size())) bad("a variable's dimension id");
        if (dims[static_cast<std::size_t>(id)] == 0 && d == 0) rec = true;
        else elems = mul(elems, dims[static_cast<std::size_t>(id)]);
      }
      attributes();
      const std::int64_t size = type_size(u32());
      nonneg();  // vsize: capped for large variables in CDF-2, so computed instead
      const std::int64_t begin = version_ == 1 ? u32() : i64();
      vars.push_back({begin, mul(elems, size), rec});
    }
    // Records: the record variables' slices one after the other, each padded to 4 bytes
    // unless there is only one (netCDF's recsize).
    std::int64_t recsize = 0, nrec = 0;
    for (const Var& v : vars)
      if (v.rec) ++nrec;
    for (const Var& v : vars)
      if (v.rec) recsize += nrec == 1 ? v.len : (v.len + 3) / 4 * 4;
    std::int64_t end = 0;
    for (const Var& v : vars) {
      if (v.len == 0 || (v.rec && numrecs == 0)) continue;
      end = std::max(end, v.rec ? v.begin + mul(numrecs - 1, recsize) + v.len : v.begin + v.len);
    }
    return end;
  }

 private:
  void bad(const std::string& what) const {
    throw Error("corrupt netCDF header (" + what + ")", "file " + path_, "the file is damaged or not netCDF");
  }
  void bytes(void* p, std::size_t n) {
    if (!in_.read(static_cast<char*>(p), static_cast<std::streamsize>(n))) bad("it ends inside the header");
  }
  std::int64_t u32() {
    unsigned char b[4];
    bytes(b, 4);
    return (std::int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
  }
  std::int64_t i64() {
    unsigned char b[8];
    bytes(b, 8);
    std::uint64_t v = 0;
    for (unsigned char c : b) v = (v << 8) | c;
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) bad("a size out of range");
    return static_cast<std::int64_t>(v);
  }
  std::int64_t nonneg() { return version_ == 5 ? i64() : u32(); }
  std::int64_t mul(std::int64_t a, std::int64_t b) const {
    std::int64_t r = 0;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) bad("a variable size out of range");
    return r;
  }
  void skip(std::int64_t n) {
    if (n < 0 || !in_.seekg(n, std::ios::cur)) bad("it ends inside the header");
  }
  // A list's element count: ABSENT (two zeros) or the tag and the count.
  std::int64_t list(std::int64_t tag) {
    const std::int64_t t = u32(), n = nonneg();
    if (t == 0 && n == 0) return 0;
    if (t != tag) bad("a list tag");
    return n;
  }
  void name() { const std::int64_t n = nonneg(); skip((n + 3) / 4 * 4); }
  std::int64_t type_size(std::int64_t type) const {
    static const int size[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
    if (type < 1 || type > 11) bad("a type code");
    return size[type];
  }
  void attributes() {
    for (std::int64_t n = list(0x0C), k = 0; k < n; ++k) {
      name();
      const std::int64_t size = type_size(u32());
      skip((mul(nonneg(), size) + 3) / 4 * 4);
    }
  }
  std::ifstream& in_;
  std::string path_;
  int version_ = 1;
};

}  // namespace

void check_complete(const std::string& path, int ncid) {
  int format = 0;
  nc_check(nc_inq_format(ncid, &format), path, "reading its format");
  // netCDF-4/HDF5 files: HDF5 itself refuses a file shorter than its superblock says.
  if (format != NC_FORMAT_CLASSIC && format != NC_FORMAT_64BIT_OFFSET && format != NC_FORMAT_CDF5) return;
  std::ifstream in(path, std::ios::binary);
  const std::int64_t end = ClassicHeader(in, path).data_end();
  std::error_code ec;
  const auto size = static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
  if (ec) throw Error("cannot read its size: " + ec.message(), "file " + path);
  if (size < end)
    throw Error("the file is truncated: its header describes " + std::to_string(end) + " bytes of data, the file has " +
                    std::to_string(size),
                "file " + path + ", " + world_rank_label(),
                "the file was cut short (a full disk, an interrupted copy or run): write or copy it again");
}

NcFile NcFile::open(const std::string& path, bool write) {
  int id = -1;
  const int rc = nc_open(path.c_str(), write ? NC_WRITE : NC_NOWRITE, &id);
  if (rc != NC_NOERR)
    throw Error(std::string("cannot open: ") + nc_strerror(rc), "file " + path + ", " + world_rank_label(),
                "check that the file exists and is netCDF");
  NcFile f(path, id);
  // netCDF reads the missing tail of a truncated classic file as fill values, in silence.
  check_complete(path, id);
  return f;
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
