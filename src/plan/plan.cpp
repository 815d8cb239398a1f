// Plan construction with a distributed directory (rendezvous over index ranges).
//
// 1. Every rank cuts its source and destination runs at bucket boundaries (bucket b = the
//    global indices [b*N/p, (b+1)*N/p), held by rank b) and sends each piece to its bucket's
//    owner as (global start, count, stride, local offset).
// 2. The bucket owner records, per index of its bucket, which source rank and offset own it
//    (O(N/p) memory), then walks the destination pieces and emits matched runs per
//    (source, destination) pair, extending a run while both offsets advance by a constant stride.
// 3. Each matched run goes back to its source rank (what to send) and its destination rank (what
//    to receive) in the same order, so both sides of a pair agree on the message layout.
#include "estuary/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "common/mpi_util.hpp"
#include "common/shared_comm.hpp"
#include "estuary/error.hpp"

namespace estuary {
namespace {

using detail::check_mpi;
using i64 = std::int64_t;

// The directory's cut of [0, n) into p buckets.
struct Buckets {
  i64 n;
  int p;
  i64 lo(int b) const { return static_cast<i64>((static_cast<__int128>(b) * n) / p); }
  int owner(i64 g) const {
    int b = static_cast<int>((static_cast<__int128>(g) * p) / n);
    while (b + 1 < p && lo(b + 1) <= g) ++b;
    while (lo(b) > g) --b;
    return b;
  }
};

// Cuts each run of `d` at bucket boundaries into (gstart, count, stride, local offset) pieces,
// laid out bucket after bucket (counts per bucket in `counts`). Two passes over the runs — one
// to count, one to place — so the pieces are stored once, ready for the all-to-all.
template <class Visit>
void cut_at_buckets(const Decomp& d, const Buckets& bk, Visit&& visit) {
  d.for_each_run([&](i64 local, i64 g, i64 count, i64 stride) {
    while (count > 0) {
      const int b = bk.owner(g);
      i64 take;
      if (stride > 0) take = (bk.lo(b + 1) - g + stride - 1) / stride;
      else take = (g - bk.lo(b)) / (-stride) + 1;
      take = std::min(take, count);
      visit(b, g, take, stride, local);
      g += take * stride;
      local += take;
      count -= take;
    }
  });
}

std::vector<i64> pieces_by_bucket(const Decomp& d, const Buckets& bk, std::vector<i64>& counts) {
  counts.assign(bk.p, 0);
  cut_at_buckets(d, bk, [&](int b, i64, i64, i64, i64) { counts[b] += 4; });
  std::vector<i64> at(bk.p, 0);
  for (int b = 1; b < bk.p; ++b) at[b] = at[b - 1] + counts[b - 1];
  std::vector<i64> out(static_cast<std::size_t>(at[bk.p - 1] + counts[bk.p - 1]));
  cut_at_buckets(d, bk, [&](int b, i64 g, i64 n, i64 stride, i64 local) {
    i64* o = out.data() + at[b];
    o[0] = g; o[1] = n; o[2] = stride; o[3] = local;
    at[b] += 4;
  });
  return out;
}

// A matched run of one (source, destination) pair.
struct PairRun {
  i64 src_off, src_stride, dst_off, dst_stride, count;
  // Appends (src, dst) if it continues the run's arithmetic progression on both sides.
  bool extend(i64 s, i64 d) {
    if (count == 1) {
      if (d == dst_off) return false;
      src_stride = s - src_off;
      dst_stride = d - dst_off;
      count = 2;
      return true;
    }
    if (s != src_off + count * src_stride || d != dst_off + count * dst_stride) return false;
    ++count;
    return true;
  }
};

constexpr i64 kNoSource = -1;  // peer value of a reply run that marks elements to fill

std::string index_list(const std::vector<i64>& v, i64 total) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (total > static_cast<i64>(v.size()))
    s += " and " + std::to_string(total - static_cast<i64>(v.size())) + " more";
  return s;
}

// Groups reply runs (peer, offset, stride, count) by peer, keeping their order.
std::vector<PeerSegments> group_by_peer(const std::vector<i64>& runs, int p,
                                        std::vector<Segment>* fills) {
  std::vector<std::vector<Segment>> by_peer(p);
  for (std::size_t i = 0; i < runs.size(); i += 4) {
    const Segment seg{runs[i + 1], runs[i + 3], runs[i + 2]};
    if (runs[i] == kNoSource) fills->push_back(seg);
    else by_peer[static_cast<std::size_t>(runs[i])].push_back(seg);
  }
  std::vector<PeerSegments> out;
  for (int r = 0; r < p; ++r)
    if (!by_peer[r].empty()) out.push_back({r, std::move(by_peer[r])});
  return out;
}

}  // namespace

i64 PeerSegments::count() const {
  i64 n = 0;
  for (const Segment& s : segments) n += s.count;
  return n;
}

Plan::Plan(const Decomp& src, const Decomp& dst, MPI_Comm comm, PlanOptions options)
    : options_(options) {
  shared_ = detail::shared_comm(comm);
  comm_ = shared_->comm;
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  src_size_ = src.size();
  dst_size_ = dst.size();
  const int p = size_;

  // The policies decide whether a rank throws or fills: ranks given different ones would part.
  {
    char opts[96];
    std::snprintf(opts, sizeof opts, "missing=%s fill_value=%.17g duplicate=%s",
                  options.missing == MissingPolicy::error ? "error" : "fill", options.fill_value,
                  options.duplicate == DuplicatePolicy::error ? "error" : "lowest_rank");
    detail::agree_same(comm_, "PlanOptions", opts);
  }
  // All ranks must agree on the global size before anything else.
  i64 sizes[2] = {src.global_size(), dst.global_size()}, mx[2], mn[2];
  check_mpi(MPI_Allreduce(sizes, mx, 2, MPI_INT64_T, MPI_MAX, comm_), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(sizes, mn, 2, MPI_INT64_T, MPI_MIN, comm_), "MPI_Allreduce");
  detail::agree(comm_, [&] {
    if (mx[0] != mn[0] || mx[1] != mn[1] || mx[0] != mx[1])
      throw Error("source and destination decompositions disagree on the global size (source " +
                      std::to_string(src.global_size()) + ", destination " +
                      std::to_string(dst.global_size()) + " here; over all ranks from " +
                      std::to_string(std::min(mn[0], mn[1])) + " to " +
                      std::to_string(std::max(mx[0], mx[1])) + ")",
                  "rank " + std::to_string(rank_), "every rank must use the same global size");
  });
  global_size_ = mx[0];
  const Buckets bk{global_size_, p};

  // 1. Send pieces to the directory.
  std::vector<i64> src_counts, dst_counts, src_cut, dst_cut;
  double t = MPI_Wtime();
  std::vector<i64> src_pieces = pieces_by_bucket(src, bk, src_cut);
  std::vector<i64> dst_pieces = pieces_by_bucket(dst, bk, dst_cut);
  timers_.cut_s = MPI_Wtime() - t;
  t = MPI_Wtime();
  std::vector<i64> src_in = detail::alltoallv(comm_, src_pieces, src_cut, src_counts);
  std::vector<i64>().swap(src_pieces);
  std::vector<i64> dst_in = detail::alltoallv(comm_, dst_pieces, dst_cut, dst_counts);
  std::vector<i64>().swap(dst_pieces);
  timers_.to_dir_s = MPI_Wtime() - t;
  t = MPI_Wtime();

  // 2. Match in this rank's bucket. Replies to destinations come out grouped by destination
  // rank (the walk goes rank by rank), so they are stored flat; replies to sources are not.
  std::vector<std::vector<i64>> to_src(p);
  std::vector<i64> to_dst, to_dst_counts(p, 0);
  detail::agree(comm_, [&] {
    const i64 lo = global_size_ > 0 ? bk.lo(rank_) : 0;
    const i64 hi = global_size_ > 0 ? bk.lo(rank_ + 1) : 0;
    std::vector<int> owner(static_cast<std::size_t>(hi - lo), -1);
    std::vector<i64> owner_off(static_cast<std::size_t>(hi - lo));
    std::size_t pos = 0;
    for (int s = 0; s < p; ++s) {
      for (const std::size_t end = pos + static_cast<std::size_t>(src_counts[s]); pos < end;
           pos += 4) {
        const i64 g0 = src_in[pos], n = src_in[pos + 1], stride = src_in[pos + 2],
                  off = src_in[pos + 3];
        for (i64 k = 0; k < n; ++k) {
          const std::size_t i = static_cast<std::size_t>(g0 + k * stride - lo);
          if (owner[i] >= 0) {
            if (options_.duplicate == DuplicatePolicy::lowest_rank) continue;
            const std::string g = std::to_string(g0 + k * stride);
            throw Error(owner[i] == s
                            ? "source rank " + std::to_string(s) + " lists global index " + g +
                                  " twice"
                            : "global index " + g + " is owned by two sources: rank " +
                                  std::to_string(owner[i]) + " and rank " + std::to_string(s),
                        "source decomposition",
                        "give every index one source, or set DuplicatePolicy::lowest_rank");
          }
          owner[i] = s;
          owner_off[i] = off + k;
        }
      }
    }
    // Walk destinations; one open run per source rank while walking one destination rank.
    std::vector<std::vector<PairRun>> runs(p + 1);  // per source rank; runs[p]: no source
    std::vector<i64> missing_sample;
    i64 missing_total = 0;
    int missing_rank = -1;
    pos = 0;
    for (int d = 0; d < p; ++d) {
      for (auto& r : runs) r.clear();
      for (const std::size_t end = pos + static_cast<std::size_t>(dst_counts[d]); pos < end;
           pos += 4) {
        const i64 g0 = dst_in[pos], n = dst_in[pos + 1], stride = dst_in[pos + 2],
                  off = dst_in[pos + 3];
        for (i64 k = 0; k < n; ++k) {
          const i64 g = g0 + k * stride;
          const int s = owner[static_cast<std::size_t>(g - lo)];
          const i64 soff = s >= 0 ? owner_off[static_cast<std::size_t>(g - lo)] : 0;
          if (s < 0 && options_.missing == MissingPolicy::error) {
            if (missing_rank < 0) missing_rank = d;
            if (d == missing_rank) {
              if (missing_sample.size() < 8) missing_sample.push_back(g);
              ++missing_total;
            }
            continue;
          }
          auto& list = runs[s >= 0 ? s : p];
          if (list.empty() || !list.back().extend(soff, off + k))
            list.push_back({soff, 1, off + k, 1, 1});
        }
      }
      for (int s = 0; s <= p; ++s)
        for (const PairRun& r : runs[s]) {
          if (s < p) to_src[s].insert(to_src[s].end(), {d, r.src_off, r.src_stride, r.count});
          to_dst.insert(to_dst.end(), {s < p ? s : kNoSource, r.dst_off, r.dst_stride, r.count});
          to_dst_counts[d] += 4;
        }
    }
    std::vector<i64>().swap(src_in);  // the pieces are matched: free them before the replies
    std::vector<i64>().swap(dst_in);
    if (missing_rank >= 0)
      throw Error((missing_total == 1 ? "destination index " : "destination indices ") +
                      index_list(missing_sample, missing_total) + " on rank " +
                      std::to_string(missing_rank) +
                      (missing_total == 1 ? " has no source" : " have no source"),
                  "destination decomposition",
                  "cover every destination index with a source, or set MissingPolicy::fill");
  });

  timers_.match_s = MPI_Wtime() - t;
  t = MPI_Wtime();

  // 3. Tell both sides.
  std::vector<i64> counts;
  sends_ = group_by_peer(detail::alltoallv(comm_, to_src, counts), p, nullptr);
  std::vector<std::vector<i64>>().swap(to_src);
  recvs_ = group_by_peer(detail::alltoallv(comm_, to_dst, to_dst_counts, counts), p, &missing_);
  timers_.replies_s = MPI_Wtime() - t;
}

Plan::~Plan() = default;

Plan::Plan(Plan&& o) noexcept { *this = std::move(o); }

Plan& Plan::operator=(Plan&& o) noexcept {
  if (this != &o) {
    std::swap(shared_, o.shared_);
    std::swap(comm_, o.comm_);
    rank_ = o.rank_;
    size_ = o.size_;
    src_size_ = o.src_size_;
    dst_size_ = o.dst_size_;
    global_size_ = o.global_size_;
    options_ = o.options_;
    timers_ = o.timers_;
    sends_ = std::move(o.sends_);
    recvs_ = std::move(o.recvs_);
    missing_ = std::move(o.missing_);
  }
  return *this;
}

Plan Plan::transposed() const {
  Plan t;
  t.shared_ = shared_;
  t.comm_ = comm_;
  t.rank_ = rank_;
  t.size_ = size_;
  t.src_size_ = dst_size_;
  t.dst_size_ = src_size_;
  t.global_size_ = global_size_;
  // The forward pass resolved both policies: the transpose sends exactly what arrived, and a
  // source element nobody holds is simply not written (not a fault, not a fill). The options
  // stay those of the forward plan (the fill value the executors check).
  t.options_ = options_;
  t.sends_ = recvs_;
  t.recvs_ = sends_;
  return t;
}

PlanStats Plan::stats() const {
  i64 messages = 0, elements = 0, self = 0;
  for (const PeerSegments& s : sends_) {
    elements += s.count();
    if (s.peer == rank_) self += s.count();
    else ++messages;
  }
  i64 local[3] = {messages, elements, self}, sum[3], mx[2], mn[2];
  check_mpi(MPI_Allreduce(local, sum, 3, MPI_INT64_T, MPI_SUM, comm_), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(local, mx, 2, MPI_INT64_T, MPI_MAX, comm_), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(local, mn, 2, MPI_INT64_T, MPI_MIN, comm_), "MPI_Allreduce");
  PlanStats st;
  st.ranks = size_;
  st.messages_total = sum[0];
  st.messages_max = mx[0];
  st.messages_min = mn[0];
  st.messages_avg = static_cast<double>(sum[0]) / size_;
  st.elements_total = sum[1];
  st.elements_max = mx[1];
  st.elements_min = mn[1];
  st.elements_avg = static_cast<double>(sum[1]) / size_;
  st.self_elements_total = sum[2];
  return st;
}

}  // namespace estuary
