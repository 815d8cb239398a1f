// The coupler's Remap without the ranks: sim::remap_flows, computed in one process from the
// links and every rank's decompositions, equals the real Remap's exchanges on this MPI run
// message for message, byte for byte (every rank's P2P and butterfly schedules of every
// exchange), for mapping at src and at dst, bfb and sum, over several component splits and
// OASIS partition kinds (apple, box, orange, points; halos and repeated points).
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/oasis_partition.hpp"
#include "estuary/redist.hpp"
#include "estuary/remap.hpp"
#include "estuary/schedule.hpp"
#include "estuary/sim.hpp"

using namespace estuary;
using namespace estuary::sim;
using i64 = std::int64_t;

namespace {

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int size_of(MPI_Comm c) {
  int p = 0;
  MPI_Comm_size(c, &p);
  return p;
}

// Grids of nx x ny points (x fastest), as the coupler's components define them.
struct Shape {
  i64 nx, ny;
  i64 n() const { return nx * ny; }
};

// Part q of `parts` of a grid in the OASIS partition `kind` (through oasis_partition, as a
// model's ig_paral gives it), or a halo / repeated-point decomposition beyond OASIS's.
Decomp part(const std::string& kind, Shape g, int q, int parts) {
  const i64 n = g.n(), lo = n * q / parts, hi = n * (q + 1) / parts;
  if (kind == "apple") return oasis_partition(std::vector<i64>{1, lo, hi - lo}, n);
  if (kind == "box") {  // boxes of a px x py process grid
    int px = 1;
    while (px * px < parts) ++px;
    while (parts % px != 0) --px;
    const int py = parts / px, i = q % px, j = q / px;
    const i64 x0 = g.nx * i / px, x1 = g.nx * (i + 1) / px, y0 = g.ny * j / py, y1 = g.ny * (j + 1) / py;
    return oasis_partition(std::vector<i64>{2, y0 * g.nx + x0, x1 - x0, y1 - y0, g.nx}, n);
  }
  if (kind == "orange") {  // segments of 5 points dealt round-robin
    std::vector<i64> ig{3, 0};
    for (i64 s = q; s * 5 < n; s += parts) ig.insert(ig.end(), {s * 5, std::min<i64>(5, n - s * 5)}), ++ig[1];
    return oasis_partition(ig, n);
  }
  if (kind == "points") {
    std::vector<i64> ig{4, 0};
    for (i64 p = q; p < n; p += parts) ig.push_back(p), ++ig[1];
    return oasis_partition(ig, n);
  }
  // halo: a block with 3 points of its neighbours on each side; ghost: a block repeating its
  // first point at the end (a destination's ghost cell).
  std::vector<i64> idx;
  const i64 h = kind == "halo" ? 3 : 0;
  for (i64 p = std::max<i64>(0, lo - h); p < std::min(n, hi + h); ++p) idx.push_back(p);
  if (kind == "ghost" && !idx.empty()) idx.push_back(idx.front());
  return Decomp::indices(n, std::move(idx));
}

// A weight matrix with 0 to 3 links a destination point (some points unmapped), sources spread
// over the grid; link k is held by rank k % ranks (the Remap routes them from anywhere).
struct Matrix {
  std::vector<i64> row, col;
};
Matrix links_of(i64 na, i64 nb) {
  Matrix m;
  for (i64 b = 0; b < nb; ++b)
    for (i64 j = 0; j < (b % 11 == 5 ? 0 : 1 + b % 3); ++j) {
      m.row.push_back(b);
      m.col.push_back((b * 37 + j * 53 + 7) % na);
    }
  return m;
}

void expect_same(const std::vector<RankStage>& real, const Pattern& virt, int rank, const std::string& what) {
  ASSERT_EQ(static_cast<int>(real.size()), virt.stages()) << what << ": stage count, rank " << rank;
  RankStage st;
  for (int s = 0; s < virt.stages(); ++s) {
    virt.stage(rank, s, st);
    EXPECT_EQ(real[static_cast<std::size_t>(s)].sends, st.sends) << what << ": sends of stage " << s << ", rank " << rank;
    EXPECT_EQ(real[static_cast<std::size_t>(s)].recvs, st.recvs) << what << ": receives of stage " << s << ", rank " << rank;
  }
}

}  // namespace

TEST(SimRemap, VirtualRemapEqualsTheRealRemap) {
  const int r = rank_of(MPI_COMM_WORLD), p = size_of(MPI_COMM_WORLD);
  const Shape sg{12, 9}, dg{10, 7};
  const Matrix m = links_of(sg.n(), dg.n());
  Links mine;
  for (std::size_t k = static_cast<std::size_t>(r); k < m.row.size(); k += static_cast<std::size_t>(p))
    mine.add(m.row[k], m.col[k], 1.0 + static_cast<double>(k % 7));
  struct Split {
    int src_first, src_ranks, dst_first, dst_ranks;
  };
  // Sources then destinations (uneven when p is odd), one source rank, and both components on
  // every rank (a component coupled to itself).
  std::vector<Split> splits{{0, p, 0, p}};
  if (p > 1) splits.insert(splits.end(), {{0, p - p / 2, p - p / 2, p / 2}, {0, 1, 1, p - 1}});
  const std::vector<std::pair<std::string, std::string>> kinds{
      {"apple", "points"}, {"box", "orange"}, {"points", "box"}, {"halo", "apple"}, {"orange", "ghost"}};
  for (const Split& sp : splits)
    for (const auto& [sk, dk] : kinds) {
      auto src = [&](int q) {
        return q >= sp.src_first && q < sp.src_first + sp.src_ranks ? part(sk, sg, q - sp.src_first, sp.src_ranks)
                                                                     : Decomp::empty(sg.n());
      };
      auto dst = [&](int q) {
        return q >= sp.dst_first && q < sp.dst_first + sp.dst_ranks ? part(dk, dg, q - sp.dst_first, sp.dst_ranks)
                                                                     : Decomp::empty(dg.n());
      };
      for (RemapLocation loc : {RemapLocation::src, RemapLocation::dst})
        for (RemapOrder order : {RemapOrder::bfb, RemapOrder::sum}) {
          const std::string what = sk + " (" + std::to_string(sp.src_ranks) + " ranks) -> " + dk + " (" +
                                   std::to_string(sp.dst_ranks) + "), " + name_of(loc) + " " + name_of(order);
          RemapOptions ro;
          ro.location = loc;
          ro.order = order;
          ro.algorithm = "p2p";
          const std::vector<RemapExchangeFlows> virt = remap_flows(p, src, dst, m.row, m.col, ro);
          for (const char* algo : {"p2p", "butterfly"}) {
            ro.algorithm = algo;
            const Remap real(mine, src(r), dst(r), MPI_COMM_WORLD, ro);
            const std::vector<Remap::Exchange> ex = real.exchanges();
            ASSERT_EQ(ex.size(), virt.size()) << what;
            for (std::size_t e = 0; e < ex.size(); ++e) {
              const std::string w = what + ", " + ex[e].name + " " + algo;
              EXPECT_EQ(virt[e].name, ex[e].name) << w;
              const std::int64_t bytes = 8 * 3;  // three fields of doubles: bytes = elements x 24
              const auto v = std::string(algo) == "p2p" ? p2p_pattern(w, p, virt[e].flows, bytes)
                                                        : butterfly_pattern(w, p, virt[e].flows, 0, bytes);
              expect_same(rank_stages(ex[e].redist->schedule(), bytes), *v, r, w);
            }
          }
        }
    }
}

// The Remap's faults are remap_flows' faults: a link to a source point no rank holds.
TEST(SimRemap, UnheldSourcePointsAreRefused) {
  const i64 n = 20;
  auto src = [&](int q) { return q == 0 ? Decomp::stripes(n, {{0, 10, 1}}) : Decomp::empty(n); };
  auto dst = [&](int q) { return q == 1 ? gen::block(n, 0, 1) : Decomp::empty(n); };
  const std::vector<i64> rows{0, 1}, cols{3, 15};  // 15: no source rank holds it
  for (RemapLocation loc : {RemapLocation::src, RemapLocation::dst})
    for (RemapOrder order : {RemapOrder::bfb, RemapOrder::sum}) {
      RemapOptions ro;
      ro.location = loc;
      ro.order = order;
      EXPECT_THROW(remap_flows(2, src, dst, rows, cols, ro), Error) << name_of(loc) << " " << name_of(order);
    }
  const std::vector<i64> bad_rows{0, 25};
  EXPECT_THROW(remap_flows(2, src, dst, bad_rows, cols, RemapOptions{}), Error);
}
