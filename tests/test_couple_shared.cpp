// Shared remaps (issue 24): couplings with one weight file, the same partitions, ranks and
// options share one Remap. Ten couplings: seven "dst bfb" and three "src sum" of one file set up
// two Remaps (Remap::setups()), all ten transfers in flight at once, and every value received
// equals W f(t) computed serially from the same links — as without sharing
// (ESTUARY_SHARE_REMAPS=0, ten set-ups), bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "couple_test_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/remap.hpp"
#include "estuary/settings.hpp"

using namespace estuary;
using namespace ctest_util;

namespace {

constexpr i64 kNs = 12 * 10, kNd = 8 * 9;
constexpr double kDt = 1200, kPeriod = 3600, kRuntime = 4 * kPeriod;
constexpr int kCouplings = 10, kSum = 7;  // couplings [kSum, 10) map with "src sum"

std::string namcouple() {
  std::string s = " $NFIELDS\n " + std::to_string(kCouplings) + "\n $END\n $RUNTIME\n " +
                  std::to_string(static_cast<long>(kRuntime)) + "\n $END\n $NLOGPRT\n 1\n $END\n $NNOREST\n T\n $END\n $STRINGS\n";
  for (int k = 0; k < kCouplings; ++k)
    s += "A_F" + std::to_string(k) + " O_F" + std::to_string(k) + " 1 " + std::to_string(static_cast<long>(kPeriod)) +
         " 1 rst.nc EXPORTED\n12 10 8 9 agrd ogrd\nR 0 R 0\nMAPPING\nw.nc " + (k < kSum ? "dst bfb" : "src sum") + "\n";
  return s + " $END\n";
}

struct Outcome {
  std::int64_t setups = 0;
  std::vector<std::string> shares;                  // per coupling: shares_remap_of
  std::vector<std::vector<std::vector<double>>> got;  // per coupling, per coupling time
};

Outcome run(const std::string& dir) {
  const TwoSides l = two_sides();
  ComponentOptions o;
  o.config = dir + "/namcouple";
  o.directory = dir;
  const std::int64_t before = Remap::setups();
  Component comp(l.comp, o);
  const Decomp sd = l.atm ? gen::cyclic(kNs, l.index, l.count) : Decomp::empty(kNs);
  const Decomp dd = l.ocn ? gen::block(kNd, l.count - 1 - l.index, l.count) : Decomp::empty(kNd);
  std::vector<int> ov, iv;
  if (l.atm) {
    const int part = comp.def_partition(sd, "agrd");
    for (int k = 0; k < kCouplings; ++k) ov.push_back(comp.def_var("A_F" + std::to_string(k), part, Direction::out));
  }
  if (l.ocn) {
    const int part = comp.def_partition(dd, "ogrd");
    for (int k = 0; k < kCouplings; ++k) iv.push_back(comp.def_var("O_F" + std::to_string(k), part, Direction::in));
  }
  comp.enddef();
  Outcome out;
  out.setups = Remap::setups() - before;
  for (const CouplingSchedules& s : comp.schedules()) out.shares.push_back(s.shares_remap_of);
  out.got.resize(iv.size());
  for (double t = 0; t < kRuntime; t += kDt) {
    // All ten puts before any get: ten transfers of the shared set-ups in flight at once.
    for (std::size_t k = 0; k < ov.size(); ++k) comp.put(ov[k], t, local_of(global_field(kNs, t, static_cast<int>(k)), sd));
    for (std::size_t k = 0; k < iv.size(); ++k) {
      std::vector<double> v(static_cast<std::size_t>(dd.size()), -999.0);
      if (comp.get(iv[k], t, v) != Info::ok) out.got[k].push_back(v);
    }
  }
  comp.terminate();
  return out;
}

}  // namespace

TEST(CoupleShared, TenCouplingsOfOneWeightFileShareTheirRemaps) {
  const TwoSides l = two_sides();
  const std::string dir = fresh_dir("shared");
  write_synthetic_weights(dir + "/w.nc", kNs, kNd);
  write_text(dir + "/namcouple", namcouple());

  ::setenv("ESTUARY_SHARE_REMAPS", "0", 1);
  Settings::reload();
  const Outcome own = run(dir);
  ::unsetenv("ESTUARY_SHARE_REMAPS");
  Settings::reload();
  const Outcome shared = run(dir);

  // Every rank takes part in every coupling: one set-up per distinct mapping when shared.
  EXPECT_EQ(own.setups, kCouplings);
  EXPECT_EQ(shared.setups, 2);
  ASSERT_EQ(shared.shares.size(), static_cast<std::size_t>(kCouplings));
  for (int k = 0; k < kCouplings; ++k) {
    EXPECT_TRUE(own.shares[static_cast<std::size_t>(k)].empty()) << k;
    const std::string first = k < kSum ? "A_F0" : "A_F" + std::to_string(kSum);
    if (k == 0 || k == kSum) EXPECT_TRUE(shared.shares[static_cast<std::size_t>(k)].empty()) << k;
    else EXPECT_EQ(shared.shares[static_cast<std::size_t>(k)].rfind(first + " ->", 0), 0u)
             << k << ": " << shared.shares[static_cast<std::size_t>(k)];
  }

  if (!l.ocn) return;
  const Links w = synthetic_links(kNs, kNd);
  const Decomp dd = gen::block(kNd, l.count - 1 - l.index, l.count);
  ASSERT_EQ(shared.got.size(), static_cast<std::size_t>(kCouplings));
  for (int k = 0; k < kCouplings; ++k) {
    const auto& g = shared.got[static_cast<std::size_t>(k)];
    ASSERT_EQ(g.size(), 4u) << k;
    for (std::size_t c = 0; c < g.size(); ++c) {
      const double t = static_cast<double>(c) * kPeriod;
      const std::vector<double> want = local_of(apply_serial(w, global_field(kNs, t, k), kNd), dd);
      ASSERT_EQ(g[c].size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(g[c][i], want[i], 1e-13) << "coupling " << k << " t=" << t << " point " << i;
        // Sharing changes nothing: the same values as ten Remaps of their own, bit for bit.
        ASSERT_EQ(g[c][i], own.got[static_cast<std::size_t>(k)][c][i]) << "coupling " << k << " t=" << t;
      }
    }
  }
}
