// Where a Remap puts its work, as pure functions of what the ranks hold (no MPI): which ranks
// work, which rows or columns each of them takes, and the Plan options of each exchange.
// Remap's set-up (remap.cpp) calls these on every rank with the values its collectives gathered;
// the simulator (src/sim/virtual_remap.cpp) calls them for every virtual rank in one process, so
// the two route the same links and build the same exchanges.
#pragma once

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "estuary/plan.hpp"
#include "estuary/remap.hpp"

namespace estuary::detail {

// The ranks doing the work (those with points on one side) and one rank's place among them.
struct WorkSide {
  int count = 0, index = -1;
  // Part `index` of `count` blocks of [0, n); empty off the side.
  std::pair<std::int64_t, std::int64_t> block(std::int64_t n) const {
    if (index < 0) return {0, 0};
    return {static_cast<std::int64_t>(index) * n / count, static_cast<std::int64_t>(index + 1) * n / count};
  }
};

// Rank `rank`'s WorkSide from every rank's flag (has points on the working side). When no rank
// has points, every rank shares the (empty) work.
inline WorkSide work_side_of(const std::vector<int>& flags, int rank) {
  bool any = false;
  for (int f : flags) any = any || f != 0;
  WorkSide s;
  for (int r = 0; r < static_cast<int>(flags.size()); ++r)
    if (!any || flags[static_cast<std::size_t>(r)] != 0) {
      if (r == rank) s.index = s.count;
      ++s.count;
    }
  return s;
}

// The side whose ranks do the work: bfb works where the links are applied (the destination
// ranks at dst, the source ranks at src); sum at dst splits the source columns over the
// destination ranks (at src each source rank keeps its own columns and needs no side).
inline bool works_on_dst(const RemapOptions& o) { return o.location == RemapLocation::dst; }

// bfb: the destination rows whose links a rank applies. At dst: its own unique destination
// points (`udst`); at src: its block of all rows.
inline std::vector<std::int64_t> bfb_rows(const RemapOptions& o, const std::vector<std::int64_t>& udst,
                                          std::pair<std::int64_t, std::int64_t> block) {
  if (o.location == RemapLocation::dst) return udst;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(block.second - block.first));
  std::iota(rows.begin(), rows.end(), block.first);
  return rows;
}

// The Plan options of a Remap exchange. Out of the source decomposition (`from_src`): a source
// may hold halo copies, any copy is the value, the lowest rank's is taken; `fill_missing`: sum at
// dst gathers whole column blocks, whose points no rank holds (land a model leaves out) are
// allowed as long as no link uses them.
inline PlanOptions exchange_plan_options(bool from_src, bool fill_missing = false) {
  PlanOptions p;
  if (from_src) p.duplicate = DuplicatePolicy::lowest_rank;
  if (fill_missing) p.missing = MissingPolicy::fill;
  return p;
}

}  // namespace estuary::detail
