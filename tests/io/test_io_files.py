# The files estuary's I/O writes, read by independent readers (netCDF4, xarray, ncdump, CDO)
# and compared with reference arrays computed here from global indices: from 1 to 8 model ranks,
# several decompositions, 1 and 2 writers, both modes; temporal operations; CF metadata; the
# exception and SIGTERM paths; and identical contents whatever the rank counts.
import math
import os
import shutil
import subprocess

import netCDF4
import numpy as np
import pytest
import xarray as xr

NX, NY, NLEV = 12, 8, 3
NSTEPS = 12

CONFIG = """output:
  mode: {mode}
  writers: {writers}
  directory: {dir}
  calendar: noleap
  reference_time: "2001-01-01 00:00:00"
  files:
    - name: inst
      output_freq: 2h
      fields: [{{name: t3, precision: double}}, {{name: sst, precision: float}}]
    - name: stats
      output_freq: 3h
      fields:
        - {{name: t3, operation: average, precision: double}}
        - {{name: sst, operation: maximum, precision: double}}
    - name: stats2
      output_freq: 3h
      fields:
        - {{name: t3, operation: minimum, precision: double}}
        - {{name: sst, operation: accumulate, precision: double}}
    - name: const
      output_freq: 1d
      restart: true
      fields: [{{name: sst, operation: once, precision: double}}]
"""


def value3(step):
    g = np.arange(NLEV * NY * NX, dtype=np.float64)
    return (0.5 * g + step).reshape(NLEV, NY, NX)


def value2(step):
    g = np.arange(NY * NX, dtype=np.float64)
    return (np.sin(0.1 * g) + 0.25 * step).reshape(NY, NX)


def run(io_env, ranks, decomp, mode, writers, extra=(), nsteps=NSTEPS, name=None, config=CONFIG, env=None):
    d = os.path.join(io_env["tmp"], name or f"np{ranks}_{mode}_w{writers}_{decomp}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "io.yaml")
    with open(cfg, "w") as f:
        f.write(config.format(mode=mode, writers=writers, dir=d))
    cmd = [io_env["mpiexec"], "-n", str(ranks), io_env["writer"], cfg, decomp, str(nsteps), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=None if env is None else {**os.environ, **env})
    return d, p


CASES = [
    (1, "block", "serverless", 1),
    (2, "cyclic", "serverless", 2),
    (3, "boxes", "serverless", 2),
    (4, "perm", "serverless", 1),
    (5, "boxes", "serverless", 2),
    (8, "cyclic", "serverless", 2),
    (2, "block", "server", 1),
    (3, "block", "server", 1),
    (4, "perm", "server", 2),
    (6, "boxes", "server", 2),
    (8, "rank0", "server", 1),
]


def check_complete(d, n_inst=NSTEPS // 2, n_stats=NSTEPS // 3, n_inst_sst=None, n_stats_sst=None,
                   file_format="NETCDF3_64BIT_DATA"):
    """Every record handed over, equal to the reference; CF metadata present and correct."""
    n_inst_sst = n_inst if n_inst_sst is None else n_inst_sst
    n_stats_sst = n_stats if n_stats_sst is None else n_stats_sst
    with netCDF4.Dataset(os.path.join(d, "inst.nc")) as ds:
        assert ds.file_format == file_format
        assert ds.Conventions == "CF-1.8"
        t = ds["time"]
        assert t.units == "seconds since 2001-01-01 00:00:00" and t.calendar == "noleap"
        assert len(t) == n_inst
        np.testing.assert_array_equal(t[:], 7200.0 * np.arange(1, n_inst + 1))
        # A lon-lat grid: CF 1-D coordinate variables lon(lon), lat(lat) with bounds.
        assert ds["t3"].dimensions == ("time", "lev", "lat", "lon")
        assert ds["t3"].dtype == np.float64 and ds["sst"].dtype == np.float32
        assert ds["t3"].units == "K" and ds["t3"].standard_name == "sea_water_temperature"
        assert "coordinates" not in ds["t3"].ncattrs()
        assert ds["lon"].units == "degrees_east" and ds["lat"].units == "degrees_north"
        assert ds["lon"].axis == "X" and ds["lat"].axis == "Y" and ds["lat"].standard_name == "latitude"
        assert ds["lon"].bounds == "lon_bnds" and ds["lon_bnds"].shape == (NX, 2)
        assert ds["lat"].bounds == "lat_bnds" and ds["lat_bnds"].shape == (NY, 2)
        np.testing.assert_array_equal(ds["lev"][:], [10.0, 50.0, 200.0])
        assert ds["lev"].standard_name == "depth" and ds["lev"].positive == "down" and ds["lev"].axis == "Z"
        # The lonlat grid: centres at i*360/nx and the middles of ny equal latitude bands.
        np.testing.assert_allclose(ds["lon"][:], 30.0 * np.arange(NX), atol=1e-12)
        np.testing.assert_allclose(ds["lat"][:], -90 + 22.5 * (np.arange(NY) + 0.5), atol=1e-12)
        np.testing.assert_allclose(ds["lon_bnds"][:], np.stack([30.0 * np.arange(NX) - 15, 30.0 * np.arange(NX) + 15], 1),
                                   atol=1e-12)
        np.testing.assert_allclose(ds["lat_bnds"][:], np.stack([-90 + 22.5 * np.arange(NY), -90 + 22.5 * np.arange(1, NY + 1)], 1),
                                   atol=1e-12)
        assert "estuary" in ds.history and ds.source
        for r in range(n_inst):
            np.testing.assert_array_equal(ds["t3"][r], value3(2 * (r + 1)))
        for r in range(n_inst_sst):
            np.testing.assert_allclose(ds["sst"][r], value2(2 * (r + 1)).astype(np.float32), rtol=1e-6)
    with netCDF4.Dataset(os.path.join(d, "stats.nc")) as ds, netCDF4.Dataset(os.path.join(d, "stats2.nc")) as ds2:
        t = ds["time"]
        assert t.bounds == "time_bnds" and len(t) == n_stats
        np.testing.assert_array_equal(t[:], 5400.0 + 10800.0 * np.arange(n_stats))
        np.testing.assert_array_equal(ds["time_bnds"][:], np.stack([10800.0 * np.arange(n_stats), 10800.0 * np.arange(1, n_stats + 1)], axis=1))
        assert ds["t3"].cell_methods == "time: mean" and ds["sst"].cell_methods == "time: maximum"
        assert ds2["t3"].cell_methods == "time: minimum" and ds2["sst"].cell_methods == "time: sum"
        for r in range(n_stats):
            steps = [3 * r + 1, 3 * r + 2, 3 * r + 3]
            # The reference in the order the library adds: ((s1 + s2) + s3) / 3.
            avg = ((value3(steps[0]) + value3(steps[1])) + value3(steps[2])) / 3
            np.testing.assert_array_equal(ds["t3"][r], avg)
            np.testing.assert_array_equal(ds2["t3"][r], value3(steps[0]))
        for r in range(n_stats_sst):
            steps = [3 * r + 1, 3 * r + 2, 3 * r + 3]
            np.testing.assert_allclose(ds["sst"][r], value2(steps[2]), rtol=1e-14)
            np.testing.assert_allclose(ds2["sst"][r], (value2(steps[0]) + value2(steps[1])) + value2(steps[2]), rtol=1e-14)
    # A restart file (once): renamed from its temporary name.
    assert not os.path.exists(os.path.join(d, "const.nc.tmp"))
    with netCDF4.Dataset(os.path.join(d, "const.nc")) as ds:
        assert "time" not in ds.dimensions
        np.testing.assert_allclose(ds["sst"][:], value2(1), rtol=1e-14)


@pytest.mark.parametrize("ranks,decomp,mode,writers", CASES)
def test_write_read_back(io_env, ranks, decomp, mode, writers):
    d, p = run(io_env, ranks, decomp, mode, writers)
    assert p.returncode == 0, p.stdout + p.stderr
    check_complete(d)
    # xarray decodes the CF time axis (noleap calendar) and bounds.
    with xr.open_dataset(os.path.join(d, "stats.nc"), use_cftime=True) as ds:
        assert str(ds.time.values[0]) == "2001-01-01 01:30:00"
        assert ds.t3.shape == (NSTEPS // 3, NLEV, NY, NX)
        assert "time_bnds" in ds
    # ncdump and CDO open every file; CDO sees a regular lon-lat grid (1-D axes) with its cell bounds.
    for f in ("inst", "stats", "stats2", "const"):
        subprocess.run(["ncdump", "-h", os.path.join(d, f + ".nc")], check=True, capture_output=True)
    info = subprocess.run(["cdo", "-s", "sinfon", os.path.join(d, "stats.nc")], check=True,
                          capture_output=True, text=True).stdout
    assert "lonlat" in info and "cellbounds" in info and f"{NSTEPS // 3} steps" in info


def test_contents_independent_of_rank_counts(io_env):
    """The same variables, bit for bit, from different model and writer counts and modes."""
    base = None
    for ranks, decomp, mode, writers in [(1, "block", "serverless", 1), (5, "perm", "serverless", 2),
                                         (4, "boxes", "server", 2)]:
        d, p = run(io_env, ranks, decomp, mode, writers, name=f"same_{ranks}_{mode}")
        assert p.returncode == 0, p.stdout + p.stderr
        got = {}
        for f in ("inst", "stats", "stats2", "const"):
            with netCDF4.Dataset(os.path.join(d, f + ".nc")) as ds:
                for v in ds.variables:
                    got[(f, v)] = np.asarray(ds[v][:])
        if base is None:
            base = got
        else:
            assert got.keys() == base.keys()
            for k in base:
                np.testing.assert_array_equal(got[k], base[k], err_msg=str(k))


@pytest.mark.parametrize("ranks,decomp,mode,writers", [(4, "boxes", "serverless", 2), (3, "cyclic", "server", 1)])
def test_exception_keeps_records(io_env, ranks, decomp, mode, writers):
    d, p = run(io_env, ranks, decomp, mode, writers, extra=("throw-at", "8"))
    assert p.returncode != 0 and "exception: model failure at step 8" in p.stdout, p.stdout + p.stderr
    # Steps 1-7 were handed over: hours 2, 4, 6 (2h) and 3, 6 (3h).
    check_complete(d, n_inst=3, n_stats=2)


def first_output_step(s):
    while s % 2 and s % 3:
        s += 1
    return s


@pytest.mark.parametrize("ranks,decomp,mode,writers,at", [(4, "cyclic", "server", 1, 7), (3, "perm", "serverless", 2, 5),
                                                         (5, "boxes", "serverless", 1, 7)])
def test_sigterm_keeps_records(io_env, ranks, decomp, mode, writers, at):
    d, p = run(io_env, ranks, decomp, mode, writers, extra=("sigterm-at", str(at)))
    assert p.returncode != 0 and "terminated: estuary: SIGTERM received" in p.stdout, p.stdout + p.stderr
    # The ranks agree at the first output step at or after the signal; t3 is written before sst
    # in each step, so at that step t3's records are handed over and sst's are not: those
    # records are incomplete and must not appear (atomic records); every earlier one is whole.
    s = first_output_step(at)
    check_complete(d, n_inst=(s - 1) // 2, n_stats=(s - 1) // 3)


def test_malformed_config_fails_with_its_message(io_env):
    d = os.path.join(io_env["tmp"], "badcfg")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "io.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(mode="serverless", writers=1, dir=d).replace("output_freq: 3h", "output_freq: often", 1))
    p = subprocess.run([io_env["mpiexec"], "-n", "2", io_env["writer"], cfg, "block", "4"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert f"bad duration 'often' ({cfg}:12, key output.files[1] (stats).output_freq)" in p.stdout, p.stdout


@pytest.mark.parametrize("mode,ranks,writers", [("serverless", 3, 2), ("server", 3, 1)])
def test_sigterm_from_outside(io_env, mode, ranks, writers):
    """SIGTERM sent to mpirun (as a batch system does) while the model computes: the files are
    valid and hold every record handed over, each equal to the reference."""
    import signal
    import time

    d = os.path.join(io_env["tmp"], f"kill_{mode}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "io.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(mode=mode, writers=writers, dir=d))
    cmd = [io_env["mpiexec"], "-n", str(ranks), io_env["writer"], cfg, "cyclic", "100000", "sleep-ms", "20"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until the files exist, then for a few records (hourly steps of 20 ms; the record
    # count in a netCDF header is only updated at close, so it cannot be polled).
    deadline = time.time() + 60
    while time.time() < deadline and not os.path.exists(os.path.join(d, "inst.nc")):
        time.sleep(0.1)
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert "terminated: estuary: SIGTERM received" in out, out + err
    with netCDF4.Dataset(os.path.join(d, "inst.nc")) as ds:
        n = len(ds["time"])
        assert n >= 3
        np.testing.assert_array_equal(ds["time"][:], 7200.0 * np.arange(1, n + 1))
        # Only whole records: sst of the step the signal interrupted is not there, nor its t3.
        for r in range(n):
            np.testing.assert_array_equal(ds["t3"][r], value3(2 * (r + 1)))
            np.testing.assert_allclose(ds["sst"][r], value2(2 * (r + 1)).astype(np.float32), rtol=1e-6)
    for f in ("stats", "stats2", "const"):
        subprocess.run(["ncdump", "-h", os.path.join(d, f + ".nc")], check=True, capture_output=True)
    assert not os.path.exists(os.path.join(d, "const.nc.tmp"))
