! estuary_create_couplcomm (OASIS's oasis_create_couplcomm) and the grid routines from Fortran.
! Rank 0 is the component 'atm', the other ranks 'ocn'; only the first ceil((n-1)/2) ranks of
! 'ocn' take part in the coupling: they get a coupling communicator (in local rank order), the
! others MPI_COMM_NULL, and only they define the partition (an apple over the coupling
! communicator) and the field. atm sends a 1-D field every hour (INSTANT); each coupled ocn rank
! checks every value it gets against the formula. Also: estuary_grid_info / estuary_grid_gen
! (sizes, shapes, areas summing to 4 pi over the ranks), estuary_def_grid's argument checks,
! estuary_get_runtime, and the errors of a bad component id. Run on 3 or more ranks.
program test_fortran_couplcomm
  use mpi
  use estuary
  use, intrinsic :: iso_fortran_env, only: real64, int64, error_unit
  implicit none

  integer, parameter :: n = 101
  real(real64), parameter :: period = 3600, runtime = 3 * 3600
  integer :: ierr, rank, nprocs, comp, local, lrank, lsize, ncoupled, icpl, cplcomm, crank, csize, sum_ranks
  integer :: part, var, info, lo, hi, i, ncorner, failures = 0, all_failures
  integer(int64) :: gsize, nx, ny
  logical :: atm, coupled
  character(len=256) :: dir
  character(len=1024) :: msg
  real(real64) :: t, rt, asum
  real(real64), allocatable :: f(:), lon(:), lat(:), area(:), clo(:, :), cla(:, :)
  integer, allocatable :: mask(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs < 3) then
    if (rank == 0) write (error_unit, '(a)') 'test_fortran_couplcomm: run on 3 or more ranks'
    call MPI_Finalize(ierr)
    error stop 1
  end if
  atm = rank == 0
  write (dir, '(a,i0)') '/tmp/estuary_fortran_couplcomm_np', nprocs
  if (rank == 0) call write_namcouple()
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! a bad component id: an error naming the routine, no crash
  call estuary_create_couplcomm(1, MPI_COMM_WORLD, cplcomm, ierr, comp_id=42)
  call check(ierr == estuary_err_argument, 'create_couplcomm with component id 42 did not fail')
  call expect_message('estuary_create_couplcomm: component id 42')

  if (atm) then
    call estuary_init_comp(comp, 'atm', ierr, config=trim(dir) // '/namcouple', directory=trim(dir))
  else
    call estuary_init_comp(comp, 'ocn', ierr, config=trim(dir) // '/namcouple', directory=trim(dir))
  end if
  call ok(ierr, 'estuary_init_comp')
  call estuary_get_localcomm(comp, local, ierr)
  call ok(ierr, 'estuary_get_localcomm')
  call MPI_Comm_rank(local, lrank, ierr)
  call MPI_Comm_size(local, lsize, ierr)

  ! the coupling communicator: all of atm; the first half (rounded up) of ocn
  ncoupled = lsize
  if (.not. atm) ncoupled = (lsize + 1) / 2
  coupled = lrank < ncoupled
  icpl = MPI_UNDEFINED
  if (coupled) icpl = 1
  call estuary_create_couplcomm(icpl, local, cplcomm, ierr)  ! the default component: the only one
  call ok(ierr, 'estuary_create_couplcomm')
  if (coupled) then
    call check(cplcomm /= MPI_COMM_NULL, 'a coupled rank got MPI_COMM_NULL')
    call MPI_Comm_rank(cplcomm, crank, ierr)
    call MPI_Comm_size(cplcomm, csize, ierr)
    call check(csize == ncoupled, 'coupling communicator of the wrong size')
    call check(crank == lrank, 'coupling communicator not in the local rank order')
    call MPI_Allreduce(lrank, sum_ranks, 1, MPI_INTEGER, MPI_SUM, cplcomm, ierr)
    call check(sum_ranks == ncoupled * (ncoupled - 1) / 2, 'coupling communicator holds other ranks')
  else
    call check(cplcomm == MPI_COMM_NULL, 'a rank outside the coupling got a communicator')
  end if

  ! grid recipes: sizes and shapes; the areas of a whole grid add up to the sphere's 4 pi
  call estuary_grid_info('tripolar', 180, 140, .true., gsize, nx, ny, ncorner, ierr)
  call ok(ierr, 'estuary_grid_info')
  call check(gsize == 25200 .and. nx == 180 .and. ny == 140 .and. ncorner == 4, 'tripolar 180 x 140: wrong info')
  call estuary_grid_info('reduced_gaussian', 32, 0, .false., gsize, nx, ny, ncorner, ierr)
  call ok(ierr, 'estuary_grid_info')
  call check(gsize == 5574 .and. nx == 5574 .and. ny == 1, 'reduced_gaussian 32: wrong info')
  call estuary_grid_info('hexagons', 3, 3, .false., gsize, nx, ny, ncorner, ierr)
  call check(ierr == estuary_err_argument, 'an unknown grid kind did not fail')
  call expect_message('unknown grid kind "hexagons"')
  lo = rank * 20 * 10 / nprocs
  hi = (rank + 1) * 20 * 10 / nprocs
  call estuary_grid_gen('lonlat', 20, 10, .false., [1, lo, hi - lo], lon, lat, area, mask, clo, cla, ierr)
  call ok(ierr, 'estuary_grid_gen')
  call check(size(lon) == hi - lo .and. size(clo, 1) == 4 .and. size(clo, 2) == hi - lo .and. all(mask == 1), &
             'lonlat 20 x 10: wrong local arrays')
  do i = 1, size(lon)  ! cell lo + i - 1: longitude index fastest, centres at 18 degrees steps
    call check(abs(lon(i) - 18.0_real64 * modulo(lo + i - 1, 20)) < 1e-9_real64, 'lonlat: wrong longitude')
  end do
  call MPI_Allreduce(sum(area), asum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(abs(asum - 16 * atan(1.0_real64)) < 1e-10_real64, 'lonlat: areas do not add up to 4 pi')

  ! the coupled field, on the coupled ranks only
  if (coupled) then
    lo = lrank * n / ncoupled
    hi = (lrank + 1) * n / ncoupled
    call estuary_def_partition(comp, part, [1, lo, hi - lo], ierr, ig_size=n)
    call ok(ierr, 'estuary_def_partition')
    call estuary_def_grid(comp, 'g', part, int(n, int64), 1_int64, lon(1:1), lat, ierr)
    call check(ierr == estuary_err_argument, 'def_grid with lon and lat of different sizes did not fail')
    call expect_message('estuary_def_grid: grid "g": lon has 1 points')
    if (atm) then
      call estuary_def_var(comp, var, 'A_F', part, estuary_out, 1, ierr)
    else
      call estuary_def_var(comp, var, 'O_F', part, estuary_in, 1, ierr)
    end if
    call ok(ierr, 'estuary_def_var')
  end if
  call estuary_enddef(comp, ierr)
  call ok(ierr, 'estuary_enddef')
  call estuary_get_runtime(comp, rt, ierr)
  call ok(ierr, 'estuary_get_runtime')
  call check(abs(rt - runtime) < 0.5_real64, 'estuary_get_runtime: not the namcouple''s $RUNTIME')

  if (coupled) then
    allocate (f(hi - lo))
    t = 0
    do while (t < runtime)
      if (atm) then
        f = [(value(lo + i - 1, t), i = 1, hi - lo)]
        call estuary_put(comp, var, t, f, info, ierr)
        call ok(ierr, 'estuary_put')
      else
        f = -1
        call estuary_get(comp, var, t, f, info, ierr)
        call ok(ierr, 'estuary_get')
        call check(info == estuary_Recvd, 'get at a coupling time: info is not estuary_Recvd')
        do i = 1, hi - lo
          if (abs(f(i) - value(lo + i - 1, t)) > 0) call check(.false., 'O_F: a value differs from what atm sent')
        end do
      end if
      t = t + period
    end do
    call MPI_Comm_free(cplcomm, ierr)
  end if
  call estuary_terminate(comp, ierr)
  call ok(ierr, 'estuary_terminate')

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (all_failures == 0) then
      write (*, '(a,i0,a)') 'test_fortran_couplcomm: OK on ', nprocs, ' ranks'
    else
      write (*, '(a,i0,a)') 'test_fortran_couplcomm: ', all_failures, ' failures'
    end if
  end if
  call MPI_Finalize(ierr)
  if (all_failures /= 0) error stop 1

contains

  real(real64) function value(g, tt)
    integer, intent(in) :: g
    real(real64), intent(in) :: tt
    value = 1000.0_real64 * g + tt / 3600.0_real64
  end function value

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) return
    failures = failures + 1
    write (error_unit, '(a,i0,a)') 'test_fortran_couplcomm: rank ', rank, ': ' // what
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
    character(len=64) :: gline
    call execute_command_line('rm -rf ' // trim(dir) // ' && mkdir -p ' // trim(dir), exitstat=st)
    call check(st == 0, 'cannot create ' // trim(dir))
    write (gline, '(i0,a,i0,a)') n, ' 1 ', n, ' 1 agrd ogrd'
    open (newunit=u, file=trim(dir) // '/namcouple', status='replace', action='write')
    write (u, '(a)') ' $NFIELDS', ' 1', ' $END', ' $RUNTIME', ' 10800', ' $END', ' $STRINGS'
    write (u, '(a)') 'A_F O_F 1 3600 1 rst.nc EXPORTED', trim(gline), 'R 0 R 0', 'LOCTRANS', 'INSTANT'
    write (u, '(a)') ' $END'
    close (u)
  end subroutine write_namcouple

end program test_fortran_couplcomm
