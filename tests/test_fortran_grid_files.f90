! OASIS grid files from Fortran, as an OASIS3-MCT model writes them: default integers, (nx, ny)
! arrays, corners (nx, ny, nc), OASIS's mask convention (1 = masked). One component 'solo' on
! every rank couples F_OUT (grid fgrd) to F_IN (grid fgr1) with SCRIPR DISTWGT, 1 neighbour;
! no def_grid: enddef reads both grids from the files it has just written.
!  - fgrd: written by partitions, each rank its box of rows ((nx, ly) arrays, part_id), with
!    corners, areas and a land mask;
!  - fgr1: the same centres, no land, written whole by the last rank (no part_id).
! Every target point whose source point is valid gets exactly its value (distance 0: weight 1);
! one on a masked source point gets another point's value (the nearest valid one). A mask read
! the wrong way round, or points in the wrong order, would show. Bad calls return ierror /= 0
! with a message.
program test_fortran_grid_files
  use mpi
  use estuary
  use, intrinsic :: iso_fortran_env, only: real32, real64, error_unit
  implicit none

  integer, parameter :: nx = 12, ny = 6, nc = 4
  integer :: ierr, rank, nprocs, comp, part, flag, v_out, v_in, info, i, j, j0, ly, jl, failures = 0, all_failures
  character(len=256) :: dir
  character(len=1024) :: msg
  real(real64), allocatable :: lon(:, :), lat(:, :), clo(:, :, :), cla(:, :, :), area(:, :), f(:, :), g(:, :)
  real(real32), allocatable :: lon4(:, :), lat4(:, :)
  integer, allocatable :: mask(:, :)
  logical :: exists

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  write (dir, '(a,i0)') '/tmp/estuary_fortran_grid_files_np', nprocs
  if (rank == 0) call write_namcouple()
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  call estuary_init_comp(comp, 'solo', ierr, config=trim(dir) // '/namcouple', directory=trim(dir))
  call ok(ierr, 'estuary_init_comp')

  ! This rank's rows [j0, j0 + ly) of both grids: a box partition, ig_paral [2, offset, nx, ly, nx].
  j0 = rank * ny / nprocs
  ly = (rank + 1) * ny / nprocs - j0
  call estuary_def_partition(comp, part, [2, j0 * nx, nx, ly, nx], ierr, ig_size=nx * ny, name='rows')
  call ok(ierr, 'estuary_def_partition')

  ! The whole grid, as a model holds it.
  allocate (lon(nx, ny), lat(nx, ny), clo(nx, ny, nc), cla(nx, ny, nc), area(nx, ny), mask(nx, ny))
  do j = 1, ny
    do i = 1, nx
      lon(i, j) = (i - 1) * 30.0_real64 + 15.0_real64
      lat(i, j) = -75.0_real64 + (j - 1) * 30.0_real64
      clo(i, j, :) = [lon(i, j) - 15, lon(i, j) + 15, lon(i, j) + 15, lon(i, j) - 15]
      cla(i, j, :) = [lat(i, j) - 15, lat(i, j) - 15, lat(i, j) + 15, lat(i, j) + 15]
      area(i, j) = 1.0e10_real64 * cos(lat(i, j) * acos(-1.0_real64) / 180)  ! m^2, as OASIS models give them
      mask(i, j) = merge(1, 0, mod(i + 2 * j, 7) == 0)                       ! 1 = land (masked)
    end do
  end do

  ! Calls out of order or with wrong sizes: ierror and a message, nothing kept.
  call estuary_write_grid(comp, 'fgrd', nx, ny, lon, lat, ierr)
  call check(ierr /= 0, 'estuary_write_grid before estuary_start_grids_writing was accepted')
  call expect_message('start_grids_writing')
  call estuary_start_grids_writing(comp, flag, ierr)
  call ok(ierr, 'estuary_start_grids_writing')
  call check(flag == 1, 'estuary_start_grids_writing: flag is not 1')
  call estuary_write_grid(comp, 'fgrd', nx, ny + 1, lon, lat, ierr)
  call check(ierr /= 0, 'estuary_write_grid with nx * ny /= size(lon) was accepted')
  call expect_message('nx * ny')

  ! fgrd by partitions: this rank's (nx, ly) rows, real(4) centres (exact in single precision).
  lon4 = real(lon(:, j0 + 1:j0 + ly), real32)
  lat4 = real(lat(:, j0 + 1:j0 + ly), real32)
  call estuary_write_grid(comp, 'fgrd', nx, ny, lon4, lat4, ierr, part_id=part)
  call ok(ierr, 'estuary_write_grid (partition)')
  call estuary_write_corner(comp, 'fgrd', nx, ny, nc, clo(:, j0 + 1:j0 + ly, :), cla(:, j0 + 1:j0 + ly, :), ierr, &
                            part_id=part)
  call ok(ierr, 'estuary_write_corner (partition)')
  call estuary_write_mask(comp, 'fgrd', nx, ny, mask(:, j0 + 1:j0 + ly), ierr, part_id=part)
  call ok(ierr, 'estuary_write_mask (partition)')
  call estuary_write_area(comp, 'fgrd', nx, ny, area(:, j0 + 1:j0 + ly), ierr, part_id=part)
  call ok(ierr, 'estuary_write_area (partition)')
  ! fgr1 whole, from the last rank only (OASIS's classic call), every point valid.
  if (rank == nprocs - 1) then
    call estuary_write_grid(comp, 'fgr1', nx, ny, lon, lat, ierr)
    call ok(ierr, 'estuary_write_grid (whole)')
    call estuary_write_mask(comp, 'fgr1', nx, ny, 0 * mask, ierr)
    call ok(ierr, 'estuary_write_mask (whole)')
  end if
  call estuary_terminate_grids_writing(comp, ierr)
  call ok(ierr, 'estuary_terminate_grids_writing')

  call estuary_def_var(comp, v_out, 'F_OUT', part, estuary_out, 1, ierr)
  call ok(ierr, 'estuary_def_var F_OUT')
  call estuary_def_var(comp, v_in, 'F_IN', part, estuary_in, 1, ierr)
  call ok(ierr, 'estuary_def_var F_IN')
  call estuary_enddef(comp, ierr)
  call ok(ierr, 'estuary_enddef')

  if (ierr == 0) then
    allocate (f(nx, ly), g(nx, ly))
    do jl = 1, ly
      do i = 1, nx
        f(i, jl) = 1000.0_real64 * i + (j0 + jl)
      end do
    end do
    g = -1
    call estuary_put(comp, v_out, 0, f, info, ierr)
    call ok(ierr, 'estuary_put')
    call estuary_get(comp, v_in, 0, g, info, ierr)
    call ok(ierr, 'estuary_get')
    call check(info == estuary_Recvd, 'estuary_get: info is not estuary_Recvd')
    do jl = 1, ly
      do i = 1, nx
        if (mask(i, j0 + jl) == 0) then
          call check(abs(g(i, jl) - f(i, jl)) <= 0, 'a valid point did not get its own value: ' // at(i, j0 + jl))
        else
          call check(abs(g(i, jl) - f(i, jl)) > 0 .and. g(i, jl) > 999, &
                     'a point on land got its own value or none (mask read the wrong way?): ' // at(i, j0 + jl))
        end if
      end do
    end do
  end if
  call estuary_terminate(comp, ierr)
  call ok(ierr, 'estuary_terminate')

  if (rank == 0) then
    inquire (file=trim(dir) // '/grids.nc', exist=exists)
    call check(exists, 'grids.nc was not written')
    inquire (file=trim(dir) // '/masks.nc', exist=exists)
    call check(exists, 'masks.nc was not written')
    inquire (file=trim(dir) // '/areas.nc', exist=exists)
    call check(exists, 'areas.nc was not written')
  end if
  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (all_failures == 0) then
      print '(a)', 'test_fortran_grid_files: OK'
    else
      print '(a,i0,a)', 'test_fortran_grid_files: ', all_failures, ' failure(s)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (all_failures /= 0) error stop 1

contains

  function at(i, j) result(s)
    integer, intent(in) :: i, j
    character(len=32) :: s
    write (s, '(a,i0,a,i0,a)') '(', i, ', ', j, ')'
  end function at

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) return
    failures = failures + 1
    write (error_unit, '(a,i0,a)') 'test_fortran_grid_files: rank ', rank, ': ' // what
  end subroutine check

  subroutine ok(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    if (code == 0) return
    call estuary_error_message(msg)
    call check(.false., what // ' failed: ' // trim(msg))
  end subroutine ok

  subroutine expect_message(part)
    character(len=*), intent(in) :: part
    call estuary_error_message(msg)
    call check(index(msg, part) > 0, 'message without ' // part // ': "' // trim(msg) // '"')
  end subroutine expect_message

  subroutine write_namcouple()
    integer :: u, st
    call execute_command_line('rm -rf ' // trim(dir) // ' && mkdir -p ' // trim(dir), exitstat=st)
    call check(st == 0, 'cannot create ' // trim(dir))
    open (newunit=u, file=trim(dir) // '/namcouple', status='replace', action='write')
    write (u, '(a)') ' $NFIELDS', ' 1', ' $END', ' $RUNTIME', ' 3600', ' $END', ' $NNOREST', ' T', ' $END', ' $STRINGS'
    write (u, '(a)') 'F_OUT F_IN 1 3600 1 rst.nc EXPORTED', '12 6 12 6 fgrd fgr1', 'R 0 R 0', 'SCRIPR', &
                     'DISTWGT LR SCALAR LATLON 1 1'
    write (u, '(a)') ' $END'
    close (u)
  end subroutine write_namcouple

end program test_fortran_grid_files
