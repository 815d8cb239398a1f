"""The I/O server from Python: model fields to CF netCDF files, and back (docs/io.md).

    from mpi4py import MPI
    import numpy as np
    import estuary

    with estuary.Output("io.yaml", MPI.COMM_WORLD) as out:   # mode, writers: from the file
        if out.is_server:
            out.serve()                                      # server mode: the last ranks write
        else:
            comm = out.model_comm
            part = estuary.gen.block(nx * ny, comm.rank, comm.size)
            out.def_grid("g", estuary.GridGen.lonlat(nx, ny).make(part))
            out.def_field("t", "g", part, units="K")
            out.enddef()
            for step in range(nsteps):
                out.write("t", step * 3600.0, values)        # numpy float64, part's order
    report = out.report()                                    # collective, servers too: a dict

    with estuary.Reader("out/inst.nc", comm) as rd:          # any decomposition, any rank count
        t = rd.read("t", 3600.0, other_part)                 # or rd.read(..., out=array)

Output and Reader are the nanobind classes of the native module; failures raise
:class:`estuary.Error` with estuary's message, and ``write`` raises :class:`Terminated` (an
``estuary.Error``) after SIGTERM, once every record handed over is written.
"""
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the stubs of the native module (nanobind stubgen), shipped in the package
    from ._estuary import io as _io
else:
    from . import _native

    _io = _native().io

Output = _io.Output
Reader = _io.Reader
Terminated = _io.Terminated
have_netcdf4_parallel = _io.have_netcdf4_parallel
read_xios_xml = _io.read_xios_xml

__all__ = ["Output", "Reader", "Terminated", "have_netcdf4_parallel", "read_xios_xml"]
