/* C shims for the Fortran module `estuary` (fortran/estuary.f90): what iso_c_binding cannot do
 * portably by itself. MPI communicators cross as Fortran integer handles (MPI_Fint) and are
 * converted here with MPI_Comm_f2c / MPI_Comm_c2f, so the module needs neither the `mpi` module
 * nor the C type of MPI_Comm; MPI is initialised on first use and finalised at the end, as
 * OASIS3-MCT's oasis_init_comp / oasis_terminate do, when the program has not done it itself. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estuary.h"

static int initialised_mpi = 0; /* 1: MPI_Init was called here, so MPI_Finalize is ours too */

/* MPI_Init when MPI is not running yet. Returns EST_OK or EST_ERR_MPI. */
int est_f_mpi_init(void) {
  int up = 0, down = 0;
  MPI_Initialized(&up);
  MPI_Finalized(&down);
  if (down) return EST_ERR_MPI;
  if (up) return EST_OK;
  if (MPI_Init(NULL, NULL) != MPI_SUCCESS) return EST_ERR_MPI;
  initialised_mpi = 1;
  return EST_OK;
}

/* MPI_Finalize if est_f_mpi_init started MPI. */
int est_f_mpi_finalize(void) {
  int down = 0;
  MPI_Finalized(&down);
  if (!initialised_mpi || down) return EST_OK;
  initialised_mpi = 0;
  return MPI_Finalize() == MPI_SUCCESS ? EST_OK : EST_ERR_MPI;
}

/* est_comp_new with a Fortran communicator; has_world = 0: MPI_COMM_WORLD. */
int est_f_comp_new(const char* name, int has_world, MPI_Fint world, const char* config,
                   const char* directory, est_comp* out) {
  return est_comp_new(name, has_world ? MPI_Comm_f2c(world) : MPI_COMM_WORLD, config, directory, out);
}

/* est_comp_comm, giving a Fortran communicator. */
int est_f_comp_comm(est_comp c, MPI_Fint* local) {
  MPI_Comm comm = MPI_COMM_NULL;
  const int rc = est_comp_comm(c, &comm);
  if (rc == EST_OK && local != NULL) *local = MPI_Comm_c2f(comm);
  return rc;
}

/* est_redist_new with a Fortran communicator; fill = 1: missing destination indices get
 * fill_value instead of being an error. */
int est_f_redist_new(est_decomp src, est_decomp dst, MPI_Fint comm, int fill, double fill_value,
                     est_redist* out) {
  est_redist_options o = est_redist_options_default();
  if (fill) {
    o.missing = EST_MISSING_FILL;
    o.fill_value = fill_value;
  }
  return est_redist_new(src, dst, MPI_Comm_f2c(comm), &o, out);
}

/* The length of est_last_error()'s text, and a copy of it into buf (no terminating NUL). */
int64_t est_f_last_error(char* buf, int64_t len) {
  const char* m = est_last_error();
  const int64_t n = (int64_t)strlen(m);
  if (buf != NULL && len > 0) memcpy(buf, m, (size_t)(n < len ? n : len));
  return n;
}

/* MPI_Abort on MPI_COMM_WORLD (after the caller has printed its message). */
void est_f_abort(int errorcode) {
  fflush(stdout);
  fflush(stderr);
  int up = 0;
  MPI_Initialized(&up);
  if (up) MPI_Abort(MPI_COMM_WORLD, errorcode);
}

/* est_comp_create_couplcomm with Fortran communicators and OASIS's convention: icpl =
 * MPI_UNDEFINED leaves the rank out (MPI_COMM_NULL's Fortran handle), any other value takes part. */
int est_f_comp_create_couplcomm(est_comp c, int icpl, MPI_Fint allcomm, MPI_Fint* cplcomm) {
  MPI_Comm out = MPI_COMM_NULL;
  const int rc = est_comp_create_couplcomm(c, icpl != MPI_UNDEFINED, MPI_Comm_f2c(allcomm), &out);
  if (cplcomm != NULL) *cplcomm = MPI_Comm_c2f(out);
  return rc;
}

/* The I/O C API (est_io_*) with Fortran communicators; comm = -1: MPI_COMM_WORLD. */
int est_f_io_open(const char* config, MPI_Fint comm, est_io* out) {
  return est_io_open(config, comm == -1 ? MPI_COMM_WORLD : MPI_Comm_f2c(comm), out);
}

/* est_io_open_xios with a Fortran communicator; "" for a string means NULL (the default). */
int est_f_io_open_xios(const char* iodef, const char* context, double timestep_s, const char* substitutions,
                       const char* mode, int writers, const char* directory, int skip_unsupported, MPI_Fint comm,
                       est_io* out) {
  return est_io_open_xios(iodef, context[0] ? context : NULL, timestep_s, substitutions[0] ? substitutions : NULL,
                          mode[0] ? mode : NULL, writers, directory[0] ? directory : NULL, skip_unsupported,
                          comm == -1 ? MPI_COMM_WORLD : MPI_Comm_f2c(comm), out);
}

/* est_io_model_comm, giving a Fortran handle (MPI_COMM_NULL's on server ranks). */
int est_f_io_model_comm(est_io io, MPI_Fint* comm) {
  MPI_Comm c = MPI_COMM_NULL;
  const int rc = est_io_model_comm(io, &c);
  if (comm != NULL) *comm = MPI_Comm_c2f(c);
  return rc;
}

int est_f_io_reader_open(const char* path, MPI_Fint comm, est_io_reader* out) {
  return est_io_reader_open(path, comm == -1 ? MPI_COMM_WORLD : MPI_Comm_f2c(comm), out);
}

/* ---- OASIS3-MCT's coupling communicator and communicators between components, with Fortran
 * handles (the OASIS-shaped calls of estuary.f90, fortran/estuary_oasis_body.inc) ---- */

int est_f_comp_set_couplcomm(est_comp c, MPI_Fint comm) { return est_comp_set_couplcomm(c, MPI_Comm_f2c(comm)); }

int est_f_comp_coupling_comm(est_comp c, MPI_Fint* comm) {
  MPI_Comm out = MPI_COMM_NULL;
  const int rc = est_comp_coupling_comm(c, &out);
  if (rc == EST_OK && comm != NULL) *comm = MPI_Comm_c2f(out);
  return rc;
}

/* inter = 1: est_comp_get_intercomm, else est_comp_get_intracomm. */
int est_f_comp_get_intercomm(est_comp c, int inter, const char* other, MPI_Fint* newcomm) {
  MPI_Comm out = MPI_COMM_NULL;
  const int rc = inter ? est_comp_get_intercomm(c, other, &out) : est_comp_get_intracomm(c, other, &out);
  if (newcomm != NULL) *newcomm = MPI_Comm_c2f(out);
  return rc;
}

/* names: n NUL-terminated names one after the other (Fortran cannot pass an array of char*). */
int est_f_comp_get_multi_intracomm(est_comp c, int n, const char* names, MPI_Fint* newcomm, int* root_ranks) {
  const char** list = n > 0 ? malloc(sizeof(const char*) * (size_t)n) : NULL;
  for (int i = 0; list != NULL && i < n; ++i) {
    list[i] = names;
    names += strlen(names) + 1;
  }
  MPI_Comm out = MPI_COMM_NULL;
  const int rc = est_comp_get_multi_intracomm(c, n, list, &out, root_ranks);  /* n < 0: its error */
  free(list);
  if (newcomm != NULL) *newcomm = MPI_Comm_c2f(out);
  return rc;
}

/* est_comp_new_coupled with a Fortran communicator (OASIS's oasis_init_comp `coupled`). */
int est_f_comp_new_coupled(const char* name, int has_world, MPI_Fint world, const char* config,
                           const char* directory, int coupled, est_comp* out) {
  return est_comp_new_coupled(name, has_world ? MPI_Comm_f2c(world) : MPI_COMM_WORLD, config, directory, coupled, out);
}
