// Serial netCDF backend (one writer): CDF-5, the same format the PnetCDF backend writes, so a
// file does not depend on the number of writers. Also the slab arithmetic both backends share.
#include <fcntl.h>
#include <netcdf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "estuary/error.hpp"
#include "io/io_detail.hpp"

namespace estuary::io::detail {

std::vector<Box> range_boxes(const std::vector<i64>& shape, i64 lo, i64 hi) {
  std::vector<Box> out;
  if (lo >= hi) return out;
  if (shape.empty()) {  // a scalar
    out.push_back({{}, {}});
    return out;
  }
  const std::vector<i64> rest(shape.begin() + 1, shape.end());
  i64 inner = 1;
  for (i64 s : rest) inner *= s;
  auto prefixed = [&](i64 row, i64 a, i64 b) {
    for (Box& sub : range_boxes(rest, a, b)) {
      sub.start.insert(sub.start.begin(), row);
      sub.count.insert(sub.count.begin(), 1);
      out.push_back(std::move(sub));
    }
  };
  const i64 r0 = lo / inner, r1 = hi / inner;
  if (r0 == r1) {
    prefixed(r0, lo - r0 * inner, hi - r0 * inner);
    return out;
  }
  i64 full0 = r0;
  if (lo % inner != 0) {
    prefixed(r0, lo % inner, inner);
    full0 = r0 + 1;
  }
  if (r1 > full0) {
    Box b;
    b.start.assign(shape.size(), 0);
    b.count = shape;
    b.start[0] = full0;
    b.count[0] = r1 - full0;
    out.push_back(std::move(b));
  }
  if (hi % inner != 0) prefixed(r1, 0, hi % inner);
  return out;
}

namespace {

class NetcdfWriter final : public FileWriter {
 public:
  explicit NetcdfWriter(const std::string& path) {
    path_ = path;
    check(nc_create(path.c_str(), NC_CLOBBER | NC_64BIT_DATA, &id_), "creating it");
  }
  ~NetcdfWriter() override {
    if (id_ >= 0) nc_close(id_);
  }
  int def_dim(const std::string& name, i64 len) override {
    int d = -1;
    check(nc_def_dim(id_, name.c_str(), len < 0 ? NC_UNLIMITED : static_cast<size_t>(len), &d),
          "dimension " + name);
    return d;
  }
  int def_var(const std::string& name, bool dbl, const std::vector<int>& dims) override {
    int v = -1;
    check(nc_def_var(id_, name.c_str(), dbl ? NC_DOUBLE : NC_FLOAT, static_cast<int>(dims.size()),
                     dims.data(), &v),
          "variable " + name);
    return v;
  }
  void put_att(int var, const std::string& name, const std::string& text) override {
    check(nc_put_att_text(id_, var < 0 ? NC_GLOBAL : var, name.c_str(), text.size(), text.c_str()),
          "attribute " + name);
  }
  void put_att(int var, const std::string& name, const std::vector<double>& values, bool as_float) override {
    check(nc_put_att_double(id_, var < 0 ? NC_GLOBAL : var, name.c_str(), as_float ? NC_FLOAT : NC_DOUBLE, values.size(),
                            values.data()),
          "attribute " + name);
  }
  void enddef() override { check(nc_enddef(id_), "leaving define mode"); }
  void put(int var, i64 record, const std::vector<Box>& boxes, const double* data) override {
    const bool rec = record >= 0;
    for (const Box& b : boxes) {
      std::vector<size_t> st, ct;
      if (rec) { st.push_back(static_cast<size_t>(record)); ct.push_back(1); }
      i64 n = 1;
      for (std::size_t k = 0; k < b.start.size(); ++k) {
        st.push_back(static_cast<size_t>(b.start[k]));
        ct.push_back(static_cast<size_t>(b.count[k]));
        n *= b.count[k];
      }
      check(nc_put_vara_double(id_, var, st.data(), ct.data(), data),
            "writing variable " + std::to_string(var) + (rec ? " record " + std::to_string(record) : ""));
      data += n;
    }
  }
  void sync() override { check(nc_sync(id_), "syncing it"); }
  bool classic() const override { return true; }
  void close() override {
    if (id_ < 0) return;
    const int id = id_;
    id_ = -1;
    check(nc_close(id), "closing it");
  }

 private:
  void check(int rc, const std::string& what) const {
    if (rc == NC_NOERR) return;
    throw Error(std::string("netCDF: ") + nc_strerror(rc), "file " + path_ + ", " + what,
                "check that the directory exists and is writable");
  }
  int id_ = -1;
};

}  // namespace

std::unique_ptr<FileWriter> create_netcdf(const std::string& path) {
  return std::make_unique<NetcdfWriter>(path);
}

void reserve_space(const std::string& path, i64 end, MPI_Comm comm, const std::string& what) {
  int rank = 0, err = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    const int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0) {
      err = errno;
    } else {
      err = ::posix_fallocate(fd, 0, static_cast<off_t>(end));
      // Filesystems without fallocate (some parallel ones): nothing to learn from it.
      if (err == EOPNOTSUPP || err == EINVAL) err = 0;
      ::close(fd);
    }
  }
  MPI_Bcast(&err, 1, MPI_INT, 0, comm);
  if (err != 0)
    throw Error(std::string(std::strerror(err)) + ": cannot reserve " + std::to_string(end) + " bytes",
                "file " + path + ", " + what, "free space on the output filesystem");
}

void truncate_records(const std::string& path, i64 n) {
  // The classic header: "CDF", the version byte (1, 2 or 5), then the record count, big-endian,
  // in 4 bytes (CDF-1/2) or 8 (CDF-5). Written in place; the records past n stay as unused bytes.
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  if (!f) throw Error(std::string("cannot open it to set its record count: ") + std::strerror(errno), "file " + path);
  unsigned char h[12] = {};
  const std::size_t got = std::fread(h, 1, sizeof h, f);
  const int width = got >= 8 && h[3] != 5 ? 4 : got >= 12 && h[3] == 5 ? 8 : 0;
  if (std::memcmp(h, "CDF", 3) != 0 || width == 0) {
    std::fclose(f);
    throw Error("not a classic netCDF file", "file " + path);
  }
  i64 now = 0;
  for (int k = 0; k < width; ++k) now = (now << 8) | h[4 + k];
  bool ok = true;
  if (now > n) {
    for (int k = 0; k < width; ++k) h[4 + k] = static_cast<unsigned char>(n >> (8 * (width - 1 - k)));
    ok = std::fseek(f, 4, SEEK_SET) == 0 && std::fwrite(h + 4, 1, static_cast<std::size_t>(width), f) ==
                                                   static_cast<std::size_t>(width);
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok) throw Error(std::string("cannot set its record count: ") + std::strerror(errno), "file " + path);
}

}  // namespace estuary::io::detail
