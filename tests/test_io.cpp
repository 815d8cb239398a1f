// I/O: configuration errors, remap-and-write from several decompositions through 1 and 2
// writers in both modes read back with the Reader into another decomposition, temporal
// operations against a reference computed here, and the exception and SIGTERM paths.
// (The independent Python reader checks the same files' contents and CF metadata: tests/io/.)
#include <chrono>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <limits>
#include <utility>

#include <netcdf.h>

#include "test_io_util.hpp"

namespace io = estuary::io;
using etest::all_ok;
using iotest::i64;

namespace {

std::string out_dir(const std::string& name) { return iotest::out_dir("", name); }

io::OutputConfig make_config(const std::string& dir, io::Mode mode, int writers, const std::string& ops_yaml) {
  std::string y = "output:\n  mode: " + std::string(mode == io::Mode::server ? "server" : "serverless") +
                  "\n  writers: " + std::to_string(writers) + "\n  directory: " + dir + "\n" + ops_yaml;
  return io::OutputConfig::from_yaml_string(y, "test");
}

using iotest::config_error;

// Reads `var` record `rec` into a permuted decomposition (not the one written) and compares
// with `expect(g)`; returns the number of mismatches on this rank.
template <class F>
int check_var(io::Reader& rd, const std::string& var, i64 rec, i64 nlev, F expect) {
  const int p = etest::world_size(), r = etest::world_rank();
  const auto d = etest::permuted_block(nlev * iotest::kNh, p, r, 5);
  std::vector<double> got(static_cast<std::size_t>(d.size()));
  rd.read_record(var, rec, d, got);
  int bad = 0;
  const auto idx = d.to_indices();
  for (std::size_t i = 0; i < idx.size(); ++i)
    if (got[i] != expect(idx[i])) ++bad;
  return bad;
}

}  // namespace

TEST(IoConfig, MalformedConfigsNameFileAndKey) {
  const std::string head = "output:\n  files:\n    - name: f\n";
  EXPECT_NE(config_error("output: {mode: fast, files: [{name: f, output_freq: 1h, fields: [a]}]}")
                .find("unknown I/O mode \"fast\" (bad.yaml:1, key output.mode)"),
            std::string::npos);
  EXPECT_NE(config_error(head + "      output_freq: 6 weeks\n      fields: [a]\n").find("bad duration '6 weeks'"),
            std::string::npos);
  EXPECT_NE(config_error(head + "      output_freq: 6h\n      fields: [{name: a, operation: median}]\n")
                .find("unknown operation 'median' (bad.yaml:5, key output.files[0] (f).fields[0] (a).operation)"),
            std::string::npos);
  EXPECT_NE(config_error(head + "      output_freq: 6h\n      fields: [{name: a, precision: half}]\n")
                .find("unknown precision 'half'"),
            std::string::npos);
  EXPECT_NE(config_error(head + "      output_freq: 6h\n      colour: red\n      fields: [a]\n")
                .find("unknown key 'colour' in output.files[0] (f) (bad.yaml:5, key output.files[0] (f).colour)"),
            std::string::npos);
  EXPECT_NE(config_error(head + "      fields: [a]\n").find("a file needs an output_freq"), std::string::npos);
  EXPECT_NE(config_error(head + "      output_freq: 1h\n      fields: [{name: a, operation: average}, b]\n")
                .find("mixes instant fields"),
            std::string::npos);
  EXPECT_NE(config_error("output:\n  writers: -2\n  files: []\n").find("key output.writers"), std::string::npos);
  EXPECT_NE(config_error("output: [unclosed\n").find("YAML syntax"), std::string::npos);
  EXPECT_NE(config_error("coupling: {}\n").find("no `output:` section"), std::string::npos);
  EXPECT_DOUBLE_EQ(io::parse_duration("6h", "x"), 21600.0);
  EXPECT_DOUBLE_EQ(io::parse_duration("30min", "x"), 1800.0);
  EXPECT_DOUBLE_EQ(io::parse_duration("1d", "x"), 86400.0);
  EXPECT_DOUBLE_EQ(io::parse_duration("90", "x"), 90.0);
  EXPECT_THROW(io::parse_duration("0h", "x"), estuary::Error);
  EXPECT_THROW(io::parse_duration("-1d", "x"), estuary::Error);
  EXPECT_DOUBLE_EQ(io::parse_duration("30mi", "x"), 1800.0);  // XIOS's minute
  EXPECT_EQ(io::parse_frequency("1mo", "x").months, 1);
  EXPECT_EQ(io::parse_frequency("3mo", "x").months, 3);
  EXPECT_EQ(io::parse_frequency("1y", "x").months, 12);
  EXPECT_EQ(io::parse_frequency("2y", "x").months, 24);
  EXPECT_DOUBLE_EQ(io::parse_frequency("6h", "x").seconds, 21600.0);
  EXPECT_EQ(io::parse_frequency("6h", "x").months, 0);
  for (const char* bad : {"0mo", "1.5mo", "-1y", "mo", "y", "1 mo x"}) EXPECT_THROW(io::parse_frequency(bad, "x"), estuary::Error) << bad;
  // lossy quantization and zstd: netCDF-4 only, with their own limits
  const std::string nc4 = "output:\n  format: netcdf4\n  files:\n    - name: f\n      output_freq: 1h\n";
  for (const auto& [field, want] : std::vector<std::pair<std::string, std::string>>{
           {"{name: a, quantize: bitshave, significant_bits: 3}", "unknown quantize 'bitshave'"},
           {"{name: a, quantize: bitround}", "quantize bitround needs significant_bits"},
           {"{name: a, quantize: bitgroom, significant_bits: 3}", "significant_bits does not go with quantize bitgroom"},
           {"{name: a, significant_digits: 3}", "significant digits or bits without quantize"},
           {"{name: a, precision: float, quantize: granularbr, significant_digits: 9}",
            "9 significant digits for a float variable, more than its 7"},
           {"{name: a, precision: double, quantize: bitround, significant_bits: 53}",
            "53 significant bits for a double variable, more than its 52"},
           {"{name: a, zstd: 23}", "zstd level 23 is not 1..22"}})
    EXPECT_NE(config_error(nc4 + "      fields: [" + field + "]\n").find(want), std::string::npos) << field;
  EXPECT_NE(config_error(head + "      output_freq: 1h\n      fields: [{name: a, quantize: bitround, significant_bits: 8}]\n")
                .find("quantize needs a netCDF-4 file"),
            std::string::npos);
  EXPECT_NE(config_error(head + "      output_freq: 1h\n      fields: [{name: a, zstd: 3}]\n").find("zstd needs a netCDF-4 file"),
            std::string::npos);
  // split and sampling must fit the calendar periods
  EXPECT_NE(config_error(head + "      output_freq: 1mo\n      split_freq: 10d\n      fields: [a]\n")
                .find("split_freq is not a multiple of output_freq"),
            std::string::npos);
  EXPECT_NE(config_error(head + "      output_freq: 2mo\n      split_freq: 3mo\n      fields: [a]\n")
                .find("split_freq is not a multiple of output_freq"),
            std::string::npos);
  EXPECT_NE(config_error(head + "      output_freq: 1mo\n      fields: [{name: a, operation: average, sampling_freq: 7h}]\n")
                .find("output_freq is not a multiple of sampling_freq"),
            std::string::npos);
  EXPECT_NE(config_error("output:\n  calendar: 360_day\n  reference_time: \"2001-02-31\"\n"
                         "  files: [{name: f, output_freq: 1d, fields: [a]}]\n")
                .find("key output.reference_time"),
            std::string::npos);
  // The run's calendar and start date (top level, the coupler's keys) are the output's defaults;
  // the output's own keys win.
  const std::string files = "output:\n  files: [{name: f, output_freq: 1d, fields: [a]}]\n";
  const io::OutputConfig shared = io::OutputConfig::from_yaml_string("calendar: noleap\nstart_date: 1979-01-01\n" + files);
  EXPECT_EQ(shared.calendar, "noleap");
  EXPECT_EQ(shared.reference_time, "1979-01-01");
  const io::OutputConfig own = io::OutputConfig::from_yaml_string(
      "calendar: noleap\nstart_date: 1979-01-01\noutput:\n  calendar: 360_day\n  reference_time: 2001-02-30\n"
      "  files: [{name: f, output_freq: 1d, fields: [a]}]\n");
  EXPECT_EQ(own.calendar, "360_day");
  EXPECT_EQ(own.reference_time, "2001-02-30");
  EXPECT_NE(config_error("calendar: noleap\nstart_date: 2000-02-29\n" + files).find("2, key start_date"), std::string::npos);
}

// Day numbers of an independent reckoning: C++20's std::chrono civil calendar (proleptic
// Gregorian), the Julian Day Number of the Julian calendar, and the fixed-length calendars' own
// arithmetic. Month periods from 1850-01-01 over 200 years must agree with them.
TEST(IoCalendar, MonthBoundariesAgreeWithIndependentCalendars) {
  using namespace std::chrono;
  auto gregorian = [](long y, int m, int d) {
    return static_cast<long>(sys_days{year{static_cast<int>(y)} / month{static_cast<unsigned>(m)} / day{static_cast<unsigned>(d)}}
                                 .time_since_epoch().count());
  };
  auto julian = [](long y, int m, int d) {  // JDN of a Julian-calendar date (Richards' algorithm)
    const long a = (14 - m) / 12, yy = y + 4800 - a, mm = m + 12 * a - 3;
    return d + (153 * mm + 2) / 5 + 365 * yy + yy / 4 - 32083;
  };
  const int noleap_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  io::CalendarClock greg("proleptic_gregorian", "1850-01-01"), std_("standard", "1850-01-01 00:00:00"),
      jul("julian", "1850-01-01"), noleap("noleap", "1850-01-01"), d360("360_day", "1850-01-01"),
      leap("all_leap", "1850-01-01");
  double noleap_s = 0, leap_s = 0;
  for (long k = 0; k <= 12 * 200; ++k) {
    const long y = 1850 + k / 12;
    const int m = static_cast<int>(k % 12) + 1;
    ASSERT_DOUBLE_EQ(greg.months_after(k), 86400.0 * (gregorian(y, m, 1) - gregorian(1850, 1, 1))) << k;
    ASSERT_DOUBLE_EQ(std_.months_after(k), greg.months_after(k)) << k;
    ASSERT_DOUBLE_EQ(jul.months_after(k), 86400.0 * (julian(y, m, 1) - julian(1850, 1, 1))) << k;
    ASSERT_DOUBLE_EQ(noleap.months_after(k), noleap_s) << k;
    ASSERT_DOUBLE_EQ(d360.months_after(k), 86400.0 * 30 * k) << k;
    ASSERT_DOUBLE_EQ(leap.months_after(k), leap_s) << k;
    noleap_s += 86400.0 * noleap_days[m - 1];
    leap_s += 86400.0 * (m == 2 ? 29 : noleap_days[m - 1]);
  }
  // Backwards and mid-month: 2001-03-31 12:00 minus one month is 2001-02-28 12:00 (clamped),
  // plus eleven months is 2002-02-28 12:00.
  io::CalendarClock mid("standard", "2001-03-31 12:00:00");
  EXPECT_DOUBLE_EQ(mid.months_after(-1), -86400.0 * 31);
  EXPECT_DOUBLE_EQ(mid.months_after(11), 86400.0 * (gregorian(2002, 2, 28) - gregorian(2001, 3, 31)));
  // first_boundary_from: the period holding t is (boundary k-1, boundary k].
  io::Frequency q;
  q.months = 3;
  EXPECT_EQ(noleap.first_boundary_from(q, 0), 0);
  EXPECT_EQ(noleap.first_boundary_from(q, 1), 1);
  EXPECT_EQ(noleap.first_boundary_from(q, 86400.0 * 90), 1);       // 31 + 28 + 31 days: the end of Q1
  EXPECT_EQ(noleap.first_boundary_from(q, 86400.0 * 90 + 1), 2);
  EXPECT_EQ(noleap.first_boundary_from(q, -1), 0);
  EXPECT_EQ(noleap.first_boundary_from(q, -86400.0 * 92 - 1), -1);  // before Oct 1849
}

TEST(IoConfig, FieldNotDeclaredByTheModelNamesFileAndKey) {
  const auto cfg = make_config(out_dir("undeclared"), io::Mode::serverless, 1,
                               "  files:\n    - {name: f, output_freq: 1h, fields: [t3, ghost]}\n");
  std::string msg;
  {
    io::Output out(cfg, MPI_COMM_WORLD);
    const int p = etest::world_size(), r = etest::world_rank();
    out.def_grid("atm", iotest::grid_part(p, r));
    out.def_field(iotest::field("t3", true, iotest::decomp_of("block", iotest::kNlev, p, r)));
    try {
      out.end_def();
    } catch (const estuary::Error& e) {
      msg = e.what();
    }
  }
  EXPECT_NE(msg.find("field 'ghost' is not declared by the model (test:6, key output.files[0] (f).fields[1])"),
            std::string::npos)
      << msg;
}

// Every decomposition, 1 and 2 writers, both modes: instant records of t3 (double) and sst
// (float), read back into a permuted decomposition on all ranks.
TEST(IoWrite, DecompositionsWritersModes) {
  const int wp = etest::world_size();
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server})
    for (int writers : {1, 2})
      for (std::string kind : {"block", "cyclic", "boxes", "perm", "rank0"}) {
        if (mode == io::Mode::server && writers >= wp) continue;  // needs a model rank
        const std::string tag = std::string(mode == io::Mode::server ? "server" : "serverless") + "_w" +
                                std::to_string(writers) + "_" + kind;
        SCOPED_TRACE(tag);
        const std::string dir = out_dir(tag);
        const auto cfg = make_config(dir, mode, writers,
                                     "  files:\n    - name: inst\n      output_freq: 2h\n      fields:\n"
                                     "        - {name: t3, precision: double}\n        - sst\n");
        i64 handed = 0, bytes = 0;
        {
          io::Output out(cfg, MPI_COMM_WORLD);
          if (out.is_server()) {
            out.serve();
            bytes = out.stats().bytes_written;
          } else {
            int p = 1, r = 0;
            MPI_Comm_size(out.model_comm(), &p);
            MPI_Comm_rank(out.model_comm(), &r);
            const auto d3 = iotest::decomp_of(kind, iotest::kNlev, p, r);
            const auto d2 = iotest::decomp_of(kind, 1, p, r);
            out.def_grid("atm", iotest::grid_part(p, r));
            out.def_field(iotest::field("t3", true, d3));
            out.def_field(iotest::field("sst", false, d2));
            out.end_def();
            for (i64 s = 1; s <= 5; ++s) {
              out.write("t3", 3600.0 * static_cast<double>(s), iotest::values(d3, s, true));
              out.write("sst", 3600.0 * static_cast<double>(s), iotest::values(d2, s, false));
              if (s == 3) out.flush();
            }
            out.close();
            handed = out.stats().records_handed_over;
            bytes = out.stats().bytes_written;
          }
        }
        // The writers together put each value once: 2 records of t3 (double) and sst (float).
        // (The lon-lat grid's 1-D lon and lat are written whole at file creation, like levels:
        // neither handed over nor counted.)
        i64 total = 0;
        MPI_Allreduce(&bytes, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        EXPECT_EQ(total, 2 * (iotest::kNlev * iotest::kNh * 8 + iotest::kNh * 4));
        // Steps 2 and 4 are output steps: 2 records of 2 variables.
        if (etest::world_rank() == 0) {
          EXPECT_EQ(handed, 2 * 2);
        }
        io::Reader rd(dir + "/inst.nc", MPI_COMM_WORLD);
        ASSERT_EQ(rd.records(), 2);
        EXPECT_EQ(rd.times(), (std::vector<double>{7200.0, 14400.0}));
        int bad = 0;
        for (i64 rec = 0; rec < 2; ++rec) {
          const i64 step = 2 * (rec + 1);
          bad += check_var(rd, "t3", rec, iotest::kNlev, [&](i64 g) { return iotest::value3(g, step); });
          bad += check_var(rd, "sst", rec, 1, [&](i64 g) {
            return static_cast<double>(static_cast<float>(iotest::value2(g, step)));
          });
        }
        // Coordinates: the file's 1-D lon(lon) and lat(lat) equal the grid's first row and first
        // column (a lon-lat grid), whatever the rank counts.
        const estuary::Grid whole = estuary::GridGen::lonlat(iotest::kNx, iotest::kNy).make();
        for (const char* axis : {"lon", "lat"}) {
          const bool lon = axis[1] == 'o';
          const i64 n = lon ? iotest::kNx : iotest::kNy;
          std::vector<double> got(static_cast<std::size_t>(n));
          rd.read_record(axis, -1, estuary::Decomp::stripes(n, {{0, n, 1}}), got);
          for (i64 k = 0; k < n; ++k)
            bad += got[static_cast<std::size_t>(k)] != (lon ? whole.lon[static_cast<std::size_t>(k)]
                                                             : whole.lat[static_cast<std::size_t>(k * iotest::kNx)]);
        }
        EXPECT_TRUE(all_ok(bad == 0)) << bad << " values differ on rank " << etest::world_rank();
      }
}

// average, minimum, maximum, accumulate over 3-hour periods of hourly samples that are not
// monotonic in time, against the reference computed here; time and time_bnds too.
TEST(IoWrite, TemporalOperations) {
  const int wp = etest::world_size();
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server}) {
    if (mode == io::Mode::server && wp < 2) continue;
    SCOPED_TRACE(mode == io::Mode::server ? "server" : "serverless");
    const std::string dir = out_dir(std::string("ops_") + (mode == io::Mode::server ? "server" : "serverless"));
    const std::string files =
        "  files:\n"
        "    - name: a\n      output_freq: 3h\n      fields:\n"
        "        - {name: t3, operation: average, precision: double}\n"
        "        - {name: sst, operation: maximum, precision: double}\n"
        "    - name: b\n      output_freq: 3h\n      fields:\n"
        "        - {name: t3, operation: minimum, precision: double}\n"
        "        - {name: sst, operation: accumulate, precision: double}\n"
        "    - name: c\n      output_freq: 3h\n      fields:\n"
        "        - {name: sst, operation: once, precision: double}\n";
    const auto cfg = make_config(dir, mode, std::min(2, std::max(1, wp - 1)), files);
    // Sample k at hour k: a wave in time, so min and max are not the first or last sample.
    auto sample = [](i64 g, i64 k, bool three_d) {
      return (three_d ? 1.0 : -2.0) * std::sin(0.7 * static_cast<double>(k) + 0.01 * static_cast<double>(g)) +
             static_cast<double>(g % 7);
    };
    {
      io::Output out(cfg, MPI_COMM_WORLD);
      if (out.is_server()) {
        out.serve();
      } else {
        int p = 1, r = 0;
        MPI_Comm_size(out.model_comm(), &p);
        MPI_Comm_rank(out.model_comm(), &r);
        const auto d3 = iotest::decomp_of("boxes", iotest::kNlev, p, r);
        const auto d2 = iotest::decomp_of("cyclic", 1, p, r);
        out.def_grid("atm", iotest::grid_part(p, r));
        out.def_field(iotest::field("t3", true, d3));
        out.def_field(iotest::field("sst", false, d2));
        out.end_def();
        for (i64 k = 1; k <= 7; ++k) {  // 2 full periods; hour 7 is an incomplete third
          std::vector<double> v3, v2;
          for (i64 g : d3.to_indices()) v3.push_back(sample(g, k, true));
          for (i64 g : d2.to_indices()) v2.push_back(sample(g, k, false));
          out.write("t3", 3600.0 * static_cast<double>(k), v3);
          out.write("sst", 3600.0 * static_cast<double>(k), v2);
        }
        out.close();
      }
    }
    io::Reader ra(dir + "/a.nc", MPI_COMM_WORLD), rb(dir + "/b.nc", MPI_COMM_WORLD);
    ASSERT_EQ(ra.records(), 2);
    ASSERT_EQ(rb.records(), 2);
    EXPECT_EQ(ra.times(), (std::vector<double>{5400.0, 16200.0}));  // middles of the periods
    int bad = 0;
    for (i64 rec = 0; rec < 2; ++rec) {
      const i64 k0 = 3 * rec + 1;
      auto ref = [&](i64 g, bool three_d, int op) {
        double sum = 0, mn = std::numeric_limits<double>::infinity(), mx = -mn;
        for (i64 k = k0; k < k0 + 3; ++k) {
          const double s = sample(g, k, three_d);
          sum += s;
          mn = std::min(mn, s);
          mx = std::max(mx, s);
        }
        return op == 0 ? sum / 3 : op == 1 ? mn : op == 2 ? mx : sum;
      };
      // average: the library divides the sum by the count, as the reference does.
      bad += check_var(ra, "t3", rec, iotest::kNlev, [&](i64 g) { return ref(g, true, 0); });
      bad += check_var(ra, "sst", rec, 1, [&](i64 g) { return ref(g, false, 2); });
      bad += check_var(rb, "t3", rec, iotest::kNlev, [&](i64 g) { return ref(g, true, 1); });
      bad += check_var(rb, "sst", rec, 1, [&](i64 g) { return ref(g, false, 3); });
    }
    io::Reader rc(dir + "/c.nc", MPI_COMM_WORLD);
    EXPECT_EQ(rc.records(), 0);
    bad += check_var(rc, "sst", -1, 1, [&](i64 g) { return sample(g, 1, false); });
    EXPECT_TRUE(all_ok(bad == 0)) << bad << " values differ on rank " << etest::world_rank();
  }
}

// A file without output_freq (the coupler's EXPOUT/OUTPUT): every write is a record at its own
// model time, whatever the times; a grid given by its shape has its dimensions and no
// coordinate variables; a field with fill_value false has no _FillValue. A time average in
// such a file is refused, naming the field and the file.
TEST(IoWrite, RecordsAtModelTimesGridByShape) {
  const int p = etest::world_size(), r = etest::world_rank();
  const std::string dir = out_dir("model_times");
  io::OutputConfig cfg;
  cfg.directory = dir;
  cfg.writers = std::min(p, 3);
  cfg.format = io::have_pnetcdf() || cfg.writers == 1 ? io::Format::cdf5 : io::Format::netcdf4;
  cfg.catch_sigterm = false;
  io::FileConfig file;
  file.name = "t";
  file.format = cfg.format;
  io::FieldConfig sst;
  sst.name = "sst";
  sst.precision = io::Precision::f64;
  sst.fill_value = false;
  file.fields = {sst};
  cfg.files = {file};
  const std::vector<double> times = {0.0, 1000.0, 3600.5, 86400.0};
  const estuary::Decomp d = iotest::decomp_of("perm", 1, p, r);
  const auto define = [&](io::Output& out) {
    out.def_grid("shape", std::vector<i64>{iotest::kNx, iotest::kNy});
    io::FieldDef f;
    f.name = "sst";
    f.grid = "shape";
    f.decomp = d;
    out.def_field(f);
    out.end_def();
  };
  {
    io::Output out(cfg, MPI_COMM_WORLD);
    define(out);
    for (std::size_t k = 0; k < times.size(); ++k) out.write("sst", times[k], iotest::values(d, static_cast<i64>(k), false));
    out.close();
  }
  io::Reader rd(dir + "/t.nc", MPI_COMM_WORLD);
  EXPECT_EQ(rd.times(), times);
  EXPECT_EQ(rd.points("sst"), iotest::kNh);
  EXPECT_EQ(rd.points("lon"), -1);
  EXPECT_EQ(rd.points("lat"), -1);
  int bad = 0;
  for (i64 k = 0; k < static_cast<i64>(times.size()); ++k)
    bad += check_var(rd, "sst", k, 1, [&](i64 g) { return iotest::value2(g, k); });
  EXPECT_TRUE(all_ok(bad == 0)) << bad << " values differ on rank " << r;
  if (r == 0) {  // the header, read with the netCDF library
    int nc = -1, v = -1, dim = -1;
    std::size_t nx = 0, ny = 0;
    ASSERT_EQ(nc_open((dir + "/t.nc").c_str(), NC_NOWRITE, &nc), NC_NOERR);
    ASSERT_EQ(nc_inq_varid(nc, "sst", &v), NC_NOERR);
    EXPECT_EQ(nc_inq_att(nc, v, "_FillValue", nullptr, nullptr), NC_ENOTATT);
    EXPECT_EQ(nc_inq_att(nc, v, "coordinates", nullptr, nullptr), NC_ENOTATT);
    ASSERT_EQ(nc_inq_dimid(nc, "x", &dim), NC_NOERR);
    nc_inq_dimlen(nc, dim, &nx);
    ASSERT_EQ(nc_inq_dimid(nc, "y", &dim), NC_NOERR);
    nc_inq_dimlen(nc, dim, &ny);
    EXPECT_EQ(nx, static_cast<std::size_t>(iotest::kNx));
    EXPECT_EQ(ny, static_cast<std::size_t>(iotest::kNy));
    nc_close(nc);
  }
  cfg.files[0].name = "refused";
  cfg.files[0].fields[0].operation = io::Operation::average;
  std::string what = "no error";
  try {
    io::Output out(cfg, MPI_COMM_WORLD);
    define(out);
  } catch (const estuary::Error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("average field in a file without output_freq"), std::string::npos) << what;
  EXPECT_NE(what.find("file refused"), std::string::npos) << what;
}

// A model that raises mid-run: the destructor writes every record handed over and closes.
TEST(IoShutdown, ExceptionKeepsRecordsHandedOver) {
  const int wp = etest::world_size();
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server}) {
    if (mode == io::Mode::server && wp < 2) continue;
    const std::string dir = out_dir(std::string("throw_") + (mode == io::Mode::server ? "server" : "serverless"));
    const auto cfg = make_config(dir, mode, 1, "  files:\n    - {name: h, output_freq: 1h, fields: [t3]}\n");
    bool caught = false;
    try {
      io::Output out(cfg, MPI_COMM_WORLD);
      if (out.is_server()) {
        out.serve();
      } else {
        int p = 1, r = 0;
        MPI_Comm_size(out.model_comm(), &p);
        MPI_Comm_rank(out.model_comm(), &r);
        const auto d3 = iotest::decomp_of("perm", iotest::kNlev, p, r);
        out.def_grid("atm", iotest::grid_part(p, r));
        out.def_field(iotest::field("t3", true, d3));
        out.end_def();
        for (i64 s = 1; s <= 10; ++s) {
          if (s == 6) throw std::runtime_error("the model failed");
          out.write("t3", 3600.0 * static_cast<double>(s), iotest::values(d3, s, true));
        }
      }
    } catch (const std::runtime_error&) {
      caught = true;
    }
    EXPECT_EQ(caught, mode == io::Mode::serverless || etest::world_rank() < wp - 1);
    io::Reader rd(dir + "/h.nc", MPI_COMM_WORLD);
    EXPECT_EQ(rd.records(), 5);
    int bad = 0;
    for (i64 rec = 0; rec < rd.records(); ++rec)
      bad += check_var(rd, "t3", rec, iotest::kNlev, [&](i64 g) { return iotest::value3(g, rec + 1); });
    EXPECT_TRUE(all_ok(bad == 0));
  }
}

// SIGTERM reaching the ranks at different steps: the library agrees on one output step, writes
// everything handed over, closes the files and throws Terminated on every model rank.
TEST(IoShutdown, SigtermKeepsRecordsHandedOver) {
  const int wp = etest::world_size();
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server}) {
    if (mode == io::Mode::server && wp < 2) continue;
    const std::string dir = out_dir(std::string("term_") + (mode == io::Mode::server ? "server" : "serverless"));
    const auto cfg = make_config(dir, mode, 1,
                                 "  files:\n    - {name: h, output_freq: 2h, restart: true, fields: [t3]}\n");
    bool terminated = false;
    i64 handed = -1;
    {
      io::Output out(cfg, MPI_COMM_WORLD);
      if (out.is_server()) {
        out.serve();
      } else {
        int p = 1, r = 0;
        MPI_Comm_size(out.model_comm(), &p);
        MPI_Comm_rank(out.model_comm(), &r);
        const auto d3 = iotest::decomp_of("cyclic", iotest::kNlev, p, r);
        out.def_grid("atm", iotest::grid_part(p, r));
        out.def_field(iotest::field("t3", true, d3));
        out.end_def();
        try {
          for (i64 s = 1; s <= 20; ++s) {
            if (s == 5 + r % 3) std::raise(SIGTERM);  // ranks see it at steps 5, 6, 7
            out.write("t3", 3600.0 * static_cast<double>(s), iotest::values(d3, s, true));
          }
        } catch (const io::Terminated&) {
          terminated = true;
        }
        handed = out.stats().records_handed_over;
      }
    }
    const bool model = mode == io::Mode::serverless || etest::world_rank() < wp - 1;
    EXPECT_EQ(terminated, model);
    // Rank 0 raises before step 5's write; step 6 is the first output step after: 3 records
    // (hours 2, 4, 6).
    if (etest::world_rank() == 0) {
      EXPECT_EQ(handed, 3);
    }
    // A restart file: renamed from its temporary name when closed.
    EXPECT_TRUE(std::filesystem::exists(dir + "/h.nc"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/h.nc.tmp"));
    io::Reader rd(dir + "/h.nc", MPI_COMM_WORLD);
    EXPECT_EQ(rd.records(), 3);
    int bad = 0;
    for (i64 rec = 0; rec < rd.records(); ++rec)
      bad += check_var(rd, "t3", rec, iotest::kNlev, [&](i64 g) { return iotest::value3(g, 2 * (rec + 1)); });
    EXPECT_TRUE(all_ok(bad == 0));
  }
}
