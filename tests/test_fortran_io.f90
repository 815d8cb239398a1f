! The I/O server from Fortran through the module `estuary` (estuary_io_*): open from a YAML file
! (serverless or server mode), a lon-lat grid on cyclic points, a 3-D field on a reversed cyclic
! decomposition written from rank-1 real(8) arrays, and on blocks of grid rows a 2-D field from
! rank-2 real(8) arrays, a 3-D field from rank-3 real(8) arrays and two real(4) fields (r: rank
! 2 and 1, stored as double; v: rank 3, stored as float); close; estuary_io_report on every rank (records, bytes,
! files, ranks, CPMIP measures); then read every record back with estuary_io_read into other
! decompositions (rank 1, 2 and 3, real(8) and real(4) arrays) and compare exactly with the
! function of the global index computed here; the errors of an unknown variable and a missing
! configuration.
!
!   mpirun -n P test_fortran_io DIR MODE WRITERS [xml]     (MODE: serverless or server)
! With `xml`, the same output set-up comes from an XIOS iodef.xml (estuary_io_open_xios): every
! check below then holds for the set-up read from XIOS XML.
program test_fortran_io
  use mpi
  use estuary
  use, intrinsic :: iso_fortran_env, only: real32, real64, int64
  implicit none

  integer, parameter :: nx = 8, ny = 6, nh = nx * ny, nlev = 2, n3 = nlev * nh, nsteps = 4
  real(real64), parameter :: dt = 3600.0_real64
  integer, parameter :: nfields = 5  ! t, u, w, r, v
  integer :: ierr, rank, nprocs, k, step, mrank, msize, mcomm, lo, hi, u, nw, i, j, l, jlo, nrl, bad
  integer :: failures = 0, all_failures
  integer(int64) :: want_bytes, want_records
  integer, allocatable :: gpts(:), tidx(:), bidx(:), idx2(:), idx3(:)
  real(real64), allocatable :: lon(:), lat(:), vals(:), got(:), u2(:,:), w3(:,:,:), gu2(:,:), gw3(:,:,:), gr1(:)
  real(real32), allocatable :: r2(:,:), v3(:,:,:), gr2(:,:), gv3(:,:,:), gu1(:)
  real(real64) :: doc, di
  type(estuary_io) :: io
  type(estuary_io_reader) :: rd
  type(estuary_decomp) :: tdec, bdec, d2, d3
  type(estuary_io_report_type) :: rep, rep0
  type(estuary_io_stats_type) :: st
  logical :: server
  character(len=512) :: dir, mode, writers, cfg, kind
  character(len=1024) :: msg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (command_argument_count() < 3) then
    if (rank == 0) print '(a)', 'usage: test_fortran_io DIR serverless|server WRITERS'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  call get_command_argument(1, dir)
  call get_command_argument(2, mode)
  call get_command_argument(3, writers)
  read (writers, *) nw
  kind = ''
  if (command_argument_count() > 3) call get_command_argument(4, kind)
  dir = trim(dir) // '/fortran_' // trim(mode) // '_w' // trim(writers)
  if (kind == 'xml') dir = trim(dir) // '_xml'
  cfg = trim(dir) // '.yaml'
  if (kind == 'xml') cfg = trim(dir) // '.xml'
  if (rank == 0 .and. kind == 'xml') then
    call execute_command_line('mkdir -p ' // trim(dir))
    open (newunit=u, file=trim(cfg), status='replace', action='write')
    write (u, '(a)') '<?xml version="1.0"?>'
    write (u, '(a)') '<simulation>'
    write (u, '(a)') '  <context id="fortran">'
    write (u, '(a)') '    <field_definition operation="instant" prec="8">'
    write (u, '(a)') '      <field id="t"/> <field id="u"/> <field id="w"/> <field id="r"/> <field id="v" prec="4"/>'
    write (u, '(a)') '    </field_definition>'
    write (u, '(a)') '    <file_definition>'
    write (u, '(a)') '      <file id="f_inst" name="@prefix@inst" output_freq="1h">'
    write (u, '(a)') '        <field field_ref="t"/> <field field_ref="u"/> <field field_ref="w"/>'
    write (u, '(a)') '        <field field_ref="r"/> <field field_ref="v"/>'
    write (u, '(a)') '      </file>'
    write (u, '(a)') '    </file_definition>'
    write (u, '(a)') '  </context>'
    write (u, '(a)') '</simulation>'
    close (u)
  else if (rank == 0) then
    call execute_command_line('mkdir -p ' // trim(dir))
    open (newunit=u, file=trim(cfg), status='replace', action='write')
    write (u, '(a)') 'output:'
    write (u, '(a)') '  mode: ' // trim(mode)
    write (u, '(a)') '  writers: ' // trim(writers)
    write (u, '(a)') '  directory: ' // trim(dir)
    write (u, '(a)') '  files:'
    write (u, '(a)') '    - name: f_inst'
    write (u, '(a)') '      output_freq: 1h'
    write (u, '(a)') '      fields: [{name: t, precision: double}, {name: u, precision: double}, ' // &
                     '{name: w, precision: double}, {name: r, precision: double}, {name: v, precision: float}]'
    close (u)
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! A missing configuration: estuary_err_io and estuary's message.
  call estuary_io_open(io, trim(dir) // '/none.yaml', ierr)
  call check(ierr == estuary_err_io, 'open of a missing configuration gives estuary_err_io')
  call estuary_error_message(msg)
  call check(index(msg, 'cannot read the configuration') > 0, 'message of a missing configuration: ' // trim(msg))

  if (kind == 'xml') then
    call estuary_io_open_xios(io, trim(cfg), ierr, comm=MPI_COMM_WORLD, substitutions='prefix=f_', &
                              mode=trim(mode), writers=nw, directory=trim(dir))
  else
    call estuary_io_open(io, trim(cfg), ierr, comm=MPI_COMM_WORLD)
  end if
  call ok(ierr, 'io_open')
  call estuary_io_is_server(io, server, ierr)
  call ok(ierr, 'io_is_server')
  if (server) then
    call estuary_io_serve(io, ierr)
    call ok(ierr, 'io_serve')
  else
    call estuary_io_model_comm(io, mcomm, ierr)
    call ok(ierr, 'io_model_comm')
    call MPI_Comm_rank(mcomm, mrank, ierr)
    call MPI_Comm_size(mcomm, msize, ierr)
    ! grid: cyclic points (0-based, longitude fastest); t: (level, point), reversed cyclic
    gpts = [(k, k = mrank, nh - 1, msize)]
    lon = [(45.0_real64 * modulo(gpts(k), nx), k = 1, size(gpts))]
    lat = [(-75.0_real64 + 30.0_real64 * (gpts(k) / nx), k = 1, size(gpts))]
    call estuary_io_def_grid(io, 'g', 'lonlat', nx, ny, gpts, lon, lat, ierr)
    call ok(ierr, 'io_def_grid')
    tidx = [(k, k = n3 - 1 - modulo(n3 - 1 - mrank, msize), 0, -msize)]
    call estuary_decomp_new_indices(tdec, n3, tidx, ierr)
    call ok(ierr, 'decomp_new_indices')
    call estuary_io_def_field(io, 't', 'g', tdec, ierr, levels=[10.0_real64, 20.0_real64], units='K', &
                              long_name='temperature')
    call ok(ierr, 'io_def_field')
    ! u, r: 2-D on a block of grid rows, (nx, rows) arrays; w, v: 3-D, (nx, rows, nlev) arrays
    call row_block(mrank, msize, jlo, nrl)
    call block_decomps(jlo, nrl, d2, d3)
    ! u with a mask of its own (every third grid point is land: written as the fill value 1e20)
    call estuary_io_def_field(io, 'u', 'g', d2, ierr, &
                              mask=[((merge(0, 1, mod(g2(i, j, jlo), 3) == 0), i = 1, nx), j = 1, nrl)])
    call ok(ierr, 'io_def_field u')
    call estuary_io_def_field(io, 'w', 'g', d3, ierr, levels=[10.0_real64, 20.0_real64])
    call ok(ierr, 'io_def_field w')
    call estuary_io_def_field(io, 'r', 'g', d2, ierr)
    call ok(ierr, 'io_def_field r')
    call estuary_io_def_field(io, 'v', 'g', d3, ierr, levels=[10.0_real64, 20.0_real64])
    call ok(ierr, 'io_def_field v')
    call estuary_io_enddef(io, ierr)
    call ok(ierr, 'io_enddef')
    allocate (vals(size(tidx)), u2(nx, nrl), w3(nx, nrl, nlev), r2(nx, nrl), v3(nx, nrl, nlev))
    do step = 0, nsteps - 1
      vals = [(f(tidx(k), step), k = 1, size(tidx))]
      call estuary_io_write(io, 't', (step + 1) * dt, vals, ierr)
      call ok(ierr, 'io_write')
      do l = 1, nlev
        do j = 1, nrl
          do i = 1, nx
            if (l == 1) then
              u2(i, j) = fu(g2(i, j, jlo), step)
              r2(i, j) = h(g2(i, j, jlo), step)
            end if
            w3(i, j, l) = fw(g3(i, j, l, jlo), step)
            v3(i, j, l) = h(n3 + g3(i, j, l, jlo), step)
          end do
        end do
      end do
      call estuary_io_write(io, 'u', (step + 1) * dt, u2, ierr)          ! real(8), rank 2
      call ok(ierr, 'io_write u')
      call estuary_io_write(io, 'w', (step + 1) * dt, w3, ierr)          ! real(8), rank 3
      call ok(ierr, 'io_write w')
      if (modulo(step, 2) == 0) then
        call estuary_io_write(io, 'r', (step + 1) * dt, r2, ierr)        ! real(4), rank 2
      else
        call estuary_io_write(io, 'r', (step + 1) * dt, reshape(r2, [size(r2)]), ierr)  ! real(4), rank 1
      end if
      call ok(ierr, 'io_write r')
      call estuary_io_write(io, 'v', (step + 1) * dt, v3, ierr)          ! real(4), rank 3
      call ok(ierr, 'io_write v')
    end do
    ! A rank-2 array of the wrong size: estuary_err_io.
    call estuary_io_write(io, 'r', dt, r2(:, 1:0), ierr)
    call check(ierr == estuary_err_io, 'write of a rank-2 array of the wrong size gives estuary_err_io')
    call estuary_io_flush(io, ierr)
    call ok(ierr, 'io_flush')
    call estuary_io_close(io, ierr)
    call ok(ierr, 'io_close')
    ! This rank's counters: a record handed over per field and step, no derived fields.
    call estuary_io_stats(io, st, ierr)
    call ok(ierr, 'io_stats')
    call check(st%records_handed_over == nsteps * nfields .and. st%model_io_s > 0 .and. st%derived_s <= 0, &
               'stats: records_handed_over ' // itoa(st%records_handed_over) // ', model_io_s > 0, derived_s 0')
    call estuary_decomp_free(tdec)
    call estuary_decomp_free(d2)
    call estuary_decomp_free(d3)
  end if
  ! The run's metrics, collective over every rank (servers too) before free: given run times,
  ! then the default (time since open). Bytes: every record of the fields, float for v (the
  ! lon-lat grid's 1-D lon and lat are written at file creation and not counted).
  call estuary_io_report(io, rep, ierr, run_s=2 * dt, run_without_io_s=1.8_real64 * dt)
  call ok(ierr, 'io_report')
  want_bytes = nsteps * (8_int64 * (n3 + nh + n3 + nh) + 4_int64 * n3)
  call check(rep%bytes_written == want_bytes, 'report: bytes_written ' // itoa(rep%bytes_written) // &
             ', want ' // itoa(want_bytes))
  ! Records: every writer counts each one it takes part in: the fields'.
  want_records = int(nw, int64) * (nsteps * nfields)
  call check(rep%records_written == want_records, 'report: records_written ' // itoa(rep%records_written) // &
             ', want ' // itoa(want_records))
  call check(rep%files_created == 1, 'report: files_created ' // itoa(rep%files_created))
  call check(rep%ranks == nprocs .and. rep%writers == nw, 'report: ranks ' // itoa(int(rep%ranks, int64)) // &
             ', writers ' // itoa(int(rep%writers, int64)))
  if (trim(mode) == 'server') then
    call check(rep%model_ranks == nprocs - nw, 'report: model_ranks (server mode)')
  else
    call check(rep%model_ranks == nprocs, 'report: model_ranks (serverless)')
  end if
  call check(abs(rep%run_s - 2 * dt) <= 0 .and. abs(rep%run_without_io_s - 1.8_real64 * dt) <= 0, &
             'report: run_s and run_without_io_s as given')
  call check(abs(rep%core_hours - 2.0_real64 * nprocs) <= 0, 'report: core_hours')
  doc = (2.0_real64 * nprocs - 1.8_real64 * rep%model_ranks) / (1.8_real64 * rep%model_ranks)
  di = real(want_bytes, real64) / 1e9_real64 / (2.0_real64 * nprocs)
  call check(abs(rep%data_output_cost - doc) <= 1e-12_real64 * abs(doc), 'report: data_output_cost')
  call check(abs(rep%data_intensity - di) <= 1e-12_real64 * di, 'report: data_intensity')
  call check(rep%model_io_s > 0 .and. rep%write_s > 0 .and. rep%write_mb_per_s > 0, 'report: times')
  call estuary_io_report(io, rep0, ierr)
  call ok(ierr, 'io_report (default run time)')
  call check(rep0%run_s > 0 .and. rep0%run_s < 3600 .and. abs(rep0%run_without_io_s) <= 0 .and. &
             rep0%bytes_written == want_bytes, 'report: default run time since open')
  call estuary_io_free(io)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! Read back on every rank into blocks of (level, point).
  lo = rank * n3 / nprocs
  hi = (rank + 1) * n3 / nprocs
  bidx = [(k, k = lo, hi - 1)]
  call estuary_decomp_new_indices(bdec, n3, bidx, ierr)
  call ok(ierr, 'decomp_new_indices (read)')
  call estuary_io_reader_open(rd, trim(dir) // '/f_inst.nc', ierr)
  call ok(ierr, 'io_reader_open')
  allocate (got(size(bidx)))
  do step = 0, nsteps - 1
    got = -1
    call estuary_io_read(rd, 't', (step + 1) * dt, bdec, got, ierr)
    call ok(ierr, 'io_read')
    do k = 1, size(bidx)
      if (abs(got(k) - f(bidx(k), step)) > 0) then
        call check(.false., 'value read back')
        exit
      end if
    end do
  end do
  ! Periodic: 4 records repeat every 4 h, so 5 h reads the record at 1 h.
  call estuary_io_reader_set_period(rd, nsteps * dt, ierr)
  call ok(ierr, 'io_reader_set_period')
  call estuary_io_read(rd, 't', (nsteps + 1) * dt, bdec, got, ierr)
  call ok(ierr, 'io_read (periodic)')
  call check(maxval(abs(got - [(f(bidx(k), 0), k = 1, size(bidx))]), mask=.true.) <= 0, &
             'periodic read wraps to the first record')
  ! An unknown variable: estuary_err_io naming it, on every rank.
  call estuary_io_read(rd, 'nope', dt, bdec, got, ierr)
  call check(ierr == estuary_err_io, 'read of an unknown variable gives estuary_err_io')
  call estuary_error_message(msg)
  call check(index(msg, 'nope') > 0, 'message names the variable: ' // trim(msg))
  ! u, w, r, v on blocks of grid rows in reverse rank order (every rank, servers too), into rank
  ! 2 and 3 arrays; r also into a rank-1 real(8) array (r is stored as double: the file holds
  ! the real(4) values converted exactly), u also into a rank-1 real(4) array (u's values are
  ! exact in real(4)).
  call row_block(nprocs - 1 - rank, nprocs, jlo, nrl)
  call block_decomps(jlo, nrl, d2, d3)
  allocate (gu2(nx, nrl), gw3(nx, nrl, nlev), gr2(nx, nrl), gv3(nx, nrl, nlev), gr1(nx * nrl), gu1(nx * nrl))
  do step = 0, nsteps - 1
    gu2 = -1
    gw3 = -1
    gr2 = -1
    gv3 = -1
    gr1 = -1
    gu1 = -1
    call estuary_io_read(rd, 'u', (step + 1) * dt, d2, gu2, ierr)
    call ok(ierr, 'io_read u (real(8), rank 2)')
    call estuary_io_read(rd, 'w', (step + 1) * dt, d3, gw3, ierr)
    call ok(ierr, 'io_read w (real(8), rank 3)')
    call estuary_io_read(rd, 'r', (step + 1) * dt, d2, gr2, ierr)
    call ok(ierr, 'io_read r (real(4), rank 2)')
    call estuary_io_read(rd, 'v', (step + 1) * dt, d3, gv3, ierr)
    call ok(ierr, 'io_read v (real(4), rank 3)')
    call estuary_io_read(rd, 'r', (step + 1) * dt, d2, gr1, ierr)
    call ok(ierr, 'io_read r (real(8), rank 1)')
    call estuary_io_read(rd, 'u', (step + 1) * dt, d2, gu1, ierr)
    call ok(ierr, 'io_read u (real(4), rank 1)')
    bad = 0
    do l = 1, nlev
      do j = 1, nrl
        do i = 1, nx
          if (l == 1) then
            k = i + (j - 1) * nx
            if (abs(gu2(i, j) - ufile(g2(i, j, jlo), step)) > 0) bad = bad + 1
            if (abs(gr2(i, j) - h(g2(i, j, jlo), step)) > 0) bad = bad + 1
            if (abs(gr1(k) - real(h(g2(i, j, jlo), step), real64)) > 0) bad = bad + 1
            if (abs(gu1(k) - real(ufile(g2(i, j, jlo), step), real32)) > 0) bad = bad + 1
          end if
          if (abs(gw3(i, j, l) - fw(g3(i, j, l, jlo), step)) > 0) bad = bad + 1
          if (abs(gv3(i, j, l) - h(n3 + g3(i, j, l, jlo), step)) > 0) bad = bad + 1
        end do
      end do
    end do
    call check(bad == 0, 'u, w, r, v read back exactly (step ' // itoa(int(step, int64)) // '): ' // &
               itoa(int(bad, int64)) // ' values differ')
  end do
  ! A failed real(4) read leaves the array as it was.
  gr2 = 7
  call estuary_io_read(rd, 'nope', dt, d2, gr2, ierr)
  call check(ierr == estuary_err_io, 'real(4) read of an unknown variable gives estuary_err_io')
  call check(maxval(abs(gr2 - 7), mask=.true.) <= 0, 'a failed real(4) read leaves the array as it was')
  call estuary_decomp_free(d2)
  call estuary_decomp_free(d3)
  call estuary_io_reader_free(rd)
  call estuary_decomp_free(bdec)

  if (kind /= 'xml') call derived_stats()

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (all_failures == 0) then
      print '(a)', 'test_fortran_io: passed'
    else
      print '(a,i0,a)', 'test_fortran_io: FAILED (', all_failures, ' failures)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (all_failures /= 0) error stop 1

contains

  ! A derived field (expr:, serverless on every rank): its time is estuary_io_stats' derived_s,
  ! its values the expression's. A build without muParser refuses the expression at open,
  ! naming muParser: nothing to measure then.
  subroutine derived_stats()
    type(estuary_io) :: dio
    type(estuary_io_stats_type) :: ds_st
    type(estuary_decomp) :: ds
    character(len=600) :: dcfg
    integer :: uu, e, kk, s
    integer, allocatable :: pts(:)
    real(real64), allocatable :: plon(:), plat(:), pv(:), back(:)
    dcfg = trim(dir) // '_derived.yaml'
    if (rank == 0) then
      open (newunit=uu, file=trim(dcfg), status='replace', action='write')
      write (uu, '(a)') 'output:'
      write (uu, '(a)') '  directory: ' // trim(dir) // '_derived'
      write (uu, '(a)') '  files:'
      write (uu, '(a)') '    - name: d'
      write (uu, '(a)') '      output_freq: 1h'
      write (uu, '(a)') '      fields: [{name: s2, expr: "2 * s + 1", precision: double}]'
      close (uu)
    end if
    call MPI_Barrier(MPI_COMM_WORLD, e)
    call estuary_io_open(dio, trim(dcfg), e)
    if (e /= 0) then
      call estuary_error_message(msg)
      call check(index(msg, 'muParser') > 0, 'open with a derived field: ' // trim(msg))
      return
    end if
    pts = [(kk, kk = rank, nh - 1, nprocs)]
    plon = [(45.0_real64 * modulo(pts(kk), nx), kk = 1, size(pts))]
    plat = [(-75.0_real64 + 30.0_real64 * (pts(kk) / nx), kk = 1, size(pts))]
    call estuary_io_def_grid(dio, 'g', 'lonlat', nx, ny, pts, plon, plat, e)
    call ok(e, 'derived: io_def_grid')
    call estuary_decomp_new_indices(ds, nh, pts, e)
    call ok(e, 'derived: decomp_new_indices')
    call estuary_io_def_field(dio, 's', 'g', ds, e)
    call ok(e, 'derived: io_def_field')
    call estuary_io_enddef(dio, e)
    call ok(e, 'derived: io_enddef')
    do s = 1, 2
      pv = [(f(pts(kk), s), kk = 1, size(pts))]
      call estuary_io_write(dio, 's', s * dt, pv, e)
      call ok(e, 'derived: io_write')
    end do
    call estuary_io_close(dio, e)
    call ok(e, 'derived: io_close')
    call estuary_io_stats(dio, ds_st, e)
    call ok(e, 'derived: io_stats')
    call check(ds_st%derived_s > 0 .and. ds_st%derived_s <= ds_st%model_io_s, 'stats: derived_s > 0 with a derived field')
    call estuary_io_free(dio)
    call estuary_io_reader_open(rd, trim(dir) // '_derived/d.nc', e)
    call ok(e, 'derived: io_reader_open')
    allocate (back(size(pts)))
    back = -1
    call estuary_io_read(rd, 's2', 2 * dt, ds, back, e)
    call ok(e, 'derived: io_read')
    call check(maxval(abs(back - [(2 * f(pts(kk), 2) + 1, kk = 1, size(pts))]), mask=.true.) <= 0, &
               'derived field s2 = 2 * s + 1 read back')
    call estuary_io_reader_free(rd)
    call estuary_decomp_free(ds)
  end subroutine derived_stats

  ! exact in real(8) (no rounding that the compiler could do differently here and there)
  pure real(real64) function f(g, step)
    integer, intent(in) :: g, step
    f = 1000.0_real64 + 0.5_real64 * g + 0.25_real64 * step - 3.0_real64 * modulo(7 * g, 11)
  end function f

  ! u and w: f shifted (exact in real(8); u also in real(4))
  pure real(real64) function fu(g, step)
    integer, intent(in) :: g, step
    fu = f(g, step) - 512.0_real64
  end function fu

  ! u as the file holds it: the fill value on u's own masked points
  pure real(real64) function ufile(g, step)
    integer, intent(in) :: g, step
    ufile = merge(1.0e20_real64, fu(g, step), mod(g, 3) == 0)
  end function ufile

  pure real(real64) function fw(g, step)
    integer, intent(in) :: g, step
    fw = f(g, step) + 4096.0_real64
  end function fw

  ! r and v: real(4) values that are not short binary fractions (g / 7), computed in real(4)
  pure real(real32) function h(g, step)
    integer, intent(in) :: g, step
    h = real(g, real32) / 7.0_real32 + 0.5_real32 * real(step, real32) - 30.0_real32
  end function h

  ! 0-based global index of element (i, j) of a (nx, rows) block starting at grid row jlo
  pure integer function g2(i, j, jlo)
    integer, intent(in) :: i, j, jlo
    g2 = (jlo + j - 1) * nx + i - 1
  end function g2

  ! ... and of element (i, j, l) of a (nx, rows, nlev) block: level * nh + point
  pure integer function g3(i, j, l, jlo)
    integer, intent(in) :: i, j, l, jlo
    g3 = (l - 1) * nh + g2(i, j, jlo)
  end function g3

  ! grid rows [jlo, jlo + nrl) of part p of np
  subroutine row_block(p, np, jlo, nrl)
    integer, intent(in) :: p, np
    integer, intent(out) :: jlo, nrl
    jlo = p * ny / np
    nrl = (p + 1) * ny / np - jlo
  end subroutine row_block

  ! the decompositions of a (nx, nrl) and a (nx, nrl, nlev) block, in Fortran array order
  subroutine block_decomps(jlo, nrl, d2, d3)
    integer, intent(in) :: jlo, nrl
    type(estuary_decomp), intent(inout) :: d2, d3
    integer :: i, j, l
    idx2 = [((g2(i, j, jlo), i = 1, nx), j = 1, nrl)]
    idx3 = [(((g3(i, j, l, jlo), i = 1, nx), j = 1, nrl), l = 1, nlev)]
    call estuary_decomp_new_indices(d2, nh, idx2, ierr)
    call ok(ierr, 'decomp_new_indices (2-D block)')
    call estuary_decomp_new_indices(d3, n3, idx3, ierr)
    call ok(ierr, 'decomp_new_indices (3-D block)')
  end subroutine block_decomps

  function itoa(v) result(s)
    integer(int64), intent(in) :: v
    character(len=:), allocatable :: s
    character(len=24) :: b
    write (b, '(i0)') v
    s = trim(b)
  end function itoa

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) return
    failures = failures + 1
    write (*, '(a,i0,a)') 'test_fortran_io: rank ', rank, ': check failed: ' // what
  end subroutine check

  subroutine ok(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    character(len=1024) :: m
    if (code == 0) return
    call estuary_error_message(m)
    call check(.false., what // ': ' // trim(m))
  end subroutine ok

end program test_fortran_io
