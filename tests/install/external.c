/* An external C program built against an installed estuary (pkg-config): cyclic → block. */
#include <estuary.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int64_t n = 100;
  int64_t cstart = rank, ccount = (n - rank + ranks - 1) / ranks, cstride = ranks;
  int64_t bstart = n * rank / ranks, bcount = n * (rank + 1) / ranks - bstart;
  est_decomp src = NULL, dst = NULL;
  est_redist r = NULL;
  int bad = 0;
  if (est_decomp_new_stripes(n, &cstart, &ccount, &cstride, 1, &src) ||
      est_decomp_new_stripes(n, &bstart, &bcount, NULL, 1, &dst) ||
      est_redist_new(src, dst, MPI_COMM_WORLD, NULL, &r)) {
    fprintf(stderr, "%s\n", est_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int64_t* a = malloc(sizeof(int64_t) * (size_t)(ccount + 1));
  int64_t* b = malloc(sizeof(int64_t) * (size_t)(bcount + 1));
  for (int64_t i = 0; i < ccount; ++i) a[i] = cstart + i * cstride;
  est_type t = EST_I64;
  const void* s[1] = {a};
  void* d[1] = {b};
  if (est_redist_run(r, 1, &t, s, d)) bad = 1;
  for (int64_t i = 0; i < bcount; ++i) bad += b[i] != bstart + i;
  int64_t gsize = 0; /* a grid recipe: the installed header and library are the current ones */
  if (est_grid_gen_info("lonlat", 4, 2, 0, &gsize, NULL, NULL, NULL) != EST_OK || gsize != 8) bad += 1;
  int all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("external C program: %s\n", all ? "WRONG" : "ok");
  est_redist_free(&r);
  est_decomp_free(&src);
  est_decomp_free(&dst);
  free(a);
  free(b);
  MPI_Finalize();
  return all ? 1 : 0;
}
