// Butterfly routing (collective, once per plan) and butterfly schedules for any skip mask
// (local). See include/estuary/butterfly.hpp for the route a flow takes.
#include "estuary/butterfly.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "common/mpi_util.hpp"

namespace estuary {
namespace {

using detail::check_mpi;
using i64 = std::int64_t;

const PeerSegments* find_peer(const std::vector<PeerSegments>& list, int peer) {
  auto it = std::lower_bound(list.begin(), list.end(), peer,
                             [](const PeerSegments& ps, int p) { return ps.peer < p; });
  return it != list.end() && it->peer == peer ? &*it : nullptr;
}

std::vector<Block> blocks_of(Buffer b, const PeerSegments& ps) {
  std::vector<Block> out;
  for (const Segment& s : ps.segments) out.push_back({b, s.offset, s.count, s.stride});
  return out;
}

// Appends b, merged into the last block when it continues it: flows that arrive together sit
// side by side in tmp and usually leave together, so forwarded messages stay one block.
void append_block(std::vector<Block>& blocks, const Block& b) {
  if (b.count == 0) return;
  if (!blocks.empty()) {
    Block& last = blocks.back();
    const bool unit_last = last.stride == 1 || last.count == 1, unit_b = b.stride == 1 || b.count == 1;
    if (last.buffer == b.buffer && unit_last && unit_b && last.offset + last.count == b.offset) {
      last.count += b.count;
      last.stride = 1;
      return;
    }
  }
  blocks.push_back(b);
}

// Local copies of the elements of `from` into `to` (equal totals), cut where either side is.
void pair_blocks(const std::vector<Block>& from, const std::vector<Block>& to, std::vector<Copy>& out) {
  std::size_t i = 0, j = 0;
  i64 ui = 0, uj = 0;
  while (i < from.size() && j < to.size()) {
    const Block& a = from[i];
    const Block& b = to[j];
    const i64 n = std::min(a.count - ui, b.count - uj);
    out.push_back({{a.buffer, a.offset + ui * a.stride, n, a.stride},
                   {b.buffer, b.offset + uj * b.stride, n, b.stride}});
    ui += n;
    uj += n;
    if (ui == a.count) { ++i; ui = 0; }
    if (uj == b.count) { ++j; uj = 0; }
  }
}

}  // namespace

ButterflyRouting::ButterflyRouting(const Plan& plan) : plan_(&plan) {
  const MPI_Comm comm = plan.comm();
  const int p = plan.size(), me = plan.rank();
  // 1. Per-rank totals, without the part a rank keeps: that part is a local copy, never routed.
  i64 mine[2] = {0, 0};
  for (const PeerSegments& ps : plan.sends()) if (ps.peer != me) mine[0] += ps.count();
  for (const PeerSegments& ps : plan.recvs()) if (ps.peer != me) mine[1] += ps.count();
  std::vector<i64> totals(2 * static_cast<std::size_t>(p));
  check_mpi(MPI_Allgather(mine, 2, MPI_INT64_T, totals.data(), 2, MPI_INT64_T, comm), "MPI_Allgather");
  std::vector<i64> send_totals(static_cast<std::size_t>(p)), recv_totals(static_cast<std::size_t>(p));
  for (std::size_t r = 0; r < static_cast<std::size_t>(p); ++r) {
    send_totals[r] = totals[2 * r];
    recv_totals[r] = totals[2 * r + 1];
  }
  // 2. The mappings and hosts, identical on every rank (and in the simulator's all_messages).
  const butterfly::Router router(send_totals, recv_totals);
  kernel_ = router.kernel();
  stages_ = router.stages();
  if (stages_ == 0) return;  // the same on every rank: no kernel, P2P
  hosts_ = router.hosts();
  const int L = stages_;
  auto route = [&](int q, int r, i64 count) {
    Flow f{q, r, count, {}};
    router.route(q, r, f.at);
    return f;
  };

  // 3. Each sender tells the kernel hosts on its flows' paths (receivers know their flows from
  //    the plan); it also marks the hops that move something.
  std::vector<std::vector<i64>> out(static_cast<std::size_t>(p));
  for (const PeerSegments& ps : plan.sends()) {
    if (ps.peer == me || ps.count() == 0) continue;
    Flow f = route(me, ps.peer, ps.count());
    moving_hops_ |= butterfly::moving_hops(f.at);
    for (std::size_t h = 1; h <= static_cast<std::size_t>(L) + 1; ++h) {
      // A flow stays put at the stages whose bit it already has: tell each host once.
      const int x = f.at[h];
      if (x == me || x == ps.peer || x == f.at[h - 1]) continue;
      std::vector<i64>& to_x = out[static_cast<std::size_t>(x)];
      to_x.push_back(ps.peer);
      to_x.push_back(ps.count());
    }
    flows_.push_back(std::move(f));
  }
  std::vector<i64> counts;
  const std::vector<i64> in = detail::alltoallv(comm, out, counts);
  std::size_t at = 0;
  for (int q = 0; q < p; ++q)
    for (i64 k = 0; k < counts[static_cast<std::size_t>(q)]; k += 2, at += 2)
      flows_.push_back(route(q, static_cast<int>(in[at]), in[at + 1]));
  for (const PeerSegments& ps : plan.recvs())
    if (ps.peer != me && ps.count() > 0) flows_.push_back(route(ps.peer, me, ps.count()));
  std::sort(flows_.begin(), flows_.end(),
            [](const Flow& x, const Flow& y) { return std::tie(x.from, x.to) < std::tie(y.from, y.to); });
  std::uint64_t any = moving_hops_;
  check_mpi(MPI_Allreduce(&any, &moving_hops_, 1, MPI_UINT64_T, MPI_BOR, comm), "MPI_Allreduce");
}

std::vector<std::pair<int, int>> ButterflyRouting::stage_hops(std::uint64_t skip_mask) const {
  return butterfly::stage_hops(stages_, moving_hops_, skip_mask);
}

Schedule ButterflyRouting::schedule(std::uint64_t skip_mask) const {
  const Plan& plan = *plan_;
  const int L = stages_, me = plan.rank();
  const std::uint64_t all = L > 0 ? (~std::uint64_t{0} >> (64 - L)) : 0;
  if (L == 0 || (skip_mask & all) == all) {
    // No kernel stage left: the mapping hops would only feed an empty kernel.
    Schedule s = p2p_schedule(plan);
    s.algorithm = "butterfly";
    return s;
  }
  Schedule s;
  s.algorithm = "butterfly";
  s.src_size = plan.src_size();
  s.dst_size = plan.dst_size();
  s.fill_value = plan.options().fill_value;
  for (const Segment& seg : plan.missing()) s.fills.push_back({Buffer::dst, seg.offset, seg.count, seg.stride});

  const std::vector<std::pair<int, int>> groups = stage_hops(skip_mask);
  const std::size_t nf = flows_.size();
  std::vector<std::vector<Block>> where(nf);  // where the flow sits on this rank, if it does
  std::vector<int> last_move(nf, -1);
  for (std::size_t f = 0; f < nf; ++f) {
    const Flow& fl = flows_[f];
    if (fl.from == me) where[f] = blocks_of(Buffer::src, *find_peer(plan.sends(), fl.to));
    for (std::size_t g = 0; g < groups.size(); ++g)
      if (fl.at[static_cast<std::size_t>(groups[g].first)] != fl.at[static_cast<std::size_t>(groups[g].second) + 1])
        last_move[f] = static_cast<int>(g);
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    Stage stage;
    std::map<int, std::vector<std::size_t>> to_peer, from_peer;  // flows in (from, to) order
    for (std::size_t f = 0; f < nf; ++f) {
      const int a = flows_[f].at[static_cast<std::size_t>(groups[g].first)];
      const int b = flows_[f].at[static_cast<std::size_t>(groups[g].second) + 1];
      if (a == b) continue;
      if (a == me) to_peer[b].push_back(f);
      if (b == me) from_peer[a].push_back(f);
    }
    for (const auto& [peer, fs] : to_peer) {
      Message m{peer, {}};
      for (std::size_t f : fs) {
        for (const Block& b : where[f]) append_block(m.blocks, b);
        where[f].clear();
      }
      stage.sends.push_back(std::move(m));
    }
    for (const auto& [peer, fs] : from_peer) {
      Message m{peer, {}};
      for (std::size_t f : fs) {
        if (last_move[f] == static_cast<int>(g)) {
          // Its last hop ends at its receiver (this rank): straight into the destination.
          where[f] = blocks_of(Buffer::dst, *find_peer(plan.recvs(), flows_[f].from));
        } else {
          where[f] = {{Buffer::tmp, s.tmp_size, flows_[f].count, 1}};
          s.tmp_size += flows_[f].count;
        }
        for (const Block& b : where[f]) append_block(m.blocks, b);
      }
      stage.recvs.push_back(std::move(m));
    }
    s.stages.push_back(std::move(stage));
  }
  if (s.stages.empty()) s.stages.emplace_back();
  // The rank's own part moves while the first stage's messages fly, as in P2P.
  const PeerSegments* self_send = find_peer(plan.sends(), me);
  const PeerSegments* self_recv = find_peer(plan.recvs(), me);
  if (self_send && self_recv)
    pair_blocks(blocks_of(Buffer::src, *self_send), blocks_of(Buffer::dst, *self_recv), s.stages[0].copies);
  return s;
}

Schedule butterfly_schedule(const Plan& plan, std::uint64_t skip_mask) {
  return ButterflyRouting(plan).schedule(skip_mask);
}

}  // namespace estuary
