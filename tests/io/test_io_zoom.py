# Zoomed and vertically selected or interpolated output (zoom:, levels:, interpolate_levels:)
# read by independent readers: netCDF4 against references computed here from global indices,
# bit-identical files from 1, 3 and 4 ranks (both modes, 1 and 2 writers), CDO's grid of the
# zoomed lon-lat file, xarray's sel(lat=...) and sel(lon=...) on it, and the CF checker; CDF-5
# and netCDF-4 (from 2 writers) alike.
import os
import subprocess

import netCDF4
import numpy as np
import pytest
import xarray as xr

from test_io_files import NX, NY, NLEV, run, value2, value3

CONFIG = """output:
  mode: {mode}
  writers: {writers}
  directory: {dir}
  calendar: noleap
  reference_time: "2001-01-01 00:00:00"
  files:
    - name: box
      output_freq: 2h
      zoom: {{lon: [-60, 60], lat: [-40, 60]}}
      fields:
        - {{name: t3, levels: [0, 2], precision: double}}
        - {{name: sst, precision: double}}
    - name: interp
      output_freq: 3h
      fields:
        - name: t3
          operation: average
          zoom: {{i: [2, 7], j: [1, 4]}}
          interpolate_levels: {{values: [5, 30, 125, 300], coordinate: depth}}
          precision: double
"""
NSTEPS = 6
LEVELS = np.array([10.0, 50.0, 200.0])  # the writer's t3 levels (metres)
# The box on the writer's 12 x 8 grid (longitudes i * 30, latitude bands of 22.5 degrees): the
# columns at 300, 330, 0, 30, 60 in that order (from the west edge eastwards), rows 2..6.
COLS, ROWS = [10, 11, 0, 1, 2], [2, 3, 4, 5, 6]


def interp(col, x):
    """Linear interpolation of a column (on LEVELS) to x; NaN outside the levels."""
    if x < LEVELS[0] or x > LEVELS[-1]:
        return np.nan
    j = 0 if x <= LEVELS[1] else 1
    return col[j] + (col[j + 1] - col[j]) * (x - LEVELS[j]) / (LEVELS[j + 1] - LEVELS[j])


def reference_box(step):
    t = value3(step)[[0, 2]][:, ROWS][:, :, COLS]
    s = value2(step)[ROWS][:, COLS]
    return t, s


def reference_interp(rec):
    mean = sum(value3(s) for s in range(3 * rec + 1, 3 * rec + 4)) / 3
    sub = mean[:, 1:5, 2:8]
    out = np.empty((4, 4, 6))
    for k, x in enumerate([5, 30, 125, 300]):
        for j in range(4):
            for i in range(6):
                out[k, j, i] = interp(sub[:, j, i], x)
    return out


@pytest.fixture(scope="module")
def zoom_runs(io_env):
    runs = {}
    for ranks, decomp, mode, writers in [(1, "block", "serverless", 1), (3, "perm", "serverless", 2),
                                         (4, "cyclic", "server", 1)]:
        # 3 ranks: netCDF-4 from 2 writers (parallel HDF5), the others CDF-5.
        config = CONFIG.replace("  calendar:", "  format: netcdf4\n  calendar:") if ranks == 3 else CONFIG
        d, p = run(io_env, ranks, decomp, mode, writers, nsteps=NSTEPS, config=config, name=f"zoom_np{ranks}_{mode}")
        assert p.returncode == 0, p.stdout + p.stderr
        runs[ranks] = d
    return runs


def test_values_match_the_reference(zoom_runs):
    d = zoom_runs[3]
    with netCDF4.Dataset(os.path.join(d, "box.nc")) as ds:
        assert list(ds["lon"][:]) == [-60.0, -30.0, 0.0, 30.0, 60.0]
        assert np.allclose(ds["lat"][:], [-90 + 22.5 * (j + 0.5) for j in ROWS])
        assert list(ds["lev"][:]) == [10.0, 200.0]
        assert ds["lev"].standard_name == "depth" and ds["lev"].positive == "down" and ds["lev"].axis == "Z"
        assert np.allclose(ds["lon_bnds"][:], [[x - 15, x + 15] for x in (-60, -30, 0, 30, 60)])
        assert ds["t3"].dimensions == ("time", "lev", "lat", "lon")
        for rec in range(NSTEPS // 2):
            t, s = reference_box(2 * (rec + 1))
            assert np.array_equal(ds["t3"][rec], t)
            assert np.array_equal(ds["sst"][rec], s)
    with netCDF4.Dataset(os.path.join(d, "interp.nc")) as ds:
        assert list(ds["lev"][:]) == [5.0, 30.0, 125.0, 300.0]
        assert list(ds["lon"][:]) == [30.0 * i for i in range(2, 8)]
        for rec in range(NSTEPS // 3):
            want = reference_interp(rec)
            got = ds["t3"][rec]
            assert np.array_equal(np.ma.getmaskarray(got), np.isnan(want))  # outside 10..200: fill value
            assert np.allclose(got.filled(np.nan), want, rtol=1e-13, atol=0, equal_nan=True)


def test_same_bits_on_any_rank_count(zoom_runs):
    for f in ("box.nc", "interp.nc"):
        with netCDF4.Dataset(os.path.join(zoom_runs[1], f)) as a:
            for ranks in (3, 4):
                with netCDF4.Dataset(os.path.join(zoom_runs[ranks], f)) as b:
                    assert set(a.variables) == set(b.variables)
                    for v in a.variables:
                        x, y = a[v][:], b[v][:]
                        assert np.array_equal(np.ma.getdata(x), np.ma.getdata(y)), (f, v, ranks)


def test_cdo_and_xarray_see_a_lonlat_subgrid(zoom_runs):
    box = os.path.join(zoom_runs[4], "box.nc")
    info = subprocess.run(["cdo", "-s", "sinfon", box], check=True, capture_output=True, text=True).stdout
    assert "lonlat" in info and "points=25 (5x5)" in info, info
    with xr.open_dataset(box) as ds:
        north = ds.sst.sel(lat=slice(0, 90))
        assert list(north.lat.values) == [11.25, 33.75, 56.25]
        t, s = reference_box(2)
        assert np.array_equal(north.isel(time=0).values, s[2:])
        # Across the date line as one increasing axis: lon 330 is -30 here.
        assert np.array_equal(ds.sst.sel(lon=-30).isel(time=0).values, s[:, 1])
        assert np.array_equal(ds.t3.sel(lev=200).isel(time=0).values, t[1])
    with xr.open_dataset(os.path.join(zoom_runs[4], "interp.nc")) as ds:
        assert np.isnan(ds.t3.sel(lev=5).values).all() and not np.isnan(ds.t3.sel(lev=30).values).any()


def test_zoomed_files_pass_a_cf_checker(zoom_runs):
    from cf_check import cf_problems

    for f in ("box.nc", "interp.nc"):
        problems = cf_problems(os.path.join(zoom_runs[3], f))
        assert not problems, f"{f}:\n{problems}"


XIOS_XML = """<?xml version="1.0"?>
<simulation>
 <context id="w">
  <axis_definition>
   <axis id="depth"/>
   <axis id="dz" axis_ref="depth"><zoom_axis begin="1" n="2"/></axis>
   <axis id="di" axis_ref="depth" n_glo="4" value="(0,3)[5 30 125 300]">
    <interpolate_axis type="polynomial" order="1"/>
   </axis>
  </axis_definition>
  <domain_definition>
   <domain id="atm"/>
   <domain id="box" domain_ref="atm"><zoom_domain ibegin="2" ni="6" jbegin="1" nj="4"/></domain>
  </domain_definition>
  <grid_definition>
   <grid id="g3"><domain domain_ref="atm"/><axis axis_ref="depth"/></grid>
   <grid id="g3z"><domain domain_ref="box"/><axis axis_ref="dz"/></grid>
   <grid id="g3i"><domain domain_ref="box"/><axis axis_ref="di"/></grid>
   <grid id="g2"><domain domain_ref="atm"/></grid>
  </grid_definition>
  <field_definition operation="instant" prec="8">
   <field id="t3" grid_ref="g3"/>
   <field id="sst" grid_ref="g2"/>
  </field_definition>
  <file_definition>
   <file id="xz" output_freq="2h">
    <field field_ref="t3" name="tz" grid_ref="g3z"/>
    <field field_ref="t3" name="ti" grid_ref="g3i"/>
    <field field_ref="sst" domain_ref="box"/>
   </file>
  </file_definition>
 </context>
</simulation>
"""


def test_xios_zoom_domain_zoom_axis_interpolate_axis(io_env):
    """An iodef.xml whose file fields are on grids made by zoom_domain, zoom_axis and
    interpolate_axis (order 1, extrapolating as XIOS does) writes the same as the YAML keys."""
    base = os.path.join(io_env["tmp"], "xios_zoom")
    os.makedirs(base, exist_ok=True)
    cfg = os.path.join(base, "iodef.xml")
    with open(cfg, "w") as f:
        f.write(XIOS_XML)
    p = subprocess.run([io_env["mpiexec"], "-n", "3", io_env["writer"], cfg, "perm", "4"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    with netCDF4.Dataset(os.path.join(base, "iodef_out", "xz.nc")) as ds:
        assert list(ds["lon"][:]) == [30.0 * i for i in range(2, 8)] and len(ds["lat"]) == 4
        for rec, step in enumerate((2, 4)):
            v = value3(step)[:, 1:5, 2:8]
            assert np.array_equal(ds["tz"][rec], v[1:3])
            assert np.array_equal(ds["sst"][rec], value2(step)[1:5, 2:8])
            ti = ds["ti"][rec]
            for k, x in enumerate([5, 30, 125, 300]):
                j = 0 if x <= LEVELS[1] else 1  # outside: the line through the end levels
                want = v[j] + (v[j + 1] - v[j]) * (x - LEVELS[j]) / (LEVELS[j + 1] - LEVELS[j])
                assert np.allclose(ti[k], want, rtol=1e-13, atol=0), (k, x)
