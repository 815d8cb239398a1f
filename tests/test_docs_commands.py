"""Every command in README.md, examples/README.md and docs/*.md runs as written.

A command is a line of a ```sh block (other blocks, ```text, hold diagrams, file excerpts and
templates naming the reader's own files). Each is run from a fresh folder that, like a checkout
after `make`, holds examples/, build/ (symlinks; outputs land in the folder, never in the
checkout) and the run folder of `estuary demo --dir run`, with `estuary` on PATH (the launcher
sets the MPI variables itself):
- `estuary ...`, `python3 examples/...`, `mpirun ... build/examples/...` run for real and must
  succeed;
- a benchmark that takes minutes (full-size grids, 40 ranks; the SLOW list) is run with
  `--dry-run`, which makes the program check its options and print them without running;
- build-environment commands (`make`, `cmake`, `spack`, `conda`, `module`) are checked, not run:
  a make target must exist (`make -n`), every `-DESTUARY_*` must be an option of the project, a
  repository path given must exist.
A command of any other kind fails the test: classify it here, or mark its block as text.

Environment (ctest): ESTUARY_SOURCE_DIR, ESTUARY_BUILD_DIR, PYTHONPATH (the package and module).
"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("ESTUARY_SOURCE_DIR", Path(__file__).resolve().parent.parent))
BUILD = Path(os.environ.get("ESTUARY_BUILD_DIR", ROOT / "build"))
DOCS = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Benchmarks that take minutes: their options are checked (--dry-run), they are not run.
SLOW = [r"--grids (full|medium|yac)", r"bench remap\b(?!.*--small)", r"--ranks 40\b", r"--n 1e7\b", r"--n 10000000\b",
        r"bench sim .*--calibrate", r"bench io\b", r"--ranks 8\b", r"--timeline-reps", r"--sizes .*1e7",
        # bench/sim at 10^5-10^6 simulated ranks (issue 23, docs/simulator.md): minutes to half an hour each
        r"bench/sim .*--ranks (100000|131072|262144|1000000|1048576)\b", r"bench/simgrid_probe\b"]
ENVIRONMENT = {"cmake", "spack", "conda", "module", "export"}


def commands():
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in re.finditer(r"^```sh\n(.*?)^```", text, re.S | re.M):
            first = text[: m.start()].count("\n") + 2
            lines = m.group(1).replace("\\\n", " ").splitlines()
            exported = {}  # `export A=1 B=2` lines hold for the rest of their block, as in a shell
            for k, line in enumerate(lines):
                line = re.sub(r"\s+#.*$", "", line).strip()
                if line.startswith("export ") and "$" not in line:
                    exported.update(w.split("=", 1) for w in shlex.split(line)[1:])
                elif line and not line.startswith("#"):
                    out.append(pytest.param(line, dict(exported), id=f"{doc.relative_to(ROOT)}:{first + k}"))
    return out


def cmake_options():
    names = set()
    for f in [ROOT / "CMakeLists.txt", *ROOT.glob("*/CMakeLists.txt"), *ROOT.glob("*/*/CMakeLists.txt")]:
        names |= set(re.findall(r"\b(ESTUARY_\w+)\b", f.read_text()))
    return names


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("docs")
    for name in ("examples", "build"):
        (d / name).symlink_to(ROOT / name if name == "examples" else BUILD)
    bindir = d / ".bin"
    bindir.mkdir()
    shim = bindir / "estuary"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m estuary "$@"\n')
    shim.chmod(0o755)
    # Only what the commands set themselves: no MPI variables from the caller (the `estuary`
    # launcher sets them for its mpirun; a raw mpirun line must say them).
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PRTE_"))}
    env = dict(base, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", ESTUARY_BENCH_DIR=str(BUILD / "bench"),
               ESTUARY_TOY_ATM_OCN=str(BUILD / "examples" / "toy_atm_ocn"), MPLBACKEND="Agg")
    p = subprocess.run(["estuary", "demo", "--dir", "run"], cwd=d, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return d, env


def dry_run(cmd):
    """`estuary bench NAME [its options] [--] ARGS` or `[mpirun -n N] build/bench/NAME ARGS` as the program
    itself with --dry-run."""
    words = shlex.split(cmd)
    if words[:2] == ["estuary", "bench"]:
        name, rest = words[2], words[3:]
        if "--" in rest:
            rest = rest[rest.index("--") + 1:]
        else:  # drop the launcher's own options
            keep, i = [], 0
            while i < len(rest):
                if rest[i] in ("--ranks", "--out", "--binary", "--timeout"):
                    i += 2
                    continue
                if rest[i] != "--json":
                    keep.append(rest[i])
                i += 1
            rest = keep
        return [str(BUILD / "bench" / name), *rest, "--dry-run"]
    if words[0] == "mpirun":
        words = words[words.index(next(w for w in words if w.startswith("build/"))):]
    return [str(BUILD / words[0][len("build/"):]), *words[1:], "--dry-run"]


@pytest.mark.parametrize("cmd,exported", commands())
def test_command(cmd, exported, workdir):
    d, env = workdir
    env = dict(env, **exported)
    words = shlex.split(cmd)
    while words and re.match(r"^\w+=", words[0]):  # CC=mpicc make lib
        words = words[1:]
    prog = words[0]
    if prog == "make":
        targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
        p = subprocess.run(["make", "-n", "-C", str(ROOT), *targets], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, f"{cmd}: {p.stderr}"
        return
    if prog in ENVIRONMENT:
        unknown = [o for o in re.findall(r"-D(ESTUARY_\w+)=", cmd) if o not in cmake_options()]
        assert not unknown, f"{cmd}: no such CMake option {unknown}"
        if words[:3] == ["spack", "repo", "add"]:
            assert (ROOT / words[3]).is_dir(), cmd
        if words[:2] == ["spack", "install"]:
            recipe = (ROOT / "packaging/spack/packages/estuary/package.py").read_text()
            for v in re.findall(r"[+~](\w+)", " ".join(words[2:])):
                assert f'variant("{v}"' in recipe, f"{cmd}: no variant {v}"
        return
    if prog in ("estuary", "mpirun", "python3") or prog.startswith("build/"):
        bench = words[:2] == ["estuary", "bench"] or any(w.startswith("build/bench/") for w in words)
        if bench and any(re.search(s, cmd) for s in SLOW):
            p = subprocess.run(dry_run(cmd), cwd=d, env=env, capture_output=True, text=True, timeout=120)
        else:
            p = subprocess.run(["bash", "-c", cmd], cwd=d, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"{cmd}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        return
    pytest.fail(f"{cmd}: a command of an unknown kind; classify it in {Path(__file__).name} or mark its block as text")
