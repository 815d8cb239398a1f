"""The wheel `pip wheel ./python` builds (scikit-build-core: the library, toys, benchmarks and
module compiled from scratch, python/CMakeLists.txt's `wheel` component installed), put through
test_wheel.py's checks: installed into a fresh venv and every command run from a temporary
folder with none of the test environment's hints — the same checks as scripts/wheel's wheel, so
the two ways give the same self-contained package.

Minutes (a full build of the library): ctest python_pip_wheel, label slow, out of `make test`.
The build runs without build isolation (--no-build-isolation: scikit-build-core and nanobind as
installed by scripts/setup), so the test needs no network; `pip install ./python` with isolation
builds the same way. Prints the build time and the wheel's size (docs/building.md records them)."""
import os
import subprocess
import sys
import time

import pytest

from test_wheel import *  # noqa: F401,F403 the checks, run here on the pip-built wheel
from test_wheel import ROOT, venv_install


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipwheel")
    t0 = time.time()
    # from a folder outside the checkout, as a user's pip would run
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                          "-w", str(tmp / "dist"), str(ROOT / "python")],
                         capture_output=True, text=True, timeout=3000, cwd=tmp)
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-5000:]
    whl = sorted((tmp / "dist").glob("estuary-*.whl"))
    assert len(whl) == 1, out.stdout[-2000:]
    print(f"pip wheel {whl[0].name}: {whl[0].stat().st_size / 1e6:.1f} MB, built in {time.time() - t0:.0f} s "
          f"(CMAKE_BUILD_PARALLEL_LEVEL={os.environ.get('CMAKE_BUILD_PARALLEL_LEVEL', 'unset')})")
    return venv_install(whl[0], tmp)

