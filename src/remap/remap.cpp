// Remap set-up (where links, source values and partial sums live) and application.
#include "estuary/remap.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <map>
#include <numeric>

#include "common/mpi_util.hpp"
#include "common/shared_comm.hpp"
#include "estuary/error.hpp"
#include "estuary/redist.hpp"
#include "estuary/settings.hpp"
#include "remap/remap_layout.hpp"
#include "remap/route.hpp"

namespace estuary {

const char* name_of(RemapLocation l) { return l == RemapLocation::src ? "src" : "dst"; }
const char* name_of(RemapOrder o) { return o == RemapOrder::bfb ? "bfb" : "sum"; }

template <>
RemapLocation from_name<RemapLocation>(std::string_view name) {
  static constexpr RemapLocation all[] = {RemapLocation::src, RemapLocation::dst};
  return detail::enum_named(name, all, "remap location");
}

template <>
RemapOrder from_name<RemapOrder>(std::string_view name) {
  static constexpr RemapOrder all[] = {RemapOrder::bfb, RemapOrder::sum};
  return detail::enum_named(name, all, "remap order");
}

using i64 = std::int64_t;
using detail::KeyedItems;

namespace {

std::vector<i64> sorted_unique(std::vector<i64> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::size_t position_in(const std::vector<i64>& sorted, i64 value) {
  return static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), value) - sorted.begin());
}

// This rank's place among the ranks doing the work (those with points on one side).
detail::WorkSide work_side(bool mine, MPI_Comm comm) {
  int rank = 0, p = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &p);
  std::vector<int> flags(static_cast<std::size_t>(p));
  int f = mine ? 1 : 0;
  detail::check_mpi(MPI_Allgather(&f, 1, MPI_INT, flags.data(), 1, MPI_INT, comm), "MPI_Allgather");
  return detail::work_side_of(flags, rank);
}

// How the rows' links lie: `width`, the common link count of every row that has links, if there
// is one from 1 to kMaxWidth (else 0), and `gaps`, whether some rows have none (targets that
// are masked or out of reach: dis5 or bilinear weights onto an ocean grid with land).
constexpr int kMaxWidth = 16;
struct RowShape {
  int width = 0;
  bool gaps = false;
};
RowShape row_shape(const std::vector<i64>& ptr) {
  RowShape shape;
  i64 k = 0;
  for (std::size_t r = 0; r + 1 < ptr.size(); ++r) {
    const i64 n = ptr[r + 1] - ptr[r];
    if (n == 0) shape.gaps = true;
    else if (k == 0) k = n;
    else if (n != k) return {};
  }
  if (k < 1 || k > kMaxWidth) return {};
  shape.width = static_cast<int>(k);
  return shape;
}

// Whether the rows' link counts change at a quarter of the rows or more (conservative weights:
// at about two rows in three), where one_row's loop takes two links a step.
bool varying_counts(const std::vector<i64>& ptr) {
  std::size_t changes = 0;
  for (std::size_t r = 2; r < ptr.size(); ++r) changes += ptr[r] - ptr[r - 1] != ptr[r - 1] - ptr[r - 2];
  return ptr.size() > 2 && changes * 4 >= ptr.size() - 2;
}

}  // namespace

// What a Remap sets up once: the weights where they are applied, the plans and schedules of
// its exchanges (Redists without executors), and the sparse matrix. Shared by Remap::share().
struct Remap::Setup {
  RemapOptions opt;
  std::shared_ptr<detail::SharedComm> shared;  // the library's copy of the user's comm
  MPI_Comm comm = MPI_COMM_NULL;
  i64 src_n = 0, dst_n = 0;
  // Before the product: the source values where the links are (null: the source buffer itself).
  std::unique_ptr<Redist> gather;
  i64 x_size = 0;
  // The product: y[r] = sum over k in [ptr[r], ptr[r+1]) of w[k] * x[xi[k]], in k order.
  std::vector<i64> ptr;
  std::vector<std::uint32_t> xi;
  std::vector<double> w;
  // A gather that only copies this rank's own source values (bfb on one rank, or where each
  // row's sources are on the rank that forms it): run() leaves it out and the product reads the
  // source buffer itself, through xi_src, the links' positions there (empty when the gather
  // copies each value to its own place, where xi serves). Set by local_gather().
  bool gather_local = false;
  std::vector<std::uint32_t> xi_src;
  void local_gather();
  // The link count of every row that has links when it is the same for all (nnn, bilinear,
  // bicubic, GAUSWGT, dis5; some rows may have none), else width 0: the product then sums each
  // row in a loop of known length, and finds its links at r * width without reading ptr where
  // no row is empty (row_shape()).
  RowShape shape;
  // Rows of varying length (varying_counts): one_row takes two links a step.
  bool two_step = false;
  // After the product: bfb/src moves y to dst; sum moves partials y to z, added per row.
  std::unique_ptr<Redist> after;
  i64 z_size = 0;
  std::vector<i64> cptr;      // sum: per unique destination row, its contributions in z
  std::vector<i64> dst_slot;  // per destination element: its unique row (bfb/dst, sum)
  bool direct_rows = false;   // bfb/dst, destination elements = unique rows in order
  bool direct_slots = false;  // destination elements = unique rows in order (dst_slot[j] = j)
  // Fixed values (Links::fixed_row, YAC's fixed targets): the destination elements holding
  // such a point and its value, written after every run.
  std::vector<i64> fixed_slot;
  std::vector<double> fixed_val;
  void set_fixed(const Links& links, i64 nb, const std::vector<i64>& didx, const std::vector<i64>& udst);
  RemapStats st;

  void use_comm(MPI_Comm user) {
    shared = detail::shared_comm(user);
    comm = shared->comm;
  }
  // The links are consumed: set-up moves them into routing buffers rather than copy them.
  void setup(Links links, const Decomp& src, const Decomp& dst);
  void setup_bfb(Links links, const Decomp& src, const Decomp& dst, const std::vector<i64>& udst);
  void setup_sum(Links links, const Decomp& src, const Decomp& dst, const std::vector<i64>& udst);
  // `crosses`: the exchange moves from the source to the destination ranks (one P2P stage
  // with split_phase, see RemapOptions).
  RedistOptions redist_options(bool from_src, bool fill_missing = false, bool crosses = false) const {
    RedistOptions o;
    o.algorithm = opt.split_phase && crosses ? "p2p" : opt.algorithm;
    o.plan = detail::exchange_plan_options(from_src, fill_missing);
    return o;
  }
  // The exchange within one side (split_phase and a staged algorithm): built over the ranks
  // with `mine` alone, null on the others. Otherwise over the whole communicator.
  bool one_side = false;  // this Remap's within-side exchange is built over its side's ranks
  std::unique_ptr<Redist> side_redist(bool mine, const Decomp& from, const Decomp& to, const RedistOptions& o);
  void set_columns(const std::vector<i64>& col, const std::vector<i64>& x_index_of_sorted_cols,
                   const std::vector<i64>& sorted_cols);
};

namespace {
std::atomic<std::int64_t> remap_setups{0};

// One of a Remap's exchanges as a handle runs it: the shared Redist's schedule, with executors
// of the handle's own (one per field count), so that handles sharing a set-up never share an
// exchange in flight.
class Mover {
 public:
  explicit Mover(const Redist* r) : redist_(r) {}
  explicit operator bool() const { return redist_ != nullptr; }
  const Redist* redist() const { return redist_; }
  void prepare(std::size_t n) { executor(n); }
  void start(const std::vector<Field>& f) {
    Exchange& ex = executor(f.size());
    ex.start(f);
    in_flight_ = &ex;
  }
  void finish() {
    Exchange* ex = in_flight_;
    in_flight_ = nullptr;
    ex->finish();
  }
  void run(const std::vector<Field>& f) {
    start(f);
    finish();
  }
  void add_timers(Remap::MoveTimers& t) const {
    for (const auto& [n, ex] : executors_) {
      const ExchangeTimers& x = ex.timers();
      t.pack_s += x.pack_s + x.copy_s;
      t.wait_s += x.wait_s;
      t.unpack_s += x.unpack_s;
    }
  }

 private:
  Exchange& executor(std::size_t n) {
    auto it = executors_.find(n);
    if (it == executors_.end()) it = executors_.emplace(n, redist_->make_exchange(std::vector<Type>(n, Type::f64))).first;
    return it->second;
  }
  const Redist* redist_;
  std::map<std::size_t, Exchange> executors_;
  Exchange* in_flight_ = nullptr;
};
}  // namespace

// A Remap handle: the shared set-up (read through the references below, so that the steps of
// run() read as before) and what each handle has of its own: buffers, executors, the state of
// a split-phase transfer.
struct Remap::Impl {
  std::shared_ptr<const Setup> s;
  explicit Impl(std::shared_ptr<const Setup> setup) : s(std::move(setup)) {}
  const RemapOptions& opt = s->opt;
  const MPI_Comm comm = s->comm;
  const i64 src_n = s->src_n, dst_n = s->dst_n, x_size = s->x_size, z_size = s->z_size;
  const std::vector<i64>& ptr = s->ptr;
  const RowShape shape = s->shape;
  const bool two_step = s->two_step;
  const std::vector<std::uint32_t>& xi = s->xi;
  const std::vector<double>& w = s->w;
  const std::vector<i64>& cptr = s->cptr;
  const std::vector<i64>& dst_slot = s->dst_slot;
  const bool direct_rows = s->direct_rows, direct_slots = s->direct_slots;
  Mover gather{s->gather.get()}, after{s->after.get()};
  // This rank's gather moves nothing but its own source values (Setup::gather_local): the
  // product reads the source itself, with no copy into xbuf, when the gather runs whole (run(),
  // and start() at src); not where it is the crossing move, whose source the caller may change
  // before finish().
  bool x_is_src = false;  // during a call: the product reads the fields' sources for x
  // The links' positions in what the product reads as x.
  const std::vector<std::uint32_t>& x_links() const { return x_is_src && !s->xi_src.empty() ? s->xi_src : xi; }
  // The gather run whole, or skipped when it is local. Skipped, its executor is made all the
  // same: executors take their tags in the order they are made, the same on every rank.
  void skip_or_gather(std::span<const RemapField> fields) {
    x_is_src = s->gather_local;
    if (!gather) return;
    if (x_is_src) gather.prepare(fields.size());
    else moving([&] { gather.run(gather_moves(fields)); });
  }
  std::vector<double> xbuf, ybuf, zbuf, ubuf;
  // The fixed values into every field's destination: the last step of run() and finish().
  void put_fixed(std::span<const RemapField> fields) const {
    for (const RemapField& f : fields)
      for (std::size_t k = 0; k < s->fixed_slot.size(); ++k)
        f.dst[static_cast<std::size_t>(s->fixed_slot[k])] = s->fixed_val[k];
  }
  // The steps of run(), shared with the split-phase start()/finish().
  void check_sizes(std::span<const RemapField> fields, const char* where) const;
  void check_split(std::span<const RemapField> fields, const char* where);
  std::vector<Field> gather_moves(std::span<const RemapField> fields);
  std::vector<Field> after_moves(std::span<const RemapField> fields);
  void product(std::span<const RemapField> fields);
  void product_frac(std::span<const RemapField> fields);
  void check_frac() const;
  void finalize(std::span<const RemapField> fields);
  void finalize_frac_sum(std::span<const RemapField> fields, std::size_t nu);
  void copy_to_slots(std::span<const RemapField> fields, const double* rows, std::size_t nu, std::size_t step);
  bool started = false;     // split phase: start() called, finish() not yet
  // Fields with a fractional mask: during such a call, the fields are pairs [x, f] (both with
  // the field's dst), kept here so that a step allocates nothing.
  bool frac = false;
  std::vector<RemapField> pairs;
  std::vector<double> dbuf;  // bfb, a pair whose fractions are all 1: W x before the division
  std::vector<double> wsum;  // row_sums()
  const std::vector<double>& row_sums();
  struct FracCall {
    Impl& im;
    FracCall(Impl& i, std::span<const RemapFracField> fields) : im(i) {
      im.pairs.clear();
      for (const RemapFracField& f : fields) {
        im.pairs.push_back({f.src, f.dst});
        im.pairs.push_back({f.fraction, f.dst});
      }
      im.frac = true;
    }
    ~FracCall() { im.frac = false; }
    FracCall(const FracCall&) = delete;
    FracCall& operator=(const FracCall&) = delete;
    std::span<const RemapField> fields() const { return im.pairs; }
  };
  double move_s = 0;        // seconds in the exchanges (move_seconds)
  // Runs an exchange step, adding its time to move_s (two clock readings: some 50 ns).
  template <class F>
  void moving(F&& step) {
    const double t0 = MPI_Wtime();
    step();
    move_s += MPI_Wtime() - t0;
  }
  // Split phase: the field counts prepared (or, without prepare, of the first call). Several:
  // the coupler runs one Remap with n fields, or 2n for a put with a fractional mask.
  std::vector<std::size_t> nfields;
};

// Whether this rank's gather is one stage of local copies from the source buffer, with no
// message and no fill, and so xbuf a selection of the rank's own source values: then the
// product may read them in place. xi_src says where (left empty when every value is copied to
// its own position, the identity, where xi serves as it is).
void Remap::Setup::local_gather() {
  if (!gather || src_n > static_cast<i64>(UINT32_MAX)) return;
  const Schedule& sc = gather->schedule();
  if (!sc.fills.empty() || sc.stages.size() != 1) return;
  const Stage& st = sc.stages[0];
  if (!st.sends.empty() || !st.recvs.empty()) return;
  std::vector<i64> from(static_cast<std::size_t>(x_size), -1);  // per xbuf position, its source position
  for (const Copy& c : st.copies) {
    if (c.from.buffer != Buffer::src || c.to.buffer != Buffer::dst || c.from.count != c.to.count) return;
    for (i64 t = 0; t < c.from.count; ++t) {
      const i64 a = c.from.offset + t * c.from.stride, b = c.to.offset + t * c.to.stride;
      if (a < 0 || a >= src_n || b < 0 || b >= x_size || from[static_cast<std::size_t>(b)] >= 0) return;
      from[static_cast<std::size_t>(b)] = a;
    }
  }
  bool identity = x_size == src_n;
  for (std::size_t b = 0; b < from.size(); ++b) {
    if (from[b] < 0) return;  // a position no copy writes
    identity = identity && from[b] == static_cast<i64>(b);
  }
  gather_local = true;
  if (identity) return;
  xi_src.resize(xi.size());
  for (std::size_t k = 0; k < xi.size(); ++k) xi_src[k] = static_cast<std::uint32_t>(from[xi[k]]);
}

void Remap::Setup::set_columns(const std::vector<i64>& col, const std::vector<i64>& x_of, const std::vector<i64>& cols) {
  if (x_size > static_cast<i64>(UINT32_MAX))
    throw Error("more than 2^32 source values on one rank", detail::world_rank_label(), "use more ranks");
  xi.resize(col.size());
  for (std::size_t k = 0; k < col.size(); ++k)
    xi[k] = static_cast<std::uint32_t>(x_of.empty() ? position_in(cols, col[k]) : x_of[position_in(cols, col[k])]);
}

void Remap::Setup::setup(Links links, const Decomp& src, const Decomp& dst) {
  if (opt.rule == RemapRule::largest_area_fraction && opt.order != RemapOrder::bfb)
    throw Error("the largest-area-fraction rule with order sum: partial rows cannot choose a row's value",
                "remap set-up", "use order bfb");
  src_n = src.size();
  dst_n = dst.size();
  const i64 sizes[2] = {src.global_size(), dst.global_size()};
  i64 mx[2], mn[2];
  detail::check_mpi(MPI_Allreduce(sizes, mx, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  detail::check_mpi(MPI_Allreduce(sizes, mn, 2, MPI_INT64_T, MPI_MIN, comm), "MPI_Allreduce");
  detail::agree(comm, [&] {
    if (mx[0] != mn[0] || mx[1] != mn[1])
      throw Error("ranks disagree on the grid sizes (source " + std::to_string(mn[0]) + ".." + std::to_string(mx[0]) +
                      ", destination " + std::to_string(mn[1]) + ".." + std::to_string(mx[1]) + ")",
                  "remap set-up", "every rank must decompose the same two grids");
    if (links.col.size() != links.row.size() || links.weight.size() != links.row.size())
      throw Error("links have " + std::to_string(links.row.size()) + " rows, " + std::to_string(links.col.size()) +
                      " columns and " + std::to_string(links.weight.size()) + " weights",
                  "remap set-up, " + detail::world_rank_label());
    for (std::size_t k = 0; k < links.row.size(); ++k)
      if (links.col[k] < 0 || links.col[k] >= sizes[0] || links.row[k] < 0 || links.row[k] >= sizes[1])
        throw Error("link " + std::to_string(k) + " maps source point " + std::to_string(links.col[k]) +
                        " to destination point " + std::to_string(links.row[k]) + ", outside the grids (" +
                        std::to_string(sizes[0]) + " and " + std::to_string(sizes[1]) + " points)",
                    "remap set-up, " + detail::world_rank_label());
    if (links.fixed_value.size() != links.fixed_row.size())
      throw Error(std::to_string(links.fixed_row.size()) + " fixed points and " +
                      std::to_string(links.fixed_value.size()) + " fixed values",
                  "remap set-up, " + detail::world_rank_label());
    for (std::size_t k = 0; k < links.fixed_row.size(); ++k)
      if (links.fixed_row[k] < 0 || links.fixed_row[k] >= sizes[1])
        throw Error("fixed value " + std::to_string(k) + " is for destination point " +
                        std::to_string(links.fixed_row[k]) + ", outside the grid (" + std::to_string(sizes[1]) +
                        " points)",
                    "remap set-up, " + detail::world_rank_label());
  });
  // Destination elements map to unique rows (a decomposition may repeat a point as a halo).
  const std::vector<i64> didx = dst.to_indices();
  const std::vector<i64> udst = sorted_unique(didx);
  dst_slot.resize(didx.size());
  for (std::size_t j = 0; j < didx.size(); ++j) dst_slot[j] = static_cast<i64>(position_in(udst, didx[j]));
  direct_slots = udst.size() == didx.size() && std::is_sorted(didx.begin(), didx.end());
  direct_rows = opt.order == RemapOrder::bfb && opt.location == RemapLocation::dst && direct_slots;
  set_fixed(links, dst.global_size(), didx, udst);  // before the links are consumed
  if (opt.order == RemapOrder::bfb) setup_bfb(std::move(links), src, dst, udst);
  else setup_sum(std::move(links), src, dst, udst);
  local_gather();
  if (Settings::get().row_width) shape = row_shape(ptr);
  two_step = Settings::get().row_width && shape.width == 0 && varying_counts(ptr);
  st.links = static_cast<i64>(w.size());
  st.rows = static_cast<i64>(ptr.size()) - 1;
  st.gathered = gather ? x_size : 0;
  st.partials = opt.order == RemapOrder::sum ? z_size : (after ? dst_n : 0);
  st.exchanges = (gather ? 1 : 0) + (after ? 1 : 0);
  st.row_width = shape.width;
  st.row_gaps = shape.gaps;
  st.row_two_step = two_step;
  st.source_in_place = gather_local;
}

// Each fixed point's value and whether links reach it, gathered where the point is held: a
// point with links and a fixed value, or two different fixed values, is refused (YAC aborts on
// the first), on every rank. Nothing is routed when no rank has fixed values.
void Remap::Setup::set_fixed(const Links& links, i64 nb, const std::vector<i64>& didx, const std::vector<i64>& udst) {
  i64 mine = static_cast<i64>(links.fixed_row.size()), total = 0;
  detail::check_mpi(MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
  if (total == 0) return;
  KeyedItems items;
  items.key = sorted_unique(links.row);  // one item a linked point: kind 0
  items.ints.emplace_back(items.key.size(), 0);
  items.reals.emplace_back(items.key.size(), 0.0);
  for (std::size_t k = 0; k < links.fixed_row.size(); ++k) {  // kind 1: a fixed value
    items.key.push_back(links.fixed_row[k]);
    items.ints[0].push_back(1);
    items.reals[0].push_back(links.fixed_value[k]);
  }
  std::vector<i64> offs;
  const KeyedItems got = detail::route_by_key(std::move(items), nb, udst, comm, offs, opt.algorithm);
  std::vector<char> fixed(udst.size(), 0);
  std::vector<double> value(udst.size(), 0.0);
  std::string bad;
  for (std::size_t u = 0; u < udst.size() && bad.empty(); ++u) {
    bool linked = false;
    for (i64 k = offs[u]; k < offs[u + 1]; ++k) {
      const double v = got.reals[0][static_cast<std::size_t>(k)];
      if (got.ints[0][static_cast<std::size_t>(k)] == 0) linked = true;
      else if (fixed[u] && !(v == value[u] || (std::isnan(v) && std::isnan(value[u]))))
        bad = "destination point " + std::to_string(udst[u]) + " has two fixed values";
      else fixed[u] = 1, value[u] = v;
    }
    if (bad.empty() && linked && fixed[u])
      bad = "destination point " + std::to_string(udst[u]) + " has links and a fixed value";
  }
  detail::agree(comm, [&] {
    if (!bad.empty())
      throw Error(bad, "remap set-up, fixed values (YAC's dst_address_fixed, or xESMF's NaN links)",
                  "a point takes either links or one fixed value (YAC refuses such a file too)");
  });
  for (std::size_t j = 0; j < didx.size(); ++j) {
    const std::size_t u = position_in(udst, didx[j]);
    if (fixed[u]) fixed_slot.push_back(static_cast<i64>(j)), fixed_val.push_back(value[u]);
  }
}

// bfb: each row with all its links in global order, on one rank per row holder.
void Remap::Setup::setup_bfb(Links links, const Decomp& src, const Decomp& dst, const std::vector<i64>& udst) {
  const i64 na = src.global_size(), nb = dst.global_size();
  const bool at_dst = detail::works_on_dst(opt);
  const detail::WorkSide side = work_side(at_dst ? dst_n > 0 : src_n > 0, comm);
  const auto [rlo, rhi] = side.block(nb);
  const std::vector<i64> rows = detail::bfb_rows(opt, udst, {rlo, rhi});
  KeyedItems items;
  items.key = std::move(links.row);
  items.ints.push_back(std::move(links.col));
  items.reals.push_back(std::move(links.weight));
  KeyedItems got = detail::route_by_key(std::move(items), nb, rows, comm, ptr, opt.algorithm);
  w = std::move(got.reals[0]);
  const std::vector<i64> cols = sorted_unique(got.ints[0]);
  x_size = static_cast<i64>(cols.size());
  set_columns(got.ints[0], {}, cols);
  // Every column a link uses must have a holder: the Plan finds any that has none.
  try {
    if (at_dst) gather = std::make_unique<Redist>(src, Decomp::indices(na, cols), comm, redist_options(true, false, true));
    else gather = side_redist(src_n > 0, src, Decomp::indices(na, cols), redist_options(true));  // among the source ranks
  } catch (const MpiError&) {
    throw;
  } catch (const Error& e) {
    throw Error("the weights use source points that no rank holds: " + e.fault(), "remap set-up",
                "the source decomposition must hold every source point the weights use");
  }
  if (!at_dst)
    after = std::make_unique<Redist>(Decomp::stripes(nb, {{rlo, rhi - rlo, 1}}), dst, comm,
                                     redist_options(false, false, true));
}

// sum: each link with one copy of its source value; partial rows travel to the row holders.
void Remap::Setup::setup_sum(Links links, const Decomp& src, const Decomp& dst, const std::vector<i64>& udst) {
  const i64 na = src.global_size(), nb = dst.global_size();
  std::vector<i64> cols;  // the source points whose links live here, sorted
  std::vector<i64> x_of;  // their positions in x (the source buffer at src; empty: as in cols)
  std::vector<i64> unheld;  // at dst: columns of this rank's block that no rank holds
  if (opt.location == RemapLocation::src) {
    // Each point goes to one of its holders, the lowest rank, which Redist's duplicate rule
    // tells every holder: ask for my own points, each carrying its provider's rank.
    const std::vector<i64> sidx = src.to_indices(), usrc = sorted_unique(sidx);
    std::vector<std::int32_t> me(sidx.size()), provider(usrc.size());
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    std::fill(me.begin(), me.end(), rank);
    Redist(src, Decomp::indices(na, usrc), comm, redist_options(true)).run({Field(me, provider)});
    std::vector<i64> first(usrc.size(), -1);
    for (std::size_t k = sidx.size(); k-- > 0;) first[position_in(usrc, sidx[k])] = static_cast<i64>(k);
    for (std::size_t u = 0; u < usrc.size(); ++u)
      if (provider[u] == rank) {
        cols.push_back(usrc[u]);
        x_of.push_back(first[u]);
      }
    x_size = src_n;
  } else {
    const detail::WorkSide side = work_side(dst_n > 0, comm);
    const auto [clo, chi] = side.block(na);
    cols.resize(static_cast<std::size_t>(chi - clo));
    std::iota(cols.begin(), cols.end(), clo);
    x_size = chi - clo;
    // Points no rank holds are allowed (a model may leave out land) as long as no link uses
    // them: the gather fills them, and the links are checked below.
    gather = std::make_unique<Redist>(src, Decomp::stripes(na, {{clo, chi - clo, 1}}), comm, redist_options(true, true, true));
    for (const Segment& seg : gather->plan().missing())
      for (i64 k = 0; k < seg.count; ++k) unheld.push_back(clo + seg.offset + k * seg.stride);
    std::sort(unheld.begin(), unheld.end());
  }
  // Links to their columns' holders, with their global positions for a fixed order per row.
  i64 first_link = 0, m = links.size();
  detail::check_mpi(MPI_Exscan(&m, &first_link, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Exscan");
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) first_link = 0;
  KeyedItems items;
  items.key = std::move(links.col);
  items.ints.push_back(std::move(links.row));
  items.ints.emplace_back(static_cast<std::size_t>(m));
  std::iota(items.ints[1].begin(), items.ints[1].end(), first_link);
  items.reals.push_back(std::move(links.weight));
  std::vector<i64> offs;
  KeyedItems got = detail::route_by_key(std::move(items), na, cols, comm, offs, opt.algorithm);
  // A link whose column no rank holds reached nobody (at src) or an unheld column (at dst).
  i64 arrived = static_cast<i64>(got.size()), total_arrived = 0, total = 0, bad = -1;
  for (std::size_t k = 0; k < got.size() && bad < 0 && !unheld.empty(); ++k)
    if (std::binary_search(unheld.begin(), unheld.end(), got.key[k])) bad = got.key[k];
  detail::check_mpi(MPI_Allreduce(&arrived, &total_arrived, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
  detail::check_mpi(MPI_Allreduce(&m, &total, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
  detail::agree(comm, [&] {
    if (bad >= 0 || total_arrived != total)
      throw Error("the weights use source points that no rank holds" +
                      (bad >= 0 ? " (source point " + std::to_string(bad) + ")"
                                : " (" + std::to_string(total - total_arrived) + " links)"),
                  "remap set-up", "the source decomposition must hold every source point the weights use");
  });
  // Partial rows: links grouped by row, each row in global link order.
  std::vector<std::size_t> ord(got.size());
  std::iota(ord.begin(), ord.end(), std::size_t{0});
  const std::vector<i64>&row = got.ints[0], &pos = got.ints[1];
  std::sort(ord.begin(), ord.end(), [&](std::size_t a, std::size_t b) {
    return row[a] != row[b] ? row[a] < row[b] : pos[a] < pos[b];
  });
  std::vector<i64> prow, lcol(ord.size());
  w.resize(ord.size());
  ptr.assign(1, 0);
  for (std::size_t k = 0; k < ord.size(); ++k) {
    if (k == 0 || row[ord[k]] != row[ord[k - 1]]) {
      if (k > 0) ptr.push_back(static_cast<i64>(k));
      prow.push_back(row[ord[k]]);
    }
    lcol[k] = got.key[ord[k]];
    w[k] = got.reals[0][ord[k]];
  }
  if (!ord.empty()) ptr.push_back(static_cast<i64>(ord.size()));
  set_columns(lcol, x_of, cols);
  // Contributions (one per partial row and rank) to the holders of each destination row.
  i64 np = static_cast<i64>(prow.size()), c0 = 0, ctotal = 0;
  detail::check_mpi(MPI_Exscan(&np, &c0, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Exscan");
  if (rank == 0) c0 = 0;
  detail::check_mpi(MPI_Allreduce(&np, &ctotal, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
  KeyedItems contrib;
  contrib.key = prow;
  contrib.ints = {std::vector<i64>(prow.size())};
  std::iota(contrib.ints[0].begin(), contrib.ints[0].end(), c0);
  KeyedItems where = detail::route_by_key(std::move(contrib), nb, udst, comm, cptr, opt.algorithm);
  z_size = static_cast<i64>(where.size());
  const Decomp partials = Decomp::stripes(ctotal, {{c0, np, 1}}), holders = Decomp::indices(ctotal, where.ints[0]);
  if (opt.location == RemapLocation::src)
    after = std::make_unique<Redist>(partials, holders, comm, redist_options(false, false, true));
  else  // among the destination ranks
    after = side_redist(dst_n > 0, partials, holders, redist_options(false));
}

std::unique_ptr<Redist> Remap::Setup::side_redist(bool mine, const Decomp& from, const Decomp& to,
                                                  const RedistOptions& o) {
  const std::string algorithm = o.algorithm.empty() ? Settings::get().schedule.value_or("p2p") : o.algorithm;
  if (!opt.split_phase || algorithm == "p2p") return std::make_unique<Redist>(from, to, comm, o);
  // A staged schedule forwards through the ranks of its communicator: only the side's own ranks,
  // which all run this exchange in the same call, may be in it. The Redist keeps its own copy
  // of the communicator (shared_comm), so the split one is freed here.
  one_side = true;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm side = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_split(comm, mine ? 0 : MPI_UNDEFINED, rank, &side), "MPI_Comm_split");
  std::unique_ptr<Redist> r;
  // Every rank of the Remap sees a failure of the side's set-up, not only the side's ranks.
  detail::agree(comm, [&] {
    if (side == MPI_COMM_NULL) return;
    try {
      r = std::make_unique<Redist>(from, to, side, o);
    } catch (...) {
      MPI_Comm_free(&side);
      throw;
    }
    MPI_Comm_free(&side);
  });
  return r;
}

Remap::Remap(const std::string& weight_file, const Decomp& src, const Decomp& dst, MPI_Comm comm,
             RemapOptions options)
{
  auto setup = std::make_shared<Setup>();
  setup->opt = std::move(options);
  setup->use_comm(comm);
  WeightReadOptions ro;
  ro.src_size = src.global_size();
  ro.dst_size = dst.global_size();
  WeightSlice slice = read_weights(weight_file, setup->comm, ro);
  if (is_largest_area_fraction(slice.info)) {
    setup->opt.rule = RemapRule::largest_area_fraction;
    if (setup->opt.order != RemapOrder::bfb)  // the same file, so the same answer, on every rank
      throw Error("map_method \"" + slice.info.map_method + "\" (CDO's genlaf) is applied by value classes, a row's links together",
                  weight_file, "use order bfb (the default), which keeps each row's links on one rank in file order");
  }
  try {
    setup->setup(std::move(slice.links), src, dst);
  } catch (const MpiError&) {
    throw;
  } catch (const Error& e) {  // a fault of the file's links (fixed values on linked points...): name the file
    throw Error(e.fault(), "file " + weight_file + (e.where().empty() ? "" : ", " + e.where()), e.fix());
  }
  impl_ = std::make_unique<Impl>(std::move(setup));
  ++remap_setups;
}

Remap::Remap(const Links& links, const Decomp& src, const Decomp& dst, MPI_Comm comm, RemapOptions options)
{
  auto setup = std::make_shared<Setup>();
  setup->opt = std::move(options);
  setup->use_comm(comm);
  setup->setup(links, src, dst);
  impl_ = std::make_unique<Impl>(std::move(setup));
  ++remap_setups;
}

Remap::Remap() = default;

Remap Remap::share() const {
  Remap r;
  r.impl_ = std::make_unique<Impl>(impl_->s);
  return r;
}

std::int64_t Remap::setups() { return remap_setups.load(); }

Remap::~Remap() = default;
Remap::Remap(Remap&&) noexcept = default;
Remap& Remap::operator=(Remap&&) noexcept = default;

const RemapOptions& Remap::options() const { return impl_->opt; }
RemapStats Remap::stats() const { return impl_->s->st; }
double Remap::move_seconds() const { return impl_->move_s; }
Remap::MoveTimers Remap::move_timers() const {
  MoveTimers t;
  impl_->gather.add_timers(t);
  impl_->after.add_timers(t);
  return t;
}

std::vector<Remap::Exchange> Remap::exchanges() const {
  std::vector<Exchange> out;
  if (impl_->gather) out.push_back({"gather", impl_->gather.redist()});
  if (impl_->after) out.push_back({"after", impl_->after.redist()});
  return out;
}

void Remap::run(std::span<const double> src, std::span<double> dst) {
  const RemapField f{src, dst};
  run(std::span<const RemapField>(&f, 1));
}

void Remap::run(std::span<const RemapField> fields) {
  Impl& im = *impl_;
  // Ranks must agree on the number of fields (the exchanges carry them all) and each field must
  // fit the decompositions; a fault anywhere makes every rank throw instead of hang.
  const int count[2] = {static_cast<int>(fields.size()), -static_cast<int>(fields.size())};
  int most[2] = {0, 0};
  detail::check_mpi(MPI_Allreduce(count, most, 2, MPI_INT, MPI_MAX, im.comm), "MPI_Allreduce");
  detail::agree(im.comm, [&] {
    if (most[0] != -most[1])
      throw Error("ranks run different numbers of fields (" + std::to_string(-most[1]) + " to " +
                      std::to_string(most[0]) + ")",
                  "remap run, " + detail::world_rank_label(), "every rank passes the same fields");
    im.check_sizes(fields, "remap run");
  });
  if (fields.empty()) return;  // on every rank alike
  im.skip_or_gather(fields);
  im.product(fields);
  if (!im.direct_rows) {
    if (im.after) im.moving([&] { im.after.run(im.after_moves(fields)); });
    im.finalize(fields);
  }
  im.put_fixed(fields);
}

// A fractional mask weighs a sum; the largest-area-fraction rule sums nothing (the same options,
// so the same answer, on every rank).
void Remap::Impl::check_frac() const {
  if (opt.rule == RemapRule::largest_area_fraction)
    throw Error("a fractional mask with largest-area-fraction weights (CDO's genlaf)", "remap run",
                "put the field without a fraction: each target takes one source value");
}

void Remap::run(std::span<const RemapFracField> fields) {
  impl_->check_frac();
  const Impl::FracCall call(*impl_, fields);
  run(call.fields());
}

void Remap::start(std::span<const RemapFracField> fields) {
  impl_->check_frac();
  const Impl::FracCall call(*impl_, fields);
  start(call.fields());
}

void Remap::finish(std::span<const RemapFracField> fields) {
  impl_->check_frac();
  const Impl::FracCall call(*impl_, fields);
  finish(call.fields());
}

void Remap::start(std::span<const RemapField> fields) {
  Impl& im = *impl_;
  im.check_split(fields, "Remap::start");
  if (im.started)
    throw Error("start called twice without finish", "Remap::start, " + detail::world_rank_label(),
                "call finish before the next start");
  if (im.opt.location == RemapLocation::dst) {
    im.moving([&] { im.gather.start(im.gather_moves(fields)); });  // the crossing move: sources to the link holders
  } else {
    im.skip_or_gather(fields);  // bfb: among the source ranks
    im.product(fields);
    im.moving([&] { im.after.start(im.after_moves(fields)); });  // the crossing move: results or partial sums
  }
  im.started = true;
}

void Remap::finish(std::span<const RemapField> fields) {
  Impl& im = *impl_;
  im.check_split(fields, "Remap::finish");
  const bool started = im.started;
  im.started = false;
  if (im.opt.location == RemapLocation::dst) {
    im.moving([&] {
      if (!started) im.gather.start(im.gather_moves(fields));
      im.gather.finish();
    });
    im.x_is_src = false;
    im.product(fields);
    if (!im.direct_rows) {
      if (im.after) im.moving([&] { im.after.run(im.after_moves(fields)); });  // sum: among the destination ranks
      im.finalize(fields);
    }
  } else {
    im.moving([&] {
      if (!started) im.after.start(im.after_moves(fields));
      im.after.finish();
    });
    im.finalize(fields);
  }
  im.put_fixed(fields);
}

void Remap::prepare(int nfields) {
  const std::vector<Type> types(static_cast<std::size_t>(nfields), Type::f64);
  for (Mover* m : {&impl_->gather, &impl_->after})
    if (*m) m->prepare(types.size());
  const std::size_t n = static_cast<std::size_t>(nfields);
  if (std::find(impl_->nfields.begin(), impl_->nfields.end(), n) == impl_->nfields.end()) impl_->nfields.push_back(n);
}

void Remap::Impl::check_sizes(std::span<const RemapField> fields, const char* where) const {
  for (std::size_t f = 0; f < fields.size(); ++f)
    if (static_cast<i64>(fields[f].src.size()) != src_n || static_cast<i64>(fields[f].dst.size()) != dst_n) {
      // With a fractional mask the fields are pairs [x, f]: name the caller's field and its fraction.
      std::string what = "field ";
      what.append(std::to_string(frac ? f / 2 : f)).append(frac && f % 2 ? "'s fraction" : "");
      throw Error(what + " has " + std::to_string(fields[f].src.size()) + " source and " +
                      std::to_string(fields[f].dst.size()) + " destination values, the decompositions " +
                      std::to_string(src_n) + " and " + std::to_string(dst_n),
                  std::string(where) + ", " + detail::world_rank_label());
    }
}

void Remap::Impl::check_split(std::span<const RemapField> fields, const char* where) {
  check_sizes(fields, where);
  if (fields.empty()) throw Error("no fields given", where);
  if (!nfields.empty() && std::find(nfields.begin(), nfields.end(), fields.size()) == nfields.end())
    throw Error("called with " + std::to_string(fields.size()) + " fields, prepared for " +
                    std::to_string(nfields.front()) + (nfields.size() > 1 ? " (or another count prepared)" : ""),
                where, "pass the same fields to every start and finish");
  if (nfields.empty()) nfields.push_back(fields.size());
  for (const Mover* m : {&gather, &after})
    if (*m && m->redist()->schedule().stages.size() > 1 && !s->one_side)
      throw Error("the split-phase remap needs a single-stage schedule, not \"" + opt.algorithm + "\"", where,
                  "use the p2p algorithm for coupling");
}

std::vector<Field> Remap::Impl::gather_moves(std::span<const RemapField> fields) {
  const std::size_t nf = fields.size(), nx = static_cast<std::size_t>(x_size);
  xbuf.resize(nf * nx);
  std::vector<Field> moves;
  for (std::size_t f = 0; f < nf; ++f)
    moves.emplace_back(Type::f64, fields[f].src.data(), src_n, xbuf.data() + f * nx, x_size);
  return moves;
}

std::vector<Field> Remap::Impl::after_moves(std::span<const RemapField> fields) {
  const std::size_t nf = fields.size(), ny = ptr.size() - 1, nz = static_cast<std::size_t>(z_size);
  ybuf.resize(nf * ny);
  std::vector<Field> moves;
  if (opt.order == RemapOrder::bfb) {  // rows in blocks: results to their owners
    // With a fractional mask the rows were divided already: one value per row and field.
    const std::size_t step = frac ? 2 : 1;
    for (std::size_t f = 0; f < nf; f += step)
      moves.emplace_back(Type::f64, ybuf.data() + f / step * ny, static_cast<i64>(ny), fields[f].dst.data(), dst_n);
  } else {  // partial sums to the row holders
    zbuf.resize(nf * nz);
    for (std::size_t f = 0; f < nf; ++f)
      moves.emplace_back(Type::f64, ybuf.data() + f * ny, static_cast<i64>(ny), zbuf.data() + f * nz, z_size);
  }
  return moves;
}

namespace {
// Calls row(r, first, end) for every row in order, the row's links being [first, end). With a
// common width (RowShape) each row that has links has width of them: a loop of known length,
// widths 4 and 5 (nnn, bilinear, bicubic, GAUSWGT; dis5) compile-time constants, so the
// compiler unrolls it. Without gaps the bounds come from r, without reading ptr; with gaps
// (masked targets) the first link comes from ptr and an empty row is a branch, not a loop of
// unknown length whose exit and placement in the instruction cache the row's sum waits on
// (docs/performance.md, "Dynamic fractional mask").
// flatten: `row` is inlined at each of its (up to three) calls, which GCC otherwise stops doing
// once there are three: a call per row made the nnn product 1.3x slower.
template <class Row>
__attribute__((flatten)) void each_row(const std::vector<i64>& ptr, RowShape shape, const Row& row) {
  const std::size_t ny = ptr.size() - 1;
  const i64* const pp = ptr.data();
  // kw: a std::integral_constant (a width known at compile time) or a plain i64.
  const auto by_number = [&](auto kw) {
    if (!shape.gaps) {
      for (std::size_t r = 0; r < ny; ++r) row(r, static_cast<i64>(r) * kw, static_cast<i64>(r) * kw + kw);
      return;
    }
    for (std::size_t r = 0; r < ny; ++r) {
      const i64 first = pp[r];
      if (pp[r + 1] == first) row(r, first, first);
      else row(r, first, first + kw);
    }
  };
  switch (shape.width) {
    case 4: return by_number(std::integral_constant<i64, 4>{});
    case 5: return by_number(std::integral_constant<i64, 5>{});
    case 0:
      for (std::size_t r = 0; r < ny; ++r) row(r, pp[r], pp[r + 1]);
      return;
    default: return by_number(static_cast<i64>(shape.width));
  }
}

// One pass over the links forming two rows at once (weights and indices read once), each summed
// in link order as it would be alone (bit-identical): s0 = sum of w a(j), s1 = sum of w b(j);
// then put(r, s0, s1), the unmapped value for a row without links.
template <class A, class B, class Put>
void two_rows(const std::vector<i64>& ptr, RowShape shape, const std::vector<double>& w,
              const std::vector<std::uint32_t>& xi, double unmapped, const A& a, const B& b, const Put& put) {
  // Raw pointers held in registers: `put` stores doubles, after which the compiler would
  // otherwise reload the vectors' data pointers every row.
  const double* const wp = w.data();
  const std::uint32_t* const xp = xi.data();
  each_row(ptr, shape, [&](std::size_t r, i64 first, i64 end) {
    double s0 = 0.0, s1 = 0.0;
    for (i64 k = first; k < end; ++k) {
      const double wk = wp[k];
      const std::uint32_t j = xp[k];
      s0 += wk * a(j);
      s1 += wk * b(j);
    }
    put(r, first == end ? unmapped : s0, first == end ? unmapped : s1);
  });
}

// One row per pass: y[r] = sum of w x(j) over the row's links, in link order; the unmapped
// value for a row without links. With `two_step` the loop takes two links a step, then the odd
// one: the same sums in the same order, s = ((0 + w0 x0) + w1 x1) + ..., bit-identical. Where
// the link count changes from row to row (conservative weights: 1 to 19 links, a new count at
// two rows in three) the loop's exit depends on it and is mispredicted about once a row; two
// links a step halve the exits (Remap::run 1.27-1.67x on the YAC round trip's conservative
// files). Where counts rarely change (5 neighbours, or none on land) the exits are predicted and
// the two steps only cost: 8% on the T799 <-> ORCA025 dis5 files, hence varying_counts.
template <class X>
void one_row(const std::vector<i64>& ptr, RowShape shape, bool two_step, const std::vector<double>& w,
             const std::vector<std::uint32_t>& xi, double unmapped, const X& x, double* y) {
  const double* const wp = w.data();
  const std::uint32_t* const xp = xi.data();
  if (!two_step) {
    each_row(ptr, shape, [&](std::size_t r, i64 first, i64 end) {
      double s = 0.0;
      for (i64 k = first; k < end; ++k) s += wp[k] * x(xp[k]);
      y[r] = first == end ? unmapped : s;
    });
    return;
  }
  each_row(ptr, shape, [&](std::size_t r, i64 first, i64 end) {
    double s = 0.0;
    i64 k = first;
    for (; k + 1 < end; k += 2) {
      s += wp[k] * x(xp[k]);
      s += wp[k + 1] * x(xp[k + 1]);
    }
    if (k < end) s += wp[k] * x(xp[k]);
    y[r] = first == end ? unmapped : s;
  });
}

// The fractional mask's division, as the coupler did it after a run of [f x, f].
inline double frac_ratio(double wfx, double wf) { return wf != 0.0 ? wfx / wf : 0.0; }

// Two and four doubles in a vector register (GCC/Clang vector extensions: IEEE arithmetic per lane).
typedef double Double2 __attribute__((vector_size(16)));
typedef double Double4 __attribute__((vector_size(32)));

// q[r] = frac_ratio(a[r], b[r]) for n rows (q may be a), 2 or 4 rows at a time: the divider
// bounds a division per row, and its vector form does several for the price of about one.
// Per-lane IEEE division: the same bits as frac_ratio's.

template <class V>
inline void divide_rows_with(const double* a, const double* b, double* q, std::size_t n) {
  constexpr std::size_t width = sizeof(V) / sizeof(double);
  static_assert(width == 2 || width == 4, "a vector of doubles");
  std::size_t r = 0;
  for (; r + width <= n; r += width) {
    V va, vb;
    std::memcpy(&va, a + r, sizeof va);
    std::memcpy(&vb, b + r, sizeof vb);
    const V zero = {};
    const auto nonzero = vb != zero;
    const V t = va / (nonzero ? vb : zero + 1.0);  // no lane divides by 0
    const V out = nonzero ? t : zero;
    std::memcpy(q + r, &out, sizeof out);
  }
  for (; r < n; ++r) q[r] = frac_ratio(a[r], b[r]);
}

void divide_rows_generic(const double* a, const double* b, double* q, std::size_t n) {
  divide_rows_with<Double2>(a, b, q, n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ESTUARY_HAVE_AVX_DIVIDE 1
__attribute__((target("avx"))) void divide_rows_avx(const double* a, const double* b, double* q, std::size_t n) {
  divide_rows_with<Double4>(a, b, q, n);
}
#endif

void divide_rows(const double* a, const double* b, double* q, std::size_t n) {
#ifdef ESTUARY_HAVE_AVX_DIVIDE
  static const bool avx = __builtin_cpu_supports("avx") && !Settings::get().simd_generic;
  if (avx) return divide_rows_avx(a, b, q, n);
#endif
  divide_rows_generic(a, b, q, n);
}
// CDO's remaplaf, row by row: the links' source values in classes of equal value (NaN a class
// of its own each time, as CDO's comparison), each class's weights summed in link order from 0;
// the row takes the value of the class with the largest sum, the first such on a tie (CDO's
// strict comparison), or the unmapped value without links. Rows of a few links: a linear scan.
void largest_class(const std::vector<i64>& ptr, const std::vector<double>& w, const std::vector<std::uint32_t>& xi,
                   double unmapped, const double* x, double* y) {
  std::vector<double> value, weight;
  for (std::size_t r = 0; r + 1 < ptr.size(); ++r) {
    value.clear();
    weight.clear();
    for (i64 k = ptr[r]; k < ptr[r + 1]; ++k) {
      const double v = x[xi[static_cast<std::size_t>(k)]];
      std::size_t c = 0;
      while (c < value.size() && !(value[c] == v)) ++c;
      if (c == value.size()) value.push_back(v), weight.push_back(0.0);
      weight[c] += w[static_cast<std::size_t>(k)];
    }
    std::size_t best = 0;
    for (std::size_t c = 1; c < value.size(); ++c)
      if (weight[c] > weight[best]) best = c;
    y[r] = value.empty() ? unmapped : value[best];
  }
}
}  // namespace

// y[r] = sum of the row's links, in link order; into the field itself when rows are elements.
void Remap::Impl::product(std::span<const RemapField> fields) {
  if (frac) return product_frac(fields);
  const std::size_t nf = fields.size(), nx = static_cast<std::size_t>(x_size), ny = ptr.size() - 1;
  if (!direct_rows) ybuf.resize(nf * ny);
  const std::vector<std::uint32_t>& links = x_links();
  const auto src_of = [&](std::size_t f) { return gather && !x_is_src ? xbuf.data() + f * nx : fields[f].src.data(); };
  const auto dst_of = [&](std::size_t f) { return direct_rows ? fields[f].dst.data() : ybuf.data() + f * ny; };
  if (opt.rule == RemapRule::largest_area_fraction) {
    for (std::size_t f = 0; f < nf; ++f) largest_class(ptr, w, links, opt.unmapped_value, src_of(f), dst_of(f));
    return;
  }
  // Fields in pairs: one pass over the links (weights and indices read once) forms two rows,
  // each summed in link order as alone (bit-identical); most multi-field couplings gain.
  std::size_t f0 = 0;
  for (; f0 + 1 < nf; f0 += 2) {
    const double *x0 = src_of(f0), *x1 = src_of(f0 + 1);
    double *y0 = dst_of(f0), *y1 = dst_of(f0 + 1);
    two_rows(
        ptr, shape, w, links, opt.unmapped_value, [&](std::uint32_t j) { return x0[j]; }, [&](std::uint32_t j) { return x1[j]; },
        [&](std::size_t r, double v0, double v1) { y0[r] = v0, y1[r] = v1; });
  }
  for (std::size_t f = f0; f < nf; ++f) {
    const double* x = src_of(f);
    one_row(ptr, shape, two_step, w, links, opt.unmapped_value, [x](std::uint32_t j) { return x[j]; }, dst_of(f));
  }
}

// The rows of W 1, each summed in link order (the unmapped value for a row without links):
// W f for fractions that are all 1. Formed at the first need, kept.
const std::vector<double>& Remap::Impl::row_sums() {
  if (wsum.empty() && !ptr.empty()) {
    wsum.resize(ptr.size() - 1);
    one_row(ptr, shape, two_step, w, xi, opt.unmapped_value, [](std::uint32_t) { return 1.0; }, wsum.data());
  }
  return wsum;
}

// Pairs [x, f] (fractional masks): one pass over the links forms both rows, W (f x) with each
// link's f x rounded as the product formed beforehand would be (f x, then times the weight),
// and W f, each summed in link order: the same bits as a run of the two fields [f x, f]. bfb rows are complete here:
// divided (divide_rows) into the field (rows = elements) or ybuf (one value per row and field,
// which bfb at src moves); sum keeps both partial rows in ybuf.
// A pair whose fractions are all 1 here takes one column instead of two: then f x = x and each
// link's w f = w exactly, so W (f x) = W x and W f = the row sums of the weights (row_sums),
// the same bits; the check is one pass over the fractions, stopping at the first that is not 1.
void Remap::Impl::product_frac(std::span<const RemapField> fields) {
  const std::size_t np = fields.size() / 2, nx = static_cast<std::size_t>(x_size), ny = ptr.size() - 1;
  const bool divide = opt.order == RemapOrder::bfb;
  if (!direct_rows) ybuf.resize(2 * np * ny);
  if (divide) dbuf.resize(ny);  // all-ones pairs: W x before the division by the row sums
  const std::vector<std::uint32_t>& links = x_links();
  const std::size_t nread = static_cast<std::size_t>(x_is_src ? src_n : x_size);  // the fractions read as x
  const auto src_of = [&](std::size_t f) { return gather && !x_is_src ? xbuf.data() + f * nx : fields[f].src.data(); };
  for (std::size_t v = 0; v < np; ++v) {
    const double *x = src_of(2 * v), *fr = src_of(2 * v + 1);
    double* const out = divide ? (direct_rows ? fields[2 * v].dst.data() : ybuf.data() + v * ny) : nullptr;
    if (std::all_of(fr, fr + nread, [](double q) { return q == 1.0; })) {
      double* y0 = divide ? dbuf.data() : ybuf.data() + 2 * v * ny;
      one_row(ptr, shape, two_step, w, links, opt.unmapped_value, [x](std::uint32_t j) { return x[j]; }, y0);
      const std::vector<double>& ws = row_sums();
      if (divide) divide_rows(y0, ws.data(), out, ny);
      else std::copy(ws.begin(), ws.end(), y0 + ny);
      continue;
    }
    // Both rows of a pair (sum: kept as partial rows) or, for bfb, each row divided as soon as
    // its two sums are formed: the division overlaps the next row's loads, where dividing a
    // block of rows afterwards (even vectorised, in L1) cost 10-15 % more of the masked step
    // on the full grids (docs/performance.md, "Dynamic fractional mask"). `pass(put)` forms
    // both rows.
    const auto rows = [&](const auto& pass) {
      if (!divide) {
        double *y0 = ybuf.data() + 2 * v * ny, *y1 = y0 + ny;
        pass([y0, y1](std::size_t r, double v0, double v1) { y0[r] = v0, y1[r] = v1; });
        return;
      }
      pass([out](std::size_t r, double v0, double v1) { out[r] = frac_ratio(v0, v1); });
    };
    const bool gathered = gather && !x_is_src;
    if (gathered) {
      // f x formed once per gathered source value, in place of x in this handle's copy (one
      // vectorised pass; each value serves several links), the same product as per link.
      double* gx = xbuf.data() + 2 * v * nx;
      for (std::size_t i = 0; i < nx; ++i) gx[i] = fr[i] * gx[i];
      rows([&](const auto& put) {
        two_rows(ptr, shape, w, links, opt.unmapped_value, [gx](std::uint32_t j) { return gx[j]; },
                 [fr](std::uint32_t j) { return fr[j]; }, put);
      });
    } else {  // the caller's x: f x per link
      rows([&](const auto& put) {
        two_rows(ptr, shape, w, links, opt.unmapped_value, [x, fr](std::uint32_t j) { return fr[j] * x[j]; },
                 [fr](std::uint32_t j) { return fr[j]; }, put);
      });
    }
  }
}

// After the last move: sum adds the partial sums per row (ascending source rank); then each
// destination element takes its row's value (with a fractional mask: the quotient of its
// pair's rows, divided here for sum, in the product for bfb). bfb at src moved the results into
// place already.
void Remap::Impl::finalize(std::span<const RemapField> fields) {
  if (opt.order == RemapOrder::bfb && after) return;
  const std::size_t nf = fields.size(), nz = static_cast<std::size_t>(z_size);
  const double* rows = ybuf.data();  // bfb at dst: one value per unique destination row
  std::size_t nu = ptr.size() - 1;
  if (opt.order == RemapOrder::sum) {
    nu = cptr.empty() ? 0 : cptr.size() - 1;
    ubuf.resize(nf * nu);
    const i64* cp = cptr.data();
    if (frac) return finalize_frac_sum(fields, nu);
    for (std::size_t f = 0; f < nf; ++f) {
      const double* z = zbuf.data() + f * nz;
      double* u = ubuf.data() + f * nu;
      for (std::size_t r = 0; r < nu; ++r) {
        const i64 b = cp[r], e = cp[r + 1];
        double s = 0.0;
        for (i64 k = b; k < e; ++k) s += z[k];
        u[r] = b == e ? opt.unmapped_value : s;
      }
    }
    rows = ubuf.data();
  }
  // With a fractional mask (bfb), the divided rows of pair f/2 at f/2 in `rows`.
  const std::size_t step = frac ? 2 : 1;
  copy_to_slots(fields, rows, nu, step);
}

// Each destination element of field f (every step-th) takes its row's value, from row block
// f / step of `rows` (nu rows each).
void Remap::Impl::copy_to_slots(std::span<const RemapField> fields, const double* rows, std::size_t nu,
                                std::size_t step) {
  const i64* slot = dst_slot.data();
  for (std::size_t f = 0; f < fields.size(); f += step) {
    const double* from = rows + f / step * nu;
    double* d = fields[f].dst.data();
    for (std::size_t j = 0; j < dst_slot.size(); ++j) d[j] = from[slot[j]];
  }
}

// sum with a fractional mask: each pair's two rows added in one pass over the contributions
// (the same order as each alone), then divided, straight into the field when its elements are
// the rows in order (no copy to the slots).
void Remap::Impl::finalize_frac_sum(std::span<const RemapField> fields, std::size_t nu) {
  const std::size_t np = fields.size() / 2, nz = static_cast<std::size_t>(z_size);
  const i64* cp = cptr.data();
  const double unmapped = opt.unmapped_value;
  for (std::size_t v = 0; v < np; ++v) {
    const double *z0 = zbuf.data() + 2 * v * nz, *z1 = z0 + nz;
    double *u0 = ubuf.data() + 2 * v * nu, *u1 = u0 + nu;
    for (std::size_t r = 0; r < nu; ++r) {
      const i64 b = cp[r], e = cp[r + 1];
      double s0 = 0.0, s1 = 0.0;
      for (i64 k = b; k < e; ++k) s0 += z0[k], s1 += z1[k];
      u0[r] = b == e ? unmapped : s0;
      u1[r] = b == e ? unmapped : s1;
    }
    // Divided rows: at pair v's first block of ubuf, which copy_to_slots reads with step 2.
    divide_rows(u0, u1, direct_slots ? fields[2 * v].dst.data() : ubuf.data() + v * nu, nu);
  }
  if (!direct_slots) copy_to_slots(fields, ubuf.data(), nu, 2);
}

}  // namespace estuary
