"""The self-contained wheel (scripts/wheel) installed into a fresh venv and used from a temporary
folder, away from the checkout and with none of the test environment's hints (PYTHONPATH,
ESTUARY_TOY_ATM_OCN, ESTUARY_BENCH_DIR, ESTUARY_SIM_BENCH): `estuary --version`, every
sub-command's --help, and real runs — `inspect plan` on 2 ranks (the compiled module under
mpirun) checked against the bytes counted here, `demo` on 2 ranks (the toy and its configuration
from the wheel) and `bench redist` (a benchmark program from the wheel) — plus the typing files.

The venv sees the system's site-packages for the runtime dependencies (numpy, mpi4py, tqdm:
installing them from a registry in a test would be slow and need the network); the estuary it
imports is the wheel's, which the test checks. Needs a build folder: $ESTUARY_BUILD_DIR."""
import ast
import json
import os
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = os.environ.get("ESTUARY_BUILD_DIR")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if not BUILD:
        pytest.fail("ESTUARY_BUILD_DIR (the CMake build folder) not set: run through ctest, which sets it")
    tmp = tmp_path_factory.mktemp("wheel")
    t0 = time.time()
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "wheel"), BUILD, str(tmp / "dist")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    whl = Path(out.stdout.strip().splitlines()[-1])
    print(f"wheel {whl.name}: {whl.stat().st_size / 1e6:.1f} MB, built in {time.time() - t0:.1f} s")
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(tmp / "venv")
    py = tmp / "venv" / "bin" / "python"
    # pip of this interpreter, installing into the venv (--prefix would miss its scripts' shebang)
    out = subprocess.run([str(py), "-m", "pip", "install", "--no-index", "--no-deps", "--quiet", str(whl)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "ESTUARY_TOY_ATM_OCN", "ESTUARY_TOY_ATM_OCN_F", "ESTUARY_BENCH_DIR",
                        "ESTUARY_SIM_BENCH", "ESTUARY_BUILD_DIR", "BUILD", "ESTUARY_CONFIG")}
    env["PATH"] = str(tmp / "venv" / "bin") + os.pathsep + env.get("PATH", "")
    work = tmp / "work"
    work.mkdir()
    return {"whl": whl, "py": py, "exe": tmp / "venv" / "bin" / "estuary", "env": env, "cwd": work}


def run(inst, *args, timeout=120, check=True):
    out = subprocess.run([str(inst["exe"]), *args], capture_output=True, text=True, timeout=timeout,
                         env=inst["env"], cwd=inst["cwd"])
    if check:
        assert out.returncode == 0, f"estuary {' '.join(args)}:\n{out.stdout}{out.stderr}"
    return out


def test_wheel_holds_the_module_programs_and_types(installed):
    names = zipfile.ZipFile(installed["whl"]).namelist()
    for want in ("estuary/cli/__init__.py", "estuary/cli/helpers.py", "estuary/py.typed", "estuary/__init__.pyi",
                 "estuary/_estuary/__init__.pyi", "estuary/_estuary/gen.pyi", "estuary/_bin/toy_atm_ocn", "estuary/_bin/toy_atm_ocn.yaml",
                 "estuary/_bin/toy_atm_ocn.py", "estuary/_bin/redist"):
        assert want in names, want
    assert any(n.startswith("estuary/_estuary") and n.endswith(".so") for n in names)
    assert any(n.startswith("estuary/_lib/libestuary.so") for n in names)
    # the stub declares the bindings IDEs and mypy need (signatures, not just names)
    z = zipfile.ZipFile(installed["whl"])
    for n in names:  # every stub is valid Python (a type checker reads it as such)
        if n.endswith(".pyi"):
            ast.parse(z.read(n).decode(), filename=n)
    text = z.read("estuary/_estuary/__init__.pyi").decode()
    assert "import _estuary" not in text.replace("estuary._estuary", "")  # as the package names it
    assert "std::" not in text  # every C++ type has its Python name
    stub = ast.parse(text)
    classes = {n.name: n for n in stub.body if isinstance(n, ast.ClassDef)}
    funcs = {n.name for n in stub.body if isinstance(n, ast.FunctionDef)}
    assert {"Redist", "Decomp", "GridGen", "Component"} <= set(classes)
    assert {"oasis_partition", "oasis_partition_global_size", "write_weights"} <= funcs
    assert "from_name" in {n.name for n in classes["GridGen"].body if isinstance(n, ast.FunctionDef)}


def test_imported_from_the_venv_not_the_checkout(installed):
    out = subprocess.run([str(installed["py"]), "-c", "import estuary, estuary._estuary as m; "
                          "print(estuary.__file__); print(m.__file__)"],
                         capture_output=True, text=True, timeout=60, env=installed["env"], cwd=installed["cwd"])
    assert out.returncode == 0, out.stderr
    venv_dir = str(installed["py"].parent.parent)
    for line in out.stdout.split():
        assert line.startswith(venv_dir), line


def test_version_and_every_help(installed):
    assert run(installed, "--version").stdout.strip().startswith("estuary ")
    top = run(installed, "--help").stdout
    for cmd in ("demo", "weights", "inspect plan", "inspect schedule", "bench", "simulate", "timeline"):
        assert cmd.split()[0] in top
        assert run(installed, *cmd.split(), "--help").stdout.startswith("usage:"), cmd


def test_inspect_plan_on_two_ranks(installed):
    n = 64
    rec = json.loads(run(installed, "inspect", "plan", "--src", "block", "--dst", "cyclic", "--n", str(n),
                         "--ranks", "2", "--json").stdout)
    # independently: an element moves when its block owner and its cyclic owner differ
    moved = sum(1 for i in range(n) if (i * 2) // n != i % 2)
    assert rec["ranks"] == 2 and rec["total"]["bytes"] == 8 * moved


def test_demo_and_bench_use_the_wheels_programs(installed):
    dry = json.loads(run(installed, "demo", "--dry-run", "--json").stdout)
    assert dry["command"][3].startswith(str(installed["py"].parent.parent)), dry["command"]
    out = run(installed, "demo", "--ranks", "2", "--dir", "run", timeout=180)
    assert "done" in out.stdout
    assert (installed["cwd"] / "run" / "estuary.yaml").is_file()
    # the Python toy (the wheel's, importing the wheel's estuary) with the Fortran one (its library
    # found through libestuary_fortran's own RUNPATH)
    out = run(installed, "demo", "--ranks", "2", "--atmos", "python", "--ocean", "fortran", "--dir", "mixed",
              timeout=180)
    assert "done" in out.stdout
    rec = json.loads(run(installed, "bench", "redist", "--ranks", "1", "--json", "--out", "b.jsonl", "--",
                         "--n", "1000", "--iterations", "1").stdout)
    assert rec["ok"] and rec["program"].startswith(str(installed["py"].parent.parent))
    assert (installed["cwd"] / "b.jsonl").is_file()
