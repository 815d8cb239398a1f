# Output on another grid (a file's grid:): the files written by test_io_writer on a target grid
# pass the CF checker, CDO sees a lonlat grid, and the values equal CDO's own remapping
# (remapcon, remapbil) of the same fields written on the model grid in the same run — an
# independent implementation of the same methods — with the grid's land mask (GridGen::with_land)
# left out by both (CDO skips the model-grid file's fill values). The model writes from a cyclic
# decomposition, the grid part test_io_writer gives with that mask.
import os
import subprocess

import netCDF4
import numpy as np
import pytest

from test_io_files import run

CONFIG = """output:
  mode: {mode}
  writers: {writers}
  directory: {dir}
  files:
    - name: native
      output_freq: 2h
      fields: [{{name: t3, precision: double}}, {{name: sst, precision: double}}]
    - name: con
      output_freq: 2h
      grid: {{target: "lonlat:6x4", method: conservative}}
      fields: [{{name: t3, precision: double}}, {{name: sst, precision: double}}]
    - name: bil
      output_freq: 2h
      grid: {{target: "lonlat:9x6", method: bilinear}}
      fields: [{{name: sst, precision: double}}]
"""


def cdo(*args):
    p = subprocess.run(["cdo", "-s", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("ranks,mode,writers", [(3, "serverless", 1), (4, "server", 2)])
def test_regridded_files_are_cf_lonlat_and_match_cdo(io_env, ranks, mode, writers):
    from cf_check import cf_problems

    d, p = run(io_env, ranks, "cyclic", mode, writers, config=CONFIG, name=f"regrid_{mode}", nsteps=4,
               env={"ESTUARY_IO_MASK": "grid"})
    assert p.returncode == 0, p.stdout + p.stderr
    for f in ("con.nc", "bil.nc"):
        problems = cf_problems(os.path.join(d, f))
        assert not problems, f"{f}:\n{problems}"
        info = cdo("sinfon", os.path.join(d, f))
        assert "lonlat" in info, info
    assert "points=24 (6x4)" in cdo("sinfon", os.path.join(d, "con.nc")).replace("  ", " ")
    native = os.path.join(d, "native.nc")
    for f, op, grid, tol in (("con", "remapcon", "r6x4", 1e-12), ("bil", "remapbil", "r9x6", 1e-12)):
        ref = os.path.join(d, f"cdo_{f}.nc")
        cdo(f"{op},{grid}", native, ref)
        with netCDF4.Dataset(os.path.join(d, f + ".nc")) as ours, netCDF4.Dataset(ref) as theirs:
            for var in ours.variables:
                if var not in ("sst", "t3"):
                    continue
                a = np.ma.filled(ours[var][:].astype(np.float64), np.nan)
                b = np.ma.filled(theirs[var][:].astype(np.float64), np.nan)
                assert a.shape == b.shape, (var, a.shape, b.shape)
                np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{f} {var}: masks differ")
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True, err_msg=f"{f} {var}")
