// libFuzzer target: the weight-file reader (SCRIP and ESMF netCDF files) on MPI_COMM_SELF, with
// and without the caller's grid sizes. The input is the file's bytes.
#include <netcdf.h>

#include "estuary/error.hpp"
#include "estuary/weights.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  fuzz::init_mpi(argc, argv);
  fuzz::warm_netcdf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input(data, size, "weights.nc");
  try {
    estuary::read_weights(path, MPI_COMM_SELF);
  } catch (const estuary::Error&) {
    ++fuzz::errors;
  }
  try {
    estuary::read_global_attribute(path, "title", MPI_COMM_SELF);
  } catch (const estuary::Error&) {
    ++fuzz::errors;
  }
  return 0;
}
