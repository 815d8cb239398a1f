# Settings the I/O pytest files get from ctest (tests/CMakeLists.txt): the writer program, the
# MPI launcher and a scratch directory.
import os

import pytest


@pytest.fixture(scope="session")
def io_env():
    writer = os.environ.get("ESTUARY_IO_WRITER")
    assert writer and os.path.exists(writer), "run through ctest: ESTUARY_IO_WRITER is not set"
    return {
        "writer": writer,
        "mpiexec": os.environ.get("ESTUARY_MPIEXEC", "mpirun"),
        "tmp": os.environ.get("ESTUARY_IO_TMP", "/tmp/estuary_io_python"),
    }
