"""examples/io_server.{cpp,c,F90,py}: each runs as a user runs it (mpirun -n 3 from a folder
holding io_server.yaml: 2 model ranks and 1 server) and writes files that netCDF4 reads back
equal to the examples' formula, independently computed here: every hourly sample, the 6-hour
means, the lon-lat coordinates of estuary's grid; the four languages' files hold the same values.

Environment (set by ctest): ESTUARY_EXAMPLES_DIR (the built examples), ESTUARY_EXAMPLES_SRC,
ESTUARY_MPIEXEC, ESTUARY_EXAMPLES_PYTHONPATH (empty when the Python module is not built).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import netCDF4  # scripts/setup installs it: a missing reader is a failure, not a skip

BIN = Path(os.environ.get("ESTUARY_EXAMPLES_DIR", "build/examples"))
SRC = Path(os.environ.get("ESTUARY_EXAMPLES_SRC", "examples"))
MPIEXEC = os.environ.get("ESTUARY_MPIEXEC", "mpirun")
PYPATH = os.environ.get("ESTUARY_EXAMPLES_PYTHONPATH", "")
NX, NY, STEPS = 36, 18, 12

LANGS = {"cpp": [str(BIN / "io_server")], "c": [str(BIN / "io_server_c")]}
if (BIN / "io_server_f").exists():
    LANGS["fortran"] = [str(BIN / "io_server_f")]
if PYPATH:
    LANGS["python"] = [sys.executable, str(SRC / "io_server.py")]


def expected(s):
    g = np.arange(NX * NY)
    return (270.0 + 0.25 * (g % NX) + 0.5 * (g // NX) + s).reshape(NY, NX)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for lang, cmd in LANGS.items():
        d = tmp_path_factory.mktemp(lang)
        shutil.copy(SRC / "io_server.yaml", d)
        env = dict(os.environ, PYTHONPATH=PYPATH + os.pathsep + os.environ.get("PYTHONPATH", ""))
        p = subprocess.run([MPIEXEC, "-n", "3", *cmd], cwd=d, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"{lang}: {p.stdout}\n{p.stderr}"
        assert "12 hours written" in p.stdout, p.stdout
        out[lang] = d / "io_server_out"
    return out


def test_every_language_is_run():
    assert {"cpp", "c"} <= set(LANGS)


@pytest.mark.parametrize("lang", list(LANGS))
def test_hourly_samples(runs, lang):
    with netCDF4.Dataset(runs[lang] / "sst_1h.nc") as nc:
        sst = nc["sst"]
        assert sst.shape == (STEPS, NY, NX)
        assert sst.units == "K" and sst.standard_name == "sea_surface_temperature"
        np.testing.assert_array_equal(nc["time"][:], 3600.0 * np.arange(1, STEPS + 1))
        for s in range(1, STEPS + 1):
            np.testing.assert_array_equal(sst[s - 1], expected(s))
        np.testing.assert_array_equal(nc["lon"][:], np.arange(NX) * (360.0 / NX))
        np.testing.assert_array_equal(nc["lat"][:], -90.0 + (np.arange(NY) + 0.5) * (180.0 / NY))


@pytest.mark.parametrize("lang", list(LANGS))
def test_six_hour_means(runs, lang):
    with netCDF4.Dataset(runs[lang] / "sst_6h.nc") as nc:
        sst = nc["sst"]
        assert sst.shape == (2, NY, NX)
        for k in range(2):
            mean = np.mean([expected(s) for s in range(6 * k + 1, 6 * k + 7)], axis=0)
            np.testing.assert_allclose(sst[k], mean, rtol=1e-15)
        np.testing.assert_array_equal(nc["time_bnds"][:], [[0, 21600], [21600, 43200]])


def test_languages_write_the_same_values(runs):
    first = next(iter(runs.values()))
    for lang, d in runs.items():
        for name in ("sst_1h.nc", "sst_6h.nc"):
            with netCDF4.Dataset(first / name) as a, netCDF4.Dataset(d / name) as b:
                for v in ("sst", "time", "lon", "lat"):
                    np.testing.assert_array_equal(a[v][:], b[v][:], err_msg=f"{lang} {name} {v}")
