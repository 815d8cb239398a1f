! The OASIS-shaped calls of the Fortran module beyond the port test (tests/oasis_port): their
! errors (kinfo negative, the message kept and written to the component's log), an uncoupled
! component (oasis_init_comp's coupled = .false.), estuary_def_grid with OASIS's 2-D arrays
! (nx, ny) and corners (nx, ny, nc), OASIS3-MCT 4's estuary_get_intracomm with a list of names.
!
! Rank 0 is component 'atm' (an apple of the whole 8 x 6 lonlat grid, its grid given as 1-D
! arrays), the last rank the uncoupled 'idle', the others 'ocn' (boxes of rows, grid given as
! OASIS's 2-D arrays). atm sends a field through SCRIPR CONSERV between the two copies of the
! same grid: ocn must get it back unchanged, which needs its 2-D centres, corners and mask in
! the right places; and a bundle of 2 (put as a real(4) (npts, 2) array, got as a real(8)
! (nx, ny, 2) one). Run on 3 or more ranks.
program test_fortran_oasis
  use mpi
  use estuary
  use, intrinsic :: iso_fortran_env, only: real64, error_unit
  implicit none

  integer, parameter :: nx = 8, ny = 6, n = nx * ny
  integer :: ierr, kinfo, rank, nprocs, comp, local, lsize, lrank, part, bad_part, var, bvar, bad_var, info, i, j, k, b
  integer :: y0, y1, nrows, ncpl, intra, isize, roots(3), unit, ios, failures = 0, all_failures
  character(len=3) :: name
  character(len=256) :: dir
  character(len=1024) :: msg, line
  logical :: idle, atm
  real(real64), allocatable :: lon(:), lat(:), area(:), clo(:, :), cla(:, :), f(:), f2(:, :)
  real(real64), allocatable :: lon2(:, :), lat2(:, :), clo3(:, :, :), cla3(:, :, :), f3(:, :, :)
  real, allocatable :: fb(:, :)
  integer, allocatable :: mask(:)
  logical :: logged(4)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs < 3) then
    if (rank == 0) write (error_unit, '(a)') 'test_fortran_oasis: run on 3 or more ranks'
    call MPI_Finalize(ierr)
    error stop 1
  end if
  atm = rank == 0
  idle = rank == nprocs - 1
  name = 'ocn'
  if (atm) name = 'atm'
  if (idle) name = 'idl'
  write (dir, '(a,i0)') '/tmp/estuary_fortran_oasis_np', nprocs
  if (rank == 0) call write_namcouple()
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! every rank says whether it couples (OASIS's coupled): the uncoupled one gets a world of its own
  call estuary_init_comp(comp, name, ierr, coupled=.not. idle, config=trim(dir) // '/namcouple', directory=trim(dir))
  call ok(ierr, 'estuary_init_comp')
  call estuary_get_localcomm(local, kinfo)
  call ok(kinfo, 'estuary_get_localcomm')
  call MPI_Comm_size(local, lsize, ierr)
  call MPI_Comm_rank(local, lrank, ierr)

  if (idle) then
    ! an uncoupled component: its OASIS-shaped calls do nothing, and succeed
    call check(lsize == 1, 'the uncoupled component is not alone in its communicator')
    call estuary_def_partition(part, [1, 0, 5], kinfo, ig_size=5)
    call check(kinfo == OASIS_Ok .and. part == OASIS_NotDef, 'uncoupled: def_partition')
    call estuary_def_var(var, 'X', part, [1, 1], OASIS_Out, OASIS_Real, kinfo)
    call check(kinfo == OASIS_Ok .and. var == OASIS_NotDef, 'uncoupled: def_var')
    call estuary_enddef(kinfo)
    call check(kinfo == OASIS_Ok, 'uncoupled: enddef')
    allocate (f(5))
    f = 1
    call estuary_put(var, 0, f, info)
    call check(info == OASIS_Ok, 'uncoupled: put')
    call estuary_terminate(kinfo)
    call check(kinfo == OASIS_Ok, 'uncoupled: terminate')
    call finish()
  end if

  ! ---- partitions and grids: atm the whole grid (1-D arrays), ocn boxes of rows (2-D arrays) ----
  if (atm) then
    y0 = 0
    y1 = ny
  else
    y0 = lrank * ny / lsize
    y1 = (lrank + 1) * ny / lsize
  end if
  nrows = y1 - y0
  if (atm) then
    call estuary_def_partition(part, [1, 0, n], kinfo)  ! global size found over the coupling ranks
    call ok(kinfo, 'estuary_def_partition (apple)')
    call estuary_grid_gen('lonlat', nx, ny, .false., [1, 0, n], lon, lat, area, mask, clo, cla, ierr)
    call ok(ierr, 'estuary_grid_gen')
    call estuary_def_grid(comp, 'agrd', part, nx, ny, lon, lat, ierr, corner_lon=clo, corner_lat=cla, area=area)
    call ok(ierr, 'estuary_def_grid (default integers, 1-D)')
  else
    call estuary_def_partition(part, [2, y0 * nx, nx, nrows, nx], kinfo, n)
    call ok(kinfo, 'estuary_def_partition (box)')
    call estuary_grid_gen('lonlat', nx, ny, .false., [2, y0 * nx, nx, nrows, nx], lon, lat, area, mask, clo, cla, ierr)
    call ok(ierr, 'estuary_grid_gen')
    ! OASIS's layout: (nx, ny) centres and mask, (nx, ny, nc) corners
    lon2 = reshape(lon, [nx, nrows])
    lat2 = reshape(lat, [nx, nrows])
    clo3 = reshape(transpose(clo), [nx, nrows, size(clo, 1)])
    cla3 = reshape(transpose(cla), [nx, nrows, size(cla, 1)])
    call estuary_def_grid(comp, 'ogrd', part, nx, ny, lon2, lat2(:, 1:max(nrows - 1, 0)), ierr)
    call check(ierr == estuary_err_argument, '2-D def_grid with lon and lat of different shapes did not fail')
    call expect_message('lon and lat differ in shape')
    call estuary_def_grid(comp, 'ogrd', part, nx, ny, lon2, lat2, ierr, corner_lon=clo3, corner_lat=cla3, &
                          mask=reshape(mask, [nx, nrows]))
    call ok(ierr, 'estuary_def_grid (default integers, 2-D)')
  end if

  ! ---- errors of the OASIS-shaped calls: kinfo = -code, the message kept (and logged) ----
  call estuary_def_partition(bad_part, [7, 0, 3], kinfo, ig_size=10)
  call check(kinfo < 0, 'def_partition of strategy 7 did not fail')
  call estuary_def_var(bad_var, 'B', part, [1, 1], 5, OASIS_Real, kinfo)
  call check(kinfo == -estuary_err_argument, 'def_var with kinout 5 did not fail')
  call expect_message('kinout = 5 is neither OASIS_Out (20) nor OASIS_In (21)')
  call estuary_def_var(bad_var, 'B', part, [1, 1], OASIS_InOut, OASIS_Real, kinfo)
  call expect_message('OASIS_InOut is not supported')
  call estuary_def_var(bad_var, 'B', part, [1, 1], OASIS_Out, 3, kinfo)
  call check(kinfo < 0, 'def_var with ktype 3 did not fail')
  call expect_message('ktype = 3 is neither OASIS_Real (4) nor OASIS_Double (8)')
  call estuary_get_ncpl(0, ncpl, kinfo)
  call check(kinfo < 0, 'get_ncpl before enddef did not fail')
  call expect_message('get_ncpl before enddef')

  if (atm) then
    ! id_var_shape of one entry (OASIS reads none of it: LFRic's var_shape_0d(1), the SPOC tutorial)
    call estuary_def_var(var, 'A_G', part, [1, 1], OASIS_Out, [1], OASIS_Double, kinfo)
    call ok(kinfo, 'estuary_def_var')
    call estuary_def_var(bvar, 'A_B', part, [1, 2], OASIS_Out, OASIS_Real, kinfo)  ! a bundle of 2
  else
    ! a 2-D id_var_shape (OASIS's oasis_def_var_v1s2, MOM5's ishape(2,2))
    call estuary_def_var(var, 'O_G', part, [2, 1], OASIS_In, reshape([1, nx, 1, nrows], [2, 2]), OASIS_Double, kinfo)
    call ok(kinfo, 'estuary_def_var')
    call estuary_def_var(bvar, 'O_B', part, [2, 2], OASIS_In, [1, nx, 1, nrows], OASIS_Double, kinfo)
  end if
  call ok(kinfo, 'estuary_def_var (bundle)')
  call estuary_enddef(kinfo)
  call ok(kinfo, 'estuary_enddef')

  ! OASIS3-MCT 4's list form of oasis_get_intracomm; the list may not name this component
  if (atm) then
    call estuary_get_intracomm(intra, ['ocn', '   '], kinfo)
  else
    call estuary_get_intracomm(intra, ['atm'], kinfo)
  end if
  call ok(kinfo, 'estuary_get_intracomm (list)')
  call MPI_Comm_size(intra, isize, ierr)
  call check(isize == nprocs - 1, 'get_intracomm (list): wrong size')
  call MPI_Comm_free(intra, ierr)
  call estuary_get_intracomm(intra, [name], kinfo)
  call check(kinfo < 0, 'get_intracomm with this component in the list did not fail')
  call expect_message('names this one')
  call estuary_get_multi_intracomm(intra, ['atm', 'ocn'], roots, kinfo)
  call check(kinfo < 0, 'get_multi_intracomm with 2 names and 3 root_ranks did not fail')
  call expect_message('cdnam has 2 names but root_ranks 3 entries')

  ! ---- the fields through SCRIPR CONSERV between two copies of the grid: back unchanged ----
  ! (the bundle: real(4) (npts, 2) on atm, real(8) (nx, ny, 2) on ocn, as OASIS's put and get take)
  allocate (f(size(lon)))
  if (atm) then
    f = [(sin(0.3_real64 * i) + 2, i = 0, n - 1)]
    call estuary_put(var, 0, f, info)
    call check(info == OASIS_Sent, 'put: not OASIS_Sent')
    allocate (fb(n, 2))
    fb(:, 1) = [(real(i), i = 0, n - 1)]
    fb(:, 2) = [(real(1000 + 2 * i), i = 0, n - 1)]
    call estuary_put(bvar, 0, fb, info)
    call check(info == OASIS_Sent, 'put of the bundle: not OASIS_Sent')
  else
    allocate (f3(nx, nrows, 2))
    f3 = -1
    call estuary_get(bvar, 0, f3, info)
    call check(info == OASIS_Recvd, 'get of the bundle: not OASIS_Recvd')
    do b = 1, 2
      do j = 1, nrows
        do i = 1, nx
          k = (y0 + j - 1) * nx + i - 1
          if (abs(f3(i, j, b) - merge(real(k, real64), real(1000 + 2 * k, real64), b == 1)) > 1e-9_real64) &
            call check(.false., 'O_B: a bundle member differs from what atm sent')
        end do
      end do
    end do
    allocate (f2(nx, nrows))
    f2 = -1
    call estuary_get(var, 0, f2, info)
    call check(info == OASIS_Recvd, 'get: not OASIS_Recvd')
    do j = 1, nrows
      do i = 1, nx
        k = (y0 + j - 1) * nx + i - 1
        if (abs(f2(i, j) - (sin(0.3_real64 * k) + 2)) > 1e-10_real64) &
          call check(.false., 'O_G: a value differs from what atm sent (2-D grid misplaced?)')
      end do
    end do
  end if
  call estuary_terminate(kinfo)
  call ok(kinfo, 'estuary_terminate')

  ! every error above went to the component's log too, with its cause
  logged = .false.
  open (newunit=unit, file=trim(dir) // '/estuary.' // trim(name) // '.log', status='old', action='read', iostat=ios)
  call check(ios == 0, 'no log file')
  do while (ios == 0)
    read (unit, '(a)', iostat=ios) line
    if (ios /= 0) exit
    if (index(line, 'kinout = 5') > 0) logged(1) = .true.
    if (index(line, 'ktype = 3') > 0) logged(2) = .true.
    if (index(line, 'get_ncpl before enddef') > 0) logged(3) = .true.
    if (index(line, 'est_comp_def_partition') > 0) logged(4) = .true.
  end do
  if (ios /= -1) close (unit)
  call check(all(logged), 'an error is missing from the component''s log')
  call finish()

contains

  subroutine write_namcouple()
    integer :: u
    call execute_command_line('rm -rf ' // trim(dir) // ' && mkdir -p ' // trim(dir))
    open (newunit=u, file=trim(dir) // '/namcouple', status='replace', action='write')
    write (u, '(a)') ' $NFIELDS', '   2', ' $END', ' $RUNTIME', '   3600', ' $END', ' $STRINGS'
    write (u, '(a)') 'A_G O_G 1 3600 1 grst.nc EXPORTED', '8 6 8 6 agrd ogrd', 'P 0 P 0', 'SCRIPR', &
                     'CONSERV LR SCALAR LATLON 1 FRACAREA FIRST'
    write (u, '(a)') 'A_B O_B 1 3600 1 brst.nc EXPORTED', '8 6 8 6 agrd ogrd', 'P 0 P 0', 'SCRIPR', &
                     'CONSERV LR SCALAR LATLON 1 FRACAREA FIRST', ' $END'
    close (u)
  end subroutine write_namcouple

  subroutine ok(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    if (code /= 0) then
      call estuary_error_message(msg)
      call check(.false., what // ' failed: ' // trim(msg))
    end if
  end subroutine ok

  subroutine expect_message(text)
    character(len=*), intent(in) :: text
    call estuary_error_message(msg)
    call check(index(msg, text) > 0, 'message "' // trim(msg) // '" lacks "' // text // '"')
  end subroutine expect_message

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      write (error_unit, '(a,i0,a)') 'test_fortran_oasis: rank ', rank, ': ' // what
      failures = failures + 1
    end if
  end subroutine check

  subroutine finish()
    call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
      if (all_failures == 0) then
        write (*, '(a,i0,a)') 'test_fortran_oasis: OK on ', nprocs, ' ranks'
      else
        write (*, '(a,i0,a)') 'test_fortran_oasis: ', all_failures, ' failures'
      end if
    end if
    call MPI_Finalize(ierr)
    if (all_failures /= 0) error stop 1
    stop
  end subroutine finish

end program test_fortran_oasis
