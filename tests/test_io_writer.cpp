// A toy model that writes the test fields through estuary's I/O, for the independent Python
// readers of tests/io/ (run from ctest). Samples every hour: t3 (3-D) and sst (2-D).
//
//   mpirun -n P test_io_writer CONFIG.yaml|CONFIG.xml DECOMP NSTEPS [throw-at STEP | sigterm-at STEP |
//                                                        sleep-ms MS]
// Prints "handed_over N" (model rank 0, sum over this rank's variables) on exit.
#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <thread>

#include "test_io_util.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc < 4) {
    std::fprintf(stderr, "usage: test_io_writer CONFIG DECOMP NSTEPS [throw-at|sigterm-at STEP]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const std::string mode = argc > 5 ? argv[4] : "";
  const long at = argc > 5 ? std::atol(argv[5]) : -1;
  int code = 0;
  long handed = 0;
  bool is_model = true;
  int mrank = 0;
  try {
    // CONFIG.yaml, or an XIOS XML CONFIG.xml (the directory then CONFIG_out: XIOS keeps it elsewhere).
    const std::string path = argv[1];
    const bool xml = path.size() > 4 && path.compare(path.size() - 4, 4, ".xml") == 0;
    auto cfg = xml ? estuary::io::OutputConfig::from_xios_xml(path) : estuary::io::OutputConfig::from_yaml_file(path);
    if (xml) cfg.directory = path.substr(0, path.size() - 4) + "_out";
    estuary::io::Output out(cfg, MPI_COMM_WORLD);
    if (out.is_server()) {
      is_model = false;
      out.serve();
    } else {
      MPI_Comm mc = out.model_comm();
      int p = 1;
      MPI_Comm_size(mc, &p);
      MPI_Comm_rank(mc, &mrank);
      const auto d3 = iotest::decomp_of(argv[2], iotest::kNlev, p, mrank);
      const auto d2 = iotest::decomp_of(argv[2], 1, p, mrank);
      // ESTUARY_IO_MASK=grid: the grid carries an analytic land mask (GridGen::with_land);
      // =field: each field its own mask, 0 where (global index mod grid size) % 5 == 0.
      const char* mask_env = std::getenv("ESTUARY_IO_MASK");
      const std::string mask = mask_env ? mask_env : "";
      out.def_grid("atm", mask == "grid" ? estuary::GridGen::lonlat(iotest::kNx, iotest::kNy).with_land().make(
                                               etest::cyclic(iotest::kNh, p, mrank))
                                         : iotest::grid_part(p, mrank));
      auto f3 = iotest::field("t3", true, d3), f2 = iotest::field("sst", false, d2);
      if (mask == "field")
        for (auto* f : {&f3, &f2})
          for (auto g : f->decomp.to_indices()) f->mask.push_back(g % iotest::kNh % 5 == 0 ? 0 : 1);
      out.def_field(f3);
      out.def_field(f2);
      out.end_def();
      const long nsteps = std::atol(argv[3]);
      // Model seconds between steps: an hour, or ESTUARY_IO_STEP_S (a day for a year of monthly means).
      const char* step_env = std::getenv("ESTUARY_IO_STEP_S");
      const double step_s = step_env ? std::atof(step_env) : 3600.0;
      try {
        for (long s = 1; s <= nsteps; ++s) {
          // The exception and the signal strike during the model's own work, between writes;
          // the signal reaches ranks at different steps, as a job scheduler's would.
          if (mode == "throw-at" && s == at) throw std::runtime_error("model failure at step " + std::to_string(s));
          if (mode == "sigterm-at" && s == at + mrank % 2) std::raise(SIGTERM);
          // The model's work between writes, so that a signal sent from outside lands here.
          if (mode == "sleep-ms") std::this_thread::sleep_for(std::chrono::milliseconds(at));
          out.write("t3", step_s * s, iotest::values(d3, s, true));
          out.write("sst", step_s * s, iotest::values(d2, s, false));
        }
        out.close();
      } catch (...) {
        handed = static_cast<long>(out.stats().records_handed_over);
        throw;
      }
      handed = static_cast<long>(out.stats().records_handed_over);
    }
  } catch (const estuary::io::Terminated& e) {
    if (mrank == 0) std::printf("terminated: %s\n", e.what());
    code = 3;
  } catch (const std::exception& e) {
    if (mrank == 0) std::printf("exception: %s\n", e.what());
    code = 4;
  }
  if (is_model && mrank == 0) std::printf("handed_over %ld\n", handed);
  std::fflush(stdout);
  MPI_Finalize();
  return code;
}
