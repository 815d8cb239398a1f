"""An OASIS3-MCT ocean/atmosphere pair ported to estuary by renaming its calls only.

ocean.F90 and atmos.F90 are OASIS source (`use mod_oasis`, `call oasis_put(...)`);
tests/CMakeLists.txt generates the programs this test runs from them with
`sed 's/oasis_/estuary_/g; s/mod_oasis/estuary/g'` and nothing else. The test writes the two
MAPPING weight files of the namcouple (its own, in SCRIP's layout, with netCDF4), runs the pair
MPMD (4 ocean processes, one of them outside the coupling, and 2 atmosphere processes) and
checks what the models wrote down against references computed here, independently of estuary:
 - every field received: the analytic fields of the sender at the right times (LAG), through
   the LOCTRANS (AVERAGE, ACCUMUL, INSTANT) and the weights applied serially with numpy (exactly
   for the runoff, on identical "grids" without mapping);
 - the info code of every get, and of every put together with oasis_put_inquire's prediction
   made just before it, against the namcouple's periods, lags, LOCTRANS and statuses;
 - oasis_get_ncpl / oasis_get_freqs, oasis_get/set_debug, oasis_get_localcomm after
   oasis_create_couplcomm, and the ranks of the communicators of oasis_get_intercomm,
   oasis_get_intracomm and oasis_get_multi_intracomm;
 - the OUTPUT file of the ocean's 2-D field (its (nx, ny) boxes land at the right points).
Runs outside mpirun (ctest entry test_oasis_port); it launches mpirun itself."""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
OCEAN = os.environ.get("ESTUARY_OASIS_PORT_OCEAN", "")
ATMOS = os.environ.get("ESTUARY_OASIS_PORT_ATMOS", "")
MPIEXEC = os.environ.get("ESTUARY_MPIEXEC", "mpirun")
TMP = Path(os.environ.get("ESTUARY_OASIS_PORT_TMP", tempfile.gettempdir())) / "oasis_port"

RUNTIME = 21600
OCN = (12, 8)   # nx, ny of ocnt
ATM = (8, 6)    # nx, ny of atmt
NBAS = 10
OCN_DT, ATM_DT = 1800, 1200
# info codes (OASIS's values)
OK, RECVD, SENT, LOCTRANS, TOREST, OUTPUT, SENTOUT, FROMREST, RECVOUT = 0, 3, 4, 5, 6, 7, 8, 10, 12


# ---- the models' fields, as the Fortran computes them ----

def sst(t):
    """The ocean's SST on the 12 x 8 grid at time t, by global index (x fastest)."""
    nx, ny = OCN
    j, i = np.divmod(np.arange(nx * ny), nx)
    return 273.15 + 10.0 * np.cos(3.14159265358979 * (j + 0.5) / ny) + 0.5 * i + t / 3600.0


def heat(t):
    """The atmosphere's heat flux (real(4), exactly representable) at time t."""
    nx, ny = ATM
    j, i = np.divmod(np.arange(nx * ny), nx)
    return (100 + 3 * i - 2 * j).astype(np.float32) + np.float32(0.25 * (t // ATM_DT))


def runoff(t):
    return 1000.0 * np.arange(NBAS) + t / 60.0


# ---- weights: the overlap of regular cells of [0, 1] x [0, 1], normalised by the target cell ----

def overlap_1d(n_src, n_dst):
    m = np.zeros((n_dst, n_src))
    for d in range(n_dst):
        for s in range(n_src):
            lo, hi = max(d / n_dst, s / n_src), min((d + 1) / n_dst, (s + 1) / n_src)
            if hi > lo + 1e-15:
                m[d, s] = (hi - lo) * n_dst
    return m


def weights(src, dst):
    """The dense matrix (dst points x src points) of the conservative overlap weights."""
    mx, my = overlap_1d(src[0], dst[0]), overlap_1d(src[1], dst[1])
    return np.einsum("ab,cd->cadb", mx, my).reshape(dst[0] * dst[1], src[0] * src[1])


def write_scrip(path, w, src, dst, seed):
    """SCRIP's layout (1-based addresses), the links in a shuffled order."""
    import netCDF4

    rows, cols = np.nonzero(w)
    order = np.random.default_rng(seed).permutation(rows.size)
    rows, cols = rows[order], cols[order]
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("src_grid_size", src[0] * src[1])
        ds.createDimension("dst_grid_size", dst[0] * dst[1])
        ds.createDimension("src_grid_rank", 2)
        ds.createDimension("dst_grid_rank", 2)
        ds.createDimension("num_links", rows.size)
        ds.createDimension("num_wgts", 1)
        ds.createVariable("src_grid_dims", "i4", ("src_grid_rank",))[:] = src
        ds.createVariable("dst_grid_dims", "i4", ("dst_grid_rank",))[:] = dst
        ds.createVariable("src_address", "i4", ("num_links",))[:] = cols + 1
        ds.createVariable("dst_address", "i4", ("num_links",))[:] = rows + 1
        ds.createVariable("remap_matrix", "f8", ("num_links", "num_wgts"))[:] = w[rows, cols][:, None]
        ds.title = "overlap weights of the estuary OASIS port test"


# ---- the run ----

def parse(folder, prefix):
    """Per world rank, the lines of <prefix>.out.<rank> split into words."""
    out = {}
    for p in sorted(folder.glob(f"{prefix}.out.*")):
        out[int(p.name.rsplit(".", 1)[1])] = [ln.split() for ln in p.read_text().splitlines() if ln.strip()]
    return out


@pytest.fixture(scope="module")
def run():
    if not OCEAN or not ATMOS:
        pytest.fail("ESTUARY_OASIS_PORT_OCEAN / ESTUARY_OASIS_PORT_ATMOS not set (run from ctest, which sets them)")
    shutil.rmtree(TMP, ignore_errors=True)
    TMP.mkdir(parents=True)
    shutil.copy(HERE / "namcouple", TMP / "namcouple")
    w_o2a, w_a2o = weights(OCN, ATM), weights(ATM, OCN)
    write_scrip(TMP / "rmp_ocnt_to_atmt.nc", w_o2a, OCN, ATM, seed=1)
    write_scrip(TMP / "rmp_atmt_to_ocnt.nc", w_a2o, ATM, OCN, seed=2)
    env = dict(os.environ, ESTUARY_COUPLE_TIMEOUT="60")
    env.pop("ESTUARY_CONFIG", None)  # the namcouple of the run folder, as OASIS reads it
    cmd = [MPIEXEC, "-n", "4", OCEAN, ":", "-n", "2", ATMOS]
    out = subprocess.run(cmd, cwd=TMP, capture_output=True, text=True, timeout=300, env=env)
    logs = "".join(f"\n--- {p.name}\n{p.read_text()}" for p in sorted(TMP.glob("estuary.*.log")))
    assert out.returncode == 0, " ".join(cmd) + "\n" + out.stdout + out.stderr + logs
    ocean, atmos = parse(TMP, "ocean"), parse(TMP, "atmos")
    assert sorted(ocean) == [0, 1, 2, 3] and sorted(atmos) == [4, 5], (sorted(ocean), sorted(atmos))
    for lines in list(ocean.values()) + list(atmos.values()):
        assert lines[-1] == ["END"], lines[-3:]
    return {"ocean": ocean, "atmos": atmos, "w_o2a": w_o2a, "w_a2o": w_a2o}


def records(ranks, tag):
    return [ln for lines in ranks.values() for ln in lines if ln[0] == tag]


def values(ranks, name, n):
    """{time: global vector} of the values received of field `name` (NaN where none came)."""
    got = {}
    for lines in ranks.values():
        for ln in lines:
            if ln[:2] == ["V", name]:
                t, g, v = int(ln[2]), int(ln[3]), float(ln[4])
                got.setdefault(t, np.full(n, np.nan))[g] = v
    return got


def test_fields_received(run):
    # A_SST: one ocean step late, the mean of the two ocean puts of each hour, remapped.
    a_sst = values(run["atmos"], "A_SST", ATM[0] * ATM[1])
    assert sorted(a_sst) == list(range(0, RUNTIME, 3600))
    np.testing.assert_array_equal(a_sst[0], 0.0)  # $NNOREST: the lagged field starts from zeros
    for t in range(3600, RUNTIME, 3600):
        want = run["w_o2a"] @ ((sst(t - 3600) + sst(t - 1800)) / 2)
        np.testing.assert_allclose(a_sst[t], want, rtol=1e-13, err_msg=f"A_SST at t={t}")
    # O_HEAT: the sum of the atmosphere's real(4) puts of the last 2 hours, remapped, as real(4).
    o_heat = values(run["ocean"], "O_HEAT", OCN[0] * OCN[1])
    assert sorted(o_heat) == [0, 7200, 14400]
    for t in o_heat:
        window = range(max(t - 7200 + ATM_DT, 0), t + 1, ATM_DT)
        total = sum(heat(s).astype(np.float64) for s in window)
        want = (run["w_a2o"] @ total).astype(np.float32).astype(np.float64)
        np.testing.assert_allclose(o_heat[t], want, rtol=2e-7, err_msg=f"O_HEAT at t={t}")
    # O_RUNOFF: identical basins on both sides, no mapping: exactly what the atmosphere put.
    o_run = values(run["ocean"], "O_RUNOFF", NBAS)
    assert sorted(o_run) == list(range(0, RUNTIME, 3600))
    for t, got in o_run.items():
        np.testing.assert_array_equal(got, runoff(t), err_msg=f"O_RUNOFF at t={t}")


def test_grid_files(run):
    """The ocean's OASIS-form oasis_write_grid / corner / mask / area with its partition id:
    grids.nc, masks.nc and areas.nc hold the whole 12 x 8 grid, each box at its global points."""
    import netCDF4
    nx, ny = OCN
    j, i = np.divmod(np.arange(nx * ny), nx)
    lon, lat = 30.0 * i, -70.0 + 20.0 * j
    with netCDF4.Dataset(TMP / "grids.nc") as g:
        np.testing.assert_array_equal(np.asarray(g["ocnt.lon"][:]).reshape(-1), lon)
        np.testing.assert_array_equal(np.asarray(g["ocnt.lat"][:]).reshape(-1), lat)
        clo = np.asarray(g["ocnt.clo"][:]).reshape(4, -1)
        np.testing.assert_array_equal(clo[1], lon + 15.0)
        cla = np.asarray(g["ocnt.cla"][:]).reshape(4, -1)
        np.testing.assert_array_equal(cla[2], lat + 10.0)
    with netCDF4.Dataset(TMP / "masks.nc") as m:
        np.testing.assert_array_equal(np.asarray(m["ocnt.msk"][:]).reshape(-1), np.zeros(nx * ny, dtype=int))
    with netCDF4.Dataset(TMP / "areas.nc") as a:
        np.testing.assert_array_equal(np.asarray(a["ocnt.srf"][:]).reshape(-1), 1.0 + np.arange(nx * ny))


def test_field_not_in_namcouple(run):
    """oasis_def_var of a field no entry names: OASIS_Var_Uncpl (-1) and kinfo OASIS_Ok, on every
    coupled ocean process (OASIS's mod_oasis_var; NEMO tests the id before using it)."""
    got = records(run["ocean"], "UNCPL")
    assert len(got) == 3 and all(ln == ["UNCPL", "-1", "0"] for ln in got), got


def test_get_info_codes(run):
    for ln in records(run["ocean"], "GET"):
        name, t, info = ln[1], int(ln[2]), int(ln[3])
        if name == "O_HEAT":
            assert info == (RECVD if t % 7200 == 0 else OK), ln
        else:
            assert info == (RECVOUT if t % 3600 == 0 else OK), ln
    for ln in records(run["atmos"], "GET"):
        t, info = int(ln[2]), int(ln[3])
        assert info == (FROMREST if t == 0 else RECVD if t % 3600 == 0 else OK), ln
    assert len(records(run["ocean"], "GET")) == 3 * 2 * (RUNTIME // OCN_DT)
    assert len(records(run["atmos"], "GET")) == 2 * (RUNTIME // ATM_DT)


def expected_put(name, t):
    """The info code of a put, from the namcouple (independently of estuary's code)."""
    def one(period, lag, loctrans, status):
        a = t + lag
        if a % period:
            return OK if loctrans == "INSTANT" else LOCTRANS
        if status == "OUTPUT":
            return OUTPUT
        if a >= RUNTIME:
            return TOREST
        return SENTOUT if status == "EXPOUT" else SENT

    if name == "O_SST":  # two couplings: the first that acts decides; LocTrans over Ok
        first, second = one(3600, 1800, "AVERAGE", "EXPORTED"), one(7200, 0, "INSTANT", "OUTPUT")
        return first if first not in (OK, LOCTRANS) else (second if second != OK else first)
    if name == "A_HEAT":
        return one(7200, 0, "ACCUMUL", "EXPORTED")
    return one(3600, 0, "INSTANT", "EXPOUT")


def test_put_and_put_inquire(run):
    puts = records(run["ocean"], "PUT") + records(run["atmos"], "PUT")
    assert len(puts) == 3 * (RUNTIME // OCN_DT) + 2 * 2 * (RUNTIME // ATM_DT)
    seen = set()
    for ln in puts:
        name, t, inquired, info = ln[1], int(ln[2]), int(ln[3]), int(ln[4])
        want = expected_put(name, t)
        assert inquired == want and info == want, (ln, want)
        seen.add(want)
    assert seen == {OK, SENT, LOCTRANS, TOREST, OUTPUT, SENTOUT}, seen


def test_ncpl_freqs_debug(run):
    for rank in (0, 1, 2):
        lines = run["ocean"][rank]
        freqs = {int(ln[1]): [int(x) for x in ln[2:]] for ln in lines if ln[0] == "FREQS"}
        # O_SST: two namcouple entries (to the atmosphere, to a file); the arrays' unused
        # entries keep the -1 the model set
        assert freqs == {1: [2, 3600, 7200], 2: [1, 7200, -1], 3: [1, 3600, -1]}, freqs
        assert [int(ln[1]) for ln in lines if ln[0] == "DEBUG"] == [2, 5]  # $NLOGPRT 2, then oasis_set_debug(5)
    for rank in (4, 5):
        lines = run["atmos"][rank]
        freqs = {int(ln[1]): [int(x) for x in ln[2:]] for ln in lines if ln[0] == "FREQS"}
        assert freqs == {1: [1, 3600], 2: [1, 7200], 3: [1, 3600]}, freqs
        assert [int(ln[1]) for ln in lines if ln[0] == "DEBUG"] == [2]


def test_communicators(run):
    ocean, atmos = run["ocean"], run["atmos"]
    for rank, lines in ocean.items():
        local = next(ln for ln in lines if ln[0] == "LOCAL")
        assert local == [ "LOCAL", str(rank), str(rank), "4"], local
        # after oasis_create_couplcomm, oasis_get_localcomm gives the coupling communicator
        # (MPI_COMM_NULL on the process left out), as OASIS's
        assert ["LOCALCOMM_IS_COUPLCOMM", "T"] in lines
    for rank, lines in atmos.items():
        assert next(ln for ln in lines if ln[0] == "LOCAL") == ["LOCAL", str(rank), str(rank - 4), "2"]
    # the process outside the coupling takes part in no communicator
    assert not [ln for ln in ocean[3] if ln[0] in ("INTER_REMOTE_SIZE", "INTRA", "MULTI", "FREQS", "GET", "PUT")]
    members = ["0", "1", "2", "4", "5"]  # the ocean's coupling processes first (its first rank comes first)
    for rank in (0, 1, 2):
        lines = ocean[rank]
        assert ["INTER_REMOTE_SIZE", "2"] in lines
        assert ["INTRA", str(rank), ":"] + members in lines, lines
        assert ["MULTI", "3", "0", ":"] + members in lines, lines  # root ranks of 'atmos', 'ocean'
    for rank in (4, 5):
        lines = atmos[rank]
        assert ["INTER_REMOTE_SIZE", "3"] in lines
        assert ["INTRA", str(rank - 1), ":"] + members in lines, lines
        assert ["MULTI", "3", "-1", "0", ":"] + members in lines, lines  # 'atmos', ' ', 'ocean'


def test_output_file_of_the_2d_field(run):
    """OUTPUT: the ocean's (nx, ny) boxes gathered in the global order, every 2 hours."""
    import netCDF4

    files = [p for p in TMP.glob("*.nc") if re.match(r"O_SST.*\.nc$", p.name) and "rst" not in p.name]
    assert len(files) == 1, sorted(p.name for p in TMP.glob("*.nc"))
    with netCDF4.Dataset(files[0]) as ds:
        ds.set_auto_mask(False)
        data = np.array(ds.variables["O_SST"][...])
        times = np.array(ds.variables["time"][...]) if "time" in ds.variables else None
    data = data.reshape(data.shape[0], -1)
    if times is not None:
        assert list(times) == [0, 7200, 14400], times
    for k, t in enumerate((0, 7200, 14400)):
        np.testing.assert_allclose(data[k], sst(t), rtol=1e-15, err_msg=f"O_SST output at t={t}")


def test_the_sources_are_oasis_source():
    """The models call OASIS (mod_oasis, oasis_*): the port is the build's renaming, not an edit."""
    for name in ("ocean.F90", "atmos.F90"):
        text = (HERE / name).read_text()
        assert re.search(r"(?i)USE mod_oasis", text) and not re.search(r"(?i)\b(use\s+estuary|call\s+estuary_)", text), name
        calls = {c.lower() for c in re.findall(r"(?i)CALL (oasis_\w+)", text)}
        assert {"oasis_init_comp", "oasis_get_localcomm", "oasis_def_partition", "oasis_def_var", "oasis_enddef",
                "oasis_put", "oasis_get", "oasis_put_inquire", "oasis_get_ncpl", "oasis_get_freqs",
                "oasis_get_intercomm", "oasis_get_intracomm", "oasis_get_multi_intracomm", "oasis_terminate",
                "oasis_abort", "oasis_get_debug"} <= calls, calls
