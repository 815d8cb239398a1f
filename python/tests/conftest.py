"""Shared pieces of the Python tests. Under mpirun every rank runs every test in the same order,
so the collective calls match; each test does its collective work first and asserts after."""
import os
import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.fixture
def shared_dir(comm, request):
    """A fresh folder that every rank sees (rank 0 creates it)."""
    base = Path(os.environ.get("ESTUARY_PY_TMP", tempfile.gettempdir()))
    d = base / f"estuary_py_{request.node.name}_np{comm.size}".replace("[", "_").replace("]", "").replace(" ", "_")
    if comm.rank == 0:
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    comm.Barrier()
    return d
