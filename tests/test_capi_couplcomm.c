/* est_comp_create_couplcomm (oasis_create_couplcomm), the grid recipes (est_grid_gen_*),
 * est_decomp_new_oasis and est_comp_abort from C. One component "solo" on every rank:
 * - the coupling communicator of the even ranks: its size, its order, MPI_COMM_NULL elsewhere;
 * - a lon-lat grid made on an OASIS apple partition: centres against the formula, corners
 *   around the centres, areas adding up to 4 pi over the ranks; sizes and shapes of the
 *   other kinds; errors naming the bad argument;
 * - `test_capi_couplcomm abort`: est_comp_abort prints its message and ends the run (ctest
 *   checks the message). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estuary.h"

static int failures = 0;
static int rank = 0;

#define CHECK(cond, ...)                                               \
  do {                                                                 \
    if (!(cond)) {                                                     \
      ++failures;                                                      \
      fprintf(stderr, "test_capi_couplcomm: rank %d: line %d: ", rank, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                    \
      fprintf(stderr, "\n");                                           \
    }                                                                  \
  } while (0)

#define OK(call)                                                        \
  do {                                                                  \
    int rc_ = (call);                                                   \
    CHECK(rc_ == EST_OK, "%s failed (%d): %s", #call, rc_, est_last_error()); \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  est_comp comp = NULL;
  OK(est_comp_new("solo", MPI_COMM_WORLD, "/nonexistent/estuary.yaml", NULL, &comp));
  if (argc > 1 && strcmp(argv[1], "abort") == 0) {
    est_comp_abort(comp, "stop here", 3);
    fprintf(stderr, "test_capi_couplcomm: est_comp_abort returned\n");
    return 1;
  }
  MPI_Comm local = MPI_COMM_NULL;
  OK(est_comp_comm(comp, &local));

  /* ---- the coupling communicator of the even ranks ---- */
  MPI_Comm cpl = MPI_COMM_WORLD;
  const int coupled = rank % 2 == 0;
  OK(est_comp_create_couplcomm(comp, coupled, local, &cpl));
  if (coupled) {
    int crank = -1, csize = -1;
    CHECK(cpl != MPI_COMM_NULL, "an even rank got MPI_COMM_NULL");
    if (cpl != MPI_COMM_NULL) {
      MPI_Comm_rank(cpl, &crank);
      MPI_Comm_size(cpl, &csize);
      CHECK(csize == (size + 1) / 2, "coupling communicator of %d ranks, expected %d", csize, (size + 1) / 2);
      CHECK(crank == rank / 2, "rank %d in the coupling communicator, expected %d", crank, rank / 2);
      int members[64] = {0};
      if (csize <= 64) {
        MPI_Allgather(&rank, 1, MPI_INT, members, 1, MPI_INT, cpl);
        for (int i = 0; i < csize; ++i) CHECK(members[i] == 2 * i, "member %d is world rank %d", i, members[i]);
      }
      MPI_Comm_free(&cpl);
    }
  } else {
    CHECK(cpl == MPI_COMM_NULL, "an odd rank got a coupling communicator");
  }
  CHECK(est_comp_create_couplcomm(NULL, 1, local, &cpl) == EST_ERR_ARGUMENT, "a NULL component was accepted");
  CHECK(strstr(est_last_error(), "est_comp_create_couplcomm: argument 'c' is NULL") != NULL, "message: %s",
        est_last_error());
  CHECK(est_comp_create_couplcomm(comp, 1, MPI_COMM_NULL, &cpl) == EST_ERR_ARGUMENT, "MPI_COMM_NULL was accepted");

  /* ---- grid recipes ---- */
  int64_t gsize = 0, nx = 0, ny = 0;
  int ncorner = -1;
  OK(est_grid_gen_info("lonlat", 36, 18, 0, &gsize, &nx, &ny, &ncorner));
  CHECK(gsize == 648 && nx == 36 && ny == 18 && ncorner == 4, "lonlat 36 x 18: %lld %lld %lld %d", (long long)gsize,
        (long long)nx, (long long)ny, ncorner);
  OK(est_grid_gen_info("tripolar", 180, 140, 1, &gsize, &nx, &ny, &ncorner));
  CHECK(gsize == 25200 && nx == 180 && ny == 140, "tripolar 180 x 140: %lld", (long long)gsize);
  OK(est_grid_gen_info("reduced_gaussian", 32, 0, 0, &gsize, &nx, &ny, NULL));
  CHECK(gsize == 5574 && nx == 5574 && ny == 1, "reduced_gaussian 32: %lld", (long long)gsize);
  OK(est_grid_gen_info("cubed_sphere", 4, 0, 0, &gsize, NULL, NULL, NULL));
  CHECK(gsize == 96, "cubed_sphere 4: %lld", (long long)gsize);
  CHECK(est_grid_gen_info("hexagons", 3, 3, 0, &gsize, NULL, NULL, NULL) == EST_ERR_ARGUMENT, "unknown kind accepted");
  CHECK(strstr(est_last_error(), "unknown grid kind \"hexagons\"") != NULL, "message: %s", est_last_error());
  CHECK(est_grid_gen_info("lonlat", 36, 0, 0, &gsize, NULL, NULL, NULL) == EST_ERR_ARGUMENT, "n2 = 0 accepted");
  CHECK(strstr(est_last_error(), "'n2' must be positive") != NULL, "message: %s", est_last_error());

  const int64_t n = 36 * 18, lo = rank * n / size, hi = (rank + 1) * n / size;
  const int64_t apple[3] = {1, lo, hi - lo};
  est_decomp d = NULL;
  OK(est_decomp_new_oasis(apple, 3, n, &d));
  int64_t m = -1;
  OK(est_decomp_size(d, &m));
  CHECK(m == hi - lo, "apple decomposition of %lld points, expected %lld", (long long)m, (long long)(hi - lo));
  double* lon = malloc(sizeof(double) * (size_t)(m + 1));
  double* lat = malloc(sizeof(double) * (size_t)(m + 1));
  double* area = malloc(sizeof(double) * (size_t)(m + 1));
  double* clo = malloc(sizeof(double) * (size_t)(4 * m + 1));
  double* cla = malloc(sizeof(double) * (size_t)(4 * m + 1));
  int32_t* mask = malloc(sizeof(int32_t) * (size_t)(m + 1));
  OK(est_grid_gen_make("lonlat", 36, 18, 0, d, lon, lat, clo, cla, mask, area));
  double asum = 0.0;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t g = lo + i, ix = g % 36, iy = g / 36;
    const double want_lon = 10.0 * (double)ix, want_lat = -90.0 + 10.0 * ((double)iy + 0.5);
    CHECK(fabs(lon[i] - want_lon) < 1e-9 && fabs(lat[i] - want_lat) < 1e-9, "point %lld at (%g, %g), expected (%g, %g)",
          (long long)g, lon[i], lat[i], want_lon, want_lat);
    CHECK(mask[i] == 1, "point %lld masked", (long long)g);
    for (int k = 0; k < 4; ++k)
      CHECK(fabs(cla[4 * i + k] - want_lat) <= 5.0 + 1e-9, "corner %d of point %lld at latitude %g", k, (long long)g,
            cla[4 * i + k]);
    asum += area[i];
  }
  MPI_Allreduce(MPI_IN_PLACE, &asum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  CHECK(fabs(asum - 4.0 * M_PI) < 1e-10, "areas add up to %.15g, not 4 pi", asum);
  /* outputs may be NULL */
  OK(est_grid_gen_make("lonlat", 36, 18, 0, d, NULL, lat, NULL, NULL, NULL, NULL));
  CHECK(est_grid_gen_make("lonlat", 36, 17, 0, d, lon, lat, NULL, NULL, NULL, NULL) == EST_ERR_ARGUMENT,
        "a decomposition of another grid size was accepted");
  CHECK(strstr(est_last_error(), "decomposition of 648 points for grid") != NULL, "message: %s", est_last_error());
  const int64_t bad[3] = {1, n - 1, 5};
  est_decomp bd = NULL;
  CHECK(est_decomp_new_oasis(bad, 3, n, &bd) != EST_OK && bd == NULL, "an apple beyond the grid was accepted");
  OK(est_decomp_free(&d));
  free(lon);
  free(lat);
  free(area);
  free(clo);
  free(cla);
  free(mask);

  OK(est_comp_free(&comp));
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("test_capi_couplcomm: %s on %d ranks\n", all == 0 ? "OK" : "FAILED", size);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
