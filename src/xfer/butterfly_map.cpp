// The pure parts of the butterfly (paper 001, Sect. 3): kernel size, load-balancing pairing,
// process mappings and the choice of kernel hosts. No MPI: every rank computes the same result
// from the same per-rank totals.
#include <algorithm>
#include <map>
#include <tuple>

#include "estuary/butterfly.hpp"

namespace estuary::butterfly {
namespace {

using i64 = std::int64_t;

int next_power_of_two(int n) {
  int k = 1;
  while (k < n) k *= 2;
  return k;
}

}  // namespace

int kernel_size(int n) {
  int k = 1;
  while (2 * static_cast<i64>(k) <= n) k *= 2;
  return k;
}

int log2_exact(int power_of_two) {
  int l = 0;
  while ((1 << l) < power_of_two) ++l;
  return l;
}

int bit_reverse(int x, int bits) {
  int r = 0;
  for (int b = 0; b < bits; ++b) r |= ((x >> b) & 1) << (bits - 1 - b);
  return r;
}

std::vector<int> pairing_order(std::span<const i64> sizes) {
  struct Group {
    std::vector<int> members;
    i64 total = 0;
  };
  const int n = static_cast<int>(sizes.size());
  const int padded = next_power_of_two(std::max(n, 1));
  std::vector<Group> groups;
  for (int i = 0; i < padded; ++i) groups.push_back({{i < n ? i : -1}, i < n ? sizes[static_cast<std::size_t>(i)] : 0});
  while (groups.size() > 1) {
    // Stable: equal totals keep their previous order, so the result depends on sizes only.
    std::stable_sort(groups.begin(), groups.end(),
                     [](const Group& a, const Group& b) { return a.total > b.total; });
    std::vector<Group> next;
    const std::size_t g = groups.size();
    for (std::size_t k = 0; k < g / 2; ++k) {
      Group merged = std::move(groups[k]);  // the largest left ...
      const Group& small = groups[g - 1 - k];  // ... with the smallest left
      merged.members.insert(merged.members.end(), small.members.begin(), small.members.end());
      merged.total += small.total;
      next.push_back(std::move(merged));
    }
    groups = std::move(next);
  }
  return groups[0].members;
}

std::vector<int> SideMap::positions(int member) const {
  const int b = base[static_cast<std::size_t>(member)], f = free[static_cast<std::size_t>(member)];
  std::vector<int> out;
  // Every subset x of the free bits, in increasing order.
  for (int x = 0;; x = (x - f) & f) {
    out.push_back(b | x);
    if (x == f) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::vector<int>> SideMap::members_by_position() const {
  std::vector<std::vector<int>> by(static_cast<std::size_t>(kernel));
  for (int i = 0; i < static_cast<int>(base.size()); ++i)
    if (base[static_cast<std::size_t>(i)] >= 0)
      for (int j : positions(i)) by[static_cast<std::size_t>(j)].push_back(i);
  return by;
}

bool SideMap::many_to_many() const {
  for (const std::vector<int>& ms : members_by_position())
    if (ms.size() > 1)
      for (int i : ms)
        if (free[static_cast<std::size_t>(i)] != 0) return true;
  return false;
}

SideMap map_senders(std::span<const i64> sizes, int kernel) {
  SideMap m;
  m.kernel = kernel;
  m.order = pairing_order(sizes);
  const int padded = static_cast<int>(m.order.size());
  m.base.assign(sizes.size(), -1);
  m.free.assign(sizes.size(), 0);
  for (int t = 0; t < padded; ++t) {
    const int i = m.order[static_cast<std::size_t>(t)];
    if (i < 0) continue;
    if (padded >= kernel) {
      m.base[static_cast<std::size_t>(i)] = t / (padded / kernel);  // a level group per position
    } else {
      // Fewer senders than positions: slot t fixes the low bits, the stages those bits decide
      // come first and pair the balanced slots; the high bits are free.
      m.base[static_cast<std::size_t>(i)] = t;
      m.free[static_cast<std::size_t>(i)] = (kernel - 1) & ~(padded - 1);
    }
  }
  return m;
}

SideMap map_receivers(std::span<const i64> sizes, int kernel, std::span<const int> hosted) {
  SideMap m;
  m.kernel = kernel;
  m.order = pairing_order(sizes);
  const int padded = static_cast<int>(m.order.size());
  const int L = log2_exact(kernel), l = log2_exact(padded);
  // A unit is what one slot takes: a level group of receivers when there are at least K of
  // them (slots are positions), else one receiver (slots are the cosets of positions sharing
  // their high l bits).
  const bool grouped = padded >= kernel;
  const int units = grouped ? kernel : padded, per_unit = grouped ? padded / kernel : 1;
  const int slot_bits = grouped ? L : l;
  auto members_of = [&](int u) {
    std::vector<int> ms;
    for (int t = u * per_unit; t < (u + 1) * per_unit; ++t)
      if (m.order[static_cast<std::size_t>(t)] >= 0) ms.push_back(m.order[static_cast<std::size_t>(t)]);
    return ms;
  };
  std::vector<int> slot_of(static_cast<std::size_t>(units), -1), unit_in(static_cast<std::size_t>(units), -1);
  // 1. Receivers that host a position take it, heaviest first.
  std::vector<std::tuple<i64, int, int>> pins;  // (-weight, unit, slot): sorts heaviest first
  for (int u = 0; u < units; ++u)
    for (int i : members_of(u))
      if (static_cast<std::size_t>(i) < hosted.size() && hosted[static_cast<std::size_t>(i)] >= 0) {
        const int pos = hosted[static_cast<std::size_t>(i)];
        pins.emplace_back(-sizes[static_cast<std::size_t>(i)], u, grouped ? pos : pos >> (L - l));
      }
  std::sort(pins.begin(), pins.end());
  for (const auto& [w, u, s] : pins)
    if (slot_of[static_cast<std::size_t>(u)] < 0 && unit_in[static_cast<std::size_t>(s)] < 0) {
      slot_of[static_cast<std::size_t>(u)] = s;
      unit_in[static_cast<std::size_t>(s)] = u;
    }
  // 2. The rest in pairing order onto the free slots in bit-reversed order: with nothing
  //    pinned, unit u sits at bit_reverse(u), so level groups differ in the high bits.
  std::vector<int> open;
  for (int k = 0; k < units; ++k)
    if (unit_in[static_cast<std::size_t>(bit_reverse(k, slot_bits))] < 0) open.push_back(bit_reverse(k, slot_bits));
  std::size_t next = 0;
  for (int u = 0; u < units; ++u)
    if (slot_of[static_cast<std::size_t>(u)] < 0) slot_of[static_cast<std::size_t>(u)] = open[next++];

  m.base.assign(sizes.size(), -1);
  m.free.assign(sizes.size(), 0);
  for (int u = 0; u < units; ++u)
    for (int i : members_of(u)) {
      const int s = slot_of[static_cast<std::size_t>(u)];
      m.base[static_cast<std::size_t>(i)] = grouped ? s : s << (L - l);
      m.free[static_cast<std::size_t>(i)] = grouped ? 0 : (1 << (L - l)) - 1;
    }
  return m;
}

std::vector<int> choose_hosts(const SideMap& senders, std::span<const int> sender_ranks,
                              std::span<const i64> send_sizes, std::span<const int> receiver_ranks,
                              std::span<const i64> recv_sizes, int comm_size) {
  const int K = senders.kernel;
  std::vector<int> hosts(static_cast<std::size_t>(K), -1);
  std::vector<char> used(static_cast<std::size_t>(comm_size), 0);
  auto take = [&](int pos, int rank) {
    if (hosts[static_cast<std::size_t>(pos)] >= 0 || used[static_cast<std::size_t>(rank)]) return;
    hosts[static_cast<std::size_t>(pos)] = rank;
    used[static_cast<std::size_t>(rank)] = 1;
  };
  // 1. Senders host a position they feed, heaviest share first (data per position it uses).
  std::vector<std::tuple<i64, int, int>> cands;  // (-share, position, rank)
  for (std::size_t i = 0; i < sender_ranks.size(); ++i) {
    if (senders.base[i] < 0) continue;
    const std::vector<int> ps = senders.positions(static_cast<int>(i));
    for (int j : ps) cands.emplace_back(-(send_sizes[i] / static_cast<i64>(ps.size())), j, sender_ranks[i]);
  }
  std::sort(cands.begin(), cands.end());
  for (const auto& [w, j, r] : cands) take(j, r);
  // 2. Heaviest receivers next: map_receivers then places their data at the position they host.
  std::vector<std::pair<i64, int>> recv;
  for (std::size_t i = 0; i < receiver_ranks.size(); ++i) recv.emplace_back(-recv_sizes[i], receiver_ranks[i]);
  std::sort(recv.begin(), recv.end());
  std::size_t next = 0;
  for (int j = 0; j < K; ++j) {
    while (hosts[static_cast<std::size_t>(j)] < 0 && next < recv.size()) take(j, recv[next++].second);
  }
  // 3. Any other rank (K never exceeds the ranks with data, so this is rarely reached).
  int r = 0;
  for (int j = 0; j < K; ++j)
    while (hosts[static_cast<std::size_t>(j)] < 0 && r < comm_size) take(j, r++);
  return hosts;
}

Router::Router(std::span<const i64> send_totals, std::span<const i64> recv_totals) {
  const std::size_t np = send_totals.size();
  std::vector<int> sranks, rranks;  // members, and the member of a rank
  std::vector<i64> ssizes, rsizes;
  sidx_.assign(np, -1);
  ridx_.assign(np, -1);
  int with_data = 0;
  for (std::size_t r = 0; r < np; ++r) {
    const i64 s = send_totals[r], d = recv_totals[r];
    if (s > 0) {
      sidx_[r] = static_cast<int>(sranks.size());
      sranks.push_back(static_cast<int>(r));
      ssizes.push_back(s);
    }
    if (d > 0) {
      ridx_[r] = static_cast<int>(rranks.size());
      rranks.push_back(static_cast<int>(r));
      rsizes.push_back(d);
    }
    with_data += (s > 0 || d > 0);
  }
  kernel_ = kernel_size(with_data);
  stages_ = log2_exact(kernel_);
  if (stages_ == 0) return;  // no kernel: P2P
  smap_ = map_senders(ssizes, kernel_);
  hosts_ = choose_hosts(smap_, sranks, ssizes, rranks, rsizes, static_cast<int>(np));
  std::vector<int> hosted_by(np, -1), hosted(rranks.size(), -1);
  for (int j = 0; j < kernel_; ++j) hosted_by[static_cast<std::size_t>(hosts_[static_cast<std::size_t>(j)])] = j;
  for (std::size_t i = 0; i < rranks.size(); ++i) hosted[i] = hosted_by[static_cast<std::size_t>(rranks[i])];
  rmap_ = map_receivers(rsizes, kernel_, hosted);
}

void Router::route(int from, int to, std::vector<int>& at) const {
  const int L = stages_;
  const std::size_t iq = static_cast<std::size_t>(sidx_[static_cast<std::size_t>(from)]);
  const std::size_t ir = static_cast<std::size_t>(ridx_[static_cast<std::size_t>(to)]);
  const int a = smap_.base[iq] | (rmap_.base[ir] & smap_.free[iq]);
  const int d = rmap_.base[ir] | (a & rmap_.free[ir]);
  at.assign(static_cast<std::size_t>(L) + 3, 0);
  at[0] = from;
  int pos = a;
  at[1] = hosts_[static_cast<std::size_t>(pos)];
  for (int s = 0; s < L; ++s) {
    if (((pos ^ d) >> s) & 1) pos ^= 1 << s;
    at[static_cast<std::size_t>(s) + 2] = hosts_[static_cast<std::size_t>(pos)];
  }
  at[static_cast<std::size_t>(L) + 2] = to;
}

std::uint64_t moving_hops(std::span<const int> at) {
  std::uint64_t m = 0;
  for (std::size_t h = 0; h + 1 < at.size(); ++h)
    if (at[h] != at[h + 1]) m |= std::uint64_t{1} << h;
  return m;
}

std::vector<std::pair<int, int>> stage_hops(int L, std::uint64_t moving, std::uint64_t skip_mask) {
  const std::uint64_t all = L > 0 ? (~std::uint64_t{0} >> (64 - L)) : 0;
  if (L == 0) return {{0, 1}};
  std::vector<std::pair<int, int>> groups;
  if ((skip_mask & all) == all) {
    groups.push_back({0, L + 1});
  } else {
    std::pair<int, int> cur{0, 0};
    for (int st = 0; st < L; ++st) {
      if ((skip_mask >> st) & 1) { cur.second = st + 1; continue; }
      groups.push_back(cur);
      cur = {st + 1, st + 1};
    }
    groups.push_back(cur);
    groups.push_back({L + 1, L + 1});
  }
  std::vector<std::pair<int, int>> out;
  for (auto [first, last] : groups) {
    while (first <= last && !((moving >> first) & 1)) ++first;
    while (last >= first && !((moving >> last) & 1)) --last;
    if (first <= last) out.emplace_back(first, last);
  }
  return out;
}

std::uint64_t canonical_mask(int L, std::uint64_t moving, std::uint64_t skip_mask) {
  const std::uint64_t all = L > 0 ? (~std::uint64_t{0} >> (64 - L)) : 0;
  return stage_hops(L, moving, skip_mask) == stage_hops(L, moving, all) ? all : skip_mask;
}

namespace {

// Per-rank totals of the flows, for the Router.
Router router_of(int ranks, std::span<const Flow> flows) {
  std::vector<i64> sends(static_cast<std::size_t>(ranks), 0), recvs(static_cast<std::size_t>(ranks), 0);
  for (const Flow& f : flows) {
    sends[static_cast<std::size_t>(f.from)] += f.count;
    recvs[static_cast<std::size_t>(f.to)] += f.count;
  }
  return Router(sends, recvs);
}

}  // namespace

std::uint64_t all_moving_hops(int ranks, std::span<const Flow> flows) {
  const Router router = router_of(ranks, flows);
  if (router.stages() == 0) return 0;
  std::uint64_t moving = 0;
  std::vector<int> at;
  for (const Flow& f : flows) {
    router.route(f.from, f.to, at);
    moving |= moving_hops(at);
  }
  return moving;
}

std::vector<StageMessage> all_messages(int ranks, std::span<const Flow> flows, std::uint64_t skip_mask,
                                       int* stages_out) {
  const Router router = router_of(ranks, flows);
  const int L = router.stages();
  const std::uint64_t all = L > 0 ? (~std::uint64_t{0} >> (64 - L)) : 0;
  // (stage, from, to) -> elements: ButterflyRouting::schedule sends every flow that moves from a
  // to b in a stage in one message from a to b.
  std::map<std::tuple<int, int, int>, i64> moves;
  int stages = 1;
  if (L == 0 || (skip_mask & all) == all) {
    // As ButterflyRouting::schedule: the P2P schedule, one stage.
    for (const Flow& f : flows) moves[{0, f.from, f.to}] += f.count;
  } else {
    std::vector<std::vector<int>> paths(flows.size());
    std::uint64_t moving = 0;
    for (std::size_t i = 0; i < flows.size(); ++i) {
      router.route(flows[i].from, flows[i].to, paths[i]);
      moving |= moving_hops(paths[i]);
    }
    const std::vector<std::pair<int, int>> groups = stage_hops(L, moving, skip_mask);
    stages = std::max<int>(1, static_cast<int>(groups.size()));
    for (std::size_t i = 0; i < flows.size(); ++i)
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const int a = paths[i][static_cast<std::size_t>(groups[g].first)];
        const int b = paths[i][static_cast<std::size_t>(groups[g].second) + 1];
        if (a != b) moves[{static_cast<int>(g), a, b}] += flows[i].count;
      }
  }
  std::vector<StageMessage> out;
  out.reserve(moves.size());
  for (const auto& [key, n] : moves) out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
  if (stages_out) *stages_out = stages;
  return out;
}

}  // namespace estuary::butterfly
