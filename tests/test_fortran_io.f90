! The I/O server from Fortran through the module `estuary` (estuary_io_*): open from a YAML file
! (serverless or server mode), a lon-lat grid on cyclic points, a 3-D field on a reversed cyclic
! decomposition, real(8) writes, close; then read every record back with estuary_io_read into
! block decompositions and compare with the function of the global index computed here; the
! errors of an unknown variable and a missing configuration.
!
!   mpirun -n P test_fortran_io DIR MODE WRITERS     (MODE: serverless or server)
program test_fortran_io
  use mpi
  use estuary
  use, intrinsic :: iso_fortran_env, only: real64, int64
  implicit none

  integer, parameter :: nx = 8, ny = 6, nh = nx * ny, nlev = 2, n3 = nlev * nh, nsteps = 4
  real(real64), parameter :: dt = 3600.0_real64
  integer :: ierr, rank, nprocs, k, step, mrank, msize, mcomm, lo, hi, u
  integer :: failures = 0, all_failures
  integer, allocatable :: gpts(:), tidx(:), bidx(:)
  real(real64), allocatable :: lon(:), lat(:), vals(:), got(:)
  type(estuary_io) :: io
  type(estuary_io_reader) :: rd
  type(estuary_decomp) :: tdec, bdec
  logical :: server
  character(len=512) :: dir, mode, writers, cfg
  character(len=1024) :: msg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (command_argument_count() < 3) then
    if (rank == 0) print '(a)', 'usage: test_fortran_io DIR serverless|server WRITERS'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  call get_command_argument(1, dir)
  call get_command_argument(2, mode)
  call get_command_argument(3, writers)
  dir = trim(dir) // '/fortran_' // trim(mode) // '_w' // trim(writers)
  cfg = trim(dir) // '.yaml'
  if (rank == 0) then
    call execute_command_line('mkdir -p ' // trim(dir))
    open (newunit=u, file=trim(cfg), status='replace', action='write')
    write (u, '(a)') 'output:'
    write (u, '(a)') '  mode: ' // trim(mode)
    write (u, '(a)') '  writers: ' // trim(writers)
    write (u, '(a)') '  directory: ' // trim(dir)
    write (u, '(a)') '  files:'
    write (u, '(a)') '    - name: f_inst'
    write (u, '(a)') '      output_freq: 1h'
    write (u, '(a)') '      fields: [{name: t, precision: double}]'
    close (u)
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! A missing configuration: estuary_err_io and estuary's message.
  call estuary_io_open(io, trim(dir) // '/none.yaml', ierr)
  call check(ierr == estuary_err_io, 'open of a missing configuration gives estuary_err_io')
  call estuary_error_message(msg)
  call check(index(msg, 'cannot read the configuration') > 0, 'message of a missing configuration: ' // trim(msg))

  call estuary_io_open(io, trim(cfg), ierr, comm=MPI_COMM_WORLD)
  call ok(ierr, 'io_open')
  call estuary_io_is_server(io, server, ierr)
  call ok(ierr, 'io_is_server')
  if (server) then
    call estuary_io_serve(io, ierr)
    call ok(ierr, 'io_serve')
  else
    call estuary_io_model_comm(io, mcomm, ierr)
    call ok(ierr, 'io_model_comm')
    call MPI_Comm_rank(mcomm, mrank, ierr)
    call MPI_Comm_size(mcomm, msize, ierr)
    ! grid: cyclic points (0-based, longitude fastest); t: (level, point), reversed cyclic
    gpts = [(k, k = mrank, nh - 1, msize)]
    lon = [(45.0_real64 * modulo(gpts(k), nx), k = 1, size(gpts))]
    lat = [(-75.0_real64 + 30.0_real64 * (gpts(k) / nx), k = 1, size(gpts))]
    call estuary_io_def_grid(io, 'g', 'lonlat', nx, ny, gpts, lon, lat, ierr)
    call ok(ierr, 'io_def_grid')
    tidx = [(k, k = n3 - 1 - modulo(n3 - 1 - mrank, msize), 0, -msize)]
    call estuary_decomp_new_indices(tdec, n3, tidx, ierr)
    call ok(ierr, 'decomp_new_indices')
    call estuary_io_def_field(io, 't', 'g', tdec, ierr, levels=[10.0_real64, 20.0_real64], units='K', &
                              long_name='temperature')
    call ok(ierr, 'io_def_field')
    call estuary_io_enddef(io, ierr)
    call ok(ierr, 'io_enddef')
    allocate (vals(size(tidx)))
    do step = 0, nsteps - 1
      vals = [(f(tidx(k), step), k = 1, size(tidx))]
      call estuary_io_write(io, 't', (step + 1) * dt, vals, ierr)
      call ok(ierr, 'io_write')
    end do
    call estuary_io_flush(io, ierr)
    call ok(ierr, 'io_flush')
    call estuary_io_close(io, ierr)
    call ok(ierr, 'io_close')
    call estuary_decomp_free(tdec)
  end if
  call estuary_io_free(io)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! Read back on every rank into blocks of (level, point).
  lo = rank * n3 / nprocs
  hi = (rank + 1) * n3 / nprocs
  bidx = [(k, k = lo, hi - 1)]
  call estuary_decomp_new_indices(bdec, n3, bidx, ierr)
  call ok(ierr, 'decomp_new_indices (read)')
  call estuary_io_reader_open(rd, trim(dir) // '/f_inst.nc', ierr)
  call ok(ierr, 'io_reader_open')
  allocate (got(size(bidx)))
  do step = 0, nsteps - 1
    got = -1
    call estuary_io_read(rd, 't', (step + 1) * dt, bdec, got, ierr)
    call ok(ierr, 'io_read')
    do k = 1, size(bidx)
      if (abs(got(k) - f(bidx(k), step)) > 0) then
        call check(.false., 'value read back')
        exit
      end if
    end do
  end do
  ! Periodic: 4 records repeat every 4 h, so 5 h reads the record at 1 h.
  call estuary_io_reader_set_period(rd, nsteps * dt, ierr)
  call ok(ierr, 'io_reader_set_period')
  call estuary_io_read(rd, 't', (nsteps + 1) * dt, bdec, got, ierr)
  call ok(ierr, 'io_read (periodic)')
  call check(maxval(abs(got - [(f(bidx(k), 0), k = 1, size(bidx))]), mask=.true.) <= 0, &
             'periodic read wraps to the first record')
  ! An unknown variable: estuary_err_io naming it, on every rank.
  call estuary_io_read(rd, 'nope', dt, bdec, got, ierr)
  call check(ierr == estuary_err_io, 'read of an unknown variable gives estuary_err_io')
  call estuary_error_message(msg)
  call check(index(msg, 'nope') > 0, 'message names the variable: ' // trim(msg))
  call estuary_io_reader_free(rd)
  call estuary_decomp_free(bdec)

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (all_failures == 0) then
      print '(a)', 'test_fortran_io: passed'
    else
      print '(a,i0,a)', 'test_fortran_io: FAILED (', all_failures, ' failures)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (all_failures /= 0) error stop 1

contains

  ! exact in real(8) (no rounding that the compiler could do differently here and there)
  pure real(real64) function f(g, step)
    integer, intent(in) :: g, step
    f = 1000.0_real64 + 0.5_real64 * g + 0.25_real64 * step - 3.0_real64 * modulo(7 * g, 11)
  end function f

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) return
    failures = failures + 1
    write (*, '(a,i0,a)') 'test_fortran_io: rank ', rank, ': check failed: ' // what
  end subroutine check

  subroutine ok(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    character(len=1024) :: m
    if (code == 0) return
    call estuary_error_message(m)
    call check(.false., what // ': ' // trim(m))
  end subroutine ok

end program test_fortran_io
