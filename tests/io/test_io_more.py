# netCDF-4 (HDF5) files with deflate, split files, sampling frequency and their configuration
# errors, read back with netCDF4, xarray, ncdump and CDO and compared with references computed
# here (the values from global indices, the split files' dates with cftime).
import os
import subprocess

import cftime
import netCDF4
import numpy as np
import pytest
import xarray as xr

from test_io_files import CONFIG, NLEV, NSTEPS, NX, NY, check_complete, run, value2, value3

NC4_CONFIG = CONFIG.replace('  reference_time: "2001-01-01 00:00:00"\n',
                            '  reference_time: "2001-01-01 00:00:00"\n  format: netcdf4\n').replace(
    "fields: [{{name: t3, precision: double}}, {{name: sst, precision: float}}]",
    "fields: [{{name: t3, precision: double, deflate: 4}}, {{name: sst, precision: float, deflate: 1}}]").replace(
    "- {{name: t3, operation: average, precision: double}}",
    "- {{name: t3, operation: average, precision: double, deflate: 2}}")
assert NC4_CONFIG.count("deflate") == 3 and "format: netcdf4" in NC4_CONFIG


@pytest.mark.parametrize("ranks,decomp,mode,writers,in_turn", [
    (2, "block", "serverless", 1, False),
    (3, "boxes", "serverless", 2, False),
    (5, "perm", "serverless", 2, False),
    (3, "cyclic", "server", 1, False),
    (4, "boxes", "server", 2, False),
    (3, "cyclic", "serverless", 2, True),
])
def test_netcdf4_write_read_back(io_env, ranks, decomp, mode, writers, in_turn):
    d, p = run(io_env, ranks, decomp, mode, writers, config=NC4_CONFIG,
               name=f"nc4_np{ranks}_{mode}_w{writers}_{decomp}{'_turn' if in_turn else ''}",
               env={"ESTUARY_NC4_IN_TURN": "1"} if in_turn else None)
    assert p.returncode == 0, p.stdout + p.stderr
    check_complete(d, file_format="NETCDF4")
    with netCDF4.Dataset(os.path.join(d, "inst.nc")) as ds:
        f = ds["t3"].filters()
        assert f["zlib"] and f["shuffle"] and f["complevel"] == 4, f
        assert ds["t3"].chunking() == [1, 1, NY, NX]
        assert ds["sst"].filters()["complevel"] == 1
        assert not ds["lon"].filters()["zlib"]
    with netCDF4.Dataset(os.path.join(d, "stats.nc")) as ds:
        assert ds["t3"].filters()["complevel"] == 2 and not ds["sst"].filters()["zlib"]
    with xr.open_dataset(os.path.join(d, "stats.nc"), use_cftime=True) as ds:
        assert str(ds.time.values[0]) == "2001-01-01 01:30:00"
        assert ds.t3.shape == (NSTEPS // 3, NLEV, NY, NX)
    for f in ("inst", "stats", "stats2", "const"):
        subprocess.run(["ncdump", "-h", os.path.join(d, f + ".nc")], check=True, capture_output=True)
    info = subprocess.run(["cdo", "-s", "sinfon", os.path.join(d, "stats.nc")], check=True,
                          capture_output=True, text=True).stdout
    assert "lonlat" in info and f"{NSTEPS // 3} steps" in info


def test_netcdf4_same_contents_as_cdf5(io_env):
    base, p = run(io_env, 2, "block", "serverless", 1, name="nc4_same_cdf5")
    assert p.returncode == 0, p.stdout + p.stderr
    d, p = run(io_env, 4, "perm", "serverless", 2, config=NC4_CONFIG, name="nc4_same_nc4")
    assert p.returncode == 0, p.stdout + p.stderr
    for f in ("inst", "stats", "stats2", "const"):
        with netCDF4.Dataset(os.path.join(base, f + ".nc")) as a, netCDF4.Dataset(os.path.join(d, f + ".nc")) as b:
            assert set(a.variables) == set(b.variables)
            for v in a.variables:
                np.testing.assert_array_equal(np.asarray(b[v][:]), np.asarray(a[v][:]), err_msg=f"{f}:{v}")


SPLIT_STEPS = 48
SPLIT_CONFIG = """output:
  mode: {mode}
  writers: {writers}
  directory: {dir}
  calendar: noleap
  reference_time: "2004-02-28 00:00:00"
  files:
    - name: inst
      output_freq: 2h
      split_freq: 6h
      fields: [{{name: t3, precision: double}}, {{name: sst, operation: once, precision: double}}]
    - name: day
      output_freq: 3h
      split_freq: 1d
      format: netcdf4
      fields:
        - {{name: t3, operation: average, precision: double}}
        - {{name: sst, operation: maximum, precision: double, deflate: 3}}
    - name: samp
      output_freq: 6h
      fields:
        - {{name: t3, operation: average, precision: double, sampling_freq: 2h}}
        - {{name: sst, operation: accumulate, precision: double, sampling_freq: 3h}}
"""


def label(seconds, fmt):
    return cftime.num2date(seconds, "seconds since 2004-02-28 00:00:00", calendar="noleap").strftime(fmt)


@pytest.mark.parametrize("ranks,decomp,mode,writers", [(3, "boxes", "serverless", 2), (4, "cyclic", "server", 1),
                                                       (5, "perm", "server", 2)])
def test_split_and_sampling(io_env, ranks, decomp, mode, writers):
    d, p = run(io_env, ranks, decomp, mode, writers, config=SPLIT_CONFIG, nsteps=SPLIT_STEPS,
               name=f"split_np{ranks}_{mode}_w{writers}")
    assert p.returncode == 0, p.stdout + p.stderr
    # inst: a file a 6 h period (k S, (k+1) S], named with its start, each with 3 records,
    # the coordinates and the `once` field: valid on its own.
    names = sorted(f for f in os.listdir(d) if f.startswith("inst_"))
    want = [f"inst_{label(6 * 3600 * k, '%Y%m%d%H%M')}.nc" for k in range(SPLIT_STEPS // 6)]
    assert names == sorted(want)
    assert "inst_200402290000.nc" not in names and "inst_200403010000.nc" in names  # noleap
    for k, f in enumerate(want):
        with netCDF4.Dataset(os.path.join(d, f)) as ds:
            np.testing.assert_array_equal(ds["time"][:], 3600.0 * np.array([6 * k + 2, 6 * k + 4, 6 * k + 6]))
            for r in range(3):
                np.testing.assert_array_equal(ds["t3"][r], value3(6 * k + 2 * (r + 1)))
            np.testing.assert_allclose(ds["sst"][:], value2(1), rtol=1e-14)
            assert ds["lon"].shape == (NX,) and ds["lon_bnds"].shape == (NX, 2)
            np.testing.assert_allclose(ds["lon"][:], 30.0 * np.arange(NX), atol=1e-12)
    # day: netCDF-4, one file a day, 8 averages each.
    days = sorted(f for f in os.listdir(d) if f.startswith("day_"))
    assert days == ["day_20040228.nc", "day_20040301.nc"]
    for k, f in enumerate(days):
        with netCDF4.Dataset(os.path.join(d, f)) as ds:
            assert ds.file_format == "NETCDF4"
            assert ds["sst"].filters()["complevel"] == 3
            assert len(ds["time"]) == 8
            for r in range(8):
                s0 = 24 * k + 3 * r
                np.testing.assert_array_equal(ds["time_bnds"][r], [3600.0 * s0, 3600.0 * (s0 + 3)])
                avg = ((value3(s0 + 1) + value3(s0 + 2)) + value3(s0 + 3)) / 3
                np.testing.assert_array_equal(ds["t3"][r], avg)
                np.testing.assert_allclose(ds["sst"][r], value2(s0 + 3), rtol=1e-14)
        with xr.open_dataset(os.path.join(d, f), use_cftime=True) as ds:
            assert ds.t3.shape == (8, NLEV, NY, NX)
        subprocess.run(["ncdump", "-h", os.path.join(d, f)], check=True, capture_output=True)
    # samp: only the samples at multiples of sampling_freq enter the operation.
    with netCDF4.Dataset(os.path.join(d, "samp.nc")) as ds:
        assert len(ds["time"]) == SPLIT_STEPS // 6
        for r in range(SPLIT_STEPS // 6):
            h = 6 * r
            np.testing.assert_array_equal(ds["t3"][r], ((value3(h + 2) + value3(h + 4)) + value3(h + 6)) / 3)
            np.testing.assert_allclose(ds["sst"][r], value2(h + 3) + value2(h + 6), rtol=1e-14)
    info = subprocess.run(["cdo", "-s", "sinfon", os.path.join(d, want[0])], check=True,
                          capture_output=True, text=True).stdout
    assert "3 steps" in info


@pytest.mark.parametrize("old,new,message", [
    ("split_freq: 6h", "split_freq: 6 hours",
     "bad duration '6 hours' ({cfg}:10, key output.files[0] (inst).split_freq)"),
    ("split_freq: 1d", "split_freq: 5h",
     "split_freq is not a multiple of output_freq ({cfg}:14, key output.files[1] (day).split_freq)"),
    ("sampling_freq: 2h", "sampling_freq: -2h",
     "bad duration '-2h' ({cfg}:22, key output.files[2] (samp).fields[0] (t3).sampling_freq)"),
    ("sampling_freq: 3h", "sampling_freq: 4h",
     "output_freq is not a multiple of sampling_freq ({cfg}:23, key output.files[2] (samp).fields[1] (sst).sampling_freq)"),
    ("format: netcdf4\n", "format: hdf\n",
     "unknown format 'hdf' ({cfg}:15, key output.files[1] (day).format)"),
    ("deflate: 3", "deflate: 12",
     "deflate level '12' is not 0..9 ({cfg}:18, key output.files[1] (day).fields[1] (sst).deflate)"),
    ("      format: netcdf4\n", "",
     "deflate needs a netCDF-4 file ({cfg}:17, key output.files[1] (day).fields[1] (sst).deflate)"),
])
def test_malformed_frequencies_and_formats(io_env, old, new, message):
    d = os.path.join(io_env["tmp"], "badcfg_more")
    os.makedirs(d, exist_ok=True)
    cfg = os.path.join(d, "io.yaml")
    text = SPLIT_CONFIG.format(mode="serverless", writers=1, dir=d)
    assert text.count(old) == 1
    with open(cfg, "w") as f:
        f.write(text.replace(old, new))
    p = subprocess.run([io_env["mpiexec"], "-n", "2", io_env["writer"], cfg, "block", "4"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert message.format(cfg=cfg) in p.stdout, p.stdout + p.stderr


# ---- calendar frequencies: monthly and yearly periods (XIOS's 1mo, 3mo, 1y) ----
MONTHLY_CONFIG = """output:
  mode: {mode}
  writers: {writers}
  directory: {dir}
  calendar: CAL
  reference_time: "REF 00:00:00"
  files:
    - name: monthly
      output_freq: 1mo
      split_freq: 3mo
      fields:
        - {{name: t3, operation: average, precision: double}}
        - {{name: sst, operation: maximum, precision: double}}
    - name: yearly
      output_freq: 1y
      fields: [{{name: sst, operation: average, precision: double}}]
"""


@pytest.mark.parametrize("calendar,year,ranks,mode,writers", [
    ("noleap", 2001, 3, "serverless", 2),
    ("360_day", 2001, 2, "server", 1),
    ("standard", 2000, 4, "serverless", 1),  # a leap year: February has 29 days
])
def test_monthly_and_yearly_means_on_calendar_periods(io_env, calendar, year, ranks, mode, writers):
    """A year of daily writes: monthly means and maxima split into quarterly files, and a yearly
    mean; the period bounds and sample sets come from cftime (independent of estuary)."""
    units = f"seconds since {year}-01-01 00:00:00"
    month_start = [cftime.date2num(cftime.datetime(year + (m - 1) // 12, (m - 1) % 12 + 1, 1, calendar=calendar),
                                   units, calendar=calendar) for m in range(1, 14)]
    ndays = int(round(month_start[12] / 86400))
    assert ndays == {"noleap": 365, "360_day": 360, "standard": 366}[calendar]
    config = MONTHLY_CONFIG.replace("CAL", calendar).replace("REF", f"{year}-01-01")
    d, p = run(io_env, ranks, "boxes", mode, writers, config=config, nsteps=ndays,
               name=f"monthly_{calendar}_np{ranks}_{mode}", env={"ESTUARY_IO_STEP_S": "86400"})
    assert p.returncode == 0, p.stdout + p.stderr
    days = np.arange(1, ndays + 1)
    for q in range(4):
        label = cftime.num2date(month_start[3 * q], units, calendar=calendar).strftime("%Y%m%d")
        path = os.path.join(d, f"monthly_{label}.nc")
        with netCDF4.Dataset(path) as ds:
            assert ds["time"].calendar == calendar and ds["time"].units == units
            tb = ds["time_bnds"][:]
            np.testing.assert_array_equal(tb[:, 0], month_start[3 * q:3 * q + 3])
            np.testing.assert_array_equal(tb[:, 1], month_start[3 * q + 1:3 * q + 4])
            np.testing.assert_array_equal(ds["time"][:], tb.mean(axis=1))
            assert ds["t3"].cell_methods == "time: mean" and ds["sst"].cell_methods == "time: maximum"
            for r in range(3):
                m = 3 * q + r
                inside = days[(86400 * days > month_start[m]) & (86400 * days <= month_start[m + 1])]
                np.testing.assert_allclose(ds["t3"][r], np.mean([value3(s) for s in inside], axis=0), rtol=1e-13)
                np.testing.assert_array_equal(ds["sst"][r], np.max([value2(s) for s in inside], axis=0))
        with xr.open_dataset(path, use_cftime=True) as ds:  # the times decode to the right months
            assert [t.month for t in ds.time.values] == [3 * q + 1, 3 * q + 2, 3 * q + 3]
    with netCDF4.Dataset(os.path.join(d, "yearly.nc")) as ds:
        np.testing.assert_array_equal(ds["time_bnds"][:], [[0, month_start[12]]])
        np.testing.assert_allclose(ds["sst"][0], np.mean([value2(s) for s in days], axis=0), rtol=1e-13)
    out = subprocess.run(["cdo", "-s", "showdate", os.path.join(d, f"monthly_{year}0401.nc")],
                         capture_output=True, text=True)
    assert out.returncode == 0 and f"{year}-05-" in out.stdout, out.stdout + out.stderr


# ---- masks and fill values ----
def land_reference():
    """GridGen::with_land's made-up continents on the test's lon-lat grid, computed here:
    Antarctica below 70S and five spherical caps (centre lon, lat, radius in degrees)."""
    lon = 30.0 * np.arange(NX)
    lat = -90 + 22.5 * (np.arange(NY) + 0.5)
    LON, LAT = np.meshgrid(np.radians(lon), np.radians(lat))
    p = np.stack([np.cos(LAT) * np.cos(LON), np.cos(LAT) * np.sin(LON), np.sin(LAT)])
    land = np.degrees(LAT) < -70
    for clon, clat, rad in [(20, 5, 30), (100, 50, 35), (-100, 45, 28), (-60, -15, 20), (135, -25, 15)]:
        c = np.radians([clon, clat])
        cv = np.array([np.cos(c[1]) * np.cos(c[0]), np.cos(c[1]) * np.sin(c[0]), np.sin(c[1])])
        land |= np.tensordot(cv, p, axes=1) > np.cos(np.radians(rad))
    return land


@pytest.mark.parametrize("mask,ranks,decomp,mode,writers", [
    ("field", 3, "perm", "serverless", 2),
    ("field", 4, "boxes", "server", 1),
    ("grid", 3, "cyclic", "serverless", 1),
    ("grid", 4, "cyclic", "server", 2),
])
def test_masked_points_are_fill_values(io_env, mask, ranks, decomp, mode, writers):
    d, p = run(io_env, ranks, decomp, mode, writers, name=f"mask_{mask}_np{ranks}_{mode}", env={"ESTUARY_IO_MASK": mask})
    assert p.returncode == 0, p.stdout + p.stderr
    if mask == "field":
        land = (np.arange(NY * NX) % 5 == 0).reshape(NY, NX)
    else:
        land = land_reference()
    assert 0 < land.sum() < land.size
    for name, checks in [("inst", [(r, 2 * (r + 1)) for r in range(NSTEPS // 2)])]:
        with netCDF4.Dataset(os.path.join(d, name + ".nc")) as ds:
            for var, dtype in (("t3", np.float64), ("sst", np.float32)):
                v = ds[var]
                assert v._FillValue == 1e20 * dtype(1) and v.missing_value == v._FillValue
                assert v.getncattr("_FillValue").dtype == dtype
            for r, step in checks:
                t3, sst = ds["t3"][r], ds["sst"][r]
                np.testing.assert_array_equal(np.ma.getmaskarray(t3), np.broadcast_to(land, t3.shape))
                np.testing.assert_array_equal(np.ma.getmaskarray(sst), land)
                np.testing.assert_array_equal(t3.compressed(), value3(step)[:, ~land].ravel())
    with netCDF4.Dataset(os.path.join(d, "stats.nc")) as ds:  # a masked point never enters an average
        for r in range(NSTEPS // 3):
            steps = [3 * r + 1, 3 * r + 2, 3 * r + 3]
            t3 = ds["t3"][r]
            np.testing.assert_array_equal(np.ma.getmaskarray(t3), np.broadcast_to(land, t3.shape))
            np.testing.assert_allclose(t3.compressed(), np.mean([value3(s) for s in steps], axis=0)[:, ~land].ravel(),
                                       rtol=1e-14)
    with xr.open_dataset(os.path.join(d, "stats.nc")) as ds:  # xarray turns fill values into NaN
        assert int(np.isnan(ds.sst.isel(time=0)).sum()) == int(land.sum())
    with netCDF4.Dataset(os.path.join(d, "const.nc")) as ds:
        np.testing.assert_array_equal(np.ma.getmaskarray(ds["sst"][:]), land)


def test_grid_mask_needs_the_fields_points(io_env):
    """A grid mask reaches a field's values only through the points this rank's def_grid part
    holds: block fields on a cyclic grid part are refused on every rank, naming field and rank."""
    d, p = run(io_env, 3, "block", "serverless", 1, name="mask_grid_block", env={"ESTUARY_IO_MASK": "grid"})
    assert p.returncode != 0
    assert "which this rank's def_grid part does not hold" in p.stdout + p.stderr
    assert "field t3" in p.stdout + p.stderr


def test_cf_metadata_from_the_configuration(io_env):
    """Global attributes and per-variable CF attributes from the YAML; xarray selects by latitude
    on the 1-D axes; the history names estuary."""
    config = CONFIG.replace("  files:\n", '  title: "estuary CF test"\n  institution: "nowhere"\n'
                            '  comment: "made by a test"\n  history: "earlier step"\n  files:\n', 1).replace(
        "fields: [{{name: t3, precision: double}}, {{name: sst, precision: float}}]",
        "fields: [{{name: t3, precision: double, standard_name: air_temperature, long_name: air temperature, units: degC}},"
        " {{name: sst, precision: float}}]")
    d, p = run(io_env, 2, "block", "serverless", 1, config=config, name="cf_attrs")
    assert p.returncode == 0, p.stdout + p.stderr
    with netCDF4.Dataset(os.path.join(d, "inst.nc")) as ds:
        assert ds.title == "estuary CF test" and ds.institution == "nowhere" and ds.comment == "made by a test"
        assert ds.Conventions == "CF-1.8" and ds.source.startswith("estuary")
        lines = ds.history.split("\n")
        assert "estuary" in lines[0] and lines[1] == "earlier step"
        t3 = ds["t3"]
        assert (t3.standard_name, t3.long_name, t3.units) == ("air_temperature", "air temperature", "degC")
        assert ds["sst"].standard_name == "sea_surface_height_above_geoid"  # the model's own
    with xr.open_dataset(os.path.join(d, "inst.nc"), use_cftime=True) as ds:
        row = ds.sst.isel(time=0).sel(lat=-90 + 22.5 * 2.5)
        np.testing.assert_allclose(row.values, value2(2)[2].astype(np.float32), rtol=1e-6)
        assert ds.lon.attrs["units"] == "degrees_east" and ds.lev.attrs["positive"] == "down"


@pytest.mark.parametrize("mode,writers,fmt", [("serverless", 1, "cdf5"), ("server", 2, "netcdf4")])
def test_files_pass_a_cf_checker(io_env, mode, writers, fmt):
    """Every file of the test set-up (instantaneous, averaged with time bounds, 3-D on levels,
    masked points, 1-D lon/lat axes with bounds) passes an independent CF checker (IOOS
    compliance-checker, CF 1.8, strict), with the configuration's metadata or without."""
    from cf_check import cf_problems

    config = CONFIG if fmt == "cdf5" else NC4_CONFIG
    d, p = run(io_env, 3 if mode == "serverless" else 4, "boxes", mode, writers, config=config, name=f"cf_check_{mode}",
               env={"ESTUARY_IO_MASK": "field"})
    assert p.returncode == 0, p.stdout + p.stderr
    files = sorted(f for f in os.listdir(d) if f.endswith(".nc"))
    assert len(files) >= 3, files
    for f in files:
        problems = cf_problems(os.path.join(d, f))
        assert not problems, f"{f}:\n{problems}"


# ---- lossy quantization and Zstandard (netCDF-4) ----
def test_quantize_then_deflate(io_env):
    """BitRound on a double field zeroes the mantissa bits beyond the kept ones (checked on the
    raw bits) within the rounding bound; Granular BitRound keeps a float field's significant
    digits; netCDF records each setting in its own attribute; the quantized file is smaller than
    the same output deflated alone."""
    base = NC4_CONFIG.replace("{{name: sst, precision: float, deflate: 1}}", "{{name: sst, precision: double, deflate: 1}}")
    lossy = base.replace(
        "fields: [{{name: t3, precision: double, deflate: 4}}, {{name: sst, precision: double, deflate: 1}}]",
        "fields: [{{name: t3, precision: float, deflate: 4, quantize: granularbr, significant_digits: 3}},"
        " {{name: sst, precision: double, deflate: 1, quantize: bitround, significant_bits: 12}}]")
    assert lossy != base and "bitround" in lossy
    sizes = {}
    for name, cfg in (("lossless", base), ("lossy", lossy)):
        d, p = run(io_env, 3, "boxes", "serverless", 2, config=cfg, name=f"quant_{name}")
        assert p.returncode == 0, p.stdout + p.stderr
        sizes[name] = os.path.getsize(os.path.join(d, "inst.nc"))
    with netCDF4.Dataset(os.path.join(d, "inst.nc")) as ds:
        t3, sst = ds["t3"], ds["sst"]
        assert sst.getncattr("_QuantizeBitRoundNumberOfSignificantBits") == 12
        assert t3.getncattr("_QuantizeGranularBitRoundNumberOfSignificantDigits") == 3
        for r in range(NSTEPS // 2):
            ref = value2(2 * (r + 1))
            got = np.asarray(sst[r], dtype=np.float64)
            low = got.view(np.uint64) & np.uint64((1 << (52 - 12)) - 1)
            assert not low.any(), "BitRound left mantissa bits beyond the 12 kept"
            assert (got != ref).sum() > ref.size // 2  # it did round
            np.testing.assert_array_less(np.abs(got - ref), np.abs(ref) * 2.0 ** -12 + 1e-300)
            np.testing.assert_allclose(t3[r], value3(2 * (r + 1)), rtol=5e-3)
    assert sizes["lossy"] < sizes["lossless"], sizes


def test_zstd_or_a_clear_refusal(io_env):
    """zstd where this netCDF build has the filter (lossless: values exact); else the run stops
    with an error that names the variable and says why."""
    cfg = NC4_CONFIG.replace("{{name: sst, precision: float, deflate: 1}}", "{{name: sst, precision: float, zstd: 3}}")
    assert "zstd: 3" in cfg
    d, p = run(io_env, 2, "block", "serverless", 1, config=cfg, name="zstd")
    if p.returncode != 0:
        assert "no Zstandard filter" in p.stdout + p.stderr and "variable sst" in p.stdout + p.stderr, p.stdout + p.stderr
        return
    with netCDF4.Dataset(os.path.join(d, "inst.nc")) as ds:
        assert ds["sst"].filters()["zstd"]
        for r in range(NSTEPS // 2):
            np.testing.assert_array_equal(ds["sst"][r], value2(2 * (r + 1)).astype(np.float32))
