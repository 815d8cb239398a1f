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
!>   points [4,npts,idx1,...]. The C API needs the global size: give it as ig_size (as OASIS's
!>   optional isize), except for a serial partition, whose ig_paral(3) is the global size.
!> * Fields: real(8) or real(4) arrays of rank 1, 2 or 3 whose elements are the partition's
!>   local points in its local order (a box: x fastest, so a (nx, ny) array). A bundle of nb
!>   members has the bundle as its last dimension (npts, nb) or (nx, ny, nb). real(4) fields
!>   pass through a real(8) buffer. Times: real(8) seconds, or integer seconds as OASIS's date.
!> * Communicators are Fortran MPI handles (integer, as from the `mpi` module; for `mpi_f08`
!>   pass comm%MPI_VAL).
module estuary
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_int, c_int64_t, c_double, c_float, &
                                         c_char, c_null_char, c_associated, c_loc
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
  !> A redistribution between two decompositions over a communicator.
  type, public :: estuary_redist
    type(c_ptr) :: ptr = c_null_ptr
    integer(int64) :: nsrc = 0, ndst = 0  ! the local sizes of the source and destination
  end type estuary_redist

  public :: estuary_init_comp, estuary_get_localcomm, estuary_def_partition, estuary_def_var, &
            estuary_enddef, estuary_put, estuary_get, estuary_terminate, estuary_abort, &
            estuary_error_message
  public :: estuary_decomp_new_indices, estuary_decomp_new_box, estuary_decomp_size, &
            estuary_decomp_free, estuary_redist_new, estuary_redist_run, estuary_redist_free

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
  end interface

  integer(c_int), parameter :: est_f64 = 0, est_f32 = 1, est_column_major = 1

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
  !> (default MPI_COMM_WORLD); starts MPI when the program has not. config: the namcouple or
  !> YAML file (default: $ESTUARY_CONFIG, estuary.yaml, namcouple); directory: where files are
  !> read and written (default: the working directory).
  subroutine estuary_init_comp(comp_id, name, ierror, world, config, directory)
    integer, intent(out) :: comp_id
    character(len=*), intent(in) :: name
    integer, intent(out) :: ierror
    integer, intent(in), optional :: world
    character(len=*), intent(in), optional :: config, directory
    character(kind=c_char), allocatable, target :: cfg(:), dir(:)
    type(c_ptr) :: pcfg, pdir, c
    type(comp_entry), allocatable :: grown(:)
    integer(c_int) :: has_world, fworld
    integer :: slot
    comp_id = 0
    ierror = c_result(est_f_mpi_init())
    if (ierror /= 0) then
      ierror = fail(ierror, 'estuary_init_comp: MPI is finalised or MPI_Init failed')
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
    ierror = c_result(est_f_comp_new(c_str(name), has_world, fworld, pcfg, pdir, c))
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
    if (allocated(comps(slot)%vars)) deallocate (comps(slot)%vars)
    allocate (comps(slot)%vars(0))
    comp_id = slot
  end subroutine estuary_init_comp

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
  !> global size (required except for a serial partition). part_id: the C API's id (0, 1, ...).
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
    if (present(ig_size)) then
      gsize = ig_size
    else if (ig_paral(1) == 0 .and. size(ig_paral) >= 3) then
      gsize = ig_paral(3)
    else
      ierror = fail(estuary_err_argument, routine // ': ' // label // ': ig_size (the global size) is ' // &
                    'required for ig_paral(1) = ' // int_text(int(ig_paral(1), int64)) // &
                    '; only a serial partition [0, 0, gsize] gives it in ig_paral')
      return
    end if
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

  subroutine put_d(comp_id, var_id, time, n, lastdim, rank, field, info, ierror)
    integer, intent(in) :: comp_id, var_id
    real(real64), intent(in) :: time
    integer(int64), intent(in) :: n
    integer, intent(in) :: lastdim, rank
    real(c_double), intent(in) :: field(*)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    type(c_ptr) :: c
    integer(c_int) :: cinfo
    integer :: rc
    info = -1
    rc = check_field(comp_id, var_id, lastdim, rank, 'estuary_put', c)
    if (rc == 0) rc = c_result(est_comp_put(c, int(var_id, c_int), real(time, c_double), field, int(n, c_int64_t), cinfo))
    if (rc == 0) info = int(cinfo)
    call give(rc, ierror)
  end subroutine put_d

  subroutine put_s(comp_id, var_id, time, n, lastdim, rank, field, info, ierror)
    integer, intent(in) :: comp_id, var_id
    real(real64), intent(in) :: time
    integer(int64), intent(in) :: n
    integer, intent(in) :: lastdim, rank
    real(c_float), intent(in) :: field(*)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    real(c_double), allocatable :: buf(:)
    allocate (buf(n))
    buf(:) = real(field(1:n), c_double)
    call put_d(comp_id, var_id, time, n, lastdim, rank, buf, info, ierror)
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
    do k = 1, size(comps)
      if (c_associated(comps(k)%ptr)) return
    end do
    rc = c_result(est_f_mpi_finalize())
    if (ierror == 0) ierror = rc
  end subroutine estuary_terminate

  !> oasis_abort: prints the message (with the component's name) and aborts the whole run
  !> (MPI_Abort on MPI_COMM_WORLD with errorcode, default 1).
  subroutine estuary_abort(comp_id, message, errorcode)
    integer, intent(in) :: comp_id
    character(len=*), intent(in) :: message
    integer, intent(in), optional :: errorcode
    character(len=:), allocatable :: who
    integer(c_int) :: code
    who = 'component id ' // int_text(int(comp_id, int64))
    if (allocated(comps)) then
      if (comp_id >= 1 .and. comp_id <= size(comps)) then
        if (allocated(comps(comp_id)%name)) who = 'component ' // comps(comp_id)%name
      end if
    end if
    code = 1
    if (present(errorcode)) code = int(errorcode, c_int)
    write (error_unit, '(a)') 'estuary_abort: ' // who // ': ' // trim(message)
    flush (error_unit)
    call est_f_abort(code)
    error stop 1
  end subroutine estuary_abort

  !> The message of the last failure (est_last_error()'s text, or this module's), truncated to
  !> len(msg); blank if none.
  subroutine estuary_error_message(msg)
    character(len=*), intent(out) :: msg
    msg = message_text()
  end subroutine estuary_error_message

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

  subroutine put_r8_1t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real64), intent(in) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_d(handle, var_id, time, size(field, kind=int64), size(field, 1), 1, field, info, ierror)
  end subroutine put_r8_1t

  subroutine put_r8_1d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real64), intent(in) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_d(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 1), 1, field, info, ierror)
  end subroutine put_r8_1d

  subroutine put_r8_2t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real64), intent(in) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_d(handle, var_id, time, size(field, kind=int64), size(field, 2), 2, field, info, ierror)
  end subroutine put_r8_2t

  subroutine put_r8_2d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real64), intent(in) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_d(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 2), 2, field, info, ierror)
  end subroutine put_r8_2d

  subroutine put_r8_3t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real64), intent(in) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_d(handle, var_id, time, size(field, kind=int64), size(field, 3), 3, field, info, ierror)
  end subroutine put_r8_3t

  subroutine put_r8_3d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real64), intent(in) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_d(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 3), 3, field, info, ierror)
  end subroutine put_r8_3d

  subroutine put_r4_1t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real32), intent(in) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_s(handle, var_id, time, size(field, kind=int64), size(field, 1), 1, field, info, ierror)
  end subroutine put_r4_1t

  subroutine put_r4_1d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real32), intent(in) :: field(:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_s(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 1), 1, field, info, ierror)
  end subroutine put_r4_1d

  subroutine put_r4_2t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real32), intent(in) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_s(handle, var_id, time, size(field, kind=int64), size(field, 2), 2, field, info, ierror)
  end subroutine put_r4_2t

  subroutine put_r4_2d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real32), intent(in) :: field(:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_s(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 2), 2, field, info, ierror)
  end subroutine put_r4_2d

  subroutine put_r4_3t(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    real(real64), intent(in) :: time
    real(real32), intent(in) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_s(handle, var_id, time, size(field, kind=int64), size(field, 3), 3, field, info, ierror)
  end subroutine put_r4_3t

  subroutine put_r4_3d(handle, var_id, time, field, info, ierror)
    integer, intent(in) :: handle, var_id
    integer, intent(in) :: time
    real(real32), intent(in) :: field(:,:,:)
    integer, intent(out) :: info
    integer, intent(out), optional :: ierror
    call put_s(handle, var_id, real(time, real64), size(field, kind=int64), size(field, 3), 3, field, info, ierror)
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

end module estuary
