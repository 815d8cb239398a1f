// The coupler's Remap without the ranks: the exchanges one run of a Remap makes on P ranks
// (who sends how many values to whom), computed in one process from the links and every rank's
// decompositions. The decisions (which ranks work, which rows or columns each takes, the Plan
// options of each exchange) are Remap's own (src/remap/remap_layout.hpp); the exchanges' flows
// are plan_flows of the decompositions those decisions give, except sum's partial sums, whose
// flows are counted directly (one value per partial row and wanting rank, as route_by_key
// delivers a key's items to every rank that wants the key).
//
// Memory: O(points + links + flows), never O(P^2): the links as a compressed row (or column)
// list, one owner per point, each rank's decompositions built, used and dropped in turn.
#include <algorithm>
#include <cstdint>
#include <numeric>

#include "estuary/error.hpp"
#include "estuary/sim.hpp"
#include "remap/remap_layout.hpp"

namespace estuary::sim {
namespace {

using i64 = std::int64_t;

std::vector<i64> sorted_unique(std::vector<i64> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// A compressed list: for each key in [0, n), the values of the pairs with that key.
struct Csr {
  std::vector<i64> ptr;
  std::vector<std::int32_t> val;
  template <class Key, class Val>
  Csr(i64 n, std::size_t m, Key key, Val value) : ptr(static_cast<std::size_t>(n) + 1, 0), val(m) {
    for (std::size_t k = 0; k < m; ++k) ++ptr[static_cast<std::size_t>(key(k)) + 1];
    std::partial_sum(ptr.begin(), ptr.end(), ptr.begin());
    std::vector<i64> at(ptr.begin(), ptr.end() - 1);
    for (std::size_t k = 0; k < m; ++k) val[static_cast<std::size_t>(at[static_cast<std::size_t>(key(k))]++)] = value(k);
  }
  template <class F>
  void each(i64 key, F&& f) const {
    for (i64 k = ptr[static_cast<std::size_t>(key)]; k < ptr[static_cast<std::size_t>(key) + 1]; ++k)
      f(val[static_cast<std::size_t>(k)]);
  }
};

// Every rank's WorkSide over the ranks with a nonzero flag.
std::vector<detail::WorkSide> sides_of(const std::vector<int>& flags) {
  std::vector<detail::WorkSide> s(flags.size());
  for (std::size_t r = 0; r < flags.size(); ++r) s[r] = detail::work_side_of(flags, static_cast<int>(r));
  return s;
}

}  // namespace

std::vector<RemapExchangeFlows> remap_flows(int ranks, const std::function<Decomp(int)>& src,
                                            const std::function<Decomp(int)>& dst, std::span<const std::int64_t> rows,
                                            std::span<const std::int64_t> cols, const RemapOptions& o) {
  const char* where = "sim::remap_flows";
  if (ranks < 1) throw Error("a remap on " + std::to_string(ranks) + " ranks", where, "need ranks >= 1");
  if (rows.size() != cols.size())
    throw Error(std::to_string(rows.size()) + " link rows but " + std::to_string(cols.size()) + " columns", where);
  const i64 na = src(0).global_size(), nb = dst(0).global_size();
  for (std::size_t k = 0; k < rows.size(); ++k)
    if (cols[k] < 0 || cols[k] >= na || rows[k] < 0 || rows[k] >= nb)
      throw Error("link " + std::to_string(k) + " maps source point " + std::to_string(cols[k]) +
                      " to destination point " + std::to_string(rows[k]) + ", outside the grids (" +
                      std::to_string(na) + " and " + std::to_string(nb) + " points)",
                  where, "give links of these two grids");
  const std::size_t P = static_cast<std::size_t>(ranks);
  std::vector<int> has_src(P), has_dst(P);
  for (int r = 0; r < ranks; ++r) {
    has_src[static_cast<std::size_t>(r)] = src(r).size() > 0 ? 1 : 0;
    has_dst[static_cast<std::size_t>(r)] = dst(r).size() > 0 ? 1 : 0;
  }
  auto udst_of = [&](int r) { return sorted_unique(dst(r).to_indices()); };
  std::vector<RemapExchangeFlows> out;

  if (o.order == RemapOrder::bfb) {
    // bfb: a link goes to every rank applying its row; the gather brings each such rank the
    // source values of its links' columns.
    const bool at_dst = detail::works_on_dst(o);
    const std::vector<detail::WorkSide> side = sides_of(at_dst ? has_dst : has_src);
    const Csr by_row(nb, rows.size(), [&](std::size_t k) { return rows[k]; },
                     [&](std::size_t k) { return static_cast<std::int32_t>(cols[k]); });
    std::vector<int> stamp(static_cast<std::size_t>(na), -1);
    auto gather_dst = [&](int r) {
      const std::vector<i64> want =
          detail::bfb_rows(o, at_dst ? udst_of(r) : std::vector<i64>{}, side[static_cast<std::size_t>(r)].block(nb));
      std::vector<i64> need;
      for (i64 b : want)
        by_row.each(b, [&](std::int32_t c) {
          if (stamp[static_cast<std::size_t>(c)] != r) stamp[static_cast<std::size_t>(c)] = r, need.push_back(c);
        });
      std::sort(need.begin(), need.end());
      return Decomp::indices(na, std::move(need));
    };
    out.push_back({"gather", plan_flows(ranks, src, gather_dst, detail::exchange_plan_options(true))});
    if (!at_dst) {
      auto blocks = [&](int r) {
        const auto [lo, hi] = side[static_cast<std::size_t>(r)].block(nb);
        return Decomp::stripes(nb, {{lo, hi - lo, 1}});
      };
      out.push_back({"after", plan_flows(ranks, blocks, dst, detail::exchange_plan_options(false))});
    }
    return out;
  }

  // sum: each link lives with one holder of its column and forms partial rows there; each
  // partial row (one value) goes to every rank holding its destination row.
  std::vector<std::int32_t> provider(static_cast<std::size_t>(na), -1);  // lowest source rank holding a point
  for (int r = 0; r < ranks; ++r)
    src(r).for_each_run([&](i64, i64 start, i64 count, i64 stride) {
      for (i64 k = 0, g = start; k < count; ++k, g += stride)
        if (provider[static_cast<std::size_t>(g)] < 0) provider[static_cast<std::size_t>(g)] = r;
    });
  std::vector<std::int32_t> holder;
  if (o.location == RemapLocation::src) {
    holder = std::move(provider);
  } else {
    // Column blocks over the destination ranks, each gathered from the sources (points no
    // source holds are filled, as long as no link uses them).
    const std::vector<detail::WorkSide> side = sides_of(has_dst);
    holder.assign(static_cast<std::size_t>(na), -1);
    for (int r = 0; r < ranks; ++r) {
      const auto [lo, hi] = side[static_cast<std::size_t>(r)].block(na);
      for (i64 c = lo; c < hi; ++c)
        holder[static_cast<std::size_t>(c)] = provider[static_cast<std::size_t>(c)] < 0 ? -2 : r;
    }
    provider.clear();
    provider.shrink_to_fit();
    auto blocks = [&](int r) {
      const auto [lo, hi] = side[static_cast<std::size_t>(r)].block(na);
      return Decomp::stripes(na, {{lo, hi - lo, 1}});
    };
    out.push_back({"gather", plan_flows(ranks, src, blocks, detail::exchange_plan_options(true, true))});
  }
  // The partial rows: (holder, row) pairs, each once.
  std::vector<std::uint64_t> partial(rows.size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::int32_t h = holder[static_cast<std::size_t>(cols[k])];
    if (h < 0)
      throw Error("the weights use source point " + std::to_string(cols[k]) + ", which no rank holds (link " +
                      std::to_string(k) + ")",
                  where, "the source decomposition must hold every source point the weights use");
    partial[k] = (static_cast<std::uint64_t>(h) << 32) | static_cast<std::uint64_t>(rows[k]);
  }
  holder = {};
  std::sort(partial.begin(), partial.end());
  partial.erase(std::unique(partial.begin(), partial.end()), partial.end());
  // The ranks holding each destination row (a rank once, however often its decomposition repeats it).
  std::vector<std::pair<std::int32_t, std::int32_t>> held;  // (row, rank)
  for (int r = 0; r < ranks; ++r)
    for (i64 b : udst_of(r)) held.emplace_back(static_cast<std::int32_t>(b), r);
  const Csr holders(nb, held.size(), [&](std::size_t k) { return held[k].first; },
                    [&](std::size_t k) { return held[k].second; });
  held = {};
  std::vector<butterfly::Flow> flows;
  std::vector<i64> count(P, 0);
  std::vector<int> touched;
  for (std::size_t k = 0; k < partial.size();) {
    const int from = static_cast<int>(partial[k] >> 32);
    for (; k < partial.size() && static_cast<int>(partial[k] >> 32) == from; ++k)
      holders.each(static_cast<i64>(partial[k] & 0xffffffffu), [&](std::int32_t d) {
        if (count[static_cast<std::size_t>(d)]++ == 0) touched.push_back(d);
      });
    std::sort(touched.begin(), touched.end());
    for (int d : touched) {
      if (d != from) flows.push_back({from, d, count[static_cast<std::size_t>(d)]});
      count[static_cast<std::size_t>(d)] = 0;
    }
    touched.clear();
  }
  out.push_back({"after", std::move(flows)});
  return out;
}

}  // namespace estuary::sim
