"""What every command of the command line shares: the MPI launch (mpirun, its environment, running
a command again on P ranks), error messages, the one program finder and the one progress bar.

Every other module of estuary.cli imports this one and nothing else of the package's command
line (tests/test_cli_imports.py imports each module alone to keep it so).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

# OpenMPI as root and with more ranks than cores (as the Makefile and ctest set them).
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
}

PACKAGE = Path(__file__).resolve().parent.parent  # the estuary package (installed or python/estuary)


def under_mpirun() -> bool:
    """Whether this process is a rank of an MPI job (then it does the work itself)."""
    return any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"))


def mpiexec() -> str:
    return os.environ.get("ESTUARY_MPIEXEC") or shutil.which("mpirun") or shutil.which("mpiexec") or "mpirun"


def mpi_env() -> dict:
    """The environment of a launched run: the MPI variables above (unless set), and this package
    first on PYTHONPATH (a Python rank imports the package this process runs)."""
    env = dict(os.environ)
    for k, v in MPI_ENV.items():
        env.setdefault(k, v)
    here = str(PACKAGE.parent)
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def fail(msg: str, code: int = 2, command: str = "estuary") -> int:
    """Prints `command: msg` on stderr; returns the exit code."""
    print(f"{command}: {msg}", file=sys.stderr)
    return code


def relaunch(ranks: int, argv: list[str]) -> int:
    """Runs this command line again on `ranks` MPI ranks; returns its exit code."""
    cmd = [mpiexec(), "-n", str(ranks), sys.executable, "-m", "estuary.cli", *argv]
    with Progress(desc=f"estuary {' '.join(argv[:2])} on {ranks} ranks"):  # shown after a few seconds
        return subprocess.run(cmd, env=mpi_env()).returncode


def needs_ranks(args, argv) -> int | None:
    """None: do the work in this process; else the exit code of the mpirun that did it."""
    if under_mpirun() or args.ranks == 1:
        return None
    return relaunch(args.ranks, argv)


# ---- the program finder ----

def checkout() -> Path | None:
    """The source checkout this package runs from (python/estuary of a clone), or None when it is
    installed (a wheel, pip install): then only the package's own programs and PATH are looked in."""
    root = PACKAGE.parent.parent
    cm = root / "CMakeLists.txt"
    if (root / "python" / "estuary").resolve() == PACKAGE and cm.is_file() and "project(estuary" in cm.read_text():
        return root
    return None


def find_program(name: str, folder: str, explicit: str | None = None, env: str | None = None,
                 executable: bool = True) -> Path | None:
    """The program (or, executable=False, the file) `name` that a command runs, found as:

    1. `explicit` (--binary and the like): that one, or None when it is not there;
    2. the environment variable `env` (a file, or a folder holding `name`);
    3. the package's own copy: estuary/_bin/NAME (the wheel ships the toys, benchmarks and the
       simulator there: scripts/wheel);
    4. a build folder: $ESTUARY_BUILD_DIR, $BUILD, build and build*/ (newest first), each under
       the checkout this package runs from and under the working directory, at FOLDER/NAME
       (FOLDER: examples or bench, as in the CMake build tree); examples/ of the checkout too;
    5. PATH, as `NAME` or `estuary-NAME` (an installed estuary).
    """
    def ok(p: Path) -> bool:
        return p.is_file() and (not executable or os.access(p, os.X_OK))

    if explicit:
        p = Path(explicit)
        return p if ok(p) else None
    cands: list[Path] = []
    if env and os.environ.get(env):
        p = Path(os.environ[env])
        cands.append(p / name if p.is_dir() else p)
    cands.append(PACKAGE / "_bin" / name)
    roots = [r for r in (checkout(), Path.cwd()) if r is not None]
    for root in roots:
        builds = [os.environ.get("ESTUARY_BUILD_DIR"), os.environ.get("BUILD"), "build"]
        for b in builds:
            if b:
                cands.append(Path(root, b, folder, name))
        cands += sorted(root.glob(f"build*/{folder}/{name}"), key=lambda p: -p.stat().st_mtime)
        cands.append(root / folder / name)  # the Python toy: examples/toy_atm_ocn.py of the checkout
    for c in cands:
        if ok(c):
            return c
    if executable:
        for n in (name, "estuary-" + name):
            w = shutil.which(n)
            if w:
                return Path(w)
    return None


# ---- the progress bar ----

def progress_enabled(stream=None) -> bool:
    """ESTUARY_PROGRESS=1 or 0 decides; else on only when the stream (stderr) is a terminal, so
    piped and captured output stays clean."""
    flag = os.environ.get("ESTUARY_PROGRESS")
    if flag is not None:
        return flag.lower() not in ("0", "", "no", "false", "off")
    stream = stream or sys.stderr
    return hasattr(stream, "isatty") and stream.isatty()


class Progress:
    """The command line's one progress bar: tqdm's, on stderr, shown only when progress_enabled()
    and once the work has run ESTUARY_PROGRESS_DELAY seconds (default 2), so quick commands print
    nothing extra. Without tqdm installed (it is a dependency of the package) nothing is shown.

        with Progress(total=4, desc="bench redist") as bar:
            for run in runs:
                ...
                bar.update(1, note="ranks 4")

        with Progress(desc="demo"):            # unknown length: the elapsed time, redrawn
            subprocess.run(...)
    """

    def __init__(self, total: int | None = None, desc: str = "", enabled: bool = True, stream=None,
                 interval: float = 0.5):
        self.stream = stream or sys.stderr
        self._bar = None
        self._stop = threading.Event()
        self._ticker = None
        self.interval = interval
        if not (enabled and progress_enabled(self.stream)):
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        import time

        self._time = time.monotonic
        self._delay = float(os.environ.get("ESTUARY_PROGRESS_DELAY", "2"))
        self._t0 = self._time()
        delay = self._delay
        self._bar = tqdm(total=total, desc=desc, file=self.stream, delay=delay, leave=True, dynamic_ncols=True,
                         mininterval=0.2)

    @property
    def on(self) -> bool:
        return self._bar is not None

    def __enter__(self):
        if self._bar is not None:  # a ticker redraws the elapsed time while the caller waits on a child
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _tick(self):
        while not self._stop.wait(self.interval):
            bar = self._bar
            if bar is not None and self._due():
                bar.refresh()

    def _due(self) -> bool:  # tqdm's refresh() draws even within its delay: the delay is kept here
        return self._time() - self._t0 >= self._delay

    def update(self, n: int = 1, note: str | None = None):
        if self._bar is None:
            return
        if note is not None:
            self._bar.set_postfix_str(note, refresh=False)
        self._bar.update(n)
        if n == 0 and self._due():
            self._bar.refresh()

    def close(self):
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=1)
            self._ticker = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None
