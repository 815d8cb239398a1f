// The coupling timeline (src/couple/timeline.{hpp,cpp}, docs/user-guide.md "Timeline (LUCIA)"):
// a coupled run with it on leaves one file per component whose events are consistent with each
// other and with what the models did; with it off nothing is written; the switches (YAML key,
// namcouple $NLOGPRT, ESTUARY_TIMELINE) turn it on and off.
//
// The files are read back here with a small reader of their own (not the library's writer,
// nor the Python analysis): every line a JSON value, the events arrays of numbers with one
// string, the kind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "couple_test_util.hpp"
#include "estuary/couple.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/settings.hpp"

using namespace estuary;
using namespace ctest_util;

namespace {

constexpr i64 kNs = 12 * 10, kNd = 8 * 9;
constexpr double kAtmDt = 1200, kOcnDt = 3600, kPeriod = 3600, kRuntime = 6 * 3600;

struct Event {
  int rank = 0;
  std::string kind;
  int coupling = 0, field = 0;
  double time = 0, enter = 0, leave = 0, wait = 0, remap = 0, transfer = 0, io = 0;
  int info = 0;
};

struct RankSummary {
  int rank = -1;
  long events = -1, dropped = -1;
  double end = 0;
};

struct File {
  std::string header;
  std::vector<RankSummary> ranks;
  std::vector<Event> events;
};

// The number after "key": in a JSON object line (enough for the summaries and the header).
double number_after(const std::string& line, const std::string& key) {
  const std::size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) throw std::runtime_error("no key " + key + " in " + line);
  return std::stod(line.substr(at + key.size() + 3));
}

File read_file(const std::string& path) {
  File f;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::getline(in, f.header);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '{') {
      RankSummary s;
      s.rank = static_cast<int>(number_after(line, "rank"));
      s.events = static_cast<long>(number_after(line, "events"));
      s.dropped = static_cast<long>(number_after(line, "dropped"));
      s.end = number_after(line, "end");
      f.ranks.push_back(s);
      continue;
    }
    if (line.front() != '[' || line.back() != ']') throw std::runtime_error("not an event: " + line);
    std::string body = line.substr(1, line.size() - 2);
    std::vector<std::string> v;
    std::stringstream ss(body);
    std::string item;
    while (std::getline(ss, item, ',')) v.push_back(item);
    if (v.size() != 12) throw std::runtime_error("event of " + std::to_string(v.size()) + " entries: " + line);
    Event e;
    e.rank = std::stoi(v[0]);
    e.kind = v[1].substr(1, v[1].size() - 2);
    e.coupling = std::stoi(v[2]);
    e.field = std::stoi(v[3]);
    e.time = std::stod(v[4]);
    e.enter = std::stod(v[5]);
    e.leave = std::stod(v[6]);
    e.wait = std::stod(v[7]);
    e.remap = std::stod(v[8]);
    e.transfer = std::stod(v[9]);
    e.io = std::stod(v[10]);
    e.info = std::stoi(v[11]);
    f.events.push_back(e);
  }
  return f;
}

// Two components on 2+ ranks ("atm" on the first half, "ocn" on the rest), one ("solo") on one:
//   coupling 0: atm A_T -> ocn O_T, a weight file, every hour
//   coupling 1: ocn O_S -> atm A_S, lag 3600 (the ocean's step), LOCTRANS average
//   coupling 2: atm A_U:A_V -> ocn O_U:O_V, one exchange for both
// The atmosphere steps every 20 minutes and "computes" 2 ms a step; the ocean every hour and
// not at all, so it waits for the atmosphere.
std::string config(const std::string& timeline_line) {
  return "runtime: " + std::to_string(static_cast<long>(kRuntime)) + "\nno_restart: true\ntimeout: 60\n" + timeline_line +
         "couplings:\n"
         "  - source: {fields: [A_T], grid: agrd}\n"
         "    target: {fields: [O_T], grid: ogrd}\n"
         "    period: 3600\n"
         "    transforms:\n"
         "      - mapping: {file: w_a2o.nc}\n"
         "  - source: {fields: [O_S], grid: ogrd}\n"
         "    target: {fields: [A_S], grid: agrd}\n"
         "    period: 3600\n"
         "    lag: 3600\n"
         "    restart: ocn_rst.nc\n"
         "    transforms:\n"
         "      - loctrans: average\n"
         "      - mapping: {file: w_o2a.nc, location: dst}\n"
         "  - source: {fields: [A_U, A_V], grid: agrd}\n"
         "    target: {fields: [O_U, O_V], grid: ogrd}\n"
         "    period: 3600\n"
         "    transforms:\n"
         "      - mapping: {file: w_a2o.nc, location: dst, order: sum}\n";
}

// The run folder with the configuration (`timeline_line`: "" or "timeline: ...\n") and weights.
std::string prepare(const std::string& name, const std::string& text) {
  const std::string dir = fresh_dir("timeline_" + name);
  write_synthetic_weights(dir + "/w_a2o.nc", kNs, kNd);
  write_synthetic_weights(dir + "/w_o2a.nc", kNd, kNs);
  write_text(dir + "/estuary.yaml", text);
  return dir;
}

// The two models' loops (get first, then compute, then put, as the demo's toy).
void run_models(const std::string& dir, const std::string& config_file = "estuary.yaml") {
  const TwoSides s = two_sides();
  ComponentOptions o;
  o.config = dir + "/" + config_file;
  o.directory = dir;
  Component comp(s.comp, o);
  const Decomp ad = s.atm ? gen::block(kNs, s.index, s.count) : Decomp::empty(kNs);
  const Decomp od = s.ocn ? gen::cyclic(kNd, s.index, s.count) : Decomp::empty(kNd);
  std::vector<int> a_out, a_in, o_out, o_in;
  if (s.atm) {
    const int p = comp.def_partition(ad, "agrd");
    for (const char* f : {"A_T", "A_U", "A_V"}) a_out.push_back(comp.def_var(f, p, Direction::out));
    a_in.push_back(comp.def_var("A_S", p, Direction::in));
  }
  if (s.ocn) {
    const int p = comp.def_partition(od, "ogrd");
    o_out.push_back(comp.def_var("O_S", p, Direction::out));
    for (const char* f : {"O_T", "O_U", "O_V"}) o_in.push_back(comp.def_var(f, p, Direction::in));
  }
  comp.enddef();
  std::vector<double> av(static_cast<std::size_t>(ad.size()), 1.0), ov(static_cast<std::size_t>(od.size()), 2.0);
  // On one rank both models step in one loop: the ocean's steps at its own times.
  for (double t = 0; t < kRuntime; t += kAtmDt) {
    if (s.atm) {
      for (int v : a_in) comp.get(v, t, av);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      for (int v : a_out) comp.put(v, t, av);
    }
    if (s.ocn && std::fmod(t, kOcnDt) == 0) {
      for (int v : o_in) comp.get(v, t, ov);
      for (int v : o_out) comp.put(v, t, ov);
    }
  }
  comp.terminate();
}

std::vector<std::string> timeline_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("timeline_", 0) == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every rank sees the same answer from rank 0's look at the folder.
bool root_says(bool v) {
  int x = v ? 1 : 0;
  MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return x != 0;
}

class Timeline : public testing::Test {
 protected:
  void SetUp() override {
    unsetenv("ESTUARY_TIMELINE");
    unsetenv("ESTUARY_TIMELINE_MAX_EVENTS");
    estuary::Settings::reload();
  }
  void TearDown() override {
    unsetenv("ESTUARY_TIMELINE");
    unsetenv("ESTUARY_TIMELINE_MAX_EVENTS");
    estuary::Settings::reload();
  }
};

}  // namespace

// A run with `timeline: true`: one file per component, whose events are consistent.
TEST_F(Timeline, RecordsConsistentEvents) {
  const std::string dir = prepare("on", config("timeline: true\n"));
  run_models(dir);
  const int p = world_size();
  if (world_rank() != 0) return;

  const std::vector<std::string> comps = p == 1 ? std::vector<std::string>{"solo"} : std::vector<std::string>{"atm", "ocn"};
  std::vector<std::string> want;
  for (const auto& c : comps) want.push_back("timeline_" + c + ".jsonl");
  ASSERT_EQ(timeline_files(dir), want);  // and no temporary file left behind
  std::map<std::string, File> files;
  for (const auto& c : comps) files[c] = read_file(dir + "/timeline_" + c + ".jsonl");
  const std::map<std::string, int> ranks = p == 1 ? std::map<std::string, int>{{"solo", 1}}
                                                  : std::map<std::string, int>{{"atm", p / 2}, {"ocn", p - p / 2}};
  const std::string atm = p == 1 ? "solo" : "atm", ocn = p == 1 ? "solo" : "ocn";
  const double lag[3] = {0, 3600, 0};
  const int src_fields[3] = {1, 1, 2};

  for (const auto& [name, f] : files) {
    SCOPED_TRACE(name);
    EXPECT_NE(f.header.find("\"format\":\"estuary-timeline\""), std::string::npos);
    EXPECT_NE(f.header.find("\"component\":\"" + name + "\""), std::string::npos);
    EXPECT_EQ(static_cast<int>(number_after(f.header, "ranks")), ranks.at(name));
    EXPECT_EQ(number_after(f.header, "runtime"), kRuntime);
    for (int id = 0; id < 3; ++id) EXPECT_NE(f.header.find("{\"id\":" + std::to_string(id) + ","), std::string::npos) << id;
    ASSERT_EQ(static_cast<int>(f.ranks.size()), ranks.at(name));
    for (int r = 0; r < ranks.at(name); ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      EXPECT_EQ(f.ranks[static_cast<std::size_t>(r)].rank, r);  // blocks in rank order
      EXPECT_EQ(f.ranks[static_cast<std::size_t>(r)].dropped, 0);
      std::vector<Event> mine;
      for (const Event& e : f.events)
        if (e.rank == r) mine.push_back(e);
      EXPECT_EQ(static_cast<long>(mine.size()), f.ranks[static_cast<std::size_t>(r)].events);
      ASSERT_GE(mine.size(), 3u);
      // The set-up ends at the common start; the run ends with terminate and the restarts.
      EXPECT_EQ(mine.front().kind, "enddef");
      EXPECT_LE(mine.front().enter, 0.0);
      EXPECT_EQ(mine.front().leave, 0.0);
      EXPECT_EQ(mine[mine.size() - 2].kind, "terminate");
      EXPECT_EQ(mine.back().kind, "restart");
      const double run = mine[mine.size() - 2].enter;
      double waited = 0;
      for (std::size_t k = 0; k < mine.size(); ++k) {
        const Event& e = mine[k];
        SCOPED_TRACE("event " + std::to_string(k) + " " + e.kind + " t=" + std::to_string(e.time));
        EXPECT_LE(e.enter, e.leave);
        if (k > 0) {
          EXPECT_GE(e.enter, mine[k - 1].leave - 1e-9);  // in time order, calls one after the other
        }
        for (double x : {e.wait, e.remap, e.transfer, e.io}) EXPECT_GE(x, 0.0);
        // Each a part of the call, and together no more than it (1 ns rounding each).
        EXPECT_LE(e.wait + e.remap + e.transfer + e.io, e.leave - e.enter + 5e-9);
        if (e.kind == "put" || e.kind == "get") {
          EXPECT_GE(e.enter, 0.0);
          EXPECT_LE(e.leave, run + 1e-9);
          waited += e.wait;
        }
      }
      EXPECT_LE(waited, run);
      EXPECT_LE(f.ranks[static_cast<std::size_t>(r)].end, 1e6);
    }
  }

  // The calls each model made: the atmosphere 18 steps, the ocean 6.
  const auto count = [&](const std::string& comp, const std::string& kind, int coupling, int rank) {
    long n = 0;
    for (const Event& e : files.at(comp).events) n += e.rank == rank && e.kind == kind && e.coupling == coupling;
    return n;
  };
  for (int r = 0; r < ranks.at(atm); ++r) {
    EXPECT_EQ(count(atm, "put", 0, r), 18);
    EXPECT_EQ(count(atm, "put", 2, r), 36);  // two fields
    EXPECT_EQ(count(atm, "get", 1, r), 18);
  }
  for (int r = 0; r < ranks.at(ocn); ++r) {
    EXPECT_EQ(count(ocn, "get", 0, r), 6);
    EXPECT_EQ(count(ocn, "get", 2, r), 12);
    EXPECT_EQ(count(ocn, "put", 1, r), 6);
  }

  // Every put that sent has, on every rank of the target, a get of the same coupling and field
  // at its time + lag that received; every get that received has its put on every source rank.
  const auto find = [&](const std::string& comp, int rank, const std::string& kind, int c, int fld, double t) {
    for (const Event& e : files.at(comp).events)
      if (e.rank == rank && e.kind == kind && e.coupling == c && e.field == fld && e.time == t) return &e;
    return static_cast<const Event*>(nullptr);
  };
  const int kSent = static_cast<int>(Info::sent), kRecvd = static_cast<int>(Info::recvd);
  int matched = 0;
  for (int c = 0; c < 3; ++c) {
    const std::string src = c == 1 ? ocn : atm, dst = c == 1 ? atm : ocn;
    for (const Event& e : files.at(src).events) {
      if (e.kind != "put" || e.coupling != c || e.info != kSent) continue;
      for (int r = 0; r < ranks.at(dst); ++r) {
        const Event* g = find(dst, r, "get", c, e.field, e.time + lag[c]);
        if (e.time + lag[c] >= kRuntime) {
          ADD_FAILURE() << "a put at " << e.time << " sent past the run's end";
          continue;
        }
        ASSERT_NE(g, nullptr) << "coupling " << c << " put at " << e.time << " has no get on " << dst << " rank " << r;
        EXPECT_EQ(g->info, kRecvd);
        ++matched;
      }
    }
    for (const Event& g : files.at(dst).events) {
      if (g.kind != "get" || g.coupling != c || g.info != kRecvd) continue;
      for (int r = 0; r < ranks.at(src); ++r) {
        const Event* e = find(src, r, "put", c, g.field, g.time - lag[c]);
        ASSERT_NE(e, nullptr) << "coupling " << c << " get at " << g.time << " has no put on " << src << " rank " << r;
        EXPECT_EQ(e->info, kSent);
      }
    }
  }
  // Sent puts per source rank: 6 hours x fields (the lagged coupling's last put goes to the
  // restart file instead), times the target's ranks.
  const int expect = (6 * src_fields[0]) * ranks.at(atm) * ranks.at(ocn) + (5 * src_fields[1]) * ranks.at(ocn) * ranks.at(atm) +
                     (6 * src_fields[2]) * ranks.at(atm) * ranks.at(ocn);
  EXPECT_EQ(matched, expect);

  // The ocean does nothing but wait for the atmosphere's 2 ms steps.
  if (p > 1) {
    double ocean_wait = 0;
    for (const Event& e : files.at(ocn).events)
      if (e.kind == "get") ocean_wait += e.wait;
    EXPECT_GT(ocean_wait, 0.001 * ranks.at(ocn));
  }
}

// Off (no key, no $NLOGPRT level, no ESTUARY_TIMELINE): nothing is written.
TEST_F(Timeline, OffWritesNothing) {
  const std::string dir = prepare("off", config(""));
  run_models(dir);
  const std::string dir2 = prepare("off_false", config("timeline: false\n"));
  run_models(dir2);
  bool none = true;
  if (world_rank() == 0) none = timeline_files(dir).empty() && timeline_files(dir2).empty();
  EXPECT_TRUE(root_says(none));
}

// ESTUARY_TIMELINE overrides the configuration both ways; a value that is neither stops enddef.
TEST_F(Timeline, EnvironmentOverrides) {
  setenv("ESTUARY_TIMELINE", "1", 1);
  estuary::Settings::reload();
  const std::string on = prepare("env_on", config(""));
  run_models(on);
  setenv("ESTUARY_TIMELINE", "off", 1);
  estuary::Settings::reload();
  const std::string off = prepare("env_off", config("timeline: true\n"));
  run_models(off);
  bool ok = true;
  if (world_rank() == 0) ok = !timeline_files(on).empty() && timeline_files(off).empty();
  EXPECT_TRUE(root_says(ok));

  setenv("ESTUARY_TIMELINE", "maybe", 1);
  estuary::Settings::reload();
  const std::string bad = prepare("env_bad", config(""));
  try {
    run_models(bad);
    ADD_FAILURE() << "ESTUARY_TIMELINE=maybe accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ESTUARY_TIMELINE"), std::string::npos) << e.what();
  }
}

// A namcouple turns it on as OASIS turns LUCIA on: a negative second number under $NLOGPRT.
TEST_F(Timeline, NamcoupleNegativeTimerLevel) {
  const std::string dir = prepare("namcouple", config(""));
  for (const char* level : {"1 -1", "1 2"}) {
    SCOPED_TRACE(level);
    for (const auto& f : timeline_files(dir))
      if (world_rank() == 0) std::filesystem::remove(dir + "/" + f);
    MPI_Barrier(MPI_COMM_WORLD);
    write_text(dir + "/namcouple",
               std::string(" $NFIELDS\n 1\n $END\n $RUNTIME\n 21600\n $END\n $NLOGPRT\n ") + level +
                   "\n $END\n $NNOREST\n T\n $END\n $STRINGS\n"
                   "A_T O_T 1 3600 1 rst.nc EXPORTED\n12 10 8 9 agrd ogrd LAG=0\nR 0 R 0\nMAPPING\nw_a2o.nc\n $END\n");
    const TwoSides s = two_sides();
    ComponentOptions o;
    o.config = dir + "/namcouple";
    o.directory = dir;
    Component comp(s.comp, o);
    int a = -1, g = -1;
    const Decomp ad = s.atm ? gen::block(kNs, s.index, s.count) : Decomp::empty(kNs);
    const Decomp od = s.ocn ? gen::cyclic(kNd, s.index, s.count) : Decomp::empty(kNd);
    if (s.atm) a = comp.def_var("A_T", comp.def_partition(ad, "agrd"), Direction::out);
    if (s.ocn) g = comp.def_var("O_T", comp.def_partition(od, "ogrd"), Direction::in);
    comp.enddef();
    EXPECT_EQ(comp.setup().timeline, std::string(level) == "1 -1");
    EXPECT_EQ(comp.setup().timer_level, std::string(level) == "1 -1" ? 0 : 2);
    std::vector<double> av(static_cast<std::size_t>(ad.size()), 1.0), ov(static_cast<std::size_t>(od.size()));
    for (double t = 0; t < kRuntime; t += kPeriod) {
      if (s.atm) comp.put(a, t, av);
      if (s.ocn) comp.get(g, t, ov);
    }
    comp.terminate();
    bool ok = true;
    if (world_rank() == 0) ok = timeline_files(dir).empty() == (std::string(level) != "1 -1");
    EXPECT_TRUE(root_says(ok));
  }
}

// Past ESTUARY_TIMELINE_MAX_EVENTS later events are counted, not kept, and the file says so.
TEST_F(Timeline, EventLimitDropsAndCounts) {
  setenv("ESTUARY_TIMELINE_MAX_EVENTS", "10", 1);
  estuary::Settings::reload();
  const std::string dir = prepare("limit", config("timeline: true\n"));
  run_models(dir);
  if (world_rank() != 0) return;
  for (const auto& name : timeline_files(dir)) {
    const File f = read_file(dir + "/" + name);
    for (const RankSummary& s : f.ranks) {
      EXPECT_EQ(s.events, 10) << name;
      EXPECT_GT(s.dropped, 0) << name;
    }
  }
}
