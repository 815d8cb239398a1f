/* The I/O C API (est_io_*) from a plain C11 program: open from a YAML file, declare a grid and
 * two fields, write, flush, close; read back with est_io_read into another decomposition and
 * compare with values computed here from global indices; errors and their messages.
 *
 *   mpirun -n P test_capi_io DIR MODE WRITERS [xml]     (MODE: serverless or server)
 * With `xml`, the same output set-up comes from an XIOS iodef.xml (est_io_open_xios) instead of
 * the YAML: every check below then holds for the set-up read from XIOS XML.
 * Rank 0 prints "test_capi_io: N passed, M failed"; every rank exits non-zero on a failure. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "estuary.h"

static int rank = 0;
static long passed = 0, failed = 0;

#define CHECK(cond, ...)                                                                         \
  do {                                                                                           \
    if (cond) {                                                                                  \
      ++passed;                                                                                  \
    } else {                                                                                     \
      ++failed;                                                                                  \
      fprintf(stderr, "test_capi_io: rank %d: %s:%d: check failed: %s: ", rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                              \
      fprintf(stderr, "\n");                                                                     \
    }                                                                                            \
  } while (0)
#define CHECK_OK(call)                                                        \
  do {                                                                        \
    int rc_ = (call);                                                         \
    CHECK(rc_ == EST_OK, "%s returned %d: %s", #call, rc_, est_last_error()); \
  } while (0)

enum { NX = 8, NY = 6, NH = NX * NY, NLEV = 2, NSTEPS = 4 };

static double value(int64_t g, double step) { return (double)g + 0.25 * step; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 4) {
    fprintf(stderr, "usage: test_capi_io DIR serverless|server WRITERS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int xml = argc > 4 && strcmp(argv[4], "xml") == 0;
  char dir[512], cfg[600];
  snprintf(dir, sizeof dir, "%s/capi_%s_w%s%s", argv[1], argv[2], argv[3], xml ? "_xml" : "");
  snprintf(cfg, sizeof cfg, "%s.%s", dir, xml ? "xml" : "yaml");
  if (rank == 0 && xml) {
    mkdir(argv[1], 0755); /* may exist */
    FILE* f = fopen(cfg, "w");
    fprintf(f,
            "<?xml version=\"1.0\"?>\n<simulation>\n  <context id=\"capi\">\n"
            "    <field_definition prec=\"8\" operation=\"instant\">\n"
            "      <field id=\"t\"/>\n      <field id=\"s\"/>\n    </field_definition>\n"
            "    <file_definition type=\"one_file\">\n"
            "      <file id=\"c_inst\" name=\"@prefix@inst\" output_freq=\"1h\">\n"
            "        <field field_ref=\"t\" compression_level=\"1\"/>\n        <field field_ref=\"s\"/>\n"
            "      </file>\n"
            "      <file id=\"c_avg\" name=\"@prefix@avg\" output_freq=\"2h\">\n"
            "        <field field_ref=\"t\" operation=\"average\"/>\n      </file>\n"
            "    </file_definition>\n  </context>\n</simulation>\n");
    fclose(f);
  } else if (rank == 0) {
    mkdir(argv[1], 0755); /* may exist */
    FILE* f = fopen(cfg, "w");
    fprintf(f,
            "output:\n  mode: %s\n  writers: %s\n  directory: %s\n  files:\n"
            "    - name: c_inst\n      output_freq: 1h\n      format: netcdf4\n"
            "      fields: [{name: t, precision: double, deflate: 1}, {name: s, precision: double}]\n"
            "    - name: c_avg\n      output_freq: 2h\n"
            "      fields: [{name: t, operation: average, precision: double}]\n",
            argv[2], argv[3], dir);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  /* Errors: a missing configuration; NULL handles. */
  est_io bad = NULL;
  CHECK(est_io_open("/nonexistent/io.yaml", MPI_COMM_WORLD, &bad) == EST_ERR_IO && bad == NULL, "%s",
        est_last_error());
  CHECK(strstr(est_last_error(), "cannot read the configuration") != NULL, "%s", est_last_error());
  CHECK(est_io_enddef(NULL) == EST_ERR_ARGUMENT, "%s", est_last_error());

  est_io io = NULL;
  if (xml) {
    /* A *.xml path to est_io_open is XIOS XML too; a bad substitution list is refused. */
    CHECK(est_io_open("/nonexistent/iodef.xml", MPI_COMM_WORLD, &bad) == EST_ERR_IO && bad == NULL, "%s",
          est_last_error());
    CHECK(strstr(est_last_error(), "/nonexistent/iodef.xml") != NULL, "%s", est_last_error());
    char odd[640];
    snprintf(odd, sizeof odd, "%s_odd.xml", dir);
    if (rank == 0) {
      FILE* f = fopen(odd, "w");
      fprintf(f, "<simulation>\n  <context id=\"c\">\n    <bogus/>\n  </context>\n</simulation>\n");
      fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(est_io_open(odd, MPI_COMM_WORLD, &bad) == EST_ERR_IO && bad == NULL, "%s", est_last_error());
    CHECK(strstr(est_last_error(), "_odd.xml:3") != NULL && strstr(est_last_error(), "bogus") != NULL,
          "est_io_open of a *.xml does not read it as XIOS XML: %s", est_last_error());
    CHECK(est_io_open_xios(cfg, NULL, 0.0, "prefix", argv[2], atoi(argv[3]), dir, 0, MPI_COMM_WORLD, &bad) ==
              EST_ERR_ARGUMENT && strstr(est_last_error(), "KEY=VALUE") != NULL,
          "%s", est_last_error());
    CHECK_OK(est_io_open_xios(cfg, "capi", 0.0, "prefix=c_", argv[2], atoi(argv[3]), dir, 0, MPI_COMM_WORLD, &io));
  } else {
    CHECK_OK(est_io_open(cfg, MPI_COMM_WORLD, &io));
  }
  int server = 0;
  CHECK_OK(est_io_is_server(io, &server));
  if (server) {
    CHECK_OK(est_io_serve(io));
  } else {
    MPI_Comm mc;
    CHECK_OK(est_io_model_comm(io, &mc));
    int p = 1, r = 0;
    MPI_Comm_size(mc, &p);
    MPI_Comm_rank(mc, &r);
    /* Grid points: cyclic over the model ranks, lon/lat of a regular 45 x 30 degree grid. */
    int64_t np = 0, pts[NH];
    double lon[NH], lat[NH];
    for (int64_t i = r; i < NH; i += p) {
      pts[np] = i;
      lon[np] = 45.0 * (double)(i % NX);
      lat[np] = -75.0 + 30.0 * (double)(i / NX);
      ++np;
    }
    CHECK_OK(est_io_def_grid(io, "g", "lonlat", NX, NY, pts, np, lon, lat, 0, NULL, NULL));
    /* t: blocks of the (level, point) array; s: the grid's points. */
    const int64_t n3 = NLEV * NH, lo = n3 * r / p, hi = n3 * (r + 1) / p;
    int64_t start = lo, count = hi - lo, stride = 1;
    est_decomp d3 = NULL, d2 = NULL;
    CHECK_OK(est_decomp_new_stripes(n3, &start, &count, &stride, 1, &d3));
    CHECK_OK(est_decomp_new_indices(NH, pts, np, &d2));
    const double levels[NLEV] = {5.0, 15.0};
    CHECK_OK(est_io_def_field(io, "t", "g", levels, NLEV, d3, "K", "temperature", "air_temperature"));
    /* s with a mask of its own: every third grid point is land, written as the fill value. */
    int32_t smask[NH];
    for (int64_t k = 0; k < np; ++k) smask[k] = pts[k] % 3 != 0;
    CHECK(est_io_def_field_masked(io, "s", "g", NULL, 0, d2, NULL, NULL, NULL, smask, np + 1) == EST_ERR_IO,
          "a mask longer than the decomposition is accepted");
    CHECK_OK(est_io_def_field_masked(io, "s", "g", NULL, 0, d2, NULL, NULL, NULL, smask, np));
    CHECK_OK(est_io_enddef(io));
    double t[NLEV * NH], s[NH];
    for (int step = 1; step <= NSTEPS; ++step) {
      for (int64_t k = 0; k < count; ++k) t[k] = value(lo + k, step);
      for (int64_t k = 0; k < np; ++k) s[k] = value(pts[k], step);
      CHECK_OK(est_io_write(io, "t", 3600.0 * step, t, count));
      CHECK_OK(est_io_write(io, "s", 3600.0 * step, s, np));
      if (step == 2) CHECK_OK(est_io_flush(io));
    }
    CHECK(est_io_write(io, "nope", 0.0, t, count) == EST_ERR_IO && strstr(est_last_error(), "nope") != NULL,
          "%s", est_last_error());
    CHECK(est_io_write(io, "t", 0.0, t, count + 1) == EST_ERR_IO, "%s", est_last_error());
    CHECK_OK(est_io_close(io));
    est_io_stats st;
    CHECK_OK(est_io_get_stats(io, &st));
    /* 4 t + 4 s (c_inst), 2 averages (c_avg); the lon-lat grid's 1-D lon and lat are written at
     * file creation, not handed over. */
    CHECK(st.records_handed_over == 10, "handed over %lld", (long long)st.records_handed_over);
    CHECK(st.model_io_s > 0, "model_io_s %g", st.model_io_s);
    CHECK(st.derived_s == 0, "derived_s %g without derived fields", st.derived_s);
    est_decomp_free(&d3);
    est_decomp_free(&d2);
  }
  /* The run's metrics, collective over every rank: bytes of c_inst (4 records of t and s) and
   * c_avg (2 averages of t), all double (1-D coordinates are not counted); CPMIP formulas. */
  int wsize = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  est_io_report rep;
  CHECK_OK(est_io_get_report(io, 10.0, 8.0, &rep));
  const int64_t want = 8 * (4 * (NLEV * NH + NH) + 2 * NLEV * NH);
  CHECK(rep.bytes_written == want, "bytes %lld, want %lld", (long long)rep.bytes_written, (long long)want);
  CHECK(rep.ranks == wsize && rep.files_created == 2, "ranks %d files %lld", rep.ranks, (long long)rep.files_created);
  {
    const double ch = wsize * 10.0 / 3600, ch0 = rep.model_ranks * 8.0 / 3600;
    const double doc = (ch - ch0) / ch0, di = (double)want / 1e9 / ch;
    CHECK(rep.data_output_cost > doc - 1e-12 && rep.data_output_cost < doc + 1e-12, "DOC %g, want %g",
          rep.data_output_cost, doc);
    CHECK(rep.data_intensity > di * (1 - 1e-12) && rep.data_intensity < di * (1 + 1e-12), "DI %g, want %g",
          rep.data_intensity, di);
  }
  CHECK_OK(est_io_free(&io));
  CHECK(io == NULL, "est_io_free leaves a handle");

  /* Read back on every rank of the world, reversed-block decomposition. */
  int wp = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &wp);
  const int rr = wp - 1 - rank;
  const int64_t n3 = NLEV * NH, lo = n3 * rr / wp, hi = n3 * (rr + 1) / wp;
  int64_t idx[NLEV * NH];
  for (int64_t k = 0; k < hi - lo; ++k) idx[k] = hi - 1 - k;
  est_decomp dr = NULL;
  CHECK_OK(est_decomp_new_indices(n3, idx, hi - lo, &dr));
  double got[NLEV * NH];
  char path[700];
  est_io_reader rd = NULL;
  snprintf(path, sizeof path, "%s/c_inst.nc", dir);
  CHECK_OK(est_io_reader_open(path, MPI_COMM_WORLD, &rd));
  CHECK_OK(est_io_read(rd, "t", 3.0 * 3600, dr, got, hi - lo));
  long wrong = 0;
  for (int64_t k = 0; k < hi - lo; ++k) wrong += got[k] != value(idx[k], 3);
  CHECK(wrong == 0, "%ld values of t differ", wrong);
  CHECK(est_io_read(rd, "t", 3.5 * 3600, dr, got, hi - lo) == EST_ERR_IO, "no error for a missing record");
  CHECK_OK(est_io_reader_set_period(rd, 4 * 3600.0));
  CHECK_OK(est_io_read(rd, "t", 6.0 * 3600, dr, got, hi - lo)); /* 6 h = record at 2 h */
  wrong = 0;
  for (int64_t k = 0; k < hi - lo; ++k) wrong += got[k] != value(idx[k], 2);
  CHECK(wrong == 0, "%ld values of periodic t differ", wrong);
  { /* s at 3 h: its own mask's points hold the fill value (1e20), the others the model's values. */
    const int64_t slo = NH * rr / wp, shi = NH * (rr + 1) / wp;
    int64_t sstart = slo, scount = shi - slo;
    est_decomp ds = NULL;
    CHECK_OK(est_decomp_new_stripes(NH, &sstart, &scount, NULL, 1, &ds));
    CHECK_OK(est_io_read(rd, "s", 3.0 * 3600, ds, got, scount));
    wrong = 0;
    for (int64_t k = 0; k < scount; ++k) wrong += got[k] != ((slo + k) % 3 == 0 ? 1e20 : value(slo + k, 3));
    CHECK(wrong == 0, "%ld values of masked s differ", wrong);
    est_decomp_free(&ds);
  }
  CHECK_OK(est_io_reader_free(&rd));
  snprintf(path, sizeof path, "%s/c_avg.nc", dir);
  CHECK_OK(est_io_reader_open(path, MPI_COMM_WORLD, &rd));
  CHECK_OK(est_io_read(rd, "t", 3.0 * 3600, dr, got, hi - lo)); /* the period (2 h, 4 h] */
  wrong = 0;
  for (int64_t k = 0; k < hi - lo; ++k) wrong += got[k] != (value(idx[k], 3) + value(idx[k], 4)) / 2;
  CHECK(wrong == 0, "%ld values of the average differ", wrong);
  CHECK_OK(est_io_reader_free(&rd));
  est_decomp_free(&dr);

#ifdef ESTUARY_TEST_HAVE_MUPARSER
  /* A derived field (expr:) through the C API: its time is in est_io_stats.derived_s, and its
   * values are the expression's. Serverless, one writer, on every rank. */
  if (!xml) {
    char dcfg[700];
    snprintf(dcfg, sizeof dcfg, "%s_derived.yaml", dir);
    if (rank == 0) {
      FILE* f = fopen(dcfg, "w");
      fprintf(f,
              "output:\n  directory: %s_derived\n  files:\n    - name: d\n      output_freq: 1h\n"
              "      fields: [{name: s2, expr: \"2 * s + 1\", precision: double}]\n",
              dir);
      fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    est_io dio = NULL;
    CHECK_OK(est_io_open(dcfg, MPI_COMM_WORLD, &dio));
    int64_t np = 0, pts[NH];
    double lon[NH], lat[NH], s[NH];
    for (int64_t i = rank; i < NH; i += wp) {
      pts[np] = i;
      lon[np] = 45.0 * (double)(i % NX);
      lat[np] = -75.0 + 30.0 * (double)(i / NX);
      ++np;
    }
    est_decomp ds = NULL;
    CHECK_OK(est_io_def_grid(dio, "g", "lonlat", NX, NY, pts, np, lon, lat, 0, NULL, NULL));
    CHECK_OK(est_decomp_new_indices(NH, pts, np, &ds));
    CHECK_OK(est_io_def_field(dio, "s", "g", NULL, 0, ds, NULL, NULL, NULL));
    CHECK_OK(est_io_enddef(dio));
    for (int step = 1; step <= 2; ++step) {
      for (int64_t k = 0; k < np; ++k) s[k] = value(pts[k], step);
      CHECK_OK(est_io_write(dio, "s", 3600.0 * step, s, np));
    }
    CHECK_OK(est_io_close(dio));
    est_io_stats st;
    CHECK_OK(est_io_get_stats(dio, &st));
    CHECK(st.derived_s > 0 && st.derived_s <= st.model_io_s, "derived_s %g, model_io_s %g", st.derived_s,
          st.model_io_s);
    CHECK_OK(est_io_free(&dio));
    snprintf(path, sizeof path, "%s_derived/d.nc", dir);
    CHECK_OK(est_io_reader_open(path, MPI_COMM_WORLD, &rd));
    CHECK_OK(est_io_read(rd, "s2", 2.0 * 3600, ds, got, np));
    wrong = 0;
    for (int64_t k = 0; k < np; ++k) wrong += got[k] != 2 * value(pts[k], 2) + 1;
    CHECK(wrong == 0, "%ld values of the derived field differ", wrong);
    CHECK_OK(est_io_reader_free(&rd));
    est_decomp_free(&ds);
  }
#endif

  long f = failed, all = 0;
  MPI_Allreduce(&f, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("test_capi_io: %ld passed, %ld failed\n", passed, all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
