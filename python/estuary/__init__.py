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
import os
import sys

# Loaded on first use (PEP 562), so that `import estuary` (and the command line, which starts
# mpirun itself) does not initialise MPI by importing mpi4py.
_NATIVE = ("Error", "MpiError", "Decomp", "gen", "Redist", "Remap", "Grid", "GridGen", "write_weights",
           "read_weights", "distance_weights", "bilinear_weights", "bicubic_weights", "conservative_weights", "stack_weights", "oasis_partition",
           "oasis_partition_global_size", "schedule_names", "info_name", "read_coupling_config")
# Grid files (SCRIP, OASIS grids.nc/masks.nc/areas.nc): estuary/grid_files.hpp.
_NATIVE += ("grid_file_info", "oasis_grid_names", "read_grid_file")
_IO = ("Output", "Reader")  # from estuary.io (the I/O server)
_COUPLE = ("Component", "SerialPartition", "ApplePartition", "BoxPartition", "OrangePartition",
           "PointsPartition", "Var", "OasisParameters", "OASIS", "abort")


# One failed rank stops the job. An uncaught exception ends this rank's interpreter, but its
# partners would wait for it in their next collective or coupling get until the time-out (and
# mpi4py's MPI_Finalize at exit waits for them too). So, as `python -m mpi4py` does, the hook
# prints the exception and then aborts the whole job: MPI_Abort on MPI_COMM_WORLD. It acts
# only when mpi4py has initialised MPI with more than one rank. Opt out with
# ESTUARY_ABORT_ON_EXCEPTION=0 in the environment, or estuary.abort_on_exception(False).
_previous_excepthook = sys.excepthook


def _abort_job_hook(kind, value, tb):
    _previous_excepthook(kind, value, tb)
    if issubclass(kind, (KeyboardInterrupt, SystemExit)):
        return
    mpi = sys.modules.get("mpi4py.MPI")
    try:
        if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized() or mpi.COMM_WORLD.Get_size() < 2:
            return
        sys.stderr.write(f"estuary: uncaught {kind.__name__} on rank {mpi.COMM_WORLD.Get_rank()}: "
                         "aborting every rank of the job (ESTUARY_ABORT_ON_EXCEPTION=0 turns this off)\n")
        sys.stderr.flush()
    except Exception:  # MPI in a state where it cannot be asked: nothing to abort
        return
    mpi.COMM_WORLD.Abort(1)


def abort_on_exception(enabled: bool = True) -> None:
    """Sets whether an uncaught exception on one rank aborts every rank of the MPI job.

    enabled: True (the default, also at import unless $ESTUARY_ABORT_ON_EXCEPTION is 0, no,
    false or off): the exception is printed, then MPI_Abort ends every rank (only when mpi4py
    has initialised MPI with more than one rank). False: the other ranks wait for the failed
    one until their time-outs expire."""
    if enabled:
        sys.excepthook = _abort_job_hook
    elif sys.excepthook is _abort_job_hook:
        sys.excepthook = _previous_excepthook


abort_on_exception(os.environ.get("ESTUARY_ABORT_ON_EXCEPTION", "1") not in ("0", "no", "false", "off"))


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
    "read_weights", "distance_weights", "bilinear_weights", "bicubic_weights", "conservative_weights", "stack_weights", "oasis_partition",
    "oasis_partition_global_size", "schedule_names", "info_name", "couple", "Component", "SerialPartition", "ApplePartition", "BoxPartition",
    "OrangePartition", "PointsPartition", "Var", "OasisParameters", "OASIS", "abort", "io", "Output", "Reader",
    "abort_on_exception",
    "grid_file_info", "oasis_grid_names", "read_grid_file",
]
