// netCDF helpers of the tests (read with the netCDF library directly, independent of estuary).
#pragma once

#include <netcdf.h>

#include <cstddef>
#include <vector>

// The number of values of variable v of an open netCDF file (every record).
inline std::size_t nc_values(int nc, int v) {
  int nd = 0;
  nc_inq_varndims(nc, v, &nd);
  std::vector<int> dims(static_cast<std::size_t>(nd));
  nc_inq_vardimid(nc, v, dims.data());
  std::size_t total = 1;
  for (int d : dims) {
    std::size_t len = 0;
    nc_inq_dimlen(nc, d, &len);
    total *= len;
  }
  return total;
}
