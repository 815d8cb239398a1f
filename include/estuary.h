/* estuary C API: what Fortran and other languages call.
 *
 * Pattern: est_<concept>_<verb>, opaque handles made by _new and released by _free, every
 * function returns EST_OK or an error code, and est_last_error() gives the message of the last
 * failure on the calling thread. */
#ifndef ESTUARY_H
#define ESTUARY_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum est_status {
  EST_OK = 0,
  EST_ERR_ARGUMENT = 1, /* bad argument: null handle, negative count, unknown name */
  EST_ERR_DECOMP = 2,   /* an index outside the global size, a bad box */
  EST_ERR_PLAN = 3,     /* missing or duplicated indices between decompositions */
  EST_ERR_EXCHANGE = 4, /* buffers or types that do not match the exchange */
  EST_ERR_MPI = 5,      /* an MPI call failed */
  EST_ERR_COUPLE = 6,   /* coupler: configuration, definitions, put/get, time-out (message says) */
  EST_ERR_IO = 7,       /* I/O: output configuration, files, definitions, reads (message says) */
  EST_IO_TERMINATED = 8, /* est_io_write after SIGTERM: every record is written, files closed: end the run */
  EST_ERR_INTERNAL = 99
};

typedef enum est_type { EST_F64 = 0, EST_F32 = 1, EST_I32 = 2, EST_I64 = 3 } est_type;
typedef enum est_order { EST_ROW_MAJOR = 0, EST_COLUMN_MAJOR = 1 } est_order;
typedef enum est_missing { EST_MISSING_ERROR = 0, EST_MISSING_FILL = 1 } est_missing;
typedef enum est_duplicate { EST_DUPLICATE_ERROR = 0, EST_DUPLICATE_LOWEST_RANK = 1 } est_duplicate;

/* The message of the last failed call on this thread ("" if none). */
const char* est_last_error(void);

/* ---- decompositions ---------------------------------------------------------------------- */
typedef struct est_decomp_s* est_decomp;

int est_decomp_new_indices(int64_t global_size, const int64_t* indices, int64_t count,
                           est_decomp* out);
/* nstripes runs of (start[i], count[i], stride[i]); stride may be NULL (all 1). */
int est_decomp_new_stripes(int64_t global_size, const int64_t* start, const int64_t* count,
                           const int64_t* stride, int64_t nstripes, est_decomp* out);
int est_decomp_new_box(int ndims, const int64_t* global_shape, const int64_t* start,
                       const int64_t* count, est_order order, est_decomp* out);
int est_decomp_size(est_decomp d, int64_t* local_size);
int est_decomp_free(est_decomp* d); /* sets *d to NULL; NULL is accepted */

/* ---- redistribution (plan + schedule + executor) ----------------------------------------- */
typedef struct est_redist_s* est_redist;

typedef struct est_redist_options {
  const char* algorithm; /* NULL or "": ESTUARY_SCHEDULE or "p2p" */
  est_missing missing;
  double fill_value;
  est_duplicate duplicate;
} est_redist_options;

/* Default options (p2p, missing and duplicate indices are errors). */
est_redist_options est_redist_options_default(void);

/* Collective over comm. options may be NULL. */
int est_redist_new(est_decomp src, est_decomp dst, MPI_Comm comm,
                   const est_redist_options* options, est_redist* out);
/* Moves nfields fields in one exchange; field i has type types[i], source buffer src[i]
 * (laid out as src decomposition) and destination buffer dst[i]. Collective. */
int est_redist_run(est_redist r, int nfields, const est_type* types, const void* const* src,
                   void* const* dst);
int est_redist_start(est_redist r, int nfields, const est_type* types, const void* const* src,
                     void* const* dst);
int est_redist_finish(est_redist r);

typedef struct est_plan_stats {
  int ranks;
  int64_t messages_total, messages_max, messages_min;
  double messages_avg;
  int64_t elements_total, elements_max, elements_min;
  double elements_avg;
  int64_t self_elements_total;
} est_plan_stats;

/* Collective. */
int est_redist_plan_stats(est_redist r, est_plan_stats* out);
/* This rank's schedule: stages, messages and elements it sends and receives. */
int est_redist_schedule_stats(est_redist r, int* stages, int64_t* messages_sent,
                              int64_t* elements_sent, int64_t* messages_received,
                              int64_t* elements_received);
int est_redist_free(est_redist* r);

/* ---- Coupler (estuary::Component; the call sequence of OASIS3-MCT) ----
 * est_comp_new (collective over world) -> est_comp_def_partition -> [est_comp_def_grid]
 * -> est_comp_def_var -> est_comp_enddef (collective) -> est_comp_put / est_comp_get
 * -> est_comp_terminate (collective) -> est_comp_free. */
typedef struct est_comp_s* est_comp;

/* OASIS3-MCT's info codes, same values. */
typedef enum est_info {
  EST_INFO_OK = 0, EST_INFO_RECVD = 3, EST_INFO_SENT = 4, EST_INFO_LOCTRANS = 5,
  EST_INFO_TOREST = 6, EST_INFO_OUTPUT = 7, EST_INFO_SENTOUT = 8, EST_INFO_TORESTOUT = 9,
  EST_INFO_FROMREST = 10, EST_INFO_INPUT = 11, EST_INFO_RECVOUT = 12, EST_INFO_FROMRESTOUT = 13
} est_info;
typedef enum est_direction { EST_IN = 0, EST_OUT = 1 } est_direction;

/* config: YAML or namcouple path, NULL for the default ($ESTUARY_CONFIG, estuary.yaml,
 * namcouple); directory: where files are read and written, NULL for the working directory. */
int est_comp_new(const char* name, MPI_Comm world, const char* config, const char* directory, est_comp* out);
int est_comp_comm(est_comp c, MPI_Comm* local);
/* OASIS ig_paral array (0-based offsets): serial {0,0,n}, apple {1,off,len},
 * box {2,off,nx,ny,global_nx}, orange {3,nseg,off1,len1,...}, points {4,n,i1,...}. */
/* global_size < 0: the size OASIS infers without ig_size (est_comp_partition_global_size; then
 * collective over the coupling ranks). */
int est_comp_def_partition(est_comp c, const int64_t* ig_paral, int64_t len, int64_t global_size,
                           const char* name, int* id);
/* Any estuary decomposition. */
int est_comp_def_partition_decomp(est_comp c, est_decomp d, const char* name, int* id);
/* The grid at the partition's points: centres (degrees), ncorner corners per point (0: none;
 * corner arrays point-major), mask (1 valid, 0 masked; NULL: all valid), area (NULL: from the
 * corners). nx, ny: the grid's shape (ny = 1 for unstructured). */
int est_comp_def_grid(est_comp c, const char* name, int partition, int64_t nx, int64_t ny, const double* lon,
                      const double* lat, int ncorner, const double* corner_lon, const double* corner_lat,
                      const int32_t* mask, const double* area);
int est_comp_def_var(est_comp c, const char* name, int partition, est_direction direction, int bundle, int* id);
int est_comp_enddef(est_comp c);
/* n values: bundle x the partition's local size (member b at b * size + i). */
int est_comp_put(est_comp c, int var, double time, const double* values, int64_t n, est_info* info);
/* est_comp_put with what OASIS's and YAC's puts may carry besides the values (estuary::PutExtras):
 * ngrad gradient arrays of n values each (OASIS's fld2..fld4, for a coupling whose weights have
 * ngrad + 1 columns: a num_wgts 3 or 4 file, SCRIPR BICUBIC; 0 / NULL: none), and a fractional
 * mask of n values in [0, 1] (YAC's yac_cput_frac; NULL: none): the target gets W (f x) / W f. */
int est_comp_put_ext(est_comp c, int var, double time, const double* values, int64_t n,
                     const double* const* gradients, int ngrad, const double* fraction, est_info* info);
int est_comp_get(est_comp c, int var, double time, double* values, int64_t n, est_info* info);
/* SCRIPR CALLBACK (YAML scripr: {method: callback, name: NAME}; YAC's callback interpolation):
 * the weight function of the couplings that name it, registered on the target component's
 * ranks before est_comp_enddef. At enddef each target rank calls fn once: q gives every source
 * centre (degrees, global order; src_mask 1 valid, 0 masked) and this rank's targets; fn adds
 * links (global target index, global source index, weight) for its own targets with
 * est_links_add and returns 0 (nonzero: failure). Links to indices out of range are an error
 * naming the coupling and the rank, on every rank. */
typedef struct est_weight_query {
  const char* coupling;
  int64_t nsrc;
  const double *src_lon, *src_lat;
  const int32_t* src_mask; /* NULL: every source point valid */
  int64_t ndst;
  const int64_t* dst_index;
  const double *dst_lon, *dst_lat;
} est_weight_query;
typedef struct est_links_s* est_links_out;
int est_links_add(est_links_out out, int64_t target, int64_t source, double weight);
typedef int (*est_weight_fn)(void* ctx, const est_weight_query* q, est_links_out out);
int est_comp_register_weights(est_comp c, const char* name, est_weight_fn fn, void* ctx);
int est_comp_terminate(est_comp c);
int est_comp_free(est_comp* c); /* sets *c to NULL; NULL is accepted; terminates if needed */

/* oasis_create_couplcomm: the coupling communicator of the ranks of `local` (usually the
 * component's communicator) that take part in the coupling. Collective over local: ranks with
 * coupled != 0 get a new communicator (ranks in the order of local), the others MPI_COMM_NULL.
 * As OASIS's, it is also the component's coupling communicator (est_comp_set_couplcomm below).
 * The caller frees it (MPI_Comm_free). */
int est_comp_create_couplcomm(est_comp c, int coupled, MPI_Comm local, MPI_Comm* couplcomm);
/* oasis_abort: prints "estuary abort: component NAME: message" to stderr and calls
 * MPI_Abort(MPI_COMM_WORLD, errorcode). c may be NULL. Does not return when MPI is running;
 * returns EST_ERR_MPI when it is not (nothing to abort). */
int est_comp_abort(est_comp c, const char* message, int errorcode);
/* After enddef: the run length of the configuration (seconds), and for a field received with
 * CONSERV the source's global integral of the last exchange (Component::last_source_integral). */
int est_comp_runtime(est_comp c, double* runtime);
int est_comp_last_source_integral(est_comp c, int var, double* integral);

/* ---- OASIS3-MCT's run-time queries and communicators (estuary::Component's; OASIS's names
 * and semantics; docs/user-guide.md lists every OASIS call next to estuary's) ----
 * Every est_comp_* function that fails also writes its message (est_last_error()) to the
 * component's log, estuary.NAME.log, from whichever rank failed. */
/* est_comp_new with OASIS's oasis_init_comp `coupled` flag: coupled = 0, the component takes no
 * part in the coupling (left out of the others' world; enddef, put and get do nothing). Every
 * rank of the world gives the flag, the same on every rank of a component. */
int est_comp_new_coupled(const char* name, MPI_Comm world, const char* config, const char* directory, int coupled,
                         est_comp* out);
/* OASIS's parameter values (mod_oasis_parameters; OASIS_Success of its C bindings). */
#define EST_OASIS_OK 0
#define EST_OASIS_SUCCESS 0
#define EST_OASIS_VAR_UNCPL (-1)
#define EST_OASIS_NOTDEF (-2)
#define EST_OASIS_OUT 20
#define EST_OASIS_IN 21
#define EST_OASIS_INOUT 2
#define EST_OASIS_REAL 4
#define EST_OASIS_DOUBLE 8
/* oasis_set_couplcomm: local, before enddef, on every rank of the component: the ranks that
 * take part in the coupling are those of couplcomm (MPI_COMM_NULL on the others), a
 * communicator of the component's ranks. est_comp_create_couplcomm calls it, as OASIS's does.
 * Ranks left out define no fields; the queries and communicators below fail there. */
int est_comp_set_couplcomm(est_comp c, MPI_Comm couplcomm);
/* The handle given to set_couplcomm (OASIS's oasis_get_localcomm after it), else est_comp_comm's. */
int est_comp_coupling_comm(est_comp c, MPI_Comm* couplcomm);
/* oasis_put_inquire, after enddef: the info code a put of var at time would return. */
int est_comp_put_inquire(est_comp c, int var, double time, est_info* info);
/* oasis_get_ncpl, after enddef: the number of couplings (namcouple entries) of var. */
int est_comp_get_ncpl(est_comp c, int var, int* ncpl);
/* oasis_get_freqs, after enddef: their periods (seconds) into periods[0 .. ncpl-1], in the
 * configuration's order. kinout: the field's direction, EST_OASIS_OUT / EST_OASIS_IN (or
 * EST_OUT / EST_IN); ncpl must be est_comp_get_ncpl's. */
int est_comp_get_freqs(est_comp c, int var, int kinout, int ncpl, double* periods);
/* oasis_get_intercomm / oasis_get_intracomm, after enddef, collective over the coupling ranks
 * of both components: a new communicator the caller frees. */
int est_comp_get_intercomm(est_comp c, const char* other, MPI_Comm* newcomm);
int est_comp_get_intracomm(est_comp c, const char* other, MPI_Comm* newcomm);
/* oasis_get_multi_intracomm, after enddef, collective over the coupling ranks of the n
 * components named (this one included; "" entries skipped): root_ranks[i] (may be NULL) gets
 * the rank of names[i]'s root in the new communicator (-1 for ""). */
int est_comp_get_multi_intracomm(est_comp c, int n, const char* const* names, MPI_Comm* newcomm, int* root_ranks);
/* oasis_get_debug / oasis_set_debug (initially $NLOGPRT; kept, not used by estuary's log). */
int est_comp_get_debug(est_comp c, int* level);
int est_comp_set_debug(est_comp c, int level);
/* The global size OASIS infers for an oasis_def_partition without ig_size: the largest index
 * end of the ig_paral arrays over the coupling ranks (collective over est_comp_coupling_comm;
 * estuary::oasis_partition_global_size, as every binding infers it). */
int est_comp_partition_global_size(est_comp c, const int64_t* ig_paral, int64_t len, int64_t* global_size);
/* Appends "error on rank R: message" to the component's log (for errors found by a binding). */
int est_comp_log_error(est_comp c, const char* message);
/* *yes = 1 when a coupling of the configuration names the field (OASIS: it is in the namcouple),
 * else 0 (Component::in_configuration: OASIS's def_var then returns OASIS_Var_Uncpl). */
int est_comp_in_configuration(est_comp c, const char* field, int* yes);

/* ---- grid recipes (estuary::GridGen): any rank's share of a generated grid ---------------
 * kind: "lonlat" (n1 x n2 cells), "gaussian" (n1 longitudes x n2 latitudes), "reduced_gaussian"
 * (n1 latitudes per hemisphere), "tripolar" (n1 x n2), "cubed_sphere" (6 n1^2 cells), "t799",
 * "orca025" (n1, n2 unused); land != 0: with the analytic land mask (GridGen::with_land). */
/* The grid's global size, shape (nx, ny; ny = 1 for 1-D kinds) and corners per cell. Any output may be NULL. */
int est_grid_gen_info(const char* kind, int64_t n1, int64_t n2, int land, int64_t* global_size, int64_t* nx,
                      int64_t* ny, int* ncorner);
/* The cells at d's points, in d's local order: lon, lat, area (steradians) with one value per
 * local point, corner_lon/corner_lat with ncorner per point (point-major), mask 1 valid / 0
 * land. Every output may be NULL (not wanted). */
int est_grid_gen_make(const char* kind, int64_t n1, int64_t n2, int land, est_decomp d, double* lon, double* lat,
                      double* corner_lon, double* corner_lat, int32_t* mask, double* area);
/* A decomposition from an OASIS ig_paral array (as est_comp_def_partition reads it). */
int est_decomp_new_oasis(const int64_t* ig_paral, int64_t len, int64_t global_size, est_decomp* out);

/* ---- OASIS grid files (grids.nc, masks.nc, areas.nc; Component::write_grid ...) ----------
 * OASIS3-MCT's grid-writing calls, between est_comp_start_grids_writing and
 * est_comp_terminate_grids_writing; the files are written at est_comp_enddef (every component
 * together, each file by one rank, a variable only when the file lacks it). partition -1: this
 * rank gives the whole grid (nx * ny values, x fastest); else a partition id: this rank's points
 * in the partition's local order. n: the values in each array (corners: points * nc, point
 * fastest, corner slowest, as a Fortran (nx, ny, nc) array). mask: OASIS's convention, 1 =
 * MASKED, 0 = valid. A SCRIPR or CONSERV coupling whose grid no rank gave with
 * est_comp_def_grid reads it from these files at est_comp_enddef. */
int est_comp_start_grids_writing(est_comp c, int* flag); /* flag: always 1, as OASIS's */
int est_comp_write_grid(est_comp c, const char* name, int64_t nx, int64_t ny, const double* lon, const double* lat,
                        int64_t n, int partition);
int est_comp_write_corner(est_comp c, const char* name, int64_t nx, int64_t ny, int nc, const double* clo,
                          const double* cla, int64_t n, int partition);
int est_comp_write_mask(est_comp c, const char* name, int64_t nx, int64_t ny, const int32_t* mask, int64_t n,
                        int partition);
int est_comp_write_area(est_comp c, const char* name, int64_t nx, int64_t ny, const double* area, int64_t n,
                        int partition);
int est_comp_terminate_grids_writing(est_comp c);
/* ---- end of OASIS grid files ---- */

/* ---- I/O (estuary::io): model fields to CF netCDF files, and back ------------------------
 * est_io_open (collective over comm; the `output:` section of a YAML file, docs/io.md)
 * -> server ranks (est_io_is_server): est_io_serve, then est_io_free
 * -> model ranks, over est_io_model_comm: est_io_def_grid -> est_io_def_field -> est_io_enddef
 * -> est_io_write ... [est_io_flush] -> est_io_close -> est_io_free. */
typedef struct est_io_s* est_io;
int est_io_open(const char* config, MPI_Comm comm, est_io* out); /* a *.xml config: est_io_open_xios's defaults */
/* est_io_open from an XIOS iodef.xml (docs/io.md, "XIOS XML"): context NULL = "nemo" or the
 * only one; timestep_s: the model step, for durations in "ts" (0: none); substitutions: NEMO's
 * file-name templates as "expname=ORCA2,startdate=20000101" (NULL or "": none); mode
 * ("server", "serverless"), writers (> 0) and directory override the defaults (serverless, 1,
 * "."), NULL/0 keep them; skip_unsupported != 0 leaves out what estuary would write differently
 * from XIOS instead of failing. Warnings go to stderr on rank 0 of comm. */
int est_io_open_xios(const char* iodef, const char* context, double timestep_s, const char* substitutions,
                     const char* mode, int writers, const char* directory, int skip_unsupported, MPI_Comm comm,
                     est_io* out);
int est_io_is_server(est_io io, int* is_server);
int est_io_model_comm(est_io io, MPI_Comm* model_comm); /* MPI_COMM_NULL on server ranks */
int est_io_serve(est_io io);                            /* server ranks: returns at the model's close */
/* This rank's n points of grid `name`: kind "lonlat", "gaussian", "curvilinear" (nx x ny) or
 * "reduced_gaussian", "unstructured" (nx points, ny = 1); points: their global indices
 * (longitude fastest), lon/lat: n values; ncorner = 0 and NULL corners for no cell bounds,
 * else corner_lon/corner_lat hold n * ncorner values (point-major). */
int est_io_def_grid(est_io io, const char* name, const char* kind, int64_t nx, int64_t ny,
                    const int64_t* points, int64_t n, const double* lon, const double* lat, int ncorner,
                    const double* corner_lon, const double* corner_lat);
/* A field on `grid` with nlev levels (levels NULL / nlev 0: 2-D); d numbers the global array as
 * level * grid size + point. units, long_name, standard_name may be NULL. */
int est_io_def_field(est_io io, const char* name, const char* grid, const double* levels, int nlev,
                     est_decomp d, const char* units, const char* long_name, const char* standard_name);
/* As est_io_def_field, with the field's own mask: n values in d's order, 1 written, 0 masked
 * (land). Masked points are written as the fill value (1e20) whatever the model puts there and
 * never enter an average. mask NULL (n 0): the grid's mask, as est_io_def_field. */
int est_io_def_field_masked(est_io io, const char* name, const char* grid, const double* levels, int nlev,
                            est_decomp d, const char* units, const char* long_name, const char* standard_name,
                            const int32_t* mask, int64_t n);
int est_io_enddef(est_io io);
/* One sample at model time `time` (seconds since the reference time); n values in d's order.
 * Returns EST_IO_TERMINATED after SIGTERM (the files are complete and closed). */
int est_io_write(est_io io, const char* field, double time, const double* values, int64_t n);
int est_io_flush(est_io io);
int est_io_close(est_io io);
typedef struct est_io_stats {
  int64_t records_handed_over, records_written, bytes_written, files_created;
  double write_s, transfer_s, model_io_s;
  double derived_s; /* model side, part of model_io_s: derived fields (expr:) copied, evaluated, handed over */
} est_io_stats;
int est_io_get_stats(est_io io, est_io_stats* out); /* this rank's counters */
/* The run's metrics over every rank (estuary::io::IoReport): collective over the communicator
 * given to est_io_open, server ranks too (after est_io_serve), after est_io_close. run_s: the
 * run's wall time; run_without_io_s: a run without output if measured, else 0 (estimated). */
typedef struct est_io_report {
  int ranks, model_ranks, writers;
  int64_t bytes_written, records_written, files_created;
  double write_s, write_mb_per_s, model_io_s, run_s, run_without_io_s, core_hours;
  double data_output_cost; /* CPMIP, a fraction: (core-hours with output - without) / without */
  double data_intensity;   /* CPMIP: GB written per core-hour */
} est_io_report;
int est_io_get_report(est_io io, double run_s, double run_without_io_s, est_io_report* out);
int est_io_free(est_io* io); /* sets *io to NULL; closes if needed; NULL is accepted */

/* Reading (restarts, forcing) into any decomposition; collective over comm. */
typedef struct est_io_reader_s* est_io_reader;
int est_io_reader_open(const char* path, MPI_Comm comm, est_io_reader* out);
/* Periodic forcing: records repeat every period seconds; each read prefetches the next one. */
int est_io_reader_set_period(est_io_reader r, double period);
int est_io_read(est_io_reader r, const char* var, double time, est_decomp d, double* values, int64_t n);
int est_io_reader_free(est_io_reader* r);

#ifdef __cplusplus
}
#endif

#endif /* ESTUARY_H */
