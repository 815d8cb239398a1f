/* The I/O server from C (estuary.h): the same model and files as io_server.cpp.
 *
 *   mpirun -n 3 io_server_c [io_server.yaml]                                                  */
#include <estuary.h>
#include <stdio.h>
#include <stdlib.h>

enum { NX = 36, NY = 18, STEPS = 12 };

/* The field at point g (longitude fastest) and hour s. */
static double sst(int64_t g, int64_t s) { return 270.0 + 0.25 * (double)(g % NX) + 0.5 * (double)(g / NX) + (double)s; }

/* On failure: estuary's message, and the run ends on every rank. */
static void check(int rc, const char* call) {
  if (rc == 0) return;
  fprintf(stderr, "%s: %s\n", call, est_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  est_io io = NULL;
  check(est_io_open(argc > 1 ? argv[1] : "io_server.yaml", MPI_COMM_WORLD, &io), "est_io_open");
  int server = 0;
  check(est_io_is_server(io, &server), "est_io_is_server");
  if (server) {
    check(est_io_serve(io), "est_io_serve"); /* returns when the model closes */
  } else {
    MPI_Comm comm;
    int rank = 0, ranks = 1;
    check(est_io_model_comm(io, &comm), "est_io_model_comm");
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    const int64_t lo = (int64_t)NX * NY * rank / ranks, hi = (int64_t)NX * NY * (rank + 1) / ranks, n = hi - lo;
    int64_t* points = malloc(sizeof(int64_t) * (size_t)(n + 1));
    double *lon = malloc(sizeof(double) * (size_t)(n + 1)), *lat = malloc(sizeof(double) * (size_t)(n + 1));
    double* values = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t g = lo; g < hi; ++g) { /* cell centres as estuary's lonlat grid has them */
      points[g - lo] = g;
      lon[g - lo] = (double)(g % NX) * (360.0 / NX);
      lat[g - lo] = -90.0 + ((double)(g / NX) + 0.5) * (180.0 / NY);
    }
    check(est_io_def_grid(io, "grid", "lonlat", NX, NY, points, n, lon, lat, 0, NULL, NULL), "est_io_def_grid");
    est_decomp part = NULL;
    check(est_decomp_new_indices((int64_t)NX * NY, points, n, &part), "est_decomp_new_indices");
    check(est_io_def_field(io, "sst", "grid", NULL, 0, part, "K", NULL, "sea_surface_temperature"), "est_io_def_field");
    check(est_io_enddef(io), "est_io_enddef");
    for (int64_t s = 1; s <= STEPS; ++s) {
      for (int64_t g = lo; g < hi; ++g) values[g - lo] = sst(g, s);
      check(est_io_write(io, "sst", 3600.0 * (double)s, values, n), "est_io_write");
    }
    check(est_io_close(io), "est_io_close");
    if (rank == 0) printf("io_server (C): %d hours written\n", STEPS);
    est_decomp_free(&part);
    free(points), free(lon), free(lat), free(values);
  }
  est_io_free(&io);
  MPI_Finalize();
  return 0;
}
