/* The coupler through the C API, from a C program: two components (or one on one rank) couple
 * a field with LOCTRANS ACCUMUL and BLASNEW; OASIS ig_paral partitions on both sides; every
 * value got is checked against the sum computed here; errors come back as codes and messages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estuary.h"

#define N 97 /* points */
static int failures = 0;
#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "test_capi_couple: %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
      ++failures;                                                     \
    }                                                                 \
  } while (0)
#define OK(call) CHECK((call) == EST_OK, "%s failed: %s", #call, est_last_error())

static double value(int64_t i, double t) { return sin(0.3 * (double)i) + t / 1200.0; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int half = size / 2;
  const int src = size == 1 || rank < half, dst = size == 1 || rank >= half;
  const char* name = size == 1 ? "solo" : (src ? "atm" : "ocn");
  const int nside = size == 1 ? 1 : (src ? half : size - half), me = size == 1 ? 0 : (src ? rank : rank - half);
  char dir[256], cfg[300];
  snprintf(dir, sizeof dir, "/tmp/estuary_capi_couple_np%d", size);
  snprintf(cfg, sizeof cfg, "%s/namcouple", dir);
  if (rank == 0) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir); /* a fresh folder: no restart of an earlier run */
    CHECK(system(cmd) == 0, "cannot create %s", dir);
    FILE* f = fopen(cfg, "w");
    fprintf(f, " $NFIELDS\n 1\n $END\n $RUNTIME\n 10800\n $END\n $STRINGS\n"
               "A_F O_F 1 3600 2 rst.nc EXPORTED\n%d 1 %d 1 agrd ogrd\nR 0 R 0\nLOCTRANS BLASNEW\nACCUMUL\n"
               "2.0 1\nCONSTANT 1.0\n $END\n", N, N);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  est_comp c = NULL;
  OK(est_comp_new(name, MPI_COMM_WORLD, cfg, dir, &c));
  MPI_Comm local;
  OK(est_comp_comm(c, &local));
  int lsize = 0;
  MPI_Comm_size(local, &lsize);
  CHECK(lsize == nside, "component %s has %d ranks, expected %d", name, lsize, nside);
  int sv = -1, dv = -1, sp = -1, dp = -1;
  const int64_t lo = (int64_t)me * N / nside, hi = (int64_t)(me + 1) * N / nside;
  int64_t pts[2 + N];
  if (src) { /* apple: a contiguous segment */
    const int64_t apple[3] = {1, lo, hi - lo};
    OK(est_comp_def_partition(c, apple, 3, N, "agrd", &sp));
    OK(est_comp_def_var(c, "A_F", sp, EST_OUT, 1, &sv));
  }
  if (dst) { /* points: the same segment, backwards */
    pts[0] = 4;
    pts[1] = hi - lo;
    for (int64_t k = 0; k < hi - lo; ++k) pts[2 + k] = hi - 1 - k;
    OK(est_comp_def_partition(c, pts, 2 + (hi - lo), N, "ogrd", &dp));
    OK(est_comp_def_var(c, "O_F", dp, EST_IN, 1, &dv));
  }
  /* A bad direction and a bad partition are argument errors with a message. */
  int bad = 0;
  CHECK(est_comp_def_var(c, "X", 99, EST_IN, 1, &bad) == EST_ERR_COUPLE, "undefined partition accepted");
  CHECK(strstr(est_last_error(), "partition id 99") != NULL, "message: %s", est_last_error());
  OK(est_comp_enddef(c));

  double v[N], got[N];
  const int64_t n = hi - lo;
  for (double t = 0; t < 10800; t += 1200) {
    if (src) {
      for (int64_t k = 0; k < n; ++k) v[k] = value(lo + k, t);
      est_info info;
      OK(est_comp_put(c, sv, t, v, n, &info));
      const est_info want = fmod(t, 3600) == 0 ? EST_INFO_SENT : EST_INFO_LOCTRANS;
      CHECK(info == want, "put at t=%g: info %d, expected %d", t, (int)info, (int)want);
    }
    if (dst) {
      est_info info;
      for (int64_t k = 0; k < n; ++k) got[k] = -1;
      OK(est_comp_get(c, dv, t, got, n, &info));
      if (fmod(t, 3600) != 0) {
        CHECK(info == EST_INFO_OK, "get at t=%g: info %d", t, (int)info);
        continue;
      }
      CHECK(info == EST_INFO_RECVD, "get at t=%g: info %d", t, (int)info);
      for (int64_t k = 0; k < n; ++k) {
        const int64_t g = hi - 1 - k;
        double acc = 0; /* ACCUMUL: the puts since the previous coupling time, this one included */
        for (double s = t == 0 ? 0 : t - 2400; s <= t; s += 1200) acc += value(g, s);
        const double want = 2.0 * acc + 1.0;
        CHECK(fabs(got[k] - want) < 1e-12, "t=%g point %lld: got %.17g, expected %.17g", t, (long long)g, got[k], want);
      }
    }
  }
  if (src) { /* a put with the wrong number of values names the field */
    CHECK(est_comp_put(c, sv, 10800 + 1200, v, n + 1, NULL) == EST_ERR_COUPLE, "wrong size accepted");
    CHECK(strstr(est_last_error(), "A_F") != NULL, "message: %s", est_last_error());
    /* est_comp_put_ext: gradients to weights of one column, a fraction with LOCTRANS ACCUMUL,
     * and a fraction outside [0, 1] are errors naming the field. */
    const double* grads[2] = {v, v};
    CHECK(est_comp_put_ext(c, sv, 10800 + 1200, v, n, grads, 2, NULL, NULL) == EST_ERR_COUPLE, "gradients accepted");
    CHECK(strstr(est_last_error(), "A_F") != NULL && strstr(est_last_error(), "one column") != NULL, "message: %s",
          est_last_error());
    double frac[N];
    for (int64_t k = 0; k < n; ++k) frac[k] = 0.5;
    CHECK(est_comp_put_ext(c, sv, 10800 + 1200, v, n, NULL, 0, frac, NULL) == EST_ERR_COUPLE, "fraction accepted");
    CHECK(strstr(est_last_error(), "A_F") != NULL && strstr(est_last_error(), "LOCTRANS") != NULL, "message: %s",
          est_last_error());
    if (n > 0) {
      frac[0] = 1.5;
      CHECK(est_comp_put_ext(c, sv, 10800 + 1200, v, n, NULL, 0, frac, NULL) == EST_ERR_COUPLE, "fraction 1.5 accepted");
      CHECK(strstr(est_last_error(), "between 0 and 1") != NULL, "message: %s", est_last_error());
    }
  }
  OK(est_comp_terminate(c));
  OK(est_comp_free(&c));
  CHECK(c == NULL, "handle not cleared");
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("test_capi_couple: %s (%d failures)\n", all ? "FAILED" : "passed", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
