"""The coupler through the pyOASIS-like classes: two components (one on a single rank) couple
through a namcouple written at run time; every value got is compared with a serial numpy
computation from the same weights and LOCTRANS, and every info code is checked."""
import numpy as np
import pytest

import estuary
import estuary.couple as pyoasis
from estuary.couple import OASIS, OasisParameters

NSX, NSY, NDX, NDY = 12, 10, 8, 9  # source (atmosphere) and target (ocean) grids
NS, ND = NSX * NSY, NDX * NDY
DT, PERIOD = 1200.0, 3600.0
RUNTIME = 4 * PERIOD


def layout(comm):
    """(is_src, is_dst, component, index, count): half atmosphere, half ocean; one rank: both."""
    p, r = comm.size, comm.rank
    if p == 1:
        return True, True, "solo", 0, 1
    h = p // 2
    if r < h:
        return True, False, "atm", r, h
    return False, True, "ocn", r - h, p - h


def namcouple(rest, ntrans, line2_extra=""):
    return (" $NFIELDS\n 1\n $END\n $RUNTIME\n " + str(int(RUNTIME)) + "\n $END\n $NLOGPRT\n 1\n $END\n"
            " $NNOREST\n T\n $END\n $STRINGS\n"
            f"A_F O_F 1 {int(PERIOD)} {ntrans} rst.nc EXPORTED\n{NSX} {NSY} {NDX} {NDY} agrd ogrd {line2_extra}\n"
            "R 0 R 0\n" + rest + " $END\n")


def synthetic_links(ns, nd):
    rows, cols, w = [], [], []
    for r in range(nd):
        row = (r * 7 + 3) % nd
        for j in range(row % 5):
            rows.append(row)
            cols.append((row * 13 + j * 29 + 5) % ns)
            w.append(0.1 + 0.37 * j + 0.001 * row)
    return np.array(rows, np.int64), np.array(cols, np.int64), np.array(w)


def apply_ref(src):
    rows, cols, w = synthetic_links(NS, ND)
    out = np.zeros(ND)
    for r, c, x in zip(rows, cols, w):
        out[r] += x * src[c]
    return out


def global_field(t):
    i = np.arange(NS, dtype=np.float64)
    return 273.0 + 10.0 * np.sin(0.1 * i + t / 3000.0) + 0.001 * i


def setup_dir(comm, d, text):
    from mpi4py import MPI

    if comm.rank == 0:
        estuary.write_weights(str(d / "w.nc"), *synthetic_links(NS, ND), NS, ND, MPI.COMM_SELF)
        (d / "namcouple").write_text(text)
    comm.Barrier()


def dst_partition(kind, index, count):
    """The ocean's share (a block of rows, listed in one of the OASIS forms); returns the partition
    and the global indices of its points in local order."""
    y0, y1 = index * NDY // count, (index + 1) * NDY // count
    pts = np.arange(y0 * NDX, y1 * NDX)
    if kind == "apple":
        return pyoasis.ApplePartition(int(y0 * NDX), int(len(pts)), global_size=ND, name="ogrd"), pts
    if kind == "box":  # the whole rows [y0, y1): local (x, y) with x fastest
        return pyoasis.BoxPartition(int(y0 * NDX), NDX, int(y1 - y0), NDX, global_size=ND, name="ogrd"), pts
    if kind == "orange":  # each row a segment, listed last row first
        rows = list(range(y0, y1))[::-1]
        part = pyoasis.OrangePartition([r * NDX for r in rows], [NDX] * len(rows), name="ogrd")  # global size: found
        return part, np.concatenate([np.arange(r * NDX, (r + 1) * NDX) for r in rows]) if rows else pts
    if kind == "points":  # reversed
        return pyoasis.PointsPartition(pts[::-1].tolist(), global_size=ND, name="ogrd"), pts[::-1]
    raise ValueError(kind)


def run(comm, d, dst_kind="apple", bad_put=False):
    is_src, is_dst, name, index, count = layout(comm)
    comp = pyoasis.Component(name, config=str(d / "namcouple"), directory=str(d))
    local = comp.localcomm
    sv = dv = None
    spts = np.arange(index, NS, count)  # atmosphere: cyclic over its ranks
    if is_src:
        spart = pyoasis.PointsPartition(spts.tolist(), global_size=NS, name="agrd")
        sv = pyoasis.Var("A_F", spart, OasisParameters.OASIS_OUT)
    dpts = None
    if is_dst:
        dpart, dpts = dst_partition(dst_kind, index, count)
        dv = pyoasis.Var("O_F", dpart, OASIS.IN)
    comp.enddef()
    puts, gets, errors = [], [], []
    t = 0.0
    while t < RUNTIME:
        if is_src:
            if bad_put and t == 0:
                try:
                    sv.put(t, np.zeros(len(spts) + 1))
                except estuary.Error as e:
                    errors.append(str(e))
            puts.append(sv.put(t, global_field(t)[spts]))
        if is_dst:
            if dst_kind == "box":  # a Fortran-ordered (nx, ny_local) array, as pyOASIS passes
                v = np.full((NDX, len(dpts) // NDX), -999.0, order="F")
            else:
                v = np.full(len(dpts), -999.0)
            info = dv.get(t, v)
            gets.append((t, info, v.ravel(order="F").copy()))
        t += DT
    comp.terminate()
    return dict(is_src=is_src, is_dst=is_dst, local=(local.size, local.rank, count, index), puts=puts,
                gets=gets, dpts=dpts, errors=errors, comp=comp)


@pytest.mark.parametrize("dst_kind", ["apple", "box", "orange", "points"])
def test_mapping_equals_serial_reference(comm, shared_dir, dst_kind):
    setup_dir(comm, shared_dir, namcouple("MAPPING\nw.nc dst bfb\n", 1))
    res = run(comm, shared_dir, dst_kind, bad_put=True)
    lsize, lrank, count, index = res["local"]
    assert (lsize, lrank) == (count, index)  # localcomm: the component's ranks
    if res["is_src"]:
        assert res["puts"] == [OASIS.Sent if k % 3 == 0 else OASIS.Ok for k in range(12)]
        assert len(res["errors"]) == 1 and "A_F" in res["errors"][0], res["errors"]
    if res["is_dst"]:
        for t, info, v in res["gets"]:
            if t % PERIOD:
                assert info == OASIS.Ok
                assert np.all(v == -999.0), "a get between coupling times must leave the field alone"
            else:
                assert info == OASIS.Recvd
                # The info code is the named enum member (IDEs and logs show OASIS_RECVD), still 3.
                assert isinstance(info, OasisParameters) and info.name == "OASIS_RECVD" and info == 3
                want = apply_ref(global_field(t))[res["dpts"]]
                np.testing.assert_allclose(v, want, rtol=0, atol=1e-12, err_msg=f"t={t}")


@pytest.mark.parametrize("op", ["AVERAGE", "ACCUMUL", "T_MAX"])
def test_loctrans(comm, shared_dir, op):
    setup_dir(comm, shared_dir, namcouple(f"LOCTRANS MAPPING\n{op}\nw.nc src sum\n", 2))
    res = run(comm, shared_dir)
    if res["is_src"]:
        assert res["puts"] == [OASIS.Sent if k % 3 == 0 else OASIS.LocTrans for k in range(12)]
    if res["is_dst"]:
        assert [g[1] for g in res["gets"]] == [OASIS.Recvd if k % 3 == 0 else OASIS.Ok for k in range(12)]
        for t, info, v in res["gets"]:
            if t % PERIOD:
                continue
            steps = [s for s in np.arange(0.0, RUNTIME, DT) if max(t - PERIOD, -DT) < s <= t]
            xs = np.array([global_field(s) for s in steps])
            red = {"AVERAGE": xs.mean(axis=0), "ACCUMUL": xs.sum(axis=0), "T_MAX": xs.max(axis=0)}[op]
            np.testing.assert_allclose(v, apply_ref(red)[res["dpts"]], rtol=1e-13, atol=1e-10, err_msg=f"t={t}")


def test_errors_name_the_field(comm, shared_dir):
    setup_dir(comm, shared_dir, namcouple("MAPPING\nw.nc dst bfb\n", 1))
    is_src, is_dst, name, index, count = layout(comm)
    comp = pyoasis.Component(name, config=str(shared_dir / "namcouple"), directory=str(shared_dir))
    msgs = []
    spts = np.arange(index, NS, count)
    sv = dv = None
    if is_src:
        part = pyoasis.PointsPartition(spts.tolist(), global_size=NS, name="agrd")
        with pytest.raises(estuary.Error, match="neither"):
            pyoasis.Var("A_F", part, 7)
        with pytest.raises(estuary.Error, match="bundle"):
            pyoasis.Var("X_F", part, OASIS.OUT, bundle_size=0)
        sv = pyoasis.Var("A_F", part, OASIS.OUT)
        with pytest.raises(estuary.Error, match="A_F"):
            sv.get(0, np.zeros(len(spts)))  # an output field cannot be got
    if is_dst:
        dpart, dpts = dst_partition("apple", index, count)
        dv = pyoasis.Var("O_F", dpart, OASIS.IN)
    with pytest.raises(estuary.Error, match="outside"):  # beyond the grid
        pyoasis.ApplePartition(NS - 1, 5, global_size=NS)
    comp.enddef()
    with pytest.raises(estuary.Error, match="after enddef"):
        comp.native.def_partition(estuary.gen.block(4, 0, 1))
    t = 0.0
    while t < RUNTIME:
        if is_src:
            sv.put(t, global_field(t)[spts])
        if is_dst:
            v = np.zeros(len(dpts))
            with pytest.raises(TypeError):  # float32 output: refused, not silently converted
                dv.get(t, v.astype(np.float32))
            try:
                dv.get(t, np.zeros(len(dpts) + 3))
            except estuary.Error as e:
                msgs.append(str(e))
            dv.get(t, v)
        t += DT
    comp.terminate()
    comp.terminate()  # idempotent
    if is_dst:
        assert len(msgs) == 12 and all("O_F" in m and m.startswith("estuary:") for m in msgs), msgs[:2]
    assert issubclass(estuary.Error, RuntimeError)


def test_info_codes_match_oasis():
    assert OASIS.Sent == 4 and OASIS.Recvd == 3 and OasisParameters.OASIS_OUT == 20
    assert estuary.info_name(int(OASIS.Sent)) == "Sent" and estuary.info_name(int(OASIS.Recvd)) == "Recvd"
    assert estuary.info_name(int(OASIS.LocTrans)) == "LocTrans"


def test_create_couplcomm_runtime_and_grid_arrays(comm, shared_dir):
    """create_couplcomm (oasis_create_couplcomm) over the component's ranks: the even local ranks
    take part; a coupling on those ranks only; runtime after enddef; Grid arrays as numpy."""
    from mpi4py import MPI

    is_src, is_dst, name, index, count = layout(comm)
    text = (" $NFIELDS\n 1\n $END\n $RUNTIME\n 7200\n $END\n $NNOREST\n T\n $END\n $STRINGS\n"
            f"A_C O_C 1 3600 1 rst.nc EXPORTED\n{NS} 1 {NS} 1 agrd ogrd\nR 0 R 0\nLOCTRANS\nINSTANT\n $END\n")
    if comm.rank == 0:
        (shared_dir / "namcouple").write_text(text)
    comm.Barrier()
    comp = pyoasis.Component(name, config=str(shared_dir / "namcouple"), directory=str(shared_dir))
    local = comp.localcomm
    coupled = local.rank % 2 == 0
    cpl = comp.create_couplcomm(coupled)
    members = cpl.allgather(local.rank) if coupled else None
    ncoupled = (local.size + 1) // 2
    if coupled:  # a 1-D field over the coupling ranks only
        lo, hi = cpl.rank * NS // cpl.size, (cpl.rank + 1) * NS // cpl.size
        part = pyoasis.ApplePartition(lo, hi - lo, global_size=NS)
        out_var = pyoasis.Var("A_C", part, OASIS.OUT) if is_src else None
        in_var = pyoasis.Var("O_C", part, OASIS.IN) if is_dst else None
    with pytest.raises(estuary.Error, match="allcomm is MPI.COMM_NULL"):
        comp.create_couplcomm(True, MPI.COMM_NULL)
    comp.enddef()
    runtime = comp.runtime
    got, infos = [], []
    if coupled:
        for t in (0.0, 3600.0):
            if out_var is not None:
                out_var.put(t, np.arange(lo, hi, dtype=np.float64) + t)
            if in_var is not None:
                g = np.full(hi - lo, -1.0)
                infos.append(in_var.get(t, g))
                got.append((g, np.arange(lo, hi, dtype=np.float64) + t))
        cpl.Free()
    comp.terminate()
    # Grid arrays are fresh numpy arrays (each property read gives a copy)
    grid = estuary.GridGen.lonlat(8, 4).make(estuary.oasis_partition(np.array([1, 2, 5]), 32))
    lon, lat, area, mask, pts = grid.lon, grid.lat, grid.area, grid.mask, grid.points
    assert runtime == 7200.0
    if coupled:
        assert cpl is not MPI.COMM_NULL and members == list(range(0, local.size, 2))
        assert len(members) == ncoupled
        assert infos == [OASIS.Recvd, OASIS.Recvd][:len(infos)]
        for g, want in got:
            np.testing.assert_array_equal(g, want)
    else:
        assert cpl == MPI.COMM_NULL and comp.couplcomm == MPI.COMM_NULL
    np.testing.assert_allclose(lon, 45.0 * (np.arange(2, 7) % 8))
    np.testing.assert_allclose(lat, -90.0 + 45.0 * (np.arange(2, 7) // 8 + 0.5))
    assert area.shape == (5,) and (area > 0).all() and mask.dtype == np.int32 and list(pts) == [2, 3, 4, 5, 6]
    lon[0] = 1e9  # a copy: the grid is unchanged
    assert grid.lon[0] != 1e9


def test_non_utf8_config_is_an_estuary_error_naming_file_and_line():
    # issue 17: a byte that is not UTF-8 gave a UnicodeDecodeError that lost the file and line.
    import os
    import re
    import tempfile

    d = tempfile.mkdtemp(prefix="estuary_utf8_")
    yaml = os.path.join(d, "bad.yaml")
    with open(yaml, "wb") as f:
        f.write(b"runtime: 1\ncouplings:\n  - source: {field: A\xff, grid: g}\n")
    with pytest.raises(estuary.Error, match=r"not UTF-8 \(0xFF\) at column 22 \(" + re.escape(yaml + ":3") + r"\)"):
        estuary.read_coupling_config(yaml)
    nam = os.path.join(d, "namcouple")
    with open(nam, "wb") as f:
        f.write(b" $RUNTIME\n 86400\n $END\n $STRINGS\n A\xe9 B 1 3600 0 in.nc INPUT\n $END\n")
    with pytest.raises(estuary.Error, match=r"not UTF-8 \(0xE9\) at column 3 \(" + re.escape(nam + ":5") + r"\)"):
        estuary.read_coupling_config(nam)


def test_oasis_queries_and_communicators(comm, shared_dir):
    """OASIS3-MCT's run-time queries and communicators with pyOASIS's names: Var.put_inquire
    (checked against every put and the namcouple), Var.cpl_freqs / ncpl, Component.debug_level,
    set_couplcomm, and (on 2 ranks or more) get_intercomm, get_intracomm, get_multi_intracomm."""
    from mpi4py import MPI

    is_src, is_dst, name, index, count = layout(comm)
    runtime = 14400
    text = (f" $NFIELDS\n 2\n $END\n $RUNTIME\n {runtime}\n $END\n $NLOGPRT\n 4\n $END\n $NNOREST\n T\n $END\n"
            f" $STRINGS\nA_Q O_Q 1 3600 1 qrst.nc EXPORTED\n{NS} 1 {NS} 1 agrd ogrd LAG=1200\nR 0 R 0\n"
            "LOCTRANS\nAVERAGE\nA_Q A_Q 1 7200 1 qrst2.nc OUTPUT\nagrd agrd\nLOCTRANS\nINSTANT\n $END\n")
    if comm.rank == 0:
        (shared_dir / "namcouple").write_text(text)
    comm.Barrier()
    comp = pyoasis.Component(name, config=str(shared_dir / "namcouple"), directory=str(shared_dir))
    local = comp.localcomm
    foreign = None
    if comm.size > 1:  # a communicator with another component's ranks is refused
        try:
            comp.set_couplcomm(MPI.COMM_WORLD)
        except estuary.Error as e:
            foreign = str(e)
    comp.set_couplcomm(local)  # every rank couples
    lo, hi = local.rank * NS // local.size, (local.rank + 1) * NS // local.size
    part = pyoasis.ApplePartition(lo, hi - lo, global_size=NS)
    out_var = pyoasis.Var("A_Q", part, OASIS.OUT) if is_src else None
    in_var = pyoasis.Var("O_Q", part, OASIS.IN) if is_dst else None
    comp.enddef()
    debug = [comp.debug_level]
    comp.debug_level = 6
    debug.append(comp.debug_level)
    inter_size = intra_members = multi = None
    if comm.size > 1:
        other = "ocn" if name == "atm" else "atm"
        inter = comp.get_intercomm(other)
        inter_size = (inter.Is_inter(), inter.Get_remote_size())
        inter.Free()
        intra = comp.get_intracomm(other)
        intra_members = intra.allgather(comm.rank)
        intra.Free()
        mcomm, roots = comp.get_multi_intracomm([other, name])
        multi = (mcomm.size, roots)
        mcomm.Free()
    puts, gets = [], []
    for t in range(0, runtime, 1200):
        if out_var is not None:
            predicted = out_var.put_inquire(t)
            puts.append((t, predicted, out_var.put(t, np.arange(lo, hi, dtype=np.float64) + t)))
        if in_var is not None:
            g = np.full(hi - lo, -1.0)
            gets.append((t, in_var.get(t, g), g))
    freqs_out = list(out_var.cpl_freqs) if out_var is not None else None
    freqs_in = list(in_var.cpl_freqs) if in_var is not None else None
    ncpl = (out_var.ncpl if out_var is not None else None, in_var.ncpl if in_var is not None else None)
    comp.terminate()

    assert OASIS.Sent == 4 and pyoasis.OASIS_REAL == 4 and pyoasis.OASIS_DOUBLE == 8 and pyoasis.OASIS_SUCCESS == 0
    if comm.size > 1:
        assert foreign is not None and "outside component" in foreign, foreign
    assert debug == [4, 6]  # $NLOGPRT, then the level set
    if out_var is not None:
        assert freqs_out == [3600, 7200] and ncpl[0] == 2
        for t, predicted, info in puts:
            a = t + 1200  # A_Q -> O_Q: LAG 1200, AVERAGE; A_Q -> file: every 7200 s (OUTPUT)
            first = OASIS.LocTrans if a % 3600 else (OASIS.ToRest if a >= runtime else OASIS.Sent)
            want = first if first != OASIS.LocTrans else (OASIS.Output if t % 7200 == 0 else OASIS.LocTrans)
            assert predicted == want and info == want, (t, predicted, info, want)
    if in_var is not None:
        assert freqs_in == [3600] and ncpl[1] == 1
        for t, info, g in gets:
            assert info == (OASIS.FromRest if t == 0 else OASIS.Recvd if t % 3600 == 0 else OASIS.Ok), (t, info)
            if info != OASIS.Ok:  # the mean of the puts one period back, one step late; zeros first
                np.testing.assert_array_equal(g, 0.0 if t == 0 else np.arange(lo, hi) + t - 2400.0)
    if comm.size > 1:
        h = comm.size // 2
        assert inter_size == (True, comm.size - h if name == "atm" else h)
        assert intra_members == list(range(comm.size))  # atm (world rank 0) first
        assert multi == (comm.size, {"atm": 0, "ocn": h})


def test_uncoupled_component(comm, shared_dir):
    """OASIS's coupled=False: the last rank (on 2 ranks or more) is a component that takes no part
    in the coupling; the others couple among themselves without it (their collectives leave it
    out), and its enddef, puts and gets do nothing."""
    idle = comm.size > 1 and comm.rank == comm.size - 1
    text = (" $NFIELDS\n 1\n $END\n $RUNTIME\n 7200\n $END\n $STRINGS\n"
            f"A_U O_U 1 3600 1 urst.nc EXPORTED\n{NS} 1 {NS} 1 ugrd ugrd\nR 0 R 0\nLOCTRANS\nINSTANT\n $END\n")
    if comm.rank == 0:
        (shared_dir / "namcouple").write_text(text)
    comm.Barrier()
    comp = pyoasis.Component("idle" if idle else "solo", coupled=not idle, config=str(shared_dir / "namcouple"),
                             directory=str(shared_dir))
    local = comp.localcomm
    lo, hi = local.rank * NS // local.size, (local.rank + 1) * NS // local.size
    part = pyoasis.ApplePartition(lo, hi - lo, global_size=NS)
    out_var = pyoasis.Var("A_U", part, OASIS.OUT)
    in_var = pyoasis.Var("O_U", part, OASIS.IN)
    comp.enddef()
    infos = []
    for t in (0, 3600):
        infos.append(out_var.put(t, np.arange(lo, hi, dtype=np.float64) + t))
        g = np.full(hi - lo, -1.0)
        infos.append(in_var.get(t, g))
        infos.append(g.copy())
    comp.terminate()
    assert local.size == (1 if idle else max(comm.size - 1, 1))
    for k, t in enumerate((0, 3600)):
        put_info, get_info, g = infos[3 * k:3 * k + 3]
        if idle:
            assert put_info == OASIS.Ok and get_info == OASIS.Ok and (g == -1.0).all()
        else:
            assert put_info == OASIS.Sent and get_info == OASIS.Recvd
            np.testing.assert_array_equal(g, np.arange(lo, hi) + t)


def fraction_of(t):
    """A fractional mask (YAC's yac_cput_frac) that changes every coupling time: some 0, some 1."""
    i = np.arange(NS)
    m = (i + int(t // PERIOD)) % 4
    return np.where(m == 0, 0.0, np.where(m == 1, 1.0, 0.2 + 0.15 * ((i * 3 + int(t // PERIOD)) % 5)))


def test_put_fraction_and_gradients(comm, shared_dir):
    """put(..., fraction=f): the target gets W (f x) / W f (0 where W f = 0), computed here with
    numpy; put(..., g1, g2): an error naming the field, the weights having one column."""
    setup_dir(comm, shared_dir, namcouple("MAPPING\nw.nc dst bfb\n", 1))
    is_src, is_dst, name, index, count = layout(comm)
    comp = pyoasis.Component(name, config=str(shared_dir / "namcouple"), directory=str(shared_dir))
    spts = np.arange(index, NS, count)
    dpts = np.arange(index * ND // count, (index + 1) * ND // count)
    if is_src:
        sv = pyoasis.Var("A_F", pyoasis.PointsPartition(spts.tolist(), global_size=NS, name="agrd"), OASIS.OUT)
    if is_dst:
        dv = pyoasis.Var("O_F", pyoasis.PointsPartition(dpts.tolist(), global_size=ND, name="ogrd"), OASIS.IN)
    comp.enddef()
    errors, gets = [], []
    for t in np.arange(0.0, RUNTIME, PERIOD):
        if is_src:
            x = global_field(t)[spts]
            if t == 0:
                try:
                    sv.put(t, x, x, x)
                except estuary.Error as e:
                    errors.append(str(e))
            assert sv.put(t, x, fraction=fraction_of(t)[spts]) == OASIS.Sent
        if is_dst:
            v = np.zeros(len(dpts))
            assert dv.get(t, v) == OASIS.Recvd
            gets.append((t, v))
    comp.terminate()
    if is_src:
        assert len(errors) == 1 and "A_F" in errors[0] and "one column" in errors[0], errors
    for t, v in gets:
        f = fraction_of(t)
        num, den = apply_ref(f * global_field(t)), apply_ref(f)
        want = np.where(den != 0, num / np.where(den != 0, den, 1), 0.0)[dpts]
        np.testing.assert_allclose(v, want, rtol=1e-14, atol=1e-14, err_msg=f"t={t}")
        assert np.any(den[dpts] == 0) or count > 1  # some targets fall back (on one rank: all targets here)


def test_weight_callback(comm, shared_dir):
    """SCRIPR CALLBACK from Python: a nearest-neighbour function (numpy, great-circle distance)
    moves every value where an independent 3-D chord search says; a function returning a source
    index out of range is an error naming the coupling and the rank, on every rank."""
    from mpi4py import MPI

    src_gen, dst_gen = estuary.GridGen.lonlat(12, 10).with_land(), estuary.GridGen.tripolar(8, 9)
    ns, nd = NS, 8 * 9

    def nearest(q, bad=False):
        rad = np.pi / 180
        valid = np.flatnonzero(q["src_mask"] != 0)
        slon, slat = q["src_lon"][valid] * rad, q["src_lat"][valid] * rad
        cols = []
        for lon, lat in zip(q["dst_lon"] * rad, q["dst_lat"] * rad):
            c = np.sin(lat) * np.sin(slat) + np.cos(lat) * np.cos(slat) * np.cos(lon - slon)
            cols.append(valid[np.argmax(c)])
        cols = np.array(cols, np.int64)
        if bad and len(cols):
            cols[-1] = len(q["src_lon"])
        return q["dst_index"].astype(np.int64), cols, np.ones(len(cols))

    def one_run(d, fn_name, fn):
        is_src, is_dst, name, index, count = layout(comm)
        if comm.rank == 0:
            (d / "estuary.yaml").write_text(
                "runtime: 3600\nno_restart: true\ntimeout: 60\ncouplings:\n"
                "  - source: {fields: [A_F], grid: agrd}\n    target: {fields: [O_F], grid: ogrd}\n"
                f"    period: 3600\n    transforms:\n      - scripr: {{method: callback, name: {fn_name}}}\n")
        comm.Barrier()
        comp = pyoasis.Component(name, config=str(d / "estuary.yaml"), directory=str(d))
        spts, dpts = np.arange(index, ns, count), np.arange(index, nd, count)
        if is_src:
            sp = pyoasis.PointsPartition(spts.tolist(), global_size=ns, name="agrd")
            comp.def_grid("agrd", sp, src_gen.make(estuary.Decomp.indices(ns, spts)))
            sv = pyoasis.Var("A_F", sp, OASIS.OUT)
        if is_dst:
            dp = pyoasis.PointsPartition(dpts.tolist(), global_size=nd, name="ogrd")
            comp.def_grid("ogrd", dp, dst_gen.make(estuary.Decomp.indices(nd, dpts)))
            dv = pyoasis.Var("O_F", dp, OASIS.IN)
            comp.register_weights(fn_name, fn)
        error = None
        try:
            comp.enddef()
        except estuary.Error as e:
            error = str(e)
        v = np.zeros(len(dpts))
        if error is None:
            if is_src:
                sv.put(0, global_field(0)[spts])
            if is_dst:
                dv.get(0, v)
        comp.terminate()
        return error, (v, dpts) if is_dst else None

    error, got = one_run(shared_dir, "near", nearest)
    assert error is None, error
    if got is not None:
        v, dpts = got
        sg, dg = src_gen.make(), dst_gen.make()

        def unit(lon, lat):
            lon, lat = np.radians(lon), np.radians(lat)
            return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)

        su, valid = unit(sg.lon, sg.lat), np.flatnonzero(sg.mask != 0)
        du = unit(dg.lon, dg.lat)[dpts]
        d2 = ((du[:, None, :] - su[None, valid, :]) ** 2).sum(axis=2)
        # Ties (targets equidistant from several sources) may round either way: any source within
        # 1e-12 of the smallest distance is right.
        near = d2 <= d2.min(axis=1, keepdims=True) + 1e-12
        x = global_field(0)[valid]
        for k in range(len(v)):
            assert v[k] in x[near[k]], (k, v[k], x[near[k]])
    comm.Barrier()
    bad_dir = shared_dir / "bad"
    if comm.rank == 0:
        bad_dir.mkdir()
    comm.Barrier()
    error, _ = one_run(bad_dir, "bad", lambda q: nearest(q, bad=True))
    assert error is not None and "A_F -> O_F" in error and '"bad"' in error and "rank" in error, error
    assert "source index" in error, error
    comm.Barrier()
    del MPI


# ---- what the bindings take from the core: partition sizes and grid recipes by name ----

def test_partition_global_size_is_the_cores_inference():
    """estuary.oasis_partition_global_size (the core's, as the C API and Fortran use it) equals
    the largest point any rank holds plus one, found here from the points themselves; and a
    partition defined without global_size gets that size."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(7 + comm.rank)
    idx = np.unique(rng.integers(0, 50 + 13 * comm.size, size=9))
    forms = [np.concatenate([[4, len(idx)], idx]),                       # points
             np.array([1, 5 * comm.rank, 3 + comm.rank]),                 # apple
             np.array([2, comm.rank * 10 + 1, 4, 2, 10 * comm.size]),     # box, 2 rows of 4 in rows of 10 x size
             np.array([3, 2, 40 * comm.rank, 2, 40 * comm.rank + 9, 5])]  # orange
    for ig in forms:
        held = estuary.oasis_partition(ig, 1 << 40).to_indices()
        want = comm.allreduce(int(held.max()) + 1 if len(held) else 0, op=MPI.MAX)
        assert estuary.oasis_partition_global_size(ig, comm) == want, ig
    # a bad array on one rank: the same error on every rank
    bad = np.array([7, 0, 1]) if comm.rank == comm.size - 1 else np.array([1, comm.rank, 1])
    with pytest.raises(estuary.Error, match="unknown partition kind 7"):
        estuary.oasis_partition_global_size(bad, comm)


@pytest.mark.parametrize("recipe,make", [
    ("lonlat:12x6", lambda: estuary.GridGen.lonlat(12, 6)),
    ("gaussian:16x8", lambda: estuary.GridGen.gaussian(16, 8)),
    ("tripolar:10x7", lambda: estuary.GridGen.tripolar(10, 7)),
    ("reduced_gaussian:6", lambda: estuary.GridGen.reduced_gaussian(6)),
    ("cubed_sphere:3", lambda: estuary.GridGen.cubed_sphere(3)),
    ("lonlat:12x6+land", lambda: estuary.GridGen.lonlat(12, 6).with_land()),
])
def test_grid_recipe_by_name_is_the_recipe(recipe, make):
    got, want = estuary.GridGen.from_name(recipe), make()
    assert got.name == want.name and list(got.dims) == list(want.dims) and got.size == want.size
    g, w = got.make(), want.make()
    for attr in ("lon", "lat", "area", "mask"):
        np.testing.assert_array_equal(getattr(g, attr), getattr(w, attr))


@pytest.mark.parametrize("bad", ["lonlat:12", "lonlat:12x0", "lonlat:12x6x2", "gaussian", "t799:4", "nosuch:3x3",
                                 "lonlat:axb", "lonlat:12x-6", ""])
def test_grid_recipe_by_name_refuses(bad):
    with pytest.raises(estuary.Error, match="is not a recipe"):
        estuary.GridGen.from_name(bad)
