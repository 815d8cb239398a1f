"""A small model program written against estuary's typed API: test_typing.py runs
``mypy --strict`` on it (with the package's stubs), so a stub that loses a signature, or a
signature that stops matching how users call it, fails there. Never run: the calls need a
coupled set-up; only its types matter."""
from __future__ import annotations

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

import estuary
import estuary.couple as pyoasis
from estuary.couple import OASIS, OasisParameters


def redistribute(comm: MPI.Intracomm, n: int) -> npt.NDArray[np.float64]:
    src: estuary.Decomp = estuary.gen.block(n, comm.rank, comm.size)
    dst = estuary.gen.cyclic(n, comm.rank, comm.size)
    r = estuary.Redist(src, dst, comm, algorithm="p2p")
    a = src.to_indices().astype(np.float64)
    b = np.empty(dst.size)
    r.run(a, b)
    stats: dict[str, int] = {k: int(v) for k, v in r.schedule_stats().items()}
    assert stats["stages"] >= 0 and r.algorithm in estuary.schedule_names()
    return b


def remap(comm: MPI.Intracomm) -> float:
    src_gen = estuary.GridGen.lonlat(36, 18)
    dst_gen = estuary.GridGen.from_name("gaussian:48x24")
    src = estuary.gen.block(src_gen.size, comm.rank, comm.size)
    dst = estuary.gen.block(dst_gen.size, comm.rank, comm.size)
    rows, cols, weights = estuary.distance_weights(src_gen, dst_gen.make(dst), comm, neighbors=4)
    m = estuary.Remap.from_links(rows, cols, weights, src, dst, comm, location="dst", order="bfb")
    out = np.zeros(dst.size)
    m.run(np.ones(src.size), out)
    grid: estuary.Grid = src_gen.make(src)
    lon: npt.NDArray[np.float64] = grid.lon
    return float(out.sum()) + float(lon.sum())


def couple(steps: int) -> list[OasisParameters]:
    comp = pyoasis.Component("ocean")
    comm: MPI.Intracomm = comp.localcomm
    part = pyoasis.ApplePartition(comm.rank * 10, 10, global_size=10 * comm.size)
    sst = pyoasis.Var("SST", part, OASIS.OUT)
    flux = pyoasis.Var("FLUX", part, OasisParameters.OASIS_In)
    comp.enddef()
    field = np.zeros(part.size)
    infos: list[OasisParameters] = []
    for t in range(steps):
        infos.append(sst.put(t * 3600.0, field))
        info = flux.get(t * 3600.0, field)
        if info == OasisParameters.OASIS_Recvd and int(info) == 3:  # an IntEnum: equal to OASIS's integers
            infos.append(info)
    freqs = sst.cpl_freqs
    assert len(freqs) == sst.ncpl
    comp.terminate()
    return infos


def write_output(comm: MPI.Intracomm) -> float:
    with estuary.Output("io.yaml", comm, mode="serverless") as out:
        part = estuary.gen.block(100, comm.rank, comm.size)
        out.def_grid("g", estuary.GridGen.lonlat(10, 10).make(part))
        out.def_field("t", "g", part, units="K")
        out.enddef()
        out.write("t", 0.0, np.zeros(part.size))
    report = out.report()
    with estuary.Reader("out/inst.nc", comm) as rd:
        values: npt.NDArray[np.float64] = rd.read("t", 0.0, part)
        again = rd.read_record("t", 0, part, out=np.empty(part.size))
    return float(report["write_s"]) + float(np.sum(values)) + float(again[0])


if __name__ == "__main__":
    redistribute(MPI.COMM_WORLD, 100)
