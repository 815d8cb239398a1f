!> The coupled toy of `make demo` (examples/toy_atm_ocn.cpp) written in Fortran with the module
!> `estuary`: an atmosphere on a reduced Gaussian grid and an ocean on a tripolar grid with land
!> exchange two fields each way every coupling hour (configuration: toy_atm_ocn.yaml).
!> Either side may run with the C++ or the Python toy (toy_atm_ocn.py) as its partner:
!>
!>   mpirun -n 4 toy_atm_ocn_f [run_folder]                 one executable, half the ranks each
!>   mpirun -n 2 toy_atm_ocn_f atmos [run_folder] : -n 2 toy_atm_ocn ocean [run_folder]
!>   mpirun -n 2 python3 toy_atm_ocn.py atmos [run_folder] : -n 2 toy_atm_ocn_f ocean [run_folder]
!>
!> Same grids, partitions, physics and order of calls as the C++ toy, so that every field
!> received is bit for bit the one of the all-C++ run (tests/toy_mixed.py checks it).
!> The configuration: $ESTUARY_CONFIG when set, else toy_atm_ocn.yaml of the source tree
!> (copied into the run folder as estuary.yaml, as the C++ toy does).
program toy_atm_ocn_f
  use mpi
  use estuary
  use, intrinsic :: iso_fortran_env, only: real64, int64, error_unit
  implicit none
  real(real64), parameter :: pi = 3.14159265358979323846_real64
  character(len=*), parameter :: default_config = ESTUARY_DEMO_CONFIG
  character(len=4096) :: folder, arg
  character(len=8) :: role
  character(len=16) :: outs(2), ins(2)
  integer :: ierr, ierror, rank, nranks, nargs, iarg, comp, local, lrank, lsize, part, k, info, exchanges
  integer :: out_id(2), in_id(2)
  integer(int64) :: n, nx, ny, lo, hi, j0, j1
  integer, allocatable :: ig(:), mask(:)
  real(real64), allocatable :: lon(:), lat(:), area(:), clo(:, :), cla(:, :), a(:), b(:), ga(:), gb(:)
  real(real64) :: t, dt, runtime, t0, setup_s, got, sent, err, worst, local_sum
  logical :: atm

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  nargs = command_argument_count()
  iarg = 1
  role = ''
  if (nargs >= 1) then
    call get_command_argument(1, arg)
    if (arg == 'atmos' .or. arg == 'ocean') then
      role = arg(1:5)
      iarg = 2
    end if
  end if
  folder = 'estuary_demo'
  if (nargs >= iarg) call get_command_argument(iarg, folder)
  if (role == '') then
    role = 'ocean'
    if (rank < max(1, nranks / 2)) role = 'atmos'
  end if
  if (nranks < 2) then
    if (rank == 0) write (error_unit, '(a)') 'toy_atm_ocn_f: run it on 2 or more ranks (mpirun -n 4 toy_atm_ocn_f)'
    call MPI_Finalize(ierr)
    stop 2
  end if
  if (rank == 0) then  ! the run folder, with the configuration as estuary.yaml (as the C++ toy)
    call execute_command_line('mkdir -p "' // trim(folder) // '"')
    call copy_file(default_config, trim(folder) // '/estuary.yaml')
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! The component: finds estuary.yaml in the run folder (or $ESTUARY_CONFIG); restarts and
  ! the log go there too.
  call estuary_init_comp(comp, trim(role), ierror, directory=trim(folder))
  call check('estuary_init_comp')
  call estuary_get_localcomm(comp, local, ierror)
  call check('estuary_get_localcomm')
  call MPI_Comm_rank(local, lrank, ierr)
  call MPI_Comm_size(local, lsize, ierr)
  atm = role == 'atmos'

  ! Grid and partition, as an OASIS model defines them (ig_paral arrays).
  if (atm) then  ! apple: a contiguous range of points (whole latitude rows stay together)
    call estuary_grid_info('reduced_gaussian', 32, 0, .false., n, nx, ny, k, ierror)
    call check('estuary_grid_info')
    lo = lrank * n / lsize
    hi = (lrank + 1) * n / lsize
    ig = [1, int(lo), int(hi - lo)]
    call estuary_grid_gen('reduced_gaussian', 32, 0, .false., ig, lon, lat, area, mask, clo, cla, ierror, nx, ny)
  else  ! box: bands of rows of the 180 x 140 grid
    nx = 180
    ny = 140
    n = nx * ny
    j0 = lrank * ny / lsize
    j1 = (lrank + 1) * ny / lsize
    ig = [2, int(j0 * nx), int(nx), int(j1 - j0), int(nx)]
    call estuary_grid_gen('tripolar', 180, 140, .true., ig, lon, lat, area, mask, clo, cla, ierror, nx, ny)
  end if
  call check('estuary_grid_gen')
  call estuary_def_partition(comp, part, ig, ierror, ig_size=int(n))
  call check('estuary_def_partition')
  if (atm) then
    call estuary_def_grid(comp, 'rgg', part, nx, ny, lon, lat, ierror, corner_lon=clo, corner_lat=cla, mask=mask, &
                          area=area)
    outs = [character(len=16) :: 'HEATFLX', 'FRESHW']
    ins = [character(len=16) :: 'A_SST', 'A_ICE']
  else
    call estuary_def_grid(comp, 'torc', part, nx, ny, lon, lat, ierror, corner_lon=clo, corner_lat=cla, mask=mask, &
                          area=area)
    outs = [character(len=16) :: 'SST', 'ICEFRAC']
    ins = [character(len=16) :: 'O_QNS', 'O_EMP']
  end if
  call check('estuary_def_grid')
  do k = 1, 2
    call estuary_def_var(comp, out_id(k), trim(outs(k)), part, estuary_out, 1, ierror)
    call check('estuary_def_var')
  end do
  do k = 1, 2
    call estuary_def_var(comp, in_id(k), trim(ins(k)), part, estuary_in, 1, ierror)
    call check('estuary_def_var')
  end do
  t0 = MPI_Wtime()
  call estuary_enddef(comp, ierror)
  call check('estuary_enddef')
  setup_s = MPI_Wtime() - t0
  call estuary_get_runtime(comp, runtime, ierror)
  call check('estuary_get_runtime')

  dt = 3600.0_real64
  if (atm) dt = 1200.0_real64
  allocate (a(size(lon)), b(size(lon)), ga(size(lon)), gb(size(lon)))
  ga = 0
  gb = 0
  worst = 0
  exchanges = 0
  t = 0
  do while (t < runtime)
    ! Receive first (the coupler returns at once between coupling times), then step, then send.
    call estuary_get(comp, in_id(1), t, ga, info, ierror)
    call check('estuary_get')
    if (info /= estuary_Ok) then
      exchanges = exchanges + 1
      if (.not. atm) then  ! the ocean checks that the heat flux kept its global integral
        local_sum = sum(ga * area, mask=mask /= 0)
        call MPI_Allreduce(local_sum, got, 1, MPI_DOUBLE_PRECISION, MPI_SUM, local, ierr)
        call estuary_last_source_integral(comp, in_id(1), sent, ierror)
        call check('estuary_last_source_integral')
        err = abs(got - sent) / max(abs(sent), 1e-300_real64)
        worst = max(worst, err)
        if (lrank == 0 .and. mod(nint(t, int64), 21600_int64) == 0) &
          write (*, '(a, f6.0, a, es19.12, a, es19.12, a, es8.1)') 'ocean  t=', t, ' s  got O_QNS: integral ', got, &
            ', atmosphere sent ', sent, ', relative error ', err
      end if
    end if
    call estuary_get(comp, in_id(2), t, gb, info, ierror)
    call check('estuary_get')
    if (atm) then
      a = heat_flux(lon, lat, t)
      b = 1e-5_real64 * cos(lat * pi / 90.0_real64)
    else
      a = sst(lon, lat, t)
      b = max(0.0_real64, min(1.0_real64, (abs(lat) - 60.0_real64) / 20.0_real64))
    end if
    call estuary_put(comp, out_id(1), t, a, info, ierror)
    call check('estuary_put')
    call estuary_put(comp, out_id(2), t, b, info, ierror)
    call check('estuary_put')
    t = t + dt
  end do
  call estuary_terminate(comp, ierror)
  call check('estuary_terminate')
  if (lrank == 0) then
    write (*, '(a, a, i0, a, i0, a, f5.2, a, i0, a)') trim(role), ': ', n, ' points on ', lsize, ' ranks (Fortran), set-up ', &
      setup_s, ' s, ', exchanges, ' coupling exchanges received'
    do k = 1, 2
      write (*, '(4a)') trim(role), ': received ', trim(ins(k))
    end do
    do k = 1, 2
      write (*, '(4a)') trim(role), ': sent ', trim(outs(k))
    end do
    ! An all-reduce sum in rank order, not the C++ toy's reproducible sum: a looser bound.
    if (.not. atm) write (*, '(a, es8.1)') 'ocean: worst relative conservation error of the heat flux over the run: ', worst
  end if
  k = 0
  if (.not. atm .and. lrank == 0 .and. worst > 1e-12_real64) then
    write (error_unit, '(a, es8.1, a)') 'ocean: conservation error ', worst, ' exceeds 1e-12'
    k = 1
  end if
  call MPI_Allreduce(MPI_IN_PLACE, k, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(2a)') 'log and restart files in ', trim(folder)
  call MPI_Finalize(ierr)
  if (k /= 0) error stop 1

contains

  !> The analytic "physics" of the C++ toy, term for term in the same order.
  elemental real(real64) function sst(lon, lat, t)
    real(real64), intent(in) :: lon, lat, t
    sst = 288.0_real64 - 30.0_real64 * sin(lat * pi / 180.0_real64) * sin(lat * pi / 180.0_real64) + &
          2.0_real64 * cos((lon + t / 240.0_real64) * pi / 180.0_real64)
  end function sst

  elemental real(real64) function heat_flux(lon, lat, t)
    real(real64), intent(in) :: lon, lat, t
    heat_flux = 150.0_real64 * cos(lat * pi / 180.0_real64) + &
                40.0_real64 * sin((2.0_real64 * lon - t / 120.0_real64) * pi / 180.0_real64)
  end function heat_flux

  !> Copies a (small) file byte for byte.
  subroutine copy_file(from, to)
    character(len=*), intent(in) :: from, to
    character(len=:), allocatable :: bytes
    integer :: u, n
    open (newunit=u, file=from, access='stream', form='unformatted', status='old', action='read')
    inquire (unit=u, size=n)
    allocate (character(len=n) :: bytes)
    read (u) bytes
    close (u)
    open (newunit=u, file=to, access='stream', form='unformatted', status='replace', action='write')
    write (u) bytes
    close (u)
  end subroutine copy_file

  !> Stops the whole run with estuary's message when the last call failed (oasis_abort).
  subroutine check(routine)
    character(len=*), intent(in) :: routine
    character(len=1024) :: msg
    if (ierror == 0) return
    call estuary_error_message(msg)
    call estuary_abort(comp, routine // ': ' // trim(msg))
  end subroutine check

end program toy_atm_ocn_f
