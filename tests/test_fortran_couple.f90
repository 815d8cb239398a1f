! The coupler from Fortran through the module `estuary`: two components in one executable
! (atm on the first half of the ranks, ocn on the rest; one rank: 'solo' with both sides) couple
! four fields over OASIS ig_paral partitions (apple and points on a 1-D grid, box and orange on
! a 12 x 7 grid): real(8) and real(4), arrays of rank 1 to 3, bundles, integer and real(8) times,
! LOCTRANS ACCUMUL + BLASNEW, INSTANT (identity), AVERAGE. Every value got is checked against a
! reference computed here, every info code against OASIS's; bad calls return ierror /= 0 with a
! message naming the field or partition.
program test_fortran_couple
  use mpi
  use estuary
  use, intrinsic :: iso_fortran_env, only: real32, real64, error_unit
  implicit none

  integer, parameter :: n1 = 97, nx = 12, ny = 7, ng = nx * ny, nb3 = 3, nb4 = 2
  real(real64), parameter :: period = 3600, runtime = 10800, dt = 1200
  integer :: ierr, rank, nprocs, half, nside, me, comp, local, lsize, k, b, i, x, y, t, info, s
  logical :: src, dst
  character(len=8) :: name
  character(len=256) :: dir
  character(len=1024) :: msg
  integer :: failures = 0, all_failures
  ! grid 1 (1-D): apple on the source, the same segment backwards (points) on the destination
  integer :: lo, hi, n
  integer, allocatable :: pts(:), orange(:), oidx(:)
  ! grid 2 (12 x 7): a box of columns on the source, an orange of 5-point segments on the destination
  integer :: xlo, xhi, mx, nloc, nseg
  integer :: p_agrd = -1, p_ogrd = -1, p_abox = -1, p_oora = -1, p_bad
  integer :: v_af = -1, v_of = -1, v_ag = -1, v_og = -1, v_ab = -1, v_ob = -1, v_as = -1, v_os = -1, v_bad
  real(real64), allocatable :: f1(:), g1(:), f3(:, :, :), g3(:, :), bad3(:, :)
  real(real32), allocatable :: f2(:, :), g2(:), f4(:, :), g4(:, :, :), fr2(:, :)
  real(real64) :: time, acc, want, cnt
  real(real32) :: want4

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  half = nprocs / 2
  src = nprocs == 1 .or. rank < half
  dst = nprocs == 1 .or. rank >= half
  if (nprocs == 1) then
    name = 'solo'
    nside = 1
    me = 0
  else if (src) then
    name = 'atm'
    nside = half
    me = rank
  else
    name = 'ocn'
    nside = nprocs - half
    me = rank - half
  end if
  write (dir, '(a,i0)') '/tmp/estuary_fortran_couple_np', nprocs
  if (rank == 0) call write_namcouple()
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  call estuary_init_comp(comp, trim(name), ierr, world=MPI_COMM_WORLD, &
                         config=trim(dir) // '/namcouple', directory=trim(dir))
  call ok(ierr, 'estuary_init_comp')
  call estuary_get_localcomm(comp, local, ierr)
  call ok(ierr, 'estuary_get_localcomm')
  call MPI_Comm_size(local, lsize, ierr)
  call check(lsize == nside, 'component size')

  lo = me * n1 / nside
  hi = (me + 1) * n1 / nside
  n = hi - lo
  xlo = me * nx / nside
  xhi = (me + 1) * nx / nside
  mx = xhi - xlo
  ! the orange: segments s = 0, 1, ... of 5 points, segment s on side rank mod(s, nside)
  nseg = 0
  allocate (orange(2), oidx(0))
  do s = me, ng, nside
    if (5 * s >= ng) exit
    nseg = nseg + 1
    orange = [orange, 5 * s, min(5, ng - 5 * s)]
    oidx = [oidx, [(5 * s + k, k = 0, min(5, ng - 5 * s) - 1)]]
  end do
  orange(1:2) = [3, nseg]
  nloc = size(oidx)

  if (src) then
    call estuary_def_partition(comp, p_agrd, [1, lo, n], ierr, ig_size=n1, name='agrd')
    call ok(ierr, 'def_partition agrd')
    ! no ig_size: the global size inferred as OASIS does (the last rank's box ends at ng)
    call estuary_def_partition(comp, p_abox, [2, xlo, mx, ny, nx], ierr, name='abox')
    call ok(ierr, 'def_partition abox')
    call estuary_def_var(comp, v_af, 'A_F', p_agrd, estuary_out, 1, ierr)
    call ok(ierr, 'def_var A_F')
    call estuary_def_var(comp, v_ag, 'A_G', p_abox, estuary_out, 1, ierr)
    call ok(ierr, 'def_var A_G')
    call estuary_def_var(comp, v_ab, 'A_B', p_abox, estuary_out, nb3, ierr)
    call ok(ierr, 'def_var A_B')
    call estuary_def_var(comp, v_as, 'A_S', p_agrd, estuary_out, nb4, ierr)
    call ok(ierr, 'def_var A_S')
    ! a partition name used twice is an error naming it
    call estuary_def_partition(comp, p_bad, [1, lo, n], ierr, ig_size=n1, name='agrd')
    call check(ierr == estuary_err_couple, 'duplicate partition accepted')
    call expect_message('agrd')
  end if
  if (dst) then
    allocate (pts(2 + n))
    pts(1:2) = [4, n]
    pts(3:) = [(hi - 1 - k, k = 0, n - 1)]
    ! no ig_size: inferred over the component's ranks (the points of the last one end at n1)
    call estuary_def_partition(comp, p_ogrd, pts, ierr, name='ogrd')
    call ok(ierr, 'def_partition ogrd')
    call estuary_def_partition(comp, p_oora, orange, ierr, ig_size=ng, name='oora')
    call ok(ierr, 'def_partition oora')
    call estuary_def_var(comp, v_of, 'O_F', p_ogrd, estuary_in, 1, ierr)
    call ok(ierr, 'def_var O_F')
    call estuary_def_var(comp, v_og, 'O_G', p_oora, estuary_in, 1, ierr)
    call ok(ierr, 'def_var O_G')
    call estuary_def_var(comp, v_ob, 'O_B', p_oora, estuary_in, nb3, ierr)
    call ok(ierr, 'def_var O_B')
    call estuary_def_var(comp, v_os, 'O_S', p_ogrd, estuary_in, nb4, ierr)
    call ok(ierr, 'def_var O_S')
  end if
  ! an undefined partition id: the library's error, naming the field
  call estuary_def_var(comp, v_bad, 'X_BAD', 99, estuary_in, 1, ierr)
  call check(ierr == estuary_err_couple, 'undefined partition accepted')
  call check(v_bad == -1, 'var id of a failed def_var')
  call expect_message('X_BAD')
  ! a bad partition without ig_size: the inference's error, the same on every rank of the component
  call estuary_def_partition(comp, p_bad, [7, 0, 1], ierr, name='nosize')
  call check(ierr == estuary_err_couple, 'partition kind 7 accepted')
  call expect_message('unknown partition kind 7')
  ! a component id that is not one
  call estuary_enddef(comp + 7, ierr)
  call check(ierr == estuary_err_argument, 'bad component id accepted')
  call expect_message('component id')
  call estuary_enddef(comp, ierr)
  call ok(ierr, 'estuary_enddef')

  allocate (f1(n), g1(n), f2(mx, ny), g2(nloc), f3(mx, ny, nb3), g3(nloc, nb3), f4(n, nb4), g4(n, 1, nb4))
  do t = 0, nint(runtime - dt), nint(dt)
    time = t
    if (src) then
      ! A_F: real(8) 1-D, integer date
      f1 = [(v1(lo + k, time), k = 0, n - 1)]
      call estuary_put(comp, v_af, t, f1, info, ierr)
      call ok(ierr, 'put A_F')
      call check_info(info, merge(estuary_Sent, estuary_LocTrans, coupling(time)), 'put A_F')
      ! A_G: real(4) 2-D on the box (x fastest), real(8) time
      do y = 0, ny - 1
        do x = xlo, xhi - 1
          f2(x - xlo + 1, y + 1) = v2(x + nx * y, time)
        end do
      end do
      ! with a fractional mask of ones (the identity mapping: W (f x) / W f = x, exactly)
      if (.not. allocated(fr2)) allocate (fr2(size(f2, 1), size(f2, 2)), source=1.0_real32)
      call estuary_put(comp, v_ag, time, f2, info, ierr, fraction=fr2)
      call ok(ierr, 'put A_G')
      call check_info(info, merge(estuary_Sent, estuary_Ok, coupling(time)), 'put A_G (INSTANT)')
      ! A_B: a bundle of 3 as a real(8) 3-D array; the wrong last dimension first
      do b = 1, nb3
        do y = 0, ny - 1
          do x = xlo, xhi - 1
            f3(x - xlo + 1, y + 1, b) = v3(x + nx * y, time, b)
          end do
        end do
      end do
      if (t == 0) then
        allocate (bad3(mx, ny * nb3))
        bad3 = reshape(f3, [mx, ny * nb3])
        call estuary_put(comp, v_ab, time, bad3, info, ierr)
        call check(ierr == estuary_err_argument, 'bundle with a wrong last dimension accepted')
        call check(info == -1, 'info of a failed put')
        call expect_message('"A_B"')
      end if
      call estuary_put(comp, v_ab, t, f3, info, ierr)
      call ok(ierr, 'put A_B')
      call check_info(info, merge(estuary_Sent, estuary_LocTrans, coupling(time)), 'put A_B')
      ! A_S: a bundle of 2 as a real(4) 2-D array (points, members); without ierror
      f4 = reshape([((v4(lo + k, time, b), k = 0, n - 1), b = 1, nb4)], [n, nb4])
      call estuary_put(comp, v_as, time, f4, info)
      call check_info(info, merge(estuary_Sent, estuary_LocTrans, coupling(time)), 'put A_S')
    end if
    if (dst) then
      g1 = -1
      g2 = -1
      g3 = -1
      g4 = -1
      call estuary_get(comp, v_of, t, g1, info, ierr)
      call ok(ierr, 'get O_F')
      call check_info(info, merge(estuary_Recvd, estuary_Ok, coupling(time)), 'get O_F')
      call estuary_get(comp, v_og, time, g2, info, ierr)
      call ok(ierr, 'get O_G')
      call check_info(info, merge(estuary_Recvd, estuary_Ok, coupling(time)), 'get O_G')
      call estuary_get(comp, v_ob, t, g3, info, ierr)
      call ok(ierr, 'get O_B')
      call check_info(info, merge(estuary_Recvd, estuary_Ok, coupling(time)), 'get O_B')
      call estuary_get(comp, v_os, time, g4, info)
      call check_info(info, merge(estuary_Recvd, estuary_Ok, coupling(time)), 'get O_S')
      if (.not. coupling(time)) then
        ! nothing received: the arrays are left as they were
        call check(all(abs(g1 + 1) <= 0) .and. all(abs(g2 + 1) <= 0) .and. all(abs(g3 + 1) <= 0) .and. &
                   all(abs(g4 + 1) <= 0), &
                   'a get at a time without coupling changed its array')
        cycle
      end if
      do k = 1, n
        i = hi - k  ! points backwards
        ! ACCUMUL: the puts since the previous coupling time, this one included
        acc = 0
        cnt = 0
        do s = merge(0, t - 2 * nint(dt), t == 0), t, nint(dt)
          acc = acc + v1(i, real(s, real64))
          cnt = cnt + 1
        end do
        want = 2.0_real64 * acc + 1.0_real64  ! BLASNEW 2.0, CONSTANT 1.0
        if (abs(g1(k) - want) > 1e-12_real64) call fail_value('O_F', time, i, g1(k), want)
        do b = 1, nb4
          acc = 0
          do s = merge(0, t - 2 * nint(dt), t == 0), t, nint(dt)
            acc = acc + real(v4(i, real(s, real64), b), real64)
          end do
          want4 = real(acc, real32)
          if (transfer(g4(k, 1, b), 0) /= transfer(want4, 0)) call fail_value('O_S', time, i, real(g4(k, 1, b), real64), acc)
        end do
      end do
      do k = 1, nloc
        i = oidx(k)
        ! INSTANT, identity: the value put at this time, bit for bit in real(4)
        if (transfer(g2(k), 0) /= transfer(v2(i, time), 0)) &
          call fail_value('O_G', time, i, real(g2(k), real64), real(v2(i, time), real64))
        do b = 1, nb3
          acc = 0
          cnt = 0
          do s = merge(0, t - 2 * nint(dt), t == 0), t, nint(dt)
            acc = acc + v3(i, real(s, real64), b)
            cnt = cnt + 1
          end do
          want = acc / cnt  ! AVERAGE
          if (abs(g3(k, b) - want) > 1e-12_real64 * max(1.0_real64, abs(want))) &
            call fail_value('O_B', time, i, g3(k, b), want)
        end do
      end do
    end if
  end do

  if (src) then
    ! the wrong number of values: the library's error, naming the field
    deallocate (f1)
    allocate (f1(n + 1))
    f1 = 0
    call estuary_put(comp, v_af, runtime + dt, f1, info, ierr)
    call check(ierr == estuary_err_couple, 'a put with the wrong size accepted')
    call expect_message('A_F')
    ! gradients (OASIS's fld2, fld3) to a coupling whose weights have one column
    call estuary_put(comp, v_ag, runtime + dt, f2, info, ierr, grad1=f2, grad2=f2)
    call check(ierr == estuary_err_couple, 'gradients to a one-column coupling accepted')
    call expect_message('one column')
  end if
  call estuary_terminate(comp, ierr)
  call ok(ierr, 'estuary_terminate')
  call estuary_terminate(comp, ierr)
  call check(ierr == estuary_err_argument, 'terminate twice accepted')

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (all_failures == 0) then
      print '(a)', 'test_fortran_couple: passed (0 failures)'
    else
      print '(a,i0,a)', 'test_fortran_couple: FAILED (', all_failures, ' failures)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (all_failures /= 0) error stop 1

contains

  pure real(real64) function v1(g, tt)
    integer, intent(in) :: g
    real(real64), intent(in) :: tt
    v1 = sin(0.3_real64 * g) + tt / 1200
  end function v1

  pure real(real32) function v2(g, tt)
    integer, intent(in) :: g
    real(real64), intent(in) :: tt
    v2 = real(cos(0.1_real64 * g) + tt / 3600, real32)
  end function v2

  pure real(real64) function v3(g, tt, bb)
    integer, intent(in) :: g, bb
    real(real64), intent(in) :: tt
    v3 = 0.01_real64 * g + bb + tt / 7200
  end function v3

  pure real(real32) function v4(g, tt, bb)
    integer, intent(in) :: g, bb
    real(real64), intent(in) :: tt
    v4 = real(sin(0.7_real64 * g) * bb + tt / 1800, real32)
  end function v4

  logical function coupling(tt)
    real(real64), intent(in) :: tt
    coupling = modulo(nint(tt), nint(period)) == 0
  end function coupling

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) return
    failures = failures + 1
    write (error_unit, '(a,i0,a)') 'test_fortran_couple: rank ', rank, ': ' // what
  end subroutine check

  subroutine ok(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    if (code == 0) return
    call estuary_error_message(msg)
    call check(.false., what // ' failed: ' // trim(msg))
  end subroutine ok

  subroutine check_info(got, expected, what)
    integer, intent(in) :: got, expected
    character(len=*), intent(in) :: what
    character(len=64) :: text
    write (text, '(a,i0,a,i0,a,i0)') ' at t=', t, ': info ', got, ', expected ', expected
    call check(got == expected, what // trim(text))
  end subroutine check_info

  subroutine expect_message(part)
    character(len=*), intent(in) :: part
    call estuary_error_message(msg)
    call check(index(msg, part) > 0, 'message without ' // part // ': "' // trim(msg) // '"')
  end subroutine expect_message

  subroutine fail_value(field, tt, g, got, expected)
    character(len=*), intent(in) :: field
    real(real64), intent(in) :: tt, got, expected
    integer, intent(in) :: g
    character(len=160) :: text
    write (text, '(a,f0.0,a,i0,a,es24.16,a,es24.16)') ' t=', tt, ' point ', g, ': got ', got, ', expected ', expected
    call check(.false., field // trim(text))
  end subroutine fail_value

  subroutine write_namcouple()
    integer :: u, st
    character(len=64) :: g1line, g2line
    call execute_command_line('rm -rf ' // trim(dir) // ' && mkdir -p ' // trim(dir), exitstat=st)
    call check(st == 0, 'cannot create ' // trim(dir))
    write (g1line, '(i0,a,i0,a)') n1, ' 1 ', n1, ' 1 agrd ogrd'
    write (g2line, '(4(i0,1x),a)') nx, ny, nx, ny, 'abox oora'
    open (newunit=u, file=trim(dir) // '/namcouple', status='replace', action='write')
    write (u, '(a)') ' $NFIELDS', ' 4', ' $END', ' $RUNTIME', ' 10800', ' $END', ' $STRINGS'
    write (u, '(a)') 'A_F O_F 1 3600 2 rst1.nc EXPORTED', trim(g1line), 'R 0 R 0', 'LOCTRANS BLASNEW', &
                     'ACCUMUL', '2.0 1', 'CONSTANT 1.0'
    write (u, '(a)') 'A_G O_G 1 3600 1 rst2.nc EXPORTED', trim(g2line), 'R 0 R 0', 'LOCTRANS', 'INSTANT'
    write (u, '(a)') 'A_B O_B 1 3600 1 rst3.nc EXPORTED', trim(g2line), 'R 0 R 0', 'LOCTRANS', 'AVERAGE'
    write (u, '(a)') 'A_S O_S 1 3600 1 rst4.nc EXPORTED', trim(g1line), 'R 0 R 0', 'LOCTRANS', 'ACCUMUL'
    write (u, '(a)') ' $END'
    close (u)
  end subroutine write_namcouple

end program test_fortran_couple
