! The install test's external Fortran program (tests/install/run.sh builds it against the
! installed package with find_package(estuary) and estuary::estuary_fortran). As an OASIS model
! would: no MPI_Init of its own (estuary_init_comp starts MPI, estuary_terminate ends it), the
! namcouple in the working directory; one component 'ext' on every rank puts X_OUT and gets it
! back as X_IN (LOCTRANS INSTANT) over an apple partition.
program external_fortran
  use mpi
  use estuary
  implicit none
  integer, parameter :: ng = 20
  integer :: comp, local, rank, nprocs, part, vout, vin, ierr, info, k, lo, hi, failures
  real(8), allocatable :: a(:), b(:)
  logical :: up
  character(len=512) :: msg

  failures = 0
  call estuary_init_comp(comp, 'ext', ierr)
  call need(ierr == 0, 'estuary_init_comp')
  call MPI_Initialized(up, ierr)
  call need(up, 'MPI not started by estuary_init_comp')
  call estuary_get_localcomm(comp, local, ierr)
  call MPI_Comm_rank(local, rank, ierr)
  call MPI_Comm_size(local, nprocs, ierr)
  lo = rank * ng / nprocs
  hi = (rank + 1) * ng / nprocs
  call estuary_def_partition(comp, part, [1, lo, hi - lo], ierr, ig_size=ng, name='g')
  call need(ierr == 0, 'estuary_def_partition')
  call estuary_def_var(comp, vout, 'X_OUT', part, estuary_out, 1, ierr)
  call need(ierr == 0, 'estuary_def_var X_OUT')
  call estuary_def_var(comp, vin, 'X_IN', part, estuary_in, 1, ierr)
  call need(ierr == 0, 'estuary_def_var X_IN')
  call estuary_enddef(comp, ierr)
  call need(ierr == 0, 'estuary_enddef')
  a = [(1000.0d0 + k, k = lo, hi - 1)]
  allocate (b(hi - lo))
  b = 0
  call estuary_put(comp, vout, 0, a, info, ierr)
  call need(ierr == 0 .and. info == estuary_Sent, 'estuary_put')
  call estuary_get(comp, vin, 0, b, info, ierr)
  call need(ierr == 0 .and. info == estuary_Recvd, 'estuary_get')
  call need(all(abs(b - a) <= 0), 'values got')
  call estuary_terminate(comp, ierr)
  call need(ierr == 0, 'estuary_terminate')
  call MPI_Finalized(up, ierr)
  call need(up, 'MPI not finalised by estuary_terminate')
  if (failures /= 0) error stop 1
  if (rank == 0) print '(a)', 'external Fortran program: passed'

contains

  subroutine need(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) return
    failures = failures + 1
    call estuary_error_message(msg)
    print '(a)', 'external Fortran program: ' // what // ' failed: ' // trim(msg)
  end subroutine need

end program external_fortran
