"""The `estuary` command line on small inputs, its JSON checked against independent references
(numpy formulas for the plans, netCDF4 and numpy for the weight file). These tests start mpirun
themselves, so they run outside mpirun (ctest entry python_cli, not the python_npN ones)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest



def estuary_cli(*args, check=True, cwd=None):
    out = subprocess.run([sys.executable, "-m", "estuary", *args], capture_output=True, text=True, timeout=240,
                         cwd=cwd)
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def block_ref(n, r, p):
    return np.arange(r * n // p, (r + 1) * n // p)


def cyclic_ref(n, r, p):
    return np.arange(r, n, p)


@pytest.mark.parametrize("n,ranks", [(20, 1), (23, 3), (64, 2)])
def test_inspect_plan_json(n, ranks):
    rec = json.loads(estuary_cli("inspect", "plan", "--src", "block", "--dst", "cyclic", "--n", str(n),
                                 "--ranks", str(ranks), "--json").stdout)
    assert rec["ranks"] == ranks and rec["n"] == n and rec["algorithm"] == "p2p"
    # reference: who owns each index on either side
    src_owner = np.empty(n, int)
    dst_owner = np.empty(n, int)
    for r in range(ranks):
        src_owner[block_ref(n, r, ranks)] = r
        dst_owner[cyclic_ref(n, r, ranks)] = r
    m = np.zeros((ranks, ranks), int)
    np.add.at(m, (src_owner, dst_owner), 8)
    assert rec["matrix_bytes"] == m.tolist()
    for r, row in enumerate(rec["per_rank"]):
        off = m[r].copy()
        off[r] = 0
        offr = m[:, r].copy()
        offr[r] = 0
        assert row["rank"] == r
        assert row["src_elements"] == len(block_ref(n, r, ranks))
        assert row["dst_elements"] == len(cyclic_ref(n, r, ranks))
        assert row["messages_sent"] == int((off > 0).sum())
        assert row["bytes_sent"] == int(off.sum())
        assert row["messages_received"] == int((offr > 0).sum())
        assert row["bytes_received"] == int(offr.sum())
        assert row["bytes_self"] == int(m[r, r])
        assert row["stages"] >= 1
    assert rec["total"]["bytes"] == int(m.sum() - np.trace(m))


def test_inspect_plan_table_and_errors():
    out = estuary_cli("inspect", "plan", "--src", "block", "--dst", "cyclic", "--n", "10", "--ranks", "2").stdout
    assert "messages_sent" in out and "bytes sent" in out
    bad = estuary_cli("inspect", "plan", "--src", "nosuch", "--dst", "cyclic", "--n", "10", "--ranks", "2",
                      check=False)
    assert bad.returncode != 0 and "nosuch" in bad.stderr


def lonlat_centres(nlon, nlat):
    """CDO's rNLONxNLAT centres (point index: longitude fastest), as unit vectors."""
    lon = np.arange(nlon) * 360.0 / nlon
    lat = -90.0 + (np.arange(nlat) + 0.5) * 180.0 / nlat
    lo, la = np.meshgrid(np.radians(lon), np.radians(lat))
    lo, la = lo.ravel(), la.ravel()
    return np.stack([np.cos(la) * np.cos(lo), np.cos(la) * np.sin(lo), np.sin(la)], axis=1)


@pytest.mark.parametrize("ranks", [1, 2])
def test_weights_distance_file(tmp_path, ranks):
    import netCDF4  # installed by scripts/setup (the I/O tests' reader too)
    path = tmp_path / "w.nc"
    rec = json.loads(estuary_cli("weights", "--src", "lonlat:12x6", "--dst", "lonlat:7x5", "--method", "distance",
                                 "--out", str(path), "--ranks", str(ranks), "--json").stdout)
    assert rec["src_size"] == 72 and rec["dst_size"] == 35 and rec["ranks"] == ranks
    with netCDF4.Dataset(path) as f:
        src_addr = f["src_address"][:] - 1
        dst_addr = f["dst_address"][:] - 1
        w = f["remap_matrix"][:, 0]
        assert f.dimensions["src_grid_size"].size == 72 and f.dimensions["dst_grid_size"].size == 35
        assert f.map_method.startswith("Distance")
    assert rec["links"] == len(w) == 4 * 35
    # reference: the 4 nearest source centres by chord length, weights 1/d normalised
    s, d = lonlat_centres(12, 6), lonlat_centres(7, 5)
    for j in range(35):
        k = dst_addr == j
        assert k.sum() == 4
        dist = np.linalg.norm(s - d[j], axis=1)
        near = np.argsort(dist, kind="stable")[:4]
        assert np.isclose(np.sort(dist[src_addr[k]])[-1], np.sort(dist)[3], atol=1e-6), j
        assert abs(w[k].sum() - 1) < 1e-12
        inv = 1.0 / dist[src_addr[k]]
        np.testing.assert_allclose(w[k], inv / inv.sum(), rtol=1e-6)
        assert set(src_addr[k]) == set(near) or np.isclose(dist[near[3]], dist[near[2]], atol=1e-6), j


@pytest.mark.parametrize("ranks", [1, 2])
def test_weights_conservative_file_equals_cdo_gencon(tmp_path, ranks):
    # CDO's rNLONxNLAT grids with an even NLAT are estuary's lonlat:NLONxNLAT (with an odd one CDO
    # puts rows on the poles); CDO generates its own weights here.
    import netCDF4
    path, ref = tmp_path / "w.nc", tmp_path / "cdo.nc"
    rec = json.loads(estuary_cli("weights", "--src", "lonlat:12x6", "--dst", "lonlat:7x4", "--method", "conservative",
                                 "--out", str(path), "--ranks", str(ranks), "--json").stdout)
    assert rec["links"] > 28
    subprocess.run(["cdo", "-s", "-O", "gencon,r7x4", "-const,1,r12x6", str(ref)], check=True)

    def links(p):
        with netCDF4.Dataset(p) as f:
            s, d, w = f["src_address"][:] - 1, f["dst_address"][:] - 1, f["remap_matrix"][:, 0]
            frac = f["dst_grid_frac"][:]
            norm = f.normalization
        order = np.lexsort((s, d))
        return s[order], d[order], w[order], frac, norm

    s1, d1, w1, f1, n1 = links(path)
    s2, d2, w2, f2, n2 = links(ref)
    assert n1 == n2 == "fracarea"
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(d1, d2)
    np.testing.assert_allclose(w1, w2, rtol=0, atol=1e-10)
    np.testing.assert_allclose(f1, f2, rtol=0, atol=1e-10)  # dst_grid_frac written


def _box_average(l1, l2, p1, p2):
    """The exact average of f(x) = x + 2z over lon-lat boxes (degrees)."""
    l1, l2, p1, p2 = map(np.radians, (l1, l2, p1, p2))
    area = (l2 - l1) * (np.sin(p2) - np.sin(p1))
    ix = (np.sin(l2) - np.sin(l1)) * ((p2 - p1) / 2 + (np.sin(2 * p2) - np.sin(2 * p1)) / 4)
    iz = (l2 - l1) * (np.sin(p2) ** 2 - np.sin(p1) ** 2) / 2
    return (ix + 2 * iz) / area


def _lonlat_averages(nlon, nlat):
    """Cell averages of x + 2z on CDO's rNLONxNLAT grid (even NLAT), its centre lats and lons."""
    dl, dp = 360 / nlon, 180 / nlat
    i, j = np.arange(nlon), np.arange(nlat)
    l1, p1 = np.meshgrid(i * dl - dl / 2, -90 + j * dp)
    return _box_average(l1, l1 + dl, p1, p1 + dp), -90 + (j + 0.5) * dp, i * dl


def test_weights_conservative2_against_cdo_remapcon2(tmp_path):
    """Second order against CDO's (gencon2/remapcon2, SCRIP's method), both judged by the exact cell
    averages of a linear field: estuary's first order equals CDO's remapcon to 1e-12, its second
    order is far more accurate than first order and than CDO's remapcon2 (rows within 60 degrees
    of the equator), and gencon2's first weight column equals estuary's first-order weights.
    (CDO 2.1's remapcon2 is hardly better than first order on this field.)"""
    import netCDF4
    S, D = (72, 36), (50, 26)
    fs, slat, slon = _lonlat_averages(*S)
    fd, dlat, _ = _lonlat_averages(*D)
    src = tmp_path / "src.nc"
    with netCDF4.Dataset(src, "w") as f:
        f.createDimension("lat", S[1])
        f.createDimension("lon", S[0])
        v = f.createVariable("lat", "f8", ("lat",))
        v[:], v.units = slat, "degrees_north"
        v = f.createVariable("lon", "f8", ("lon",))
        v[:], v.units = slon, "degrees_east"
        f.createVariable("f", "f8", ("lat", "lon"))[:] = fs
    cdo = {}
    for op in ("remapcon", "remapcon2", "gencon2"):
        out = tmp_path / f"{op}.nc"
        subprocess.run(["cdo", "-s", "-O", f"{op},r{D[0]}x{D[1]}", str(src), str(out)], check=True)
        if op != "gencon2":
            with netCDF4.Dataset(out) as f:
                cdo[op] = np.asarray(f["f"][:]).reshape(D[1], D[0])
    ours, links = {}, {}
    for m in ("conservative", "conservative2"):
        path = tmp_path / f"{m}.nc"
        estuary_cli("weights", "--src", f"lonlat:{S[0]}x{S[1]}", "--dst", f"lonlat:{D[0]}x{D[1]}", "--method", m,
                    "--out", str(path), "--ranks", "2")
        with netCDF4.Dataset(path) as f:
            s, d, w = f["src_address"][:] - 1, f["dst_address"][:] - 1, f["remap_matrix"][:, 0]
        out = np.zeros(D[0] * D[1])
        np.add.at(out, d, w * fs.ravel()[s])
        ours[m] = out.reshape(D[1], D[0])
        order = np.lexsort((s, d))
        links[m] = (s[order], d[order], w[order])
    rows = np.abs(dlat) <= 60
    err = {k: np.abs(v - fd)[rows].max() for k, v in {**cdo, **ours}.items()}
    print(err)
    np.testing.assert_allclose(ours["conservative"], cdo["remapcon"], rtol=0, atol=1e-12)
    assert err["conservative2"] < 0.05 * err["conservative"]
    assert err["conservative2"] < 0.5 * err["remapcon2"]
    with netCDF4.Dataset(tmp_path / "gencon2.nc") as f:
        s, d, w = f["src_address"][:] - 1, f["dst_address"][:] - 1, f["remap_matrix"][:, 0]
    # SCRIP's line integrals also link cells that only touch (first weight 0, moments not): the
    # first weights must match on estuary's links and be 0 on the others.
    theirs = dict(zip(zip(d.tolist(), s.tolist()), w.tolist()))
    mine = dict(zip(zip(links["conservative"][1].tolist(), links["conservative"][0].tolist()),
                    links["conservative"][2].tolist()))
    assert set(mine) <= set(theirs)
    assert max(abs(theirs[k] - v) for k, v in mine.items()) < 1e-10
    assert max(abs(v) for k, v in theirs.items() if k not in mine) < 1e-10


def test_weights_bad_grid(tmp_path):
    bad = estuary_cli("weights", "--src", "lonlat:12", "--dst", "lonlat:7x5", "--out", str(tmp_path / "w.nc"),
                      check=False)
    assert bad.returncode != 0 and "lonlat:12" in bad.stderr


def test_demo_dry_run_and_missing_binary(tmp_path):
    toy = os.environ.get("ESTUARY_TOY_ATM_OCN")
    if toy:
        rec = json.loads(estuary_cli("demo", "--dry-run", "--json", "--dir", str(tmp_path / "d")).stdout)
        assert rec["command"][-2] == toy and rec["command"][-1] == str(tmp_path / "d")
    bad = estuary_cli("demo", "--binary", str(tmp_path / "none"), "--dry-run", check=False)
    if not toy:
        assert bad.returncode != 0 and "toy_atm_ocn" in bad.stderr


def test_demo_runs(tmp_path):
    assert os.environ.get("ESTUARY_TOY_ATM_OCN"), "ctest sets ESTUARY_TOY_ATM_OCN to the built toy_atm_ocn"
    rec = json.loads(estuary_cli("demo", "--json", "--dir", str(tmp_path / "demo")).stdout)
    assert rec["returncode"] == 0, rec["output"][-2000:]
    assert any((tmp_path / "demo").iterdir())


@pytest.mark.parametrize("how", ["method", "function"])
def test_abort_ends_the_whole_run_with_the_message(tmp_path, how):
    """Component.abort / estuary.couple.abort (oasis_abort): the message on stderr, the whole run
    ended with a non-zero status (the rank that does not abort would otherwise wait for ever)."""
    call = "comp.abort('the sky fell', 3)" if how == "method" else "pyoasis.abort('the sky fell', 3)"
    script = tmp_path / "abort.py"
    script.write_text(
        "from mpi4py import MPI\nimport estuary.couple as pyoasis\n"
        "comp = pyoasis.Component('ab')\n"
        f"if MPI.COMM_WORLD.rank == 1:\n    {call}\n"
        "MPI.COMM_WORLD.Barrier()\n")
    out = subprocess.run([os.environ.get("ESTUARY_MPIEXEC", "mpirun"), "-n", "2", sys.executable, str(script)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "estuary abort: component ab: the sky fell" in out.stderr


# ---- estuary inspect schedule ----

def test_inspect_schedule_p2p_json_and_png(tmp_path):
    """p2p: the schedule's matrix is the plan's (numpy reference); the PNG is written."""
    n, ranks = 23, 3
    png = tmp_path / "m.png"
    rec = json.loads(estuary_cli("inspect", "schedule", "--src", "block", "--dst", "cyclic", "--n", str(n),
                                 "--ranks", str(ranks), "--png", str(png), "--json").stdout)
    src_owner, dst_owner = np.empty(n, int), np.empty(n, int)
    for r in range(ranks):
        src_owner[block_ref(n, r, ranks)] = r
        dst_owner[cyclic_ref(n, r, ranks)] = r
    m = np.zeros((ranks, ranks), int)
    np.add.at(m, (src_owner, dst_owner), 8)
    off = m - np.diag(np.diag(m))
    assert rec["algorithm"] == "p2p" and rec["total"]["stages"] == 1
    assert rec["matrix_bytes"] == off.tolist()
    for r, row in enumerate(rec["per_rank"]):
        assert row["rank"] == r and row["stages"] == 1
        assert row["bytes_sent"] == off[r].sum() and row["bytes_received"] == off[:, r].sum()
        assert row["messages_sent"] == (off[r] > 0).sum() and row["bytes_copied"] == m[r, r]
    assert rec["per_stage"] == [{"stage": 0, "messages": int((off > 0).sum()), "bytes": int(off.sum()),
                                 "ranks_sending": int((off.sum(axis=1) > 0).sum())}]
    assert rec["png"] == str(png.resolve())
    data = png.read_bytes()
    assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"


def test_inspect_schedule_butterfly_forwards(tmp_path):
    """butterfly on 4 ranks: 2 stages, one partner a stage, what is sent is received, and
    all the data that must cross ranks does (forwarded bytes make the total larger)."""
    n, ranks = 1000, 4
    rec = json.loads(estuary_cli("inspect", "schedule", "--src", "block", "--dst", "transpose2d", "--n", str(n),
                                 "--ranks", str(ranks), "--algorithm", "butterfly", "--fields", "2", "--no-png",
                                 "--json", cwd=tmp_path).stdout)
    m = np.array(rec["matrix_bytes"])
    assert rec["algorithm"] == "butterfly" and rec["total"]["stages"] == 2 and rec["png"] is None
    assert list(tmp_path.iterdir()) == []
    assert ((m > 0) == (m.T > 0)).all()  # pairwise exchanges
    assert all(r["messages_sent"] <= 2 for r in rec["per_rank"])  # one partner a stage
    assert [r["bytes_sent"] for r in rec["per_rank"]] == m.sum(axis=1).tolist()
    assert [r["bytes_received"] for r in rec["per_rank"]] == m.sum(axis=0).tolist()
    assert sum(s["bytes"] for s in rec["per_stage"]) == m.sum() == rec["total"]["bytes"]
    plan = json.loads(estuary_cli("inspect", "plan", "--src", "block", "--dst", "transpose2d", "--n", str(n),
                                  "--ranks", str(ranks), "--bytes-per-element", "16", "--json").stdout)
    assert m.sum() >= plan["total"]["bytes"] > 0


def test_inspect_schedule_table_and_errors(tmp_path):
    out = estuary_cli("inspect", "schedule", "--src", "block", "--dst", "cyclic", "--n", "12", "--ranks", "2",
                      cwd=tmp_path).stdout
    assert "schedule p2p" in out and "per stage:" in out and "communication matrix:" in out
    assert (tmp_path / "estuary_schedule_block_cyclic_p2p_p2.png").stat().st_size > 0
    bad = estuary_cli("inspect", "schedule", "--src", "block", "--dst", "cyclic", "--n", "12", "--ranks", "2",
                      "--algorithm", "nonsense", "--no-png", check=False)
    assert bad.returncode != 0 and "nonsense" in bad.stderr


# ---- estuary bench ----

def test_bench_json_table_file_and_progress(tmp_path):
    out_file = tmp_path / "r.jsonl"
    env = dict(os.environ, ESTUARY_PROGRESS="1", ESTUARY_PROGRESS_DELAY="0")
    res = subprocess.run([sys.executable, "-m", "estuary", "bench", "redist", "--ranks", "1,2", "--out", str(out_file),
                          "--json", "--n", "2000", "--iterations", "2", "--dst", "cyclic"],
                         capture_output=True, text=True, timeout=240, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    rec = json.loads(res.stdout)
    assert rec["ok"] and rec["bench"] == "redist" and rec["out"] == str(out_file)
    assert [r["ranks"] for r in rec["runs"]] == [1, 2] and all(r["returncode"] == 0 for r in rec["runs"])
    assert [r["ranks"] for r in rec["records"]] == [1, 2]
    assert all(r["n"] == 2000 and r["dst"] == "cyclic" and r["errors"] == 0 for r in rec["records"])
    saved = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert saved == rec["records"]
    assert "estuary bench redist [" in res.stderr and "2/2" in res.stderr  # the progress bar
    # the table (no --json), options after `--` go to the benchmark
    res = estuary_cli("bench", "allreduce", "--ranks", "2", "--out", str(tmp_path / "a.jsonl"), "--",
                      "--counts", "1,8", "--iterations", "3")
    lines = res.stdout.splitlines()
    assert "algorithm" in lines[0] and "time_s_min" in lines[0] and "ranks" in lines[0]
    n = len((tmp_path / "a.jsonl").read_text().splitlines())
    assert n >= 4 and f"{n} records from 1 runs" in res.stdout


def test_bench_errors(tmp_path):
    res = estuary_cli("bench", "nosuchbench", check=False)
    assert res.returncode == 2 and 'benchmark "nosuchbench" not found' in res.stderr
    res = estuary_cli("bench", "redist", "--ranks", "0", check=False)
    assert res.returncode == 2 and "--ranks" in res.stderr
    res = estuary_cli("bench", "redist", "--ranks", "1", "--json", "--out", str(tmp_path / "x.jsonl"),
                      "--src", "nonsense", check=False)
    assert res.returncode == 1
    rec = json.loads(res.stdout)
    assert not rec["ok"] and rec["runs"][0]["returncode"] != 0


def test_demo_languages_dry_run(tmp_path):
    """`estuary demo --atmos python --ocean fortran`: an MPMD launch of the two toys (the runs
    themselves are checked bit for bit against the all-C++ run by test_toy_mixed.py)."""
    toy = os.environ.get("ESTUARY_TOY_ATM_OCN")
    if not toy:
        pytest.fail("ESTUARY_TOY_ATM_OCN not set (run from ctest, which sets it)")
    rec = json.loads(estuary_cli("demo", "--atmos", "python", "--ocean", "fortran", "--ranks", "5", "--dir",
                                 str(tmp_path), "--dry-run", "--json").stdout)
    cmd = rec["command"]
    colon = cmd.index(":")
    assert cmd[1:3] == ["-n", "2"] and cmd[3] == sys.executable and cmd[4].endswith("examples/toy_atm_ocn.py")
    assert cmd[5:colon] == ["atmos", str(tmp_path)]
    assert cmd[colon + 1:colon + 3] == ["-n", "3"] and cmd[colon + 3].endswith("toy_atm_ocn_f")
    assert cmd[colon + 4:] == ["ocean", str(tmp_path)]
    rec = json.loads(estuary_cli("demo", "--dir", str(tmp_path), "--dry-run", "--json").stdout)
    assert rec["command"][-2:] == [toy, str(tmp_path)] or rec["command"][-1] == str(tmp_path)
    bad = estuary_cli("demo", "--ocean", "cobol", check=False)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
