// Bilinear weight generation against CDO's genbil:
//  - for every genbil case of the remap fixture (lon-lat, Gaussian and masked tripolar
//    sources), estuary's links equal CDO's: the same (src, dst) pairs, zero weights included,
//    weights within 1e-10;
//  - the links are bit-identical for any number of ranks and any source or destination
//    decomposition (empty ranks included), and to a serial run;
//  - each destination point's weights add up to 1 and no link starts on land;
//  - a source that is not two-dimensional is refused on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

#include "estuary/error.hpp"
#include "estuary/weightgen.hpp"
#include "link_test_util.hpp"
#include "remap_test_util.hpp"

using estuary::Links;
using ltest::gather_sorted;
using ltest::kinds;
using ltest::Link;
using ltest::same_links;
using ltest::sorted;
using rtest::i64;

namespace {

std::vector<rtest::Case> genbil_cases() { return ltest::cases_of("genbil"); }

}  // namespace

TEST(Bilinear, MatchesCdoGenbil) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData
                                   << ": run the fixture test_remap_data first (ctest -R remap)";
  const int p = etest::world_size(), r = etest::world_rank();
  const auto cs = genbil_cases();
  ASSERT_GE(cs.size(), 3u);
  for (std::size_t ci = 0; ci < cs.size(); ++ci) {
    const rtest::Case& c = cs[ci];
    const estuary::GridGen sg = rtest::grid(c.src), dg = rtest::grid(c.dst);
    for (const std::string& dk : kinds()) {
      const estuary::Grid dst = dg.make(rtest::decomp(dk, dg.size(), p, r));
      const std::vector<Link> got = gather_sorted(estuary::bilinear_weights(sg, dst, MPI_COMM_WORLD));
      const std::vector<Link> want = sorted(rtest::read_matrix(rtest::weight_file(rtest::kData, c)));
      ASSERT_FALSE(want.empty()) << c.name();
      std::ostringstream why;
      double md = 0;
      EXPECT_TRUE(same_links(got, want, 1e-10, why, &md)) << c.name() << " dst " << dk << ": " << why.str();
      if (dk == "block" && r == 0) std::printf("%s: %zu links, max |w - w_cdo| = %.3g\n", c.name().c_str(), got.size(), md);
    }
  }
}

TEST(Bilinear, SameOnAnyRanksAndDecompositions) {
  const int p = etest::world_size(), r = etest::world_rank();
  for (const rtest::Case& c : genbil_cases()) {
    const estuary::GridGen sg = rtest::grid(c.src), dg = rtest::grid(c.dst);
    const std::vector<Link> serial =
        gather_sorted(estuary::bilinear_weights(sg.make(), dg.make(), MPI_COMM_SELF), MPI_COMM_SELF);
    ASSERT_FALSE(serial.empty());
    for (const std::string sk : {"block", "cyclic", "halo", "rank0"})
      for (const std::string& dk : kinds()) {
        const estuary::Grid src = sg.make(rtest::decomp(sk, sg.size(), p, r));
        const estuary::Grid dst = dg.make(rtest::decomp(dk, dg.size(), p, r));
        const std::vector<Link> got = gather_sorted(estuary::bilinear_weights(src, dst, MPI_COMM_WORLD));
        std::ostringstream why;
        EXPECT_TRUE(same_links(got, serial, 0.0, why)) << c.name() << " src " << sk << " dst " << dk << ": " << why.str();
      }
  }
}

TEST(Bilinear, WeightsSumToOneAndSkipLand) {
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("tril"), dg = rtest::grid("ll");
  const estuary::Grid whole = sg.make();
  const std::vector<Link> got =
      gather_sorted(estuary::bilinear_weights(sg, dg.make(estuary::gen::cyclic(dg.size(), r, p)), MPI_COMM_WORLD));
  std::vector<int> per_dst(static_cast<std::size_t>(dg.size()), 0);
  std::vector<double> sum(per_dst.size(), 0.0);
  for (const Link& l : got) {
    ++per_dst[static_cast<std::size_t>(l.dst)];
    sum[static_cast<std::size_t>(l.dst)] += l.w;
    if (!whole.valid(l.src)) {
      EXPECT_EQ(l.w, 0.0) << "land point " << l.src << " weighted for dst " << l.dst;
    }
  }
  EXPECT_GT(std::count(per_dst.begin(), per_dst.end(), 0), 0);  // points surrounded by land
  for (std::size_t j = 0; j < sum.size(); ++j) {
    if (per_dst[j] == 0) continue;
    EXPECT_EQ(per_dst[j], 4) << "dst " << j;
    EXPECT_NEAR(sum[j], 1.0, 1e-13) << "dst " << j;
  }
}

TEST(Bilinear, RefusesUnstructuredSource) {
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("cs"), dg = rtest::grid("gg");
  const estuary::Grid dst = dg.make(estuary::gen::block(dg.size(), r, p));
  EXPECT_THROW(estuary::bilinear_weights(sg, dst, MPI_COMM_WORLD), estuary::Error);
  const estuary::GridGen rg = rtest::grid("rg");
  EXPECT_THROW(estuary::bilinear_weights(rg, dst, MPI_COMM_WORLD), estuary::Error);
}

TEST(Bilinear, WithoutExtrapolationPolarPointsGetNoLinks) {
  // ll's rows end at 85 degrees: tri's points beyond them lie in no quad and get CDO's
  // 4-nearest fallback by default, nothing without extrapolation; the others keep their links.
  const int p = etest::world_size(), r = etest::world_rank();
  const estuary::GridGen sg = rtest::grid("ll"), dg = rtest::grid("tri");
  const estuary::Grid dst = dg.make(estuary::gen::random(dg.size(), r, p, 5));
  estuary::BilinearWeightOptions opt;
  opt.extrapolate = false;
  const std::vector<Link> all = gather_sorted(estuary::bilinear_weights(sg, dst, MPI_COMM_WORLD));
  const std::vector<Link> some = gather_sorted(estuary::bilinear_weights(sg, dst, MPI_COMM_WORLD, opt));
  ASSERT_LT(some.size(), all.size());
  ASSERT_GT(some.size(), 0u);
  std::vector<char> kept(static_cast<std::size_t>(dg.size()), 0);
  for (const Link& l : some) kept[static_cast<std::size_t>(l.dst)] = 1;
  std::vector<Link> want;
  for (const Link& l : all)
    if (kept[static_cast<std::size_t>(l.dst)]) want.push_back(l);
  std::ostringstream why;
  EXPECT_TRUE(same_links(some, want, 0.0, why)) << why.str();
}
