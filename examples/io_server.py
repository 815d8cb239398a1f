"""The I/O server from Python: the same model and files as io_server.cpp.

    mpirun -n 3 python3 io_server.py [io_server.yaml]
"""
import sys

import numpy as np
from mpi4py import MPI

import estuary

NX, NY, STEPS = 36, 18, 12


def sst(g, s):
    """The field at points g (longitude fastest) and hour s."""
    return 270.0 + 0.25 * (g % NX) + 0.5 * (g // NX) + s


def main():
    config = sys.argv[1] if len(sys.argv) > 1 else "io_server.yaml"
    with estuary.Output(config, MPI.COMM_WORLD) as out:
        if out.is_server:
            out.serve()  # returns when the model closes
            return
        comm = out.model_comm
        lo, hi = NX * NY * comm.rank // comm.size, NX * NY * (comm.rank + 1) // comm.size
        part = estuary.Decomp.indices(NX * NY, np.arange(lo, hi, dtype=np.int64))
        out.def_grid("grid", estuary.GridGen.lonlat(NX, NY).make(part))
        out.def_field("sst", "grid", part, units="K", standard_name="sea_surface_temperature")
        out.enddef()
        g = np.arange(lo, hi, dtype=np.int64)
        for s in range(1, STEPS + 1):
            out.write("sst", 3600.0 * s, sst(g, s))  # model time in seconds
        out.close()
        if comm.rank == 0:
            print(f"io_server (Python): {STEPS} hours written")


if __name__ == "__main__":
    main()
