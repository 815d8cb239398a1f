/* SCRIPR CALLBACK through the C API: est_comp_register_weights on the target's ranks.
 *  - a function linking target t to source (7 t + 3) mod ns with weight 2 (and checking the
 *    query: every source centre, this rank's targets): each target gets 2 x[(7 t + 3) mod ns];
 *  - a function adding a source index out of range: est_comp_enddef fails on every rank with
 *    EST_ERR_COUPLE, the message naming the coupling and the rank. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estuary.h"

#define NS 40
#define ND 24
static int failures = 0;
#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      ++failures;                                                     \
      fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__);          \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
    }                                                                 \
  } while (0)
#define OK(call) CHECK((call) == EST_OK, "%s failed: %s", #call, est_last_error())

static double src_value(int64_t i) { return cos(0.2 * (double)i) + 0.01 * (double)i; }

/* ctx: nonzero to add a bad link. */
static int weights(void* ctx, const est_weight_query* q, est_links_out out) {
  if (q->nsrc != NS || strstr(q->coupling, "A_F -> O_F") == NULL) return 7;
  for (int64_t s = 0; s < q->nsrc; ++s)
    if (fabs(q->src_lon[s] - 9.0 * (double)s) > 1e-12) return 8; /* every source centre, global order */
  for (int64_t k = 0; k < q->ndst; ++k) {
    const int64_t t = q->dst_index[k];
    if (fabs(q->dst_lat[k] - (double)t) > 1e-12) return 9;
    est_links_add(out, t, (7 * t + 3) % NS, 2.0);
  }
  if (*(const int*)ctx && q->ndst > 0) est_links_add(out, q->dst_index[0], NS, 1.0);
  return 0;
}

static int run(const char* dir, int bad, int rank, int size) {
  const int half = size / 2;
  const int src = size == 1 || rank < half, dst = size == 1 || rank >= half;
  const char* name = size == 1 ? "solo" : (src ? "atm" : "ocn");
  const int nside = size == 1 ? 1 : (src ? half : size - half), me = size == 1 ? 0 : (src ? rank : rank - half);
  char cfg[300];
  snprintf(cfg, sizeof cfg, "%s/estuary.yaml", dir);
  est_comp c = NULL;
  OK(est_comp_new(name, MPI_COMM_WORLD, cfg, dir, &c));
  int sv = -1, dv = -1, sp = -1, dp = -1;
  const int64_t slo = (int64_t)me * NS / nside, shi = (int64_t)(me + 1) * NS / nside;
  const int64_t dlo = (int64_t)me * ND / nside, dhi = (int64_t)(me + 1) * ND / nside;
  double lon[NS], lat[NS];
  if (src) {
    const int64_t apple[3] = {1, slo, shi - slo};
    OK(est_comp_def_partition(c, apple, 3, NS, "agrd", &sp));
    for (int64_t k = 0; k < shi - slo; ++k) lon[k] = 9.0 * (double)(slo + k), lat[k] = 0.5 * (double)(slo + k);
    OK(est_comp_def_grid(c, "agrd", sp, NS, 1, lon, lat, 0, NULL, NULL, NULL, NULL));
    OK(est_comp_def_var(c, "A_F", sp, EST_OUT, 1, &sv));
  }
  if (dst) {
    const int64_t apple[3] = {1, dlo, dhi - dlo};
    OK(est_comp_def_partition(c, apple, 3, ND, "ogrd", &dp));
    for (int64_t k = 0; k < dhi - dlo; ++k) lon[k] = 15.0 * (double)(dlo + k), lat[k] = (double)(dlo + k);
    OK(est_comp_def_grid(c, "ogrd", dp, ND, 1, lon, lat, 0, NULL, NULL, NULL, NULL));
    OK(est_comp_def_var(c, "O_F", dp, EST_IN, 1, &dv));
    OK(est_comp_register_weights(c, "mine", weights, &bad));
  }
  const int rc = est_comp_enddef(c);
  if (bad) {
    CHECK(rc == EST_ERR_COUPLE, "an out-of-range source index was accepted");
    const char* m = est_last_error();
    CHECK(strstr(m, "A_F -> O_F") && strstr(m, "\"mine\"") && strstr(m, "rank") && strstr(m, "source index"),
          "message: %s", m);
  } else {
    CHECK(rc == EST_OK, "enddef failed: %s", est_last_error());
    double v[NS], got[ND];
    if (src) {
      for (int64_t k = 0; k < shi - slo; ++k) v[k] = src_value(slo + k);
      OK(est_comp_put(c, sv, 0, v, shi - slo, NULL));
    }
    if (dst) {
      OK(est_comp_get(c, dv, 0, got, dhi - dlo, NULL));
      for (int64_t k = 0; k < dhi - dlo; ++k) {
        const int64_t t = dlo + k;
        const double want = 2.0 * src_value((7 * t + 3) % NS);
        CHECK(fabs(got[k] - want) < 1e-14, "target %lld: got %.17g, expected %.17g", (long long)t, got[k], want);
      }
    }
  }
  est_comp_terminate(c);
  OK(est_comp_free(&c));
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int bad = 0; bad < 2; ++bad) {
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/estuary_capi_weightfn_np%d_%d", size, bad);
    if (rank == 0) {
      char cmd[600];
      snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
      CHECK(system(cmd) == 0, "cannot create %s", dir);
      char cfg[300];
      snprintf(cfg, sizeof cfg, "%s/estuary.yaml", dir);
      FILE* f = fopen(cfg, "w");
      fprintf(f, "runtime: 3600\nno_restart: true\ntimeout: 60\ncouplings:\n"
                 "  - source: {fields: [A_F], grid: agrd}\n    target: {fields: [O_F], grid: ogrd}\n"
                 "    period: 3600\n    transforms:\n      - scripr: {method: callback, name: mine, grid_type: U}\n");
      fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    run(dir, bad, rank, size);
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("test_capi_weightfn: %s (%d failures)\n", all ? "FAILED" : "passed", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
