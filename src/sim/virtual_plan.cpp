// Plans without the ranks: the flows of the Plan that P ranks would build, computed in one
// process from the ranks' decompositions, so a coupling's butterfly or P2P schedule at 10^4
// ranks can be replayed without running 10^4 MPI ranks. Memory: one owner (4 bytes) per global
// index and one counter per rank, plus the flows; each rank's decomposition is built, visited
// and dropped in turn.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "estuary/error.hpp"
#include "estuary/sim.hpp"

namespace estuary::sim {

std::vector<butterfly::Flow> plan_flows(int ranks, const std::function<Decomp(int)>& src,
                                        const std::function<Decomp(int)>& dst, const PlanOptions& options) {
  using i64 = std::int64_t;
  if (ranks < 1) throw Error("a plan of " + std::to_string(ranks) + " ranks", "sim::plan_flows", "need ranks >= 1");
  std::vector<std::int32_t> owner;
  i64 n = -1;
  auto check_size = [&](const Decomp& d, int r, const char* side) {
    if (n < 0) n = d.global_size();
    if (d.global_size() != n)
      throw Error(std::string(side) + " decomposition of rank " + std::to_string(r) + " has global size " +
                      std::to_string(d.global_size()) + ", rank 0's " + std::to_string(n),
                  "sim::plan_flows", "every rank's decompositions must describe one index space");
  };
  for (int r = 0; r < ranks; ++r) {
    const Decomp d = src(r);
    check_size(d, r, "source");
    if (owner.empty()) owner.assign(static_cast<std::size_t>(n), -1);
    d.for_each_run([&](i64, i64 start, i64 count, i64 stride) {
      for (i64 k = 0, g = start; k < count; ++k, g += stride) {
        std::int32_t& o = owner[static_cast<std::size_t>(g)];
        if (o >= 0 && o != r && options.duplicate == DuplicatePolicy::error)
          throw Error("global index " + std::to_string(g) + " is owned by source ranks " + std::to_string(o) +
                          " and " + std::to_string(r),
                      "sim::plan_flows", "give each index one source rank, or DuplicatePolicy::lowest_rank");
        if (o < 0) o = r;  // ranks in ascending order: the lowest keeps it
      }
    });
  }
  std::vector<butterfly::Flow> flows;
  std::vector<i64> count(static_cast<std::size_t>(ranks), 0);
  std::vector<int> touched;
  for (int r = 0; r < ranks; ++r) {
    const Decomp d = dst(r);
    check_size(d, r, "destination");
    d.for_each_run([&](i64, i64 start, i64 cnt, i64 stride) {
      for (i64 k = 0, g = start; k < cnt; ++k, g += stride) {
        const std::int32_t o = owner[static_cast<std::size_t>(g)];
        if (o < 0) {
          if (options.missing == MissingPolicy::error)
            throw Error("global index " + std::to_string(g) + " of destination rank " + std::to_string(r) +
                            " has no source",
                        "sim::plan_flows", "cover it in some source, or MissingPolicy::fill");
          continue;
        }
        if (count[static_cast<std::size_t>(o)]++ == 0) touched.push_back(o);
      }
    });
    std::sort(touched.begin(), touched.end());
    for (int q : touched) {
      if (q != r) flows.push_back({q, r, count[static_cast<std::size_t>(q)]});
      count[static_cast<std::size_t>(q)] = 0;
    }
    touched.clear();
  }
  std::sort(flows.begin(), flows.end(), [](const butterfly::Flow& a, const butterfly::Flow& b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  });
  return flows;
}

std::unique_ptr<Pattern> p2p_pattern(std::string name, int ranks, std::span<const butterfly::Flow> flows,
                                     std::int64_t bytes_per_element) {
  return butterfly_pattern(std::move(name), ranks, flows, ~std::uint64_t{0}, bytes_per_element);
}

}  // namespace estuary::sim
