// Reader: remap-and-read, the mirror of remap-and-write. Each rank reads one contiguous slab of
// the variable (a few hyperslab reads, whatever the target layout), then a Redist moves the
// slabs to the decomposition asked for, so a restart written on P ranks reads on any other count.
#include <netcdf.h>

#include <cmath>
#include <optional>

#include "common/mpi_util.hpp"
#include "estuary/io.hpp"
#include "estuary/redist.hpp"
#include "io/io_detail.hpp"
#include "remap/nc_util.hpp"

namespace estuary::io {

using detail::i64;

struct Reader::Impl {
  std::string path;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::optional<estuary::detail::NcFile> file;
  std::vector<double> times;
  i64 records = 0;
};

Reader::Reader(const std::string& path, MPI_Comm comm) : impl_(std::make_unique<Impl>()) {
  Impl& x = *impl_;
  x.path = path;
  estuary::detail::check_mpi(MPI_Comm_dup(comm, &x.comm), "MPI_Comm_dup");
  MPI_Comm_rank(x.comm, &x.rank);
  MPI_Comm_size(x.comm, &x.size);
  estuary::detail::agree(x.comm, [&] {
    x.file.emplace(estuary::detail::NcFile::open(path));
    const int tv = x.file->find_var("time");
    if (tv >= 0) {
      x.records = x.file->var_shape(tv).at(0);
      x.times.resize(static_cast<std::size_t>(x.records));
      if (x.records > 0)
        estuary::detail::nc_check(nc_get_var_double(x.file->id(), tv, x.times.data()), path, "variable time");
    }
  });
}

Reader::~Reader() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin && impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
}

std::int64_t Reader::records() const { return impl_->records; }
const std::vector<double>& Reader::times() const { return impl_->times; }

void Reader::read(const std::string& var, double time, const Decomp& decomp, std::span<double> out) {
  Impl& x = *impl_;
  i64 rec = -1;
  for (i64 r = 0; r < x.records; ++r)
    if (std::abs(x.times[static_cast<std::size_t>(r)] - time) <= 1e-9 * std::max(1.0, std::abs(time))) rec = r;
  if (rec < 0)
    throw Error("no record at time " + std::to_string(time), "file " + x.path + ", variable " + var,
                "the file has " + std::to_string(x.records) + " records");
  read_record(var, rec, decomp, out);
}

void Reader::read_record(const std::string& var, std::int64_t record, const Decomp& decomp,
                         std::span<double> out) {
  Impl& x = *impl_;
  std::vector<i64> shape;
  bool has_time = false;
  i64 lo = 0, hi = 0;
  std::vector<double> slab;
  estuary::detail::agree(x.comm, [&] {
    const int v = x.file->var(var);
    shape = x.file->var_shape(v);
    const std::vector<std::string> dn = x.file->var_dim_names(v);
    has_time = !dn.empty() && dn[0] == "time";
    if (has_time) shape.erase(shape.begin());
    if (has_time && (record < 0 || record >= x.records))
      throw Error("record " + std::to_string(record) + " out of range", "file " + x.path + ", variable " + var,
                  "the file has " + std::to_string(x.records) + " records");
    i64 n = 1;
    for (i64 s : shape) n *= s;
    if (decomp.global_size() != n)
      throw Error("decomposition of " + std::to_string(decomp.global_size()) + " points for a variable of " +
                      std::to_string(n),
                  "file " + x.path + ", variable " + var + ", " + estuary::detail::world_rank_label());
    if (static_cast<i64>(out.size()) != decomp.size())
      throw Error("output buffer of " + std::to_string(out.size()) + " values for " +
                      std::to_string(decomp.size()) + " points",
                  "file " + x.path + ", variable " + var + ", " + estuary::detail::world_rank_label());
    std::tie(lo, hi) = detail::slab_range(n, x.size, x.rank);
    slab.resize(static_cast<std::size_t>(hi - lo));
    double* at = slab.data();
    for (const detail::Box& b : detail::range_boxes(shape, lo, hi)) {
      std::vector<size_t> st, ct;
      if (has_time) { st.push_back(static_cast<size_t>(record)); ct.push_back(1); }
      i64 m = 1;
      for (std::size_t k = 0; k < b.start.size(); ++k) {
        st.push_back(static_cast<size_t>(b.start[k]));
        ct.push_back(static_cast<size_t>(b.count[k]));
        m *= b.count[k];
      }
      estuary::detail::nc_check(nc_get_vara_double(x.file->id(), v, st.data(), ct.data(), at), x.path,
                                "variable " + var);
      at += m;
    }
  });
  i64 n = 1;
  for (i64 s : shape) n *= s;
  RedistOptions opt;
  opt.algorithm = "p2p";
  Redist rd(Decomp::stripes(n, {{lo, hi - lo, 1}}), decomp, x.comm, opt);
  rd.run({Field(Type::f64, slab.data(), static_cast<i64>(slab.size()), out.data(), static_cast<i64>(out.size()))});
}

}  // namespace estuary::io
