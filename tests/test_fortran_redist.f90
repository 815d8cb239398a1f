! The redistribution from Fortran through the module `estuary`: index decompositions (a block
! to a reversed cyclic one) with real(8) and real(4) arrays, a box decomposition of a 2-D array
! (column blocks to row blocks), missing indices filled, and the errors of bad decompositions.
! Every value is checked against the function of its global index computed here.
program test_fortran_redist
  use mpi
  use estuary
  use, intrinsic :: iso_fortran_env, only: real32, real64, int64, error_unit
  implicit none

  integer, parameter :: n = 1000, nx = 13, ny = 9
  integer :: ierr, rank, nprocs, k, lo, hi, m, nd, x, y, ylo, yhi, xlo, xhi
  integer :: failures = 0, all_failures
  integer, allocatable :: sidx(:), didx(:)
  type(estuary_decomp) :: s, d, bs, bd, even, bad
  type(estuary_redist) :: r, rb, rf
  real(real64), allocatable :: a8(:), b8(:), box_src(:, :), box_dst(:, :)
  real(real32), allocatable :: a4(:), b4(:)
  character(len=1024) :: msg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  ! a block of 0-based indices on the source, indices = rank mod nprocs (backwards) on the destination
  lo = rank * n / nprocs
  hi = (rank + 1) * n / nprocs
  sidx = [(k, k = lo, hi - 1)]
  didx = [(k, k = n - 1 - modulo(n - 1 - rank, nprocs), 0, -nprocs)]
  call estuary_decomp_new_indices(s, n, sidx, ierr)
  call ok(ierr, 'decomp_new_indices (src)')
  call estuary_decomp_new_indices(d, int(n, int64), int(didx, int64), ierr)
  call ok(ierr, 'decomp_new_indices (dst, int64)')
  call estuary_decomp_size(d, m, ierr)
  call ok(ierr, 'decomp_size')
  call check(m == size(didx), 'decomp_size')
  call estuary_redist_new(r, s, d, MPI_COMM_WORLD, ierr)
  call ok(ierr, 'redist_new')
  a8 = [(f(sidx(k)), k = 1, size(sidx))]
  allocate (b8(size(didx)))
  b8 = -1
  call estuary_redist_run(r, a8, b8, ierr)
  call ok(ierr, 'redist_run real(8)')
  do k = 1, size(didx)
    if (abs(b8(k) - f(didx(k))) > 0) call check(.false., 'real(8) value at an index')
  end do
  a4 = real(a8, real32)
  allocate (b4(size(didx)))
  b4 = -1
  call estuary_redist_run(r, a4, b4, ierr)
  call ok(ierr, 'redist_run real(4)')
  do k = 1, size(didx)
    if (transfer(b4(k), 0) /= transfer(real(f(didx(k)), real32), 0)) call check(.false., 'real(4) value at an index')
  end do
  call estuary_redist_free(r)

  ! a box: column blocks (x) of an nx x ny array to row blocks (y), in Fortran order
  xlo = rank * nx / nprocs
  xhi = (rank + 1) * nx / nprocs
  ylo = rank * ny / nprocs
  yhi = (rank + 1) * ny / nprocs
  call estuary_decomp_new_box(bs, [nx, ny], [xlo, 0], [xhi - xlo, ny], ierr)
  call ok(ierr, 'decomp_new_box (src)')
  call estuary_decomp_new_box(bd, [nx, ny], [0, ylo], [nx, yhi - ylo], ierr)
  call ok(ierr, 'decomp_new_box (dst)')
  call estuary_redist_new(rb, bs, bd, MPI_COMM_WORLD, ierr)
  call ok(ierr, 'redist_new (box)')
  allocate (box_src(xhi - xlo, ny), box_dst(nx, yhi - ylo))
  do y = 0, ny - 1
    do x = xlo, xhi - 1
      box_src(x - xlo + 1, y + 1) = f(x + nx * y)
    end do
  end do
  box_dst = -1
  nd = size(box_dst)
  call run_box(rb, box_src, box_dst, nd)
  do y = ylo, yhi - 1
    do x = 0, nx - 1
      if (abs(box_dst(x + 1, y - ylo + 1) - f(x + nx * y)) > 0) call check(.false., 'box value')
    end do
  end do
  call estuary_redist_free(rb)

  ! the source holds only the even indices: the odd ones of the destination get the fill value
  call estuary_decomp_new_indices(even, n, pack(sidx, modulo(sidx, 2) == 0), ierr)
  call ok(ierr, 'decomp_new_indices (even)')
  call estuary_redist_new(rf, even, d, MPI_COMM_WORLD, ierr)
  call check(ierr == estuary_err_plan, 'missing indices without a fill value accepted')
  call estuary_error_message(msg)
  call check(len_trim(msg) > 0, 'no message for missing indices')
  call estuary_redist_new(rf, even, d, MPI_COMM_WORLD, ierr, fill_value=-7.0_real64)
  call ok(ierr, 'redist_new (fill)')
  a8 = [(f(sidx(k)), k = 1, size(sidx))]
  a8 = pack(a8, modulo(sidx, 2) == 0)
  b8 = -1
  call estuary_redist_run(rf, a8, b8, ierr)
  call ok(ierr, 'redist_run (fill)')
  do k = 1, size(didx)
    if (modulo(didx(k), 2) == 0) then
      if (abs(b8(k) - f(didx(k))) > 0) call check(.false., 'filled run: value at an even index')
    else
      if (abs(b8(k) + 7) > 0) call check(.false., 'filled run: fill value at an odd index')
    end if
  end do
  call estuary_redist_free(rf)

  ! an index outside the global size: an error naming it
  call estuary_decomp_new_indices(bad, n, [0, n + 5], ierr)
  call check(ierr == estuary_err_decomp, 'index outside the global size accepted')
  call estuary_error_message(msg)
  call check(index(msg, '1005') > 0, 'message without the index: "' // trim(msg) // '"')
  call estuary_decomp_new_box(bad, [nx, ny], [0], [1, 1], ierr)
  call check(ierr == estuary_err_argument, 'box with mismatched ranks accepted')

  call estuary_decomp_free(s)
  call estuary_decomp_free(d)
  call estuary_decomp_free(bs)
  call estuary_decomp_free(bd)
  call estuary_decomp_free(even)
  call estuary_decomp_free(bad)

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (all_failures == 0) then
      print '(a)', 'test_fortran_redist: passed (0 failures)'
    else
      print '(a,i0,a)', 'test_fortran_redist: FAILED (', all_failures, ' failures)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (all_failures /= 0) error stop 1

contains

  pure real(real64) function f(g)
    integer, intent(in) :: g
    f = 1.5_real64 * g + sin(0.01_real64 * g)
  end function f

  ! A 2-D array passed as the 1-D array of its elements (sequence association).
  subroutine run_box(rr, src2, dst2, ndst)
    type(estuary_redist), intent(in) :: rr
    real(real64), intent(in) :: src2(*)
    integer, intent(in) :: ndst
    real(real64), intent(inout) :: dst2(ndst)
    integer :: e
    call estuary_redist_run(rr, src2(1:rr%nsrc), dst2, e)
    call ok(e, 'redist_run (box)')
  end subroutine run_box

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) return
    failures = failures + 1
    write (error_unit, '(a,i0,a)') 'test_fortran_redist: rank ', rank, ': ' // what
  end subroutine check

  subroutine ok(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    character(len=1024) :: text
    if (code == 0) return
    call estuary_error_message(text)
    call check(.false., what // ' failed: ' // trim(text))
  end subroutine ok

end program test_fortran_redist
