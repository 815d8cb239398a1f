// A build without PnetCDF (ESTUARY_WITH_PNETCDF off, or PnetCDF not found): no CDF-5 or 64-bit
// offset file from several writers. Output refuses such a configuration when it is constructed
// (output.cpp); this stands in for the PnetCDF backend (backend_pnetcdf.cpp) all the same.
#include "estuary/error.hpp"
#include "io/io_detail.hpp"

namespace estuary::io::detail {

std::unique_ptr<FileWriter> create_pnetcdf(const std::string& path, MPI_Comm) {
  throw Error("PnetCDF is not built in: a classic-format file from more than one writer needs it", "file " + path,
              "use writers: 1 or format: netcdf4, or build estuary with PnetCDF (ESTUARY_WITH_PNETCDF)");
}

}  // namespace estuary::io::detail
