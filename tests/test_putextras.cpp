// What a put may carry besides its values (estuary::PutExtras), through the coupler:
//  - the model's own gradients (OASIS's fld2..fld4) with CDO's multi-weight files (genbic,
//    gencon2): with CDO's gradients (computed here from the index-difference formula of
//    docs/remap.md, unmasked sources) the target equals `cdo remap`; with other gradients it
//    equals the serial sum over the file's columns, read here with netCDF;
//  - gradients given to a coupling whose weights have one column: an error naming the field;
//  - a fractional mask (YAC's yac_cput_frac), changing every coupling time, with a
//    conservative (destarea) matrix: the target is W (f x) / W f (0 where W f = 0), as a serial
//    computation says, and sum_t A_t (W f)_t r_t = sum_s A_s f_s x_s to 1e-13.
// Two components on half the ranks each (one component holding both sides on one rank).
#include <gtest/gtest.h>
#include <netcdf.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "couple_test_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/error.hpp"
#include "estuary/weights.hpp"
#include "remap_test_util.hpp"

using namespace estuary;
using namespace ctest_util;

namespace {

constexpr double kPeriod = 3600;

// This rank's block of a grid of n points, on its side (`mine`), else nothing.
Decomp block(i64 n, bool mine, const TwoSides& s) {
  if (!mine) return Decomp::empty(n);
  const i64 lo = n * s.index / s.count, hi = n * (s.index + 1) / s.count;
  return Decomp::stripes(n, {{lo, hi - lo, 1}});
}

std::string namcouple(int steps, const std::vector<i64>& dims, const std::string& file) {
  return " $NFIELDS\n 1\n $END\n $RUNTIME\n " + std::to_string(static_cast<long>(steps * kPeriod)) +
         "\n $END\n $NLOGPRT\n 1\n $END\n $NNOREST\n T\n $END\n $STRINGS\nA_F O_F 1 " +
         std::to_string(static_cast<long>(kPeriod)) + " 1 rst.nc EXPORTED\n" + std::to_string(dims[0]) + " " +
         std::to_string(dims[1]) + " " + std::to_string(dims[2]) + " " + std::to_string(dims[3]) +
         " agrd ogrd\nR 0 R 0\nMAPPING\n" + file + "\n $END\n";
}

// One put of field A_F per coupling time (step s: values x[s], extras from extra(s, decomp))
// and the get of O_F: on target ranks, the values got per step (local order).
template <class Extras>
std::vector<std::vector<double>> run(const std::string& dir, int steps, i64 ns, i64 nd,
                                     const std::vector<std::vector<double>>& x, Extras extra) {
  const TwoSides s = two_sides();
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  Component comp(s.comp, o);
  const Decomp sd = block(ns, s.atm, s), dd = block(nd, s.ocn, s);
  int sv = -1, dv = -1;
  if (s.atm) sv = comp.def_var("A_F", comp.def_partition(sd, "agrd"), Direction::out);
  if (s.ocn) dv = comp.def_var("O_F", comp.def_partition(dd, "ogrd"), Direction::in);
  comp.enddef();
  std::vector<std::vector<double>> got;
  for (int k = 0; k < steps; ++k) {
    const double t = k * kPeriod;
    if (s.atm) {
      const std::vector<double> v = local_of(x[static_cast<std::size_t>(k)], sd);
      std::vector<std::vector<double>> keep;  // the extras' storage, alive during the put
      const PutExtras e = extra(k, sd, keep);
      EXPECT_EQ(comp.put(sv, t, v, e), Info::sent);
    }
    if (s.ocn) {
      std::vector<double> y(static_cast<std::size_t>(dd.size()));
      EXPECT_EQ(comp.get(dv, t, y), Info::recvd);
      got.push_back(std::move(y));
    }
  }
  comp.terminate();
  return got;
}

// ---- gradients ----

// A multi-weight SCRIP file as written: links, num_wgts columns per link (link after link).
struct Columns {
  i64 na = 0, nb = 0, k = 0, snx = 0, sny = 0, dnx = 0, dny = 0;
  std::vector<i64> src, dst;
  std::vector<double> w;
};

Columns read_columns(const std::string& path) {
  Columns c;
  int nc = -1, v = -1;
  if (nc_open(path.c_str(), NC_NOWRITE, &nc) != NC_NOERR) return c;
  c.na = static_cast<i64>(rtest::dim(nc, "src_grid_size"));
  c.nb = static_cast<i64>(rtest::dim(nc, "dst_grid_size"));
  c.k = static_cast<i64>(rtest::dim(nc, "num_wgts"));
  const std::size_t n = rtest::dim(nc, "num_links");
  std::vector<long long> a(n), b(n);
  int sdims[2] = {0, 0}, ddims[2] = {0, 0};
  nc_inq_varid(nc, "src_grid_dims", &v);
  nc_get_var_int(nc, v, sdims);
  nc_inq_varid(nc, "dst_grid_dims", &v);
  nc_get_var_int(nc, v, ddims);
  c.snx = sdims[0], c.sny = sdims[1], c.dnx = ddims[0], c.dny = ddims[1];
  nc_inq_varid(nc, "src_address", &v);
  nc_get_var_longlong(nc, v, a.data());
  nc_inq_varid(nc, "dst_address", &v);
  nc_get_var_longlong(nc, v, b.data());
  c.w.resize(n * static_cast<std::size_t>(c.k));
  nc_inq_varid(nc, "remap_matrix", &v);
  nc_get_var_double(nc, v, c.w.data());
  nc_close(nc);
  for (std::size_t e = 0; e < n; ++e) c.src.push_back(a[e] - 1), c.dst.push_back(b[e] - 1);
  return c;
}

// CDO's gradients of an unmasked nx x ny field (docs/remap.md): centred index differences, i
// periodic, j one-sided on the first and last rows, and the cross difference.
std::array<std::vector<double>, 3> cdo_gradients(const std::vector<double>& x, i64 nx, i64 ny) {
  std::array<std::vector<double>, 3> g;
  for (auto& v : g) v.assign(x.size(), 0.0);
  const auto at = [&](i64 j, i64 i) { return x[static_cast<std::size_t>(j * nx + i)]; };
  for (i64 j = 0; j < ny; ++j)
    for (i64 i = 0; i < nx; ++i) {
      const i64 ip = (i + 1) % nx, im = (i + nx - 1) % nx;
      const i64 jp = std::min(j + 1, ny - 1), jm = std::max(j - 1, i64{0});
      const double dns = (jp == j || jm == j) ? 1.0 : 0.5;
      const auto p = static_cast<std::size_t>(j * nx + i);
      g[0][p] = 0.5 * (at(j, ip) - at(j, im));
      g[1][p] = dns * (at(jp, i) - at(jm, i));
      g[2][p] = dns * (0.5 * (at(jp, ip) - at(jp, im)) - 0.5 * (at(jm, ip) - at(jm, im)));
    }
  return g;
}

// sum over the columns: y = W0 x + W1 g1 + ... in file order; `reached` marks rows with links.
std::vector<double> apply_columns(const Columns& c, const std::vector<double>& x,
                                  const std::array<std::vector<double>, 3>& g, std::vector<char>* reached = nullptr) {
  std::vector<double> y(static_cast<std::size_t>(c.nb), 0.0);
  if (reached) reached->assign(y.size(), 0);
  const auto k = static_cast<std::size_t>(c.k);
  for (std::size_t e = 0; e < c.src.size(); ++e) {
    const auto s = static_cast<std::size_t>(c.src[e]), d = static_cast<std::size_t>(c.dst[e]);
    double sum = c.w[e * k] * x[s];
    for (std::size_t j = 1; j < k; ++j) sum += c.w[e * k + j] * g[j - 1][s];
    y[d] += sum;
    if (reached) (*reached)[d] = 1;
  }
  return y;
}

void copy_file(const std::string& from, const std::string& to) {
  if (world_rank() == 0) std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  MPI_Barrier(MPI_COMM_WORLD);
}

// The three unmasked CDO cases; the land-masked ones need CDO's masked stencils (the coupler
// test of the folded matrix covers them).
std::vector<rtest::Case> unmasked_cases() {
  std::vector<rtest::Case> out;
  for (const rtest::Case& c : rtest::multi_cases())
    if (c.src == "ll") out.push_back(c);
  return out;
}

}  // namespace

TEST(PutExtras, ModelGradientsEqualCdoRemap) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const TwoSides s = two_sides();
  for (const rtest::Case& cs : unmasked_cases()) {
    SCOPED_TRACE(cs.name());
    const Columns c = read_columns(rtest::weight_file(rtest::kData, cs));
    ASSERT_GT(c.k, 1);
    const std::vector<double> x = rtest::read_field(rtest::field_file(rtest::kData, cs.src));
    const std::vector<double> cdo = rtest::read_field(rtest::cdo_out_file(rtest::kData, cs));
    ASSERT_EQ(static_cast<i64>(x.size()), c.na);
    ASSERT_EQ(static_cast<i64>(cdo.size()), c.nb);
    const std::string dir = fresh_dir("putgrad");
    copy_file(rtest::weight_file(rtest::kData, cs), dir + "/w.nc");
    write_text(dir + "/namcouple", namcouple(2, {c.snx, c.sny, c.dnx, c.dny}, "w.nc"));
    const auto g = cdo_gradients(x, c.snx, c.sny);
    // Step 0: CDO's gradients (must give cdo remap); step 1: other gradients (x twice and
    // nonsense), which must give the serial column sum and differ from the folded result.
    std::array<std::vector<double>, 3> other;
    for (int j = 0; j < 3; ++j) {
      other[static_cast<std::size_t>(j)].resize(x.size());
      for (std::size_t p = 0; p < x.size(); ++p) other[static_cast<std::size_t>(j)][p] = std::cos(0.3 * double(p) + j);
    }
    const auto extras = [&](int step, const Decomp& sd, std::vector<std::vector<double>>& keep) {
      PutExtras e;
      for (i64 j = 0; j + 1 < c.k; ++j) keep.push_back(local_of((step == 0 ? g : other)[static_cast<std::size_t>(j)], sd));
      for (const auto& v : keep) e.gradients.emplace_back(v);
      return e;
    };
    const auto got = run(dir, 2, c.na, c.nb, {x, x}, extras);
    ASSERT_EQ(got.size(), s.ocn ? 2u : 0u);
    const std::vector<i64> idx = block(c.nb, s.ocn, s).to_indices();
    double range_lo = 1e300, range_hi = -1e300;
    for (double v : x) range_lo = std::min(range_lo, v), range_hi = std::max(range_hi, v);
    std::vector<char> reached;
    const std::vector<double> want_other = apply_columns(c, x, other, &reached);
    double worst_cdo = 0, worst_other = 0, folded_gap = 0;
    for (std::size_t q = 0; q < idx.size(); ++q) {
      const auto d = static_cast<std::size_t>(idx[q]);
      if (cdo[d] != rtest::kMissing) worst_cdo = std::max(worst_cdo, std::abs(got[0][q] - cdo[d]));
      if (reached[d]) worst_other = std::max(worst_other, std::abs(got[1][q] - want_other[d]));
      if (cdo[d] != rtest::kMissing) folded_gap = std::max(folded_gap, std::abs(got[1][q] - cdo[d]));
    }
    const double range = range_hi - range_lo;
    EXPECT_LE(worst_cdo, 1e-12 * range) << "against cdo remap";
    EXPECT_LE(worst_other, 1e-12 * range) << "against the serial column sum";
    double gap = 0, worst = 0;
    MPI_Allreduce(&folded_gap, &gap, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&worst_cdo, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_GT(gap, 1e-6 * range) << "other gradients must change the result";
    if (world_rank() == 0)
      std::printf("[ measured ] %s, model gradients on %d ranks: max |estuary - cdo remap| = %.3g x field range\n",
                  cs.name().c_str(), world_size(), worst / range);
  }
}

// A MAPPING of CDO's genlaf file (largest area fraction) through the coupler: the field of
// classes arrives as `cdo remap` gives it, value for value (the coupler reads the file itself,
// and takes the rule from its map_method).
TEST(PutExtras, LargestAreaFractionMappingEqualsCdo) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const TwoSides s = two_sides();
  const rtest::Case cs = rtest::laf_cases()[0];
  const Columns c = read_columns(rtest::weight_file(rtest::kData, cs));
  const std::vector<double> x = rtest::read_field(rtest::class_file(rtest::kData, cs.src));
  const std::vector<double> cdo = rtest::read_field(rtest::cdo_out_file(rtest::kData, cs));
  const std::string dir = fresh_dir("putlaf");
  copy_file(rtest::weight_file(rtest::kData, cs), dir + "/w.nc");
  write_text(dir + "/namcouple", namcouple(1, {c.snx, c.sny, c.dnx, c.dny}, "w.nc"));
  const auto none = [](int, const Decomp&, std::vector<std::vector<double>>&) { return PutExtras{}; };
  const auto got = run(dir, 1, c.na, c.nb, {x}, none);
  ASSERT_EQ(got.size(), s.ocn ? 1u : 0u);
  const std::vector<i64> idx = block(c.nb, s.ocn, s).to_indices();
  int bad = 0;
  for (std::size_t q = 0; q < idx.size(); ++q) {
    const double want = cdo[static_cast<std::size_t>(idx[q])];
    if (want != rtest::kMissing && got[0][q] != want && bad++ < 3)
      ADD_FAILURE() << "point " << idx[q] << ": " << got[0][q] << ", cdo remap " << want;
  }
  EXPECT_EQ(bad, 0);
}

TEST(PutExtras, GradientsToOneColumnCouplingNameTheField) {
  const TwoSides s = two_sides();
  constexpr i64 ns = 12 * 10, nd = 8 * 9;
  const std::string dir = fresh_dir("putgrad1");
  write_synthetic_weights(dir + "/w.nc", ns, nd);
  write_text(dir + "/namcouple", namcouple(1, {12, 10, 8, 9}, "w.nc"));
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  Component comp(s.comp, o);
  const Decomp sd = block(ns, s.atm, s), dd = block(nd, s.ocn, s);
  int sv = -1;
  if (s.atm) sv = comp.def_var("A_F", comp.def_partition(sd, "agrd"), Direction::out);
  if (s.ocn) comp.def_var("O_F", comp.def_partition(dd, "ogrd"), Direction::in);
  comp.enddef();
  if (s.atm) {
    const std::vector<double> v(static_cast<std::size_t>(sd.size()), 1.0);
    PutExtras e;
    e.gradients = {v, v};
    try {
      comp.put(sv, 0, v, e);
      ADD_FAILURE() << "gradients to a one-column coupling were accepted";
    } catch (const Error& err) {
      const std::string m = err.what();
      EXPECT_NE(m.find("A_F"), std::string::npos) << m;
      EXPECT_NE(m.find("one column"), std::string::npos) << m;
    }
  }
  // Nothing was sent: the target gets nothing at t=0 (it would wait), so it does not ask.
  MPI_Barrier(MPI_COMM_WORLD);
}

// ---- fractional masks ----

namespace {
// A conservative (destarea) matrix: source cell s of area A_s overlaps 1-3 target cells, its
// area split among them (O_ts, summing to A_s); W_ts = O_ts / A_t. Some targets get nothing.
struct Conservative {
  i64 ns = 0, nd = 0;
  std::vector<double> as, at;
  Links w;
};

Conservative conservative(i64 ns, i64 nd) {
  Conservative c{ns, nd, {}, {}, {}};
  for (i64 s = 0; s < ns; ++s) c.as.push_back(1.0 + 0.01 * static_cast<double>(s % 7));
  for (i64 t = 0; t < nd; ++t) c.at.push_back(2.0 + 0.03 * static_cast<double>(t % 5));
  for (i64 s = 0; s < ns; ++s) {
    const int parts = 1 + static_cast<int>(s % 3);
    const double share[3][3] = {{1.0, 0, 0}, {0.375, 0.625, 0}, {0.25, 0.5, 0.25}};
    for (int j = 0; j < parts; ++j) {
      const i64 t = (s * 7 + j * 11) % (nd - 3);  // the last 3 targets have no links
      const double o = share[parts - 1][j] * c.as[static_cast<std::size_t>(s)];
      c.w.add(t, s, o / c.at[static_cast<std::size_t>(t)]);
    }
  }
  return c;
}

// The fraction of source point s at step k: some 0, some 1, the rest in between.
double fraction(i64 s, int k) {
  const i64 m = (s + 3 * k) % 4;
  return m == 0 ? 0.0 : m == 1 ? 1.0 : 0.2 + 0.15 * static_cast<double>((s * (k + 2)) % 5);
}
}  // namespace

TEST(PutExtras, FractionalMaskIsConservative) {
  const TwoSides s = two_sides();
  constexpr i64 ns = 12 * 10, nd = 8 * 9;
  constexpr int steps = 3;
  const Conservative c = conservative(ns, nd);
  const std::string dir = fresh_dir("putfrac");
  if (world_rank() == 0) write_weights(dir + "/w.nc", c.w, ns, nd, MPI_COMM_SELF);
  MPI_Barrier(MPI_COMM_WORLD);
  write_text(dir + "/namcouple", namcouple(steps, {12, 10, 8, 9}, "w.nc"));
  std::vector<std::vector<double>> x, f;
  for (int k = 0; k < steps; ++k) {
    x.push_back(global_field(ns, k * kPeriod));
    f.emplace_back();
    for (i64 p = 0; p < ns; ++p) f.back().push_back(fraction(p, k));
  }
  const auto extras = [&](int step, const Decomp& sd, std::vector<std::vector<double>>& keep) {
    keep.push_back(local_of(f[static_cast<std::size_t>(step)], sd));
    PutExtras e;
    e.fraction = keep.back();
    return e;
  };
  const auto got = run(dir, steps, ns, nd, x, extras);
  ASSERT_EQ(got.size(), s.ocn ? static_cast<std::size_t>(steps) : 0u);
  const std::vector<i64> idx = block(nd, s.ocn, s).to_indices();
  for (int k = 0; k < steps; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    const auto kk = static_cast<std::size_t>(k);
    std::vector<double> fx(static_cast<std::size_t>(ns));
    for (std::size_t p = 0; p < fx.size(); ++p) fx[p] = f[kk][p] * x[kk][p];
    const std::vector<double> num = apply_serial(c.w, fx, nd), den = apply_serial(c.w, f[kk], nd);
    // Pointwise: W (f x) / W f, 0 where W f = 0 (the unmapped value).
    int fallback = 0;
    double lhs = 0;  // this rank's sum_t A_t (W f)_t r_t
    for (std::size_t q = 0; q < idx.size(); ++q) {
      const auto t = static_cast<std::size_t>(idx[q]);
      const double want = den[t] != 0 ? num[t] / den[t] : 0.0;
      fallback += den[t] == 0;
      EXPECT_NEAR(got[kk][q], want, 1e-14 * (1 + std::abs(want))) << "target " << t;
      lhs += c.at[t] * den[t] * got[kk][q];
    }
    double total = 0;  // source-only ranks add 0
    int fallbacks = 0;
    MPI_Allreduce(&lhs, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&fallback, &fallbacks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double rhs = 0, scale = 0;
    for (i64 p = 0; p < ns; ++p) {
      const auto pp = static_cast<std::size_t>(p);
      rhs += c.as[pp] * fx[pp];
      scale += std::abs(c.as[pp] * fx[pp]);
    }
    EXPECT_NEAR(total, rhs, 1e-13 * scale) << "sum_t A_t (W f)_t r_t against sum_s A_s f_s x_s";
    EXPECT_GT(fallbacks, 3) << "some targets must have W f = 0 beyond the 3 without links";
  }
}
