// Shared by the fuzz targets: MPI initialised once (the readers are collective over a
// communicator; the targets use MPI_COMM_SELF), and a file per input in a private tmpfs folder
// for the readers that take a path.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define ESTUARY_FUZZ_LSAN 1
#endif
#endif

namespace fuzz {

// How many estuary::Errors the targets caught (the regression tests expect one per input).
inline long errors = 0;

inline void init_mpi(int* argc, char*** argv) {
  int done = 0;
  MPI_Initialized(&done);
  // Open MPI's own handlers for SIGABRT/SIGSEGV/... would print a stack and exit before
  // libFuzzer's handler saves the crashing input: leave the signals to libFuzzer.
  setenv("OMPI_MCA_opal_signal", "", 0);
  // Open MPI keeps what MPI_Init allocates, partly in modules it unloads (stacks LSan cannot
  // name, so no suppression matches): left out of the leak checks.
#ifdef ESTUARY_FUZZ_LSAN
  __lsan_disable();
#endif
  if (!done) MPI_Init(argc, argv);
  // What the libraries allocate once and keep (Open MPI's collectives on a communicator, HDF5's
  // start-up): done here, before libFuzzer counts allocations per input, so that its leak check
  // is not set off by them.
  int v = 1, r = 0;
  MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_MAX, MPI_COMM_SELF);
  MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
  long long w = 1, x = 0;
  MPI_Allreduce(&w, &x, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_SELF);
  MPI_Allreduce(&w, &x, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_SELF);
  MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_SELF);
  MPI_Bcast(&w, 1, MPI_LONG_LONG, 0, MPI_COMM_SELF);
  MPI_Allgather(&v, 1, MPI_INT, &r, 1, MPI_INT, MPI_COMM_SELF);
  MPI_Exscan(&w, &x, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_SELF);
  MPI_Barrier(MPI_COMM_SELF);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_SELF, &dup);
  MPI_Comm_free(&dup);
#ifdef ESTUARY_FUZZ_LSAN
  __lsan_enable();
#endif
}

// The input written to <tmpfs>/estuary-fuzz-<pid>/<name>, overwritten by every input.
inline std::string write_input(const std::uint8_t* data, std::size_t size, const std::string& name) {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    auto d = base / ("estuary-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::string path = (dir / name).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
  return path;
}

// HDF5 and netCDF-4 start once (their lasting allocations): a netCDF-4 file written and read.
// Call from the Initialize of targets that read netCDF (#include <netcdf.h> before this file).
#ifdef NC_NETCDF4
inline void warm_netcdf() {
  const std::string path = write_input(nullptr, 0, "warm.nc");
  for (int mode : {NC_CLOBBER, NC_CLOBBER | NC_NETCDF4, NC_CLOBBER | NC_64BIT_DATA}) {
    int nc = -1, dim = -1, var = -1;
    if (nc_create(path.c_str(), mode, &nc) != NC_NOERR) continue;
    nc_def_dim(nc, "n", 2, &dim);
    nc_def_var(nc, "v", NC_DOUBLE, 1, &dim, &var);
    nc_put_att_text(nc, NC_GLOBAL, "title", 1, "t");
    nc_close(nc);
    if (nc_open(path.c_str(), NC_NOWRITE, &nc) == NC_NOERR) {
      double d[2];
      nc_get_var_double(nc, var, d);
      nc_close(nc);
    }
  }
}
#endif

}  // namespace fuzz
