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
int est_comp_get(est_comp c, int var, double time, double* values, int64_t n, est_info* info);
int est_comp_terminate(est_comp c);
int est_comp_free(est_comp* c); /* sets *c to NULL; NULL is accepted; terminates if needed */

#ifdef __cplusplus
}
#endif

#endif /* ESTUARY_H */
