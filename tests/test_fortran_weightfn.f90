! SCRIPR CALLBACK from Fortran: a bind(c) weight function registered with
! estuary_register_weights on the target's ranks links target t to source mod(7 t + 3, ns) with
! weight 2 (after checking the query's source centres and its own targets); each target gets
! 2 x(mod(7 t + 3, ns)), computed here independently.
module weightfn_test
  use, intrinsic :: iso_c_binding
  use estuary
  implicit none
  integer, parameter :: ns = 40, nd = 24
contains
  integer(c_int) function weights(ctx, q, out) bind(c)
    type(c_ptr), value :: ctx, out
    type(estuary_weight_query), intent(in) :: q
    real(c_double), pointer :: slon(:), dlat(:)
    integer(c_int64_t), pointer :: didx(:)
    integer(c_int64_t) :: k, t
    integer(c_int) :: rc
    weights = 7
    if (q%nsrc /= ns .or. c_associated(ctx)) return
    call c_f_pointer(q%src_lon, slon, [q%nsrc])
    weights = 8
    if (any(abs(slon - 9.0_c_double * [(real(k, c_double), k = 0, ns - 1)]) > 1e-12_c_double)) return
    weights = 0
    if (q%ndst == 0) return
    call c_f_pointer(q%dst_index, didx, [q%ndst])
    call c_f_pointer(q%dst_lat, dlat, [q%ndst])
    do k = 1, q%ndst
      t = didx(k)
      if (abs(dlat(k) - real(t, c_double)) > 1e-12_c_double) weights = 9
      rc = estuary_links_add(out, t, mod(7 * t + 3, int(ns, c_int64_t)), 2.0_c_double)
    end do
  end function weights

  real(c_double) pure function src_value(i)
    integer, intent(in) :: i
    src_value = cos(0.2_c_double * i) + 0.01_c_double * i
  end function src_value
end module weightfn_test

program test_fortran_weightfn
  use mpi
  use estuary
  use weightfn_test
  use, intrinsic :: iso_fortran_env, only: int64
  implicit none
  integer :: ierr, rank, nprocs, half, nside, me, comp, sp, dp, sv, dv, info, k, failures, all, u
  integer(int64) :: slo, shi, dlo, dhi
  ! The function's address in a variable: as a constant actual argument gfortran would put it in
  ! read-only data, which needs a text relocation in a PIE.
  type(c_funptr) :: fn
  logical :: src, dst
  character(len=8) :: name
  character(len=256) :: dir
  real(c_double), allocatable :: lon(:), lat(:), v(:), got(:)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  failures = 0
  half = nprocs / 2
  src = nprocs == 1 .or. rank < half
  dst = nprocs == 1 .or. rank >= half
  name = merge('solo', merge('atm ', 'ocn ', src), nprocs == 1)
  nside = merge(1, merge(half, nprocs - half, src), nprocs == 1)
  me = merge(0, merge(rank, rank - half, src), nprocs == 1)
  write (dir, '(a,i0)') '/tmp/estuary_fortran_weightfn_np', nprocs
  if (rank == 0) then
    call execute_command_line('rm -rf ' // trim(dir) // ' && mkdir -p ' // trim(dir))
    open (newunit=u, file=trim(dir) // '/estuary.yaml', status='replace')
    write (u, '(a)') 'runtime: 3600', 'no_restart: true', 'timeout: 60', 'couplings:', &
      '  - source: {fields: [A_F], grid: agrd}', '    target: {fields: [O_F], grid: ogrd}', &
      '    period: 3600', '    transforms:', '      - scripr: {method: callback, name: fwd, grid_type: U}'
    close (u)
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call estuary_init_comp(comp, trim(name), ierr, world=MPI_COMM_WORLD, config=trim(dir) // '/estuary.yaml', &
                         directory=trim(dir))
  call ok(ierr, 'init')
  slo = me * ns / nside
  shi = (me + 1) * ns / nside
  dlo = me * nd / nside
  dhi = (me + 1) * nd / nside
  if (src) then
    call estuary_def_partition(comp, sp, [1_int64, slo, shi - slo], ierr, ig_size=int(ns, int64), name='agrd')
    call ok(ierr, 'def_partition agrd')
    lon = [(9.0_c_double * k, k = int(slo), int(shi) - 1)]
    lat = [(0.5_c_double * k, k = int(slo), int(shi) - 1)]
    call estuary_def_grid(comp, 'agrd', sp, int(ns, int64), 1_int64, lon, lat, ierr)
    call ok(ierr, 'def_grid agrd')
    call estuary_def_var(comp, sv, 'A_F', sp, estuary_out, 1, ierr)
    call ok(ierr, 'def_var A_F')
  end if
  if (dst) then
    call estuary_def_partition(comp, dp, [1_int64, dlo, dhi - dlo], ierr, ig_size=int(nd, int64), name='ogrd')
    call ok(ierr, 'def_partition ogrd')
    lon = [(15.0_c_double * k, k = int(dlo), int(dhi) - 1)]
    lat = [(1.0_c_double * k, k = int(dlo), int(dhi) - 1)]
    call estuary_def_grid(comp, 'ogrd', dp, int(nd, int64), 1_int64, lon, lat, ierr)
    call ok(ierr, 'def_grid ogrd')
    call estuary_def_var(comp, dv, 'O_F', dp, estuary_in, 1, ierr)
    call ok(ierr, 'def_var O_F')
    fn = c_funloc(weights)
    call estuary_register_weights(comp, 'fwd', fn, c_null_ptr, ierr)
    call ok(ierr, 'register_weights')
  end if
  call estuary_enddef(comp, ierr)
  call ok(ierr, 'enddef')
  if (src) then
    v = [(src_value(k), k = int(slo), int(shi) - 1)]
    call estuary_put(comp, sv, 0, v, info, ierr)
    call ok(ierr, 'put')
  end if
  if (dst) then
    allocate (got(dhi - dlo))
    call estuary_get(comp, dv, 0, got, info, ierr)
    call ok(ierr, 'get')
    do k = 1, int(dhi - dlo)
      if (abs(got(k) - 2.0_c_double * src_value(mod(7 * (int(dlo) + k - 1) + 3, ns))) > 1e-14_c_double) then
        failures = failures + 1
        print *, 'target ', int(dlo) + k - 1, ': got ', got(k)
      end if
    end do
  end if
  call estuary_terminate(comp, ierr)
  call MPI_Allreduce(failures, all, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,a,i0,a)', 'test_fortran_weightfn: ', merge('FAILED ', 'passed ', all > 0), all, ' failures'
  call MPI_Finalize(ierr)
  if (all > 0) error stop 1
contains
  subroutine ok(rc, what)
    integer, intent(in) :: rc
    character(len=*), intent(in) :: what
    character(len=1000) :: msg
    if (rc /= 0) then
      call estuary_error_message(msg)
      print *, 'FAILED ', what, ': ', trim(msg)
      failures = failures + 1
    end if
  end subroutine ok
end program test_fortran_weightfn
