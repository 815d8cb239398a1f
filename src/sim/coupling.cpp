// Coupler exchanges between two components: the flows of a block -> block or block -> chunked
// distribution, as P2P, as a butterfly through a power-of-two kernel (paper 001) with any
// kernel stages skipped, and the adaptive choice made by replaying the candidates (profiling
// inside the simulation, as estuary's adaptive schedule profiles real transfers).
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "estuary/adaptive.hpp"
#include "estuary/butterfly.hpp"
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

namespace {

// The exchange's flows between ranks (source i is rank i, destination j rank A + j), in
// elements: the butterfly balances elements, as the engine's plan counts them.
std::vector<butterfly::Flow> flows_of(const CouplingSpec& spec) {
  const i64 eb = i64{spec.elem_bytes} * spec.fields;
  std::vector<butterfly::Flow> flows;
  coupling_flows(spec, [&](int i, int j, i64 bytes) { flows.push_back({i, spec.src_ranks + j, bytes / eb}); });
  return flows;
}

int ranks_of(const CouplingSpec& spec) { return spec.src_ranks + spec.dst_ranks; }

}  // namespace

namespace {

// A plan's flows with what naming and comparing its butterfly schedules needs: the kernel
// stages and the hops that move something (the engine's routing, computed once).
struct Routed {
  int ranks = 0;
  std::span<const butterfly::Flow> flows;
  int stages = 0;
  std::uint64_t moving = 0;
  Routed(int r, std::span<const butterfly::Flow> f) : ranks(r), flows(f) {
    std::vector<i64> sends(static_cast<std::size_t>(ranks), 0), recvs(sends.size(), 0);
    for (const butterfly::Flow& x : flows) {
      sends[static_cast<std::size_t>(x.from)] += x.count;
      recvs[static_cast<std::size_t>(x.to)] += x.count;
    }
    stages = butterfly::Router(sends, recvs).stages();
    moving = butterfly::all_moving_hops(ranks, flows);
  }
  // Named prefix + " " + the engine's name of the schedule ("p2p", "butterfly-skip-0,2", ...).
  std::unique_ptr<Pattern> pattern(const std::string& prefix, std::uint64_t mask, i64 bytes_per_element) const {
    AdaptiveChoice named;
    named.kernel_stages = stages;
    named.skip_mask = butterfly::canonical_mask(stages, moving, mask);
    return butterfly_pattern(prefix + " " + named.name(), ranks, flows, mask, bytes_per_element);
  }
};

}  // namespace

int coupling_kernel_stages(const CouplingSpec& spec) {
  check(spec, "sim::coupling_kernel_stages");
  const std::vector<butterfly::Flow> flows = flows_of(spec);
  return Routed(ranks_of(spec), flows).stages;
}

std::unique_ptr<Pattern> butterfly_pattern(std::string name, int ranks, std::span<const butterfly::Flow> flows,
                                           std::uint64_t skip_mask, std::int64_t bytes_per_element) {
  int stages = 1;
  const std::vector<butterfly::StageMessage> msgs = butterfly::all_messages(ranks, flows, skip_mask, &stages);
  std::vector<std::vector<RankStage>> table(static_cast<std::size_t>(ranks),
                                            std::vector<RankStage>(static_cast<std::size_t>(stages)));
  // all_messages is sorted by (stage, from, to): sends come out in peer order, as in a Schedule.
  for (const butterfly::StageMessage& m : msgs)
    table[static_cast<std::size_t>(m.from)][static_cast<std::size_t>(m.stage)].sends.push_back(
        {m.to, m.count * bytes_per_element});
  for (const butterfly::StageMessage& m : msgs) {
    auto& recvs = table[static_cast<std::size_t>(m.to)][static_cast<std::size_t>(m.stage)].recvs;
    recvs.push_back({m.from, m.count * bytes_per_element});
  }
  for (auto& rank : table)
    for (RankStage& st : rank)
      std::sort(st.recvs.begin(), st.recvs.end(), [](const Msg& x, const Msg& y) { return x.peer < y.peer; });
  return table_pattern(std::move(name), std::move(table));
}

std::unique_ptr<Pattern> coupling_butterfly(const CouplingSpec& spec, std::uint64_t skip_mask) {
  check(spec, "sim::coupling_butterfly");
  const std::vector<butterfly::Flow> flows = flows_of(spec);
  return Routed(ranks_of(spec), flows).pattern("coupling", skip_mask, i64{spec.elem_bytes} * spec.fields);
}

CouplingChoice butterfly_adaptive(const Platform& platform, const std::string& name, int ranks,
                                  std::span<const butterfly::Flow> flows, std::int64_t bytes_per_element,
                                  const SimOptions& options) {
  const Routed routed(ranks, flows);
  const int L = routed.stages;
  const std::uint64_t moving = routed.moving;
  // The engine's search (AdaptiveSearch, as AdaptiveRedist runs it) fed simulated times: a
  // simulation is deterministic, so one repetition; candidates with the stages of one already
  // replayed are passed over, as the engine passes them over.
  AdaptiveSearch search(L, 1, [&](std::uint64_t a, std::uint64_t b) {
    return butterfly::stage_hops(L, moving, a) == butterfly::stage_hops(L, moving, b);
  });
  CouplingChoice c;
  c.kernel_stages = L;
  std::map<std::uint64_t, SimResult> results;
  while (!search.done()) {
    const std::uint64_t mask = search.candidate();
    SimResult r = simulate(platform, *routed.pattern(name, mask, bytes_per_element), options);
    c.trials.push_back({mask, r.simulated_s});
    c.profiling_s += r.simulated_s;
    search.record(r.simulated_s);
    results[mask] = std::move(r);
  }
  // The search's choice is a mask it timed; its canonical form names it as the engine does.
  c.skip_mask = butterfly::canonical_mask(L, moving, search.best());
  c.result = results.at(search.best());
  c.name = c.result.pattern;
  return c;
}

CouplingChoice coupling_adaptive(const Platform& platform, const CouplingSpec& spec, const SimOptions& options) {
  check(spec, "sim::coupling_adaptive");
  return butterfly_adaptive(platform, "coupling", ranks_of(spec), flows_of(spec), i64{spec.elem_bytes} * spec.fields,
                            options);
}

}  // namespace estuary::sim
