/* OASIS3-MCT's run-time queries and communicators through the C API (est_comp_put_inquire,
 * est_comp_get_ncpl, est_comp_get_freqs, est_comp_set_couplcomm, est_comp_get_intercomm,
 * est_comp_get_intracomm, est_comp_get_multi_intracomm, est_comp_get/set_debug), from C.
 * The first half of the ranks is component "atm", the others "ocn"; the last rank of "ocn" (when
 * it has 2 or more) is left out of the coupling by est_comp_create_couplcomm. atm's A_F goes to
 * ocn's O_F (LAG, AVERAGE) and to a file (OUTPUT): every put's info code must be what
 * est_comp_put_inquire said just before, and both what the namcouple implies (worked out here);
 * every value got is checked. Errors come back as codes and end up in the component's log.
 * Run on 2 or more ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estuary.h"

#define N 12         /* points */
#define RUNTIME 14400
#define DT 1200
static int failures = 0;
#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "test_capi_oasis: %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
      ++failures;                                                     \
    }                                                                 \
  } while (0)
#define OK(call) CHECK((call) == EST_OK, "%s failed: %s", #call, est_last_error())
#define FAILS(call, code, text)                                                                          \
  do {                                                                                                   \
    CHECK((call) == (code), "%s did not fail with %s", #call, #code);                                    \
    CHECK(strstr(est_last_error(), (text)) != NULL, "%s: message \"%s\" lacks \"%s\"", #call, est_last_error(), \
          (text));                                                                                       \
  } while (0)

/* What a put of A_F at t returns, from the namcouple below: coupling 1 (period 3600, LAG 1200,
 * AVERAGE, EXPORTED), coupling 2 (period 7200, INSTANT, OUTPUT); the first that acts decides,
 * LocTrans over Ok. */
static int expected_put(int t) {
  const int a = t + 1200;
  int first = a % 3600 ? EST_INFO_LOCTRANS : a >= RUNTIME ? EST_INFO_TOREST : EST_INFO_SENT;
  int second = t % 7200 ? EST_INFO_OK : EST_INFO_OUTPUT;
  if (first != EST_INFO_OK && first != EST_INFO_LOCTRANS) return first;
  return second != EST_INFO_OK ? second : first;
}

static int log_has(const char* path, const char* text) {
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  char line[2048];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, text) != NULL;
  fclose(f);
  return found;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "test_capi_oasis: run on 2 or more ranks\n");
    MPI_Finalize();
    return 1;
  }
  const int natm = size / 2, nocn = size - natm;
  const int atm = rank < natm;
  const char* name = atm ? "atm" : "ocn";
  char dir[256], cfg[300], log[320];
  snprintf(dir, sizeof dir, "/tmp/estuary_capi_oasis_np%d", size);
  snprintf(cfg, sizeof cfg, "%s/namcouple", dir);
  snprintf(log, sizeof log, "%s/estuary.%s.log", dir, name);
  if (rank == 0) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    CHECK(system(cmd) == 0, "cannot create %s", dir);
    FILE* f = fopen(cfg, "w");
    fprintf(f, " $NFIELDS\n 2\n $END\n $RUNTIME\n %d\n $END\n $NLOGPRT\n 3\n $END\n $NNOREST\n T\n $END\n $STRINGS\n"
               "A_F O_F 1 3600 1 arst.nc EXPORTED\n%d 1 %d 1 ag og LAG=1200\nR 0 R 0\nLOCTRANS\nAVERAGE\n"
               "A_F A_F 1 7200 1 arst2.nc OUTPUT\nag ag\nLOCTRANS\nINSTANT\n $END\n",
            RUNTIME, N, N);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(EST_OASIS_OUT == 20 && EST_OASIS_IN == 21 && EST_OASIS_OK == 0 && EST_OASIS_SUCCESS == 0 &&
            EST_OASIS_REAL == 4 && EST_OASIS_DOUBLE == 8 && EST_OASIS_VAR_UNCPL == -1 && EST_INFO_SENT == 4,
        "OASIS's parameter values");

  est_comp c = NULL;
  OK(est_comp_new(name, MPI_COMM_WORLD, cfg, dir, &c));
  MPI_Comm local = MPI_COMM_NULL, cpl = MPI_COMM_NULL, got = MPI_COMM_NULL;
  OK(est_comp_comm(c, &local));
  int lrank = 0;
  MPI_Comm_rank(local, &lrank);

  /* ---- the coupling ranks: all of atm (set_couplcomm); ocn's but its last (create_couplcomm) ---- */
  FAILS(est_comp_set_couplcomm(c, MPI_COMM_WORLD), EST_ERR_COUPLE, "outside component");
  int coupled = 1, ncpl_ocn = nocn > 1 ? nocn - 1 : nocn;
  if (atm) {
    OK(est_comp_set_couplcomm(c, local));
    cpl = local;
  } else {
    coupled = lrank < ncpl_ocn;
    OK(est_comp_create_couplcomm(c, coupled, local, &cpl));
    CHECK((cpl != MPI_COMM_NULL) == coupled, "create_couplcomm: communicator on the wrong ranks");
  }
  OK(est_comp_coupling_comm(c, &got));
  CHECK(got == cpl, "est_comp_coupling_comm is not the communicator of set_couplcomm / create_couplcomm");
  int crank = 0, csize = 0;
  if (cpl != MPI_COMM_NULL) {
    MPI_Comm_rank(cpl, &crank);
    MPI_Comm_size(cpl, &csize);
  }

  /* ---- definitions: an apple each over the coupling ranks ---- */
  int var = -1, part = -1;
  const int64_t lo = (int64_t)crank * N / (csize ? csize : 1), hi = (int64_t)(crank + 1) * N / (csize ? csize : 1);
  if (coupled) {
    const int64_t apple[3] = {1, lo, hi - lo};
    int64_t gsize = -1;
    OK(est_comp_partition_global_size(c, apple, 3, &gsize));  /* collective over the coupling ranks */
    CHECK(gsize == N, "global size %lld inferred, %d expected", (long long)gsize, N);
    /* global_size -1: inferred by the library as OASIS does (the same rule, collective) */
    OK(est_comp_def_partition(c, apple, 3, -1, NULL, &part));
    OK(est_comp_def_var(c, atm ? "A_F" : "O_F", part, atm ? EST_OUT : EST_IN, 1, &var));
  }
  est_info info = EST_INFO_OK;
  FAILS(est_comp_put_inquire(c, 0, 0.0, &info), EST_ERR_COUPLE, "before enddef");
  OK(est_comp_enddef(c));
  FAILS(est_comp_set_couplcomm(c, cpl), EST_ERR_COUPLE, "after enddef");

  if (!coupled) { /* OASIS aborts there; estuary returns an error */
    int n = -1;
    FAILS(est_comp_get_ncpl(c, 0, &n), EST_ERR_COUPLE, "outside the coupling communicator");
    FAILS(est_comp_put_inquire(c, 0, 0.0, &info), EST_ERR_COUPLE, "outside the coupling communicator");
  } else {
    /* ---- get_ncpl, get_freqs, debug level ---- */
    int n = -1;
    double p[3] = {-1, -1, -1};
    OK(est_comp_get_ncpl(c, var, &n));
    CHECK(n == (atm ? 2 : 1), "ncpl of %s: %d", atm ? "A_F" : "O_F", n);
    OK(est_comp_get_freqs(c, var, atm ? EST_OASIS_OUT : EST_IN, n, p));
    CHECK(p[0] == 3600 && (atm ? p[1] == 7200 : p[1] == -1), "periods %g %g", p[0], p[1]);
    FAILS(est_comp_get_freqs(c, var, atm ? EST_OASIS_OUT : EST_OASIS_IN, n + 1, p), EST_ERR_ARGUMENT, "argument 'ncpl'");
    FAILS(est_comp_get_freqs(c, var, atm ? EST_OASIS_IN : EST_OASIS_OUT, n, p), EST_ERR_COUPLE, "pass the direction");
    FAILS(est_comp_get_freqs(c, var, 3, n, p), EST_ERR_ARGUMENT, "neither EST_OASIS_OUT");
    FAILS(est_comp_get_ncpl(c, 7, &n), EST_ERR_COUPLE, "variable id 7");
    int level = -1;
    OK(est_comp_get_debug(c, &level));
    CHECK(level == 3, "debug level %d, $NLOGPRT is 3", level);
    OK(est_comp_set_debug(c, 7));
    OK(est_comp_get_debug(c, &level));
    CHECK(level == 7, "debug level %d after est_comp_set_debug(7)", level);
    FAILS(est_comp_set_debug(c, -1), EST_ERR_ARGUMENT, "set_debug_level(-1)");

    /* ---- communicators ---- */
    const char* other = atm ? "ocn" : "atm";
    MPI_Comm inter = MPI_COMM_NULL, intra = MPI_COMM_NULL, multi = MPI_COMM_NULL;
    OK(est_comp_get_intercomm(c, other, &inter));
    int rsize = -1, is_inter = 0;
    if (inter != MPI_COMM_NULL) {
      MPI_Comm_test_inter(inter, &is_inter);
      MPI_Comm_remote_size(inter, &rsize);
      MPI_Comm_free(&inter);
    }
    CHECK(is_inter && rsize == (atm ? ncpl_ocn : natm), "intercommunicator with %d remote ranks", rsize);
    OK(est_comp_get_intracomm(c, other, &intra));
    int members[64], isize = 0;
    if (intra != MPI_COMM_NULL) {
      MPI_Comm_size(intra, &isize);
      if (isize <= 64) MPI_Allgather(&rank, 1, MPI_INT, members, 1, MPI_INT, intra);
      MPI_Comm_free(&intra);
    }
    CHECK(isize == natm + ncpl_ocn, "intracommunicator of %d ranks", isize);
    for (int i = 0; i < isize && i < 64; ++i)  /* atm (world rank 0) first, then ocn's coupling ranks */
      CHECK(members[i] == i, "intracommunicator rank %d is world rank %d", i, members[i]);
    const char* names[3] = {"ocn", "", "atm"};
    int roots[3] = {-7, -7, -7};
    OK(est_comp_get_multi_intracomm(c, 3, names, &multi, roots));
    CHECK(roots[0] == natm && roots[1] == -1 && roots[2] == 0, "root ranks %d %d %d", roots[0], roots[1], roots[2]);
    if (multi != MPI_COMM_NULL) {
      int msize = 0;
      MPI_Comm_size(multi, &msize);
      CHECK(msize == natm + ncpl_ocn, "multi intracommunicator of %d ranks", msize);
      MPI_Comm_free(&multi);
    }
    FAILS(est_comp_get_intercomm(c, name, &inter), EST_ERR_COUPLE, "is this component");
    FAILS(est_comp_get_intercomm(c, "xyz", &inter), EST_ERR_COUPLE, "no component \"xyz\"");
    const char* twice[2] = {name, name};
    FAILS(est_comp_get_multi_intracomm(c, 2, twice, &multi, NULL), EST_ERR_COUPLE, "named twice");
    const char* alone[1] = {name};
    FAILS(est_comp_get_multi_intracomm(c, 1, alone, &multi, NULL), EST_ERR_COUPLE, "fewer than two");
    const char* without[2] = {other, ""};
    FAILS(est_comp_get_multi_intracomm(c, 2, without, &multi, NULL), EST_ERR_COUPLE, "do not include this component");

    /* ---- the run: put_inquire before every put; every value got ---- */
    double f[N];
    for (int t = 0; t < RUNTIME; t += DT) {
      if (atm) {
        for (int64_t i = lo; i < hi; ++i) f[i - lo] = (double)(100 * i) + t;
        est_info inq = -1;
        OK(est_comp_put_inquire(c, var, t, &inq));
        OK(est_comp_put(c, var, t, f, hi - lo, &info));
        CHECK((int)inq == expected_put(t) && (int)info == expected_put(t), "t=%d: inquire %d, put %d, expected %d", t,
              (int)inq, (int)info, expected_put(t));
      } else {
        for (int64_t i = 0; i < hi - lo; ++i) f[i] = -1.0;
        OK(est_comp_get(c, var, t, f, hi - lo, &info));
        const int want = t == 0 ? EST_INFO_FROMREST : t % 3600 ? EST_INFO_OK : EST_INFO_RECVD;
        CHECK((int)info == want, "get at t=%d: info %d, expected %d", t, (int)info, want);
        /* the mean of the puts at T - 3600, T - 2400, T - 1200 (one step late); zeros at t = 0 */
        for (int64_t i = lo; i < hi && info != EST_INFO_OK; ++i) {
          const double v = t == 0 ? 0.0 : (double)(100 * i) + t - 2400;
          CHECK(f[i - lo] == v, "O_F[%lld] at t=%d: %g, expected %g", (long long)i, t, f[i - lo], v);
        }
      }
    }
    FAILS(est_comp_put_inquire(c, 99, 0.0, &info), EST_ERR_COUPLE, "variable id 99");
    if (!atm) FAILS(est_comp_put_inquire(c, var, 0.0, &info), EST_ERR_COUPLE, "an input field");
  }
  OK(est_comp_log_error(c, "a line from test_capi_oasis"));
  FAILS(est_comp_log_error(c, NULL), EST_ERR_ARGUMENT, "argument 'message'");
  MPI_Barrier(MPI_COMM_WORLD);
  /* every error returned above is in the component's log, with its cause */
  CHECK(log_has(log, "a line from test_capi_oasis"), "%s lacks est_comp_log_error's line", log);
  CHECK(log_has(log, "est_comp_set_couplcomm: set_couplcomm with a communicator"), "%s lacks the set_couplcomm error", log);
  CHECK(log_has(log, "est_comp_put_inquire: put_inquire before enddef"), "%s lacks the put_inquire error", log);
  if (cpl != MPI_COMM_NULL && !atm) MPI_Comm_free(&cpl);
  OK(est_comp_free(&c));

  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("test_capi_oasis: %s on %d ranks\n", all == 0 ? "OK" : "FAILED", size);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
