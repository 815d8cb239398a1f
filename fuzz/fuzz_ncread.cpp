// libFuzzer target: the readers of gridded data in netCDF files: the I/O part's Reader (forcing
// and grid variables, read whole through a block decomposition) and the coupler's restart
// reader. The input is the file's bytes.
#include <netcdf.h>

#include <vector>

#include "couple/couple_io.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/io.hpp"
#include "ncfile/ncfile.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  fuzz::init_mpi(argc, argv);
  fuzz::warm_netcdf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input(data, size, "grid.nc");
  // The variables' names, as a caller would know them.
  std::vector<std::string> names;
  try {
    const estuary::detail::NcFile f = estuary::detail::NcFile::open(path);
    int nvars = 0;
    if (nc_inq_nvars(f.id(), &nvars) == NC_NOERR)
      for (int v = 0; v < nvars && v < 16; ++v) {
        char name[NC_MAX_NAME + 1] = {};
        if (nc_inq_varname(f.id(), v, name) == NC_NOERR) names.emplace_back(name);
      }
  } catch (const estuary::Error&) {
    ++fuzz::errors;
  }
  try {
    estuary::io::Reader r(path, MPI_COMM_SELF);
    for (const std::string& var : names) {
      // A small decomposition: the reader must refuse a size mismatch (whatever the file's
      // sizes, even overflowing ones) without reading.
      const estuary::Decomp d = estuary::gen::block(16, 0, 1);
      std::vector<double> out(16);
      for (std::int64_t rec : {std::int64_t{-1}, std::int64_t{0}}) {
        try {
          r.read_record(var, rec, d, out);
        } catch (const estuary::Error&) {
    ++fuzz::errors;
        }
      }
    }
  } catch (const estuary::Error&) {
    ++fuzz::errors;
  }
  try {
    estuary::detail::RestartReader restart(path, MPI_COMM_SELF);
    for (const std::string& var : names) {
      std::vector<double> out(16);
      try {
        restart.read(var, estuary::gen::block(16, 0, 1), out);
      } catch (const estuary::Error&) {
        ++fuzz::errors;
      }
    }
  } catch (const estuary::Error&) {
    ++fuzz::errors;
  }
  return 0;
}
