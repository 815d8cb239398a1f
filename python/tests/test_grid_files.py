"""OASIS grid files from Python: pyOASIS's Grid (estuary.couple.Grid) written at enddef, one grid
whole from a single rank and one by partitions from every rank of its component; the files
checked with netCDF4, an independent reader (names, dimensions, OASIS's Fortran order, mask
1 = masked, types), by ncdump and by CDO; and `estuary weights` from the OASIS files equal, link
for link, to `estuary weights` from SCRIP files of the same grids written here with netCDF4."""
import shutil
import subprocess

import numpy as np
import pytest

import estuary.couple as pyoasis
from estuary import cli
from estuary.couple import OASIS

SNX, SNY, DNX, DNY = 12, 10, 9, 7
R = 6371229.0


def grid(nx, ny, lon0, seed):
    """A lon-lat grid with corners (indexed [i, j] as OASIS's Fortran arrays), a land mask in
    OASIS's convention (1 = masked) and areas in m^2."""
    dx, dy = 360.0 / nx, 170.0 / ny
    i = np.arange(nx, dtype=float)[:, None] + np.zeros((1, ny))
    j = np.arange(ny, dtype=float)[None, :] + np.zeros((nx, 1))
    lon = lon0 + (i + 0.5) * dx
    lat = -85.0 + (j + 0.5) * dy
    clo = np.stack([lon - dx / 2, lon + dx / 2, lon + dx / 2, lon - dx / 2], axis=2)
    cla = np.stack([lat - dy / 2, lat - dy / 2, lat + dy / 2, lat + dy / 2], axis=2)
    mask = (((i * 3 + j * 5 + seed) % 7) == 0).astype(np.int32)
    area = np.radians(dx) * (np.sin(np.radians(lat + dy / 2)) - np.sin(np.radians(lat - dy / 2))) * R * R
    return dict(lon=lon, lat=lat, clo=clo, cla=cla, mask=mask, area=area)


SRC = grid(SNX, SNY, 3.0, 1)
DST = grid(DNX, DNY, -7.0, 4)


def layout(comm):
    p, r = comm.size, comm.rank
    if p == 1:
        return True, True, "solo", 0, 1
    h = p // 2
    return (True, False, "atm", r, h) if r < h else (False, True, "ocn", r - h, p - h)


def namcouple():
    return (" $NFIELDS\n 1\n $END\n $RUNTIME\n 3600\n $END\n $NNOREST\n T\n $END\n $STRINGS\n"
            f"A_F O_F 1 3600 1 rst.nc EXPORTED\n{SNX} {SNY} {DNX} {DNY} agrd ogrd\nR 0 R 0\n"
            "SCRIPR\nDISTWGT LR SCALAR LATLON 1 4\n $END\n")


def write_oasis_files(comm, d):
    """Collective: agrd whole from the source side's first rank, ogrd by box partitions (rows)
    from every target rank; a coupling reads them back at enddef. Returns the values got."""
    src, dst, name, index, count = layout(comm)
    if comm.rank == 0:
        (d / "namcouple").write_text(namcouple())
    comm.Barrier()
    got = None
    with pyoasis.Component(name, config=str(d / "namcouple"), directory=str(d)) as comp:
        if src:
            n0, n1 = index * SNX * SNY // count, (index + 1) * SNX * SNY // count
            spart = pyoasis.ApplePartition(n0, n1 - n0, global_size=SNX * SNY, name="agrd")
            if index == 0:
                g = pyoasis.Grid("agrd", SNX, SNY, SRC["lon"], SRC["lat"])  # the whole grid
                g.set_corners(SRC["clo"], SRC["cla"])
                g.set_mask(SRC["mask"])
                g.set_area(SRC["area"])
                g.write()
            a_f = pyoasis.Var("A_F", spart, OASIS.OUT)
        if dst:
            y0, y1 = index * DNY // count, (index + 1) * DNY // count
            dpart = pyoasis.BoxPartition(y0 * DNX, DNX, y1 - y0, DNX, global_size=DNX * DNY, name="ogrd")
            g = pyoasis.Grid("ogrd", DNX, DNY, DST["lon"][:, y0:y1], DST["lat"][:, y0:y1], dpart)
            g.set_corners(DST["clo"][:, y0:y1, :], DST["cla"][:, y0:y1, :])
            g.set_mask(DST["mask"][:, y0:y1])
            g.set_area(DST["area"][:, y0:y1])
            g.write()
            o_f = pyoasis.Var("O_F", dpart, OASIS.IN)
        comp.enddef()
        if src:
            a_f.put(0, np.arange(n0, n1, dtype=np.float64) + 1.0)
        if dst:
            got = np.full(dpart.size, -999.0)
            o_f.get(0, got)
    return got


def write_scrip(path, g, nx, ny):
    import netCDF4

    n = nx * ny
    with netCDF4.Dataset(path, "w") as f:
        f.createDimension("grid_size", n)
        f.createDimension("grid_corners", 4)
        f.createDimension("grid_rank", 2)
        f.createVariable("grid_dims", "i4", ("grid_rank",))[:] = [nx, ny]
        for name, key in (("grid_center_lon", "lon"), ("grid_center_lat", "lat")):
            v = f.createVariable(name, "f8", ("grid_size",))
            v.units = "degrees"
            v[:] = g[key].ravel(order="F")
        for name, key in (("grid_corner_lon", "clo"), ("grid_corner_lat", "cla")):
            v = f.createVariable(name, "f8", ("grid_size", "grid_corners"))
            v.units = "degrees"
            v[:] = g[key].reshape(n, 4, order="F")
        f.createVariable("grid_imask", "i4", ("grid_size",))[:] = 1 - g["mask"].ravel(order="F")


def test_grid_files_written_whole_and_by_partitions(comm, shared_dir):
    got = write_oasis_files(comm, shared_dir)
    comm.Barrier()
    if got is not None:
        assert np.all(got != -999.0)  # every target point got a value (DISTWGT + nearest fill)
    if comm.rank != 0:
        return
    import netCDF4

    with netCDF4.Dataset(shared_dir / "grids.nc") as f:
        for g, name, nx, ny in ((SRC, "agrd", SNX, SNY), (DST, "ogrd", DNX, DNY)):
            for suffix, key in ((".lon", "lon"), (".lat", "lat")):
                v = f.variables[name + suffix]
                assert v.dimensions == (f"y_{name}", f"x_{name}") and v.dtype == np.float64
                np.testing.assert_array_equal(v[:], g[key].T)  # Fortran (nx, ny) = netCDF (ny, nx)
            for suffix, key in ((".clo", "clo"), (".cla", "cla")):
                v = f.variables[name + suffix]
                assert v.dimensions == (f"crn_{name}", f"y_{name}", f"x_{name}")
                np.testing.assert_array_equal(v[:], np.transpose(g[key], (2, 1, 0)))
            assert len(f.dimensions[f"x_{name}"]) == nx and len(f.dimensions[f"y_{name}"]) == ny
    with netCDF4.Dataset(shared_dir / "masks.nc") as f:
        for g, name in ((SRC, "agrd"), (DST, "ogrd")):
            v = f.variables[name + ".msk"]
            assert v.dtype == np.int32
            np.testing.assert_array_equal(v[:], g["mask"].T)  # 1 = masked, as given
            assert 0 < int(v[:].sum()) < v[:].size
    with netCDF4.Dataset(shared_dir / "areas.nc") as f:
        for g, name in ((SRC, "agrd"), (DST, "ogrd")):
            np.testing.assert_array_equal(f.variables[name + ".srf"][:], g["area"].T)
    for tool in (["ncdump", "-h"], ["cdo", "-s", "sinfon"]):
        if shutil.which(tool[0]) is None:
            continue
        for file in ("grids.nc", "masks.nc", "areas.nc"):
            out = subprocess.run(tool + [str(shared_dir / file)], capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stdout + out.stderr
            if tool[0] == "ncdump":
                assert "agrd." in out.stdout and "ogrd." in out.stdout


@pytest.mark.parametrize("method", ["distance", "bilinear", "conservative"])
def test_weights_from_oasis_files_equal_scrip(comm, shared_dir, method):
    write_oasis_files(comm, shared_dir)
    if comm.rank == 0:
        write_scrip(shared_dir / "agrd_scrip.nc", SRC, SNX, SNY)
        write_scrip(shared_dir / "ogrd_scrip.nc", DST, DNX, DNY)
    comm.Barrier()
    # Under mpirun the command works on this run's ranks (collective), as `estuary weights --ranks P`.
    codes = []
    for src, dst, out in ((f"{shared_dir}/grids.nc:agrd", f"{shared_dir}/grids.nc:ogrd", "w_oasis.nc"),
                          (f"{shared_dir}/agrd_scrip.nc", f"{shared_dir}/ogrd_scrip.nc", "w_scrip.nc")):
        codes.append(cli.main(["weights", "--src", src, "--dst", dst, "--method", method,
                               "--out", str(shared_dir / out)]))
    comm.Barrier()
    assert codes == [0, 0]
    if comm.rank != 0:
        return
    import netCDF4

    with netCDF4.Dataset(shared_dir / "w_oasis.nc") as a, netCDF4.Dataset(shared_dir / "w_scrip.nc") as b:
        assert a.dimensions["num_links"].size > 0
        for v in ("src_address", "dst_address", "remap_matrix"):
            np.testing.assert_array_equal(a.variables[v][:], b.variables[v][:], err_msg=v)
        np.testing.assert_array_equal(a.variables["src_grid_imask"][:], 1 - SRC["mask"].ravel(order="F"))
