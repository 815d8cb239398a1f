! The I/O server from Fortran (module estuary): the same model and files as io_server.cpp.
!
!   mpirun -n 3 io_server_f [io_server.yaml]
program io_server
  use mpi
  use estuary
  use, intrinsic :: iso_fortran_env, only: real64
  implicit none

  integer, parameter :: nx = 36, ny = 18, steps = 12
  type(estuary_io) :: io
  type(estuary_decomp) :: part
  logical :: server
  integer :: ierr, comm, rank, ranks, lo, hi, s, g
  integer, allocatable :: points(:)
  real(real64), allocatable :: lon(:), lat(:), values(:)
  character(len=512) :: config

  config = 'io_server.yaml'
  if (command_argument_count() > 0) call get_command_argument(1, config)
  call estuary_io_open(io, trim(config), ierr, comm=MPI_COMM_WORLD)  ! MPI_Init'ed by estuary
  call check('estuary_io_open')
  call estuary_io_is_server(io, server, ierr)
  call check('estuary_io_is_server')
  if (server) then
    call estuary_io_serve(io, ierr)  ! returns when the model closes
    call check('estuary_io_serve')
  else
    call estuary_io_model_comm(io, comm, ierr)
    call check('estuary_io_model_comm')
    call MPI_Comm_rank(comm, rank, ierr)
    call MPI_Comm_size(comm, ranks, ierr)
    lo = nx * ny * rank / ranks
    hi = nx * ny * (rank + 1) / ranks
    ! This rank's block of grid points (0-based, longitude fastest), with the cell centres of
    ! estuary's lon-lat grid.
    points = [(g, g = lo, hi - 1)]
    lon = [(real(mod(g, nx), real64) * (360.0_real64 / nx), g = lo, hi - 1)]
    lat = [(-90.0_real64 + (real(g / nx, real64) + 0.5_real64) * (180.0_real64 / ny), g = lo, hi - 1)]
    call estuary_io_def_grid(io, 'grid', 'lonlat', nx, ny, points, lon, lat, ierr)
    call check('estuary_io_def_grid')
    call estuary_decomp_new_indices(part, nx * ny, points, ierr)
    call check('estuary_decomp_new_indices')
    call estuary_io_def_field(io, 'sst', 'grid', part, ierr, units='K', standard_name='sea_surface_temperature')
    call check('estuary_io_def_field')
    call estuary_io_enddef(io, ierr)
    call check('estuary_io_enddef')
    do s = 1, steps
      values = [(sst(g, s), g = lo, hi - 1)]
      call estuary_io_write(io, 'sst', 3600.0_real64 * s, values, ierr)
      call check('estuary_io_write')
    end do
    call estuary_io_close(io, ierr)
    call check('estuary_io_close')
    if (rank == 0) print '(a,i0,a)', 'io_server (Fortran): ', steps, ' hours written'
    call estuary_decomp_free(part)
  end if
  call estuary_io_free(io)
  call MPI_Finalize(ierr)

contains

  ! The field at point g (0-based, longitude fastest) and hour s: exact in binary.
  pure real(real64) function sst(g, s)
    integer, intent(in) :: g, s
    sst = 270.0_real64 + 0.25_real64 * mod(g, nx) + 0.5_real64 * (g / nx) + s
  end function sst

  ! On failure: estuary's message, and the run ends on every rank.
  subroutine check(call)
    character(len=*), intent(in) :: call
    character(len=1024) :: msg
    integer :: e
    if (ierr == 0) return
    call estuary_error_message(msg)
    print '(a)', call // ': ' // trim(msg)
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine check
end program io_server
