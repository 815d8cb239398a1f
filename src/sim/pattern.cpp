// Patterns: real schedules as a stored table, and paper 004's skeletons in closed form. Nothing
// here touches SimGrid or MPI, so the tests can compare these patterns with real schedules.
#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "estuary/allreduce.hpp"
#include "estuary/alltoall.hpp"
#include "estuary/error.hpp"
#include "estuary/sim.hpp"

namespace estuary::sim {
namespace {

using i64 = std::int64_t;

// gen::block's split: part i of n over p is [i*n/p, (i+1)*n/p).
i64 block_lo(i64 n, i64 i, i64 p) { return static_cast<i64>(static_cast<__int128>(n) * i / p); }
i64 block_len(i64 n, i64 i, i64 p) { return block_lo(n, i + 1, p) - block_lo(n, i, p); }
int mod(i64 a, i64 n) { return static_cast<int>(((a % n) + n) % n); }

class TablePattern : public Pattern {
 public:
  TablePattern(std::string name, std::vector<std::vector<RankStage>> t) : name_(std::move(name)), t_(std::move(t)) {
    for (const auto& r : t_) stages_ = std::max(stages_, static_cast<int>(r.size()));
  }
  std::string name() const override { return name_; }
  int ranks() const override { return static_cast<int>(t_.size()); }
  int stages() const override { return stages_; }
  void stage(int rank, int s, RankStage& out) const override {
    const auto& r = t_[static_cast<std::size_t>(rank)];
    if (s < static_cast<int>(r.size())) out = r[static_cast<std::size_t>(s)];
    else out.clear();
  }

 private:
  std::string name_;
  std::vector<std::vector<RankStage>> t_;
  int stages_ = 0;
};

// One all-to-all among the n members of a group, in the stage layout of estuary's schedules
// (src/xfer/alltoall.cpp). Member `me`; bytes(i, j) is what member i sends member j; to_rank
// maps members to ranks. Pairs with nothing to exchange send no message, as there.
int alltoall_stages(const AlltoallAlgo& a, int n) {
  if (a.kind == AlltoallAlgo::Kind::bruck) return alltoall::bruck_stages(n);
  return alltoall::ring_stages(n, a.kind == AlltoallAlgo::Kind::burst ? std::max(1, n - 1) : a.k);
}

template <class Bytes, class ToRank>
void alltoall_stage(const AlltoallAlgo& a, int n, int me, int s, Bytes bytes, ToRank to_rank, RankStage& out) {
  if (n <= 1) return;
  if (a.kind == AlltoallAlgo::Kind::bruck) {
    // Stage s: the chunks of the offsets d that move at s, to me + 2^s; each from its origin
    // (bruck_origin: what it has moved already) to origin + d.
    const int step = 1 << s;
    if (step >= n) return;
    i64 out_b = 0, in_b = 0;
    const int from = mod(me - step, n);
    for (int d = 1; d < n; ++d) {
      if (!alltoall::bruck_moves(d, s)) continue;
      const int o_out = alltoall::bruck_origin(me, d, s, n), o_in = alltoall::bruck_origin(from, d, s, n);
      out_b += bytes(o_out, mod(o_out + d, n));
      in_b += bytes(o_in, mod(o_in + d, n));
    }
    if (out_b > 0) out.sends.push_back({to_rank(mod(me + step, n)), out_b});
    if (in_b > 0) out.recvs.push_back({to_rank(from), in_b});
    return;
  }
  // Ring-k (burst: k = n - 1): the steps of stage s, to me + step and from me - step, in order.
  const auto [first, last] = alltoall::ring_steps(n, a.kind == AlltoallAlgo::Kind::burst ? n - 1 : a.k, s);
  for (int t = first; t <= last; ++t) {
    const int to = mod(me + t, n);
    if (const i64 b = bytes(me, to); b > 0) out.sends.push_back({to_rank(to), b});
  }
  for (int t = first; t <= last; ++t) {
    const int from = mod(me - t, n);
    if (const i64 b = bytes(from, me); b > 0) out.recvs.push_back({to_rank(from), b});
  }
}

class TranspositionPattern : public Pattern {
 public:
  explicit TranspositionPattern(const TranspositionSpec& s) : s_(s) {
    // Blocks may be empty (more ranks than points along a dimension): their pairs send no
    // message, as in estuary's schedules.
    if (s.cx < 1 || s.cy < 1 || s.nx < 1 || s.ny < 1 || s.nz < 1 || s.transpositions < 1 ||
        s.transpositions > 3 || s.elem_bytes < 1)
      throw Error("transposition of " + std::to_string(s.nx) + "x" + std::to_string(s.ny) + "x" +
                      std::to_string(s.nz) + " on " + std::to_string(s.cx) + "x" + std::to_string(s.cy) +
                      " ranks (" + std::to_string(s.transpositions) + " transpositions) is not possible",
                  "sim::transposition",
                  "need positive sizes and rank counts, and 1..3 transpositions");
    // Transpositions 0 and 2 are all-to-alls among cx ranks, transposition 1 among cy.
    for (int t = 0; t < s.transpositions; ++t) {
      first_.push_back(stages_);
      stages_ += alltoall_stages(s.algo, t == 1 ? s.cy : s.cx);
    }
  }
  std::string name() const override { return "transposition " + s_.algo.name(); }
  int ranks() const override { return s_.cx * s_.cy; }
  int stages() const override { return stages_; }
  void stage(int rank, int st, RankStage& out) const override {
    out.clear();
    int t = 0;
    while (t + 1 < static_cast<int>(first_.size()) && st >= first_[static_cast<std::size_t>(t) + 1]) ++t;
    const int local = st - first_[static_cast<std::size_t>(t)];
    const i64 nx = s_.nx, ny = s_.ny, nz = s_.nz, cx = s_.cx, cy = s_.cy, eb = s_.elem_bytes;
    const int a = rank % s_.cx, b = rank / s_.cx;
    if (t == 0) {
      // (a) x by cx, y by cy -> (b) y by cy, z by cx: the cx ranks of row b; member = a.
      const i64 yb = block_len(ny, b, cy);
      alltoall_stage(s_.algo, s_.cx, a, local,
                     [&](int i, int j) { return eb * block_len(nx, i, cx) * yb * block_len(nz, j, cx); },
                     [&](int m) { return m + s_.cx * b; }, out);
    } else if (t == 1) {
      // (b) -> (c) x by cy, z by cx: the cy ranks of column a; member = b.
      const i64 zb = block_len(nz, a, cx);
      alltoall_stage(s_.algo, s_.cy, b, local,
                     [&](int i, int j) { return eb * block_len(ny, i, cy) * block_len(nx, j, cy) * zb; },
                     [&](int m) { return a + s_.cx * m; }, out);
    } else {
      // (c) -> (d) x by cy, y by cx: the cx ranks of row b; member = a.
      const i64 xb = block_len(nx, b, cy);
      alltoall_stage(s_.algo, s_.cx, a, local,
                     [&](int i, int j) { return eb * xb * block_len(nz, i, cx) * block_len(ny, j, cx); },
                     [&](int m) { return m + s_.cx * b; }, out);
    }
  }

 private:
  TranspositionSpec s_;
  std::vector<int> first_;  // first stage of each transposition
  int stages_ = 0;
};

class HaloPattern : public Pattern {
 public:
  explicit HaloPattern(const HaloSpec& s) : s_(s) {
    if (s.px < 1 || s.py < 1 || s.nx < s.px || s.ny < s.py || s.width < 1 || s.width >= s.nx ||
        s.width >= s.ny || s.nz < 1 || s.elem_bytes < 1)
      throw Error("halo of width " + std::to_string(s.width) + " on " + std::to_string(s.nx) + "x" +
                      std::to_string(s.ny) + " over " + std::to_string(s.px) + "x" + std::to_string(s.py) +
                      " ranks is not possible",
                  "sim::halo", "need nx >= px, ny >= py and 1 <= width < min(nx, ny)");
  }
  std::string name() const override { return "halo " + std::to_string(s_.width); }
  int ranks() const override { return s_.px * s_.py; }
  int stages() const override { return 2; }
  void stage(int rank, int st, RankStage& out) const override {
    out.clear();
    const int i = rank % s_.px, j = rank / s_.px;
    const i64 eb = s_.elem_bytes * s_.nz;
    if (st == 0) {
      const i64 rows = block_len(s_.ny, j, s_.py);
      sweep(s_.nx, s_.px, i, [&](int q) { return q + s_.px * j; }, eb * rows, rank, out);
    } else {
      const i64 cols = block_len(s_.nx, i, s_.px) + 2 * s_.width;  // x halos included: corners
      sweep(s_.ny, s_.py, j, [&](int q) { return i + s_.px * q; }, eb * cols, rank, out);
    }
  }

 private:
  // Along one periodic dimension of n points over p ranks, rank `me` needs `width` points on
  // each side: from its neighbour, then its neighbour's neighbour while the halo is not full.
  // It sends each rank on either side the part of its own points that rank needs.
  template <class ToRank>
  void sweep(i64 n, int p, int me, ToRank to_rank, i64 line_bytes, int self, RankStage& out) const {
    const i64 w = s_.width, mine = block_len(n, me, p);
    for (int dir : {-1, +1}) {
      // Receives: walk away from me in direction dir.
      i64 need = w;
      for (int d = 1; need > 0; ++d) {
        const int q = mod(me + dir * d, p);
        const i64 take = std::min(need, block_len(n, q, p));
        if (to_rank(q) != self) out.recvs.push_back({to_rank(q), take * line_bytes});
        need -= take;
      }
      // Sends: the rank t at distance d on the other side (-dir) walks towards me through
      // the d-1 ranks in between; what it still needs when it reaches me, I send.
      i64 between = 0;
      for (int d = 1;; ++d) {
        const i64 still = w - between;
        if (still <= 0) break;
        const int t = mod(me - dir * d, p);
        if (to_rank(t) != self) out.sends.push_back({to_rank(t), std::min(still, mine) * line_bytes});
        between += block_len(n, mod(me - dir * d, p), p);
      }
    }
  }
  HaloSpec s_;
};

class AllreducePattern : public Pattern {
 public:
  explicit AllreducePattern(const AllreduceSpec& s) : s_(s) {
    if (s.ranks < 1 || s.k < 2 || s.doubles < 1 || s.repeat < 1)
      throw Error("allreduce of " + std::to_string(s.doubles) + " doubles on " + std::to_string(s.ranks) +
                      " ranks with radix " + std::to_string(s.k) + " repeated " + std::to_string(s.repeat) +
                      " times is not possible",
                  "sim::allreduce", "need ranks >= 1, k >= 2, doubles >= 1, repeat >= 1");
    per_ = recursive_k_shape(s.ranks, s.k).stages();
  }
  std::string name() const override { return "allreduce recursive-" + std::to_string(s_.k); }
  int ranks() const override { return s_.ranks; }
  int stages() const override { return per_ * s_.repeat; }
  // The executor's own stage (recursive_k_stage, O(k) per rank and stage): values are sent to
  // send_to and received from the others combined and from result_from.
  void stage(int rank, int st, RankStage& out) const override {
    out.clear();
    if (per_ == 0) return;
    const AllreduceStage a = recursive_k_stage(rank, s_.ranks, s_.k, st % per_);
    const i64 b = 8 * i64{s_.doubles};
    for (int q : a.send_to) out.sends.push_back({q, b});
    for (int q : a.combine)
      if (q != rank) out.recvs.push_back({q, b});
    if (a.result_from >= 0) out.recvs.push_back({a.result_from, b});
  }

 private:
  AllreduceSpec s_;
  int per_ = 0;
};

class CouplingPattern : public Pattern {
 public:
  explicit CouplingPattern(const CouplingSpec& s) : s_(s) {
    if (s.points < 1 || s.src_ranks < 1 || s.dst_ranks < 1 || s.elem_bytes < 1 || s.fields < 1)
      throw Error("coupling of " + std::to_string(s.points) + " points from " + std::to_string(s.src_ranks) +
                      " to " + std::to_string(s.dst_ranks) + " ranks is not possible",
                  "sim::coupling_p2p", "need points, ranks, elem_bytes and fields >= 1");
  }
  std::string name() const override { return "coupling p2p"; }
  int ranks() const override { return s_.src_ranks + s_.dst_ranks; }
  int stages() const override { return 1; }
  void stage(int rank, int, RankStage& out) const override {
    out.clear();
    const i64 n = s_.points, eb = i64{s_.elem_bytes} * s_.fields;
    // Overlaps of one block with the blocks of the other side: only the few blocks that meet
    // its range are visited (the first found by division), in ascending peer order.
    auto overlaps = [&](i64 lo, i64 hi, int p, int offset, std::vector<Msg>& into) {
      if (hi <= lo) return;
      i64 q = static_cast<i64>(static_cast<__int128>(lo) * p / n);
      while (q > 0 && block_lo(n, q, p) > lo) --q;
      for (; q < p && block_lo(n, q, p) < hi; ++q) {
        const i64 a = std::max(lo, block_lo(n, q, p)), b = std::min(hi, block_lo(n, q + 1, p));
        if (b > a) into.push_back({static_cast<int>(q) + offset, (b - a) * eb});
      }
    };
    if (rank < s_.src_ranks)
      overlaps(block_lo(n, rank, s_.src_ranks), block_lo(n, rank + 1, s_.src_ranks), s_.dst_ranks, s_.src_ranks,
               out.sends);
    else {
      const int d = rank - s_.src_ranks;
      overlaps(block_lo(n, d, s_.dst_ranks), block_lo(n, d + 1, s_.dst_ranks), s_.src_ranks, 0, out.recvs);
    }
  }

 private:
  CouplingSpec s_;
};

}  // namespace

std::vector<RankStage> rank_stages(const Schedule& schedule, std::int64_t bytes_per_element) {
  std::vector<RankStage> out(schedule.stages.size());
  for (std::size_t s = 0; s < schedule.stages.size(); ++s) {
    for (const Message& m : schedule.stages[s].sends) out[s].sends.push_back({m.peer, m.count() * bytes_per_element});
    for (const Message& m : schedule.stages[s].recvs) out[s].recvs.push_back({m.peer, m.count() * bytes_per_element});
  }
  return out;
}

// Flattened to numbers: [stages, (sends, (peer, bytes)*, recvs, ...)*] per rank.
std::vector<std::vector<RankStage>> gather_rank_stages(const std::vector<RankStage>& mine, MPI_Comm comm, int root) {
  std::vector<std::int64_t> flat{static_cast<std::int64_t>(mine.size())};
  for (const RankStage& s : mine)
    for (const auto* list : {&s.sends, &s.recvs}) {
      flat.push_back(static_cast<std::int64_t>(list->size()));
      for (const Msg& m : *list) flat.insert(flat.end(), {m.peer, m.bytes});
    }
  int rank = 0, p = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &p);
  int n = static_cast<int>(flat.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p));
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm);
  int total = 0;
  for (int i = 0; i < p; ++i) displs[static_cast<std::size_t>(i)] = total, total += counts[static_cast<std::size_t>(i)];
  std::vector<std::int64_t> all(static_cast<std::size_t>(std::max(total, 1)));
  MPI_Gatherv(flat.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, root, comm);
  std::vector<std::vector<RankStage>> out;
  if (rank != root) return out;
  std::size_t at = 0;
  for (int i = 0; i < p; ++i) {
    std::vector<RankStage> stages(static_cast<std::size_t>(all[at++]));
    for (RankStage& s : stages)
      for (auto* list : {&s.sends, &s.recvs}) {
        const std::int64_t m = all[at++];
        for (std::int64_t j = 0; j < m; ++j, at += 2) list->push_back({static_cast<int>(all[at]), all[at + 1]});
      }
    out.push_back(std::move(stages));
  }
  return out;
}

std::unique_ptr<Pattern> table_pattern(std::string name, std::vector<std::vector<RankStage>> per_rank) {
  return std::make_unique<TablePattern>(std::move(name), std::move(per_rank));
}

namespace {

// Sorted by peer, one message per peer (bytes summed).
void merge_by_peer(std::vector<Msg>& list) {
  std::sort(list.begin(), list.end(), [](const Msg& a, const Msg& b) { return a.peer < b.peer; });
  std::size_t out = 0;
  for (std::size_t i = 0; i < list.size(); ++i)
    if (out > 0 && list[out - 1].peer == list[i].peer) list[out - 1].bytes += list[i].bytes;
    else list[out++] = list[i];
  list.resize(out);
}

class PerHostPattern final : public Pattern {
 public:
  PerHostPattern(const Pattern& ranks, int k) : ranks_(ranks), k_(k) {}
  std::string name() const override {
    std::string s = ranks_.name();
    s.append(", ").append(std::to_string(k_)).append(" ranks a host");
    return s;
  }
  int ranks() const override { return (ranks_.ranks() + k_ - 1) / k_; }
  int stages() const override { return ranks_.stages(); }
  void stage(int host, int s, RankStage& out) const override {
    out.clear();
    RankStage st;  // per call: stage() is const and may be called from several places
    const int last = std::min(ranks_.ranks(), (host + 1) * k_);
    for (int r = host * k_; r < last; ++r) {
      ranks_.stage(r, s, st);
      out.compute_s = std::max(out.compute_s, st.compute_s);
      for (const Msg& m : st.sends)
        if (m.peer / k_ != host) out.sends.push_back({m.peer / k_, m.bytes});
      for (const Msg& m : st.recvs)
        if (m.peer / k_ != host) out.recvs.push_back({m.peer / k_, m.bytes});
    }
    merge_by_peer(out.sends);
    merge_by_peer(out.recvs);
  }

 private:
  const Pattern& ranks_;
  int k_;
};

}  // namespace

std::unique_ptr<Pattern> per_host(const Pattern& ranks, int ranks_per_host) {
  if (ranks_per_host < 1)
    throw Error("ranks_per_host " + std::to_string(ranks_per_host), "sim::per_host, pattern " + ranks.name(),
                "give 1 or more ranks a host");
  return std::make_unique<PerHostPattern>(ranks, ranks_per_host);
}

AlltoallAlgo AlltoallAlgo::parse(const std::string& name) {
  if (name == "burst") return {Kind::burst, 1};
  if (name == "bruck") return {Kind::bruck, 1};
  if (name.rfind("ring-", 0) == 0) {
    try {
      std::size_t used = 0;
      const int k = std::stoi(name.substr(5), &used);
      if (used == name.size() - 5 && k >= 1) return {Kind::ring, k};
    } catch (const std::exception&) {
    }
  }
  throw Error("unknown all-to-all algorithm '" + name + "'", "sim::AlltoallAlgo",
              "use burst, bruck or ring-<k> with k >= 1 (ring-1, ring-4, ...)");
}

std::string AlltoallAlgo::name() const {
  switch (kind) {
    case Kind::burst: return "burst";
    case Kind::bruck: return "bruck";
    case Kind::ring: break;
  }
  return "ring-" + std::to_string(k);
}

std::unique_ptr<Pattern> transposition(const TranspositionSpec& spec) {
  return std::make_unique<TranspositionPattern>(spec);
}
std::unique_ptr<Pattern> halo(const HaloSpec& spec) { return std::make_unique<HaloPattern>(spec); }
std::unique_ptr<Pattern> allreduce(const AllreduceSpec& spec) { return std::make_unique<AllreducePattern>(spec); }
std::unique_ptr<Pattern> coupling_p2p(const CouplingSpec& spec) {
  if (spec.dst_chunk > 0) return coupling_butterfly(spec, ~std::uint64_t{0});
  return std::make_unique<CouplingPattern>(spec);
}

double alpha_beta_s(const Pattern& pattern, double alpha_s, double bytes_per_s) {
  double total = 0;
  RankStage st;
  for (int s = 0; s < pattern.stages(); ++s) {
    double worst = 0;
    for (int r = 0; r < pattern.ranks(); ++r) {
      pattern.stage(r, s, st);
      i64 out = 0, in = 0;
      for (const Msg& m : st.sends) out += m.bytes;
      for (const Msg& m : st.recvs) in += m.bytes;
      if (st.sends.empty() && st.recvs.empty()) continue;
      worst = std::max(worst, st.compute_s + alpha_s + static_cast<double>(std::max(out, in)) / bytes_per_s);
    }
    total += worst;
  }
  return total;
}

void check_matching(const Pattern& pattern) {
  // (from, to, stage) -> (messages, bytes): +1 per send, -1 per receive.
  std::map<std::tuple<int, int, int>, std::pair<i64, i64>> balance;
  RankStage st;
  for (int r = 0; r < pattern.ranks(); ++r)
    for (int s = 0; s < pattern.stages(); ++s) {
      pattern.stage(r, s, st);
      for (const Msg& m : st.sends) {
        if (m.peer < 0 || m.peer >= pattern.ranks() || m.peer == r)
          throw Error("rank " + std::to_string(r) + " sends to rank " + std::to_string(m.peer) + " in stage " +
                          std::to_string(s),
                      "pattern " + pattern.name(), "peers must be other ranks of the pattern");
        auto& b = balance[{r, m.peer, s}];
        b.first += 1;
        b.second += m.bytes;
      }
      for (const Msg& m : st.recvs) {
        auto& b = balance[{m.peer, r, s}];
        b.first -= 1;
        b.second -= m.bytes;
      }
    }
  for (const auto& [key, b] : balance)
    if (b.first != 0 || b.second != 0) {
      const auto& [from, to, s] = key;
      throw Error("stage " + std::to_string(s) + ": rank " + std::to_string(from) + " -> rank " +
                      std::to_string(to) + " has " + std::to_string(b.first) + " unmatched message(s) and " +
                      std::to_string(b.second) + " unmatched bytes (positive: sent, not received)",
                  "pattern " + pattern.name(), "sends and receives of a stage must pair up");
    }
}

}  // namespace estuary::sim
