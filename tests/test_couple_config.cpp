// The coupler's configuration readers: a namcouple written as OASIS users write them and its
// YAML equivalent give the same CouplingSetup with the values the files say; malformed files
// fail with the file, the exact line and what was expected there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "estuary/couple_config.hpp"
#include "estuary/error.hpp"
#include "estuary/settings.hpp"

namespace fs = std::filesystem;
using namespace estuary;

namespace {

const std::string kData = ESTUARY_CONFIG_DATA;

// A fresh directory per test for the files the tests write.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("ESTUARY_COUPLE_TIMEOUT");  // the readers apply it; tests set it themselves
    estuary::Settings::reload();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("estuary_config_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv("ESTUARY_COUPLE_TIMEOUT");
    estuary::Settings::reload();
    fs::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  fs::path dir_;
};

// Runs `read` on `path` and checks the Error: the place is exactly `where` and the message
// says `expected`.
template <class Read>
void expect_error(Read read, const std::string& path, const std::string& where,
                  const std::string& expected) {
  try {
    read(path);
    ADD_FAILURE() << "no error for " << path << " (expected: " << expected << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), where) << e.what();
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << "message: " << e.what() << "\nshould contain: " << expected;
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST_F(ConfigTest, NamcoupleAndYamlGiveTheSameSetup) {
  const CouplingSetup nam = read_namcouple(kData + "/namcouple");
  const CouplingSetup yml = read_coupling_yaml(kData + "/couple.yaml");
  ASSERT_EQ(nam.couplings.size(), 10u);
  ASSERT_EQ(yml.couplings.size(), 10u);
  for (std::size_t i = 0; i < nam.couplings.size(); ++i)
    EXPECT_TRUE(nam.couplings[i] == yml.couplings[i])
        << "coupling " << i << ": " << nam.couplings[i].origin << " vs "
        << yml.couplings[i].origin;
  EXPECT_TRUE(nam == yml);
  EXPECT_EQ(nam.path, kData + "/namcouple");
  EXPECT_EQ(yml.path, kData + "/couple.yaml");
}

TEST_F(ConfigTest, NamcoupleValuesAreWhatTheFileSays) {
  const CouplingSetup s = read_namcouple(kData + "/namcouple");
  EXPECT_EQ(s.runtime, 86400.0);
  EXPECT_EQ(s.log_level, 1);
  EXPECT_TRUE(s.no_restart);
  EXPECT_EQ(s.map_decomposition, "decomp_wghtfile");
  EXPECT_EQ(s.weight_option, "abort_on_bad_index");
  EXPECT_EQ(s.timeout, 600.0);
  EXPECT_EQ(s.nfields, 10);
  EXPECT_EQ(s.timer_level, 0);
  ASSERT_EQ(s.couplings.size(), 10u);

  // 1: multi-field EXPOUT with sizes, LAG, SEQ, MAPPING dst opt, CONSERV reprosum, BLASNEW.
  const CouplingConfig& c1 = s.couplings[0];
  EXPECT_EQ(c1.origin, kData + "/namcouple:50");
  EXPECT_EQ(c1.src_fields, (std::vector<std::string>{"O_SSTSST", "O_SSSSSS"}));
  EXPECT_EQ(c1.dst_fields, (std::vector<std::string>{"A_SST", "A_SSS"}));
  EXPECT_EQ(c1.period, 3600.0);
  EXPECT_EQ(c1.lag, 1200.0);
  EXPECT_EQ(c1.seq, 1);
  EXPECT_EQ(c1.status, FieldStatus::expout);
  EXPECT_EQ(c1.restart_file, "sstoc.nc");
  EXPECT_EQ(c1.src_grid, (GridRef{"torc", 182, 149, Periodicity::periodic, 2}));
  EXPECT_EQ(c1.dst_grid, (GridRef{"lmdz", 96, 72, Periodicity::periodic, 0}));
  EXPECT_EQ(c1.transforms,
            (std::vector<std::string>{"LOCTRANS", "MAPPING", "CONSERV", "BLASNEW"}));
  EXPECT_EQ(c1.loctrans, LocTrans::average);
  ASSERT_TRUE(c1.mapping);
  EXPECT_EQ(c1.mapping->file, "rmp_torc_to_lmdz_DISTWGT.nc");
  EXPECT_EQ(c1.mapping->location, RemapLocation::dst);
  EXPECT_EQ(c1.mapping->order, RemapOrder::sum);
  ASSERT_TRUE(c1.conserv);
  EXPECT_EQ(c1.conserv->mode, ConservMode::global);
  EXPECT_EQ(c1.conserv->method, SumMethod::reprosum);
  ASSERT_TRUE(c1.blasnew);
  EXPECT_EQ(c1.blasnew->scale, 2.0);
  EXPECT_EQ(c1.blasnew->add, -273.15);
  EXPECT_FALSE(c1.blasold);
  EXPECT_FALSE(c1.scripr);
  EXPECT_FALSE(c1.checkin);

  // 2: grid names only, negative lag, BLASOLD's last term (as OASIS), DISTWGT, GLBPOS opt.
  const CouplingConfig& c2 = s.couplings[1];
  EXPECT_EQ(c2.status, FieldStatus::exported);
  EXPECT_EQ(c2.period, 3600.0);
  EXPECT_EQ(c2.lag, -1200.0);
  EXPECT_EQ(c2.seq, 2);
  EXPECT_EQ(c2.src_grid, (GridRef{"lmdz", 0, 0, Periodicity::periodic, 0}));
  EXPECT_EQ(c2.dst_grid, (GridRef{"torc", 0, 0, Periodicity::periodic, 2}));
  EXPECT_EQ(c2.loctrans, LocTrans::accumul);
  EXPECT_TRUE(c2.checkin);
  EXPECT_FALSE(c2.checkout);
  ASSERT_TRUE(c2.blasold);
  EXPECT_EQ(c2.blasold->scale, 0.5);
  EXPECT_EQ(c2.blasold->add, 0.25);
  ASSERT_TRUE(c2.scripr);
  EXPECT_EQ(c2.scripr->method, "DISTWGT");
  EXPECT_EQ(c2.scripr->grid_type, "LR");
  EXPECT_EQ(c2.scripr->field_type, "SCALAR");
  EXPECT_EQ(c2.scripr->restriction, "LATLON");
  EXPECT_EQ(c2.scripr->bins, 1);
  EXPECT_EQ(c2.scripr->neighbors, 4);
  ASSERT_TRUE(c2.conserv);
  EXPECT_EQ(c2.conserv->mode, ConservMode::glbpos);
  EXPECT_EQ(c2.conserv->method, SumMethod::lsum8);  // OASIS's opt
  EXPECT_FALSE(c2.mapping);

  // 3: BILINEAR; BLASNEW without terms; CHECKOUT.
  const CouplingConfig& c3 = s.couplings[2];
  EXPECT_EQ(c3.status, FieldStatus::exported);
  EXPECT_EQ(c3.period, 7200.0);
  EXPECT_EQ(c3.lag, 0.0);
  ASSERT_TRUE(c3.scripr);
  EXPECT_EQ(c3.scripr->method, "BILINEAR");
  ASSERT_TRUE(c3.blasnew);
  EXPECT_EQ(c3.blasnew->scale, 1.5);
  EXPECT_EQ(c3.blasnew->add, 0.0);
  EXPECT_TRUE(c3.checkout);

  // 4: regional without overlap; SCRIPR CONSERV.
  const CouplingConfig& c4 = s.couplings[3];
  EXPECT_EQ(c4.status, FieldStatus::expout);
  EXPECT_EQ(c4.seq, 3);
  EXPECT_EQ(c4.src_grid, (GridRef{"lmdz", 0, 0, Periodicity::regional, 0}));
  EXPECT_EQ(c4.loctrans, LocTrans::t_max);
  ASSERT_TRUE(c4.scripr);
  EXPECT_EQ(c4.scripr->method, "CONSERV");
  EXPECT_EQ(c4.scripr->normalization, "FRACNNEI");
  EXPECT_EQ(c4.scripr->order, "FIRST");

  // 5: INPUT: the file, no grids, no transformations.
  const CouplingConfig& c5 = s.couplings[4];
  EXPECT_EQ(c5.status, FieldStatus::input);
  EXPECT_EQ(c5.input_file, "runoff.nc");
  EXPECT_EQ(c5.restart_file, "");
  EXPECT_EQ(c5.period, 86400.0);
  EXPECT_TRUE(c5.transforms.empty());
  EXPECT_EQ(c5.src_grid.name, "");

  // 6: OUTPUT, short form: no restart file; line 2 with grid names.
  const CouplingConfig& c6 = s.couplings[5];
  EXPECT_EQ(c6.status, FieldStatus::output);
  EXPECT_EQ(c6.restart_file, "");
  EXPECT_EQ(c6.period, 1800.0);
  EXPECT_EQ(c6.src_grid.name, "lmdz");
  EXPECT_EQ(c6.dst_grid.name, "lmdz");
  EXPECT_EQ(c6.loctrans, LocTrans::t_min);

  // 7: OUTPUT with a restart file and period ONCE = $RUNTIME.
  const CouplingConfig& c7 = s.couplings[6];
  EXPECT_EQ(c7.status, FieldStatus::output);
  EXPECT_EQ(c7.restart_file, "ice.nc");
  EXPECT_EQ(c7.period, 86400.0);
  EXPECT_EQ(c7.loctrans, LocTrans::instant);

  // 8: MAPPING with OASIS's defaults (src, bfb); R 0 R 0.
  const CouplingConfig& c8 = s.couplings[7];
  ASSERT_TRUE(c8.mapping);
  EXPECT_EQ(c8.mapping->file, "rmp_lmdz_to_torc.nc");
  EXPECT_EQ(c8.mapping->location, RemapLocation::src);
  EXPECT_EQ(c8.mapping->order, RemapOrder::bfb);
  EXPECT_EQ(c8.src_grid.periodicity, Periodicity::regional);
  EXPECT_FALSE(c8.loctrans);

  // 9: IGNORED read as EXPORTED, without line 3, only LOCTRANS (what OASIS3-MCT reads).
  const CouplingConfig& c9 = s.couplings[8];
  EXPECT_EQ(c9.status, FieldStatus::exported);
  EXPECT_EQ(c9.src_grid, (GridRef{"lmdz", 0, 0, Periodicity::regional, 0}));
  EXPECT_EQ(c9.transforms, std::vector<std::string>{"LOCTRANS"});
  EXPECT_EQ(c9.loctrans, LocTrans::average);

  // 10: IGNOUT read as EXPOUT, no transformation; the old line 3 is read.
  const CouplingConfig& c10 = s.couplings[9];
  EXPECT_EQ(c10.status, FieldStatus::expout);
  EXPECT_EQ(c10.dst_grid.periodicity, Periodicity::periodic);
  EXPECT_TRUE(c10.transforms.empty());
}

TEST_F(ConfigTest, NamcoupleNotesObsoleteBlocksAndOldStatuses) {
  const CouplingSetup s = read_namcouple(kData + "/namcouple");
  auto noted = [&](const std::string& text) {
    for (const std::string& n : s.notes)
      if (n.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(noted("$SEQMODE")) << ::testing::PrintToString(s.notes);
  EXPECT_TRUE(noted("$CHANNEL"));
  EXPECT_TRUE(noted("$JOBNAME"));
  EXPECT_TRUE(noted("IGNORED read as EXPORTED"));
  EXPECT_TRUE(noted("IGNOUT read as EXPOUT"));
  EXPECT_TRUE(noted("line 3 of an IGNOUT entry, which OASIS3-MCT does not read"));
  EXPECT_FALSE(noted("$NFIELDS"));  // 10 entries, as $NFIELDS says
  EXPECT_FALSE(noted("read by no keyword"));  // every line is some keyword's
}

TEST_F(ConfigTest, YamlComponentsTimeoutAndDefaults) {
  const std::string p = write("c.yaml", R"(runtime: 7200.5
timeout: 60
couplings:
  - source: {component: ocn, field: SST, grid: torc}
    target: {component: atm, fields: [ASST], grid: lmdz}
    period: 1800
    transforms:
      - conserv: basbal
      - mapping: {file: w.nc, order: opt}
)");
  const CouplingSetup s = read_coupling_yaml(p);
  EXPECT_EQ(s.runtime, 7200.5);
  EXPECT_EQ(s.timeout, 60.0);
  EXPECT_EQ(s.log_level, 0);
  EXPECT_FALSE(s.no_restart);
  ASSERT_EQ(s.couplings.size(), 1u);
  const CouplingConfig& c = s.couplings[0];
  EXPECT_EQ(c.src_component, "ocn");
  EXPECT_EQ(c.dst_component, "atm");
  EXPECT_EQ(c.src_fields, std::vector<std::string>{"SST"});
  EXPECT_EQ(c.dst_fields, std::vector<std::string>{"ASST"});
  EXPECT_EQ(c.status, FieldStatus::exported);
  EXPECT_EQ(c.lag, 0.0);
  EXPECT_EQ(c.origin, p + ":4");
  EXPECT_EQ(c.transforms, (std::vector<std::string>{"CONSERV", "MAPPING"}));
  ASSERT_TRUE(c.conserv);
  EXPECT_EQ(c.conserv->mode, ConservMode::basbal);
  EXPECT_EQ(c.conserv->method, SumMethod::gather);  // OASIS's default, bfb
  ASSERT_TRUE(c.mapping);
  EXPECT_EQ(c.mapping->location, RemapLocation::src);
  EXPECT_EQ(c.mapping->order, RemapOrder::sum);
}

TEST_F(ConfigTest, EnvironmentOverridesTheTimeout) {
  setenv("ESTUARY_COUPLE_TIMEOUT", "2.5", 1);
  estuary::Settings::reload();
  EXPECT_EQ(read_namcouple(kData + "/namcouple").timeout, 2.5);
  EXPECT_EQ(read_coupling_yaml(kData + "/couple.yaml").timeout, 2.5);
  setenv("ESTUARY_COUPLE_TIMEOUT", "soon", 1);
  estuary::Settings::reload();
  EXPECT_THROW(read_namcouple(kData + "/namcouple"), Error);
}

// The timeline switch (docs/user-guide.md "Timeline (LUCIA)"): YAML `timeline`, and in a
// namcouple a negative timer level under $NLOGPRT, as OASIS3-MCT turns LUCIA on.
TEST_F(ConfigTest, TimelineSwitch) {
  const std::string base = "runtime: 3600\ncouplings:\n  - source: {field: A, grid: ga}\n"
                           "    target: {field: B, grid: gb}\n    period: 3600\n";
  EXPECT_FALSE(read_coupling_yaml(write("none.yaml", base)).timeline);
  EXPECT_TRUE(read_coupling_yaml(write("on.yaml", "timeline: true\n" + base)).timeline);
  EXPECT_FALSE(read_coupling_yaml(write("off.yaml", "timeline: false\n" + base)).timeline);
  const std::string bad = write("bad.yaml", "timeline: maybe\n" + base);
  expect_error(read_coupling_yaml, bad, bad + ":1, key timeline", "timeline");
  const auto nam = [&](const std::string& name, const std::string& levels) {
    return read_namcouple(write(name, " $NFIELDS\n 1\n $END\n $RUNTIME\n 3600\n $END\n $NLOGPRT\n " + levels +
                                          "\n $END\n $STRINGS\nA B 1 3600 0 r.nc EXPORTED\nga gb\nR 0 R 0\n $END\n"));
  };
  const CouplingSetup lucia = nam("lucia", "1 -1"), timers = nam("timers", "1 3"), one = nam("one", "2");
  EXPECT_TRUE(lucia.timeline);
  EXPECT_EQ(lucia.timer_level, 0);  // OASIS: LUCIA instead of the timer files
  EXPECT_EQ(lucia.log_level, 1);
  EXPECT_FALSE(timers.timeline);
  EXPECT_EQ(timers.timer_level, 3);
  EXPECT_FALSE(one.timeline);
  EXPECT_FALSE(lucia == timers);  // the switch is part of the set-up
}

// The schedule of the exchanges within one component (RemapOptions::split_phase): any
// registered algorithm, part of the set-up; an unknown one is refused with its line.
TEST_F(ConfigTest, ScheduleKey) {
  const std::string base = "runtime: 3600\ncouplings:\n  - source: {field: A, grid: ga}\n"
                           "    target: {field: B, grid: gb}\n    period: 3600\n";
  const CouplingSetup none = read_coupling_yaml(write("nosched.yaml", base));
  EXPECT_EQ(none.schedule, "");
  const CouplingSetup bf = read_coupling_yaml(write("bf.yaml", "schedule: butterfly\n" + base));
  EXPECT_EQ(bf.schedule, "butterfly");
  EXPECT_FALSE(bf == none);
  EXPECT_EQ(read_coupling_yaml(write("ad.yaml", "schedule: adaptive\n" + base)).schedule, "adaptive");
  const std::string bad = write("badsched.yaml", "log_level: 0\nschedule: hypercube\n" + base);
  expect_error(read_coupling_yaml, bad, bad + ":2, key schedule", "unknown schedule 'hypercube'");
}

// The start date and calendar of the coupler's files: YAML `start_date`/`calendar` (checked:
// a CF calendar, a day of it), and the namcouple's $INIDATE/$CALTYPE, which OASIS3-MCT skips,
// so a value estuary cannot use is a note, never an error.
TEST_F(ConfigTest, StartDateAndCalendar) {
  const std::string base = "runtime: 3600\ncouplings:\n  - source: {field: A, grid: ga}\n"
                           "    target: {field: B, grid: gb}\n    period: 3600\n";
  const CouplingSetup none = read_coupling_yaml(write("none.yaml", base));
  EXPECT_EQ(none.start_date, "");
  EXPECT_EQ(none.calendar, "standard");
  const CouplingSetup set = read_coupling_yaml(write("set.yaml", "calendar: noleap\nstart_date: 1979-03-01 06:00:00\n" + base));
  EXPECT_EQ(set.start_date, "1979-03-01 06:00:00");
  EXPECT_EQ(set.calendar, "noleap");
  EXPECT_FALSE(set == none);  // part of the set-up
  EXPECT_EQ(read_coupling_yaml(write("day.yaml", "start_date: 1850-01-01\n" + base)).start_date, "1850-01-01 00:00:00");
  const std::string cal = write("cal.yaml", "calendar: martian\n" + base);
  expect_error(read_coupling_yaml, cal, cal + ":1, key calendar", "unknown calendar 'martian'");
  // 29 February exists in the standard calendar of 2000, not in noleap; 30 February only in 360_day.
  EXPECT_NO_THROW(read_coupling_yaml(write("leap.yaml", "start_date: 2000-02-29\n" + base)));
  const std::string noleap = write("noleap.yaml", "calendar: noleap\nstart_date: 2000-02-29\n" + base);
  expect_error(read_coupling_yaml, noleap, noleap + ":2, key start_date", "bad date '2000-02-29'");
  EXPECT_EQ(read_coupling_yaml(write("d360.yaml", "calendar: 360_day\nstart_date: 2001-02-30\n" + base)).start_date,
            "2001-02-30 00:00:00");
  const std::string hour = write("hour.yaml", "start_date: 2000-01-01 25:00:00\n" + base);
  expect_error(read_coupling_yaml, hour, hour + ":1, key start_date", "bad date");

  const auto nam = [&](const std::string& name, const std::string& blocks) {
    return read_namcouple(write(name, " $NFIELDS\n 1\n $END\n $RUNTIME\n 3600\n $END\n" + blocks +
                                          " $STRINGS\nA B 1 3600 0 r.nc EXPORTED\nga gb\nR 0 R 0\n $END\n"));
  };
  const auto noted = [](const CouplingSetup& s, const std::string& text) {
    for (const std::string& n : s.notes)
      if (n.find(text) != std::string::npos) return true;
    return false;
  };
  const CouplingSetup oasis3 = nam("oasis3", " $INIDATE\n 19790301\n $END\n $CALTYPE\n 0\n $END\n");
  EXPECT_EQ(oasis3.start_date, "1979-03-01 00:00:00");
  EXPECT_EQ(oasis3.calendar, "noleap");
  const CouplingSetup d360 = nam("d360", " $CALTYPE\n 30\n $END\n $INIDATE\n 20010230\n $END\n");
  EXPECT_EQ(d360.calendar, "360_day");  // read first: the date is one of its calendar
  EXPECT_EQ(d360.start_date, "2001-02-30 00:00:00");
  const CouplingSetup odd = nam("odd", " $INIDATE\n 2001-01-01\n $END\n $CALTYPE\n 28\n $END\n");
  EXPECT_EQ(odd.start_date, "");
  EXPECT_EQ(odd.calendar, "standard");
  EXPECT_TRUE(noted(odd, "$INIDATE '2001-01-01' is not a date YYYYMMDD")) << ::testing::PrintToString(odd.notes);
  EXPECT_TRUE(noted(odd, "$CALTYPE '28' has no CF calendar"));
  // A public OASIS namcouple (tests/data/namcouples, OASIS's test case tc3a): $INIDATE 20000101,
  // $CALTYPE 30.
  const CouplingSetup tc3a = read_namcouple(kData + "/../data/namcouples/oasis-examples__tc3a.namcouple");
  EXPECT_EQ(tc3a.start_date, "2000-01-01 00:00:00");
  EXPECT_EQ(tc3a.calendar, "360_day");
}

TEST_F(ConfigTest, ReadCouplingConfigPicksTheFormat) {
  auto copy = [&](const std::string& from, const std::string& to) {
    std::ifstream in(kData + "/" + from);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return write(to, text);
  };
  const CouplingSetup ref = read_namcouple(kData + "/namcouple");
  EXPECT_TRUE(read_coupling_config(copy("namcouple", "namcouple.txt")) == ref);
  EXPECT_TRUE(read_coupling_config(copy("couple.yaml", "setup.YML")) == ref);
  EXPECT_TRUE(read_coupling_config(copy("couple.yaml", "setup")) == ref);  // sniffed: no $
  // A namcouple named .yaml is read as YAML, and fails as such.
  EXPECT_THROW(read_coupling_config(copy("namcouple", "wrong.yaml")), Error);
}

TEST_F(ConfigTest, EqualityIgnoresOnlyPlaceAndNotes) {
  const CouplingSetup a = read_namcouple(kData + "/namcouple");
  CouplingSetup b = read_coupling_yaml(kData + "/couple.yaml");
  ASSERT_TRUE(a == b);
  b.notes.push_back("x");
  b.path = "elsewhere";
  b.couplings[0].origin = "elsewhere:1";
  EXPECT_TRUE(a == b);
  CouplingSetup c = b;
  c.couplings[1].lag = 0;
  EXPECT_FALSE(a == c);
  c = b;
  c.couplings[0].src_component = "ocn";
  EXPECT_FALSE(a == c);
  c = b;
  c.couplings[1].blasold->add += 1e-12;
  EXPECT_FALSE(a == c);
  c = b;
  c.timeout = 1;
  EXPECT_FALSE(a == c);
  c = b;
  c.couplings[2].transforms.push_back("CHECKIN");
  EXPECT_FALSE(a == c);
}

TEST_F(ConfigTest, Names) {
  EXPECT_STREQ(name_of(FieldStatus::exported), "EXPORTED");
  EXPECT_STREQ(name_of(FieldStatus::expout), "EXPOUT");
  EXPECT_STREQ(name_of(FieldStatus::input), "INPUT");
  EXPECT_STREQ(name_of(FieldStatus::output), "OUTPUT");
  EXPECT_STREQ(name_of(LocTrans::instant), "INSTANT");
  EXPECT_STREQ(name_of(LocTrans::accumul), "ACCUMUL");
  EXPECT_STREQ(name_of(LocTrans::average), "AVERAGE");
  EXPECT_STREQ(name_of(LocTrans::t_min), "T_MIN");
  EXPECT_STREQ(name_of(LocTrans::t_max), "T_MAX");
}

// ---- malformed namcouple files ----

// Lines 1-8; the $STRINGS entry starts at line 9.
const std::string kHead =
    "# malformed variants\n"  // 1
    " $NFIELDS\n"             // 2
    "   2\n"                  // 3
    " $END\n"                 // 4
    " $RUNTIME\n"             // 5
    "   86400\n"              // 6
    " $END\n"                 // 7
    " $STRINGS\n";            // 8
const std::vector<std::string> kEntry = {
    "A B 1 3600 2 r.nc EXPORTED",  // 9
    "10 10 20 20 ga gb LAG=60",    // 10
    "P 0 R 0",                     // 11
    "LOCTRANS MAPPING",            // 12
    "AVERAGE",                     // 13
    "w.nc src bfb",                // 14
};

// kHead, then kEntry with the given lines (9..14) replaced, then $END (line 15).
std::string with_entry_lines(const std::map<int, std::string>& replaced) {
  std::string s = kHead;
  for (std::size_t k = 0; k < kEntry.size(); ++k) {
    const auto r = replaced.find(static_cast<int>(k) + 9);
    s += (r == replaced.end() ? kEntry[k] : r->second) + "\n";
  }
  return s + " $END\n";
}
std::string with_entry_line(int line, const std::string& text) {
  return with_entry_lines({{line, text}});
}

TEST_F(ConfigTest, MalformedBaseIsWellFormed) {
  const CouplingSetup s = read_namcouple(write("namcouple", with_entry_lines({})));
  ASSERT_EQ(s.couplings.size(), 1u);
  EXPECT_EQ(s.couplings[0].lag, 60.0);
  EXPECT_EQ(s.couplings[0].dst_grid.periodicity, Periodicity::regional);
  EXPECT_EQ(s.couplings[0].mapping->file, "w.nc");
}

struct BadCase {
  const char* name;
  std::string text;
  int line;
  const char* expected;
  const char* key = nullptr;  // YAML: the key the error names after the line
};

// What OASIS3-MCT 4.0/5.0 accept (mod_oasis_namcouple) is accepted with OASIS's meaning.
TEST_F(ConfigTest, NamcoupleReadAsOasisReadsIt) {
  const std::string p = write("oasis_forms",
                              "# no $END anywhere, stray lines, values with trailing words\n"  // 1
                              "$NFIELDS\n"                                   // 2
                              "  5   # entries\n"                             // 3
                              "END\n"                                         // 4
                              "$RUNTIME\n"                                    // 5
                              "  432000\n"                                    // 6
                              "$NLOGPRT\n"                                    // 7
                              "  2 1 0\n"                                     // 8
                              "$NCDFTYP\n"                                    // 9
                              "  cdf2\n"                                      // 10
                              "$STRINGS\n"                                    // 11
                              "A B 1 3600 0 r.nc EXPORTED\n"                  // 12
                              "ga gb\n"                                       // 13
                              "R 0 R 0\n"                                     // 14
                              "C D 1 -1 1 r.nc EXPORTED extra words\n"        // 15
                              "ga gb LAG=+600 SEQ=2 NOTE\n"                   // 16
                              "P 2 P 0\n"                                     // 17
                              "SCRIPR\n"                                      // 18
                              "DISTWGTNF LR VECTOR LATLON 10 4 name\n"        // 19
                              "E F 1 ONCE 2 in.nc INPUT\n"                    // 20
                              "G H 1 7200 2 r.nc EXPORTED\n"                  // 21
                              "10 20 30 40 ga gb\n"                           // 22
                              "P 0 P 0\n"                                     // 23
                              "MAPPING BLASNEW\n"                             // 24
                              "w.nc src dst\n"                                // 25
                              "2\n");                                         // 26
  const CouplingSetup s = read_namcouple(p);
  EXPECT_EQ(s.runtime, 432000.0);
  EXPECT_EQ(s.log_level, 2);
  EXPECT_EQ(s.timer_level, 1);
  EXPECT_EQ(s.nfields, 5);
  ASSERT_EQ(s.couplings.size(), 4u);  // the end of the file closes $STRINGS
  const CouplingConfig& a = s.couplings[0];
  EXPECT_TRUE(a.transforms.empty());  // EXPORTED without transformations (OASIS accepts it)
  const CouplingConfig& b = s.couplings[1];
  EXPECT_EQ(b.period, -1.0);  // read; refused at enddef only if a component uses it
  EXPECT_EQ(b.lag, 600.0);
  EXPECT_EQ(b.seq, 2);
  ASSERT_TRUE(b.scripr);
  EXPECT_EQ(b.scripr->method, "DISTWGT");
  EXPECT_FALSE(b.scripr->nearest_fill);
  EXPECT_EQ(b.scripr->field_type, "SCALAR");
  EXPECT_EQ(b.scripr->bins, 10);
  EXPECT_EQ(b.scripr->neighbors, 4);
  const CouplingConfig& e = s.couplings[2];
  EXPECT_EQ(e.status, FieldStatus::input);
  EXPECT_EQ(e.period, 432000.0);  // ONCE
  EXPECT_EQ(e.input_file, "in.nc");
  const CouplingConfig& g = s.couplings[3];
  EXPECT_EQ(g.src_grid.nx, 10);
  EXPECT_EQ(g.dst_grid.ny, 40);
  ASSERT_TRUE(g.mapping);
  EXPECT_EQ(g.mapping->location, RemapLocation::dst);  // the last location given wins
  ASSERT_TRUE(g.blasnew);
  EXPECT_EQ(g.blasnew->scale, 2.0);  // a missing term count is 0
  EXPECT_EQ(g.blasnew->add, 0.0);
  auto noted = [&](const std::string& text, int line) {
    const std::string at = p + ":" + std::to_string(line) + ": ";
    for (const std::string& n : s.notes)
      if (n.rfind(at, 0) == 0 && n.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(noted("'# entries' after the number of fields ignored", 3)) << ::testing::PrintToString(s.notes);
  EXPECT_TRUE(noted("'END' is read by no keyword; skipped", 4));
  EXPECT_TRUE(noted("$NCDFTYP", 9));
  EXPECT_TRUE(noted("'extra words' after the status ignored", 15));
  EXPECT_TRUE(noted("negative period", 15));
  EXPECT_TRUE(noted("'NOTE' is neither LAG= nor SEQ=", 16));
  EXPECT_TRUE(noted("VECTOR read as SCALAR", 19));
  EXPECT_TRUE(noted("'name' after the SCRIPR DISTWGTNF parameters ignored", 19));
  EXPECT_TRUE(noted("the count 2 is ignored", 20));
  EXPECT_TRUE(noted("$NFIELDS is 5 but $STRINGS has 4 entries", 3));
}

// A line with a TAB that no keyword reads is skipped, as OASIS skips it; one that is read is
// refused (OASIS would take the TAB for part of a word).
TEST_F(ConfigTest, TabLinesAreRefusedOnlyWhereOasisReadsThem) {
  const CouplingSetup s = read_namcouple(write("tab_stray", " $NFIELDS\n 1\n\t# a TAB-indented comment\n $RUNTIME\n 60\n"
                                                            " $STRINGS\nA B 1 60 0 in.nc INPUT\n $END\n"));
  ASSERT_EQ(s.couplings.size(), 1u);
  bool noted = false;
  for (const std::string& n : s.notes) noted = noted || n.find(":3: ") != std::string::npos;
  EXPECT_TRUE(noted) << ::testing::PrintToString(s.notes);
  const std::string p = write("tab_value", " $NFIELDS\n 1\n $RUNTIME\n\t60\n $STRINGS\n $END\n");
  expect_error(read_namcouple, p, "namcouple " + p + ":4", "TAB character at column 1");
}

TEST_F(ConfigTest, MalformedNamcoupleNamesFileLineAndExpectation) {
  // Each refused as OASIS3-MCT refuses it (mod_oasis_namcouple), or where OASIS would misread it.
  const std::vector<BadCase> cases = {
      {"unknown_keyword", "$NFIELDS\n 1\n$END\n$FOOBAR\n 3\n$END\n", 4,
       "unknown keyword '$FOOBAR' (OASIS3-MCT aborts on it too)"},
      {"lower_case_keyword", "$nfields\n 1\n", 1, "keyword $nfields must be written $NFIELDS"},
      {"no_runtime", "# only fields\n $NFIELDS\n 0\n $END\n $STRINGS\n $END\n", 6,
       "no $RUNTIME keyword"},
      {"runtime_not_number", kHead.substr(0, kHead.find("   86400")) + "   one day\n $END\n", 6,
       "expected the run length in seconds, found 'one'"},
      {"runtime_placeholder", kHead.substr(0, kHead.find("   86400")) + "   <runtime>\n $END\n", 6,
       "unfilled template placeholder '<runtime>'"},
      {"runtime_bare_placeholder", kHead.substr(0, kHead.find("   86400")) + "   totalruntime\n", 6,
       "found 'totalruntime' (an unfilled template placeholder?)"},
      {"shell_placeholder", with_entry_line(9, "A B 1 ${CPL_FREQ} 2 r.nc EXPORTED"), 9,
       "unfilled template placeholder '${CPL_FREQ}'"},
      {"runtime_without_value", " $RUNTIME\n $STRINGS\n $END\n", 1,
       "$RUNTIME has no value: expected the run length in seconds on the next line, found $STRINGS"},
      {"keyword_after_strings", kHead + "A B 1 3600 0 in.nc INPUT\n $END\n $NLOGPRT\n 1\n", 11,
       "$NLOGPRT after $STRINGS: OASIS3-MCT reads nothing after the $STRINGS entries but $END"},
      {"zero_period", with_entry_line(9, "A B 1 0 2 r.nc EXPORTED"), 9,
       "the coupling period must not be 0"},
      {"period_not_integer", with_entry_line(9, "A B 1 3600.5 2 r.nc EXPORTED"), 9,
       "expected the coupling period in seconds (an integer), found '3600.5'"},
      {"field_label_not_integer", with_entry_line(9, "A B one 3600 2 r.nc EXPORTED"), 9,
       "the field label (obsolete, usually 1)"},
      {"colon_lists_differ", with_entry_line(9, "A1:A2 B1 1 3600 2 r.nc EXPORTED"), 9,
       "2 source field(s) but 1 target field(s)"},
      {"empty_name_in_colon_list", with_entry_line(9, "A1::A2 B1:B2:B3 1 3600 2 r.nc EXPORTED"),
       9, "empty field name in the colon list 'A1::A2'"},
      {"unknown_status", with_entry_line(9, "A B 1 3600 2 r.nc EXPORTD"), 9,
       "unknown field status 'EXPORTD'"},
      {"lower_case_status", with_entry_line(9, "A B 1 3600 2 r.nc exported"), 9,
       "field status 'exported' must be written EXPORTED"},
      {"auxilary", with_entry_line(9, "A B 1 3600 2 r.nc AUXILARY"), 9,
       "field status AUXILARY is not supported (OASIS3-MCT aborts on it too)"},
      {"line1_too_short", with_entry_line(9, "A B 1 3600 2 EXPORTED"), 9,
       "expected 'SRC DST 1 period ntrans restart.nc STATUS', found 6 words"},
      {"line2_too_short", with_entry_line(10, "10 10 20 ga gb"), 10,
       "expected line 2 'nx_src ny_src nx_dst ny_dst srcgrid dstgrid [LAG=t] [SEQ=n]'"},
      {"grid_size_not_integer", with_entry_line(10, "10 ten 20 20 ga gb"), 10,
       "expected a grid size, found 'ten'"},
      {"lag_not_integer", with_entry_line(10, "10 10 20 20 ga gb LAG=60.5"), 10,
       "expected LAG=seconds (an integer), found '60.5'"},
      {"bad_line3", with_entry_line(11, "X 0 R 0"), 11,
       "expected line 3 'P|R overlap P|R overlap'"},
      {"lower_case_line3", with_entry_line(11, "p 0 r 0"), 11,
       "expected line 3 'P|R overlap P|R overlap'"},
      {"ntrans_mismatch", with_entry_line(12, "LOCTRANS"), 12,
       "expected 2 transformation name(s) (line 9 says 2 transformations), found 1"},
      {"transform_extra_name", with_entry_line(12, "LOCTRANS MAPPING CHECKIN"), 12,
       "expected 2 transformation name(s) (line 9 says 2 transformations), found 3"},
      {"unknown_transform", with_entry_line(12, "LOCTRANS REMAP"), 12,
       "unknown transformation 'REMAP'"},
      {"obsolete_transform", with_entry_line(12, "LOCTRANS INTERP"), 12,
       "transformation INTERP is obsolete"},
      {"bad_loctrans", with_entry_line(13, "MEAN"), 13, "expected a LOCTRANS operation"},
      {"bad_mapping_option", with_entry_line(14, "w.nc both"), 14,
       "unexpected 'both' in the MAPPING line"},
      {"gauswgt_zero_variance", with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "GAUSWGT LR SCALAR LATLON 1 4 0.0"}}),
       14, "the SCRIPR GAUSWGT variance must be positive"},
      {"loccgaus_zero_variance", with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "LOCCGAUS U SCALAR LATLON 1 4 0"}}),
       14, "the SCRIPR LOCCGAUS variance must be positive"},
      {"loccgaus_without_variance", with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "LOCCGAUS U SCALAR LATLON 1 4"}}),
       14, "expected the SCRIPR line 'LOCCGAUS LR SCALAR LATLON bins neighbours variance': the variance is required"},
      {"loccdist_without_neighbours", with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "LOCCDIST U SCALAR LATLON 1"}}),
       14, "the number of neighbours is required"},
      {"spmap_in_namcouple", with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "SPMAP U SCALAR LATLON 1 4"}}),
       14, "SPMAP is YAC's source point mapping, not a namcouple method"},
      {"bicubic_on_unstructured",
       with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "BICUBIC U SCALAR LATLON 1"}}), 14,
       "SCRIPR BICUBIC needs a source grid of type LR or D"},
      {"bilinear_reduced_latlon",
       with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "BILINEAR D SCALAR LATLON 1"}}), 14,
       "on a reduced (D) grid needs the LATITUDE search restriction"},
      {"distwgt_without_neighbours",
       with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "DISTWGT LR SCALAR LATLON 1"}}), 14,
       "expected the SCRIPR line 'DISTWGT LR SCALAR LATLON bins neighbours': the number of neighbours is required"},
      {"conserv_without_order",
       with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "CONSERV LR SCALAR LATLON 1 FRACAREA"}}), 14,
       "(the normalisation and the order are required, as in OASIS3-MCT), found 6 words"},
      {"conserv_true_area",
       with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "CONSERV LR SCALAR LATLON 1 FRACARTR FIRST"}}), 14,
       "SCRIPR CONSERV normalisation FRACARTR is not supported yet by estuary"},
      {"gauswgt_without_variance",
       with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "GAUSWGT LR SCALAR LATLON 1 4"}}), 14,
       "expected the SCRIPR line 'GAUSWGT LR SCALAR LATLON bins neighbours variance': the variance is required"},
      {"unknown_field_type",
       with_entry_lines({{12, "LOCTRANS SCRIPR"}, {14, "DISTWGT LR TENSOR LATLON 1 4"}}), 14,
       "unknown SCRIPR field type 'TENSOR'"},
      {"bad_conserv_method", with_entry_lines({{12, "LOCTRANS CONSERV"}, {14, "GLOBAL fast"}}),
       14, "unknown CONSERV sum method 'fast'"},
      {"conserv_gsspos", with_entry_lines({{12, "LOCTRANS CONSERV"}, {14, "GSSPOS"}}),
       14, "CONSERV GSSPOS is not supported yet by estuary"},
      {"blas_term_not_constant",
       kHead + "A B 1 3600 1 r.nc EXPORTED\nga gb\nP 0 P 0\nBLASOLD\n1.0 2\nCONSTANT 1\n"
               "O_SST 1.0\n $END\n",
       15, "BLASOLD term 'O_SST' is not supported"},
      {"output_with_mapping", kHead + "A A 1 3600 1 OUTPUT\nga ga\nMAPPING\nw.nc\n $END\n", 11,
       "an OUTPUT field takes only LOCTRANS, not MAPPING"},
      {"ignored_with_scripr",
       kHead + "A B 1 3600 2 r.nc IGNORED\nga gb\nLOCTRANS SCRIPR\nINSTANT\nDISTWGT LR SCALAR LATLON 1 4\n",
       13, "expected a LOCTRANS operation (INSTANT, ACCUMUL, AVERAGE, T_MIN or T_MAX), found 'DISTWGT'"},
      {"ignored_not_loctrans",
       kHead + "A B 1 3600 1 r.nc IGNORED\nga gb\nSCRIPR\nDISTWGT LR SCALAR LATLON 1 4\n $END\n",
       11, "an IGNORED field takes only LOCTRANS, not SCRIPR"},
      {"tab_separated", with_entry_line(13, "\tAVERAGE"), 13, "TAB character at column 1"},
      {"period_too_wide", with_entry_line(9, "A B 1 315360000 2 r.nc EXPORTED"), 9,
       "has more than the 8 characters OASIS3-MCT reads there (format I8)"},
      {"grid_name_too_long", with_entry_line(10, "10 10 20 20 a_grid_name_longer_than_32_characters gb"), 10,
       "is longer than the 32 characters OASIS3-MCT keeps"},
      {"trailing_comment_without_end",
       kHead + "A B 1 3600 0 in.nc INPUT\n# the end\n", 10,
       "$NFIELDS is 2 but only 1 entries follow, with no $END"},
      {"end_inside_entry", kHead + kEntry[0] + "\n" + kEntry[1] + "\n" + kEntry[2] + "\n" +
                               kEntry[3] + "\n" + kEntry[4] + "\n $END\n",
       14, "the $STRINGS entry of line 9 is incomplete: expected the MAPPING line"},
      {"eof_inside_entry", kHead + kEntry[0] + "\n" + kEntry[1] + "\n# comment\n\n", 9,
       "end of file inside the $STRINGS entry of line 9; expected line 3"},
      {"more_entries_than_nfields",
       " $NFIELDS\n 1\n $END\n $RUNTIME\n 10\n $END\n $STRINGS\n"
       "A A 1 5 0 a.nc INPUT\nB B 1 5 0 b.nc INPUT\n $END\n",
       9, "more $STRINGS entries than $NFIELDS (1, line 2) allows"},
      {"bad_nmapdec", " $RUNTIME\n 5\n $NMAPDEC\n decomp_2d\n", 4, "$NMAPDEC: unknown value 'decomp_2d'"},
      {"stack_unknown_stage", with_entry_lines({{12, "LOCTRANS STACK"}, {14, "bilinear | spline"}}), 14,
       "STACK: unknown interpolation stage 'spline'"},
      {"stack_empty_stage", with_entry_lines({{12, "LOCTRANS STACK"}, {14, "bilinear || nnn"}}), 14,
       "STACK: an empty stage between '|'"},
      {"stack_trailing_bar", with_entry_lines({{12, "LOCTRANS STACK"}, {14, "bilinear |"}}), 14,
       "STACK: the stack ends with '|' or is empty"},
      {"stack_not_key_value", with_entry_lines({{12, "LOCTRANS STACK"}, {14, "nnn n 4"}}), 14,
       "STACK: stage nnn: expected key=value, found 'n'"},
      {"stack_bad_value", with_entry_lines({{12, "LOCTRANS STACK"}, {14, "nnn n=four"}}), 14,
       "parameter 'n' = 'four' of stage nnn is not an integer"},
      {"stack_fixed_not_last", with_entry_lines({{12, "LOCTRANS STACK"}, {14, "fixed value=1 | nnn"}}), 14,
       "stage 1 (fixed) is not the last"},
  };
  ASSERT_GE(cases.size(), 12u);
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = write(c.name, c.text);
    expect_error(read_namcouple, p, "namcouple " + p + ":" + std::to_string(c.line), c.expected);
  }
}

// estuary's STACK transform (namcouple) and `interpolation` key (YAML) read the same stack.
TEST_F(ConfigTest, StackNamcoupleAndYamlGiveTheSameStages) {
  const std::string nam = write("stack_namcouple",
                                kHead + "A B 1 3600 1 r.nc EXPORTED\n10 10 20 20 ga gb\nP 0 R 0\nSTACK\n"
                                        "conservative normalization=destarea | nnn n=4 weighting=gauss scale=0.2|creep steps=2 "
                                        "| fixed value=-1 # filled last\n $END\n");
  const std::string yml = write("stack.yaml",
                                "runtime: 86400\ncouplings:\n  - source: {field: A, grid: ga, nx: 10, ny: 10, periodic: true}\n"
                                "    target: {field: B, grid: gb, nx: 20, ny: 20}\n    period: 3600\n    restart: r.nc\n"
                                "    interpolation:\n      - conservative: {normalization: destarea}\n"
                                "      - nnn: {n: 4, weighting: gauss, scale: 0.2}\n      - creep: {steps: 2}\n"
                                "      - fixed: {value: -1}\n");
  const CouplingSetup a = read_namcouple(nam), b = read_coupling_yaml(yml);
  ASSERT_EQ(a.couplings.size(), 1u);
  ASSERT_EQ(b.couplings.size(), 1u);
  const CouplingConfig& c = a.couplings[0];
  ASSERT_EQ(c.interpolation.size(), 4u);
  EXPECT_EQ(c.interpolation[1].name, "nnn");
  EXPECT_EQ(c.interpolation[1].params.size(), 3u);
  EXPECT_EQ(c.interpolation[3].params, (std::vector<std::pair<std::string, std::string>>{{"value", "-1"}}));
  EXPECT_EQ(c.transforms, std::vector<std::string>{"STACK"});
  EXPECT_TRUE(c == b.couplings[0]);
  // The same stack as a YAC coupling.yaml spells it reads as the same stages.
  const std::string yac = write("stack_yac.yaml",
                                "runtime: 86400\ncouplings:\n  - source: {field: A, grid: ga, nx: 10, ny: 10, periodic: true}\n"
                                "    target: {field: B, grid: gb, nx: 20, ny: 20}\n    period: 3600\n    restart: r.nc\n"
                                "    interpolation:\n      - conservative: {order: 1, enforced_conservation: false, normalisation: destarea}\n"
                                "      - nnn: {n: 4, weighted: gauss_weighted, gauss_scale: 0.2}\n      - creep: {creep_distance: 2}\n"
                                "      - fixed: {user_value: -1}\n");
  const CouplingSetup y = read_coupling_yaml(yac);
  ASSERT_EQ(y.couplings[0].interpolation.size(), 4u);
  for (std::size_t k = 0; k < 4; ++k) {
    const auto& got = y.couplings[0].interpolation[k];
    const auto& want = c.interpolation[k];
    EXPECT_EQ(estuary::describe({estuary::make_stage(got.name, got.params, "yac")}),
              estuary::describe({estuary::make_stage(want.name, want.params, "estuary")}))
        << "stage " << k;
  }
}

// ---- malformed YAML files ----

const std::string kYaml =
    "runtime: 86400\n"                          // 1
    "couplings:\n"                              // 2
    "  - source: {field: A, grid: ga}\n"        // 3
    "    target: {field: B, grid: gb}\n"        // 4
    "    period: 3600\n"                        // 5
    "    transforms:\n"                         // 6
    "      - loctrans: average\n"               // 7
    "      - mapping: {file: w.nc, location: src}\n";  // 8

std::string yaml_with(const std::string& from, const std::string& to) {
  std::string s = kYaml;
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST_F(ConfigTest, MalformedYamlNamesFileLineAndKey) {
  ASSERT_EQ(read_coupling_yaml(write("base.yaml", kYaml)).couplings.size(), 1u);
  const std::vector<BadCase> cases = {
      {"unknown_top_key", "runtime: 5\nruntme: 6\ncouplings: []\n", 2, "unknown key 'runtme'", "runtme"},
      {"missing_runtime", "log_level: 1\ncouplings: []\n", 1, "missing required key 'runtime'", "runtime"},
      {"unknown_coupling_key", yaml_with("    period: 3600\n", "    period: 3600\n    perod: 1\n"),
       6, "unknown key 'perod' in couplings[0]", "couplings[0].perod"},
      {"missing_period", yaml_with("    period: 3600\n", ""), 3,
       "missing required key 'period' in couplings[0]", "couplings[0].period"},
      {"period_not_number", yaml_with("period: 3600", "period: hourly"), 5,
       "couplings[0].period must be a number, found 'hourly'", "couplings[0].period"},
      {"period_zero", yaml_with("period: 3600", "period: 0"), 3,
       "couplings[0]: coupling period 0 is not positive", "couplings[0]"},
      {"unknown_side_key", yaml_with("{field: A, grid: ga}", "{field: A, gird: ga}"), 3,
       "unknown key 'gird' in couplings[0].source", "couplings[0].source.gird"},
      {"field_and_fields", yaml_with("{field: A, grid: ga}", "{field: A, fields: [A], grid: ga}"),
       3, "has both 'field' and 'fields'", "couplings[0].source"},
      {"fields_differ", yaml_with("{field: A, grid: ga}", "{fields: [A, C], grid: ga}"), 3,
       "2 source field(s) but 1 target field(s)", "couplings[0]"},
      {"bad_status", yaml_with("    period: 3600\n", "    period: 3600\n    status: sent\n"), 6,
       "unknown couplings[0].status 'sent'", "couplings[0].status"},
      {"unknown_transform", yaml_with("- loctrans: average", "- regrid: average"), 7,
       "unknown transformation 'regrid' in couplings[0].transforms[0]", "couplings[0].transforms[0].regrid"},
      {"transform_twice", yaml_with("- loctrans: average", "- mapping: x.nc"), 8,
       "transformation mapping listed twice", "couplings[0].transforms[1].mapping"},
      {"bad_loctrans", yaml_with("loctrans: average", "loctrans: mean"), 7,
       "unknown couplings[0].transforms[0].loctrans 'mean'", "couplings[0].transforms[0].loctrans"},
      {"bad_mapping_key", yaml_with("location: src", "place: src"), 8,
       "unknown key 'place' in couplings[0].transforms[1].mapping", "couplings[0].transforms[1].mapping.place"},
      {"gauswgt_without_variance", yaml_with("- loctrans: average", "- scripr: {method: gauswgt}"), 7,
       "missing required key 'variance'", "couplings[0].transforms[0].scripr.variance"},
      {"spmap_bad_weighting", yaml_with("- loctrans: average", "- scripr: {method: spmap, weighting: gauss}"), 7,
       "unknown SPMAP weighting 'GAUSS'", "couplings[0].transforms[0].scripr"},
      {"spmap_bad_distance", yaml_with("- loctrans: average", "- scripr: {method: spmap, spread_distance: 200}"), 7,
       "must be from 0 to 180 degrees", "couplings[0].transforms[0].scripr"},
      {"spread_for_locc", yaml_with("- loctrans: average", "- scripr: {method: loccunif, spread_distance: 2}"), 7,
       "spread_distance is for method spmap only", "couplings[0].transforms[0].scripr.spread_distance"},
      {"blas_not_number", yaml_with("- loctrans: average", "- blasold: {scale: two}"), 7,
       "couplings[0].transforms[0].blasold.scale must be a number, found 'two'", "couplings[0].transforms[0].blasold.scale"},
      {"syntax_error", yaml_with("    period: 3600\n", "    period: [3600\n"), 6,
       "YAML syntax error"},
      {"interpolation_bad_parameter",
       yaml_with("    transforms:\n", "    interpolation: [bilinear, {nnn: {k: 4}}]\n    transforms:\n"), 6,
       "couplings[0].interpolation[1]: stage nnn has no parameter 'k'", "couplings[0].interpolation[1]"},
      {"interpolation_and_scripr",
       yaml_with("    transforms:\n      - loctrans: average\n      - mapping: {file: w.nc, location: src}\n",
                 "    interpolation: [bilinear]\n    transforms:\n      - loctrans: average\n      - scripr: {method: distwgt}\n"),
       3, "both SCRIPR and STACK (interpolation) in one coupling", "couplings[0]"},
      {"stack_as_transform", yaml_with("- loctrans: average", "- stack: [bilinear]"), 7,
       "in YAML the stages are the coupling's key 'interpolation'", "couplings[0].transforms[0].stack"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = write(std::string(c.name) + ".yaml", c.text);
    expect_error(read_coupling_yaml, p, p + ":" + std::to_string(c.line) + (c.key ? std::string(", key ") + c.key : ""),
                 c.expected);
  }
}

}  // namespace

// OASIS 5's runoff mappings in a namcouple, and YAC's SPMAP in YAML: the words and keys as read.
TEST_F(ConfigTest, RunoffMappingsAreRead) {
  const std::string p = write("runoff",
                              " $NFIELDS\n 2\n $END\n $RUNTIME\n 86400\n $END\n $STRINGS\n"
                              "RUNOFF O_RIV 1 3600 1 r.nc EXPORTED\nlgrd ogrd\nP 0 P 0\nSCRIPR\n"
                              "LOCCGAUS U SCALAR LATLON 1 6 0.5\n"
                              "CALVING O_CAL 1 3600 1 r.nc EXPORTED\nlgrd ogrd\nP 0 P 0\nSCRIPR\n"
                              "LOCCUNIF LR SCALAR LATLON 1 2\n $END\n");
  const CouplingSetup s = read_namcouple(p);
  ASSERT_EQ(s.couplings.size(), 2u);
  ASSERT_TRUE(s.couplings[0].scripr);
  EXPECT_EQ(s.couplings[0].scripr->method, "LOCCGAUS");
  EXPECT_EQ(s.couplings[0].scripr->neighbors, 6);
  EXPECT_EQ(s.couplings[0].scripr->variance, 0.5);
  ASSERT_TRUE(s.couplings[1].scripr);
  EXPECT_EQ(s.couplings[1].scripr->method, "LOCCUNIF");
  EXPECT_EQ(s.couplings[1].scripr->neighbors, 2);
  const CouplingSetup y = read_coupling_yaml(write("runoff.yaml", yaml_with("- mapping: {file: w.nc, location: src}",
      "- scripr: {method: spmap, spread_distance: 1.5, max_search_distance: 10, weighting: dist, scaling: srcarea}")));
  ASSERT_TRUE(y.couplings[0].scripr);
  const ScriprSpec& m = *y.couplings[0].scripr;
  EXPECT_EQ(m.method, "SPMAP");
  EXPECT_EQ(m.spread_distance, 1.5);
  EXPECT_EQ(m.max_search_distance, 10.0);
  EXPECT_EQ(m.weighting, "DIST");
  EXPECT_EQ(m.scaling, "SRCAREA");
  const CouplingSetup d = read_coupling_yaml(write("runoff_default.yaml", yaml_with("- mapping: {file: w.nc, location: src}", "- scripr: {method: spmap}")));
  EXPECT_EQ(d.couplings[0].scripr->weighting, "AVG");
  EXPECT_EQ(d.couplings[0].scripr->scaling, "NONE");  // YAC's default
  EXPECT_EQ(d.couplings[0].scripr->spread_distance, 0.0);
}
