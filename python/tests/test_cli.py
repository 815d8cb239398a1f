"""The `estuary` command line on small inputs, its JSON checked against independent references
(numpy formulas for the plans, netCDF4 and numpy for the weight file). These tests start mpirun
themselves, so they run outside mpirun (ctest entry python_cli, not the python_npN ones)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest



def estuary_cli(*args, check=True):
    out = subprocess.run([sys.executable, "-m", "estuary", *args], capture_output=True, text=True, timeout=240)
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
