!------------------------------------------------------------------------------------------------
! An atmosphere model coupled through OASIS3-MCT, written as a user's model is: OASIS source,
! built against estuary after `sed 's/oasis_/estuary_/g; s/mod_oasis/estuary/g'` only (see
! ocean.F90, its partner, and test_oasis_port.py).
!
! 2 processes, an apple each of the 8 x 6 grid "atmt" and an orange each of the 10 river basins.
! oasis_init_comp starts MPI here (the program does not) and oasis_terminate ends it.
!   A_SST    (in,  1-D real(8))  from the ocean: one ocean step late, averaged, remapped
!   A_HEAT   (out, 1-D real(4))  to the ocean: accumulated over 2 hours, remapped
!   A_RUNOFF (out, 1-D real(8))  to the ocean, per basin (EXPOUT)
! Every get and put, with oasis_put_inquire's prediction, goes to atmos.out.<world rank>.
!------------------------------------------------------------------------------------------------
PROGRAM atmos
  USE MOD_OASIS            ! written in capitals, as MESONH and MESSy do
  USE mpi
  IMPLICIT NONE
  !
  CHARACTER(len=5), PARAMETER :: comp_name = 'atmos'
  INTEGER, PARAMETER :: nlon = 8, nlat = 6, ntot = nlon * nlat
  INTEGER, PARAMETER :: il_nb_time_steps = 18, delta_t = 1200
  !
  INTEGER :: comp_id, localComm, world_rank, mype, npes, ierror, info, inq, ib, itap_sec, i, k, w_unit
  INTEGER :: ncpl, cpl_freqs(1), dbg
  INTEGER :: part_id, part_rbas, var_id(3), var_nodims(2), var_actual_shape(2)
  INTEGER :: il_paral(3), il_orange(6), ioff, isize, nlocal_bas
  INTEGER, ALLOCATABLE :: bas_index(:)
  INTEGER :: inter_comm, intra_comm, multi_comm, nremote, nintra, intra_rank, root_ranks(3)
  INTEGER, ALLOCATABLE :: members(:)
  CHARACTER(len=8) :: cnames(3)
  CHARACTER(len=32) :: fname
  REAL(kind=8), ALLOCATABLE :: field_sst(:), field_runoff(:)
  REAL(kind=4), ALLOCATABLE :: field_heat(:)
  !
  CALL oasis_init_comp(comp_id, comp_name, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_init_comp failed', __FILE__, __LINE__)
  CALL MPI_Comm_Rank(MPI_COMM_WORLD, world_rank, ierror)
  w_unit = 100 + world_rank
  WRITE(fname, '(A,I0)') 'atmos.out.', world_rank
  OPEN(w_unit, file=TRIM(fname), form='formatted')
  !
  CALL oasis_get_localcomm(localComm, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_localcomm failed', __FILE__, __LINE__)
  CALL MPI_Comm_Size(localComm, npes, ierror)
  CALL MPI_Comm_Rank(localComm, mype, ierror)
  WRITE(w_unit,'(A,3I6)') 'LOCAL', world_rank, mype, npes
  !
  ! Partitions: an apple of the grid, an orange of the basins ({0-2, 6-7} and {3-5, 8-9})
  IF (mype == 0) THEN
    ioff = 0 ; isize = 20
    il_orange = (/ 3, 2, 0, 3, 6, 2 /)
  ELSE
    ioff = 20 ; isize = ntot - 20
    il_orange = (/ 3, 2, 3, 3, 8, 2 /)
  ENDIF
  il_paral = (/ 1, ioff, isize /)
  CALL oasis_def_partition(part_id, il_paral, ierror, ig_size=ntot, name='atmos_grid')
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_partition failed', __FILE__, __LINE__)
  CALL oasis_def_partition(part_rbas, il_orange, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_partition failed', __FILE__, __LINE__)
  nlocal_bas = il_orange(4) + il_orange(6)
  ALLOCATE(bas_index(nlocal_bas))
  bas_index = (/ (il_orange(3) + k, k = 0, il_orange(4) - 1), (il_orange(5) + k, k = 0, il_orange(6) - 1) /)
  !
  ! Fields (OASIS_Out below in lower case: the renaming makes it estuary's own out flag)
  var_nodims = (/ 1, 1 /)
  var_actual_shape = (/ 1, isize /)
  CALL oasis_def_var(var_id(1), 'A_SST', part_id, var_nodims, OASIS_In, var_actual_shape, OASIS_Double, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_var A_SST', __FILE__, __LINE__)
  CALL oasis_def_var(var_id(2), 'A_HEAT', part_id, var_nodims, OASIS_Out, OASIS_Real, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_var A_HEAT', __FILE__, __LINE__)
  CALL oasis_def_var(var_id(3), 'A_RUNOFF', part_rbas, var_nodims, oasis_out, (/ 1, nlocal_bas /), OASIS_Double, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_var A_RUNOFF', __FILE__, __LINE__)
  !
  CALL OASIS_ENDDEF(ierror)   ! capitals too
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_enddef failed', __FILE__, __LINE__)
  !
  DO k = 1, 3
    CALL oasis_get_ncpl(var_id(k), ncpl, ierror)
    IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_ncpl failed', __FILE__, __LINE__)
    IF (k == 1) THEN
      CALL oasis_get_freqs(var_id(k), OASIS_In, ncpl, cpl_freqs, ierror)
    ELSE
      CALL oasis_get_freqs(var_id(k), OASIS_Out, ncpl, cpl_freqs, ierror)
    ENDIF
    IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_freqs failed', __FILE__, __LINE__)
    WRITE(w_unit,'(A,I3,I3,I8)') 'FREQS', k, ncpl, cpl_freqs
  ENDDO
  CALL oasis_get_debug(dbg, ierror)
  WRITE(w_unit,'(A,I4)') 'DEBUG', dbg
  !
  ! Communicators with the ocean (in the order the ocean creates them)
  CALL oasis_get_intercomm(inter_comm, 'ocean', ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_intercomm failed', __FILE__, __LINE__)
  CALL MPI_Comm_remote_size(inter_comm, nremote, ierror)
  WRITE(w_unit,'(A,I4)') 'INTER_REMOTE_SIZE', nremote
  CALL MPI_Comm_free(inter_comm, ierror)
  CALL oasis_get_intracomm(intra_comm, 'ocean', ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_intracomm failed', __FILE__, __LINE__)
  CALL MPI_Comm_size(intra_comm, nintra, ierror)
  CALL MPI_Comm_rank(intra_comm, intra_rank, ierror)
  ALLOCATE(members(nintra))
  CALL MPI_Allgather(world_rank, 1, MPI_INTEGER, members, 1, MPI_INTEGER, intra_comm, ierror)
  WRITE(w_unit,'(A,I4,A,20I4)') 'INTRA', intra_rank, ' :', members
  CALL MPI_Comm_free(intra_comm, ierror)
  ! the list in another order than the ocean's, with a blank entry (skipped)
  cnames(1) = comp_name
  cnames(2) = ' '
  cnames(3) = 'ocean'
  CALL oasis_get_multi_intracomm(multi_comm, cnames, root_ranks, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_multi_intracomm', __FILE__, __LINE__)
  CALL MPI_Allgather(world_rank, 1, MPI_INTEGER, members, 1, MPI_INTEGER, multi_comm, ierror)
  WRITE(w_unit,'(A,3I4,A,20I4)') 'MULTI', root_ranks, ' :', members
  CALL MPI_Comm_free(multi_comm, ierror)
  !
  ALLOCATE(field_sst(isize), field_heat(isize), field_runoff(nlocal_bas))
  field_sst = -1.d0
  DO ib = 1, il_nb_time_steps
    itap_sec = delta_t * (ib - 1)
    !
    CALL oasis_get(var_id(1), itap_sec, field_sst, info)
    WRITE(w_unit,'(A,I8,I4)') 'GET A_SST', itap_sec, info
    IF (info == OASIS_Recvd .OR. info == OASIS_FromRest) THEN
      DO i = 1, isize
        WRITE(w_unit,'(A,I8,I6,ES26.17E3)') 'V A_SST', itap_sec, ioff + i - 1, field_sst(i)
      ENDDO
    ENDIF
    !
    ! The model's time step: a heat flux (values a real(4) holds exactly) and the runoff
    DO i = 1, isize
      k = ioff + i - 1
      field_heat(i) = REAL(100 + 3 * MOD(k, nlon) - 2 * (k / nlon), 4) + 0.25 * (itap_sec / delta_t)
    ENDDO
    DO i = 1, nlocal_bas
      field_runoff(i) = 1000.d0 * bas_index(i) + itap_sec / 60.d0
    ENDDO
    CALL oasis_put_inquire(var_id(2), itap_sec, inq)
    CALL oasis_put(var_id(2), itap_sec, field_heat, info)
    WRITE(w_unit,'(A,I8,2I4)') 'PUT A_HEAT', itap_sec, inq, info
    CALL oasis_put_inquire(var_id(3), itap_sec, inq)
    CALL oasis_put(var_id(3), itap_sec, field_runoff, info)
    WRITE(w_unit,'(A,I8,2I4)') 'PUT A_RUNOFF', itap_sec, inq, info
  ENDDO
  !
  WRITE(w_unit,'(A)') 'END'
  CLOSE(w_unit)
  CALL oasis_terminate(ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_terminate failed', __FILE__, __LINE__)
END PROGRAM atmos
