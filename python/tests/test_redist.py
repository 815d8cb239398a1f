"""Decompositions, redistribution and remapping from Python, against numpy references."""
import numpy as np
import pytest

import estuary


def block_ref(n, r, p):  # rank r owns [r*n/p, (r+1)*n/p)
    return np.arange(r * n // p, (r + 1) * n // p)


def cyclic_ref(n, r, p):
    return np.arange(r, n, p)


def field(idx):  # a value per global index that no bug reproduces by accident
    idx = np.asarray(idx, dtype=np.float64)
    return np.sin(idx * 0.37) * 1000.0 + idx


def test_decomp_constructors():
    d = estuary.Decomp.indices(10, np.array([7, 3, 3, 9], dtype=np.int64))
    assert d.size == 4 and d.global_size == 10 and d.kind == "indices" and len(d) == 4
    np.testing.assert_array_equal(d.to_indices(), [7, 3, 3, 9])

    s = estuary.Decomp.stripes(20, [(1, 3, 2), (15, 2, -1)])
    np.testing.assert_array_equal(s.to_indices(), [1, 3, 5, 15, 14])
    assert s.kind == "stripes"

    shape, start, count = [4, 5, 6], [1, 2, 3], [2, 3, 2]
    full = np.arange(4 * 5 * 6).reshape(shape)  # row-major numbering
    sub = full[1:3, 2:5, 3:5]
    np.testing.assert_array_equal(estuary.Decomp.box(shape, start, count).to_indices(), sub.ravel())
    fullf = np.arange(4 * 5 * 6).reshape(shape, order="F")  # column-major numbering
    subf = fullf[1:3, 2:5, 3:5]
    np.testing.assert_array_equal(estuary.Decomp.box(shape, start, count, order="F").to_indices(),
                                  subf.ravel(order="F"))
    assert estuary.Decomp.empty(9).size == 0


def test_decomp_errors():
    with pytest.raises(estuary.Error, match="order"):
        estuary.Decomp.box([4], [0], [2], order="X")
    with pytest.raises(estuary.Error):
        estuary.Decomp.box([4, 4], [3, 0], [2, 1])  # beyond the global box
    with pytest.raises(estuary.Error):
        estuary.gen.by_name("no_such_kind", 10, 0, 1)


@pytest.mark.parametrize("n", [1, 17, 100])
def test_gen_against_formulas(comm, n):
    for r in range(comm.size + 1):
        np.testing.assert_array_equal(estuary.gen.block(n, r % comm.size, comm.size).to_indices(),
                                      block_ref(n, r % comm.size, comm.size))
        np.testing.assert_array_equal(estuary.gen.cyclic(n, r % comm.size, comm.size).to_indices(),
                                      cyclic_ref(n, r % comm.size, comm.size))
    assert "block" in estuary.gen.kinds()


@pytest.mark.parametrize("src_kind,dst_kind", [("block", "cyclic"), ("cyclic", "random"), ("random", "block")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
def test_redist_moves_every_value(comm, src_kind, dst_kind, dtype):
    n = 257
    src = estuary.gen.by_name(src_kind, n, comm.rank, comm.size)
    dst = estuary.gen.by_name(dst_kind, n, comm.rank, comm.size)
    r = estuary.Redist(src, dst, comm)
    a = field(src.to_indices()).astype(dtype)
    b = np.full(dst.size, -1, dtype=dtype)
    r.run(a, b)
    r.run(a, b)  # set up once, run many times
    np.testing.assert_array_equal(b, field(dst.to_indices()).astype(dtype))


def test_redist_box_in_fortran_array(comm):
    # A 2-D global array in column blocks (Fortran order): each rank's share is a (nx, ny_local)
    # Fortran-ordered array, moved in place into a row-block C-ordered array.
    nx, ny = 6, 7
    p, r = comm.size, comm.rank
    y0, y1 = r * ny // p, (r + 1) * ny // p
    x0, x1 = r * nx // p, (r + 1) * nx // p
    # global index of (x, y): x + nx*y (x fastest, as OASIS and SCRIP number points)
    src = estuary.Decomp.box([nx, ny], [0, y0], [nx, y1 - y0], order="F")
    dst = estuary.Decomp.box([nx, ny], [x0, 0], [x1 - x0, ny], order="F")
    gidx = np.add.outer(np.arange(nx), nx * np.arange(ny))  # (nx, ny)
    a = np.asfortranarray(field(gidx[:, y0:y1]))
    b = np.zeros((x1 - x0, ny), order="F")
    estuary.Redist(src, dst, comm).run(a, b)
    np.testing.assert_array_equal(b, field(gidx[x0:x1, :]))


def test_redist_errors(comm):
    n = 50
    src = estuary.gen.block(n, comm.rank, comm.size)
    # the last rank drops its last index: the destination asks for one nobody has
    if comm.rank == comm.size - 1:
        src = estuary.Decomp.indices(n, src.to_indices()[:-1].copy())
    dst = estuary.gen.cyclic(n, comm.rank, comm.size)
    with pytest.raises(estuary.Error, match=str(n - 1)) as e:
        estuary.Redist(src, dst, comm)
    assert str(e.value).startswith("estuary:")
    ok = estuary.Redist(estuary.gen.block(n, comm.rank, comm.size), dst, comm)
    a = np.zeros(estuary.gen.block(n, comm.rank, comm.size).size)
    with pytest.raises(TypeError):  # an output that is not float64 is refused, not converted
        ok.run(a, np.zeros(dst.size, dtype=np.float32))
    with pytest.raises(TypeError):  # a non-contiguous output is refused
        ok.run(a, np.zeros(2 * dst.size)[::2])


# ---- remapping ----

def synthetic_links(ns, nd):
    """The matrix of tests/couple_test_util.hpp: rows out of order, 0-4 links a row."""
    rows, cols, w = [], [], []
    for r in range(nd):
        row = (r * 7 + 3) % nd
        for j in range(row % 5):
            rows.append(row)
            cols.append((row * 13 + j * 29 + 5) % ns)
            w.append(0.1 + 0.37 * j + 0.001 * row)
    return np.array(rows, np.int64), np.array(cols, np.int64), np.array(w)


def apply_ref(rows, cols, w, src, nd):
    """dst = W src serially, each row summed in link order."""
    out = np.zeros(nd)
    for r, c, x in zip(rows, cols, w):
        out[r] += x * src[c]
    return out


def write_synthetic(comm, path, ns, nd):
    from mpi4py import MPI

    if comm.rank == 0:
        estuary.write_weights(str(path), *synthetic_links(ns, nd), ns, nd, MPI.COMM_SELF)
    comm.Barrier()


@pytest.mark.parametrize("location", ["src", "dst"])
@pytest.mark.parametrize("order", ["bfb", "sum"])
def test_remap_file_equals_serial(comm, shared_dir, location, order):
    ns, nd = 120, 72
    path = shared_dir / "w.nc"
    write_synthetic(comm, path, ns, nd)
    src = estuary.gen.cyclic(ns, comm.rank, comm.size)
    dst = estuary.gen.block(nd, comm.size - 1 - comm.rank, comm.size)
    rm = estuary.Remap(str(path), src, dst, comm, location=location, order=order)
    out = np.full(dst.size, -5.0)
    gsrc = field(np.arange(ns))
    rm.run(gsrc[src.to_indices()], out)
    want = apply_ref(*synthetic_links(ns, nd), gsrc, nd)[dst.to_indices()]
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)
    assert rm.stats()["exchanges"] in (1, 2)


def test_remap_from_links_and_read_weights(comm, shared_dir):
    ns, nd = 40, 30
    rows, cols, w = synthetic_links(ns, nd)
    path = shared_dir / "w.nc"
    # every rank writes its slice; together the file holds all links in order
    k0, k1 = comm.rank * len(w) // comm.size, (comm.rank + 1) * len(w) // comm.size
    estuary.write_weights(str(path), rows[k0:k1], cols[k0:k1], w[k0:k1], ns, nd, comm)
    (r2, c2, w2), info = estuary.read_weights(str(path), comm)
    got = comm.allgather((r2, c2, w2))
    assert info["src_size"] == ns and info["dst_size"] == nd and info["links"] == len(w)
    np.testing.assert_array_equal(np.concatenate([g[0] for g in got]), rows)
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), cols)
    np.testing.assert_array_equal(np.concatenate([g[2] for g in got]), w)
    src = estuary.gen.block(ns, comm.rank, comm.size)
    dst = estuary.gen.cyclic(nd, comm.rank, comm.size)
    rm = estuary.Remap.from_links(rows[k0:k1], cols[k0:k1], w[k0:k1], src, dst, comm, unmapped_value=-1.0)
    out = np.zeros(dst.size)
    gsrc = field(np.arange(ns))
    rm.run(gsrc[src.to_indices()], out)
    want = apply_ref(rows, cols, w, gsrc, nd)
    want[np.setdiff1d(np.arange(nd), rows)] = -1.0  # rows no link reaches
    np.testing.assert_allclose(out, want[dst.to_indices()], rtol=0, atol=1e-12)


def test_remap_errors(comm, shared_dir):
    src = estuary.gen.block(10, comm.rank, comm.size)
    with pytest.raises(estuary.Error, match="nothere.nc"):
        estuary.Remap(str(shared_dir / "nothere.nc"), src, src, comm)
    with pytest.raises(estuary.Error, match="location"):
        estuary.Remap(str(shared_dir / "nothere.nc"), src, src, comm, location="middle")
    path = shared_dir / "w.nc"
    write_synthetic(comm, path, 120, 72)
    with pytest.raises(estuary.Error):  # the file is for 120 -> 72 points, not 10 -> 10
        estuary.Remap(str(path), src, src, comm)
