// Every error of plan, schedule and exchange: raised on every rank that must raise it, with a
// message naming the index, rank or field at fault, and never a hang.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estuary/error.hpp"
#include "estuary/redist.hpp"
#include "estuary/settings.hpp"
#include "mpi_test_util.hpp"

using estuary::Decomp;
using estuary::Field;
using estuary::Redist;
using estuary::RedistOptions;
using estuary::Type;
using etest::i64;

namespace {

// What one rank saw when calling f: whether an estuary::Error came out, and its message.
struct Outcome {
  bool thrown = false;
  bool other_exception = false;
  std::string message;
};

template <class F>
Outcome outcome_of(F&& f) {
  Outcome o;
  try {
    f();
  } catch (const estuary::Error& e) {
    o.thrown = true;
    o.message = e.what();
  } catch (const std::exception& e) {
    o.other_exception = true;
    o.message = e.what();
  }
  return o;
}

// Expects an estuary::Error on this rank whose message holds every needle; returns whether all
// ranks agree that this held (collective).
bool expect_error(const Outcome& o, const std::vector<std::string>& needles, const std::string& what) {
  bool ok = o.thrown;
  EXPECT_TRUE(o.thrown) << what << ": no estuary::Error on rank " << etest::world_rank()
                        << (o.other_exception ? " (another exception: " + o.message + ")" : "");
  for (const std::string& n : needles) {
    const bool has = o.message.find(n) != std::string::npos;
    EXPECT_TRUE(!o.thrown || has) << what << ": message \"" << o.message << "\" on rank "
                                  << etest::world_rank() << " lacks \"" << n << "\"";
    ok = ok && has;
  }
  const bool all = etest::all_ok(ok);
  EXPECT_TRUE(all) << what;
  return all;
}

std::string rank_label(int r) { return "rank " + std::to_string(r); }

// The owner of index g in etest::block(n, p, *) (also the directory's bucket owner).
int block_owner(i64 g, i64 n, int p) {
  for (int k = 0; k < p; ++k) {
    const auto [lo, hi] = etest::block_range(n, p, k);
    if (lo <= g && g < hi) return k;
  }
  return -1;
}

// A correct run after an error: the object is still usable on every rank.
bool runs_fine(Redist& rd, const Decomp& src, const Decomp& dst) {
  const std::vector<i64> si = src.to_indices(), di = dst.to_indices();
  std::vector<double> s(si.size()), d(di.size(), -1.0);
  for (std::size_t k = 0; k < si.size(); ++k) s[k] = etest::value<double>(si[k], 0);
  bool ok = true;
  try {
    rd.run({Field(s, d)});
    for (std::size_t j = 0; j < di.size(); ++j) ok = ok && d[j] == etest::value<double>(di[j], 0);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "run after an error threw: " << e.what();
    ok = false;
  }
  return etest::all_ok(ok);
}

}  // namespace

TEST(Errors, DestinationIndexWithoutSource) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 10 * p + 3;
  // Pick a missing index whose cyclic destination rank differs from its directory rank, so the
  // message must name the destination rank itself.
  i64 x = n / 2;
  for (i64 g = n - 1; g >= 0; --g)
    if (g % p != block_owner(g, n, p)) {
      x = g;
      break;
    }
  const int dst_rank = static_cast<int>(x % p);
  std::vector<i64> mine;
  for (i64 g : etest::block(n, p, r).to_indices())
    if (g != x) mine.push_back(g);
  const Decomp src = Decomp::indices(n, mine);
  const Decomp dst = etest::cyclic(n, p, r);
  const std::vector<std::string> needles{std::to_string(x), rank_label(dst_rank)};

  expect_error(outcome_of([&] { Redist rd(src, dst, MPI_COMM_WORLD); }), needles, "Redist, missing index");
  expect_error(outcome_of([&] { estuary::Plan plan(src, dst, MPI_COMM_WORLD); }), needles,
               "Plan, missing index");
  // The same with a halo destination, the index wanted twice on its rank.
  expect_error(outcome_of([&] { Redist rd(src, etest::halo_block(n, p, r, 2), MPI_COMM_WORLD); }),
               {std::to_string(x)}, "Redist, missing index in a halo");
}

TEST(Errors, ManyMissingIndices) {
  // A whole range has no source: the error names the first of them and does not hang.
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 12 * p;
  const auto [lo, hi] = etest::block_range(n, p, r);
  const Decomp src = etest::range_decomp(n, {lo, r == p - 1 ? hi - 9 : hi});
  const Decomp dst = etest::block(n, p, r);
  expect_error(outcome_of([&] { Redist rd(src, dst, MPI_COMM_WORLD); }),
               {std::to_string(n - 9), rank_label(p - 1)}, "nine missing indices");
  // Nothing at all on the source side.
  expect_error(outcome_of([&] { Redist rd(Decomp::empty(n), dst, MPI_COMM_WORLD); }), {"0", "rank 0"},
               "empty source");
}

TEST(Errors, IndexOwnedByTwoSources) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 10 * p + 1;
  if (p >= 2) {
    // Sources are cyclic; rank 0 also claims index x of rank 1. x lies in the last rank's
    // directory bucket, so with three or more ranks the message must name both owners itself.
    const int a = 0, b = 1;
    const i64 x = 9 * p + 1;  // x % p == 1, in [lo(p - 1), n) for p <= 8
    std::vector<i64> mine = etest::cyclic(n, p, r).to_indices();
    if (r == a) mine.push_back(x);
    const Decomp src = Decomp::indices(n, mine);
    const Decomp dst = etest::cyclic(n, p, r);
    expect_error(outcome_of([&] { Redist rd(src, dst, MPI_COMM_WORLD); }),
                 {std::to_string(x), rank_label(a), rank_label(b)}, "duplicate source index");
    // The last rank claims everything besides its own block: many duplicates, one error.
    const Decomp greedy = r == p - 1 ? Decomp::stripes(n, {{0, n, 1}}) : etest::block(n, p, r);
    expect_error(outcome_of([&] { estuary::Plan plan(greedy, dst, MPI_COMM_WORLD); }),
                 {rank_label(p - 1)}, "greedy last rank");
  }
  // One rank listing an index twice in its own source is a duplicate too.
  std::vector<i64> twice = etest::block(n, p, r).to_indices();
  if (r == p - 1) twice.push_back(twice.front());
  const i64 dup = etest::block_range(n, p, p - 1).first;
  expect_error(outcome_of([&] { Redist rd(Decomp::indices(n, twice), etest::block(n, p, r), MPI_COMM_WORLD); }),
               {std::to_string(dup), rank_label(p - 1)}, "index twice in one source");
}

TEST(Errors, GlobalSizesDisagree) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 6 * p;
  expect_error(outcome_of([&] { Redist rd(etest::block(n, p, r), etest::block(n + 1, p, r), MPI_COMM_WORLD); }),
               {std::to_string(n), std::to_string(n + 1)}, "source and destination sizes");
  // One rank believes in another global size (with two ranks or more).
  if (p >= 2) {
    const i64 mine = r == p - 1 ? n + 5 : n;
    expect_error(outcome_of([&] { Redist rd(etest::block(mine, p, r), etest::block(mine, p, r), MPI_COMM_WORLD); }),
                 {std::to_string(n + 5)}, "one rank with another global size");
  }
}

TEST(Errors, FieldBuffersTooShort) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 10 * p;  // every rank holds at least ten elements on each side
  const Decomp src = etest::block(n, p, r), dst = etest::cyclic(n, p, r);
  Redist rd(src, dst, MPI_COMM_WORLD);
  const std::size_t ns = static_cast<std::size_t>(src.size()), nd = static_cast<std::size_t>(dst.size());
  std::vector<double> s0(ns), d0(nd);
  std::vector<float> s1(ns), d1(nd);
  std::vector<std::int32_t> s2(ns), d2(nd);

  // Source of field 2 one element short.
  expect_error(outcome_of([&] {
                 rd.run({Field(s0, d0), Field(s1, d1),
                         Field(Type::i32, s2.data(), src.size() - 1, d2.data(), dst.size())});
               }),
               {"field 2", rank_label(r)}, "source buffer too short");
  // Destination of field 1 one element short, split phase.
  expect_error(outcome_of([&] {
                 rd.start({Field(s0, d0), Field(Type::f32, s1.data(), src.size(), d1.data(), dst.size() - 1),
                           Field(s2, d2)});
               }),
               {"field 1", rank_label(r)}, "destination buffer too short");
  // A null buffer.
  expect_error(outcome_of([&] {
                 rd.run({Field(Type::f64, nullptr, src.size(), d0.data(), dst.size())});
               }),
               {"field 0"}, "null source buffer");
  // None of that left an exchange in flight.
  expect_error(outcome_of([&] { rd.finish(); }), {rank_label(r)}, "finish with nothing in flight");
  EXPECT_TRUE(runs_fine(rd, src, dst));
}

TEST(Errors, ExchangeFieldsDifferFromSetUp) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 8 * p;
  const Decomp src = etest::cyclic(n, p, r), dst = etest::block(n, p, r);
  Redist rd(src, dst, MPI_COMM_WORLD);
  estuary::Exchange ex = rd.make_exchange({Type::f64, Type::i32});
  const std::size_t ns = static_cast<std::size_t>(src.size()), nd = static_cast<std::size_t>(dst.size());
  std::vector<double> s0(ns), d0(nd);
  std::vector<float> s1(ns), d1(nd);
  std::vector<std::int32_t> s2(ns), d2(nd);
  expect_error(outcome_of([&] { ex.run({Field(s0, d0)}); }), {"2", "1"}, "one field for two");
  expect_error(outcome_of([&] { ex.run({Field(s0, d0), Field(s2, d2), Field(s0, d0)}); }), {"2", "3"},
               "three fields for two");
  expect_error(outcome_of([&] { ex.run({Field(s0, d0), Field(s1, d1)}); }), {"field 1", "float", "int32"},
               "float where int32 was set up");
  expect_error(outcome_of([&] { ex.run({Field(s2, d2), Field(s0, d0)}); }), {"field 0"},
               "types in the wrong order");
  // Then a correct run.
  std::vector<i64> si = src.to_indices(), di = dst.to_indices();
  for (std::size_t k = 0; k < ns; ++k) {
    s0[k] = etest::value<double>(si[k], 0);
    s2[k] = etest::value<std::int32_t>(si[k], 1);
  }
  ex.run({Field(s0, d0), Field(s2, d2)});
  bool ok = true;
  for (std::size_t j = 0; j < nd; ++j)
    ok = ok && d0[j] == etest::value<double>(di[j], 0) && d2[j] == etest::value<std::int32_t>(di[j], 1);
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Errors, StartWhileInFlight) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 5 * p;
  const Decomp src = etest::block(n, p, r), dst = etest::cyclic(n, p, r);
  Redist rd(src, dst, MPI_COMM_WORLD);
  std::vector<double> s(static_cast<std::size_t>(src.size())), d(static_cast<std::size_t>(dst.size()));
  rd.start({Field(s, d)});
  expect_error(outcome_of([&] { rd.start({Field(s, d)}); }), {rank_label(r), "finish"}, "second start");
  rd.finish();
  estuary::Exchange ex = rd.make_exchange({Type::f64});
  ex.start({Field(s, d)});
  expect_error(outcome_of([&] { ex.start({Field(s, d)}); }), {rank_label(r)}, "exchange started twice");
  ex.finish();
  expect_error(outcome_of([&] { ex.finish(); }), {rank_label(r)}, "exchange finished twice");
  EXPECT_TRUE(runs_fine(rd, src, dst));
}

TEST(Errors, UnknownAlgorithm) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 4 * p;
  std::vector<std::string> needles{"no-such-schedule"};
  for (const std::string& name : estuary::schedule_names()) needles.push_back(name);
  RedistOptions opt;
  opt.algorithm = "no-such-schedule";
  expect_error(outcome_of([&] { Redist rd(etest::block(n, p, r), etest::cyclic(n, p, r), MPI_COMM_WORLD, opt); }),
               needles, "unknown algorithm");

  estuary::Plan plan(etest::block(n, p, r), etest::cyclic(n, p, r), MPI_COMM_WORLD);
  needles[0] = "bogus";
  expect_error(outcome_of([&] { estuary::make_schedule(plan, "bogus"); }), needles, "make_schedule");

  ::setenv("ESTUARY_SCHEDULE", "from-the-environment", 1);
  estuary::Settings::reload();
  needles[0] = "from-the-environment";
  expect_error(outcome_of([&] { Redist rd(etest::block(n, p, r), etest::cyclic(n, p, r), MPI_COMM_WORLD); }),
               needles, "unknown algorithm in ESTUARY_SCHEDULE");
  ::unsetenv("ESTUARY_SCHEDULE");
  estuary::Settings::reload();
}

TEST(Errors, ErrorCarriesParts) {
  // fault(), where() and fix() are kept apart, and what() holds them all.
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 10 * p;
  std::vector<i64> mine = etest::block(n, p, r).to_indices();
  if (r == 0) mine.erase(mine.begin());  // index 0 has no source
  bool ok = false;
  try {
    estuary::Plan plan(Decomp::indices(n, mine), etest::block(n, p, r), MPI_COMM_WORLD);
  } catch (const estuary::Error& e) {
    const std::string w = e.what();
    ok = !e.fault().empty() && w.find(e.fault()) != std::string::npos &&
         w.find(e.where()) != std::string::npos && w.find(e.fix()) != std::string::npos &&
         w.rfind("estuary: ", 0) == 0;
    EXPECT_TRUE(ok) << w;
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

// One rank alone passes a bad buffer: it throws at once, and the ranks waiting for its messages
// throw after ESTUARY_EXCHANGE_TIMEOUT seconds, naming it, instead of hanging. Twice: packed
// messages, then every message a derived datatype (ESTUARY_DATATYPE_MIN_RUN=1), whose pending
// requests, posted afresh at each run, the broken executor must free (run under ASan).
TEST(Errors, OneRankFailsOthersTimeOut) {
  const int p = etest::world_size(), r = etest::world_rank();
  if (p < 2) return;  // one rank has no peer to wait for
  for (const char* min_run : {"0", "1"}) {  // the second run's executors take new tags
  SCOPED_TRACE(std::string("ESTUARY_DATATYPE_MIN_RUN=") + min_run);
  setenv("ESTUARY_DATATYPE_MIN_RUN", min_run, 1);
  setenv("ESTUARY_EXCHANGE_TIMEOUT", "2", 1);
  estuary::Settings::reload();
  // cyclic -> block: rank 0 holds indices in every block, so all ranks expect it; its sends are
  // contiguous runs and its receives strided ones, both typed at ESTUARY_DATATYPE_MIN_RUN=1.
  const i64 n = 16 * p;
  const Decomp src = etest::cyclic(n, p, r), dst = etest::block(n, p, r);
  Redist rd(src, dst, MPI_COMM_WORLD);
  std::vector<double> a(static_cast<std::size_t>(src.size())), b(static_cast<std::size_t>(dst.size()));
  const Outcome o = outcome_of([&] {  // the executor, made by the first run, reads the limit
    if (r == 0) rd.run({Field(Type::f64, a.data(), src.size() - 1, b.data(), dst.size())});
    else rd.run({Field(a, b)});
  });
  unsetenv("ESTUARY_EXCHANGE_TIMEOUT");
  unsetenv("ESTUARY_DATATYPE_MIN_RUN");
  estuary::Settings::reload();
  if (r == 0) expect_error(o, {"field 0", "rank 0"}, "the failing rank");
  else expect_error(o, {"did not complete", "from rank(s) 0", "rank " + std::to_string(r)},
                    "a rank left waiting");
  if (r != 0) {  // the waiting ranks posted typed messages only when asked
    const estuary::ExchangeTimers& t = rd.prepare({Type::f64}).timers();
    EXPECT_EQ(t.typed_sends > 0 && t.typed_recvs > 0, min_run[0] == '1')
        << "rank " << r << ": typed sends " << t.typed_sends << ", receives " << t.typed_recvs;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  }
}

// Settings that decide which collectives a rank enters differ between ranks (an algorithm
// given, or ESTUARY_SCHEDULE set, on some ranks only; plan policies): every rank throws the
// same error naming the setting, rank 0's value and the first rank that differs — no hang.
TEST(Errors, SettingsDifferingBetweenRanks) {
  const int p = etest::world_size(), r = etest::world_rank();
  if (p < 2) return;
  const i64 n = 4 * p;
  const int odd = p - 1;  // the last rank is the odd one out
  RedistOptions opt;
  opt.algorithm = r == odd ? "butterfly" : "p2p";
  expect_error(outcome_of([&] { Redist rd(etest::block(n, p, r), etest::cyclic(n, p, r), MPI_COMM_WORLD, opt); }),
               {"schedule algorithm", "differs between ranks", "rank 0 has 'p2p'",
                "rank " + std::to_string(odd) + " has 'butterfly'"},
               "algorithm differing");

  if (r == odd) { ::setenv("ESTUARY_SCHEDULE", "ring-1", 1); estuary::Settings::reload(); }
  expect_error(outcome_of([&] { Redist rd(etest::block(n, p, r), etest::cyclic(n, p, r), MPI_COMM_WORLD); }),
               {"ESTUARY_SCHEDULE", "rank " + std::to_string(odd) + " has 'ring-1'"}, "ESTUARY_SCHEDULE on one rank");
  ::unsetenv("ESTUARY_SCHEDULE");
  estuary::Settings::reload();

  RedistOptions fill;
  fill.plan.missing = r == odd ? estuary::MissingPolicy::fill : estuary::MissingPolicy::error;
  expect_error(outcome_of([&] { Redist rd(etest::block(n, p, r), etest::cyclic(n, p, r), MPI_COMM_WORLD, fill); }),
               {"PlanOptions", "missing=error", "missing=fill"}, "plan policy differing");
  // The same settings everywhere: no error (the check itself must not cry wolf).
  Redist same(etest::block(n, p, r), etest::cyclic(n, p, r), MPI_COMM_WORLD);
  EXPECT_TRUE(runs_fine(same, etest::block(n, p, r), etest::cyclic(n, p, r)));
}

// Every ESTUARY_ variable goes through the one snapshot: a change of the environment takes effect
// at reload(), not before, and each value is parsed (and refused) as the part that uses it expects.
TEST(Errors, SettingsSnapshotHoldsEveryVariable) {
  const std::vector<std::pair<const char*, const char*>> vars{
      {"ESTUARY_CONFIG", "/run/a.yaml"},  {"ESTUARY_TIMELINE", "Off"}, {"ESTUARY_TIMELINE_MAX_EVENTS", "12"},
      {"ESTUARY_NC4_IN_TURN", "1"},       {"ESTUARY_IO_FAULT", "record=3"}, {"ESTUARY_SIMD", "generic"},
      {"ESTUARY_DATATYPE_MIN_RUN", "4096"}, {"ESTUARY_ROW_WIDTH", "off"}};
  for (const auto& [name, value] : vars) ::unsetenv(name);
  const estuary::Settings& before = estuary::Settings::reload();
  bool ok = !before.config && before.timeline_on(true) && !before.timeline_on(false) &&
            before.timeline_max_events_or(7) == 7 && !before.nc4_in_turn && !before.io_fault && !before.simd_generic &&
            before.datatype_min_run_or(5) == 5 && before.row_width;
  for (const auto& [name, value] : vars) ::setenv(name, value, 1);
  ok = ok && !estuary::Settings::get().config;  // not yet: the snapshot is taken once
  const estuary::Settings& s = estuary::Settings::reload();
  ok = ok && s.config == std::optional<std::string>("/run/a.yaml") && !s.timeline_on(true) &&
       s.timeline_max_events_or(7) == 12 && s.nc4_in_turn && s.io_fault == std::optional<std::string>("record=3") &&
       s.simd_generic && s.datatype_min_run_or(5) == 4096 && !s.row_width;
  ::setenv("ESTUARY_TIMELINE", "maybe", 1);
  ::setenv("ESTUARY_TIMELINE_MAX_EVENTS", "-1", 1);
  ::setenv("ESTUARY_DATATYPE_MIN_RUN", "1k", 1);
  const estuary::Settings& bad = estuary::Settings::reload();
  expect_error(outcome_of([&] { (void)bad.timeline_on(false); }), {"ESTUARY_TIMELINE=maybe"}, "timeline switch");
  expect_error(outcome_of([&] { (void)bad.timeline_max_events_or(1); }), {"ESTUARY_TIMELINE_MAX_EVENTS=-1"},
               "timeline event count");
  expect_error(outcome_of([&] { (void)bad.datatype_min_run_or(1); }), {"ESTUARY_DATATYPE_MIN_RUN=1k", "bytes"},
               "datatype run length");
  for (const auto& [name, value] : vars) ::unsetenv(name);
  estuary::Settings::reload();
  EXPECT_TRUE(etest::all_ok(ok));
}
