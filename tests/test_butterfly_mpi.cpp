// Butterfly and adaptive schedules on MPI: bit-identical to P2P on random plans (every skip
// mask; empty ranks, unbalanced loads, four fields at once), kernel stage structure, the
// Algorithm 1 generator, the adaptive choice agreed by all ranks and its cache file.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "estuary/adaptive.hpp"
#include "estuary/butterfly.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/exchange.hpp"
#include "mpi_test_util.hpp"

using estuary::AdaptiveOptions;
using estuary::AdaptiveRedist;
using estuary::Decomp;
using estuary::Field;
using estuary::Type;
using etest::i64;

namespace {

// Four fields of the four types, filled from each element's global index.
struct Data {
  std::vector<double> sa, da;
  std::vector<float> sb, db;
  std::vector<std::int32_t> sc, dc;
  std::vector<std::int64_t> sd, dd;
  Data(const std::vector<i64>& src_idx, std::size_t dst_n, int salt) {
    for (i64 g : src_idx) {
      sa.push_back(etest::value<double>(g, salt));
      sb.push_back(etest::value<float>(g, salt + 1));
      sc.push_back(etest::value<std::int32_t>(g, salt + 2));
      sd.push_back(etest::value<std::int64_t>(g, salt + 3));
    }
    da.assign(dst_n, -1.0);
    db.assign(dst_n, -1.0f);
    dc.assign(dst_n, -1);
    dd.assign(dst_n, -1);
  }
  std::vector<Field> fields() { return {Field(sa, da), Field(sb, db), Field(sc, dc), Field(sd, dd)}; }
  bool matches(const std::vector<i64>& dst_idx, int salt) const {
    bool ok = true;
    for (std::size_t j = 0; j < dst_idx.size(); ++j)
      ok = ok && etest::same_bits(da[j], etest::value<double>(dst_idx[j], salt)) &&
           etest::same_bits(db[j], etest::value<float>(dst_idx[j], salt + 1)) &&
           dc[j] == etest::value<std::int32_t>(dst_idx[j], salt + 2) &&
           dd[j] == etest::value<std::int64_t>(dst_idx[j], salt + 3);
    return ok;
  }
  bool same_dst(const Data& o) const {
    auto eq = [](const auto& x, const auto& y) {
      return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0);
    };
    return eq(da, o.da) && eq(db, o.db) && eq(dc, o.dc) && eq(dd, o.dd);
  }
};
const std::vector<Type> kTypes{Type::f64, Type::f32, Type::i32, Type::i64};

// A random partition of [0, n) for sources and another for destinations, the same on every
// rank: some ranks own nothing on either side, one source rank is much heavier.
std::pair<Decomp, Decomp> random_case(std::uint64_t seed, int p, int r) {
  std::mt19937_64 rng(seed);
  const i64 n = 40 + static_cast<i64>(rng() % 600);
  std::vector<i64> sw(static_cast<std::size_t>(p)), dw(static_cast<std::size_t>(p));
  for (int k = 0; k < p; ++k) {
    sw[static_cast<std::size_t>(k)] = rng() % 3 == 0 ? 0 : 1 + static_cast<i64>(rng() % 9);
    dw[static_cast<std::size_t>(k)] = rng() % 3 == 0 ? 0 : 1 + static_cast<i64>(rng() % 9);
  }
  sw[rng() % static_cast<std::size_t>(p)] += 40;
  dw[rng() % static_cast<std::size_t>(p)] += 1;
  auto pick = [&](const std::vector<i64>& w) {
    const i64 total = std::accumulate(w.begin(), w.end(), i64{0});
    i64 x = static_cast<i64>(rng() % static_cast<std::uint64_t>(total));
    int k = 0;
    while (x >= w[static_cast<std::size_t>(k)]) x -= w[static_cast<std::size_t>(k++)];
    return k;
  };
  std::vector<std::vector<i64>> src(static_cast<std::size_t>(p)), dst(static_cast<std::size_t>(p));
  for (i64 g = 0; g < n; ++g) {
    src[static_cast<std::size_t>(pick(sw))].push_back(g);
    dst[static_cast<std::size_t>(pick(dw))].push_back(g);
  }
  for (auto* side : {&src, &dst})
    for (auto& v : *side) std::shuffle(v.begin(), v.end(), rng);
  return {Decomp::indices(n, src[static_cast<std::size_t>(r)]), Decomp::indices(n, dst[static_cast<std::size_t>(r)])};
}

Data run_schedule(const estuary::Schedule& s, const Decomp& src, const Decomp& dst, int salt) {
  Data d(src.to_indices(), static_cast<std::size_t>(dst.size()), salt);
  estuary::Exchange ex(s, MPI_COMM_WORLD, kTypes);
  ex.run(d.fields());
  return d;
}

// Every kernel stage run on its own pairs each kernel host with one partner.
bool one_partner_per_kernel_stage(const estuary::ButterflyRouting& routing, std::uint64_t mask,
                                  const estuary::Schedule& s) {
  const auto hops = routing.stage_hops(mask);
  if (hops.size() != s.stages.size()) return false;
  for (std::size_t k = 0; k < hops.size(); ++k) {
    const bool kernel_only = hops[k].first == hops[k].second && hops[k].first >= 1 &&
                             hops[k].first <= routing.kernel_stages();
    if (kernel_only && (s.stages[k].sends.size() > 1 || s.stages[k].recvs.size() > 1)) return false;
  }
  return true;
}

TEST(ButterflyMpi, RandomPlansEveryMaskMatchesP2P) {
  const int p = etest::world_size(), r = etest::world_rank();
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const auto [src, dst] = random_case(seed, p, r);
    const std::vector<i64> dst_idx = dst.to_indices();
    estuary::Plan plan(src, dst, MPI_COMM_WORLD);
    const Data ref = run_schedule(estuary::p2p_schedule(plan), src, dst, static_cast<int>(seed));
    bool ok = ref.matches(dst_idx, static_cast<int>(seed));
    const estuary::ButterflyRouting routing(plan);
    std::string why;
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << routing.kernel_stages()); ++mask) {
      const estuary::Schedule s = routing.schedule(mask);
      const bool same = run_schedule(s, src, dst, static_cast<int>(seed)).same_dst(ref);
      const bool shape = one_partner_per_kernel_stage(routing, mask, s);
      if (!same || !shape) why += " mask " + std::to_string(mask) + (same ? " (stage shape)" : " (data)");
      ok = ok && same && shape;
    }
    ok = ok && run_schedule(estuary::adaptive_schedule(plan, 1), src, dst, static_cast<int>(seed)).same_dst(ref);
    EXPECT_TRUE(ok) << "seed " << seed << " on rank " << r << ":" << why;
    EXPECT_TRUE(etest::all_ok(ok)) << "seed " << seed;
  }
}

TEST(ButterflyMpi, EqualLoadsOnPowerOfTwoNeedNoMappingHops) {
  const int p = etest::world_size(), r = etest::world_rank();
  const auto pair = estuary::gen::messages_pair(8 * p, 6 * p, std::max(1, p - 1), r, p);
  estuary::Plan plan(pair.src, pair.dst, MPI_COMM_WORLD);
  const estuary::ButterflyRouting routing(plan);
  const int with_data = p > 1 ? p : 0;
  EXPECT_EQ(routing.kernel(), estuary::butterfly::kernel_size(with_data));
  const estuary::Schedule s = routing.schedule(0);
  if ((p & (p - 1)) == 0 && p > 1) {
    EXPECT_EQ(static_cast<int>(s.stages.size()), routing.kernel_stages());
  }
  EXPECT_LE(static_cast<int>(s.stages.size()), routing.kernel_stages() + 2);
  const Data d = run_schedule(s, pair.src, pair.dst, 5);
  EXPECT_TRUE(etest::all_ok(d.matches(pair.dst.to_indices(), 5)));
}

TEST(ButterflyMpi, GeneratorGivesRequestedMessages) {
  const int p = etest::world_size(), r = etest::world_rank();
  for (int m = 1; m <= p; ++m) {
    const auto pair = estuary::gen::messages_pair(3 * p + 1, 2 * p + 3, m, r, p);
    estuary::Plan plan(pair.src, pair.dst, MPI_COMM_WORLD);
    int sends = 0, recvs = 0;
    for (const auto& ps : plan.sends()) sends += ps.peer != r;
    for (const auto& ps : plan.recvs()) recvs += ps.peer != r;
    const int want = m < p ? m : p - 1;  // with m == ranks one piece stays home
    EXPECT_TRUE(etest::all_ok(sends == want && recvs == want)) << "m=" << m << " rank " << r << ": " << sends;
  }
}

// ---------- adaptive ----------

std::string temp_path(const std::string& tag) {
  std::string path;
  if (etest::world_rank() == 0) {
    path = (std::filesystem::temp_directory_path() /
            ("estuary_test_" + tag + "_" + std::to_string(::getpid()) + ".txt")).string();
    std::filesystem::remove(path);
  }
  int len = static_cast<int>(path.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  path.resize(static_cast<std::size_t>(len));
  MPI_Bcast(path.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

// The decomposition pair the adaptive tests tune: every rank sends and receives.
std::pair<Decomp, Decomp> tuning_case() {
  const int p = etest::world_size(), r = etest::world_rank();
  auto pair = estuary::gen::messages_pair(4 * p, 5 * p, std::max(1, p - 1), r, p);
  return {std::move(pair.src), std::move(pair.dst)};
}

// Runs until tuned (bounded), every run with new data checked. Returns the runs made.
int tune(AdaptiveRedist& ad, const Decomp& src, const Decomp& dst, bool& ok) {
  int runs = 0;
  const std::vector<i64> s = src.to_indices(), d = dst.to_indices();
  do {
    Data data(s, d.size(), 10 * runs);
    ad.run({data.fields()[0]});  // one field of doubles: the "auto" builder's cache key too
    for (std::size_t j = 0; j < d.size(); ++j) ok = ok && data.da[j] == etest::value<double>(d[j], 10 * runs);
    ++runs;
  } while (!ad.tuned() && runs < 200);
  return runs;
}

AdaptiveOptions with_cache(const std::string& path) {
  AdaptiveOptions o;
  o.cache_file = path;
  o.repetitions = 2;
  return o;
}

TEST(Adaptive, AllRanksChooseTheSameSchedule) {
  const auto [src, dst] = tuning_case();
  AdaptiveRedist ad(src, dst, MPI_COMM_WORLD, with_cache("off"));
  bool ok = true;
  tune(ad, src, dst, ok);
  EXPECT_TRUE(ad.tuned());
  std::uint64_t mine[2] = {ad.choice().skip_mask, ad.choice().trials.size()}, lo[2], hi[2];
  MPI_Allreduce(mine, lo, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, hi, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo[0], hi[0]);
  EXPECT_EQ(lo[1], hi[1]);
  // P2P timed first, after the latency probe; the full butterfly timed or passed over by the
  // estimate (unless it gives P2P's messages, as on 2 ranks), never both.
  const int L = ad.routing().kernel_stages();
  if (L > 0) {
    const std::uint64_t all = (std::uint64_t{1} << L) - 1;
    ASSERT_GE(ad.choice().trials.size(), 1u);
    EXPECT_EQ(ad.choice().trials[0].skip_mask, all);
    EXPECT_GT(ad.choice().probe_seconds, 0);
    const bool differ = ad.routing().stage_hops(0) != ad.routing().stage_hops(all);
    const auto& t = ad.choice().trials;
    const auto& pruned = ad.choice().pruned;
    const bool timed = std::any_of(t.begin(), t.end(), [](const auto& x) { return x.skip_mask == 0; });
    const bool passed = std::find(pruned.begin(), pruned.end(), 0u) != pruned.end();
    EXPECT_EQ(timed + passed, differ ? 1 : 0);
  }
  EXPECT_FALSE(ad.choice().from_cache);
  ok = ok && etest::all_ok(ok);
  EXPECT_TRUE(ok);
}

// A cache line as schedule_cache.hpp documents it (FNV-1a check), for forged entries.
std::string cache_line(const AdaptiveRedist& ad, const std::string& host, std::uint64_t mask) {
  const std::vector<std::uint64_t> fp = estuary::plan_fingerprint(ad.plan());
  char body[512];
  std::snprintf(body, sizeof body, "%016llx%016llx %d 8 %s %llx %d 0.001", static_cast<unsigned long long>(fp[0]),
                static_cast<unsigned long long>(fp[1]), etest::world_size(), host.c_str(),
                static_cast<unsigned long long>(mask), ad.routing().kernel_stages());
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char* c = body; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ULL;
  char line[600];
  std::snprintf(line, sizeof line, "%s %016llx", body, static_cast<unsigned long long>(h));
  return line;
}

std::string this_host() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return name;
}

void write_file(const std::string& path, const std::string& text) {
  if (etest::world_rank() == 0) std::ofstream(path) << text;
  MPI_Barrier(MPI_COMM_WORLD);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A second field with the same pattern (another AdaptiveRedist on the same pair, no cache
// file) replays the first one's trials: decided at its first run, the same choice, no timing.
TEST(Adaptive, SamePatternReusesTrials) {
  const int p = etest::world_size(), r = etest::world_rank();
  auto pair = estuary::gen::messages_pair(3 * p, 7 * p, std::max(1, p / 2), r, p);
  bool ok = true;
  AdaptiveRedist first(pair.src, pair.dst, MPI_COMM_WORLD, with_cache("off"));
  tune(first, pair.src, pair.dst, ok);
  AdaptiveRedist second(pair.src, pair.dst, MPI_COMM_WORLD, with_cache("off"));
  EXPECT_EQ(tune(second, pair.src, pair.dst, ok), 1);
  EXPECT_TRUE(second.tuned());
  EXPECT_EQ(second.choice().skip_mask, first.choice().skip_mask);
  ASSERT_EQ(second.choice().trials.size(), first.choice().trials.size());
  for (std::size_t k = 0; k < first.choice().trials.size(); ++k) {
    EXPECT_EQ(second.choice().trials[k].skip_mask, first.choice().trials[k].skip_mask);
    EXPECT_EQ(second.choice().trials[k].seconds, first.choice().trials[k].seconds);
  }
  if (first.routing().kernel_stages() > 0) {
    EXPECT_TRUE(second.choice().reused);
  }
  EXPECT_FALSE(second.choice().from_cache);
  // Every candidate was timed or passed over by the estimate, never both; P2P always timed.
  for (std::uint64_t m : first.choice().pruned)
    for (const estuary::AdaptiveTrial& t : first.choice().trials) EXPECT_NE(m, t.skip_mask);
  EXPECT_TRUE(etest::all_ok(ok));
}

// Every rank sends to every other (Algorithm 1 with M = p - 1), 65 536 elements a rank. On a
// power of two of at least 4 ranks the full butterfly forwards each element through log2(p)
// stages: it moves 1.33x (4 ranks) to 1.71x (8) P2P's elements and saves messages only, and
// every single skip moves more elements than P2P too. With the fit through the latency probe
// and P2P's timing, none of them comes within 20% of P2P while the probe is under a fifth of
// P2P's time (worked out from the loads: 0.20 on 4 ranks, 0.27 on 8). So whenever the probe is
// under 0.15 of P2P's time, which on an idle machine it is by far (about 0.003), the butterfly
// must be passed over untimed and P2P, which nothing else could beat, timed once: an estimate
// that ignored the probe, or a search that timed the butterfly anyway, fails here. On every
// rank count: the probe ran exactly when there is a kernel, P2P was timed first, and the data
// arrived.
TEST(Adaptive, ButterflyThatCannotWinIsNeverTimed) {
  const int p = etest::world_size(), r = etest::world_rank();
  auto pair = estuary::gen::messages_pair(p * (i64{1} << 16), std::max(1, p - 1), r, p);
  AdaptiveRedist ad(pair.src, pair.dst, MPI_COMM_WORLD, with_cache("off"));
  bool ok = true;
  const int runs = tune(ad, pair.src, pair.dst, ok);
  EXPECT_TRUE(etest::all_ok(ok));
  ASSERT_TRUE(ad.tuned());
  const int L = ad.routing().kernel_stages();
  const double probe = ad.choice().probe_seconds;
  if (L == 0) {
    EXPECT_EQ(probe, 0);  // nothing to choose: no probe, no timing
    EXPECT_EQ(ad.choice().name(), "p2p");
    return;
  }
  ASSERT_GE(ad.choice().trials.size(), 1u);
  EXPECT_EQ(ad.choice().trials[0].skip_mask, (std::uint64_t{1} << L) - 1);  // P2P first
  EXPECT_GT(probe, 0);
  const double p2p = ad.choice().trials[0].seconds;
  if (p >= 4 && (p & (p - 1)) == 0 && probe < 0.15 * p2p) {
    EXPECT_EQ(runs, 1) << "probe " << probe << " s, P2P " << p2p << " s";
    EXPECT_EQ(ad.choice().name(), "p2p");
    EXPECT_EQ(ad.choice().trials.size(), 1u);
    const auto& pruned = ad.choice().pruned;
    EXPECT_NE(std::find(pruned.begin(), pruned.end(), 0u), pruned.end());
  }
}

TEST(Adaptive, DecisionIsStoredAndReused) {
  const auto [src, dst] = tuning_case();
  const std::string path = temp_path("reuse");
  bool ok = true;
  AdaptiveRedist first(src, dst, MPI_COMM_WORLD, with_cache(path));
  tune(first, src, dst, ok);
  if (first.routing().kernel_stages() == 0) return;  // one rank: no kernel, nothing to decide
  if (etest::world_rank() == 0) {
    EXPECT_EQ(read_file(path).rfind("# estuary schedule cache v1\n", 0), 0u);
  }
  AdaptiveRedist second(src, dst, MPI_COMM_WORLD, with_cache(path));
  EXPECT_EQ(tune(second, src, dst, ok), 1);  // decided at the first run, from the file
  EXPECT_TRUE(second.choice().from_cache);
  EXPECT_EQ(second.choice().skip_mask, first.choice().skip_mask);

  // A forged entry proves the file, not a new profile, decides; "auto" reads the same entry.
  write_file(path, "# estuary schedule cache v1\n" + cache_line(first, this_host(), 1) + "\n");
  AdaptiveRedist third(src, dst, MPI_COMM_WORLD, with_cache(path));
  EXPECT_EQ(tune(third, src, dst, ok), 1);
  EXPECT_TRUE(third.choice().from_cache);
  EXPECT_EQ(third.choice().skip_mask, 1u);
  const estuary::Schedule chosen = estuary::auto_schedule(third.plan(), path);
  EXPECT_EQ(chosen.stages.size(), third.routing().schedule(1).stages.size());
  EXPECT_TRUE(etest::all_ok(ok));
  if (etest::world_rank() == 0) std::filesystem::remove(path);
}

// Tunes with the cache at `path` holding `text`; returns rank 0's stderr.
std::string tune_capturing(const std::string& path, const std::string& text, bool& from_cache, bool& ok) {
  const auto [src, dst] = tuning_case();
  write_file(path, text);
  if (etest::world_rank() == 0) testing::internal::CaptureStderr();
  AdaptiveRedist ad(src, dst, MPI_COMM_WORLD, with_cache(path));
  tune(ad, src, dst, ok);
  from_cache = ad.choice().from_cache;
  return etest::world_rank() == 0 ? testing::internal::GetCapturedStderr() : std::string();
}

TEST(Adaptive, CorruptCacheIgnoredWithWarning) {
  if (etest::world_size() == 1) return;  // one rank: no kernel, the cache is never read
  const std::string path = temp_path("corrupt");
  bool ok = true, from_cache = true;
  const std::string err = tune_capturing(path, "# estuary schedule cache v1\n0123 this is not a decision\n", from_cache, ok);
  EXPECT_FALSE(from_cache);
  if (etest::world_rank() == 0) {
    EXPECT_NE(err.find("corrupt"), std::string::npos) << err;
  }
  // A line whose check does not match (an edited mask) is corrupt too.
  const auto [src, dst] = tuning_case();
  AdaptiveRedist probe(src, dst, MPI_COMM_WORLD, with_cache("off"));
  std::string edited = cache_line(probe, this_host(), 1);
  edited[edited.size() - 1] = edited.back() == '0' ? '1' : '0';
  const std::string err2 = tune_capturing(path, "# estuary schedule cache v1\n" + edited + "\n", from_cache, ok);
  EXPECT_FALSE(from_cache);
  if (etest::world_rank() == 0) {
    EXPECT_NE(err2.find("corrupt"), std::string::npos) << err2;
  }
  // The file was ours: it is rewritten with the new decision, which the next run reuses.
  AdaptiveRedist again(src, dst, MPI_COMM_WORLD, with_cache(path));
  tune(again, src, dst, ok);
  EXPECT_TRUE(again.choice().from_cache);
  EXPECT_TRUE(etest::all_ok(ok));
  if (etest::world_rank() == 0) std::filesystem::remove(path);
}

TEST(Adaptive, ForeignCacheIgnoredWithWarningAndLeftAlone) {
  if (etest::world_size() == 1) return;  // one rank: no kernel, the cache is never read
  const std::string path = temp_path("foreign");
  bool ok = true, from_cache = true;
  const std::string foreign = "[settings]\ncolour = blue\n";
  const std::string err = tune_capturing(path, foreign, from_cache, ok);
  EXPECT_FALSE(from_cache);
  if (etest::world_rank() == 0) {
    EXPECT_NE(err.find("not an estuary schedule cache"), std::string::npos) << err;
    EXPECT_EQ(read_file(path), foreign);
  }
  // An entry of ours recorded on another host is not trusted either.
  const auto [src, dst] = tuning_case();
  AdaptiveRedist probe(src, dst, MPI_COMM_WORLD, with_cache("off"));
  const std::string other = "# estuary schedule cache v1\n" + cache_line(probe, "elsewhere-node-17", 1) + "\n";
  const std::string err2 = tune_capturing(path, other, from_cache, ok);
  EXPECT_FALSE(from_cache);
  if (etest::world_rank() == 0) {
    EXPECT_NE(err2.find("elsewhere-node-17"), std::string::npos) << err2;
  }
  EXPECT_TRUE(etest::all_ok(ok));
  if (etest::world_rank() == 0) std::filesystem::remove(path);
}

}  // namespace

