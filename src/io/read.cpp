// Reader: remap-and-read, the mirror of remap-and-write. Each rank reads one contiguous slab of
// the variable (a few hyperslab reads, whatever the target layout), then a Redist moves the
// slabs to the decomposition asked for, so a restart written on P ranks reads on any other count.

#include <algorithm>
#include <cmath>
#include <exception>
#include <future>
#include <optional>

#include "common/checked.hpp"
#include "common/mpi_util.hpp"
#include "common/shared_comm.hpp"
#include "estuary/io.hpp"
#include "estuary/redist.hpp"
#include "io/io_detail.hpp"
#include "ncfile/ncfile.hpp"

namespace estuary::io {

using detail::i64;

// This rank's contiguous slab of one record of a variable.
struct Slab {
  std::vector<i64> shape;  // without time
  bool has_time = false;
  i64 lo = 0, hi = 0;
  std::vector<double> data;
};

struct Reader::Impl {
  std::string path;
  std::shared_ptr<estuary::detail::SharedComm> shared_comm;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::optional<estuary::detail::NcFile> file;
  std::vector<double> times;
  i64 records = 0;
  double period = 0;
  // The record being read in the background: (variable, record) and the slab to come. An error
  // there is kept in the future and surfaces, agreed by all ranks, when the record is used.
  std::string pf_var;
  i64 pf_record = -1;
  std::future<Slab> pf;
  i64 hits = 0;
  i64 largest = 0;  // values of the largest slab read

  // The shape of one record of `var` (without time), and whether it has a time dimension.
  std::vector<i64> record_shape(const std::string& var, bool& has_time) const {
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    const int v = file->var(var);
    std::vector<i64> shape = file->var_shape(v);
    const std::vector<std::string> dn = file->var_dim_names(v);
    has_time = !dn.empty() && dn[0] == "time";
    if (has_time) shape.erase(shape.begin());
    return shape;
  }
  // The points of one record of `var`: the product of its sizes, checked for overflow.
  i64 record_points(const std::string& var, const std::vector<i64>& shape) const {
    i64 n = 1;
    for (i64 d : shape) n = estuary::detail::checked_mul(n, d, "the size of a record", "file " + path + ", variable " + var);
    return n;
  }

  // Reads this rank's slab (netCDF calls under the I/O part's lock: the prefetch thread and the
  // writers of an Output in the same process never call netCDF at the same time).
  Slab read_slab(const std::string& var, i64 record) const {
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    Slab s;
    const int v = file->var(var);
    s.shape = record_shape(var, s.has_time);
    if (s.has_time && (record < 0 || record >= records))
      throw Error("record " + std::to_string(record) + " out of range", "file " + path + ", variable " + var,
                  "the file has " + std::to_string(records) + " records");
    const i64 n = record_points(var, s.shape);
    std::tie(s.lo, s.hi) = detail::slab_range(n, size, rank);
    s.data.resize(static_cast<std::size_t>(s.hi - s.lo));
    double* at = s.data.data();
    for (const detail::Box& b : detail::range_boxes(s.shape, s.lo, s.hi)) {
      std::vector<size_t> st, ct;
      if (s.has_time) { st.push_back(static_cast<size_t>(record)); ct.push_back(1); }
      i64 m = 1;
      for (std::size_t k = 0; k < b.start.size(); ++k) {
        st.push_back(static_cast<size_t>(b.start[k]));
        ct.push_back(static_cast<size_t>(b.count[k]));
        m *= b.count[k];
      }
      file->get(v, st.data(), ct.data(), at);
      at += m;
    }
    return s;
  }

  // The prefetched slab if it is (var, record), else a fresh read. Waits for any prefetch.
  Slab take(const std::string& var, i64 record) {
    if (pf.valid()) {
      const bool match = pf_var == var && pf_record == record;
      if (match) {
        ++hits;
        return pf.get();  // rethrows the prefetch's error, if any
      }
      try {
        pf.get();
      } catch (...) {
        // A prefetch nobody asked for: its error does not matter.
      }
    }
    return read_slab(var, record);
  }

  void start_prefetch(const std::string& var, i64 record) {
    pf_var = var;
    pf_record = record;
    pf = std::async(std::launch::async, [this, var, record] { return read_slab(var, record); });
  }
};

Reader::Reader(const std::string& path, MPI_Comm comm) : impl_(std::make_unique<Impl>()) {
  Impl& x = *impl_;
  x.path = path;
  // The library's copy of comm, shared (not one MPI_Comm_dup per reader: a failed open used
  // to leak one, and MPI ran out of them after a few thousand).
  x.shared_comm = estuary::detail::shared_comm(comm);
  x.comm = x.shared_comm->comm;
  MPI_Comm_rank(x.comm, &x.rank);
  MPI_Comm_size(x.comm, &x.size);
  estuary::detail::agree(x.comm, [&] {
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    x.file.emplace(estuary::detail::NcFile::open(path));
    const int tv = x.file->find_var("time");
    if (tv >= 0) {
      const std::vector<i64> shape = x.file->var_shape(tv);
      if (shape.size() != 1)
        throw Error("the time variable has " + std::to_string(shape.size()) + " dimensions, not one",
                    "file " + path + ", variable time", "the file is not one estuary's Output (or CF) wrote");
      x.records = shape[0];
      x.times.resize(static_cast<std::size_t>(x.records));
      if (x.records > 0)
        x.file->get(tv, x.times.data());
    }
  });
}

Reader::~Reader() {
  if (impl_->pf.valid()) {
    try {
      impl_->pf.get();
    } catch (...) {
    }
  }
  {
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    impl_->file.reset();
  }
}

std::int64_t Reader::records() const { return impl_->records; }

std::int64_t Reader::points(const std::string& var) const {
  const Impl& x = *impl_;
  std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
  if (x.file->find_var(var) < 0) return -1;
  bool has_time = false;
  return x.record_points(var, x.record_shape(var, has_time));
}
const std::vector<double>& Reader::times() const { return impl_->times; }

void Reader::set_period(double period_s) {
  if (!(period_s > 0) || !std::isfinite(period_s))
    throw Error("period " + std::to_string(period_s) + " is not positive", "file " + impl_->path,
                "give the forcing's period in seconds, e.g. 365 * 86400");
  impl_->period = period_s;
}

std::int64_t Reader::prefetch_hits() const { return impl_->hits; }
std::int64_t Reader::largest_slab() const { return impl_->largest; }

void Reader::read(const std::string& var, double time, const Decomp& decomp, std::span<double> out) {
  Impl& x = *impl_;
  if (x.period > 0 && x.records > 0) {
    // Into [t0, t0 + period): the forcing repeats.
    const double t0 = x.times[0];
    time -= std::floor((time - t0) / x.period + 1e-12) * x.period;
  }
  i64 rec = -1;
  for (i64 r = 0; r < x.records; ++r)
    if (std::abs(x.times[static_cast<std::size_t>(r)] - time) <= 1e-9 * std::max(1.0, std::abs(time))) rec = r;
  if (rec < 0)
    throw Error("no record at time " + std::to_string(time), "file " + x.path + ", variable " + var,
                "the file has " + std::to_string(x.records) + " records");
  read_record(var, rec, decomp, out);
  if (x.period > 0) x.start_prefetch(var, (rec + 1) % x.records);
}

void Reader::read_record(const std::string& var, std::int64_t record, const Decomp& decomp,
                         std::span<double> out) {
  Impl& x = *impl_;
  Slab sl;
  estuary::detail::agree(x.comm, [&] {
    // The sizes first, from the file's header: a variable that does not match the decomposition
    // (or whose size overflows) is refused before any of it is read.
    bool has_time = false;
    const i64 n = x.record_points(var, x.record_shape(var, has_time));
    if (decomp.global_size() != n)
      throw Error("decomposition of " + std::to_string(decomp.global_size()) + " points for a variable of " +
                      std::to_string(n),
                  "file " + x.path + ", variable " + var + ", " + estuary::detail::world_rank_label());
    sl = x.take(var, record);
    if (decomp.global_size() != n)
      throw Error("decomposition of " + std::to_string(decomp.global_size()) + " points for a variable of " +
                      std::to_string(n),
                  "file " + x.path + ", variable " + var + ", " + estuary::detail::world_rank_label());
    if (static_cast<i64>(out.size()) != decomp.size())
      throw Error("output buffer of " + std::to_string(out.size()) + " values for " +
                      std::to_string(decomp.size()) + " points",
                  "file " + x.path + ", variable " + var + ", " + estuary::detail::world_rank_label());
  });
  const std::vector<i64>& shape = sl.shape;
  const i64 lo = sl.lo, hi = sl.hi;
  x.largest = std::max(x.largest, hi - lo);
  std::vector<double>& slab = sl.data;
  i64 n = 1;
  for (i64 s : shape) n *= s;
  RedistOptions opt;
  opt.algorithm = "p2p";
  Redist rd(Decomp::stripes(n, {{lo, hi - lo, 1}}), decomp, x.comm, opt);
  rd.run({Field(Type::f64, slab.data(), static_cast<i64>(slab.size()), out.data(), static_cast<i64>(out.size()))});
}

}  // namespace estuary::io
