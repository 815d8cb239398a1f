// An external C++ program built against an installed estuary (find_package): a block → cyclic
// move checked against the values it must produce.
#include <estuary/estuary.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::int64_t n = 100;
  auto src = estuary::gen::block(n, rank, ranks), dst = estuary::gen::cyclic(n, rank, ranks);
  std::vector<double> a, b(static_cast<std::size_t>(dst.size()));
  for (auto g : src.to_indices()) a.push_back(static_cast<double>(g));
  estuary::Redist(src, dst, MPI_COMM_WORLD).run({{a, b}});
  int bad = 0, i = 0;
  for (auto g : dst.to_indices()) bad += b[static_cast<std::size_t>(i++)] != static_cast<double>(g);
  int all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("external C++ program: %s\n", all ? "WRONG" : "ok");
  MPI_Finalize();
  return all ? 1 : 0;
}
