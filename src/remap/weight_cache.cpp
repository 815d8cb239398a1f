// Weights cached in a file (remap/weight_cache.hpp).
#include "remap/weight_cache.hpp"

#include <cstdio>
#include <filesystem>

#include "common/mpi_util.hpp"

namespace estuary::detail {

std::string path_in(const std::string& dir, const std::string& file) {
  if (dir.empty() || file.empty() || file[0] == '/') return file;
  return dir + "/" + file;
}

std::string hex_fingerprints(const Grid& sg, const Grid& dg, MPI_Comm comm) {
  char fp[40];
  std::snprintf(fp, sizeof fp, "%016llx-%016llx", static_cast<unsigned long long>(grid_fingerprint(sg, comm)),
                static_cast<unsigned long long>(grid_fingerprint(dg, comm)));
  return fp;
}

CachedWeights cached_weights(const std::string& file, const std::string& fp, std::int64_t src_global,
                             std::int64_t dst_global, MPI_Comm comm,
                             const std::function<void(Links&, WeightWriteOptions&)>& generate) {
  CachedWeights out;
  out.weight_file = file;
  int exists = std::filesystem::exists(file) ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &exists, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  const std::string key = exists ? read_global_attribute(file, "estuary_fingerprint", comm) : "";
  // 0 read the user's file, 1 reuse the cache, 2 generate: the same on every rank.
  int action = !exists ? 2 : key.empty() ? 0 : key == fp ? 1 : 2;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &action, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (action == 0) {
    out.from = CachedWeights::From::user_file;
  } else if (action == 1) {
    out.from = CachedWeights::From::cache;
  } else {
    const double t0 = MPI_Wtime();
    WeightWriteOptions wo;
    generate(out.links, wo);
    wo.attributes.insert(wo.attributes.begin(), {"estuary_fingerprint", fp});
    const std::string tmp = file + ".tmp";
    write_weights(tmp, out.links, src_global, dst_global, comm, wo);
    int r = 0;
    MPI_Comm_rank(comm, &r);
    if (r == 0) std::filesystem::rename(tmp, file);
    check_mpi(MPI_Barrier(comm), "MPI_Barrier");
    out.from = CachedWeights::From::generated;
    out.seconds = MPI_Wtime() - t0;
    out.weight_file.clear();  // the Remap takes the links in memory
  }
  return out;
}

}  // namespace estuary::detail
