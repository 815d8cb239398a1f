/* The C API from a plain C11 program: redistributions checked element by element against values
 * computed here from global indices, plan statistics against counts computed here, error codes
 * and messages, fill mode. Every rank runs every check; the ranks agree on the outcome, rank 0
 * prints "test_capi: N passed, M failed" and all ranks exit non-zero when anything failed. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estuary.h"

static int rank = 0, nranks = 1;
static long passed = 0, failed = 0;

#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    if (cond) {                                                               \
      ++passed;                                                               \
    } else {                                                                  \
      ++failed;                                                               \
      fprintf(stderr, "test_capi: rank %d: %s:%d: check failed: %s: ", rank, \
              __FILE__, __LINE__, #cond);                                     \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n");                                                  \
    }                                                                         \
  } while (0)

/* Checks a call that must succeed, printing est_last_error() when it does not. */
#define CHECK_OK(call)                                                                  \
  do {                                                                                  \
    int rc_ = (call);                                                                   \
    CHECK(rc_ == EST_OK, "%s returned %d: %s", #call, rc_, est_last_error());           \
  } while (0)

#define N 1000

/* First global index of rank r's block when n indices are split over p ranks. */
static int64_t block_start(int64_t n, int p, int r) { return n * r / p; }

/* The rank whose block holds global index g (computed by search, not by formula inversion). */
static int block_owner(int64_t n, int p, int64_t g) {
  int r = 0;
  while (r + 1 < p && block_start(n, p, r + 1) <= g) ++r;
  return r;
}

/* Compares the destination buffers with expected[k] (k = local position); counts as one check
 * per field and prints the first few mismatches. */
static void check_values(const char* what, int64_t n, const double* f64, const int32_t* i32,
                         const double* expected) {
  int64_t bad_f64 = 0, bad_i32 = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (f64 != NULL && f64[k] != expected[k]) {
      if (bad_f64++ < 5)
        fprintf(stderr, "test_capi: rank %d: %s: f64[%lld] = %g, expected %g\n", rank, what,
                (long long)k, f64[k], expected[k]);
    }
    if (i32 != NULL && i32[k] != (int32_t)expected[k]) {
      if (bad_i32++ < 5)
        fprintf(stderr, "test_capi: rank %d: %s: i32[%lld] = %d, expected %d\n", rank, what,
                (long long)k, (int)i32[k], (int)expected[k]);
    }
  }
  if (f64 != NULL) CHECK(bad_f64 == 0, "%s: %lld of %lld f64 values wrong", what, (long long)bad_f64, (long long)n);
  if (i32 != NULL) CHECK(bad_i32 == 0, "%s: %lld of %lld i32 values wrong", what, (long long)bad_i32, (long long)n);
}

static void* xmalloc(size_t bytes) {
  void* p = malloc(bytes > 0 ? bytes : 1);
  if (p == NULL) {
    fprintf(stderr, "test_capi: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}

/* Number of elements of the cyclic distribution of n indices over p ranks on rank r. */
static int64_t cyclic_count(int64_t n, int p, int r) { return r < n ? (n - r + p - 1) / p : 0; }

/* Rank r's cyclic destination, r, r + p, ..., as an explicit index list. */
static est_decomp cyclic_decomp(int64_t n) {
  int64_t m = cyclic_count(n, nranks, rank);
  int64_t* idx = xmalloc((size_t)m * sizeof *idx);
  for (int64_t k = 0; k < m; ++k) idx[k] = rank + k * nranks;
  est_decomp d = NULL;
  CHECK_OK(est_decomp_new_indices(n, idx, m, &d));
  free(idx);
  return d;
}

/* ---- (1) block -> cyclic, two fields at once, plus (3) plan and schedule statistics ---------- */
static void test_block_to_cyclic(void) {
  const int64_t b0 = block_start(N, nranks, rank), b1 = block_start(N, nranks, rank + 1);
  const int64_t nsrc = b1 - b0, ndst = cyclic_count(N, nranks, rank);

  /* Source: one stripe (stride NULL means 1). */
  est_decomp src = NULL;
  const int64_t count = nsrc;
  CHECK_OK(est_decomp_new_stripes(N, &b0, &count, NULL, 1, &src));
  est_decomp dst = cyclic_decomp(N);
  int64_t size = -1;
  CHECK_OK(est_decomp_size(src, &size));
  CHECK(size == nsrc, "source size %lld, expected %lld", (long long)size, (long long)nsrc);
  CHECK_OK(est_decomp_size(dst, &size));
  CHECK(size == ndst, "destination size %lld, expected %lld", (long long)size, (long long)ndst);

  est_redist_options opt = est_redist_options_default();
  opt.algorithm = "p2p";
  est_redist r = NULL;
  CHECK_OK(est_redist_new(src, dst, MPI_COMM_WORLD, &opt, &r));
  if (r == NULL) {
    est_decomp_free(&src);
    est_decomp_free(&dst);
    return;
  }

  double* s64 = xmalloc((size_t)nsrc * sizeof *s64);
  int32_t* s32 = xmalloc((size_t)nsrc * sizeof *s32);
  int64_t* sl64 = xmalloc((size_t)nsrc * sizeof *sl64);
  double* d64 = xmalloc((size_t)ndst * sizeof *d64);
  int32_t* d32 = xmalloc((size_t)ndst * sizeof *d32);
  int64_t* dl64 = xmalloc((size_t)ndst * sizeof *dl64);
  double* expected = xmalloc((size_t)ndst * sizeof *expected);
  for (int64_t k = 0; k < nsrc; ++k) {
    s64[k] = (double)(b0 + k);
    s32[k] = (int32_t)(b0 + k);
    sl64[k] = b0 + k;
  }
  for (int64_t k = 0; k < ndst; ++k) expected[k] = (double)(rank + k * nranks);

  const est_type types[2] = {EST_F64, EST_I32};
  const void* srcs[2] = {s64, s32};
  void* dsts[2] = {d64, d32};

  /* run */
  for (int64_t k = 0; k < ndst; ++k) d64[k] = -99, d32[k] = -99;
  CHECK_OK(est_redist_run(r, 2, types, srcs, dsts));
  check_values("block->cyclic run", ndst, d64, d32, expected);

  /* start/finish, same types: the executor is reused */
  for (int64_t k = 0; k < ndst; ++k) d64[k] = -99, d32[k] = -99;
  CHECK_OK(est_redist_start(r, 2, types, srcs, dsts));
  CHECK_OK(est_redist_finish(r));
  check_values("block->cyclic start/finish", ndst, d64, d32, expected);

  /* another list of types on the same redist: one int64 field */
  {
    const est_type t1[1] = {EST_I64};
    const void* s1[1] = {sl64};
    void* d1[1] = {dl64};
    for (int64_t k = 0; k < ndst; ++k) dl64[k] = -99;
    CHECK_OK(est_redist_run(r, 1, t1, s1, d1));
    int64_t bad = 0;
    for (int64_t k = 0; k < ndst; ++k) bad += dl64[k] != rank + k * nranks;
    CHECK(bad == 0, "block->cyclic i64: %lld of %lld values wrong", (long long)bad, (long long)ndst);
  }

  /* (3) statistics, counted here from the two ownership rules */
  {
    int* pair = calloc((size_t)nranks * (size_t)nranks, sizeof *pair); /* pair[s * p + d] */
    int64_t self = 0;
    for (int64_t g = 0; g < N; ++g) {
      const int s = block_owner(N, nranks, g), d = (int)(g % nranks);
      pair[s * nranks + d] = 1;
      self += s == d;
    }
    int64_t total = 0, max = 0, min = -1;
    for (int s = 0; s < nranks; ++s) {
      int64_t m = 0;
      for (int d = 0; d < nranks; ++d) m += d != s && pair[s * nranks + d];
      total += m;
      if (m > max) max = m;
      if (min < 0 || m < min) min = m;
    }
    int64_t my_sent = 0, my_recv = 0, my_el_sent = 0, my_el_recv = 0;
    for (int d = 0; d < nranks; ++d) my_sent += d != rank && pair[rank * nranks + d];
    for (int s = 0; s < nranks; ++s) my_recv += s != rank && pair[s * nranks + rank];
    for (int64_t g = 0; g < N; ++g) {
      const int s = block_owner(N, nranks, g), d = (int)(g % nranks);
      my_el_sent += s == rank && d != rank;
      my_el_recv += d == rank && s != rank;
    }
    free(pair);

    est_plan_stats st;
    memset(&st, 0, sizeof st);
    CHECK_OK(est_redist_plan_stats(r, &st));
    CHECK(st.ranks == nranks, "ranks %d, expected %d", st.ranks, nranks);
    CHECK(st.messages_total == total, "messages_total %lld, expected %lld",
          (long long)st.messages_total, (long long)total);
    CHECK(st.messages_max == max, "messages_max %lld, expected %lld", (long long)st.messages_max,
          (long long)max);
    CHECK(st.messages_min == min, "messages_min %lld, expected %lld", (long long)st.messages_min,
          (long long)min);
    CHECK(st.elements_total == N, "elements_total %lld, expected %d", (long long)st.elements_total, N);
    CHECK(st.self_elements_total == self, "self_elements_total %lld, expected %lld",
          (long long)st.self_elements_total, (long long)self);

    int stages = -1;
    int64_t ms = -1, es = -1, mr = -1, er = -1;
    CHECK_OK(est_redist_schedule_stats(r, &stages, &ms, &es, &mr, &er));
    CHECK(stages == 1, "p2p stages %d, expected 1", stages);
    CHECK(ms == my_sent, "messages_sent %lld, expected %lld", (long long)ms, (long long)my_sent);
    CHECK(mr == my_recv, "messages_received %lld, expected %lld", (long long)mr, (long long)my_recv);
    CHECK(es == my_el_sent, "elements_sent %lld, expected %lld", (long long)es, (long long)my_el_sent);
    CHECK(er == my_el_recv, "elements_received %lld, expected %lld", (long long)er,
          (long long)my_el_recv);

    /* NULL out: EST_ERR_ARGUMENT on every rank, and no rank left waiting in the collective. */
    int rc = est_redist_plan_stats(r, NULL);
    CHECK(rc == EST_ERR_ARGUMENT, "est_redist_plan_stats(r, NULL) returned %d", rc);
    CHECK(strstr(est_last_error(), "out") != NULL, "message: %s", est_last_error());
  }

  CHECK_OK(est_redist_free(&r));
  CHECK(r == NULL, "est_redist_free does not clear the handle");
  CHECK_OK(est_decomp_free(&src));
  CHECK_OK(est_decomp_free(&dst));
  CHECK(src == NULL && dst == NULL, "est_decomp_free does not clear the handle");
  free(s64), free(s32), free(sl64), free(d64), free(d32), free(dl64), free(expected);
}

/* ---- (2) 2-D boxes: rows split -> columns split, both orders -------------------------------- */
static void test_boxes(est_order order) {
  const int64_t ny = 37, nx = 23; /* dimension 0 has ny entries, dimension 1 nx */
  const int64_t shape[2] = {ny, nx};
  const int64_t r0 = block_start(ny, nranks, rank), r1 = block_start(ny, nranks, rank + 1);
  const int64_t c0 = block_start(nx, nranks, rank), c1 = block_start(nx, nranks, rank + 1);
  const int64_t sstart[2] = {r0, 0}, scount[2] = {r1 - r0, nx};
  const int64_t dstart[2] = {0, c0}, dcount[2] = {ny, c1 - c0};
  const char* what = order == EST_ROW_MAJOR ? "box row-major" : "box column-major";

  /* Global index of (i, j) and local position of (i, j) within a box of extents (ei, ej). */
#define GLOBAL(i, j) (order == EST_ROW_MAJOR ? (i) * nx + (j) : (i) + (j) * ny)
#define LOCAL(ii, jj, ei, ej) (order == EST_ROW_MAJOR ? (ii) * (ej) + (jj) : (ii) + (jj) * (ei))

  est_decomp src = NULL, dst = NULL;
  CHECK_OK(est_decomp_new_box(2, shape, sstart, scount, order, &src));
  CHECK_OK(est_decomp_new_box(2, shape, dstart, dcount, order, &dst));
  const int64_t nsrc = scount[0] * scount[1], ndst = dcount[0] * dcount[1];
  int64_t size = -1;
  CHECK_OK(est_decomp_size(dst, &size));
  CHECK(size == ndst, "%s: destination size %lld, expected %lld", what, (long long)size,
        (long long)ndst);

  est_redist r = NULL;
  CHECK_OK(est_redist_new(src, dst, MPI_COMM_WORLD, NULL, &r));
  if (r != NULL) {
    double* s64 = xmalloc((size_t)nsrc * sizeof *s64);
    int32_t* s32 = xmalloc((size_t)nsrc * sizeof *s32);
    double* d64 = xmalloc((size_t)ndst * sizeof *d64);
    int32_t* d32 = xmalloc((size_t)ndst * sizeof *d32);
    double* expected = xmalloc((size_t)ndst * sizeof *expected);
    for (int64_t ii = 0; ii < scount[0]; ++ii)
      for (int64_t jj = 0; jj < scount[1]; ++jj) {
        const int64_t k = LOCAL(ii, jj, scount[0], scount[1]);
        s64[k] = (double)GLOBAL(r0 + ii, jj);
        s32[k] = (int32_t)GLOBAL(r0 + ii, jj);
      }
    for (int64_t ii = 0; ii < dcount[0]; ++ii)
      for (int64_t jj = 0; jj < dcount[1]; ++jj)
        expected[LOCAL(ii, jj, dcount[0], dcount[1])] = (double)GLOBAL(ii, c0 + jj);
    for (int64_t k = 0; k < ndst; ++k) d64[k] = -99, d32[k] = -99;

    const est_type types[2] = {EST_F64, EST_I32};
    const void* srcs[2] = {s64, s32};
    void* dsts[2] = {d64, d32};
    CHECK_OK(est_redist_run(r, 2, types, srcs, dsts));
    check_values(what, ndst, d64, d32, expected);
    free(s64), free(s32), free(d64), free(d32), free(expected);
  }
#undef GLOBAL
#undef LOCAL
  est_redist_free(&r);
  est_decomp_free(&src);
  est_decomp_free(&dst);
}

/* ---- (4) errors ----------------------------------------------------------------------------- */
static void test_errors(void) {
  int rc;
  est_decomp d = (est_decomp)&rc; /* not NULL: a failed constructor must clear it */

  /* An index outside the global size. */
  {
    const int64_t idx[3] = {0, 1, 12345};
    rc = est_decomp_new_indices(N, idx, 3, &d);
    CHECK(rc == EST_ERR_DECOMP, "index outside the global size: returned %d", rc);
    CHECK(strstr(est_last_error(), "12345") != NULL, "message does not name the index: %s",
          est_last_error());
    CHECK(d == NULL, "failed constructor left a handle");
  }
  /* A bad box. */
  {
    const int64_t shape[2] = {4, 5}, start[2] = {0, 3}, count[2] = {4, 3};
    rc = est_decomp_new_box(2, shape, start, count, EST_ROW_MAJOR, &d);
    CHECK(rc == EST_ERR_DECOMP, "box past the global shape: returned %d", rc);
  }
  /* NULL pointers and bad enum values. */
  {
    const int64_t idx[2] = {0, 1};
    rc = est_decomp_new_indices(N, idx, 2, NULL);
    CHECK(rc == EST_ERR_ARGUMENT, "NULL out: returned %d", rc);
    CHECK(strstr(est_last_error(), "est_decomp_new_indices") != NULL &&
              strstr(est_last_error(), "out") != NULL,
          "message does not name the function and argument: %s", est_last_error());
    rc = est_decomp_new_indices(N, NULL, 2, &d);
    CHECK(rc == EST_ERR_ARGUMENT, "NULL indices: returned %d", rc);
    CHECK(strstr(est_last_error(), "indices") != NULL, "message: %s", est_last_error());
    rc = est_decomp_new_indices(N, idx, -1, &d);
    CHECK(rc == EST_ERR_ARGUMENT, "negative count: returned %d", rc);
    int64_t size = 0;
    rc = est_decomp_size(NULL, &size);
    CHECK(rc == EST_ERR_ARGUMENT, "est_decomp_size(NULL): returned %d", rc);
    CHECK(strstr(est_last_error(), "est_decomp_size") != NULL, "message: %s", est_last_error());
    const int64_t shape[1] = {4}, start[1] = {0}, count[1] = {4};
    rc = est_decomp_new_box(1, shape, start, count, (est_order)7, &d);
    CHECK(rc == EST_ERR_ARGUMENT, "bad order: returned %d", rc);
    rc = est_redist_run(NULL, 0, NULL, NULL, NULL);
    CHECK(rc == EST_ERR_ARGUMENT, "est_redist_run(NULL): returned %d", rc);
    CHECK(strstr(est_last_error(), "est_redist_run") != NULL, "message: %s", est_last_error());
    rc = est_redist_finish(NULL);
    CHECK(rc == EST_ERR_ARGUMENT, "est_redist_finish(NULL): returned %d", rc);
    CHECK_OK(est_decomp_free(NULL));
    est_decomp none = NULL;
    CHECK_OK(est_decomp_free(&none));
    CHECK_OK(est_redist_free(NULL));
    est_redist rnone = NULL;
    CHECK_OK(est_redist_free(&rnone));
  }

  /* Collective constructor with bad arguments, on every rank and on one rank only: every rank
   * returns EST_ERR_ARGUMENT, none hangs. */
  {
    est_decomp full = cyclic_decomp(N);
    est_redist r = (est_redist)&rc;
    rc = est_redist_new(NULL, full, MPI_COMM_WORLD, NULL, &r);
    CHECK(rc == EST_ERR_ARGUMENT, "est_redist_new(NULL src): returned %d", rc);
    CHECK(r == NULL, "failed est_redist_new left a handle");
    rc = est_redist_new(full, rank == nranks - 1 ? NULL : full, MPI_COMM_WORLD, NULL, &r);
    CHECK(rc == EST_ERR_ARGUMENT, "est_redist_new(NULL dst on the last rank): returned %d", rc);
    est_redist_options opt = est_redist_options_default();
    opt.missing = (est_missing)9;
    rc = est_redist_new(full, full, MPI_COMM_WORLD, &opt, &r);
    CHECK(rc == EST_ERR_ARGUMENT, "bad options->missing: returned %d", rc);
    opt = est_redist_options_default();
    opt.algorithm = "no-such-algorithm";
    rc = est_redist_new(full, full, MPI_COMM_WORLD, &opt, &r);
    CHECK(rc != EST_OK, "unknown algorithm accepted");
    CHECK(strstr(est_last_error(), "no-such-algorithm") != NULL, "message: %s", est_last_error());
    est_redist_free(&r);

    /* An unknown field type, and a NULL buffer array. */
    CHECK_OK(est_redist_new(full, full, MPI_COMM_WORLD, NULL, &r));
    if (r != NULL) {
      const int64_t m = cyclic_count(N, nranks, rank);
      double* a = xmalloc((size_t)m * sizeof *a);
      double* b = xmalloc((size_t)m * sizeof *b);
      const est_type bad_types[1] = {(est_type)42};
      const void* srcs[1] = {a};
      void* dsts[1] = {b};
      rc = est_redist_run(r, 1, bad_types, srcs, dsts);
      CHECK(rc == EST_ERR_ARGUMENT, "unknown est_type: returned %d", rc);
      CHECK(strstr(est_last_error(), "42") != NULL, "message: %s", est_last_error());
      const est_type types[1] = {EST_F64};
      rc = est_redist_run(r, 1, types, NULL, dsts);
      CHECK(rc == EST_ERR_ARGUMENT, "NULL src array: returned %d", rc);
      CHECK(strstr(est_last_error(), "src") != NULL, "message: %s", est_last_error());
      rc = est_redist_run(r, -1, types, srcs, dsts);
      CHECK(rc == EST_ERR_ARGUMENT, "negative nfields: returned %d", rc);
      free(a), free(b);
    }
    est_redist_free(&r);
    est_decomp_free(&full);
  }

  /* A destination index that no source owns: EST_ERR_PLAN on every rank, naming the index. */
  {
    const int64_t missing = 617;
    const int64_t b0 = block_start(N, nranks, rank), b1 = block_start(N, nranks, rank + 1);
    int64_t* idx = xmalloc((size_t)(b1 - b0) * sizeof *idx);
    int64_t m = 0;
    for (int64_t g = b0; g < b1; ++g)
      if (g != missing) idx[m++] = g;
    est_decomp src = NULL;
    CHECK_OK(est_decomp_new_indices(N, idx, m, &src));
    free(idx);
    est_decomp dst = cyclic_decomp(N);
    est_redist r = NULL;
    rc = est_redist_new(src, dst, MPI_COMM_WORLD, NULL, &r);
    CHECK(rc == EST_ERR_PLAN, "missing source index: returned %d: %s", rc, est_last_error());
    CHECK(strstr(est_last_error(), "617") != NULL, "message does not name the index: %s",
          est_last_error());
    CHECK(r == NULL, "failed est_redist_new left a handle");
    est_redist_free(&r);
    est_decomp_free(&src);
    est_decomp_free(&dst);
  }
}

/* ---- (5) fill mode ---------------------------------------------------------------------------- */
static void test_fill(void) {
  /* Sources own every index of their block except those with g % 7 == 3. */
  const int64_t b0 = block_start(N, nranks, rank), b1 = block_start(N, nranks, rank + 1);
  int64_t* idx = xmalloc((size_t)(b1 - b0) * sizeof *idx);
  int64_t nsrc = 0;
  for (int64_t g = b0; g < b1; ++g)
    if (g % 7 != 3) idx[nsrc++] = g;
  est_decomp src = NULL;
  CHECK_OK(est_decomp_new_indices(N, idx, nsrc, &src));
  est_decomp dst = cyclic_decomp(N);
  const int64_t ndst = cyclic_count(N, nranks, rank);

  est_redist_options opt = est_redist_options_default();
  opt.missing = EST_MISSING_FILL;
  opt.fill_value = -1;
  est_redist r = NULL;
  CHECK_OK(est_redist_new(src, dst, MPI_COMM_WORLD, &opt, &r));
  if (r != NULL) {
    double* s64 = xmalloc((size_t)nsrc * sizeof *s64);
    int32_t* s32 = xmalloc((size_t)nsrc * sizeof *s32);
    double* d64 = xmalloc((size_t)ndst * sizeof *d64);
    int32_t* d32 = xmalloc((size_t)ndst * sizeof *d32);
    double* expected = xmalloc((size_t)ndst * sizeof *expected);
    for (int64_t k = 0; k < nsrc; ++k) s64[k] = (double)idx[k], s32[k] = (int32_t)idx[k];
    for (int64_t k = 0; k < ndst; ++k) {
      const int64_t g = rank + k * nranks;
      expected[k] = g % 7 == 3 ? -1.0 : (double)g;
    }
    const est_type types[2] = {EST_F64, EST_I32};
    const void* srcs[2] = {s64, s32};
    void* dsts[2] = {d64, d32};
    for (int pass = 0; pass < 2; ++pass) { /* the fill happens at every exchange */
      for (int64_t k = 0; k < ndst; ++k) d64[k] = -99, d32[k] = -99;
      CHECK_OK(est_redist_run(r, 2, types, srcs, dsts));
      check_values(pass == 0 ? "fill, first run" : "fill, second run", ndst, d64, d32, expected);
    }
    free(s64), free(s32), free(d64), free(d32), free(expected);
  }
  free(idx);
  est_redist_free(&r);
  est_decomp_free(&src);
  est_decomp_free(&dst);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  CHECK(strcmp(est_last_error(), "") == 0, "est_last_error() before any failure: %s",
        est_last_error());
  test_block_to_cyclic();
  test_boxes(EST_ROW_MAJOR);
  test_boxes(EST_COLUMN_MAJOR);
  test_errors();
  test_fill();

  long counts[2] = {passed, failed}, totals[2] = {0, 0};
  MPI_Allreduce(counts, totals, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("test_capi: %ld passed, %ld failed\n", totals[0], totals[1]);
  MPI_Finalize();
  return totals[1] == 0 ? 0 : 1;
}
