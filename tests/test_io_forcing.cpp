// Periodic forcing with prefetch, split-file dates and the run metrics.
// Forcing: a 4-record "climatology" (records at 6, 12, 18, 24 h, period 1 day) written through
// Output in netCDF-4 and CDF-5, read back by Reader::read at model times over three periods in
// another decomposition; every value equals the reference of the record t modulo the period,
// also across the wrap-around from the last record to the first, and after the first read each
// one is served by the record prefetched in the background.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "test_io_util.hpp"

namespace io = estuary::io;
using iotest::i64;

namespace {

std::string write_forcing(const std::string& format, int writers) {
  const std::string dir = std::string(ESTUARY_IO_TEST_DIR) + "/forcing_" + format + "_np" +
                          std::to_string(etest::world_size());
  const auto cfg = io::OutputConfig::from_yaml_string(
      "output:\n  writers: " + std::to_string(writers) + "\n  directory: " + dir + "\n  format: " + format +
          "\n  files:\n    - name: clim\n      output_freq: 6h\n"
          "      fields: [{name: t3, precision: double}, {name: sst, precision: double}]\n",
      "forcing config");
  io::Output out(cfg, MPI_COMM_WORLD);
  const int p = etest::world_size(), r = etest::world_rank();
  const auto d3 = iotest::decomp_of("block", iotest::kNlev, p, r);
  const auto d2 = iotest::decomp_of("cyclic", 1, p, r);
  out.def_grid("atm", iotest::grid_part(p, r));
  out.def_field(iotest::field("t3", true, d3));
  out.def_field(iotest::field("sst", false, d2));
  out.end_def();
  for (int k = 1; k <= 4; ++k) {
    out.write("t3", 6 * 3600.0 * k, iotest::values(d3, k, true));
    out.write("sst", 6 * 3600.0 * k, iotest::values(d2, k, false));
  }
  out.close();
  return dir + "/clim.nc";
}

void check_periodic(const std::string& path) {
  const int p = etest::world_size(), r = etest::world_rank();
  const auto d3 = iotest::decomp_of("boxes", iotest::kNlev, p, r);
  const auto d2 = iotest::decomp_of("perm", 1, p, r);
  std::vector<double> t3(static_cast<std::size_t>(d3.size())), sst(static_cast<std::size_t>(d2.size()));
  int bad = 0;
  {
    // One variable, model steps of 6 h over three days: records 1, 2, 3, 4, 1 (wrap), 2, ...
    // Every read after the first is served by the prefetch, the wrap-arounds included.
    io::Reader rd(path, MPI_COMM_WORLD);
    ASSERT_EQ(rd.records(), 4);
    rd.set_period(86400.0);
    for (int step = 1; step <= 12; ++step) {
      const i64 rec = (step - 1) % 4 + 1;
      rd.read("t3", 6 * 3600.0 * step, d3, t3);
      if (t3 != iotest::values(d3, rec, true)) ++bad;
    }
    EXPECT_EQ(rd.prefetch_hits(), 11) << "rank " << r;
  }
  {
    // Two variables in turn, and a later start: a prefetch of the other variable is discarded
    // and the values stay right.
    io::Reader rd(path, MPI_COMM_WORLD);
    rd.set_period(86400.0);
    for (int step = 3; step <= 11; ++step) {
      const i64 rec = (step - 1) % 4 + 1;
      rd.read("t3", 6 * 3600.0 * step, d3, t3);
      if (t3 != iotest::values(d3, rec, true)) ++bad;
      if (step % 3 == 0) {
        rd.read("sst", 6 * 3600.0 * step, d2, sst);
        if (sst != iotest::values(d2, rec, false)) ++bad;
      }
    }
    // Times between records are not records: an error naming the file and variable.
    try {
      rd.read("t3", 3600.0, d3, t3);
      ADD_FAILURE() << "no error for a time without a record";
    } catch (const estuary::Error& e) {
      EXPECT_NE(std::string(e.what()).find("variable t3"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(bad, 0) << "rank " << r;
  EXPECT_TRUE(etest::all_ok(bad == 0));
}

}  // namespace

TEST(IoForcing, PrefetchThroughWrapAroundNetcdf4) {
  check_periodic(write_forcing("netcdf4", std::min(2, etest::world_size())));
}

TEST(IoForcing, PrefetchThroughWrapAroundCdf5) { check_periodic(write_forcing("cdf5", 1)); }

TEST(IoForcing, DateLabels) {
  // Split-file names in the CF calendars (cftime gives the same; see tests/io/test_io_more.py).
  EXPECT_EQ(io::date_label(86400.0, "2004-02-28", "noleap", 86400), "20040301");
  EXPECT_EQ(io::date_label(86400.0, "2004-02-28", "standard", 86400), "20040229");
  EXPECT_EQ(io::date_label(86400.0, "1900-02-28", "standard", 86400), "19000301");
  EXPECT_EQ(io::date_label(86400.0, "1900-02-28", "julian", 86400), "19000229");
  EXPECT_EQ(io::date_label(3 * 86400.0, "2001-02-28", "360_day", 86400), "20010301");
  EXPECT_EQ(io::date_label(86400.0, "2001-02-28", "all_leap", 86400), "20010229");
  EXPECT_EQ(io::date_label(-86400.0, "2001-01-01", "noleap", 86400), "20001231");
  EXPECT_EQ(io::date_label(6 * 3600.0, "2001-12-31 18:00:00", "noleap", 6 * 3600), "200201010000");
  EXPECT_EQ(io::date_label(90.0, "2001-01-01", "noleap", 90), "20010101000130");
  EXPECT_THROW(io::date_label(0, "yesterday", "noleap", 1), estuary::Error);
}

// The run metrics (Output::report): bytes and records summed over the writers, the CPMIP Data
// Output Cost and Data Intensity from the formulas of paper 002 §1, computed here.
TEST(IoReport, BytesRecordsAndCpmipMeasures) {
  const int p = etest::world_size(), r = etest::world_rank();
  const std::string dir = std::string(ESTUARY_IO_TEST_DIR) + "/report_np" + std::to_string(p);
  for (const std::string mode : {"serverless", "server"}) {
    if (mode == "server" && p < 2) continue;
    SCOPED_TRACE(mode);
    const auto cfg = io::OutputConfig::from_yaml_string(
        "output:\n  mode: " + mode + "\n  writers: 1\n  directory: " + dir + "_" + mode +
            "\n  files:\n    - name: r\n      output_freq: 1h\n"
            "      fields: [{name: t3, precision: double}, {name: sst, precision: float}]\n",
        "report config");
    io::Output out(cfg, MPI_COMM_WORLD);
    if (out.is_server()) {
      out.serve();
    } else {
      int mp = 1, mr = 0;
      MPI_Comm_size(out.model_comm(), &mp);
      MPI_Comm_rank(out.model_comm(), &mr);
      const auto d3 = iotest::decomp_of("cyclic", iotest::kNlev, mp, mr);
      const auto d2 = iotest::decomp_of("block", 1, mp, mr);
      out.def_grid("atm", iotest::grid_part(mp, mr));
      out.def_field(iotest::field("t3", true, d3));
      out.def_field(iotest::field("sst", false, d2));
      out.end_def();
      for (int k = 1; k <= 4; ++k) {
        out.write("t3", 3600.0 * k, iotest::values(d3, k, true));
        out.write("sst", 3600.0 * k, iotest::values(d2, k, false));
      }
      out.close();
      EXPECT_GT(out.stats().setup_s, 0);
    }
    const io::IoReport rep = out.report(10.0, 8.0);
    const int model_ranks = mode == "server" ? p - 1 : p;
    // 4 records of t3 (double, 3 levels) and sst (float); the lon-lat grid's 1-D coordinates
    // are written whole at file creation and not counted.
    const i64 nh = iotest::kNh;
    EXPECT_EQ(rep.bytes_written, 4 * (3 * nh * 8 + nh * 4));
    EXPECT_EQ(rep.records_written, 4 * 2);
    EXPECT_EQ(rep.files_created, 1);
    EXPECT_EQ(rep.ranks, p);
    EXPECT_EQ(rep.model_ranks, model_ranks);
    const double ch = p * 10.0 / 3600, ch0 = model_ranks * 8.0 / 3600;
    EXPECT_NEAR(rep.core_hours, ch, 1e-12);
    EXPECT_NEAR(rep.data_output_cost, (ch - ch0) / ch0, 1e-12);
    EXPECT_NEAR(rep.data_intensity, static_cast<double>(rep.bytes_written) / 1e9 / ch, 1e-12);
    EXPECT_GT(rep.write_s, 0);
    EXPECT_GT(rep.model_io_s, 0);
    EXPECT_NE(rep.json().find("\"data_output_cost\": "), std::string::npos) << rep.json();
    (void)r;
  }
}
