// Coupler exchanges between two components: the flows of a block -> block or block -> chunked
// distribution, as P2P, as a butterfly through a power-of-two kernel (paper 001) with any
// kernel stages skipped, and the adaptive choice made by replaying the candidates (profiling
// inside the simulation, as estuary's adaptive schedule profiles real transfers).
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "estuary/error.hpp"
#include "estuary/sim.hpp"

namespace estuary::sim {
namespace {

using i64 = std::int64_t;

i64 block_lo(i64 n, i64 i, i64 p) { return static_cast<i64>(static_cast<__int128>(n) * i / p); }

void check(const CouplingSpec& s, const char* where) {
  if (s.points < 1 || s.src_ranks < 1 || s.dst_ranks < 1 || s.elem_bytes < 1 || s.fields < 1 || s.dst_chunk < 0)
    throw Error("coupling of " + std::to_string(s.points) + " points from " + std::to_string(s.src_ranks) + " to " +
                    std::to_string(s.dst_ranks) + " ranks (chunk " + std::to_string(s.dst_chunk) + ") is not possible",
                where, "need points, ranks, elem_bytes and fields >= 1 and dst_chunk >= 0");
}

int kernel_bits(int n) {
  int l = 0;
  while ((2 << l) <= n) ++l;
  return l;
}

// Points of [0, x) that destination d owns when chunks of c points are dealt round-robin to D.
i64 owned_below(i64 x, i64 c, i64 D, i64 d) {
  const i64 cycle = c * D, full = x / cycle, rem = x % cycle;
  return full * c + std::clamp(rem - d * c, i64{0}, c);
}

}  // namespace

void coupling_flows(const CouplingSpec& s, const std::function<void(int, int, std::int64_t)>& f) {
  check(s, "sim::coupling_flows");
  const i64 n = s.points, eb = i64{s.elem_bytes} * s.fields, A = s.src_ranks, B = s.dst_ranks;
  for (i64 i = 0; i < A; ++i) {
    const i64 lo = block_lo(n, i, A), hi = block_lo(n, i + 1, A);
    if (hi <= lo) continue;
    if (s.dst_chunk == 0) {
      i64 q = static_cast<i64>(static_cast<__int128>(lo) * B / n);
      while (q > 0 && block_lo(n, q, B) > lo) --q;
      for (; q < B && block_lo(n, q, B) < hi; ++q) {
        const i64 a = std::max(lo, block_lo(n, q, B)), b = std::min(hi, block_lo(n, q + 1, B));
        if (b > a) f(static_cast<int>(i), static_cast<int>(q), (b - a) * eb);
      }
    } else {
      for (i64 d = 0; d < B; ++d) {
        const i64 k = owned_below(hi, s.dst_chunk, B, d) - owned_below(lo, s.dst_chunk, B, d);
        if (k > 0) f(static_cast<int>(i), static_cast<int>(d), k * eb);
      }
    }
  }
}

int coupling_kernel_stages(const CouplingSpec& spec) {
  check(spec, "sim::coupling_kernel_stages");
  return kernel_bits(spec.src_ranks);
}

std::unique_ptr<Pattern> coupling_butterfly(const CouplingSpec& spec, std::uint64_t skip_mask) {
  check(spec, "sim::coupling_butterfly");
  const int A = spec.src_ranks, P = spec.src_ranks + spec.dst_ranks;
  const int L = kernel_bits(A), K = 1 << L;
  const std::uint64_t all = (std::uint64_t{1} << L) - 1;
  skip_mask &= all;
  const bool p2p = skip_mask == all;  // no kernel left (also when K = 1)
  std::vector<int> kept;
  for (int s = 0; s < L; ++s)
    if (!(skip_mask >> s & 1)) kept.push_back(s);
  // The bit boundaries after each hop through the kernel: the mapping-in hop sets bits
  // [0, kept[0]) to the destination's, kept stage k sets [kept[k], kept[k+1]) (L for the last).
  std::vector<int> ends;
  if (!p2p) {
    ends.push_back(kept.front());
    for (std::size_t k = 0; k < kept.size(); ++k) ends.push_back(k + 1 < kept.size() ? kept[k + 1] : L);
  }
  const int hops = p2p ? 1 : static_cast<int>(ends.size()) + 1;
  // (stage, from, to) -> bytes; stages with nothing on any rank are dropped below.
  std::map<std::tuple<int, int, int>, i64> moves;
  std::vector<int> loc(static_cast<std::size_t>(hops) + 1);
  coupling_flows(spec, [&](int i, int j, i64 bytes) {
    const int u = i % K, v = j % K;
    loc[0] = i;
    if (!p2p)
      for (std::size_t h = 0; h < ends.size(); ++h) {
        const int m = (1 << ends[h]) - 1;
        loc[h + 1] = (v & m) | (u & ~m);  // kernel position x is hosted by source rank x
      }
    loc[static_cast<std::size_t>(hops)] = A + j;
    for (int h = 0; h < hops; ++h)
      if (loc[static_cast<std::size_t>(h)] != loc[static_cast<std::size_t>(h) + 1])
        moves[{h, loc[static_cast<std::size_t>(h)], loc[static_cast<std::size_t>(h) + 1]}] += bytes;
  });
  std::vector<int> stage_of(static_cast<std::size_t>(hops), -1);
  int stages = 0;
  for (const auto& [key, b] : moves) {
    const int h = std::get<0>(key);
    if (stage_of[static_cast<std::size_t>(h)] < 0) stage_of[static_cast<std::size_t>(h)] = 0;
  }
  for (int h = 0; h < hops; ++h)
    if (stage_of[static_cast<std::size_t>(h)] >= 0) stage_of[static_cast<std::size_t>(h)] = stages++;
  std::vector<std::vector<RankStage>> table(static_cast<std::size_t>(P),
                                            std::vector<RankStage>(static_cast<std::size_t>(stages)));
  for (const auto& [key, b] : moves) {
    const auto [h, from, to] = key;
    const auto s = static_cast<std::size_t>(stage_of[static_cast<std::size_t>(h)]);
    table[static_cast<std::size_t>(from)][s].sends.push_back({to, b});
    table[static_cast<std::size_t>(to)][s].recvs.push_back({from, b});
  }
  std::string name = "coupling ";
  if (p2p) name += "p2p";
  else if (skip_mask == 0) name += "butterfly";
  else {
    name += "butterfly-skip-";
    bool first = true;
    for (int s = 0; s < L; ++s)
      if (skip_mask >> s & 1) {
        if (!first) name += ',';
        name += std::to_string(s);
        first = false;
      }
  }
  return table_pattern(name, std::move(table));
}

CouplingChoice coupling_adaptive(const Platform& platform, const CouplingSpec& spec, const SimOptions& options) {
  const int L = coupling_kernel_stages(spec);
  const std::uint64_t all = (std::uint64_t{1} << L) - 1;
  CouplingChoice c;
  auto trial = [&](std::uint64_t mask) {
    const auto pattern = coupling_butterfly(spec, mask);
    SimResult r = simulate(platform, *pattern, options);
    c.trials.push_back({mask, r.simulated_s});
    c.profiling_s += r.simulated_s;
    if (c.trials.size() == 1 || r.simulated_s < c.result.simulated_s) {
      c.skip_mask = mask;
      c.result = std::move(r);
    }
  };
  // estuary's greedy search (adaptive.hpp): the full butterfly, then stage 0, 1, ... skipped in
  // turn on top of the best so far (a skip is kept when it is faster), then P2P if not reached.
  trial(0);
  for (int s = 0; s < L; ++s) {
    const std::uint64_t mask = c.skip_mask | (std::uint64_t{1} << s);
    if (mask == c.skip_mask) continue;
    trial(mask);
  }
  if (c.skip_mask != all && std::none_of(c.trials.begin(), c.trials.end(), [&](const auto& t) { return t.skip_mask == all; }))
    trial(all);
  c.kernel_stages = L;
  c.name = c.result.pattern;
  return c;
}

}  // namespace estuary::sim
