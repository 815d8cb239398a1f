// Plan construction with a distributed directory (rendezvous over index ranges).
//
// 1. Every rank cuts its source and destination runs at bucket boundaries (bucket b = the
//    global indices [b*N/p, (b+1)*N/p), held by rank b) and sends what it holds in each bucket
//    to the bucket's owner, sources and destinations in one message.
// 2. The bucket owner records, per index of its bucket, which source rank and offset own it
//    (O(N/p) memory, one packed word per index), then answers each destination with the
//    (source rank, source offset) of every element it asked about, in the order asked.
// 3. Each destination rank walks the answers bucket by bucket in its own local order and forms
//    the matched runs per source rank, extending a run while both offsets advance by a constant
//    stride. Its receive list is then complete; the source side of every run goes to its source
//    rank (what to send), so both sides of a pair list the same elements in the same order.
//
// The message order of a pair (s, d) is: bucket after bucket, d's local order within a bucket.
//
// Two wire forms per (rank, side), chosen by the rank from its own runs (the plan does not
// depend on the choice): runs of indices, (start, count, stride[, offset]) per piece, which keep
// structured decompositions (blocks, boxes, cyclic) tiny; and single elements, a flat list of
// indices (destinations: the offsets stay home, the answers come back in the order asked) or
// (index, offset) pairs (sources), for scattered decompositions such as a random permutation,
// where almost every run is one or two elements and the run form would cost 4 words each.
// Answers follow the destination's form: one packed word per element, or answer runs
// (source, offset, stride, count) covering each piece.
#include "estuary/plan.hpp"

#include <algorithm>
#include <bit>
#include <climits>
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

// The directory's cut of [0, n) into p buckets: bucket b is [b*n/p, (b+1)*n/p).
class Buckets {
 public:
  Buckets(i64 n, int p) : p_(p), lo_(static_cast<std::size_t>(p) + 1) {
    for (int b = 0; b <= p; ++b)
      lo_[static_cast<std::size_t>(b)] = static_cast<i64>((static_cast<__int128>(b) * n) / p);
    scale_ = n > 0 ? static_cast<double>(p) / static_cast<double>(n) : 0.0;
  }
  int size() const { return p_; }
  i64 lo(int b) const { return lo_[static_cast<std::size_t>(b)]; }
  // The last bucket whose start is <= g. A floating-point guess, then exact table steps (the
  // guess is off by at most one below 2^52; no 128-bit division per element).
  int owner(i64 g) const {
    int b = std::min(p_ - 1, static_cast<int>(static_cast<double>(g) * scale_));
    while (b + 1 < p_ && lo(b + 1) <= g) ++b;
    while (b > 0 && lo(b) > g) --b;
    return b;
  }

 private:
  int p_;
  std::vector<i64> lo_;
  double scale_;
};

// Cuts each run of `d` at bucket boundaries: visit(bucket, gstart, count, stride, local offset).
template <class Visit>
void cut_at_buckets(const Decomp& d, const Buckets& bk, Visit&& visit) {
  d.for_each_run([&](i64 local, i64 g, i64 count, i64 stride) {
    while (count > 0) {
      const int b = bk.owner(g);
      i64 take = count;  // one element, or one index repeated
      if (count > 1 && stride != 0) {
        if (stride > 0) take = (bk.lo(b + 1) - g + stride - 1) / stride;
        else take = (g - bk.lo(b)) / (-stride) + 1;
        take = std::min(take, count);
      }
      visit(b, g, take, stride, local);
      g += take * stride;
      local += take;
      count -= take;
    }
  });
}

// Words per piece or element of each wire form.
enum Form : i64 { kRuns = 0, kElements = 1 };
constexpr i64 kSrcRunWords = 4;   // start, count, stride, offset
constexpr i64 kSrcElemWords = 2;  // index, offset
constexpr i64 kDstRunWords = 3;   // start, count, stride (the offset stays home)
constexpr i64 kHeader = 3;        // source words, source form, destination form
constexpr i64 kNoSource = -1;     // an answer for an index no source holds

// One side's pieces and elements per bucket, and the form it travels in.
struct Side {
  std::vector<i64> pieces, elements;
  Form form = kRuns;
  i64 words(int b, bool src) const {
    const std::size_t i = static_cast<std::size_t>(b);
    if (form == kElements) return elements[i] * (src ? kSrcElemWords : 1);
    return pieces[i] * (src ? kSrcRunWords : kDstRunWords);
  }
};

Side count_side(const Decomp& d, const Buckets& bk, bool src) {
  Side s;
  s.pieces.assign(static_cast<std::size_t>(bk.size()), 0);
  s.elements.assign(static_cast<std::size_t>(bk.size()), 0);
  i64 pieces = 0;
  cut_at_buckets(d, bk, [&](int b, i64, i64 n, i64, i64) {
    ++s.pieces[static_cast<std::size_t>(b)];
    s.elements[static_cast<std::size_t>(b)] += n;
    ++pieces;
  });
  // Elements are 2 words (source) or 1 word plus a 1-word answer (destination); runs are 4, or
  // 3 plus an answer run of 4: the smaller wins.
  const i64 elements = d.size();
  s.form = (src ? elements * kSrcElemWords < pieces * kSrcRunWords : elements * 2 < pieces * 7)
               ? kElements : kRuns;
  return s;
}

// A matched run of one (source, destination) pair, as it grows.
struct PairRun {
  i64 src_off = 0, src_stride = 1, dst_off = 0, dst_stride = 1, count = 0;
};

// Forms the runs of one destination rank from the directory's answers, source by source, and
// hands each finished run to `emit(source, run)` (source == p: no source, to fill).
class RunBuilder {
 public:
  explicit RunBuilder(int p) : open_(static_cast<std::size_t>(p) + 1) {}
  // Element (source s, source offset so) lands at destination offset dof.
  template <class Emit>
  void add(int s, i64 so, i64 dof, Emit& emit) {
    PairRun& r = open_[static_cast<std::size_t>(s)];
    if (r.count >= 2) {
      if (so == r.src_off + r.count * r.src_stride && dof == r.dst_off + r.count * r.dst_stride) {
        ++r.count;
        return;
      }
    } else if (r.count == 1 && dof != r.dst_off) {  // any second element sets the strides
      r.src_stride = so - r.src_off;
      r.dst_stride = dof - r.dst_off;
      r.count = 2;
      return;
    }
    if (r.count > 0) emit(s, r);
    r = {so, 1, dof, 1, 1};
  }
  // `n` elements: source offsets so, so + ss, ..., destination offsets dof, dof + 1, ...; the
  // same runs as adding them one by one, in O(1) once the open run follows them.
  template <class Emit>
  void add_run(int s, i64 so, i64 ss, i64 dof, i64 n, Emit& emit) {
    while (n > 0) {
      const PairRun& r = open_[static_cast<std::size_t>(s)];
      if (r.count >= 2 && r.src_stride == ss && r.dst_stride == 1 &&
          so == r.src_off + r.count * ss && dof == r.dst_off + r.count) {
        open_[static_cast<std::size_t>(s)].count += n;
        return;
      }
      add(s, so, dof, emit);
      so += ss;
      ++dof;
      --n;
    }
  }
  // Ends every open run: runs never continue from one bucket's answers into the next.
  template <class Emit>
  void close(Emit& emit) {
    for (std::size_t s = 0; s < open_.size(); ++s)
      if (open_[s].count > 0) {
        emit(static_cast<int>(s), open_[s]);
        open_[s].count = 0;
      }
  }

 private:
  std::vector<PairRun> open_;
};

std::string index_list(const std::vector<i64>& v, i64 total) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (total > static_cast<i64>(v.size()))
    s += " and " + std::to_string(total - static_cast<i64>(v.size())) + " more";
  return s;
}

// Where each rank's part starts in a buffer laid out rank after rank, and the total last.
std::vector<i64> exclusive_sum(const std::vector<i64>& v) {
  std::vector<i64> at(v.size() + 1, 0);
  for (std::size_t i = 0; i < v.size(); ++i) at[i + 1] = at[i] + v[i];
  return at;
}

// The source side of every run to its source rank: to_src[s] goes to rank s, and what rank d
// sends here becomes the list for peer d. Point to point, straight from and into the segment
// vectors: these are the largest set-up buffers of a scattered plan, so no flat copies.
constexpr int kSegmentTag = 7001;  // below detail::kFirstObjectTag: completes in this call
std::vector<PeerSegments> swap_segments(MPI_Comm comm, const std::vector<std::vector<Segment>>& to_src) {
  static_assert(sizeof(Segment) == 3 * sizeof(i64), "a Segment travels as three int64");
  const int p = static_cast<int>(to_src.size());
  std::vector<i64> out(to_src.size()), in(to_src.size());
  for (std::size_t s = 0; s < to_src.size(); ++s) out[s] = static_cast<i64>(to_src[s].size());
  check_mpi(MPI_Alltoall(out.data(), 1, MPI_INT64_T, in.data(), 1, MPI_INT64_T, comm), "MPI_Alltoall");
  detail::agree(comm, [&] {
    for (int r = 0; r < p; ++r)
      if (std::max(out[static_cast<std::size_t>(r)], in[static_cast<std::size_t>(r)]) > INT_MAX)
        throw Error("more than " + std::to_string(INT_MAX) + " runs between this rank and rank " +
                        std::to_string(r) + " exceed MPI's int count",
                    detail::world_rank_label(), "use fewer, longer runs");
  });
  MPI_Datatype seg;
  check_mpi(MPI_Type_contiguous(3, MPI_INT64_T, &seg), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&seg), "MPI_Type_commit");
  std::vector<PeerSegments> got;
  std::vector<MPI_Request> reqs;
  got.reserve(to_src.size());
  reqs.reserve(2 * to_src.size());
  for (int d = 0; d < p; ++d) {
    const i64 n = in[static_cast<std::size_t>(d)];
    if (n == 0) continue;
    got.push_back({d, std::vector<Segment>(static_cast<std::size_t>(n))});
    reqs.emplace_back();
    check_mpi(MPI_Irecv(got.back().segments.data(), static_cast<int>(n), seg, d, kSegmentTag, comm, &reqs.back()),
              "MPI_Irecv");
  }
  for (int s = 0; s < p; ++s) {
    const std::vector<Segment>& v = to_src[static_cast<std::size_t>(s)];
    if (v.empty()) continue;
    reqs.emplace_back();
    check_mpi(MPI_Isend(v.data(), static_cast<int>(v.size()), seg, s, kSegmentTag, comm, &reqs.back()), "MPI_Isend");
  }
  check_mpi(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  MPI_Type_free(&seg);
  return got;
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
  const std::size_t P = static_cast<std::size_t>(p);

  // The policies decide whether a rank throws or fills: ranks given different ones would part.
  {
    char opts[96];
    std::snprintf(opts, sizeof opts, "missing=%s fill_value=%.17g duplicate=%s",
                  options.missing == MissingPolicy::error ? "error" : "fill", options.fill_value,
                  options.duplicate == DuplicatePolicy::error ? "error" : "lowest_rank");
    detail::agree_same(comm_, "PlanOptions", opts);
  }
  // All ranks must agree on the global size before anything else. The largest source size
  // bounds the offsets packed into the directory's answers.
  // One reduction gives maxima and minima (the minimum as the maximum of the negation).
  const i64 sizes[5] = {src.global_size(), dst.global_size(), src.size(), -src.global_size(),
                        -dst.global_size()};
  i64 red[5];
  check_mpi(MPI_Allreduce(sizes, red, 5, MPI_INT64_T, MPI_MAX, comm_), "MPI_Allreduce");
  const i64 mx[3] = {red[0], red[1], red[2]}, mn[2] = {-red[3], -red[4]};
  // An answer is (source offset << shift) | source rank in one word.
  const int shift = std::bit_width(static_cast<unsigned>(p));
  const i64 rank_mask = (i64{1} << shift) - 1;
  detail::agree(comm_, [&] {
    if (mx[0] != mn[0] || mx[1] != mn[1] || mx[0] != mx[1])
      throw Error("source and destination decompositions disagree on the global size (source " +
                      std::to_string(src.global_size()) + ", destination " +
                      std::to_string(dst.global_size()) + " here; over all ranks from " +
                      std::to_string(std::min(mn[0], mn[1])) + " to " +
                      std::to_string(std::max(mx[0], mx[1])) + ")",
                  "rank " + std::to_string(rank_), "every rank must use the same global size");
    if (mx[2] > (INT64_MAX >> shift))
      throw Error("a source rank holds " + std::to_string(mx[2]) + " elements, more than the " +
                      "plan's directory can address with " + std::to_string(p) + " ranks",
                  "rank " + std::to_string(rank_), "spread the source over more ranks");
  });
  global_size_ = mx[0];
  const Buckets bk(global_size_, p);

  // 1. Cut both sides, choose their forms, and lay out one message per bucket: a header, the
  // source part, the destination part. The destination offsets stay here, in `dst_home`, in
  // the order of the requests (per element, or offset and count per piece).
  double t = MPI_Wtime();
  const Side ss = count_side(src, bk, true);
  const Side ds = count_side(dst, bk, false);
  std::vector<i64> req_counts(P), home_at(P + 1, 0);
  for (int b = 0; b < p; ++b) {
    req_counts[static_cast<std::size_t>(b)] = kHeader + ss.words(b, true) + ds.words(b, false);
    home_at[static_cast<std::size_t>(b) + 1] =
        home_at[static_cast<std::size_t>(b)] +
        (ds.form == kElements ? ds.elements[static_cast<std::size_t>(b)] : 2 * ds.pieces[static_cast<std::size_t>(b)]);
  }
  const std::vector<i64> req_at = exclusive_sum(req_counts);
  std::vector<i64> req(static_cast<std::size_t>(req_at[P]));
  std::vector<i64> dst_home(static_cast<std::size_t>(home_at[P]));
  {
    std::vector<i64> s_at(P), d_at(P), h_at(home_at.begin(), home_at.end() - 1);
    for (std::size_t b = 0; b < P; ++b) {
      i64* h = req.data() + req_at[b];
      h[0] = ss.words(static_cast<int>(b), true);
      h[1] = ss.form;
      h[2] = ds.form;
      s_at[b] = req_at[b] + kHeader;
      d_at[b] = s_at[b] + h[0];
    }
    i64* const q = req.data();
    i64* const home = dst_home.data();
    if (ss.form == kElements)
      src.for_each_run([&](i64 local, i64 g, i64 n, i64 stride) {
        for (i64 k = 0; k < n; ++k, g += stride) {
          i64& at = s_at[static_cast<std::size_t>(bk.owner(g))];
          q[at] = g;
          q[at + 1] = local + k;
          at += kSrcElemWords;
        }
      });
    else
      cut_at_buckets(src, bk, [&](int b, i64 g, i64 n, i64 stride, i64 local) {
        i64* o = q + s_at[static_cast<std::size_t>(b)];
        o[0] = g; o[1] = n; o[2] = stride; o[3] = local;
        s_at[static_cast<std::size_t>(b)] += kSrcRunWords;
      });
    if (ds.form == kElements)
      dst.for_each_run([&](i64 local, i64 g, i64 n, i64 stride) {
        for (i64 k = 0; k < n; ++k, g += stride) {
          const std::size_t b = static_cast<std::size_t>(bk.owner(g));
          q[d_at[b]++] = g;
          home[h_at[b]++] = local + k;
        }
      });
    else
      cut_at_buckets(dst, bk, [&](int b, i64 g, i64 n, i64 stride, i64 local) {
        const std::size_t i = static_cast<std::size_t>(b);
        i64* o = q + d_at[i];
        o[0] = g; o[1] = n; o[2] = stride;
        d_at[i] += kDstRunWords;
        home[h_at[i]] = local;
        home[h_at[i] + 1] = n;
        h_at[i] += 2;
      });
  }
  timers_.cut_s = MPI_Wtime() - t;
  t = MPI_Wtime();
  std::vector<i64> in_counts;
  std::vector<i64> in = detail::alltoallv(comm_, req, req_counts, in_counts);
  std::vector<i64>().swap(req);
  timers_.to_dir_s = MPI_Wtime() - t;
  t = MPI_Wtime();

  // 2. The directory: owners of this rank's bucket, then the answers, destination rank by
  // destination rank (one flat buffer, already in all-to-all order).
  std::vector<i64> ans, ans_counts(P, 0);
  detail::agree(comm_, [&] {
    const std::vector<i64> in_at = exclusive_sum(in_counts);
    const i64 lo = bk.lo(rank_), hi = bk.lo(rank_ + 1);
    std::vector<i64> owner(static_cast<std::size_t>(hi - lo), kNoSource);  // packed answers
    for (int s = 0; s < p; ++s) {
      const i64* m = in.data() + in_at[static_cast<std::size_t>(s)];
      const i64* at = m + kHeader;
      const i64* const end = at + m[0];
      auto own = [&](i64 g, i64 off) {
        i64& o = owner[static_cast<std::size_t>(g - lo)];
        if (o != kNoSource) {
          if (options_.duplicate == DuplicatePolicy::lowest_rank) return;
          const int first = static_cast<int>(o & rank_mask);
          const std::string gs = std::to_string(g);
          throw Error(first == s
                          ? "source rank " + std::to_string(s) + " lists global index " + gs +
                                " twice"
                          : "global index " + gs + " is owned by two sources: rank " +
                                std::to_string(first) + " and rank " + std::to_string(s),
                      "source decomposition",
                      "give every index one source, or set DuplicatePolicy::lowest_rank");
        }
        o = (off << shift) | s;
      };
      if (m[1] == kElements)
        for (; at < end; at += kSrcElemWords) own(at[0], at[1]);
      else
        for (; at < end; at += kSrcRunWords)
          for (i64 k = 0; k < at[1]; ++k) own(at[0] + k * at[2], at[3] + k);
    }
    // Indices no source holds: under MissingPolicy::error, the first destination rank that
    // asks for one is reported with a sample of them.
    std::vector<i64> missing_sample;
    i64 missing_total = 0;
    int missing_rank = -1;
    auto no_source = [&](int d, i64 g) {
      if (options_.missing != MissingPolicy::error) return;
      if (missing_rank < 0) missing_rank = d;
      if (d != missing_rank) return;
      if (missing_sample.size() < 8) missing_sample.push_back(g);
      ++missing_total;
    };
    for (int d = 0; d < p; ++d) {
      const i64* m = in.data() + in_at[static_cast<std::size_t>(d)];
      const i64* at = m + kHeader + m[0];
      const i64* const end = in.data() + in_at[static_cast<std::size_t>(d) + 1];
      const std::size_t before = ans.size();
      if (m[2] == kElements) {
        ans.resize(before + static_cast<std::size_t>(end - at));
        i64* a = ans.data() + before;
        for (; at < end; ++at, ++a) {
          *a = owner[static_cast<std::size_t>(*at - lo)];
          if (*a == kNoSource) no_source(d, *at);
        }
      } else {
        // Answer runs (source, offset, stride, count) covering each piece in order.
        for (; at < end; at += kDstRunWords) {
          i64 run[4] = {0, 0, 0, 0};
          for (i64 k = 0; k < at[1]; ++k) {
            const i64 g = at[0] + k * at[2];
            const i64 o = owner[static_cast<std::size_t>(g - lo)];
            if (o == kNoSource) no_source(d, g);
            const i64 s = o == kNoSource ? kNoSource : o & rank_mask;
            const i64 so = o == kNoSource ? 0 : o >> shift;
            if (run[3] > 0 && s == run[0] && (run[3] == 1 || so == run[1] + run[3] * run[2])) {
              if (run[3] == 1) run[2] = so - run[1];
              ++run[3];
              continue;
            }
            if (run[3] > 0) ans.insert(ans.end(), run, run + 4);
            run[0] = s; run[1] = so; run[2] = 0; run[3] = 1;
          }
          if (run[3] > 0) ans.insert(ans.end(), run, run + 4);
        }
      }
      ans_counts[static_cast<std::size_t>(d)] = static_cast<i64>(ans.size() - before);
    }
    std::vector<i64>().swap(in);  // the requests are answered: free them before the replies
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

  // 3. The answers come home; this rank forms its runs per source, bucket by bucket, and sends
  // each source the source side of its runs.
  std::vector<i64> back_counts;
  const std::vector<i64> back = detail::alltoallv(comm_, ans, ans_counts, back_counts);
  std::vector<i64>().swap(ans);
  std::vector<std::vector<Segment>> recv(P), to_src(P);
  auto emit = [&](int s, const PairRun& r) {
    if (s == p) {
      missing_.push_back({r.dst_off, r.count, r.dst_stride});
      return;
    }
    recv[static_cast<std::size_t>(s)].push_back({r.dst_off, r.count, r.dst_stride});
    to_src[static_cast<std::size_t>(s)].push_back({r.src_off, r.count, r.src_stride});
  };
  {
    RunBuilder runs(p);
    const i64* a = back.data();
    for (std::size_t b = 0; b < P; ++b) {
      const i64* h = dst_home.data() + home_at[b];
      const i64* const hend = dst_home.data() + home_at[b + 1];
      if (ds.form == kElements) {
        for (; h < hend; ++h, ++a) {
          if (*a == kNoSource) runs.add(p, 0, *h, emit);
          else runs.add(static_cast<int>(*a & rank_mask), *a >> shift, *h, emit);
        }
      } else {
        for (; h < hend; h += 2)
          for (i64 dof = h[0], n = h[1]; n > 0; a += 4) {
            runs.add_run(a[0] == kNoSource ? p : static_cast<int>(a[0]), a[1], a[2], dof, a[3], emit);
            dof += a[3];
            n -= a[3];
          }
      }
      runs.close(emit);
    }
  }
  std::vector<i64>().swap(dst_home);
  for (std::size_t s = 0; s < P; ++s)
    if (!recv[s].empty()) recvs_.push_back({static_cast<int>(s), std::move(recv[s])});
  sends_ = swap_segments(comm_, to_src);
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
