// No hand tuning (issue 21): the automatic writer count and buffers. The choice function's rules
// (explicit values win, more volume never fewer writers, the rank caps, the bandwidth rule
// against a brute-force evaluation of the documented model), and configurations without the
// keys writing correct files in both modes, with the choice logged and reported.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "estuary/grid.hpp"
#include "estuary/io.hpp"
#include "estuary/settings.hpp"
#include "test_io_util.hpp"

namespace io = estuary::io;
using etest::i64;

namespace {

// The documented model, evaluated independently: the aggregate bandwidth of d writers, and the
// fewest writers within 10 % of `many` of them.
int bandwidth_rule(double one, double many_mb_s, int many) {
  const double g = many > 1 ? std::min(1.0, std::max(0.0, (many_mb_s / one - 1) / (many - 1))) : 0.0;
  auto agg = [&](int d) { return one * (1 + (std::min(d, many) - 1) * g); };
  for (int d = 1; d <= many; ++d)
    if (agg(d) >= 0.9 * agg(many)) return d;
  return many;
}

io::TuneInput input(io::Mode mode, int ranks, double one, double many_mb_s, int many, double step) {
  io::TuneInput in;
  in.mode = mode;
  in.ranks = ranks;
  in.one_mb_s = one;
  in.many_mb_s = many_mb_s;
  in.many = many;
  in.step_bytes = step;
  return in;
}

}  // namespace

TEST(IoTune, ExplicitValuesWin) {
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server}) {
    io::TuneInput in = input(mode, 64, 100, 400, 4, 1e9);
    in.writers = 3;
    in.buffer_records = 7;
    in.records_per_period = {30};
    in.record_bytes = {1e6};
    in.buffer_budget_bytes = 1e9;
    const io::Tuning t = io::choose_tuning(in);
    EXPECT_EQ(t.writers, 3);
    EXPECT_EQ(t.buffer_records, 7);
    EXPECT_FALSE(t.writers_auto);
    EXPECT_FALSE(t.buffers_auto);
    EXPECT_NE(t.reason.find("writers 3 as configured"), std::string::npos) << t.reason;
  }
}

TEST(IoTune, MoreVolumeNeverFewerWriters) {
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server})
    for (int ranks : {1, 2, 3, 4, 8, 16, 33, 128})
      for (double gain : {0.0, 0.05, 0.3, 0.7, 1.0})
        for (int many : {1, 2, 4, 8}) {
          int last = 0;
          for (double step = 0; step < 2e9; step = step * 1.7 + 1e5) {
            const io::Tuning t =
                io::choose_tuning(input(mode, ranks, 100, 100 * (1 + (many - 1) * gain), many, step));
            EXPECT_GE(t.writers, last) << "ranks " << ranks << " step " << step;
            EXPECT_GE(t.writers, 1);
            last = t.writers;
          }
        }
}

TEST(IoTune, RankCaps) {
  for (int ranks = 1; ranks <= 200; ++ranks) {
    // A file system where every writer adds its full bandwidth, and a huge volume.
    const io::Tuning sl = io::choose_tuning(input(io::Mode::serverless, ranks, 100, 100.0 * ranks, ranks, 1e12));
    EXPECT_LE(sl.writers, ranks);
    EXPECT_TRUE(sl.writers_auto);
    if (ranks < 2) continue;  // server mode needs a model rank
    const io::Tuning sv = io::choose_tuning(input(io::Mode::server, ranks, 100, 100.0 * ranks, ranks, -1));
    EXPECT_LE(sv.writers, ranks - 1);
    EXPECT_LE(sv.writers, std::max(1, ranks / 8));
    EXPECT_GE(sv.writers, 1);
    // Ranks that outnumber the cores share them by turns: up to half of them may serve.
    io::TuneInput shared = input(io::Mode::server, ranks, 100, 100.0 * ranks, ranks, -1);
    shared.cores = std::max(1, ranks / 2);
    const io::Tuning ss = io::choose_tuning(shared);
    EXPECT_EQ(ss.writers, std::max(1, std::min({ranks - 1, ranks / 2, shared.cores})));
  }
  // No more writers than the nodes' cores (ranks beyond them take turns with the writers).
  for (int cores : {1, 2, 3, 48}) {
    io::TuneInput c = input(io::Mode::serverless, 64, 100, 6400, 64, 1e12);
    c.many = 64;
    c.cores = cores;
    EXPECT_EQ(io::choose_tuning(c).writers, std::min(cores, 64)) << cores;
  }
  // Files only one writer can write (no PnetCDF / parallel netCDF-4): one writer.
  io::TuneInput in = input(io::Mode::serverless, 16, 100, 1600, 16, 1e12);
  in.parallel_files = false;
  EXPECT_EQ(io::choose_tuning(in).writers, 1);
}

TEST(IoTune, BandwidthRuleAndVolumeRule) {
  // Enough volume and ranks: the bandwidth rule alone, against the model evaluated here.
  for (int many : {1, 2, 4, 8})
    for (double ratio : {0.5, 1.0, 1.1, 1.5, 2.0, 3.0, 3.9, 8.0}) {
      const double m = many == 1 ? 100 : 100 * ratio;
      const io::Tuning t = io::choose_tuning(input(io::Mode::serverless, 64, 100, m, many, 1e12));
      EXPECT_EQ(t.writers, bandwidth_rule(100, m, many)) << "many " << many << " ratio " << ratio << ": " << t.reason;
    }
  // No gain from added writers (one disk): one writer, whatever the volume.
  EXPECT_EQ(io::choose_tuning(input(io::Mode::serverless, 64, 100, 100, 4, 1e12)).writers, 1);
  // Perfect scaling to 4 but a step of 2.5 slabs: the volume allows 2.
  EXPECT_EQ(io::choose_tuning(input(io::Mode::serverless, 64, 100, 400, 4, 2.5 * io::kMinSlabBytes)).writers, 2);
  // A small step: one writer.
  EXPECT_EQ(io::choose_tuning(input(io::Mode::serverless, 64, 100, 400, 4, 0.5 * io::kMinSlabBytes)).writers, 1);
  // Unknown bandwidth: one writer.
  EXPECT_EQ(io::choose_tuning(input(io::Mode::serverless, 64, 0, 0, 1, 1e12)).writers, 1);
}

TEST(IoTune, ServerBuffersFromThePeriodsAndTheBudget) {
  io::TuneInput in = input(io::Mode::server, 4, 100, 100, 1, 1e9);
  in.writers = 1;
  in.records_per_period = {30, 1};  // a daily field and a monthly one, in a month
  in.record_bytes = {1e6, 10e6};
  in.buffer_budget_bytes = 1e9;
  io::Tuning t = io::choose_tuning(in);
  EXPECT_TRUE(t.buffers_auto);
  EXPECT_EQ(t.buffer_records, 30);  // a longest period's records of the daily field
  in.buffer_budget_bytes = 100e6;   // 11 MB a buffer record over both fields
  EXPECT_EQ(io::choose_tuning(in).buffer_records, 9);
  in.buffer_budget_bytes = 1e6;     // at least double buffering
  EXPECT_EQ(io::choose_tuning(in).buffer_records, 2);
  in.records_per_period = {1, 1};   // one output frequency: double buffering
  in.buffer_budget_bytes = 1e9;
  EXPECT_EQ(io::choose_tuning(in).buffer_records, 2);
  in.mode = io::Mode::serverless;   // no buffers without servers
  EXPECT_FALSE(io::choose_tuning(in).buffers_auto);
}

TEST(IoTune, ConfigKeys) {
  const std::string files = "  files:\n    - {name: f, output_freq: 1h, fields: [a]}\n";
  const auto absent = io::OutputConfig::from_yaml_string("output:\n" + files);
  EXPECT_EQ(absent.writers, 0);
  EXPECT_EQ(absent.buffer_records, 0);
  EXPECT_EQ(absent.write_bandwidth, 0);
  const auto given =
      io::OutputConfig::from_yaml_string("output:\n  writers: auto\n  buffer_records: 4\n  write_bandwidth: 250.5\n" + files);
  EXPECT_EQ(given.writers, 0);
  EXPECT_EQ(given.buffer_records, 4);
  EXPECT_EQ(given.write_bandwidth, 250.5);
  EXPECT_NE(iotest::config_error("output:\n  write_bandwidth: fast\n" + files)
                .find("expected one writer's bandwidth in MB/s, got 'fast' (bad.yaml:2, key output.write_bandwidth)"),
            std::string::npos)
      << iotest::config_error("output:\n  write_bandwidth: fast\n" + files);
  EXPECT_NE(iotest::config_error("output:\n  writers: many\n" + files).find("key output.writers"), std::string::npos);
}

namespace {

// A configuration without writers or buffer_records, written on every rank count in `mode`: a
// 3-D field of `nx` x `ny` x `nlev` (double, instant, 2 records) and a 2-D daily mean (float).
// Fails the test on a wrong value in the files, a missing log line or a report that disagrees.
void write_and_check(io::Mode mode, i64 nx, i64 ny, i64 nlev, const std::string& extra, const std::string& expect_in_log) {
  const int wp = etest::world_size(), wr = etest::world_rank();
  const std::string tag = std::string(io::name_of(mode)) + "_" + std::to_string(nx) + (extra.empty() ? "" : "_given");
  const std::string dir = iotest::out_dir("tune_", tag);
  const std::string yaml = "output:\n  mode: " + std::string(io::name_of(mode)) + "\n  directory: " + dir + "\n" + extra +
                           "  calendar: noleap\n  catch_sigterm: false\n  files:\n"
                           "    - name: inst\n      output_freq: 6h\n      fields:\n        - {name: t3, precision: double}\n"
                           "    - name: day\n      output_freq: 1d\n      fields:\n        - {name: s2, operation: average}\n";
  const auto cfg = io::OutputConfig::from_yaml_string(yaml, "tune.yaml");
  const i64 nh = nx * ny;
  auto v3 = [](i64 g, i64 s) { return 0.5 * static_cast<double>(g) + static_cast<double>(s); };
  auto v2 = [](i64 g, i64 s) { return static_cast<double>(g % 1000) + 0.25 * static_cast<double>(s); };
  std::string log;
  io::IoReport rep;
  int model_writers = -1;
  {
    if (wr == 0) testing::internal::CaptureStderr();
    io::Output out(cfg, MPI_COMM_WORLD);
    if (out.is_server()) {
      out.serve();
    } else {
      int p = 1, r = 0;
      MPI_Comm_size(out.model_comm(), &p);
      MPI_Comm_rank(out.model_comm(), &r);
      const auto [y0, y1] = etest::block_range(ny, p, r);
      const auto d2 = estuary::Decomp::box({ny, nx}, {y0, 0}, {y1 - y0, nx});
      const auto d3 = estuary::Decomp::box({nlev, ny, nx}, {0, y0, 0}, {nlev, y1 - y0, nx});
      out.def_grid("g", estuary::GridGen::lonlat(nx, ny).make(d2));
      io::FieldDef f3;
      f3.name = "t3";
      f3.grid = "g";
      for (i64 z = 0; z < nlev; ++z) f3.levels.push_back(static_cast<double>(z));
      f3.decomp = d3;
      out.def_field(f3);
      io::FieldDef f2;
      f2.name = "s2";
      f2.grid = "g";
      f2.decomp = d2;
      out.def_field(f2);
      out.end_def();
      if (wr == 0) log = testing::internal::GetCapturedStderr();
      const auto i3 = d3.to_indices(), i2 = d2.to_indices();
      for (i64 s = 1; s <= 8; ++s) {  // 6-hourly steps: 2 days
        std::vector<double> a, b;
        for (i64 g : i3) a.push_back(v3(g, s));
        for (i64 g : i2) b.push_back(v2(g, s));
        const double t = 21600.0 * static_cast<double>(s);
        if (s % 4 == 0) out.write("t3", t, a);  // the 6-hourly file gets a record at steps 4 and 8
        out.write("s2", t, b);
      }
      out.close();
      model_writers = out.writers();
    }
    rep = out.report(1.0);
  }
  // The log line on rank 0 (a model rank in both modes) names the choice; the report agrees.
  if (wr == 0) {
    std::cout << log;  // the choice, for whoever reads the test's output
    EXPECT_NE(log.find("estuary: output tune.yaml: writers " + std::to_string(rep.writers) + " (auto: "), std::string::npos)
        << log;
    // One rank: no writer could be added, so nothing is measured or looked up.
    EXPECT_NE(log.find(wp > 1 ? expect_in_log : "bandwidth not measured -> 1"), std::string::npos) << log;
    EXPECT_EQ(model_writers, rep.writers);
    if (mode == io::Mode::server) {
      EXPECT_NE(log.find("buffer_records"), std::string::npos) << log;
    }
  }
  EXPECT_TRUE(rep.writers_auto);
  EXPECT_GE(rep.writers, 1);
  EXPECT_LE(rep.writers, mode == io::Mode::server ? wp - 1 : wp);
  EXPECT_EQ(rep.model_ranks, wp - (mode == io::Mode::server ? rep.writers : 0));
  EXPECT_NE(rep.json().find("\"writers_auto\": true"), std::string::npos) << rep.json();
  EXPECT_NE(rep.tuning.find("auto"), std::string::npos);
  // The files: every value where it belongs (read back in a permuted decomposition).
  io::Reader inst(dir + "/inst.nc", MPI_COMM_WORLD);
  ASSERT_EQ(inst.records(), 2);
  int bad = 0;
  for (i64 rec = 0; rec < 2; ++rec) {
    const auto d = etest::permuted_block(nlev * nh, wp, wr, 3);
    std::vector<double> got(static_cast<std::size_t>(d.size()));
    inst.read_record("t3", rec, d, got);
    const auto idx = d.to_indices();
    for (std::size_t i = 0; i < idx.size(); ++i) bad += got[i] != v3(idx[i], 4 * (rec + 1));
  }
  io::Reader day(dir + "/day.nc", MPI_COMM_WORLD);
  ASSERT_EQ(day.records(), 2);
  for (i64 rec = 0; rec < 2; ++rec) {
    const auto d = etest::permuted_block(nh, wp, wr, 4);
    std::vector<double> got(static_cast<std::size_t>(d.size()));
    day.read_record("s2", rec, d, got);
    const auto idx = d.to_indices();
    for (std::size_t i = 0; i < idx.size(); ++i) {
      double sum = 0;
      for (i64 s = 4 * rec + 1; s <= 4 * rec + 4; ++s) sum += v2(idx[i], s);
      bad += got[i] != static_cast<double>(static_cast<float>(sum / 4));
    }
  }
  int total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, 0);
}

}  // namespace

// Small volume: one writer, decided without measuring (no added writer could pay off).
TEST(IoTuneRun, SmallConfigWithoutKeys) {
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server}) {
    if (mode == io::Mode::server && etest::world_size() < 2) continue;
    SCOPED_TRACE(io::name_of(mode));
    write_and_check(mode, 24, 12, 3, "", mode == io::Mode::server ? "the volume is not known" : "-> at most 1 at");
  }
}

// An output step of 2 slabs (8.4 MB): serverless may choose 2 writers after measuring the
// directory's bandwidth (which of 1 and 2 depends on the disk); the files are the same.
TEST(IoTuneRun, MeasuredBandwidth) {
  write_and_check(io::Mode::serverless, 256, 128, 32, "", "one writer ");
}

// The bandwidth given by ESTUARY_IO_BANDWIDTH (through Settings) is used instead of measuring.
TEST(IoTuneRun, BandwidthFromTheEnvironment) {
  ::setenv("ESTUARY_IO_BANDWIDTH", "123", 1);
  estuary::Settings::reload();
  write_and_check(io::Mode::serverless, 256, 128, 32, "", "one writer 123 MB/s");
  ::unsetenv("ESTUARY_IO_BANDWIDTH");
  estuary::Settings::reload();
  // output.write_bandwidth wins over the variable.
  write_and_check(io::Mode::serverless, 256, 128, 32, "  write_bandwidth: 321\n", "one writer 321 MB/s");
}
