"""The package's types as mypy sees them (issue 22): ``mypy --strict`` on a small typed user
program (typing/user_program.py) and on the package itself — its .pyi stubs (estuary/__init__.pyi
and the native module's, written by nanobind's stubgen at build time) and its typed modules
(estuary.couple, estuary.io) — with no error; and on typing/wrong_program.py, whose deliberate
mistakes mypy must each report, so that the check can fail.

The package is laid out as the wheel lays it out (scripts/wheel): python/estuary with the stubs
of <build>/python/stubs/_estuary as estuary/_estuary/, their imports of the top-level module
renamed. $ESTUARY_STUBS names the stubs' folder (python/CMakeLists.txt sets it). Every check is
--strict's: the bindings give their results' element types (dict[str, Any], links as a tuple of
numpy arrays: python/src/bindings.hpp), which stubgen would otherwise write as bare generics.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
PACKAGE = HERE.parent / "estuary"
STUBS = os.environ.get("ESTUARY_STUBS", "")
# The modules of the package that are typed (the command line, estuary.cli, is not part of it).
MODULES = ["estuary", "estuary._estuary", "estuary._estuary.gen", "estuary._estuary.io", "estuary.couple",
           "estuary.io"]

import mypy  # noqa: E402,F401  scripts/setup installs it: its absence fails the test, never skips it


@pytest.fixture(scope="module")
def typed_package(tmp_path_factory):
    if not STUBS or not pathlib.Path(STUBS, "__init__.pyi").is_file():
        pytest.fail(f"no stubs at ESTUARY_STUBS={STUBS!r}: build the _estuary_stub target (python/CMakeLists.txt)")
    root = tmp_path_factory.mktemp("typed")
    shutil.copytree(PACKAGE, root / "estuary", ignore=shutil.ignore_patterns("__pycache__", "cli", "__main__.py"))
    (root / "estuary" / "_estuary").mkdir()
    for stub in pathlib.Path(STUBS).glob("*.pyi"):
        text = stub.read_text().replace("from _estuary import", "from estuary._estuary import")
        text = re.sub(r"^import _estuary$", "import estuary._estuary as _estuary", text, flags=re.M)
        (root / "estuary" / "_estuary" / stub.name).write_text(text)
    return root


def mypy(root, *args):
    env = dict(os.environ, MYPYPATH=str(root))
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
           "--no-error-summary", "--show-error-codes", "--hide-error-context", *args]
    r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=240)
    return r.returncode, r.stdout + r.stderr


def test_package_and_its_stubs_pass_strict(typed_package):
    args = []
    for m in MODULES:
        args += ["-m", m]
    rc, out = mypy(typed_package, *args)
    assert rc == 0 and not out.strip(), out


def test_user_program_passes_strict(typed_package):
    rc, out = mypy(typed_package, str(HERE / "typing" / "user_program.py"))
    assert rc == 0 and not out.strip(), out


def test_wrong_program_fails_where_expected(typed_package):
    program = HERE / "typing" / "wrong_program.py"
    expected = {}
    for n, line in enumerate(program.read_text().splitlines(), 1):
        m = re.search(r"# error: ([a-z-]+)", line)
        if m:
            expected[n] = m.group(1)
    assert len(expected) >= 5
    rc, out = mypy(typed_package, str(program))
    assert rc == 1, out
    found = {}
    for line in out.splitlines():
        m = re.match(r".*wrong_program\.py:(\d+): error: .*\[([a-z-]+)\]$", line)
        if m:
            found.setdefault(int(m.group(1)), set()).add(m.group(2))
    for n, code in expected.items():
        assert code in found.get(n, set()), f"line {n}: mypy did not report [{code}]:\n{out}"
    assert set(found) == set(expected), f"errors on unexpected lines:\n{out}"
