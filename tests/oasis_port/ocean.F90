!------------------------------------------------------------------------------------------------
! An ocean model coupled through OASIS3-MCT, written as a user's model is (after the shape of
! OASIS3-MCT's tutorial model1/model2): OASIS source. tests/CMakeLists.txt builds it against
! estuary after `sed 's/oasis_/estuary_/g; s/mod_oasis/estuary/g'` and no other change, which is
! what this test proves possible (test_oasis_port.py runs it with atmos.F90 and checks what they
! exchanged).
!
! 4 processes: the first 3 take part in the coupling (oasis_create_couplcomm), each with a box of
! the 12 x 8 grid "ocnt"; the 4th is left out, as an I/O process would be.
!   O_SST    (out, 2-D real(8))  to the atmosphere (LAG, AVERAGE, MAPPING) and to a file (OUTPUT)
!   O_HEAT   (in,  2-D real(4))  from the atmosphere (ACCUMUL, MAPPING)
!   O_RUNOFF (in,  1-D real(8))  from the atmosphere, 10 river basins, a points partition
! Every get, every put (with oasis_put_inquire's prediction just before it), the queries and the
! communicators are written to ocean.out.<world rank> for the test to check.
!------------------------------------------------------------------------------------------------
PROGRAM ocean
  USE mod_oasis
  USE mpi
  IMPLICIT NONE
  !
  CHARACTER(len=5), PARAMETER :: comp_name = 'ocean'
  INTEGER, PARAMETER :: nlon = 12, nlat = 8, nbas = 10
  INTEGER, PARAMETER :: il_nb_time_steps = 12, delta_t = 1800
  INTEGER, PARAMETER :: ncoupled = 3            ! processes taking part in the coupling
  !
  INTEGER :: comp_id, localComm, couplComm, localComm2, world_rank, mype, npes, cpl_rank, icpl
  INTEGER :: ierror, info, inq, ib, itap_sec, i, j, k, w_unit, ncpl, dbg, icmp
  INTEGER :: part_id, part_rbas
  INTEGER :: var_id(3), var_nodims(2), var_actual_shape(4), var_shape_1(1), iwrite, id_uncpl
  REAL(kind=8), ALLOCATABLE :: glon(:,:), glat(:,:), gclo(:,:,:), gcla(:,:,:), gsrf(:,:)
  INTEGER, ALLOCATABLE :: gmsk(:,:)
  INTEGER :: il_paral(5)
  INTEGER, ALLOCATABLE :: il_points(:)
  INTEGER :: ioff, inx, iny                     ! this process's box: offset, extents
  INTEGER :: cpl_freqs(2)
  INTEGER :: inter_comm, intra_comm, multi_comm, nremote, nintra, intra_rank, root_ranks(2)
  INTEGER, ALLOCATABLE :: members(:)
  CHARACTER(len=5) :: cnames(2)
  CHARACTER(len=32) :: fname
  REAL(kind=8), ALLOCATABLE :: field_sst(:,:), field_runoff(:)
  REAL(kind=4), ALLOCATABLE :: field_heat(:,:)
  !
  !++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
  !   INITIALISATION
  !++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
  !
  CALL MPI_Init(ierror)
  CALL oasis_init_comp(comp_id, comp_name, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_init_comp failed', __FILE__, __LINE__)
  !
  CALL MPI_Comm_Rank(MPI_COMM_WORLD, world_rank, ierror)
  w_unit = 100 + world_rank
  WRITE(fname, '(A,I0)') 'ocean.out.', world_rank
  OPEN(w_unit, file=TRIM(fname), form='formatted')
  !
  CALL oasis_get_localcomm(localComm, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_localcomm failed', __FILE__, __LINE__)
  CALL MPI_Comm_Size(localComm, npes, ierror)
  CALL MPI_Comm_Rank(localComm, mype, ierror)
  WRITE(w_unit,'(A,3I6)') 'LOCAL', world_rank, mype, npes
  !
  ! Only the first ncoupled processes exchange coupling fields
  icpl = MPI_UNDEFINED
  IF (mype < ncoupled) icpl = 1
  CALL oasis_create_couplcomm(icpl, localComm, couplComm, ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_create_couplcomm failed', __FILE__, __LINE__)
  ! OASIS: oasis_get_localcomm now gives the coupling communicator
  CALL oasis_get_localcomm(localComm2, ierror)
  IF (couplComm /= MPI_COMM_NULL) THEN
    CALL MPI_Comm_compare(couplComm, localComm2, icmp, ierror)
    WRITE(w_unit,'(A,L2)') 'LOCALCOMM_IS_COUPLCOMM', icmp == MPI_IDENT
  ELSE
    WRITE(w_unit,'(A,L2)') 'LOCALCOMM_IS_COUPLCOMM', localComm2 == MPI_COMM_NULL
  ENDIF
  !
  IF (couplComm /= MPI_COMM_NULL) THEN
    CALL MPI_Comm_Rank(couplComm, cpl_rank, ierror)
    !
    !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
    !  PARTITION DEFINITION: a box each (x fastest), and the basins as points
    !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
    !
    SELECT CASE (cpl_rank)
    CASE (0)
      ioff = 0 ; inx = 6 ; iny = 5
      il_points = (/ 4, 3, 9, 0, 4 /)
    CASE (1)
      ioff = 6 ; inx = 6 ; iny = 5
      il_points = (/ 4, 4, 1, 2, 3, 8 /)
    CASE DEFAULT
      ioff = 5*nlon ; inx = nlon ; iny = 3
      il_points = (/ 4, 3, 5, 6, 7 /)
    END SELECT
    il_paral(CLIM_Strategy) = CLIM_Box
    il_paral(CLIM_Offset)   = ioff
    il_paral(CLIM_SizeX)    = inx
    il_paral(CLIM_SizeY)    = iny
    il_paral(CLIM_LdX)      = nlon
    CALL oasis_def_partition(part_id, il_paral, ierror)
    IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_partition failed', __FILE__, __LINE__)
    CALL oasis_def_partition(part_rbas, il_points, ierror, nbas, 'ocean_basins')
    IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_partition failed', __FILE__, __LINE__)
    !
    !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
    ! GRID WRITING, OASIS 5 style: this process's box with the partition id (grids.nc,
    ! masks.nc, areas.nc; written once, by the first run)
    !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
    !
    CALL oasis_start_grids_writing(iwrite)
    IF (iwrite == 1) THEN
      ALLOCATE(glon(inx,iny), glat(inx,iny), gclo(inx,iny,4), gcla(inx,iny,4), gmsk(inx,iny), gsrf(inx,iny))
      DO j = 1, iny
        DO i = 1, inx
          k = ioff + (j-1)*nlon + i - 1                ! global index, x fastest
          glon(i,j) = 30.0 * MOD(k, nlon)
          glat(i,j) = -70.0 + 20.0 * (k / nlon)
          gclo(i,j,:) = (/ glon(i,j) - 15., glon(i,j) + 15., glon(i,j) + 15., glon(i,j) - 15. /)
          gcla(i,j,:) = (/ glat(i,j) - 10., glat(i,j) - 10., glat(i,j) + 10., glat(i,j) + 10. /)
          gmsk(i,j) = 0                                 ! OASIS: 0 = valid (the OUTPUT test reads every point)
          gsrf(i,j) = 1.0d0 + k
        ENDDO
      ENDDO
      CALL oasis_write_grid('ocnt', nlon, nlat, glon, glat, part_id)
      CALL oasis_write_corner('ocnt', nlon, nlat, 4, gclo, gcla, part_id)
      CALL oasis_write_mask('ocnt', nlon, nlat, gmsk, part_id)
      CALL oasis_write_area('ocnt', nlon, nlat, gsrf, part_id)
      CALL oasis_terminate_grids_writing()
    ENDIF
    !
    !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
    ! DEFINITION OF THE LOCAL FIELDS
    !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
    !
    var_nodims(1) = 2    ! rank of the field arrays
    var_nodims(2) = 1    ! no bundle
    var_actual_shape = (/ 1, inx, 1, iny /)
    CALL oasis_def_var(var_id(1), 'O_SST', part_id, var_nodims, OASIS_Out, var_actual_shape, OASIS_Double, ierror)
    IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_var O_SST', __FILE__, __LINE__)
    CALL oasis_def_var(var_id(2), 'O_HEAT', part_id, var_nodims, OASIS_In, var_actual_shape, OASIS_Real, ierror)
    IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_var O_HEAT', __FILE__, __LINE__)
    var_nodims(1) = 1
    var_shape_1 = (/ nbas /)  ! shorter than 2 * var_nodims(1), as LFRic and the SPOC tutorial pass it
    CALL oasis_def_var(var_id(3), 'O_RUNOFF', part_rbas, var_nodims, OASIS_In, var_shape_1, OASIS_Double, ierror)
    IF (ierror /= PRISM_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_def_var O_RUNOFF', __FILE__, __LINE__)
    ! A field no namcouple entry names: OASIS_Var_Uncpl with ierror OASIS_Ok (NEMO tests the id)
    var_nodims(1) = 2
    CALL oasis_def_var(id_uncpl, 'O_NOT_COUPLED', part_id, var_nodims, OASIS_Out, var_actual_shape, OASIS_Double, ierror)
    WRITE(w_unit,'(A,2I6)') 'UNCPL', id_uncpl, ierror
    ! OASIS's abort keywords (MESSy's form), on a path never taken
    IF (ierror < -1000) CALL oasis_abort(id_compid=comp_id, cd_routine=comp_name, cd_message='unexpected', rcode=1)
  ENDIF
  !
  !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
  !         TERMINATION OF DEFINITION PHASE (every process)
  !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
  !
  CALL oasis_enddef(ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_enddef failed', __FILE__, __LINE__)
  !
  IF (couplComm /= MPI_COMM_NULL) THEN
    !
    ! What the namcouple says of the fields
    DO k = 1, 3
      CALL oasis_get_ncpl(var_id(k), ncpl, ierror)
      IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_ncpl failed', __FILE__, __LINE__)
      cpl_freqs = -1
      IF (k == 1) THEN
        CALL oasis_get_freqs(var_id(k), OASIS_Out, ncpl, cpl_freqs(1:ncpl), ierror)
      ELSE
        CALL oasis_get_freqs(var_id(k), OASIS_In, ncpl, cpl_freqs(1:ncpl), ierror)
      ENDIF
      IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_freqs failed', __FILE__, __LINE__)
      WRITE(w_unit,'(A,I3,I3,2I8)') 'FREQS', k, ncpl, cpl_freqs
    ENDDO
    CALL oasis_get_debug(dbg)
    WRITE(w_unit,'(A,I4)') 'DEBUG', dbg
    CALL oasis_set_debug(5)
    CALL oasis_get_debug(dbg)
    WRITE(w_unit,'(A,I4)') 'DEBUG', dbg
    !
    ! Communicators with the atmosphere
    CALL oasis_get_intercomm(inter_comm, 'atmos', ierror)
    IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_intercomm failed', __FILE__, __LINE__)
    CALL MPI_Comm_remote_size(inter_comm, nremote, ierror)
    WRITE(w_unit,'(A,I4)') 'INTER_REMOTE_SIZE', nremote
    CALL MPI_Comm_free(inter_comm, ierror)
    CALL oasis_get_intracomm(intra_comm, 'atmos', ierror)
    IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_intracomm failed', __FILE__, __LINE__)
    CALL MPI_Comm_size(intra_comm, nintra, ierror)
    CALL MPI_Comm_rank(intra_comm, intra_rank, ierror)
    ALLOCATE(members(nintra))
    CALL MPI_Allgather(world_rank, 1, MPI_INTEGER, members, 1, MPI_INTEGER, intra_comm, ierror)
    WRITE(w_unit,'(A,I4,A,20I4)') 'INTRA', intra_rank, ' :', members
    CALL MPI_Comm_free(intra_comm, ierror)
    cnames(1) = 'atmos'
    cnames(2) = comp_name
    CALL oasis_get_multi_intracomm(multi_comm, cnames, root_ranks, ierror)
    IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_get_multi_intracomm', __FILE__, __LINE__)
    CALL MPI_Allgather(world_rank, 1, MPI_INTEGER, members, 1, MPI_INTEGER, multi_comm, ierror)
    WRITE(w_unit,'(A,2I4,A,20I4)') 'MULTI', root_ranks, ' :', members
    CALL MPI_Comm_free(multi_comm, ierror)
    !
    !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
    ! SEND AND RECEIVE ARRAYS
    !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
    !
    ALLOCATE(field_sst(inx, iny), field_heat(inx, iny), field_runoff(il_points(2)))
    field_heat = -1.
    field_runoff = -1.
    DO ib = 1, il_nb_time_steps
      itap_sec = delta_t * (ib - 1)
      !
      CALL oasis_get(var_id(2), itap_sec, field_heat, info)
      WRITE(w_unit,'(A,I8,I4)') 'GET O_HEAT', itap_sec, info
      IF (info == OASIS_Recvd) THEN
        DO j = 1, iny
          DO i = 1, inx
            WRITE(w_unit,'(A,I8,I6,ES20.9E3)') 'V O_HEAT', itap_sec, ioff + (j-1)*nlon + (i-1), field_heat(i,j)
          ENDDO
        ENDDO
      ENDIF
      CALL oasis_get(var_id(3), itap_sec, field_runoff, info)
      WRITE(w_unit,'(A,I8,I4)') 'GET O_RUNOFF', itap_sec, info
      IF (info == OASIS_RecvOut) THEN
        DO k = 1, il_points(2)
          WRITE(w_unit,'(A,I8,I6,ES26.17E3)') 'V O_RUNOFF', itap_sec, il_points(2+k), field_runoff(k)
        ENDDO
      ENDIF
      !
      ! The model's time step: the sea surface temperature
      DO j = 1, iny
        DO i = 1, inx
          k = ioff + (j-1)*nlon + (i-1)
          field_sst(i,j) = sst(MOD(k, nlon), k / nlon, itap_sec)
        ENDDO
      ENDDO
      CALL oasis_put_inquire(var_id(1), itap_sec, inq)
      CALL oasis_put(var_id(1), itap_sec, field_sst, info)
      WRITE(w_unit,'(A,I8,2I4)') 'PUT O_SST', itap_sec, inq, info
    ENDDO
  ENDIF
  !
  !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
  !         TERMINATION
  !+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
  !
  WRITE(w_unit,'(A)') 'END'
  CLOSE(w_unit)
  CALL oasis_terminate(ierror)
  IF (ierror /= OASIS_Ok) CALL oasis_abort(comp_id, comp_name, 'oasis_terminate failed', __FILE__, __LINE__)
  CALL MPI_Finalize(ierror)

CONTAINS

  ! The analytic sea surface temperature at cell (i, j) (0-based) and time t (seconds).
  REAL(kind=8) FUNCTION sst(i, j, t)
    INTEGER, INTENT(in) :: i, j, t
    sst = 273.15d0 + 10.d0 * COS(3.14159265358979d0 * (j + 0.5d0) / nlat) + 0.5d0 * i + t / 3600.d0
  END FUNCTION sst

END PROGRAM ocean
