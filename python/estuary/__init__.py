"""estuary from Python: redistribution, remapping and the coupler over estuary's C++ library.

Communicators are mpi4py communicators (``None`` means ``MPI.COMM_WORLD``); fields are numpy
float64 arrays, used in place (no copies) when C- or Fortran-contiguous: their memory order is
the local order of the decomposition or partition. Failures raise :class:`estuary.Error`
(a ``RuntimeError``) with estuary's message.

    from mpi4py import MPI
    import numpy as np
    import estuary

    comm = MPI.COMM_WORLD
    src = estuary.gen.block(100, comm.rank, comm.size)
    dst = estuary.gen.cyclic(100, comm.rank, comm.size)
    r = estuary.Redist(src, dst, comm)
    a = src.to_indices().astype(float)
    b = np.empty(dst.size)
    r.run(a, b)                     # b == dst.to_indices()

The coupler reads like pyOASIS: see :mod:`estuary.couple`; the I/O server (``estuary.Output``,
``estuary.Reader``) is :mod:`estuary.io`.
"""
import importlib

# Loaded on first use (PEP 562), so that `import estuary` (and the command line, which starts
# mpirun itself) does not initialise MPI by importing mpi4py.
_NATIVE = ("Error", "MpiError", "Decomp", "gen", "Redist", "Remap", "Grid", "GridGen", "write_weights",
           "read_weights", "distance_weights", "bilinear_weights", "conservative_weights", "oasis_partition", "schedule_names",
           "info_name", "read_coupling_config")
_IO = ("Output", "Reader")  # from estuary.io (the I/O server)
_COUPLE = ("Component", "SerialPartition", "ApplePartition", "BoxPartition", "OrangePartition",
           "PointsPartition", "Var", "OasisParameters", "OASIS", "abort")


def _native():
    importlib.import_module("mpi4py.MPI")  # MPI initialised by mpi4py before estuary is used
    try:  # the installed package (pip) holds the module inside it
        return importlib.import_module("._estuary", __name__)
    except ImportError:  # the main CMake build puts it on PYTHONPATH as a top-level module
        return importlib.import_module("_estuary")


def __getattr__(name):
    if name in _NATIVE:
        value = getattr(_native(), name)
    elif name in _COUPLE or name == "couple":
        couple = importlib.import_module(".couple", __name__)
        value = couple if name == "couple" else getattr(couple, name)
    elif name in _IO or name == "io":
        io = importlib.import_module(".io", __name__)
        value = io if name == "io" else getattr(io, name)
    elif name == "_estuary":
        value = _native()
    else:
        raise AttributeError(f"module 'estuary' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_NATIVE) + list(_COUPLE) + ["couple"] + list(_IO) + ["io"])


__version__ = "0.1.0"

__all__ = [
    "Error", "MpiError", "Decomp", "gen", "Redist", "Remap", "Grid", "GridGen", "write_weights",
    "read_weights", "distance_weights", "bilinear_weights", "conservative_weights", "oasis_partition", "schedule_names",
    "info_name", "couple", "Component", "SerialPartition", "ApplePartition", "BoxPartition",
    "OrangePartition", "PointsPartition", "Var", "OasisParameters", "OASIS", "abort", "io", "Output", "Reader",
]
