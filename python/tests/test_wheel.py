"""The self-contained wheel (scripts/wheel) installed into a fresh venv and used from a temporary
folder, away from the checkout and with none of the test environment's hints (PYTHONPATH,
ESTUARY_TOY_ATM_OCN, ESTUARY_BENCH_DIR, ESTUARY_SIM_BENCH): `estuary --version`, every
sub-command's --help (the list read from the CLI's own usage, so a new command is covered), and
real runs — `inspect plan` on 2 ranks (the compiled module under
mpirun) checked against the bytes counted here, `inspect schedule`'s matrix against the same
count, `weights` against CDO's gencon, `demo` on 2 ranks (the toy and its configuration from the
wheel) and `timeline` on its run folder against the events its files hold, `bench redist` (a
benchmark program from the wheel), `simulate` (the wheel's bench/sim) against the alpha-beta
model and `io check` on an iodef.xml written here — plus the typing files and each shared library once.

The venv sees the system's site-packages for the runtime dependencies (numpy, mpi4py, tqdm:
installing them from a registry in a test would be slow and need the network); the estuary it
imports is the wheel's, which the test checks. Needs a build folder: $ESTUARY_BUILD_DIR."""
import ast
import json
import os
import re
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import numpy as np
import pytest
from test_cli import weight_links
from test_simulate import ALPHA, BW, close

ROOT = Path(__file__).resolve().parents[2]
BUILD = os.environ.get("ESTUARY_BUILD_DIR")


def venv_install(whl: Path, tmp: Path) -> dict:
    """Installs the wheel `whl` into a fresh venv under `tmp`; returns what the checks need: the
    wheel, the venv's python and estuary, an environment without the test's hints, and an empty
    working folder. test_pip_wheel.py runs this file's checks on the wheel pip builds."""
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
    return venv_install(whl, tmp)


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
    # each shared library once, under its SONAME (a wheel has no symbolic links: wheel_fixup.cmake)
    libs = sorted(n for n in names if n.startswith("estuary/_lib/"))
    assert "estuary/_lib/libestuary.so.0" in libs and "estuary/_lib/libestuary_sim.so.0" in libs, libs
    assert all(n.endswith(".so.0") for n in libs), libs
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


def test_runpaths_relative_to_origin(installed):
    """The module, libraries and programs find each other through $ORIGIN only: no RUNPATH into
    the build folder (scripts/wheel's, or the temporary one pip deleted)."""
    site = Path(subprocess.run([str(installed["py"]), "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                               capture_output=True, text=True, check=True).stdout.strip()) / "estuary"
    elves = [f for f in [*site.glob("_estuary*.so"), *(site / "_lib").iterdir(), *(site / "_bin").iterdir()]
             if f.is_file() and f.read_bytes()[:4] == b"\x7fELF"]
    assert len(elves) >= 5, elves
    for f in elves:
        dyn = subprocess.run(["readelf", "-d", str(f)], capture_output=True, text=True, check=True).stdout
        paths = [p for line in dyn.splitlines() if "RUNPATH" in line or "RPATH" in line
                 for p in line.split("[", 1)[1].rstrip("]").split(":")]
        assert all(p.startswith("$ORIGIN") for p in paths), (f.name, paths)
        # the module and the programs need libestuary from _lib (libestuary needs system libraries only)
        assert paths or f.parent.name == "_lib", f.name


def test_imported_from_the_venv_not_the_checkout(installed):
    out = subprocess.run([str(installed["py"]), "-c", "import estuary, estuary._estuary as m; "
                          "print(estuary.__file__); print(m.__file__)"],
                         capture_output=True, text=True, timeout=60, env=installed["env"], cwd=installed["cwd"])
    assert out.returncode == 0, out.stderr
    venv_dir = str(installed["py"].parent.parent)
    for line in out.stdout.split():
        assert line.startswith(venv_dir), line


def subcommands(installed, *cmd):
    """The sub-commands `estuary CMD... --help` offers (its usage's {a,b,...}), so that a command
    added later is covered without this list being edited."""
    usage = run(installed, *cmd, "--help").stdout.split("\n\n")[0]
    m = re.search(r"\{([a-z0-9_,-]+)\}", usage)
    return m.group(1).split(",") if m else []


def test_version_and_every_help(installed):
    assert run(installed, "--version").stdout.strip().startswith("estuary ")
    top = subcommands(installed)
    assert {"demo", "weights", "inspect", "bench", "simulate", "timeline", "io"} <= set(top), top
    for cmd in top:
        assert run(installed, cmd, "--help").stdout.startswith("usage:"), cmd
        for sub in subcommands(installed, cmd):
            assert run(installed, cmd, sub, "--help").stdout.startswith("usage:"), (cmd, sub)


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
    # the demo's coupling timeline (timeline: true in its YAML), analysed by the wheel's CLI: as
    # many events per component as its file holds rows (an independent count)
    rec = json.loads(run(installed, "timeline", "run", "--json", "--no-png", "--no-trace").stdout)
    for comp in rec["components"]:
        rows = (installed["cwd"] / "run" / f"timeline_{comp['component']}.jsonl").read_text().splitlines()
        assert comp["events"] == sum(1 for line in rows if line.startswith("[")), comp["component"]
    assert sorted(c["component"] for c in rec["components"]) == ["atmos", "ocean"]
    # the Python toy (the wheel's, importing the wheel's estuary) with the Fortran one (its library
    # found through libestuary_fortran's own RUNPATH)
    out = run(installed, "demo", "--ranks", "2", "--atmos", "python", "--ocean", "fortran", "--dir", "mixed",
              timeout=180)
    assert "done" in out.stdout
    rec = json.loads(run(installed, "bench", "redist", "--ranks", "1", "--json", "--out", "b.jsonl", "--",
                         "--n", "1000", "--iterations", "1").stdout)
    assert rec["ok"] and rec["program"].startswith(str(installed["py"].parent.parent))
    assert (installed["cwd"] / "b.jsonl").is_file()


def test_inspect_schedule_and_weights(installed):
    n = 64
    rec = json.loads(run(installed, "inspect", "schedule", "--src", "block", "--dst", "cyclic", "--n", str(n),
                         "--ranks", "2", "--json").stdout)
    m = np.zeros((2, 2), int)  # independently: bytes from the block owner to the cyclic owner
    for i in range(n):
        m[(i * 2) // n, i % 2] += 8
    assert rec["matrix_bytes"] == (m - np.diag(np.diag(m))).tolist()
    # weights on 2 ranks, equal to the ones CDO generates for the same grids (test_cli.py's check)
    rec = json.loads(run(installed, "weights", "--src", "lonlat:12x6", "--dst", "lonlat:7x4", "--method",
                         "conservative", "--out", "w.nc", "--ranks", "2", "--json").stdout)
    assert rec["links"] > 28
    subprocess.run(["cdo", "-s", "-O", "gencon,r7x4", "-const,1,r12x6", "cdo.nc"], check=True, cwd=installed["cwd"])
    s1, d1, w1, f1, _ = weight_links(installed["cwd"] / "w.nc")
    s2, d2, w2, f2, _ = weight_links(installed["cwd"] / "cdo.nc")
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(d1, d2)
    np.testing.assert_allclose(w1, w2, rtol=0, atol=1e-10)


def test_simulate_uses_the_wheels_sim(installed):
    # recursive doubling on one switch: log2 p contention-free stages (test_simulate.py's model)
    repeat, doubles, p = 2, 3, 8
    out = run(installed, "simulate", "allreduce", "--ranks", str(p), "--topology", "switch", "--algorithm",
              "recursive-doubling", "--doubles", str(doubles), "--repeat", str(repeat), "--json", timeout=180)
    recs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert len(recs) == 1 and "error" not in recs[0], out.stdout + out.stderr
    stages = repeat * 3
    assert recs[0]["messages"] == stages * p
    assert close(recs[0]["simulated_s"], stages * (ALPHA + 8 * doubles / BW)), recs[0]


def test_io_check_reads_xios_xml(installed):
    """`estuary io check` on an iodef.xml written here: the files and variables it prints are the
    ones the XML defines (field_ref renames, inherited operations, a disabled file left out)."""
    (installed["cwd"] / "iodef.xml").write_text("""<?xml version="1.0"?>
<simulation>
  <context id="nemo">
    <field_definition operation="average" prec="4">
      <field id="sst" long_name="sea surface temperature" unit="degC"/>
      <field id="ssh" unit="m" operation="maximum"/>
    </field_definition>
    <file_definition type="one_file" format="netcdf4">
      <file id="f1" name="@expname@_1d" output_freq="1d">
        <field field_ref="sst" name="tos"/>
        <field field_ref="ssh"/>
      </file>
      <file id="f2" name="off" output_freq="1mo" enabled="false">
        <field field_ref="sst"/>
      </file>
    </file_definition>
  </context>
</simulation>
""")
    rec = json.loads(run(installed, "io", "check", "iodef.xml", "--set", "expname=EXP", "--json").stdout)
    files = {f["name"]: f for f in rec["files"]}
    assert list(files) == ["EXP_1d"], files
    got = {(v["variable"], v["source"], v["operation"]) for v in files["EXP_1d"]["fields"]}
    assert got == {("tos", "sst", "average"), ("ssh", "ssh", "maximum")}, got
