// The pure parts of the butterfly (paper 001, Sect. 3): kernel size, load-balancing pairing,
// process mappings and the choice of kernel hosts. No MPI: every rank computes the same result
// from the same per-rank totals.
#include <algorithm>
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

}  // namespace estuary::butterfly
