// Restart on another process count: a restart file written from 4 ranks (2 writers, block and
// permuted decompositions) reads back identically on 3 and on 5 ranks. Needs at least 5 ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>

#include "test_io_util.hpp"

namespace io = estuary::io;
using iotest::i64;

namespace {
// The first n ranks of the world (MPI_COMM_NULL elsewhere).
MPI_Comm first_ranks(int n) {
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, etest::world_rank() < n ? 0 : MPI_UNDEFINED, etest::world_rank(), &c);
  return c;
}
}  // namespace

TEST(IoRestart, WrittenOnFourReadOnThreeAndFive) {
  ASSERT_GE(etest::world_size(), 5) << "register this test with 5 or more ranks";
  const std::string dir = std::string(ESTUARY_IO_TEST_DIR) + "/restart_np" + std::to_string(etest::world_size());
  MPI_Comm four = first_ranks(4);
  if (four != MPI_COMM_NULL) {
    const auto cfg = io::OutputConfig::from_yaml_string(
        "output:\n  writers: 2\n  directory: " + dir +
            "\n  files:\n    - name: restart\n      output_freq: 1d\n      restart: true\n"
            "      fields: [{name: t3, precision: double}, {name: sst, precision: double}]\n",
        "restart config");
    io::Output out(cfg, four);
    int r = 0;
    MPI_Comm_rank(four, &r);
    const auto d3 = iotest::decomp_of("perm", iotest::kNlev, 4, r);
    const auto d2 = iotest::decomp_of("block", 1, 4, r);
    out.def_grid("atm", iotest::grid_part(4, r));
    out.def_field(iotest::field("t3", true, d3));
    out.def_field(iotest::field("sst", false, d2));
    out.end_def();
    out.write("t3", 86400.0, iotest::values(d3, 24, true));
    out.write("sst", 86400.0, iotest::values(d2, 24, false));
    out.close();
    MPI_Comm_free(&four);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int n : {3, 5}) {
    MPI_Comm c = first_ranks(n);
    int bad = 0;
    if (c != MPI_COMM_NULL) {
      int r = 0;
      MPI_Comm_rank(c, &r);
      io::Reader rd(dir + "/restart.nc", c);
      EXPECT_EQ(rd.records(), 1);
      for (const std::string kind : {"boxes", "cyclic"}) {
        const auto d3 = iotest::decomp_of(kind, iotest::kNlev, n, r);
        const auto d2 = iotest::decomp_of(kind, 1, n, r);
        std::vector<double> t3(static_cast<std::size_t>(d3.size())), sst(static_cast<std::size_t>(d2.size()));
        rd.read("t3", 86400.0, d3, t3);
        rd.read("sst", 86400.0, d2, sst);
        if (t3 != iotest::values(d3, 24, true)) ++bad;
        if (sst != iotest::values(d2, 24, false)) ++bad;
      }
      EXPECT_EQ(bad, 0) << "restart read on " << n << " ranks differs on rank " << r;
      MPI_Comm_free(&c);
    }
    EXPECT_TRUE(etest::all_ok(bad == 0));
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/restart.nc.tmp"));
}
