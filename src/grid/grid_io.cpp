// SCRIP grid files, written by each rank in turn so a distributed grid never meets on one rank.

#include <numeric>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "ncfile/ncfile.hpp"

namespace estuary {

using i64 = std::int64_t;

void write_scrip_grid(const std::string& path, const Grid& grid, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  detail::agree(comm, [&] { grid.check(); });
  i64 mine = grid.size(), total = 0;
  detail::check_mpi(MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
  detail::agree(comm, [&] {
    if (total != grid.global_size)
      throw Error("the ranks hold " + std::to_string(total) + " points of a grid of " +
                      std::to_string(grid.global_size),
                  "file " + path + ", grid " + grid.name,
                  "every point must be held by exactly one rank when writing");
  });

  const std::size_t nc = static_cast<std::size_t>(std::max(grid.ncorner, 0));
  detail::in_turns(comm, [&] {
    if (rank == 0) {
      detail::NcFile f = detail::NcFile::create(path);
      const int dsize = f.def_dim("grid_size", grid.global_size);
      const int drank = f.def_dim("grid_rank", static_cast<i64>(grid.dims.size()));
      const int dcorn = nc > 0 ? f.def_dim("grid_corners", static_cast<i64>(nc)) : -1;
      f.def_var("grid_dims", detail::NcFile::kInt, {drank});
      f.put_att("units", "degrees", f.def_var("grid_center_lat", detail::NcFile::kDouble, {dsize}));
      f.put_att("units", "degrees", f.def_var("grid_center_lon", detail::NcFile::kDouble, {dsize}));
      f.put_att("units", "unitless", f.def_var("grid_imask", detail::NcFile::kInt, {dsize}));
      if (nc > 0) {
        f.put_att("units", "degrees", f.def_var("grid_corner_lat", detail::NcFile::kDouble, {dsize, dcorn}));
        f.put_att("units", "degrees", f.def_var("grid_corner_lon", detail::NcFile::kDouble, {dsize, dcorn}));
      }
      f.put_att("title", grid.name);
      f.put_att("kind", name_of(grid.kind));
      f.enddef();
      std::vector<int> dims(grid.dims.begin(), grid.dims.end());
      f.put(f.var("grid_dims"), dims.data());
      f.close();
    }
    if (grid.size() == 0) return;
    detail::NcFile f = detail::NcFile::open(path, true);
    const int vlat = f.var("grid_center_lat"), vlon = f.var("grid_center_lon"), vmask = f.var("grid_imask");
    const int vclat = nc > 0 ? f.var("grid_corner_lat") : -1, vclon = nc > 0 ? f.var("grid_corner_lon") : -1;
    std::vector<i64> idx = grid.points;
    if (idx.empty()) {
      idx.resize(static_cast<std::size_t>(grid.size()));
      std::iota(idx.begin(), idx.end(), i64{0});
    }
    std::vector<int> mask;
    detail::for_each_consecutive(idx, [&](std::size_t at, i64 g, i64 n) {
      const std::size_t start[2] = {static_cast<std::size_t>(g), 0};
      const std::size_t count[2] = {static_cast<std::size_t>(n), nc};
      f.put(vlat, start, count, &grid.lat[at]);
      f.put(vlon, start, count, &grid.lon[at]);
      mask.assign(static_cast<std::size_t>(n), 1);
      if (!grid.mask.empty()) std::copy_n(&grid.mask[at], n, mask.begin());
      f.put(vmask, start, count, mask.data());
      if (nc > 0) {
        f.put(vclat, start, count, &grid.corner_lat[at * nc]);
        f.put(vclon, start, count, &grid.corner_lon[at * nc]);
      }
    });
    f.close();
  });
}

}  // namespace estuary
