// The I/O server from C++: a model on the ranks but the last writes a sea-surface temperature on
// a 36 x 18 lon-lat grid every hour for 12 hours; the last rank writes the files of
// io_server.yaml (hourly samples and 6-hour means). The same program in C, Fortran and Python:
// io_server.c, io_server.F90, io_server.py; all four write the same files.
//
//   mpirun -n 3 io_server [io_server.yaml]
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "estuary/estuary.hpp"
#include "estuary/io.hpp"

namespace {
constexpr std::int64_t kNx = 36, kNy = 18, kSteps = 12;
// The field at point g (longitude fastest) and hour s: exact in binary, so every language agrees.
double sst(std::int64_t g, std::int64_t s) {
  return 270.0 + 0.25 * static_cast<double>(g % kNx) + 0.5 * static_cast<double>(g / kNx) + static_cast<double>(s);
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    namespace io = estuary::io;
    io::Output out(io::OutputConfig::from_yaml_file(argc > 1 ? argv[1] : "io_server.yaml"), MPI_COMM_WORLD);
    if (out.is_server()) {
      out.serve();  // returns when the model closes
    } else {
      int rank = 0, ranks = 1;
      MPI_Comm_rank(out.model_comm(), &rank);
      MPI_Comm_size(out.model_comm(), &ranks);
      // This model rank's block of grid points.
      const std::int64_t lo = kNx * kNy * rank / ranks, hi = kNx * kNy * (rank + 1) / ranks;
      const estuary::Decomp part = estuary::Decomp::box({kNx * kNy}, {lo}, {hi - lo});
      out.def_grid("grid", estuary::GridGen::lonlat(kNx, kNy).make(part));
      io::FieldDef f;
      f.name = "sst";
      f.grid = "grid";
      f.decomp = part;
      f.units = "K";
      f.standard_name = "sea_surface_temperature";
      out.def_field(f);
      out.end_def();
      std::vector<double> values(static_cast<std::size_t>(hi - lo));
      for (std::int64_t s = 1; s <= kSteps; ++s) {
        for (std::int64_t g = lo; g < hi; ++g) values[static_cast<std::size_t>(g - lo)] = sst(g, s);
        out.write("sst", 3600.0 * static_cast<double>(s), values);  // model time in seconds
      }
      out.close();  // every record reaches the files; the server returns from serve()
      if (rank == 0) std::printf("io_server (C++): %lld hours written\n", static_cast<long long>(kSteps));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
