"""The coupled toy of `make demo` with each side in another language (C++, Fortran, Python):
every field received (and sent) must be bit for bit the one of the all-C++ run.

The runs use toy_atm_ocn.yaml with status EXPOUT on both couplings (given as $ESTUARY_CONFIG,
which the three toys honour), so the coupler itself writes every field sent (after LOCTRANS) and
received (after CONSERV) at every coupling time to netCDF files, ordered by global index; the
restart files are written at the end. Every netCDF variable of every file of a mixed run must
equal the all-C++ run's, bit for bit. Each run launches mpirun itself (2 + 2 ranks, MPMD), so
this file runs outside mpirun (ctest entry toy_mixed)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CPP = os.environ.get("ESTUARY_TOY_ATM_OCN", "")
FORTRAN = os.environ.get("ESTUARY_TOY_ATM_OCN_F", "")
MPIEXEC = os.environ.get("ESTUARY_MPIEXEC", "mpirun")
TMP = Path(os.environ.get("ESTUARY_PY_TMP", tempfile.gettempdir())) / "toy_mixed"


def side(lang, role, folder):
    if lang == "cpp":
        return [CPP, role, str(folder)]
    if lang == "fortran":
        return [FORTRAN, role, str(folder)]
    return [sys.executable, str(EXAMPLES / "toy_atm_ocn.py"), role, str(folder)]


START, CALENDAR = "1979-03-01 00:00:00", "noleap"


def expout_config(path):
    """toy_atm_ocn.yaml with `status: expout` on every coupling, and the run's start date and
    calendar (the time axis of the coupler's files)."""
    text = (EXAMPLES / "toy_atm_ocn.yaml").read_text()
    text, n = re.subn(r"^(\s+)period: 3600$", r"\1period: 3600\n\1status: expout", text, flags=re.M)
    assert n == 2, "toy_atm_ocn.yaml changed: two `period: 3600` lines expected"
    path.write_text(f"start_date: {START}\ncalendar: {CALENDAR}\n" + text)
    return path


def run(atm, ocn, name):
    if not CPP or (("fortran" in (atm, ocn)) and not FORTRAN):
        pytest.fail("ESTUARY_TOY_ATM_OCN / ESTUARY_TOY_ATM_OCN_F not set (run from ctest, which sets them)")
    folder = TMP / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = dict(os.environ, ESTUARY_CONFIG=str(expout_config(TMP / f"{name}.yaml")), ESTUARY_COUPLE_TIMEOUT="30")
    cmd = [MPIEXEC, "-n", "2", *side(atm, "atmos", folder), ":", "-n", "2", *side(ocn, "ocean", folder)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, " ".join(cmd) + "\n" + out.stdout + out.stderr
    assert "atmos: received A_SST" in out.stdout and "ocean: received O_QNS" in out.stdout, out.stdout
    return folder, out.stdout


def netcdf_contents(folder):
    import netCDF4

    files = {}
    for p in sorted(folder.glob("*.nc")):
        with netCDF4.Dataset(p) as ds:
            ds.set_auto_mask(False)
            files[p.name] = {k: np.array(v[...]) for k, v in ds.variables.items()}
    return files


@pytest.fixture(scope="module")
def reference():
    folder, _ = run("cpp", "cpp", "cpp_cpp")
    files = netcdf_contents(folder)
    # what the comparison covers: both directions' sent and received fields, both restarts
    assert len(files) >= 4, sorted(files)
    assert any("A_SST" in f for f in files) and any("O_QNS" in f for f in files), sorted(files)
    records = [f["time"].size for f in files.values() if "time" in f]
    assert records and min(records) >= 24, records  # a record per coupling hour of the day
    return files


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype.kind == "f" else a


@pytest.mark.parametrize("atm,ocn", [("python", "fortran"), ("fortran", "cpp"), ("cpp", "python"),
                                     ("fortran", "python")])
def test_mixed_language_run_is_bitwise_the_cpp_run(reference, atm, ocn):
    folder, stdout = run(atm, ocn, f"{atm}_{ocn}")
    got = netcdf_contents(folder)
    assert sorted(got) == sorted(reference)
    for fname, variables in reference.items():
        assert sorted(got[fname]) == sorted(variables), fname
        for vname, ref in variables.items():
            g = got[fname][vname]
            assert g.shape == ref.shape and g.dtype == ref.dtype, (fname, vname)
            same = np.array_equal(bits(g), bits(ref))
            assert same, (f"{fname}:{vname} differs from the all-C++ run: max |diff| "
                          f"{np.max(np.abs(g.astype(float) - ref.astype(float)))}")
    if ocn != "cpp":  # the Fortran and Python oceans check conservation themselves
        assert "worst relative conservation error" in stdout


def test_expout_times_decode_as_dates(reference):
    """The coupler's files are CF: xarray decodes their time axis into dates of the configured
    calendar, the start date plus each coupling time (an independent reading: cftime)."""
    import cftime
    import xarray as xr

    folder = TMP / "cpp_cpp"
    expout = [p for p in sorted(folder.glob("*.nc")) if "time" in reference[p.name]]
    assert expout, sorted(reference)
    start = cftime.datetime(1979, 3, 1, calendar=CALENDAR)
    for p in expout:
        seconds = reference[p.name]["time"]
        with xr.open_dataset(p, use_cftime=True) as ds:
            assert ds["time"].attrs.get("standard_name") == "time" or ds["time"].encoding
            got = list(ds["time"].values)
        want = [start + timedelta(seconds=float(t)) for t in seconds]
        assert got == want, (p.name, got[:3], want[:3])
        assert all(d.calendar == CALENDAR for d in got), p.name


def test_expout_files_are_cf(reference):
    """Every file the coupler wrote (EXPOUT records, restarts aside) passes an independent CF
    checker at its strictest level."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "io"))  # the I/O tests' CF helper
    from cf_check import cf_problems

    folder = TMP / "cpp_cpp"
    expout = [p for p in sorted(folder.glob("*.nc")) if "time" in reference[p.name]]
    assert expout, sorted(reference)
    for p in expout:
        problems = cf_problems(p)
        assert not problems, f"{p.name}:\n{problems}"
