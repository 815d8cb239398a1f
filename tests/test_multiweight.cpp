// Multi-weight SCRIP files against CDO: bicubic (cdo genbic, num_wgts 4) and second-order
// conservative (cdo gencon2, num_wgts 3) weights from lon-lat sources (one with a land mask) to
// a lon-lat grid of another resolution and a Gaussian grid, made by the fixture.
//  - estuary's Remap of the file, every location and order: within 1e-12 of the field's range
//    of `cdo remap` with the same file, unmapped points where CDO has its missing value;
//  - the folded matrix (read_weights) written back as one column and applied by CDO: within
//    1e-12 of the range of CDO's result with the original file;
//  - read_weights on p ranks gives the serial folded matrix, slice after slice, bit for bit
//    (so bfb results do not depend on the rank count);
//  - bicubic_weights generates cdo genbic's links and four weight columns (within 1e-10), the
//    same on any rank count, and its folded matrix remaps as `cdo remap` with CDO's file does.
#include <gtest/gtest.h>
#include <mpi.h>
#include <netcdf.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "estuary/decomp_gen.hpp"
#include "estuary/remap.hpp"
#include "estuary/weightgen.hpp"
#include "estuary/weights.hpp"
#include "remap_test_util.hpp"

using rtest::i64;

namespace {

struct Loaded {
  rtest::Case c;
  i64 na = 0, nb = 0;
  int num_wgts = 0;
  std::vector<double> x, cdo;  // source field (missing value on land), CDO's result
  double range = 0;            // max - min of the source field on valid points
};

Loaded load(const rtest::Case& c) {
  Loaded l;
  l.c = c;
  const std::string w = rtest::weight_file(rtest::kData, c);
  int nc = -1;
  if (nc_open(w.c_str(), NC_NOWRITE, &nc) == NC_NOERR) {
    l.na = static_cast<i64>(rtest::dim(nc, "src_grid_size"));
    l.nb = static_cast<i64>(rtest::dim(nc, "dst_grid_size"));
    l.num_wgts = static_cast<int>(rtest::dim(nc, "num_wgts"));
    nc_close(nc);
  }
  l.x = rtest::read_field(rtest::field_file(rtest::kData, c.src));
  l.cdo = rtest::read_field(rtest::cdo_out_file(rtest::kData, c));
  double lo = 1e300, hi = -1e300;
  for (double v : l.x)
    if (v != rtest::kMissing) lo = std::min(lo, v), hi = std::max(hi, v);
  l.range = hi - lo;
  return l;
}

// max |got - want| over the decomposition's points where CDO mapped something; a point CDO left
// missing must be unmapped in `got` too (and the other way round), else the result is +inf.
double max_diff(const std::vector<double>& got, const std::vector<double>& want, const estuary::Decomp& d,
                std::ostringstream& why) {
  const std::vector<i64> idx = d.to_indices();
  double worst = 0;
  for (std::size_t j = 0; j < idx.size(); ++j) {
    const double w = want[static_cast<std::size_t>(idx[j])];
    if ((w == rtest::kMissing) != (got[j] == rtest::kMissing)) {
      why << "point " << idx[j] << ": " << got[j] << ", CDO " << w << "\n";
      return HUGE_VAL;
    }
    if (w != rtest::kMissing) worst = std::max(worst, std::abs(got[j] - w));
  }
  return worst;
}

double world_max(double v) {
  double m = 0;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

}  // namespace

TEST(MultiWeight, CdoFilesHaveSeveralColumns) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  for (const rtest::Case& c : rtest::multi_cases()) {
    const Loaded l = load(c);
    EXPECT_EQ(l.num_wgts, c.method == "genbic" ? 4 : 3) << c.name();
    ASSERT_EQ(static_cast<i64>(l.x.size()), l.na) << c.name();
    ASSERT_EQ(static_cast<i64>(l.cdo.size()), l.nb) << c.name();
    EXPECT_GT(l.range, 1.0) << c.name();
    const estuary::WeightSlice s = estuary::read_weights(rtest::weight_file(rtest::kData, c), MPI_COMM_WORLD);
    EXPECT_EQ(s.info.num_wgts, l.num_wgts) << c.name();
    i64 m = s.links.size(), folded = 0;
    MPI_Allreduce(&m, &folded, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (etest::world_rank() == 0)
      std::printf("[ measured ] %s: %lld file links fold to %lld links\n", c.name().c_str(),
                  static_cast<long long>(s.info.links), static_cast<long long>(folded));
  }
}

TEST(MultiWeight, RemapMatchesCdoEveryMode) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const int p = etest::world_size(), r = etest::world_rank();
  const auto pairs = rtest::decomp_pairs();
  const auto cases = rtest::multi_cases();
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const Loaded l = load(cases[ci]);
    double worst = 0;
    for (std::size_t mi = 0; mi < rtest::modes().size(); ++mi) {
      const rtest::Mode mode = rtest::modes()[mi];
      const auto& [sk, dk] = pairs[(ci + mi) % pairs.size()];
      const estuary::Decomp src = rtest::decomp(sk, l.na, p, r), dst = rtest::decomp(dk, l.nb, p, r);
      estuary::RemapOptions opt;
      opt.location = mode.location;
      opt.order = mode.order;
      opt.unmapped_value = rtest::kMissing;
      estuary::Remap rm(rtest::weight_file(rtest::kData, l.c), src, dst, MPI_COMM_WORLD, opt);
      std::vector<double> y(static_cast<std::size_t>(dst.size()), -1.0);
      rm.run(rtest::pick(l.x, src), y);
      std::ostringstream why;
      const double d = world_max(max_diff(y, l.cdo, dst, why));
      EXPECT_LE(d, 1e-12 * l.range) << l.c.name() << " " << mode.name() << " " << sk << "->" << dk << " rank " << r
                                    << ": " << why.str();
      worst = std::max(worst, d);
    }
    if (r == 0)
      std::printf("[ measured ] %s on %d ranks: max |estuary - cdo remap| = %.3g = %.3g x field range\n",
                  l.c.name().c_str(), p, worst, worst / l.range);
  }
}

TEST(MultiWeight, CdoAppliesTheFoldedMatrix) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  // The fixture wrote read_weights' folded links as a one-column file and had CDO apply it: the
  // folding agrees with CDO's gradients without estuary's Remap in between.
  for (const rtest::Case& c : rtest::multi_cases()) {
    const Loaded l = load(c);
    const std::vector<double> b = rtest::read_field(rtest::cdo_rewritten_out(rtest::kData, c));
    ASSERT_EQ(b.size(), l.cdo.size()) << c.name();
    std::ostringstream why;
    const double d = max_diff(b, l.cdo, estuary::Decomp::stripes(l.nb, {{0, l.nb, 1}}), why);
    EXPECT_LE(d, 1e-12 * l.range) << c.name() << ": " << why.str();
    if (etest::world_rank() == 0 && etest::world_size() == 1)
      std::printf("[ measured ] %s: max |cdo remap (folded file) - cdo remap| = %.3g x field range\n",
                  c.name().c_str(), d / l.range);
  }
}

TEST(MultiWeight, SlicesFoldToTheSerialMatrix) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  for (const rtest::Case& c : rtest::multi_cases()) {
    const std::string path = rtest::weight_file(rtest::kData, c);
    const estuary::WeightSlice all = estuary::read_weights(path, MPI_COMM_SELF);
    const estuary::WeightSlice mine = estuary::read_weights(path, MPI_COMM_WORLD);
    // Each file link folds to more links, never fewer than one.
    EXPECT_GT(all.links.size(), all.info.links) << c.name();
    i64 m = mine.links.size(), first = 0;
    MPI_Exscan(&m, &first, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (etest::world_rank() == 0) first = 0;
    ASSERT_LE(first + m, all.links.size()) << c.name();
    bool same = true;
    for (i64 k = 0; k < m; ++k) {
      const std::size_t g = static_cast<std::size_t>(first + k), l = static_cast<std::size_t>(k);
      same = same && mine.links.row[l] == all.links.row[g] && mine.links.col[l] == all.links.col[g] &&
             etest::same_bits(mine.links.weight[l], all.links.weight[g]);
    }
    EXPECT_TRUE(etest::all_ok(same)) << c.name();
    i64 total = 0;
    MPI_Allreduce(&m, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(total, all.links.size()) << c.name();
  }
}

TEST(MultiWeight, GeneratedBicubicEqualsCdoGenbic) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const int p = etest::world_size(), r = etest::world_rank();
  for (const rtest::Case& c : rtest::multi_cases()) {
    if (c.method != "genbic") continue;
    const Loaded l = load(c);
    const estuary::GridGen sg = rtest::grid(c.src), dg = rtest::grid(c.dst);
    const estuary::Decomp dd = rtest::decomp("cyclic", l.nb, p, r);
    const estuary::Grid src = sg.make(estuary::gen::block(sg.size(), r, p)), dst = dg.make(dd);
    const estuary::BicubicWeights w = estuary::bicubic_weights(src, dst, MPI_COMM_WORLD);
    ASSERT_EQ(w.columns.size(), static_cast<std::size_t>(w.value.size()));
    // Every rank's links, with their 4 columns, in (dst, src) order, against CDO's file.
    struct L {
      i64 dst, src;
      double w[4];
    };
    std::vector<double> mine;
    for (i64 k = 0; k < w.value.size(); ++k) {
      const auto u = static_cast<std::size_t>(k);
      mine.insert(mine.end(), {static_cast<double>(w.value.row[u]), static_cast<double>(w.value.col[u]), w.columns[u][0],
                               w.columns[u][1], w.columns[u][2], w.columns[u][3]});
    }
    int n = static_cast<int>(mine.size());
    std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p), 0);
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int q = 1; q < p; ++q) displs[static_cast<std::size_t>(q)] = displs[static_cast<std::size_t>(q - 1)] + counts[static_cast<std::size_t>(q - 1)];
    std::vector<double> all(static_cast<std::size_t>(displs.back() + counts.back()));
    MPI_Allgatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, MPI_COMM_WORLD);
    std::vector<L> got;
    for (std::size_t k = 0; k + 5 < all.size(); k += 6)
      got.push_back({static_cast<i64>(all[k]), static_cast<i64>(all[k + 1]), {all[k + 2], all[k + 3], all[k + 4], all[k + 5]}});
    std::vector<L> want;
    {
      const std::string path = rtest::weight_file(rtest::kData, c);
      int nc = -1, v = -1;
      ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
      const std::size_t links = rtest::dim(nc, "num_links");
      ASSERT_EQ(rtest::dim(nc, "num_wgts"), 4u);
      std::vector<long long> a(links), b(links);
      std::vector<double> m(4 * links);
      nc_inq_varid(nc, "src_address", &v);
      nc_get_var_longlong(nc, v, a.data());
      nc_inq_varid(nc, "dst_address", &v);
      nc_get_var_longlong(nc, v, b.data());
      nc_inq_varid(nc, "remap_matrix", &v);
      nc_get_var_double(nc, v, m.data());
      nc_close(nc);
      for (std::size_t k = 0; k < links; ++k)
        want.push_back({b[k] - 1, a[k] - 1, {m[4 * k], m[4 * k + 1], m[4 * k + 2], m[4 * k + 3]}});
    }
    auto by_index = [](const L& x, const L& y) { return std::tie(x.dst, x.src) < std::tie(y.dst, y.src); };
    std::stable_sort(got.begin(), got.end(), by_index);
    std::stable_sort(want.begin(), want.end(), by_index);
    ASSERT_EQ(got.size(), want.size()) << c.name();
    double worst = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].dst, want[k].dst) << c.name() << " link " << k;
      ASSERT_EQ(got[k].src, want[k].src) << c.name() << " link " << k;
      for (int j = 0; j < 4; ++j) worst = std::max(worst, std::abs(got[k].w[j] - want[k].w[j]));
    }
    EXPECT_LE(worst, 1e-10) << c.name();
    // The folded matrix remaps as cdo remap does with CDO's file.
    const estuary::Decomp sd = rtest::decomp("block", l.na, p, r);
    estuary::RemapOptions opt;
    opt.unmapped_value = rtest::kMissing;
    estuary::Remap rm(w.links, sd, dd, MPI_COMM_WORLD, opt);
    std::vector<double> y(static_cast<std::size_t>(dd.size()), -1.0);
    rm.run(rtest::pick(l.x, sd), y);
    std::ostringstream why;
    const double d = world_max(max_diff(y, l.cdo, dd, why));
    EXPECT_LE(d, 1e-12 * l.range) << c.name() << ": " << why.str();
    if (r == 0)
      std::printf("[ measured ] %s generated on %d ranks: max |weights - cdo genbic| = %.3g, "
                  "max |remap - cdo remap| = %.3g x field range\n",
                  c.name().c_str(), p, worst, d / l.range);
  }
}
