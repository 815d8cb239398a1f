!> estuary: the coupler and the redistribution from Fortran, over the C API (include/estuary.h).
!>
!> The coupler's call sequence and names follow OASIS3-MCT, so that porting a model is mostly
!> renaming (oasis_init_comp -> estuary_init_comp, oasis_def_partition -> estuary_def_partition,
!> ...; OASIS_Recvd -> estuary_Recvd, ...):
!>
!>   call estuary_init_comp(comp_id, 'ocean', ierror)            ! MPI_Init if not done yet
!>   call estuary_get_localcomm(comp_id, local_comm, ierror)
!>   call estuary_def_partition(comp_id, part_id, ig_paral, ierror, ig_size=nglobal, name='ogrd')
!>   call estuary_def_var(comp_id, var_id, 'O_SST', part_id, estuary_in, 1, ierror)
!>   call estuary_enddef(comp_id, ierror)
!>   call estuary_get(comp_id, var_id, date, sst, info, ierror)  ! info: estuary_Recvd, ...
!>   call estuary_terminate(comp_id, ierror)                     ! MPI_Finalize if MPI_Init was ours
!>
!> OASIS's own argument lists work too (estuary_oasis_decl.inc): a model written for OASIS3-MCT
!> builds here after `sed -E 's/oasis_/estuary_/g; s/mod_oasis/estuary/gI; s/(call[[:space:]]+)oasis_/\1estuary_/gI'` and no other change
!> (estuary_init_comp(comp_id, name, kinfo), estuary_def_partition(part_id, ig_paral, kinfo),
!> estuary_put(var_id, kstep, field, kinfo), ..., estuary_put_inquire, estuary_get_ncpl,
!> estuary_get_freqs, estuary_set_couplcomm, estuary_get_intercomm, estuary_get_intracomm,
!> estuary_get_multi_intracomm, estuary_get/set_debug; OASIS_In, OASIS_Real, ip_realwp_p ...).
!>
!> Also: estuary_create_couplcomm (oasis_create_couplcomm), estuary_def_grid (the grid at a
!> partition's points, for SCRIPR and CONSERV), estuary_abort, estuary_get_runtime,
!> estuary_last_source_integral, and estuary's generated grids (estuary_grid_info,
!> estuary_grid_gen). docs/user-guide.md lists every OASIS call next to its estuary one.
!> The I/O server (docs/io.md): estuary_io_open ... estuary_io_write ... estuary_io_close,
!> estuary_io_report (the run's metrics and CPMIP measures) and estuary_io_reader_open /
!> estuary_io_read (docs/user-guide.md, "I/O from Python and Fortran"); estuary_io_write and
!> estuary_io_read take real(8) or real(4) arrays of rank 1, 2 or 3, as estuary_put does.
!>
!> Conventions:
!> * Every routine returns an integer error code in ierror: 0 (estuary_success) or one of the
!>   estuary_err_* codes of estuary.h; estuary_error_message(msg) gives the message of the last
!>   failure (est_last_error()'s text, or the module's own for the checks made here). The messages
!>   are kept per process, not per thread. estuary_put and estuary_get take ierror as an optional
!>   argument: without it a failure prints the message and aborts, as OASIS3-MCT does.
!> * Ids (component, partition, variable) are plain integers. Partition and variable ids are
!>   those of the C API (0, 1, ... a component); component ids start at 1.
!> * Partitions take OASIS's ig_paral arrays, 0-based offsets: serial [0,0,gsize],
!>   apple [1,offset,size], box [2,offset,nx,ny,global_nx], orange [3,nseg,off1,len1,...],
!>   points [4,npts,idx1,...]. The global size is ig_size (as OASIS's optional isize); without
!>   it, it is inferred as OASIS does: the largest index end over the coupling ranks (collective).
!> * Fields: real(8) or real(4) arrays of rank 1, 2 or 3 whose elements are the partition's
!>   local points in its local order (a box: x fastest, so a (nx, ny) array). A bundle of nb
!>   members has the bundle as its last dimension (npts, nb) or (nx, ny, nb). real(4) fields
!>   pass through a real(8) buffer. Times: real(8) seconds, or integer seconds as OASIS's date.
!> * Communicators are Fortran MPI handles (integer, as from the `mpi` module; for `mpi_f08`
!>   pass comm%MPI_VAL).
module estuary
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_int, c_int64_t, c_double, c_float, &
                                         c_char, c_null_char, c_associated, c_loc, c_int32_t, c_funptr
  use, intrinsic :: iso_fortran_env, only: error_unit, int64, real32, real64
  implicit none
  private

  ! ---- status codes (est_status) ----
  integer, parameter, public :: estuary_success = 0
  integer, parameter, public :: estuary_err_argument = 1
  integer, parameter, public :: estuary_err_decomp = 2
  integer, parameter, public :: estuary_err_plan = 3
  integer, parameter, public :: estuary_err_exchange = 4
  integer, parameter, public :: estuary_err_mpi = 5
  integer, parameter, public :: estuary_err_couple = 6
  integer, parameter, public :: estuary_err_internal = 99

  ! ---- put/get info codes (est_info: OASIS3-MCT's values) ----
  integer, parameter, public :: estuary_Ok = 0
  integer, parameter, public :: estuary_Recvd = 3
  integer, parameter, public :: estuary_Sent = 4
  integer, parameter, public :: estuary_LocTrans = 5
  integer, parameter, public :: estuary_ToRest = 6
  integer, parameter, public :: estuary_Output = 7
  integer, parameter, public :: estuary_SentOut = 8
  integer, parameter, public :: estuary_ToRestOut = 9
  integer, parameter, public :: estuary_FromRest = 10
  integer, parameter, public :: estuary_Input = 11
  integer, parameter, public :: estuary_RecvOut = 12
  integer, parameter, public :: estuary_FromRestOut = 13

  ! ---- variable directions (est_direction) ----
  integer, parameter, public :: estuary_in = 0
  integer, parameter, public :: estuary_out = 1

  ! ---- redistribution handles ----
  !> A decomposition: which global indices (0-based) this rank holds, in its local order.
  type, public :: estuary_decomp
    type(c_ptr) :: ptr = c_null_ptr
  end type estuary_decomp
  !> The C API's est_weight_query (c_f_pointer the arrays: nsrc and ndst values; src_mask may
  !> be null: every source valid).
  type, public, bind(c) :: estuary_weight_query
    type(c_ptr) :: coupling
    integer(c_int64_t) :: nsrc
    type(c_ptr) :: src_lon, src_lat, src_mask
    integer(c_int64_t) :: ndst
    type(c_ptr) :: dst_index, dst_lon, dst_lat
  end type estuary_weight_query
  !> A redistribution between two decompositions over a communicator.
  type, public :: estuary_redist
    type(c_ptr) :: ptr = c_null_ptr
    integer(int64) :: nsrc = 0, ndst = 0  ! the local sizes of the source and destination
  end type estuary_redist

  public :: estuary_init_comp, estuary_get_localcomm, estuary_def_partition, estuary_def_var, &
            estuary_enddef, estuary_put, estuary_get, estuary_terminate, estuary_abort, &
            estuary_error_message, estuary_create_couplcomm, estuary_def_grid, estuary_grid_gen, estuary_grid_info, &
            estuary_get_runtime, estuary_last_source_integral
  ! SCRIPR CALLBACK (YAC's callback interpolation) through the C API: a bind(c) function
  !   integer(c_int) function fn(ctx, q, out) bind(c); type(c_ptr), value :: ctx, out
  !     type(estuary_weight_query), intent(in) :: q
  ! registered with estuary_register_weights(comp_id, name, c_funloc(fn), ctx, ierror) on the
  ! target's ranks before estuary_enddef; it adds links (0-based global target, source, weight)
  ! with estuary_links_add(out, target, source, weight) and returns 0 (the C est_weight_fn).
  public :: estuary_register_weights, estuary_links_add
  public :: estuary_decomp_new_indices, estuary_decomp_new_box, estuary_decomp_size, &
            estuary_decomp_free, estuary_redist_new, estuary_redist_run, estuary_redist_free

  ! ---- the I/O server (est_io_*): model fields to CF netCDF files, and back ----
  integer, parameter, public :: estuary_err_io = 7
  !> estuary_io_write's ierror after SIGTERM: every record is written, the files are closed.
  integer, parameter, public :: estuary_io_terminated = 8
  !> An Output (est_io): open from a YAML file, define, write, close, free.
  type, public :: estuary_io
    type(c_ptr) :: ptr = c_null_ptr
    integer(int64) :: opened = 0  ! system_clock count at estuary_io_open: estuary_io_report's default run time
  end type estuary_io
  !> A Reader (est_io_reader) of a file written by an Output, into any decomposition.
  type, public :: estuary_io_reader
    type(c_ptr) :: ptr = c_null_ptr
  end type estuary_io_reader
  !> The run's I/O metrics over every rank (est_io_report, estuary::io::IoReport), from
  !> estuary_io_report: sums over the writers, maxima of the times, and the CPMIP measures.
  type, bind(c), public :: estuary_io_report_type
    integer(c_int) :: ranks = 0, model_ranks = 0, writers = 0
    integer(c_int64_t) :: bytes_written = 0    ! variable data put to files, all writers
    integer(c_int64_t) :: records_written = 0  ! per writer (a record: one variable at one time)
    integer(c_int64_t) :: files_created = 0
    real(c_double) :: write_s = 0, write_mb_per_s = 0, model_io_s = 0, run_s = 0, run_without_io_s = 0
    real(c_double) :: core_hours = 0
    real(c_double) :: data_output_cost = 0     ! CPMIP, a fraction: (core-hours with output - without) / without
    real(c_double) :: data_intensity = 0       ! CPMIP: GB written per core-hour
  end type estuary_io_report_type
  !> One rank's I/O counters (est_io_stats, estuary::io::IoStats), from estuary_io_stats.
  type, bind(c), public :: estuary_io_stats_type
    integer(c_int64_t) :: records_handed_over = 0, records_written = 0, bytes_written = 0, files_created = 0
    real(c_double) :: write_s = 0, transfer_s = 0, model_io_s = 0
    real(c_double) :: derived_s = 0  ! model side, part of model_io_s: derived fields (expr:)
  end type estuary_io_stats_type
  public :: estuary_io_stats
  public :: estuary_io_open, estuary_io_open_xios, estuary_io_is_server, estuary_io_model_comm, estuary_io_serve, &
            estuary_io_def_grid, estuary_io_def_field, estuary_io_enddef, estuary_io_write, &
            estuary_io_flush, estuary_io_close, estuary_io_free, estuary_io_reader_open, &
            estuary_io_reader_set_period, estuary_io_read, estuary_io_reader_free, estuary_io_report
  !> estuary_io_write and estuary_io_read: real(8) or real(4) arrays of rank 1, 2 or 3, elements
  !> in the decomposition's order (real(4) passes through a real(8) buffer).
  interface estuary_io_write
    module procedure io_write_r8_1, io_write_r8_2, io_write_r8_3, io_write_r4_1, io_write_r4_2, io_write_r4_3
  end interface estuary_io_write
  interface estuary_io_read
    module procedure io_read_r8_1, io_read_r8_2, io_read_r8_3, io_read_r4_1, io_read_r4_2, io_read_r4_3
  end interface estuary_io_read

  interface estuary_def_partition
    module procedure def_partition_i4, def_partition_i8
  end interface estuary_def_partition
  interface estuary_decomp_new_indices
    module procedure decomp_new_indices_i4, decomp_new_indices_i8
  end interface estuary_decomp_new_indices
  interface estuary_redist_run
    module procedure redist_run_r8, redist_run_r4
  end interface estuary_redist_run
  interface estuary_put
    module procedure put_r8_1t, put_r8_1d, put_r8_2t, put_r8_2d, &
      put_r8_3t, put_r8_3d, put_r4_1t, put_r4_1d, &
      put_r4_2t, put_r4_2d, put_r4_3t, put_r4_3d
  end interface
  interface estuary_get
    module procedure get_r8_1t, get_r8_1d, get_r8_2t, get_r8_2d, &
      get_r8_3t, get_r8_3d, get_r4_1t, get_r4_1d, &
      get_r4_2t, get_r4_2d, get_r4_3t, get_r4_3d
  end interface

  ! ---- the components of this process ----
  type :: var_entry
    character(len=:), allocatable :: name
    integer :: bundle = 0  ! 0: no variable with this id
  end type var_entry
  type :: comp_entry
    type(c_ptr) :: ptr = c_null_ptr
    character(len=:), allocatable :: name
    type(var_entry), allocatable :: vars(:)  ! vars(id + 1)
    ! estuary_init_comp(coupled = .false.): the component takes no part in the coupling.
    logical :: coupled = .true.
  end type comp_entry
  type(comp_entry), allocatable, save :: comps(:)
  character(len=:), allocatable, save :: last_message

  ! ---- the C API (estuary.h) and the shims (estuary_fshim.c). MPI_Fint is a C int. ----
  interface
    function est_f_mpi_init() bind(c, name='est_f_mpi_init') result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function est_f_mpi_init
    function est_f_mpi_finalize() bind(c, name='est_f_mpi_finalize') result(rc)
      import :: c_int
      integer(c_int) :: rc
    end function est_f_mpi_finalize
    function est_f_comp_new(name, has_world, world, config, directory, out) &
        bind(c, name='est_f_comp_new') result(rc)
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: has_world, world
      type(c_ptr), value :: config, directory
      type(c_ptr), intent(out) :: out
      integer(c_int) :: rc
    end function est_f_comp_new
    function est_f_comp_comm(c, local) bind(c, name='est_f_comp_comm') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: c
      integer(c_int), intent(out) :: local
      integer(c_int) :: rc
    end function est_f_comp_comm
    function est_comp_def_partition(c, ig_paral, len, global_size, name, id) &
        bind(c, name='est_comp_def_partition') result(rc)
      import :: c_int, c_int64_t, c_char, c_ptr
      type(c_ptr), value :: c
      integer(c_int64_t), intent(in) :: ig_paral(*)
      integer(c_int64_t), value :: len, global_size
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), intent(out) :: id
      integer(c_int) :: rc
    end function est_comp_def_partition
    function est_comp_def_var(c, name, partition, direction, bundle, id) &
        bind(c, name='est_comp_def_var') result(rc)
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: c
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: partition, direction, bundle
      integer(c_int), intent(out) :: id
      integer(c_int) :: rc
    end function est_comp_def_var
    function est_comp_enddef(c) bind(c, name='est_comp_enddef') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: c
      integer(c_int) :: rc
    end function est_comp_enddef
    function est_comp_put(c, var, time, values, n, info) bind(c, name='est_comp_put') result(rc)
      import :: c_int, c_int64_t, c_double, c_ptr
      type(c_ptr), value :: c
      integer(c_int), value :: var
      real(c_double), value :: time
      real(c_double), intent(in) :: values(*)
      integer(c_int64_t), value :: n
      integer(c_int), intent(out) :: info
      integer(c_int) :: rc
    end function est_comp_put
    function est_comp_put_ext(c, var, time, values, n, gradients, ngrad, fraction, info) &
        bind(c, name='est_comp_put_ext') result(rc)
      import :: c_int, c_int64_t, c_double, c_ptr
      type(c_ptr), value :: c
      integer(c_int), value :: var
      real(c_double), value :: time
      real(c_double), intent(in) :: values(*)
      integer(c_int64_t), value :: n
      type(c_ptr), intent(in) :: gradients(*)
      integer(c_int), value :: ngrad
      type(c_ptr), value :: fraction
      integer(c_int), intent(out) :: info
      integer(c_int) :: rc
    end function est_comp_put_ext
    function est_comp_register_weights(c, name, fn, ctx) bind(c, name='est_comp_register_weights') result(rc)
      import :: c_int, c_ptr, c_char, c_funptr
      type(c_ptr), value :: c
      character(kind=c_char), intent(in) :: name(*)
      type(c_funptr), value :: fn
      type(c_ptr), value :: ctx
      integer(c_int) :: rc
    end function est_comp_register_weights
    function estuary_links_add(out, target, source, weight) bind(c, name='est_links_add') result(rc)
      import :: c_int, c_ptr, c_int64_t, c_double
      type(c_ptr), value :: out
      integer(c_int64_t), value :: target, source
      real(c_double), value :: weight
      integer(c_int) :: rc
    end function estuary_links_add
    function est_comp_get(c, var, time, values, n, info) bind(c, name='est_comp_get') result(rc)
      import :: c_int, c_int64_t, c_double, c_ptr
      type(c_ptr), value :: c
      integer(c_int), value :: var
      real(c_double), value :: time
      real(c_double), intent(inout) :: values(*)
      integer(c_int64_t), value :: n
      integer(c_int), intent(out) :: info
      integer(c_int) :: rc
    end function est_comp_get
    function est_comp_terminate(c) bind(c, name='est_comp_terminate') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: c
      integer(c_int) :: rc
    end function est_comp_terminate
    function est_comp_free(c) bind(c, name='est_comp_free') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: c
      integer(c_int) :: rc
    end function est_comp_free
    function est_f_last_error(buf, len) bind(c, name='est_f_last_error') result(n)
      import :: c_char, c_int64_t
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_int64_t), value :: len
      integer(c_int64_t) :: n
    end function est_f_last_error
    subroutine est_f_abort(errorcode) bind(c, name='est_f_abort')
      import :: c_int
      integer(c_int), value :: errorcode
    end subroutine est_f_abort
    function est_decomp_new_indices(global_size, indices, count, out) &
        bind(c, name='est_decomp_new_indices') result(rc)
      import :: c_int, c_int64_t, c_ptr
      integer(c_int64_t), value :: global_size
      integer(c_int64_t), intent(in) :: indices(*)
      integer(c_int64_t), value :: count
      type(c_ptr), intent(out) :: out
      integer(c_int) :: rc
    end function est_decomp_new_indices
    function est_decomp_new_box(ndims, global_shape, start, count, order, out) &
        bind(c, name='est_decomp_new_box') result(rc)
      import :: c_int, c_int64_t, c_ptr
      integer(c_int), value :: ndims
      integer(c_int64_t), intent(in) :: global_shape(*), start(*), count(*)
      integer(c_int), value :: order
      type(c_ptr), intent(out) :: out
      integer(c_int) :: rc
    end function est_decomp_new_box
    function est_decomp_size(d, local_size) bind(c, name='est_decomp_size') result(rc)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: d
      integer(c_int64_t), intent(out) :: local_size
      integer(c_int) :: rc
    end function est_decomp_size
    function est_decomp_free(d) bind(c, name='est_decomp_free') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: d
      integer(c_int) :: rc
    end function est_decomp_free
    function est_f_redist_new(src, dst, comm, fill, fill_value, out) &
        bind(c, name='est_f_redist_new') result(rc)
      import :: c_int, c_double, c_ptr
      type(c_ptr), value :: src, dst
      integer(c_int), value :: comm, fill
      real(c_double), value :: fill_value
      type(c_ptr), intent(out) :: out
      integer(c_int) :: rc
    end function est_f_redist_new
    function est_redist_run(r, nfields, types, src, dst) bind(c, name='est_redist_run') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: r
      integer(c_int), value :: nfields
      integer(c_int), intent(in) :: types(*)
      type(c_ptr), intent(in) :: src(*), dst(*)
      integer(c_int) :: rc
    end function est_redist_run
    function est_redist_free(r) bind(c, name='est_redist_free') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: r
      integer(c_int) :: rc
    end function est_redist_free
    function est_f_comp_create_couplcomm(c, icpl, allcomm, cplcomm) &
        bind(c, name='est_f_comp_create_couplcomm') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: c
      integer(c_int), value :: icpl, allcomm
      integer(c_int), intent(out) :: cplcomm
      integer(c_int) :: rc
    end function est_f_comp_create_couplcomm
    function est_comp_def_grid(c, name, partition, nx, ny, lon, lat, ncorner, corner_lon, corner_lat, mask, area) &
        bind(c, name='est_comp_def_grid') result(rc)
      import :: c_int, c_int64_t, c_char, c_ptr, c_double
      type(c_ptr), value :: c
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: partition
      integer(c_int64_t), value :: nx, ny
      real(c_double), intent(in) :: lon(*), lat(*)
      integer(c_int), value :: ncorner
      type(c_ptr), value :: corner_lon, corner_lat, mask, area
      integer(c_int) :: rc
    end function est_comp_def_grid
    function est_grid_gen_info(kind, n1, n2, land, global_size, nx, ny, ncorner) &
        bind(c, name='est_grid_gen_info') result(rc)
      import :: c_int, c_int64_t, c_char
      character(kind=c_char), intent(in) :: kind(*)
      integer(c_int64_t), value :: n1, n2
      integer(c_int), value :: land
      integer(c_int64_t), intent(out) :: global_size, nx, ny
      integer(c_int), intent(out) :: ncorner
      integer(c_int) :: rc
    end function est_grid_gen_info
    function est_grid_gen_make(kind, n1, n2, land, d, lon, lat, corner_lon, corner_lat, mask, area) &
        bind(c, name='est_grid_gen_make') result(rc)
      import :: c_int, c_int64_t, c_char, c_ptr, c_double, c_int32_t
      character(kind=c_char), intent(in) :: kind(*)
      integer(c_int64_t), value :: n1, n2
      integer(c_int), value :: land
      type(c_ptr), value :: d
      real(c_double), intent(out) :: lon(*), lat(*), corner_lon(*), corner_lat(*), area(*)
      integer(c_int32_t), intent(out) :: mask(*)
      integer(c_int) :: rc
    end function est_grid_gen_make
    function est_comp_runtime(c, runtime) bind(c, name='est_comp_runtime') result(rc)
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: c
      real(c_double), intent(out) :: runtime
      integer(c_int) :: rc
    end function est_comp_runtime
    function est_comp_last_source_integral(c, var, integral) bind(c, name='est_comp_last_source_integral') result(rc)
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: c
      integer(c_int), value :: var
      real(c_double), intent(out) :: integral
      integer(c_int) :: rc
    end function est_comp_last_source_integral
    function est_decomp_new_oasis(ig_paral, len, global_size, out) bind(c, name='est_decomp_new_oasis') result(rc)
      import :: c_int, c_int64_t, c_ptr
      integer(c_int64_t), intent(in) :: ig_paral(*)
      integer(c_int64_t), value :: len, global_size
      type(c_ptr), intent(out) :: out
      integer(c_int) :: rc
    end function est_decomp_new_oasis
  end interface

  ! ---- the I/O C API (est_io_*) and its shims (estuary_fshim.c) ----
  interface
    function est_f_io_open(config, comm, out) bind(c, name='est_f_io_open') result(rc)
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: config(*)
      integer(c_int), value :: comm
      type(c_ptr), intent(out) :: out
      integer(c_int) :: rc
    end function est_f_io_open
    function est_f_io_open_xios(iodef, context, timestep, substitutions, mode, writers, directory, skip, comm, out) &
        bind(c, name='est_f_io_open_xios') result(rc)
      import :: c_int, c_char, c_ptr, c_double
      character(kind=c_char), intent(in) :: iodef(*), context(*), substitutions(*), mode(*), directory(*)
      real(c_double), value :: timestep
      integer(c_int), value :: writers, skip, comm
      type(c_ptr), intent(out) :: out
      integer(c_int) :: rc
    end function est_f_io_open_xios
    function est_io_is_server(io, is_server) bind(c, name='est_io_is_server') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: io
      integer(c_int), intent(out) :: is_server
      integer(c_int) :: rc
    end function est_io_is_server
    function est_f_io_model_comm(io, comm) bind(c, name='est_f_io_model_comm') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: io
      integer(c_int), intent(out) :: comm
      integer(c_int) :: rc
    end function est_f_io_model_comm
    function est_io_serve(io) bind(c, name='est_io_serve') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: io
      integer(c_int) :: rc
    end function est_io_serve
    function est_io_def_grid(io, name, kind, nx, ny, points, n, lon, lat, ncorner, corner_lon, corner_lat) &
        bind(c, name='est_io_def_grid') result(rc)
      import :: c_int, c_int64_t, c_double, c_char, c_ptr
      type(c_ptr), value :: io
      character(kind=c_char), intent(in) :: name(*), kind(*)
      integer(c_int64_t), value :: nx, ny, n
      integer(c_int64_t), intent(in) :: points(*)
      real(c_double), intent(in) :: lon(*), lat(*)
      integer(c_int), value :: ncorner
      type(c_ptr), value :: corner_lon, corner_lat
      integer(c_int) :: rc
    end function est_io_def_grid
    function est_io_def_field(io, name, grid, levels, nlev, d, units, long_name, standard_name) &
        bind(c, name='est_io_def_field') result(rc)
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: io
      character(kind=c_char), intent(in) :: name(*), grid(*)
      type(c_ptr), value :: levels
      integer(c_int), value :: nlev
      type(c_ptr), value :: d, units, long_name, standard_name
      integer(c_int) :: rc
    end function est_io_def_field
    function est_io_def_field_masked(io, name, grid, levels, nlev, d, units, long_name, standard_name, mask, n) &
        bind(c, name='est_io_def_field_masked') result(rc)
      import :: c_int, c_int64_t, c_char, c_ptr
      type(c_ptr), value :: io
      character(kind=c_char), intent(in) :: name(*), grid(*)
      type(c_ptr), value :: levels
      integer(c_int), value :: nlev
      type(c_ptr), value :: d, units, long_name, standard_name, mask
      integer(c_int64_t), value :: n
      integer(c_int) :: rc
    end function est_io_def_field_masked
    function est_io_enddef(io) bind(c, name='est_io_enddef') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: io
      integer(c_int) :: rc
    end function est_io_enddef
    function est_io_write(io, field, time, values, n) bind(c, name='est_io_write') result(rc)
      import :: c_int, c_int64_t, c_double, c_char, c_ptr
      type(c_ptr), value :: io
      character(kind=c_char), intent(in) :: field(*)
      real(c_double), value :: time
      real(c_double), intent(in) :: values(*)
      integer(c_int64_t), value :: n
      integer(c_int) :: rc
    end function est_io_write
    function est_io_flush(io) bind(c, name='est_io_flush') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: io
      integer(c_int) :: rc
    end function est_io_flush
    function est_io_close(io) bind(c, name='est_io_close') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: io
      integer(c_int) :: rc
    end function est_io_close
    function est_io_get_stats(io, out) bind(c, name='est_io_get_stats') result(rc)
      import :: c_int, c_ptr, estuary_io_stats_type
      type(c_ptr), value :: io
      type(estuary_io_stats_type), intent(out) :: out
      integer(c_int) :: rc
    end function est_io_get_stats
    function est_io_get_report(io, run_s, run_without_io_s, out) bind(c, name='est_io_get_report') result(rc)
      import :: c_int, c_double, c_ptr, estuary_io_report_type
      type(c_ptr), value :: io
      real(c_double), value :: run_s, run_without_io_s
      type(estuary_io_report_type), intent(out) :: out
      integer(c_int) :: rc
    end function est_io_get_report
    function est_io_free(io) bind(c, name='est_io_free') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: io
      integer(c_int) :: rc
    end function est_io_free
    function est_f_io_reader_open(path, comm, out) bind(c, name='est_f_io_reader_open') result(rc)
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int), value :: comm
      type(c_ptr), intent(out) :: out
      integer(c_int) :: rc
    end function est_f_io_reader_open
    function est_io_reader_set_period(r, period) bind(c, name='est_io_reader_set_period') result(rc)
      import :: c_int, c_double, c_ptr
      type(c_ptr), value :: r
      real(c_double), value :: period
      integer(c_int) :: rc
    end function est_io_reader_set_period
    function est_io_read(r, var, time, d, values, n) bind(c, name='est_io_read') result(rc)
      import :: c_int, c_int64_t, c_double, c_char, c_ptr
      type(c_ptr), value :: r
      character(kind=c_char), intent(in) :: var(*)
      real(c_double), value :: time
      type(c_ptr), value :: d
      real(c_double), intent(inout) :: values(*)
      integer(c_int64_t), value :: n
      integer(c_int) :: rc
    end function est_io_read
    function est_io_reader_free(r) bind(c, name='est_io_reader_free') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: r
      integer(c_int) :: rc
    end function est_io_reader_free
  end interface

  integer(c_int), parameter :: est_f64 = 0, est_f32 = 1, est_column_major = 1

  ! OASIS3-MCT's names: its parameters and kinds, and the OASIS-shaped calls (without a component
  ! id) that make a model written for OASIS build here after renaming oasis_ to estuary_.
  include 'estuary_oasis_decl.inc'

  ! ---- OASIS grid files (oasis_start_grids_writing ... oasis_terminate_grids_writing) ----
  !> OASIS3-MCT's grid-writing calls, with the component id first and ierror after the data:
  !> estuary_start_grids_writing(comp_id, flag, ierror); estuary_write_grid(comp_id, cgrid, nx,
  !> ny, lon, lat, ierror [, part_id]); estuary_write_corner(comp_id, cgrid, nx, ny, nc, clo,
  !> cla, ierror [, part_id]); estuary_write_mask(comp_id, cgrid, nx, ny, mask, ierror
  !> [, part_id]); estuary_write_area(comp_id, cgrid, nx, ny, area, ierror [, part_id]);
  !> estuary_terminate_grids_writing(comp_id, ierror). Arrays are OASIS's: (nx, ny) for the
  !> whole grid (part_id absent, one rank), or this rank's (lnx, lny) points of partition part_id
  !> (every rank of it); corners (nx, ny, nc) or (lnx, lny, nc); real(8) or real(4); the mask is
  !> integer with OASIS's convention, 1 = MASKED. grids.nc, masks.nc and areas.nc are written at
  !> estuary_enddef (docs/user-guide.md, "OASIS grid files").
  public :: estuary_start_grids_writing, estuary_write_grid, estuary_write_corner, estuary_write_mask, &
            estuary_write_area, estuary_terminate_grids_writing
  interface estuary_write_grid
    module procedure write_grid_r8, write_grid_r4
  end interface estuary_write_grid
  interface estuary_write_corner
    module procedure write_corner_r8, write_corner_r4
  end interface estuary_write_corner
  interface estuary_write_area
    module procedure write_area_r8, write_area_r4
  end interface estuary_write_area
  interface
    function est_comp_start_grids_writing(c, flag) bind(c, name='est_comp_start_grids_writing') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: c
      integer(c_int), intent(out) :: flag
      integer(c_int) :: rc
    end function est_comp_start_grids_writing
    function est_comp_write_grid(c, name, nx, ny, lon, lat, n, partition) &
        bind(c, name='est_comp_write_grid') result(rc)
      import :: c_int, c_int64_t, c_char, c_ptr, c_double
      type(c_ptr), value :: c
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int64_t), value :: nx, ny
      real(c_double), intent(in) :: lon(*), lat(*)
      integer(c_int64_t), value :: n
      integer(c_int), value :: partition
      integer(c_int) :: rc
    end function est_comp_write_grid
    function est_comp_write_corner(c, name, nx, ny, nc, clo, cla, n, partition) &
        bind(c, name='est_comp_write_corner') result(rc)
      import :: c_int, c_int64_t, c_char, c_ptr, c_double
      type(c_ptr), value :: c
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int64_t), value :: nx, ny
      integer(c_int), value :: nc
      real(c_double), intent(in) :: clo(*), cla(*)
      integer(c_int64_t), value :: n
      integer(c_int), value :: partition
      integer(c_int) :: rc
    end function est_comp_write_corner
    function est_comp_write_mask(c, name, nx, ny, mask, n, partition) &
        bind(c, name='est_comp_write_mask') result(rc)
      import :: c_int, c_int32_t, c_int64_t, c_char, c_ptr
      type(c_ptr), value :: c
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int64_t), value :: nx, ny
      integer(c_int32_t), intent(in) :: mask(*)
      integer(c_int64_t), value :: n
      integer(c_int), value :: partition
      integer(c_int) :: rc
    end function est_comp_write_mask
    function est_comp_write_area(c, name, nx, ny, area, n, partition) &
        bind(c, name='est_comp_write_area') result(rc)
      import :: c_int, c_int64_t, c_char, c_ptr, c_double
      type(c_ptr), value :: c
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int64_t), value :: nx, ny
      real(c_double), intent(in) :: area(*)
      integer(c_int64_t), value :: n
      integer(c_int), value :: partition
      integer(c_int) :: rc
    end function est_comp_write_area
    function est_comp_terminate_grids_writing(c) bind(c, name='est_comp_terminate_grids_writing') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: c
      integer(c_int) :: rc
    end function est_comp_terminate_grids_writing
  end interface
  ! ---- end of OASIS grid files ----

contains

  ! ---- helpers ----

  !> s without trailing blanks, NUL-terminated.
  pure function c_str(s) result(a)
    character(len=*), intent(in) :: s
    character(kind=c_char) :: a(len_trim(s) + 1)
    integer :: i
    do i = 1, len_trim(s)
      a(i) = s(i:i)
    end do
    a(len_trim(s) + 1) = c_null_char
  end function c_str

  !> Keeps est_last_error()'s message after a failed C call.
  subroutine take_c_error()
    character(kind=c_char) :: none(1)
    character(kind=c_char), allocatable :: buf(:)
    integer(c_int64_t) :: n
    integer :: i
    n = est_f_last_error(none, 0_c_int64_t)
    allocate (buf(max(n, 1_c_int64_t)))
    n = est_f_last_error(buf, n)
    if (allocated(last_message)) deallocate (last_message)
    allocate (character(len=n) :: last_message)
    do i = 1, int(n)
      last_message(i:i) = buf(i)
    end do
  end subroutine take_c_error

  !> rc of a C call: keeps the message when it failed.
  integer function c_result(rc)
    integer(c_int), intent(in) :: rc
    c_result = int(rc)
    if (rc /= 0) call take_c_error()
  end function c_result

  !> Records a failure found here (not in the C library).
  integer function fail(code, message)
    integer, intent(in) :: code
    character(len=*), intent(in) :: message
    last_message = message
    fail = code
    call log_error(message)  ! the component's log keeps the cause of every error returned
  end function fail

  !> The component of handle, or the error estuary_err_argument naming the routine.
  integer function comp_of(handle, routine, c)
    integer, intent(in) :: handle
    character(len=*), intent(in) :: routine
    type(c_ptr), intent(out) :: c
    character(len=24) :: text
    c = c_null_ptr
    comp_of = 0
    if (allocated(comps)) then
      if (handle >= 1 .and. handle <= size(comps)) c = comps(handle)%ptr
    end if
    if (.not. c_associated(c)) then
      write (text, '(i0)') handle
      comp_of = fail(estuary_err_argument, routine // ': component id ' // trim(text) // &
                     ' is not a component of this process (not from estuary_init_comp, or terminated)')
    end if
  end function comp_of

  !> ierror = rc when present; without it a failure prints the message and aborts.
  subroutine give(rc, ierror)
    integer, intent(in) :: rc
    integer, intent(out), optional :: ierror
    if (present(ierror)) then
      ierror = rc
    else if (rc /= 0) then
      write (error_unit, '(a)') 'estuary: ' // message_text()
      flush (error_unit)
      call est_f_abort(int(rc, c_int))
      error stop 1
    end if
  end subroutine give

  function message_text() result(m)
    character(len=:), allocatable :: m
    if (allocated(last_message)) then
      m = last_message
    else
      m = ''
    end if
  end function message_text

  function int_text(i) result(s)
    integer(int64), intent(in) :: i
    character(len=:), allocatable :: s
    character(len=24) :: t
    write (t, '(i0)') i
    s = trim(t)
  end function int_text

  ! ---- the coupler ----

  !> oasis_init_comp: a component of the coupled run on this rank. Collective over world
  !> (default MPI_COMM_WORLD; OASIS's commworld is the same); starts MPI when the program has
  !> not. config: the namcouple or YAML file (default: $ESTUARY_CONFIG, estuary.yaml,
  !> namcouple); directory: where files are read and written (default: the working directory).
  !> coupled = .false. (OASIS's): the component takes no part in the coupling; its OASIS-shaped
  !> calls do nothing. Without ierror a failure prints its message and aborts, as OASIS does.
  subroutine estuary_init_comp(comp_id, name, ierror, coupled, commworld, world, config, directory)
    integer, intent(out) :: comp_id
    character(len=*), intent(in) :: name
    integer, intent(out), optional :: ierror
    logical, intent(in), optional :: coupled
    integer, intent(in), optional :: commworld, world
    character(len=*), intent(in), optional :: config, directory
    integer :: rc
    call init_comp_core(comp_id, name, rc, coupled, commworld, world, config, directory)
    call give(rc, ierror)
  end subroutine estuary_init_comp

  subroutine init_comp_core(comp_id, name, ierror, coupled, commworld, world, config, directory)
    integer, intent(out) :: comp_id
    character(len=*), intent(in) :: name
    integer, intent(out) :: ierror
    logical, intent(in), optional :: coupled
    integer, intent(in), optional :: commworld, world
    character(len=*), intent(in), optional :: config, directory
    character(kind=c_char), allocatable, target :: cfg(:), dir(:)
    type(c_ptr) :: pcfg, pdir, c
    type(comp_entry), allocatable :: grown(:)
    integer(c_int) :: has_world, fworld
    logical :: cpl
    integer :: slot
    comp_id = 0
    ierror = c_result(est_f_mpi_init())
    if (ierror /= 0) then
      ierror = fail(ierror, 'estuary_init_comp: MPI is finalised or MPI_Init failed')
      return
    end if
    if (present(commworld) .and. present(world)) then
      ierror = fail(estuary_err_argument, 'estuary_init_comp: give the world as commworld or as world, not both')
      return
    end if
    pcfg = c_null_ptr
    pdir = c_null_ptr
    if (present(config)) then
      cfg = c_str(config)
      pcfg = c_loc(cfg)
    end if
    if (present(directory)) then
      dir = c_str(directory)
      pdir = c_loc(dir)
    end if
    has_world = 0
    fworld = 0
    if (present(world)) then
      has_world = 1
      fworld = int(world, c_int)
    end if
    if (present(commworld)) then
      has_world = 1
      fworld = int(commworld, c_int)
    end if
    ! OASIS's coupled = .false.: the component is left out of the coupled ones' world.
    cpl = .true.
    if (present(coupled)) cpl = coupled
    ierror = c_result(est_f_comp_new_coupled(c_str(name), has_world, fworld, pcfg, pdir, merge(1_c_int, 0_c_int, cpl), c))
    if (ierror /= 0) return
    if (.not. allocated(comps)) allocate (comps(4))
    slot = 0
    do slot = 1, size(comps)
      if (.not. c_associated(comps(slot)%ptr)) exit
    end do
    if (slot > size(comps)) then
      allocate (grown(2 * size(comps)))
      grown(1:size(comps)) = comps
      call move_alloc(grown, comps)
    end if
    comps(slot)%ptr = c
    comps(slot)%name = trim(name)
    comps(slot)%coupled = cpl
    if (allocated(comps(slot)%vars)) deallocate (comps(slot)%vars)
    allocate (comps(slot)%vars(0))
    comp_id = slot
    oasis_comp = slot  ! the component of the OASIS-shaped calls (those without a component id)
  end subroutine init_comp_core

  !> oasis_get_localcomm: the component's communicator (a Fortran MPI handle).
  subroutine estuary_get_localcomm(comp_id, local_comm, ierror)
    integer, intent(in) :: comp_id
    integer, intent(out) :: local_comm, ierror
    type(c_ptr) :: c
    integer(c_int) :: comm
    local_comm = -1
    ierror = comp_of(comp_id, 'estuary_get_localcomm', c)
    if (ierror /= 0) return
    ierror = c_result(est_f_comp_comm(c, comm))
    if (ierror == 0) local_comm = int(comm)
  end subroutine estuary_get_localcomm

  subroutine def_partition_i4(comp_id, part_id, ig_paral, ierror, ig_size, name)
    integer, intent(in) :: comp_id
    integer, intent(out) :: part_id
    integer, intent(in) :: ig_paral(:)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: ig_size
    character(len=*), intent(in), optional :: name
    if (present(ig_size)) then
      call def_partition_core(comp_id, part_id, int(ig_paral, c_int64_t), ierror, int(ig_size, int64), name)
    else
      call def_partition_core(comp_id, part_id, int(ig_paral, c_int64_t), ierror, name=name)
    end if
  end subroutine def_partition_i4

  subroutine def_partition_i8(comp_id, part_id, ig_paral, ierror, ig_size, name)
    integer, intent(in) :: comp_id
    integer, intent(out) :: part_id
    integer(int64), intent(in) :: ig_paral(:)
    integer, intent(out) :: ierror
    integer(int64), intent(in), optional :: ig_size
    character(len=*), intent(in), optional :: name
    call def_partition_core(comp_id, part_id, int(ig_paral, c_int64_t), ierror, ig_size, name)
  end subroutine def_partition_i8

  !> oasis_def_partition: the points of this rank from an OASIS ig_paral array; ig_size is the
  !> global size (absent: inferred as OASIS does, the largest index end over the coupling ranks,
  !> collective then). part_id: the C API's id (0, 1, ...).
  subroutine def_partition_core(comp_id, part_id, ig_paral, ierror, ig_size, name)
    integer, intent(in) :: comp_id
    integer, intent(out) :: part_id
    integer(c_int64_t), intent(in) :: ig_paral(:)
    integer, intent(out) :: ierror
    integer(int64), intent(in), optional :: ig_size
    character(len=*), intent(in), optional :: name
    character(len=*), parameter :: routine = 'estuary_def_partition'
    character(len=:), allocatable :: label
    type(c_ptr) :: c
    integer(c_int64_t) :: gsize
    integer(c_int) :: id
    part_id = -1
    label = 'partition (unnamed)'
    if (present(name)) label = 'partition "' // trim(name) // '"'
    ierror = comp_of(comp_id, routine, c)
    if (ierror /= 0) return
    if (size(ig_paral) < 1) then
      ierror = fail(estuary_err_argument, routine // ': ' // label // ': ig_paral is empty')
      return
    end if
    ! Without ig_size the C API infers the global size as OASIS does (estuary::oasis_partition_global_size,
    ! collective over the coupling ranks), as the Python and C bindings do.
    gsize = -1_c_int64_t
    if (present(ig_size)) gsize = ig_size
    if (present(name)) then
      ierror = c_result(est_comp_def_partition(c, ig_paral, size(ig_paral, kind=c_int64_t), gsize, &
                                               c_str(name), id))
    else
      ierror = c_result(est_comp_def_partition(c, ig_paral, size(ig_paral, kind=c_int64_t), gsize, &
                                               c_str(''), id))
    end if
    if (ierror == 0) part_id = int(id)
  end subroutine def_partition_core

  !> oasis_def_var: a coupling field on a partition; direction estuary_in or estuary_out;
  !> bundle: the number of members (OASIS's var_nodims(2)), 1 for a plain field.
  subroutine estuary_def_var(comp_id, var_id, name, part_id, direction, bundle, ierror)
    integer, intent(in) :: comp_id
    integer, intent(out) :: var_id
    character(len=*), intent(in) :: name
    integer, intent(in) :: part_id, direction, bundle
    integer, intent(out) :: ierror
    type(c_ptr) :: c
    type(var_entry), allocatable :: grown(:)
    integer(c_int) :: id
    integer :: n
    var_id = -1
    ierror = comp_of(comp_id, 'estuary_def_var', c)
    if (ierror /= 0) return
    ierror = c_result(est_comp_def_var(c, c_str(name), int(part_id, c_int), int(direction, c_int), &
                                       int(bundle, c_int), id))
    if (ierror /= 0) return
    var_id = int(id)
    n = size(comps(comp_id)%vars)
    if (var_id + 1 > n) then
      allocate (grown(max(2 * n, var_id + 1)))
      grown(1:n) = comps(comp_id)%vars
      call move_alloc(grown, comps(comp_id)%vars)
    end if
    comps(comp_id)%vars(var_id + 1)%name = trim(name)
    comps(comp_id)%vars(var_id + 1)%bundle = bundle
  end subroutine estuary_def_var

  !> oasis_enddef: ends the definitions; collective over the coupled run.
  subroutine estuary_enddef(comp_id, ierror)
    integer, intent(in) :: comp_id
    integer, intent(out) :: ierror
    type(c_ptr) :: c
    ierror = comp_of(comp_id, 'estuary_enddef', c)
    if (ierror /= 0) return
    ierror = c_result(est_comp_enddef(c))
  end subroutine estuary_enddef

  !> SCRIPR CALLBACK: fn (c_funloc of a bind(c) function, see estuary_weight_query) is the
  !> weight function `name` of this component, called at estuary_enddef with ctx.
  subroutine estuary_register_weights(comp_id, name, fn, ctx, ierror)
    integer, intent(in) :: comp_id
    character(len=*), intent(in) :: name
    type(c_funptr), intent(in) :: fn
    type(c_ptr), intent(in) :: ctx
    integer, intent(out) :: ierror
    type(c_ptr) :: c
    ierror = comp_of(comp_id, 'estuary_register_weights', c)
    if (ierror /= 0) return
    ierror = c_result(est_comp_register_weights(c, c_str(name), fn, ctx))
  end subroutine estuary_register_weights

  !> Checks handle and the array's shape for a put or get: a bundle of nb members needs an
  !> array whose last dimension is nb (rank 2 or 3). The total size is checked by the library.
  integer function check_field(comp_id, var_id, lastdim, rank, routine, c)
    integer, intent(in) :: comp_id, var_id, lastdim, rank
    character(len=*), intent(in) :: routine
    type(c_ptr), intent(out) :: c
    integer :: nb
    check_field = comp_of(comp_id, routine, c)
    if (check_field /= 0) return
    if (var_id < 0 .or. var_id + 1 > size(comps(comp_id)%vars)) return  ! the library says why
    nb = comps(comp_id)%vars(var_id + 1)%bundle
    if (rank >= 2 .and. nb > 1 .and. lastdim /= nb) &
      check_field = fail(estuary_err_argument, routine // ': field "' // comps(comp_id)%vars(var_id + 1)%name // &
                         '" is a bundle of ' // int_text(int(nb, int64)) // ' members: the last dimension of its rank-' // &
                         int_text(int(rank, int64)) // ' array must be ' // int_text(int(nb, int64)) // ', not ' // &
                         int_text(int(lastdim, int64)))
  end function check_field

  !> grad1..grad3: the model's gradients (OASIS's fld2..fld4) for a coupling whose weights have
  !> several columns; fraction: YAC's fractional mask (estuary::PutExtras). All n values, optional.
  subroutine put_d(comp_id, var_id, time, n, lastdim, rank, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: comp_id, var_id
    real(real64), intent(in) :: time
    integer(int64), intent(in) :: n
    integer, intent(in) :: lastdim, rank
    real(c_double), intent(in) :: field(*)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(c_double), intent(in), optional, target :: grad1(*), grad2(*), grad3(*), fraction(*)
    type(c_ptr) :: c, grads(3), frac
    integer(c_int) :: cinfo, ngrad
    integer :: rc
    info = -1
    rc = check_field(comp_id, var_id, lastdim, rank, 'estuary_put', c)
    if (rc == 0 .and. ((present(grad2) .and. .not. present(grad1)) .or. (present(grad3) .and. .not. present(grad2)))) &
      rc = fail(estuary_err_argument, 'estuary_put: variable id ' // int_text(int(var_id, int64)) // &
                ': give the gradients in order (grad1, grad2[, grad3])')
    if (rc == 0 .and. .not. (present(grad1) .or. present(fraction))) then
      rc = c_result(est_comp_put(c, int(var_id, c_int), real(time, c_double), field, int(n, c_int64_t), cinfo))
    else if (rc == 0) then
      grads(:) = c_null_ptr
      frac = c_null_ptr
      ngrad = 0
      ! A rank without points passes no pointers (the C API accepts NULL for 0 values); its puts
      ! follow the other ranks' (the coupler agrees on what the action carries).
      if (n > 0) then
        if (present(grad1)) grads(1) = c_loc(grad1(1))
        if (present(grad2)) grads(2) = c_loc(grad2(1))
        if (present(grad3)) grads(3) = c_loc(grad3(1))
        if (present(fraction)) frac = c_loc(fraction(1))
      end if
      if (present(grad1)) ngrad = 1
      if (present(grad2)) ngrad = 2
      if (present(grad3)) ngrad = 3
      rc = c_result(est_comp_put_ext(c, int(var_id, c_int), real(time, c_double), field, int(n, c_int64_t), grads, &
                                     ngrad, frac, cinfo))
    end if
    if (rc == 0) info = int(cinfo)
    call give(rc, ierror)
  end subroutine put_d

  subroutine put_s(comp_id, var_id, time, n, lastdim, rank, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: comp_id, var_id
    real(real64), intent(in) :: time
    integer(int64), intent(in) :: n
    integer, intent(in) :: lastdim, rank
    real(c_float), intent(in) :: field(*)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(c_float), intent(in), optional :: grad1(*), grad2(*), grad3(*), fraction(*)
    ! Unallocated: absent in the call below (Fortran 2008).
    real(c_double), allocatable :: buf(:), b1(:), b2(:), b3(:), bf(:)
    allocate (buf(n))
    buf(:) = real(field(1:n), c_double)
    if (present(grad1)) b1 = real(grad1(1:n), c_double)
    if (present(grad2)) b2 = real(grad2(1:n), c_double)
    if (present(grad3)) b3 = real(grad3(1:n), c_double)
    if (present(fraction)) bf = real(fraction(1:n), c_double)
    call put_d(comp_id, var_id, time, n, lastdim, rank, buf, info, ierror, b1, b2, b3, bf)
  end subroutine put_s

  subroutine get_d(comp_id, var_id, time, n, lastdim, rank, field, info, ierror)
    integer, intent(in) :: comp_id, var_id
    real(real64), intent(in) :: time
    integer(int64), intent(in) :: n
    integer, intent(in) :: lastdim, rank
    real(c_double), intent(inout) :: field(*)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    type(c_ptr) :: c
    integer(c_int) :: cinfo
    integer :: rc
    info = -1
    rc = check_field(comp_id, var_id, lastdim, rank, 'estuary_get', c)
    if (rc == 0) rc = c_result(est_comp_get(c, int(var_id, c_int), real(time, c_double), field, int(n, c_int64_t), cinfo))
    if (rc == 0) info = int(cinfo)
    call give(rc, ierror)
  end subroutine get_d

  subroutine get_s(comp_id, var_id, time, n, lastdim, rank, field, info, ierror)
    integer, intent(in) :: comp_id, var_id
    real(real64), intent(in) :: time
    integer(int64), intent(in) :: n
    integer, intent(in) :: lastdim, rank
    real(c_float), intent(inout) :: field(*)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(c_double), allocatable :: buf(:)
    allocate (buf(n))
    buf(:) = real(field(1:n), c_double)  ! a get that receives nothing leaves the field as it is
    call get_d(comp_id, var_id, time, n, lastdim, rank, buf, info, ierror)
    if (info > 0) field(1:n) = real(buf, c_float)
  end subroutine get_s

  !> oasis_terminate for this component: collective over the coupled run; frees the component
  !> and, after the last one, finalises MPI if estuary_init_comp started it.
  subroutine estuary_terminate(comp_id, ierror)
    integer, intent(in) :: comp_id
    integer, intent(out) :: ierror
    type(c_ptr) :: c
    integer :: rc, k
    ierror = comp_of(comp_id, 'estuary_terminate', c)
    if (ierror /= 0) return
    ierror = c_result(est_comp_terminate(c))
    rc = c_result(est_comp_free(comps(comp_id)%ptr))
    if (ierror == 0) ierror = rc
    comps(comp_id)%ptr = c_null_ptr
    deallocate (comps(comp_id)%vars)
    if (oasis_comp == comp_id) oasis_comp = 0
    do k = 1, size(comps)
      if (c_associated(comps(k)%ptr)) return
    end do
    rc = c_result(est_f_mpi_finalize())
    if (ierror == 0) ierror = rc
  end subroutine estuary_terminate

  !> oasis_abort: prints the message (with the component's name) to stderr and to the
  !> component's log, and aborts the whole run (MPI_Abort on MPI_COMM_WORLD with errorcode,
  !> default 1). OASIS's arguments too: estuary_abort(comp_id, routine, message [, file, line,
  !> rcode]) (then `message` is the calling routine; rcode is errorcode), every one optional,
  !> and by OASIS's keywords: id_compid= (comp_id), cd_routine= (message), cd_message=, file=,
  !> line=, rcode= (MESSy's call).
  subroutine estuary_abort(comp_id, message, cd_message, file, line, rcode, errorcode, id_compid, cd_routine)
    integer, intent(in), optional :: comp_id
    character(len=*), intent(in), optional :: message, cd_message, file
    integer, intent(in), optional :: line, rcode, errorcode, id_compid
    character(len=*), intent(in), optional :: cd_routine
    character(len=:), allocatable :: who, text
    integer(c_int) :: code
    integer :: id
    id = 0
    if (present(id_compid)) id = id_compid
    if (present(comp_id)) id = comp_id
    who = 'component (unknown)'
    if (present(comp_id) .or. present(id_compid)) who = 'component id ' // int_text(int(id, int64))
    if (allocated(comps)) then
      if (id >= 1 .and. id <= size(comps)) then
        if (allocated(comps(id)%name)) who = 'component ' // comps(id)%name
      end if
    end if
    text = ''
    if (present(cd_routine)) text = trim(cd_routine)
    if (present(message)) text = trim(message)
    if (present(cd_message)) then
      if (len(text) > 0) text = text // ': '
      text = text // trim(cd_message)
    end if
    if (present(file)) then
      text = text // ' (' // trim(file)
      if (present(line)) text = text // ':' // int_text(int(line, int64))
      text = text // ')'
    end if
    code = 1
    if (present(rcode)) code = int(rcode, c_int)
    if (present(errorcode)) code = int(errorcode, c_int)
    write (error_unit, '(a)') 'estuary_abort: ' // who // ': ' // text
    flush (error_unit)
    call log_error('abort: ' // text)
    call est_f_abort(code)
    error stop 1
  end subroutine estuary_abort

  !> The message of the last failure (est_last_error()'s text, or this module's), truncated to
  !> len(msg); blank if none.
  subroutine estuary_error_message(msg)
    character(len=*), intent(out) :: msg
    msg = message_text()
  end subroutine estuary_error_message

  !> oasis_create_couplcomm: the coupling communicator of the ranks of allcomm (usually the
  !> component's local communicator) that take part in the coupling. Collective over allcomm:
  !> ranks with icpl = 1 get a new communicator (in allcomm's order), ranks with icpl =
  !> MPI_UNDEFINED get MPI_COMM_NULL, as OASIS3-MCT's. comp_id: the component (default: the
  !> only, or first, component of this process). The caller frees cplcomm (MPI_Comm_free).
  subroutine estuary_create_couplcomm(icpl, allcomm, cplcomm, ierror, comp_id)
    integer, intent(in) :: icpl, allcomm
    integer, intent(out) :: cplcomm
    integer, intent(out), optional :: ierror  ! OASIS's kinfo: without it a failure aborts
    integer, intent(in), optional :: comp_id
    type(c_ptr) :: c
    integer(c_int) :: comm
    integer :: id, k, rc
    cplcomm = -1
    id = 0
    if (present(comp_id)) then
      id = comp_id
    else if (allocated(comps)) then
      do k = 1, size(comps)
        if (c_associated(comps(k)%ptr)) then
          id = k
          exit
        end if
      end do
    end if
    rc = comp_of(id, 'estuary_create_couplcomm', c)
    ! As OASIS's: also the component's coupling communicator (estuary_set_couplcomm).
    if (rc == 0) rc = c_result(est_f_comp_create_couplcomm(c, int(icpl, c_int), int(allcomm, c_int), comm))
    if (rc == 0) cplcomm = int(comm)
    call give(rc, ierror)
  end subroutine estuary_create_couplcomm

  !> After estuary_enddef: the run length of the configuration ($RUNTIME), seconds.
  subroutine estuary_get_runtime(comp_id, runtime, ierror)
    integer, intent(in) :: comp_id
    real(real64), intent(out) :: runtime
    integer, intent(out) :: ierror
    type(c_ptr) :: c
    real(c_double) :: r
    runtime = 0
    ierror = comp_of(comp_id, 'estuary_get_runtime', c)
    if (ierror /= 0) return
    ierror = c_result(est_comp_runtime(c, r))
    if (ierror == 0) runtime = r
  end subroutine estuary_get_runtime

  !> A field received with CONSERV: the source's global integral (value x area over valid
  !> points) of its last exchange, to check conservation.
  subroutine estuary_last_source_integral(comp_id, var_id, integral, ierror)
    integer, intent(in) :: comp_id, var_id
    real(real64), intent(out) :: integral
    integer, intent(out) :: ierror
    type(c_ptr) :: c
    real(c_double) :: r
    integral = 0
    ierror = comp_of(comp_id, 'estuary_last_source_integral', c)
    if (ierror /= 0) return
    ierror = c_result(est_comp_last_source_integral(c, int(var_id, c_int), r))
    if (ierror == 0) integral = r
  end subroutine estuary_last_source_integral

  !> The grid's cells at a partition's points, for the SCRIPR and CONSERV transformations
  !> (OASIS's oasis_write_grid/corner/mask/area, given per partition): centres lon, lat
  !> (degrees) and optionally corner_lon, corner_lat (ncorner, npts) counter-clockwise, mask
  !> (1 valid, 0 masked; default all valid) and area (default: from the corners). nx, ny: the
  !> grid's global shape (ny = 1 for an unstructured grid).
  subroutine estuary_def_grid(comp_id, name, part_id, nx, ny, lon, lat, ierror, corner_lon, corner_lat, mask, area)
    integer, intent(in) :: comp_id, part_id
    character(len=*), intent(in) :: name
    integer(int64), intent(in) :: nx, ny
    real(c_double), intent(in) :: lon(:), lat(:)
    integer, intent(out) :: ierror
    real(c_double), intent(in), optional, target :: corner_lon(:, :), corner_lat(:, :), area(:)
    integer, intent(in), optional :: mask(:)
    character(len=*), parameter :: routine = 'estuary_def_grid'
    real(c_double), allocatable, target :: clo(:), cla(:), ar(:)
    integer(c_int32_t), allocatable, target :: mk(:)
    type(c_ptr) :: c, pclo, pcla, pmask, parea
    integer(c_int) :: ncorner
    ierror = comp_of(comp_id, routine, c)
    if (ierror /= 0) return
    if (size(lat) /= size(lon)) then
      ierror = fail(estuary_err_argument, routine // ': grid "' // trim(name) // '": lon has ' // &
                    int_text(size(lon, kind=int64)) // ' points, lat ' // int_text(size(lat, kind=int64)))
      return
    end if
    ncorner = 0
    pclo = c_null_ptr
    pcla = c_null_ptr
    pmask = c_null_ptr
    parea = c_null_ptr
    if (present(corner_lon) .neqv. present(corner_lat)) then
      ierror = fail(estuary_err_argument, routine // ': grid "' // trim(name) // &
                    '": give both corner_lon and corner_lat, or neither')
      return
    end if
    if (present(corner_lon)) then
      if (any(shape(corner_lon) /= shape(corner_lat)) .or. size(corner_lon, 2) /= size(lon)) then
        ierror = fail(estuary_err_argument, routine // ': grid "' // trim(name) // &
                      '": corner_lon and corner_lat must both be (ncorner, npts) arrays, npts = ' // &
                      int_text(size(lon, kind=int64)))
        return
      end if
      ncorner = int(size(corner_lon, 1), c_int)
      clo = reshape(corner_lon, [size(corner_lon)])
      cla = reshape(corner_lat, [size(corner_lat)])
      pclo = c_loc(clo)
      pcla = c_loc(cla)
    end if
    if (present(mask)) then
      if (size(mask) /= size(lon)) then
        ierror = fail(estuary_err_argument, routine // ': grid "' // trim(name) // '": mask has ' // &
                      int_text(size(mask, kind=int64)) // ' points, lon ' // int_text(size(lon, kind=int64)))
        return
      end if
      mk = int(mask, c_int32_t)
      pmask = c_loc(mk)
    end if
    if (present(area)) then
      if (size(area) /= size(lon)) then
        ierror = fail(estuary_err_argument, routine // ': grid "' // trim(name) // '": area has ' // &
                      int_text(size(area, kind=int64)) // ' points, lon ' // int_text(size(lon, kind=int64)))
        return
      end if
      ar = area
      parea = c_loc(ar)
    end if
    ierror = c_result(est_comp_def_grid(c, c_str(name), int(part_id, c_int), int(nx, c_int64_t), int(ny, c_int64_t), &
                                        lon, lat, ncorner, pclo, pcla, pmask, parea))
  end subroutine estuary_def_grid

  ! ---- OASIS grid files: the grid-writing calls (see the interfaces above) ----

  !> oasis_start_grids_writing: flag is always 1 (grids are always written, at estuary_enddef).
  subroutine estuary_start_grids_writing(comp_id, flag, ierror)
    integer, intent(in) :: comp_id
    integer, intent(out) :: flag, ierror
    type(c_ptr) :: c
    integer(c_int) :: f
    flag = 0
    ierror = comp_of(comp_id, 'estuary_start_grids_writing', c)
    if (ierror /= 0) return
    ierror = c_result(est_comp_start_grids_writing(c, f))
    if (ierror == 0) flag = int(f)
  end subroutine estuary_start_grids_writing

  !> oasis_terminate_grids_writing.
  subroutine estuary_terminate_grids_writing(comp_id, ierror)
    integer, intent(in) :: comp_id
    integer, intent(out) :: ierror
    type(c_ptr) :: c
    ierror = comp_of(comp_id, 'estuary_terminate_grids_writing', c)
    if (ierror /= 0) return
    ierror = c_result(est_comp_terminate_grids_writing(c))
  end subroutine estuary_terminate_grids_writing

  !> The C API's partition: part_id, or -1 (the whole grid) when absent.
  integer(c_int) function grid_partition(part_id)
    integer, intent(in), optional :: part_id
    grid_partition = -1
    if (present(part_id)) grid_partition = int(part_id, c_int)
  end function grid_partition

  !> oasis_write_grid: centres (degrees), (nx, ny) or this rank's points of part_id.
  subroutine write_grid_r8(comp_id, cgrid, nx, ny, lon, lat, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny
    character(len=*), intent(in) :: cgrid
    real(real64), intent(in) :: lon(:, :), lat(:, :)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    call write_grid_core(comp_id, cgrid, nx, ny, real(reshape(lon, [size(lon)]), c_double), &
                         real(reshape(lat, [size(lat)]), c_double), ierror, part_id)
  end subroutine write_grid_r8

  subroutine write_grid_r4(comp_id, cgrid, nx, ny, lon, lat, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny
    character(len=*), intent(in) :: cgrid
    real(real32), intent(in) :: lon(:, :), lat(:, :)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    call write_grid_core(comp_id, cgrid, nx, ny, real(reshape(lon, [size(lon)]), c_double), &
                         real(reshape(lat, [size(lat)]), c_double), ierror, part_id)
  end subroutine write_grid_r4

  subroutine write_grid_core(comp_id, cgrid, nx, ny, lon, lat, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny
    character(len=*), intent(in) :: cgrid
    real(c_double), intent(in) :: lon(:), lat(:)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    character(len=*), parameter :: routine = 'estuary_write_grid'
    type(c_ptr) :: c
    ierror = comp_of(comp_id, routine, c)
    if (ierror /= 0) return
    if (size(lon) /= size(lat)) then
      ierror = fail(estuary_err_argument, routine // ': grid "' // trim(cgrid) // '": lon has ' // &
                    int_text(size(lon, kind=int64)) // ' points, lat ' // int_text(size(lat, kind=int64)))
      return
    end if
    ierror = c_result(est_comp_write_grid(c, c_str(cgrid), int(nx, c_int64_t), int(ny, c_int64_t), lon, lat, &
                                          size(lon, kind=c_int64_t), grid_partition(part_id)))
  end subroutine write_grid_core

  !> oasis_write_corner: corners (degrees, counter-clockwise), (nx, ny, nc) or this rank's
  !> (lnx, lny, nc) points of part_id.
  subroutine write_corner_r8(comp_id, cgrid, nx, ny, nc, clo, cla, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny, nc
    character(len=*), intent(in) :: cgrid
    real(real64), intent(in) :: clo(:, :, :), cla(:, :, :)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    call write_corner_core(comp_id, cgrid, nx, ny, nc, real(reshape(clo, [size(clo)]), c_double), &
                           real(reshape(cla, [size(cla)]), c_double), ierror, part_id)
  end subroutine write_corner_r8

  subroutine write_corner_r4(comp_id, cgrid, nx, ny, nc, clo, cla, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny, nc
    character(len=*), intent(in) :: cgrid
    real(real32), intent(in) :: clo(:, :, :), cla(:, :, :)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    call write_corner_core(comp_id, cgrid, nx, ny, nc, real(reshape(clo, [size(clo)]), c_double), &
                           real(reshape(cla, [size(cla)]), c_double), ierror, part_id)
  end subroutine write_corner_r4

  subroutine write_corner_core(comp_id, cgrid, nx, ny, nc, clo, cla, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny, nc
    character(len=*), intent(in) :: cgrid
    real(c_double), intent(in) :: clo(:), cla(:)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    character(len=*), parameter :: routine = 'estuary_write_corner'
    type(c_ptr) :: c
    ierror = comp_of(comp_id, routine, c)
    if (ierror /= 0) return
    if (size(clo) /= size(cla)) then
      ierror = fail(estuary_err_argument, routine // ': grid "' // trim(cgrid) // '": clo has ' // &
                    int_text(size(clo, kind=int64)) // ' values, cla ' // int_text(size(cla, kind=int64)))
      return
    end if
    ierror = c_result(est_comp_write_corner(c, c_str(cgrid), int(nx, c_int64_t), int(ny, c_int64_t), int(nc, c_int), &
                                            clo, cla, size(clo, kind=c_int64_t), grid_partition(part_id)))
  end subroutine write_corner_core

  !> oasis_write_mask: integer, OASIS's convention (1 = masked, 0 = valid).
  subroutine estuary_write_mask(comp_id, cgrid, nx, ny, mask, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny
    character(len=*), intent(in) :: cgrid
    integer, intent(in) :: mask(:, :)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    type(c_ptr) :: c
    integer(c_int32_t), allocatable :: m(:)
    ierror = comp_of(comp_id, 'estuary_write_mask', c)
    if (ierror /= 0) return
    m = int(reshape(mask, [size(mask)]), c_int32_t)
    ierror = c_result(est_comp_write_mask(c, c_str(cgrid), int(nx, c_int64_t), int(ny, c_int64_t), m, &
                                          size(m, kind=c_int64_t), grid_partition(part_id)))
  end subroutine estuary_write_mask

  !> oasis_write_area: cell areas (m^2 or rad^2, as the model has them).
  subroutine write_area_r8(comp_id, cgrid, nx, ny, area, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny
    character(len=*), intent(in) :: cgrid
    real(real64), intent(in) :: area(:, :)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    call write_area_core(comp_id, cgrid, nx, ny, real(reshape(area, [size(area)]), c_double), ierror, part_id)
  end subroutine write_area_r8

  subroutine write_area_r4(comp_id, cgrid, nx, ny, area, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny
    character(len=*), intent(in) :: cgrid
    real(real32), intent(in) :: area(:, :)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    call write_area_core(comp_id, cgrid, nx, ny, real(reshape(area, [size(area)]), c_double), ierror, part_id)
  end subroutine write_area_r4

  subroutine write_area_core(comp_id, cgrid, nx, ny, area, ierror, part_id)
    integer, intent(in) :: comp_id, nx, ny
    character(len=*), intent(in) :: cgrid
    real(c_double), intent(in) :: area(:)
    integer, intent(out) :: ierror
    integer, intent(in), optional :: part_id
    type(c_ptr) :: c
    ierror = comp_of(comp_id, 'estuary_write_area', c)
    if (ierror /= 0) return
    ierror = c_result(est_comp_write_area(c, c_str(cgrid), int(nx, c_int64_t), int(ny, c_int64_t), area, &
                                          size(area, kind=c_int64_t), grid_partition(part_id)))
  end subroutine write_area_core

  ! ---- end of OASIS grid files ----

  !> The global size, shape (nx, ny; ny = 1 for 1-D kinds) and corners per cell of one of
  !> estuary's generated grids (kinds as estuary_grid_gen).
  subroutine estuary_grid_info(kind, n1, n2, land, global_size, nx, ny, ncorner, ierror)
    character(len=*), intent(in) :: kind
    integer, intent(in) :: n1, n2
    logical, intent(in) :: land
    integer(int64), intent(out) :: global_size, nx, ny
    integer, intent(out) :: ncorner, ierror
    integer(c_int64_t) :: gsize, gx, gy
    integer(c_int) :: nc, cland
    cland = 0
    if (land) cland = 1
    ierror = c_result(est_grid_gen_info(c_str(kind), int(n1, c_int64_t), int(n2, c_int64_t), cland, gsize, gx, gy, nc))
    global_size = gsize
    nx = gx
    ny = gy
    ncorner = int(nc)
  end subroutine estuary_grid_info

  !> One of estuary's generated grids (estuary::GridGen) at the points of an OASIS ig_paral
  !> partition, for toy models and tests: kind 'lonlat' (n1 x n2), 'gaussian' (n1 x n2),
  !> 'reduced_gaussian' (n1 latitudes a hemisphere), 'tripolar' (n1 x n2), 'cubed_sphere'
  !> (6 n1**2), 't799', 'orca025'; land: with the analytic land mask. Gives the centres, areas,
  !> mask, corners (ncorner, npts) and the grid's global size and shape (nx, ny).
  subroutine estuary_grid_gen(kind, n1, n2, land, ig_paral, lon, lat, area, mask, corner_lon, corner_lat, &
                              ierror, nx, ny, global_size)
    character(len=*), intent(in) :: kind
    integer, intent(in) :: n1, n2
    logical, intent(in) :: land
    integer, intent(in) :: ig_paral(:)
    real(c_double), allocatable, intent(out) :: lon(:), lat(:), area(:), corner_lon(:, :), corner_lat(:, :)
    integer, allocatable, intent(out) :: mask(:)
    integer, intent(out) :: ierror
    integer(int64), intent(out), optional :: nx, ny, global_size
    integer(c_int64_t) :: gsize, gx, gy, n
    integer(c_int) :: ncorner, cland
    integer(c_int32_t), allocatable :: mk(:)
    type(c_ptr) :: d
    cland = 0
    if (land) cland = 1
    ierror = c_result(est_grid_gen_info(c_str(kind), int(n1, c_int64_t), int(n2, c_int64_t), cland, gsize, gx, gy, &
                                        ncorner))
    if (ierror /= 0) return
    if (present(nx)) nx = gx
    if (present(ny)) ny = gy
    if (present(global_size)) global_size = gsize
    ierror = c_result(est_decomp_new_oasis(int(ig_paral, c_int64_t), size(ig_paral, kind=c_int64_t), gsize, d))
    if (ierror /= 0) return
    ierror = c_result(est_decomp_size(d, n))
    if (ierror == 0) then
      allocate (lon(n), lat(n), area(n), mk(n), corner_lon(max(ncorner, 1), n), corner_lat(max(ncorner, 1), n))
      ierror = c_result(est_grid_gen_make(c_str(kind), int(n1, c_int64_t), int(n2, c_int64_t), cland, d, lon, lat, &
                                          corner_lon, corner_lat, mk, area))
      mask = int(mk)
      if (ncorner == 0) then
        deallocate (corner_lon, corner_lat)
        allocate (corner_lon(0, n), corner_lat(0, n))
      end if
    end if
    if (est_decomp_free(d) /= 0) continue
  end subroutine estuary_grid_gen

  ! ---- redistribution ----

  subroutine decomp_new_indices_i4(decomp, global_size, indices, ierror)
    type(estuary_decomp), intent(inout) :: decomp
    integer, intent(in) :: global_size
    integer, intent(in) :: indices(:)
    integer, intent(out) :: ierror
    call decomp_new_indices_i8(decomp, int(global_size, int64), int(indices, int64), ierror)
  end subroutine decomp_new_indices_i4

  !> A decomposition from this rank's global indices (0-based), in its local order.
  subroutine decomp_new_indices_i8(decomp, global_size, indices, ierror)
    type(estuary_decomp), intent(inout) :: decomp
    integer(int64), intent(in) :: global_size
    integer(int64), intent(in) :: indices(:)
    integer, intent(out) :: ierror
    ierror = c_result(est_decomp_new_indices(int(global_size, c_int64_t), int(indices, c_int64_t), &
                                             size(indices, kind=c_int64_t), decomp%ptr))
  end subroutine decomp_new_indices_i8

  !> A box of a global array in Fortran order (first dimension fastest): this rank holds
  !> start(k) .. start(k) + count(k) - 1 (0-based) of dimension k, as an array of shape count.
  subroutine estuary_decomp_new_box(decomp, global_shape, start, count, ierror)
    type(estuary_decomp), intent(inout) :: decomp
    integer, intent(in) :: global_shape(:), start(:), count(:)
    integer, intent(out) :: ierror
    if (size(start) /= size(global_shape) .or. size(count) /= size(global_shape)) then
      ierror = fail(estuary_err_argument, 'estuary_decomp_new_box: global_shape, start and count ' // &
                    'must have the same size')
      return
    end if
    ierror = c_result(est_decomp_new_box(int(size(global_shape), c_int), int(global_shape, c_int64_t), &
                                         int(start, c_int64_t), int(count, c_int64_t), est_column_major, &
                                         decomp%ptr))
  end subroutine estuary_decomp_new_box

  !> The number of points this rank holds.
  subroutine estuary_decomp_size(decomp, local_size, ierror)
    type(estuary_decomp), intent(in) :: decomp
    integer, intent(out) :: local_size
    integer, intent(out) :: ierror
    integer(c_int64_t) :: n
    local_size = 0
    ierror = c_result(est_decomp_size(decomp%ptr, n))
    if (ierror == 0) local_size = int(n)
  end subroutine estuary_decomp_size

  subroutine estuary_decomp_free(decomp)
    type(estuary_decomp), intent(inout) :: decomp
    integer(c_int) :: rc
    rc = est_decomp_free(decomp%ptr)
  end subroutine estuary_decomp_free

  !> A redistribution from src to dst over comm (a Fortran MPI handle); collective. With
  !> fill_value, destination indices no source holds get it; without, they are an error.
  subroutine estuary_redist_new(redist, src, dst, comm, ierror, fill_value)
    type(estuary_redist), intent(inout) :: redist
    type(estuary_decomp), intent(in) :: src, dst
    integer, intent(in) :: comm
    integer, intent(out) :: ierror
    real(real64), intent(in), optional :: fill_value
    integer(c_int64_t) :: n
    integer :: rc
    if (present(fill_value)) then
      ierror = c_result(est_f_redist_new(src%ptr, dst%ptr, int(comm, c_int), 1_c_int, &
                                         real(fill_value, c_double), redist%ptr))
    else
      ierror = c_result(est_f_redist_new(src%ptr, dst%ptr, int(comm, c_int), 0_c_int, 0.0_c_double, redist%ptr))
    end if
    if (ierror /= 0) return
    rc = c_result(est_decomp_size(src%ptr, n))
    redist%nsrc = n
    if (rc == 0) rc = c_result(est_decomp_size(dst%ptr, n))
    redist%ndst = n
    ierror = rc
  end subroutine estuary_redist_new

  !> A local buffer shorter than its decomposition would be overrun by the other ranks'
  !> collective exchange: print and abort rather than return.
  subroutine check_lengths(redist, nsrc, ndst, routine)
    type(estuary_redist), intent(in) :: redist
    integer(int64), intent(in) :: nsrc, ndst
    character(len=*), intent(in) :: routine
    integer :: rc
    if (nsrc >= redist%nsrc .and. ndst >= redist%ndst) return
    rc = fail(estuary_err_exchange, routine // ': src has ' // int_text(nsrc) // ' elements, dst ' // &
              int_text(ndst) // '; the decompositions need ' // int_text(redist%nsrc) // ' and ' // &
              int_text(redist%ndst))
    call give(rc)
  end subroutine check_lengths

  !> Moves src (laid out as the source decomposition) into dst; collective.
  subroutine redist_run_r8(redist, src, dst, ierror)
    type(estuary_redist), intent(in) :: redist
    real(real64), intent(in), target, contiguous :: src(:)
    real(real64), intent(inout), target, contiguous :: dst(:)
    integer, intent(out) :: ierror
    type(c_ptr) :: ps(1), pd(1)
    call check_lengths(redist, size(src, kind=int64), size(dst, kind=int64), 'estuary_redist_run')
    ps(1) = c_loc(src)
    pd(1) = c_loc(dst)
    ierror = c_result(est_redist_run(redist%ptr, 1_c_int, [est_f64], ps, pd))
  end subroutine redist_run_r8

  subroutine redist_run_r4(redist, src, dst, ierror)
    type(estuary_redist), intent(in) :: redist
    real(real32), intent(in), target, contiguous :: src(:)
    real(real32), intent(inout), target, contiguous :: dst(:)
    integer, intent(out) :: ierror
    type(c_ptr) :: ps(1), pd(1)
    call check_lengths(redist, size(src, kind=int64), size(dst, kind=int64), 'estuary_redist_run')
    ps(1) = c_loc(src)
    pd(1) = c_loc(dst)
    ierror = c_result(est_redist_run(redist%ptr, 1_c_int, [est_f32], ps, pd))
  end subroutine redist_run_r4

  subroutine estuary_redist_free(redist)
    type(estuary_redist), intent(inout) :: redist
    integer(c_int) :: rc
    rc = est_redist_free(redist%ptr)
    redist%nsrc = 0
    redist%ndst = 0
  end subroutine estuary_redist_free

  ! ---- put and get: one specific per kind, rank and time type (generated by the same pattern) ----
  ! The optional arrays of a put go on as contiguous copies, unallocated (so absent in the call,
  ! Fortran 2008) when not given. Passed on as they are, to the assumed-size dummies below,
  ! gfortran builds a descriptor even for an absent one, with arithmetic on bounds it never set:
  ! harmless in itself, but undefined behaviour, on which `make sanitize` stopped at random
  ! (test_fortran_oasis, about one run in four). Extras and fractions are given rarely; the
  ! copies cost n values each when they are.

  subroutine put_r8_1t(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real64), intent(in) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real64), intent(in), optional :: grad1(:), grad2(:), grad3(:), fraction(:)
    real(real64), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_d(handle, var_id, time, size(field, kind=int64), size(field, 1), 1, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r8_1t

  subroutine put_r8_1d(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real64), intent(in) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real64), intent(in), optional :: grad1(:), grad2(:), grad3(:), fraction(:)
    real(real64), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_d(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 1), 1, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r8_1d

  subroutine put_r8_2t(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real64), intent(in) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real64), intent(in), optional :: grad1(:,:), grad2(:,:), grad3(:,:), fraction(:,:)
    real(real64), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_d(handle, var_id, time, size(field, kind=int64), size(field, 2), 2, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r8_2t

  subroutine put_r8_2d(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real64), intent(in) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real64), intent(in), optional :: grad1(:,:), grad2(:,:), grad3(:,:), fraction(:,:)
    real(real64), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_d(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 2), 2, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r8_2d

  subroutine put_r8_3t(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real64), intent(in) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real64), intent(in), optional :: grad1(:,:,:), grad2(:,:,:), grad3(:,:,:), fraction(:,:,:)
    real(real64), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_d(handle, var_id, time, size(field, kind=int64), size(field, 3), 3, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r8_3t

  subroutine put_r8_3d(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real64), intent(in) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real64), intent(in), optional :: grad1(:,:,:), grad2(:,:,:), grad3(:,:,:), fraction(:,:,:)
    real(real64), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_d(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 3), 3, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r8_3d

  subroutine put_r4_1t(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real32), intent(in) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real32), intent(in), optional :: grad1(:), grad2(:), grad3(:), fraction(:)
    real(real32), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_s(handle, var_id, time, size(field, kind=int64), size(field, 1), 1, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r4_1t

  subroutine put_r4_1d(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real32), intent(in) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real32), intent(in), optional :: grad1(:), grad2(:), grad3(:), fraction(:)
    real(real32), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_s(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 1), 1, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r4_1d

  subroutine put_r4_2t(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real32), intent(in) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real32), intent(in), optional :: grad1(:,:), grad2(:,:), grad3(:,:), fraction(:,:)
    real(real32), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_s(handle, var_id, time, size(field, kind=int64), size(field, 2), 2, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r4_2t

  subroutine put_r4_2d(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real32), intent(in) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real32), intent(in), optional :: grad1(:,:), grad2(:,:), grad3(:,:), fraction(:,:)
    real(real32), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_s(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 2), 2, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r4_2d

  subroutine put_r4_3t(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real32), intent(in) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real32), intent(in), optional :: grad1(:,:,:), grad2(:,:,:), grad3(:,:,:), fraction(:,:,:)
    real(real32), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_s(handle, var_id, time, size(field, kind=int64), size(field, 3), 3, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r4_3t

  subroutine put_r4_3d(handle, var_id, time, field, info, ierror, grad1, grad2, grad3, fraction)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real32), intent(in) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(real32), intent(in), optional :: grad1(:,:,:), grad2(:,:,:), grad3(:,:,:), fraction(:,:,:)
    real(real32), allocatable :: g1(:), g2(:), g3(:), gf(:)  ! unallocated: absent in the call
    if (present(grad1)) g1 = reshape(grad1, [size(grad1)])
    if (present(grad2)) g2 = reshape(grad2, [size(grad2)])
    if (present(grad3)) g3 = reshape(grad3, [size(grad3)])
    if (present(fraction)) gf = reshape(fraction, [size(fraction)])
    call put_s(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 3), 3, field, info, ierror, &
               g1, g2, g3, gf)
  end subroutine put_r4_3d

  subroutine get_r8_1t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real64), intent(inout) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_d(handle, var_id, time, size(field, kind=int64), size(field, 1), 1, field, info, ierror)
  end subroutine get_r8_1t

  subroutine get_r8_1d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real64), intent(inout) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_d(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 1), 1, field, info, ierror)
  end subroutine get_r8_1d

  subroutine get_r8_2t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real64), intent(inout) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_d(handle, var_id, time, size(field, kind=int64), size(field, 2), 2, field, info, ierror)
  end subroutine get_r8_2t

  subroutine get_r8_2d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real64), intent(inout) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_d(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 2), 2, field, info, ierror)
  end subroutine get_r8_2d

  subroutine get_r8_3t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real64), intent(inout) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_d(handle, var_id, time, size(field, kind=int64), size(field, 3), 3, field, info, ierror)
  end subroutine get_r8_3t

  subroutine get_r8_3d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real64), intent(inout) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_d(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 3), 3, field, info, ierror)
  end subroutine get_r8_3d

  subroutine get_r4_1t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real32), intent(inout) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_s(handle, var_id, time, size(field, kind=int64), size(field, 1), 1, field, info, ierror)
  end subroutine get_r4_1t

  subroutine get_r4_1d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real32), intent(inout) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_s(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 1), 1, field, info, ierror)
  end subroutine get_r4_1d

  subroutine get_r4_2t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real32), intent(inout) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_s(handle, var_id, time, size(field, kind=int64), size(field, 2), 2, field, info, ierror)
  end subroutine get_r4_2t

  subroutine get_r4_2d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real32), intent(inout) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_s(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 2), 2, field, info, ierror)
  end subroutine get_r4_2d

  subroutine get_r4_3t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real32), intent(inout) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_s(handle, var_id, time, size(field, kind=int64), size(field, 3), 3, field, info, ierror)
  end subroutine get_r4_3t

  subroutine get_r4_3d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real32), intent(inout) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call get_s(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 3), 3, field, info, ierror)
  end subroutine get_r4_3d

  ! ---- the I/O server (est_io_*, docs/io.md) ----
  !
  ! est_io_open -> server ranks (estuary_io_is_server): estuary_io_serve, estuary_io_free;
  ! model ranks, over estuary_io_model_comm: estuary_io_def_grid -> estuary_io_def_field ->
  ! estuary_io_enddef -> estuary_io_write ... -> estuary_io_close -> estuary_io_free.

  !> Collective over comm (a Fortran MPI handle; default MPI_COMM_WORLD): an Output from the
  !> `output:` section of a YAML file. In server mode the last `writers` ranks are servers.
  subroutine estuary_io_open(io, config, ierror, comm)
    type(estuary_io), intent(inout) :: io
    character(len=*), intent(in) :: config
    integer, intent(out) :: ierror
    integer, intent(in), optional :: comm
    integer(c_int) :: fcomm
    call io_open_start(io, 'estuary_io_open', comm, fcomm, ierror)
    if (ierror /= 0) return
    ierror = c_result(est_f_io_open(c_str(config), fcomm, io%ptr))
  end subroutine estuary_io_open

  ! What both opens do first: MPI initialised (as OASIS's init does), the communicator's Fortran
  ! handle for the shim (-1: MPI_COMM_WORLD), the clock estuary_io_report's default run time
  ! counts from.
  subroutine io_open_start(io, who, comm, fcomm, ierror)
    type(estuary_io), intent(inout) :: io
    character(len=*), intent(in) :: who
    integer, intent(in), optional :: comm
    integer(c_int), intent(out) :: fcomm
    integer, intent(out) :: ierror
    fcomm = -1
    ierror = c_result(est_f_mpi_init())
    if (ierror /= 0) then
      ierror = fail(ierror, who // ': MPI is finalised or MPI_Init failed')
      return
    end if
    if (present(comm)) fcomm = int(comm, c_int)
    call system_clock(io%opened)
  end subroutine io_open_start

  !> estuary_io_open from an XIOS iodef.xml (docs/io.md, "XIOS XML"); estuary_io_open also takes
  !> one, with the defaults. context: the <context> id (default "nemo" or the only one);
  !> timestep: the model step in seconds, for durations in "ts"; substitutions: NEMO's file-name
  !> templates, 'expname=ORCA2,startdate=20000101'; mode ('server', 'serverless'), writers and
  !> directory: instead of the defaults (serverless, 1, '.'); skip_unsupported: leave out, with a
  !> warning, what estuary would write differently from XIOS instead of failing.
  subroutine estuary_io_open_xios(io, iodef, ierror, comm, context, timestep, substitutions, mode, writers, &
                                  directory, skip_unsupported)
    type(estuary_io), intent(inout) :: io
    character(len=*), intent(in) :: iodef
    integer, intent(out) :: ierror
    integer, intent(in), optional :: comm, writers
    character(len=*), intent(in), optional :: context, substitutions, mode, directory
    real(real64), intent(in), optional :: timestep
    logical, intent(in), optional :: skip_unsupported
    integer(c_int) :: fcomm, nw, skip
    real(c_double) :: ts
    call io_open_start(io, 'estuary_io_open_xios', comm, fcomm, ierror)
    if (ierror /= 0) return
    nw = 0
    if (present(writers)) nw = int(writers, c_int)
    ts = 0
    if (present(timestep)) ts = real(timestep, c_double)
    skip = 0
    if (present(skip_unsupported)) then
      if (skip_unsupported) skip = 1
    end if
    ierror = c_result(est_f_io_open_xios(c_str(iodef), c_str(opt_text(context)), ts, c_str(opt_text(substitutions)), &
                                         c_str(opt_text(mode)), nw, c_str(opt_text(directory)), skip, fcomm, io%ptr))
  contains
    pure function opt_text(s) result(t)  ! an absent optional string as '' (the default)
      character(len=*), intent(in), optional :: s
      character(len=:), allocatable :: t
      t = ''
      if (present(s)) t = s
    end function opt_text
  end subroutine estuary_io_open_xios

  subroutine estuary_io_is_server(io, is_server, ierror)
    type(estuary_io), intent(in) :: io
    logical, intent(out) :: is_server
    integer, intent(out) :: ierror
    integer(c_int) :: s
    s = 0
    ierror = c_result(est_io_is_server(io%ptr, s))
    is_server = s /= 0
  end subroutine estuary_io_is_server

  !> The model's communicator (a Fortran handle; MPI_COMM_NULL's on server ranks).
  subroutine estuary_io_model_comm(io, model_comm, ierror)
    type(estuary_io), intent(in) :: io
    integer, intent(out) :: model_comm
    integer, intent(out) :: ierror
    integer(c_int) :: c
    c = 0
    ierror = c_result(est_f_io_model_comm(io%ptr, c))
    model_comm = int(c)
  end subroutine estuary_io_model_comm

  !> Server ranks: receive, rearrange and write until the model closes.
  subroutine estuary_io_serve(io, ierror)
    type(estuary_io), intent(in) :: io
    integer, intent(out) :: ierror
    ierror = c_result(est_io_serve(io%ptr))
  end subroutine estuary_io_serve

  !> This rank's points of grid `name`: kind 'lonlat', 'gaussian', 'curvilinear' (nx x ny) or
  !> 'reduced_gaussian', 'unstructured' (nx points, ny = 1); points: their 0-based global indices
  !> (longitude fastest); corners: (ncorner, npts) arrays.
  subroutine estuary_io_def_grid(io, name, kind, nx, ny, points, lon, lat, ierror, corner_lon, corner_lat)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: name, kind
    integer, intent(in) :: nx, ny
    integer, intent(in) :: points(:)
    real(real64), intent(in) :: lon(:), lat(:)
    integer, intent(out) :: ierror
    real(real64), intent(in), optional :: corner_lon(:, :), corner_lat(:, :)
    character(len=*), parameter :: routine = 'estuary_io_def_grid'
    real(c_double), allocatable, target :: clo(:), cla(:)
    type(c_ptr) :: pclo, pcla
    integer(c_int) :: ncorner
    if (size(lon) /= size(points) .or. size(lat) /= size(points)) then
      ierror = fail(estuary_err_argument, routine // ': grid "' // trim(name) // '": points has ' // &
                    int_text(size(points, kind=int64)) // ' values, lon ' // int_text(size(lon, kind=int64)) // &
                    ', lat ' // int_text(size(lat, kind=int64)))
      return
    end if
    if (present(corner_lon) .neqv. present(corner_lat)) then
      ierror = fail(estuary_err_argument, routine // ': grid "' // trim(name) // &
                    '": give both corner_lon and corner_lat, or neither')
      return
    end if
    ncorner = 0
    pclo = c_null_ptr
    pcla = c_null_ptr
    if (present(corner_lon)) then
      if (any(shape(corner_lon) /= shape(corner_lat)) .or. size(corner_lon, 2) /= size(lon)) then
        ierror = fail(estuary_err_argument, routine // ': grid "' // trim(name) // &
                      '": corner_lon and corner_lat must both be (ncorner, npts) arrays')
        return
      end if
      ncorner = int(size(corner_lon, 1), c_int)
      clo = reshape(corner_lon, [size(corner_lon)])
      cla = reshape(corner_lat, [size(corner_lat)])
      pclo = c_loc(clo)
      pcla = c_loc(cla)
    end if
    ierror = c_result(est_io_def_grid(io%ptr, c_str(name), c_str(kind), int(nx, c_int64_t), int(ny, c_int64_t), &
                                      int(points, c_int64_t), size(points, kind=c_int64_t), real(lon, c_double), &
                                      real(lat, c_double), ncorner, pclo, pcla))
  end subroutine estuary_io_def_grid

  !> A field on `grid`; decomp numbers the global array as level * grid size + point (0-based).
  !> Without levels, a 2-D field.
  !> mask: one value per value of decomp (its order), 1 written, 0 masked (land): masked points
  !> are written as the fill value 1e20 and never enter an average; absent: the grid's mask.
  subroutine estuary_io_def_field(io, name, grid, decomp, ierror, levels, units, long_name, standard_name, mask)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: name, grid
    type(estuary_decomp), intent(in) :: decomp
    integer, intent(out) :: ierror
    real(real64), intent(in), optional :: levels(:)
    character(len=*), intent(in), optional :: units, long_name, standard_name
    integer, intent(in), optional :: mask(:)
    real(c_double), allocatable, target :: lev(:)
    character(kind=c_char), allocatable, target :: u(:), ln(:), sn(:)
    integer(c_int32_t), allocatable, target :: m(:)
    type(c_ptr) :: plev, pu, pln, psn, pm
    integer(c_int) :: nlev
    integer(c_int64_t) :: nm
    pm = c_null_ptr
    nm = 0
    if (present(mask)) then
      m = int(mask, c_int32_t)
      nm = size(mask, kind=c_int64_t)
      if (nm > 0) pm = c_loc(m)
    end if
    plev = c_null_ptr
    pu = c_null_ptr
    pln = c_null_ptr
    psn = c_null_ptr
    nlev = 0
    if (present(levels)) then
      if (size(levels) > 0) then
        lev = real(levels, c_double)
        plev = c_loc(lev)
        nlev = int(size(levels), c_int)
      end if
    end if
    if (present(units)) then
      u = c_str(units)
      pu = c_loc(u)
    end if
    if (present(long_name)) then
      ln = c_str(long_name)
      pln = c_loc(ln)
    end if
    if (present(standard_name)) then
      sn = c_str(standard_name)
      psn = c_loc(sn)
    end if
    ierror = c_result(est_io_def_field_masked(io%ptr, c_str(name), c_str(grid), plev, nlev, decomp%ptr, pu, pln, psn, &
                                              pm, nm))
  end subroutine estuary_io_def_field

  !> Collective (with the servers): builds the rearrangements and creates the files.
  subroutine estuary_io_enddef(io, ierror)
    type(estuary_io), intent(in) :: io
    integer, intent(out) :: ierror
    ierror = c_result(est_io_enddef(io%ptr))
  end subroutine estuary_io_enddef

  !> One sample of `field` at model time `time` (seconds since the reference time), values in the
  !> field's decomposition order: real(8) or real(4), rank 1, 2 or 3 (generic estuary_io_write;
  !> real(4) passes through a real(8) buffer). ierror = estuary_io_terminated after SIGTERM.
  subroutine io_write_d(io, field, time, n, values, ierror)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: field
    real(real64), intent(in) :: time
    integer(int64), intent(in) :: n
    real(c_double), intent(in) :: values(*)
    integer, intent(out) :: ierror
    ierror = c_result(est_io_write(io%ptr, c_str(field), real(time, c_double), values, int(n, c_int64_t)))
  end subroutine io_write_d

  subroutine io_write_s(io, field, time, n, values, ierror)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: field
    real(real64), intent(in) :: time
    integer(int64), intent(in) :: n
    real(c_float), intent(in) :: values(*)
    integer, intent(out) :: ierror
    real(c_double), allocatable :: buf(:)
    allocate (buf(n))
    buf(:) = real(values(1:n), c_double)
    call io_write_d(io, field, time, n, buf, ierror)
  end subroutine io_write_s

  subroutine io_write_r8_1(io, field, time, values, ierror)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: field
    real(real64), intent(in) :: time
    real(real64), intent(in), contiguous :: values(:)
    integer, intent(out) :: ierror
    call io_write_d(io, field, time, size(values, kind=int64), values, ierror)
  end subroutine io_write_r8_1

  subroutine io_write_r8_2(io, field, time, values, ierror)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: field
    real(real64), intent(in) :: time
    real(real64), intent(in), contiguous :: values(:,:)
    integer, intent(out) :: ierror
    call io_write_d(io, field, time, size(values, kind=int64), values, ierror)
  end subroutine io_write_r8_2

  subroutine io_write_r8_3(io, field, time, values, ierror)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: field
    real(real64), intent(in) :: time
    real(real64), intent(in), contiguous :: values(:,:,:)
    integer, intent(out) :: ierror
    call io_write_d(io, field, time, size(values, kind=int64), values, ierror)
  end subroutine io_write_r8_3

  subroutine io_write_r4_1(io, field, time, values, ierror)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: field
    real(real64), intent(in) :: time
    real(real32), intent(in), contiguous :: values(:)
    integer, intent(out) :: ierror
    call io_write_s(io, field, time, size(values, kind=int64), values, ierror)
  end subroutine io_write_r4_1

  subroutine io_write_r4_2(io, field, time, values, ierror)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: field
    real(real64), intent(in) :: time
    real(real32), intent(in), contiguous :: values(:,:)
    integer, intent(out) :: ierror
    call io_write_s(io, field, time, size(values, kind=int64), values, ierror)
  end subroutine io_write_r4_2

  subroutine io_write_r4_3(io, field, time, values, ierror)
    type(estuary_io), intent(in) :: io
    character(len=*), intent(in) :: field
    real(real64), intent(in) :: time
    real(real32), intent(in), contiguous :: values(:,:,:)
    integer, intent(out) :: ierror
    call io_write_s(io, field, time, size(values, kind=int64), values, ierror)
  end subroutine io_write_r4_3

  subroutine estuary_io_flush(io, ierror)
    type(estuary_io), intent(in) :: io
    integer, intent(out) :: ierror
    ierror = c_result(est_io_flush(io%ptr))
  end subroutine estuary_io_flush

  !> Flushes, closes the files and stops the servers (model ranks).
  subroutine estuary_io_close(io, ierror)
    type(estuary_io), intent(in) :: io
    integer, intent(out) :: ierror
    ierror = c_result(est_io_close(io%ptr))
  end subroutine estuary_io_close

  !> The run's I/O metrics and CPMIP measures (Data Output Cost, Data Intensity) over every
  !> rank: collective over the communicator given to estuary_io_open, server ranks too (after
  !> estuary_io_serve), after estuary_io_close and before estuary_io_free. run_s: the run's wall
  !> time (default: seconds since estuary_io_open on this rank); run_without_io_s: a run without
  !> output if measured (default 0: estimated from the model ranks' time outside I/O calls).
  subroutine estuary_io_report(io, report, ierror, run_s, run_without_io_s)
    type(estuary_io), intent(in) :: io
    type(estuary_io_report_type), intent(out) :: report
    integer, intent(out) :: ierror
    real(real64), intent(in), optional :: run_s, run_without_io_s
    real(c_double) :: run, without
    integer(int64) :: now, rate
    if (present(run_s)) then
      run = real(run_s, c_double)
    else
      call system_clock(now, rate)
      run = 0
      if (rate > 0) run = real(now - io%opened, c_double) / real(rate, c_double)
    end if
    without = 0
    if (present(run_without_io_s)) without = real(run_without_io_s, c_double)
    ierror = c_result(est_io_get_report(io%ptr, run, without, report))
  end subroutine estuary_io_report

  !> This rank's I/O counters (not collective): records, bytes, times (derived_s among them).
  subroutine estuary_io_stats(io, stats, ierror)
    type(estuary_io), intent(in) :: io
    type(estuary_io_stats_type), intent(out) :: stats
    integer, intent(out) :: ierror
    ierror = c_result(est_io_get_stats(io%ptr, stats))
  end subroutine estuary_io_stats

  !> Closes if needed and frees the Output (collective); io is null after.
  subroutine estuary_io_free(io)
    type(estuary_io), intent(inout) :: io
    integer(c_int) :: rc
    rc = est_io_free(io%ptr)
  end subroutine estuary_io_free

  !> Collective over comm (default MPI_COMM_WORLD): a reader of a file written by an Output.
  subroutine estuary_io_reader_open(reader, path, ierror, comm)
    type(estuary_io_reader), intent(inout) :: reader
    character(len=*), intent(in) :: path
    integer, intent(out) :: ierror
    integer, intent(in), optional :: comm
    integer(c_int) :: fcomm
    fcomm = -1
    if (present(comm)) fcomm = int(comm, c_int)
    ierror = c_result(est_f_io_reader_open(c_str(path), fcomm, reader%ptr))
  end subroutine estuary_io_reader_open

  !> Periodic forcing: the records repeat every `period` seconds; each read prefetches the next.
  subroutine estuary_io_reader_set_period(reader, period, ierror)
    type(estuary_io_reader), intent(in) :: reader
    real(real64), intent(in) :: period
    integer, intent(out) :: ierror
    ierror = c_result(est_io_reader_set_period(reader%ptr, real(period, c_double)))
  end subroutine estuary_io_reader_set_period

  !> Collective: variable `var` at model time `time` into values, in decomp's order: real(8) or
  !> real(4), rank 1, 2 or 3 (generic estuary_io_read; real(4) reads into a real(8) buffer and
  !> is left as it was on a failure).
  subroutine io_read_d(reader, var, time, decomp, n, values, ierror)
    type(estuary_io_reader), intent(in) :: reader
    character(len=*), intent(in) :: var
    real(real64), intent(in) :: time
    type(estuary_decomp), intent(in) :: decomp
    integer(int64), intent(in) :: n
    real(c_double), intent(inout) :: values(*)
    integer, intent(out) :: ierror
    ierror = c_result(est_io_read(reader%ptr, c_str(var), real(time, c_double), decomp%ptr, values, &
                                  int(n, c_int64_t)))
  end subroutine io_read_d

  subroutine io_read_s(reader, var, time, decomp, n, values, ierror)
    type(estuary_io_reader), intent(in) :: reader
    character(len=*), intent(in) :: var
    real(real64), intent(in) :: time
    type(estuary_decomp), intent(in) :: decomp
    integer(int64), intent(in) :: n
    real(c_float), intent(inout) :: values(*)
    integer, intent(out) :: ierror
    real(c_double), allocatable :: buf(:)
    allocate (buf(n))
    buf(:) = real(values(1:n), c_double)
    call io_read_d(reader, var, time, decomp, n, buf, ierror)
    if (ierror == 0) values(1:n) = real(buf, c_float)
  end subroutine io_read_s

  subroutine io_read_r8_1(reader, var, time, decomp, values, ierror)
    type(estuary_io_reader), intent(in) :: reader
    character(len=*), intent(in) :: var
    real(real64), intent(in) :: time
    type(estuary_decomp), intent(in) :: decomp
    real(real64), intent(inout), contiguous :: values(:)
    integer, intent(out) :: ierror
    call io_read_d(reader, var, time, decomp, size(values, kind=int64), values, ierror)
  end subroutine io_read_r8_1

  subroutine io_read_r8_2(reader, var, time, decomp, values, ierror)
    type(estuary_io_reader), intent(in) :: reader
    character(len=*), intent(in) :: var
    real(real64), intent(in) :: time
    type(estuary_decomp), intent(in) :: decomp
    real(real64), intent(inout), contiguous :: values(:,:)
    integer, intent(out) :: ierror
    call io_read_d(reader, var, time, decomp, size(values, kind=int64), values, ierror)
  end subroutine io_read_r8_2

  subroutine io_read_r8_3(reader, var, time, decomp, values, ierror)
    type(estuary_io_reader), intent(in) :: reader
    character(len=*), intent(in) :: var
    real(real64), intent(in) :: time
    type(estuary_decomp), intent(in) :: decomp
    real(real64), intent(inout), contiguous :: values(:,:,:)
    integer, intent(out) :: ierror
    call io_read_d(reader, var, time, decomp, size(values, kind=int64), values, ierror)
  end subroutine io_read_r8_3

  subroutine io_read_r4_1(reader, var, time, decomp, values, ierror)
    type(estuary_io_reader), intent(in) :: reader
    character(len=*), intent(in) :: var
    real(real64), intent(in) :: time
    type(estuary_decomp), intent(in) :: decomp
    real(real32), intent(inout), contiguous :: values(:)
    integer, intent(out) :: ierror
    call io_read_s(reader, var, time, decomp, size(values, kind=int64), values, ierror)
  end subroutine io_read_r4_1

  subroutine io_read_r4_2(reader, var, time, decomp, values, ierror)
    type(estuary_io_reader), intent(in) :: reader
    character(len=*), intent(in) :: var
    real(real64), intent(in) :: time
    type(estuary_decomp), intent(in) :: decomp
    real(real32), intent(inout), contiguous :: values(:,:)
    integer, intent(out) :: ierror
    call io_read_s(reader, var, time, decomp, size(values, kind=int64), values, ierror)
  end subroutine io_read_r4_2

  subroutine io_read_r4_3(reader, var, time, decomp, values, ierror)
    type(estuary_io_reader), intent(in) :: reader
    character(len=*), intent(in) :: var
    real(real64), intent(in) :: time
    type(estuary_decomp), intent(in) :: decomp
    real(real32), intent(inout), contiguous :: values(:,:,:)
    integer, intent(out) :: ierror
    call io_read_s(reader, var, time, decomp, size(values, kind=int64), values, ierror)
  end subroutine io_read_r4_3

  subroutine estuary_io_reader_free(reader)
    type(estuary_io_reader), intent(inout) :: reader
    integer(c_int) :: rc
    rc = est_io_reader_free(reader%ptr)
  end subroutine estuary_io_reader_free

  ! The OASIS-shaped calls (declared in estuary_oasis_decl.inc).
  include 'estuary_oasis_body.inc'

end module estuary
