"""The `estuary` command line.

    estuary demo [--ranks 4] [--dir DIR] [--binary PATH] [--dry-run] [--json]
    estuary weights --src lonlat:12x6 --dst gaussian:16x8 [--method distance|bilinear|bicubic|conservative|conservative2]
                    [--neighbors 4] [--land] --out w.nc [--ranks P] [--json]
                    (--src/--dst also FILE[:GRID]: a SCRIP grid file, or an OASIS grids.nc with masks.nc
                     and areas.nc next to it, GRID its grid prefix)
    estuary inspect plan --src block --dst cyclic --n N --ranks P [--algorithm p2p] [--json]
    estuary inspect schedule --src block --dst cyclic --n N --ranks P [--algorithm butterfly]
                             [--png F.png | --no-png] [--json]
    estuary inspect plan|schedule --config namcouple --component atmos:3:apple:lmdz --component ocean:2:box:torc
                             [--grid torc=lonlat:12x6] [--png F.png | --no-png] [--json]
    estuary bench NAME [--ranks 1,2,4] [--out F.jsonl] [--json] [--binary PATH] [BENCH ARGS...]
    estuary simulate transposition|halo|allreduce|coupling --ranks 16,64 [--topology T] [--routing R]
                     [--algorithm A] [--bandwidth GB/s] [--latency ns] [--json] [--plot F.png] [--matrix F.png]
    estuary timeline RUN_DIR [--out DIR] [--json] [--no-png] [--no-trace] [--all-calls]

Commands that need P ranks run their work under `mpirun -n P` (started here when this process
is not already an MPI rank), on MPI_COMM_WORLD of that run; rank 0 prints. This process does
not import mpi4py unless it is itself an MPI rank, so starting mpirun from it is safe.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

# OpenMPI as root and with more ranks than cores (as the Makefile and ctest set them).
_MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
}


def _under_mpirun() -> bool:
    return any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"))


def _mpiexec() -> str:
    return os.environ.get("ESTUARY_MPIEXEC") or shutil.which("mpirun") or shutil.which("mpiexec") or "mpirun"


def _mpi_env() -> dict:
    env = dict(os.environ)
    for k, v in _MPI_ENV.items():
        env.setdefault(k, v)
    # The child imports this package: keep the folder it was imported from on its path.
    here = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _relaunch(ranks: int, argv: list[str]) -> int:
    """Runs this command line again on `ranks` MPI ranks; returns its exit code."""
    from .progress import Progress

    cmd = [_mpiexec(), "-n", str(ranks), sys.executable, "-m", "estuary.cli", *argv]
    with Progress(desc=f"estuary {' '.join(argv[:2])} on {ranks} ranks"):  # shown after a few seconds
        return subprocess.run(cmd, env=_mpi_env()).returncode


def _needs_ranks(args, argv) -> int | None:
    """None: do the work in this process; else the exit code of the mpirun that did it."""
    if _under_mpirun():
        return None
    if args.ranks == 1:
        return None
    return _relaunch(args.ranks, argv)


def _fail(msg: str, code: int = 2) -> int:
    print(f"estuary: {msg}", file=sys.stderr)
    return code


# ---- demo ----

def _find_toy(explicit: str | None) -> Path | None:
    cands = []
    if explicit:
        cands.append(Path(explicit))
    if os.environ.get("ESTUARY_TOY_ATM_OCN"):
        cands.append(Path(os.environ["ESTUARY_TOY_ATM_OCN"]))
    repo = Path(__file__).resolve().parent.parent.parent  # python/estuary/cli.py -> the checkout
    build = os.environ.get("BUILD", "build")
    for root in (repo, Path.cwd()):
        cands.append(root / build / "examples" / "toy_atm_ocn")
        cands.append(root / "build" / "examples" / "toy_atm_ocn")
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    return None


def cmd_demo(args, argv) -> int:
    toy = _find_toy(args.binary)
    if toy is None:
        return _fail("toy_atm_ocn not found: build it (make build), or give --binary or $ESTUARY_TOY_ATM_OCN")
    folder = Path(args.dir).resolve()
    cmd = [_mpiexec(), "-n", str(args.ranks), str(toy), str(folder)]
    if args.atmos != "cpp" or args.ocean != "cpp":  # each side in its language (MPMD launch)
        if args.ranks < 2:
            return _fail("--ranks: 2 or more (half the ranks each model)")
        sides = []
        for role, lang in (("atmos", args.atmos), ("ocean", args.ocean)):
            if lang == "cpp":
                sides.append([str(toy)])
            elif lang == "fortran":
                ftoy = toy.parent / "toy_atm_ocn_f"
                if not (ftoy.is_file() and os.access(ftoy, os.X_OK)):
                    return _fail(f"{ftoy} not found: estuary was built without Fortran")
                sides.append([str(ftoy)])
            else:
                ptoy = Path(__file__).resolve().parent.parent.parent / "examples" / "toy_atm_ocn.py"
                if not ptoy.is_file():
                    return _fail(f"{ptoy} not found (the Python toy is in the checkout's examples/)")
                sides.append([sys.executable, str(ptoy)])
        na = max(1, args.ranks // 2)
        cmd = [_mpiexec(), "-n", str(na), *sides[0], "atmos", str(folder), ":",
               "-n", str(args.ranks - na), *sides[1], "ocean", str(folder)]
    if args.dry_run:
        if args.json:
            print(json.dumps({"command": cmd, "dir": str(folder)}))
        else:
            print(" ".join(cmd))
        return 0
    from .progress import Progress

    t0 = time.time()
    with Progress(desc=f"estuary demo on {args.ranks} ranks"):  # shown after a few seconds
        out = subprocess.run(cmd, env=_mpi_env(), stdout=subprocess.PIPE if args.json else None,
                             stderr=subprocess.STDOUT if args.json else None, text=True)
    secs = time.time() - t0
    if args.json:
        print(json.dumps({"command": cmd, "dir": str(folder), "returncode": out.returncode, "seconds": secs,
                          "output": out.stdout}))
    else:
        print(f"estuary demo: {'done' if out.returncode == 0 else 'FAILED'} in {secs:.1f} s; files in {folder}")
    return out.returncode


# ---- weights ----

GRID_HELP = ("grid recipes: lonlat:NLONxNLAT, gaussian:NLONxNLAT, reduced_gaussian:N, tripolar:NXxNY, "
             "cubed_sphere:N, t799, orca025; or grid files FILE[:GRID]: a SCRIP grid file, or an OASIS "
             "grids.nc (masks.nc and areas.nc next to it are read too; GRID: the grid prefix, needed when "
             "the file holds several grids)")


def grid_gen(spec: str, land: bool = False):
    """An estuary.GridGen from a recipe such as lonlat:12x6 (see GRID_HELP)."""
    import estuary

    kind, _, dims = spec.partition(":")
    try:
        nums = [int(x) for x in dims.lower().split("x")] if dims else []
        if kind in ("lonlat", "gaussian", "tripolar") and len(nums) == 2:
            g = getattr(estuary.GridGen, kind)(*nums)
        elif kind in ("reduced_gaussian", "cubed_sphere") and len(nums) == 1:
            g = getattr(estuary.GridGen, kind)(nums[0])
        elif kind in ("t799", "orca025") and not nums:
            g = getattr(estuary.GridGen, kind)()
        else:
            raise ValueError
    except ValueError:
        raise estuary.Error(f"estuary: grid \"{spec}\" is not a recipe ({GRID_HELP})") from None
    return g.with_land() if land else g


class FileGrid:
    """A grid file as `estuary weights` uses a recipe: its size, and any rank's share (make)."""

    def __init__(self, spec: str, path: str, grid: str, comm, corners: bool):
        import estuary

        self.spec, self.path, self.comm, self.corners = spec, path, comm, corners
        self.info = estuary.grid_file_info(path, grid)
        self.size = self.info["size"]
        if corners and not self.info["ncorner"]:
            raise estuary.Error(f"estuary: the grid file {spec} has no cell corners, which the conservative "
                                "methods need")

    def make(self, part):
        import estuary

        return estuary.read_grid_file(self.path, self.info["name"], part, self.comm, corners=self.corners)


def grid_source(spec: str, land: bool, comm, corners: bool):
    """A GridGen for a recipe, a FileGrid for FILE or FILE:GRID (a file that exists)."""
    import estuary

    path, grid = spec, ""
    if not os.path.isfile(path) and ":" in spec:
        head, _, tail = spec.rpartition(":")
        if os.path.isfile(head):
            path, grid = head, tail
    if not os.path.isfile(path):
        return grid_gen(spec, land)
    if land:
        raise estuary.Error(f"estuary: --land applies to grid recipes, not to the grid file {spec}")
    return FileGrid(spec, path, grid, comm, corners)


def stack_needs_corners(text: str) -> bool:
    """Whether a stack's stages need cell corners (conservative, creep on an unstructured grid)."""
    names = [part.split()[0].lower() for part in text.split("|") if part.split()]
    return any(n in ("conservative", "conserv", "creep") for n in names)


def cmd_weights(args, argv) -> int:
    code = _needs_ranks(args, argv)
    if code is not None:
        return code
    from mpi4py import MPI

    import estuary

    comm = MPI.COMM_WORLD
    t0 = MPI.Wtime()
    try:
        corners = args.method.startswith("conservative") or (args.method == "stack" and stack_needs_corners(args.stack))
        if args.method == "stack" and not args.stack:
            raise estuary.Error("--method stack needs --stack \"stage | stage ...\"", "estuary weights")
        src = grid_source(args.src, args.land, comm, corners)
        dst = grid_source(args.dst, args.land, comm, corners)
        dpart = estuary.gen.block(dst.size, comm.rank, comm.size)
        spart = estuary.gen.block(src.size, comm.rank, comm.size)
        dgrid = dst.make(dpart)
        sgrid = src.make(spart)
        # A recipe builds any source point where it is needed; a file's grid is read in shares.
        sarg = sgrid if isinstance(src, FileGrid) else src
        norm, frac, attrs = "none", None, {}
        if args.method == "distance":
            rows, cols, w = estuary.distance_weights(sarg, dgrid, comm, neighbors=args.neighbors)
            method = "Distance weighted avg of nearest neighbors"
        elif args.method == "bilinear":
            rows, cols, w = estuary.bilinear_weights(sarg, dgrid, comm)
            method = "Bilinear remapping"
        elif args.method == "bicubic":  # CDO's genbic: 4 weights a link (value, 3 gradients)
            (rows, cols, w), columns, _ = estuary.bicubic_weights(sgrid, dgrid, comm)
            method = "Bicubic remapping"
        elif args.method == "stack":  # estuary's interpolation stack: one matrix, the fixed value as an attribute
            (rows, cols, w), fixed, _, text = estuary.stack_weights(sgrid, dgrid, comm, args.stack)
            method = ""  # no CDO method applies a stack's matrix as it is
            if fixed is not None:
                attrs = {"estuary_fixed_value": repr(float(fixed))}
        else:  # conservative: first or second order, CDO's normalisation names
            order = 2 if args.method == "conservative2" else 1
            rows, cols, w, frac, _ = estuary.conservative_weights(sgrid, dgrid, comm, order=order,
                                                                  normalization=args.normalization)
            method = "Conservative remapping"
            norm = args.normalization
        extra = {"columns": columns.ravel(), "num_wgts": 4} if args.method == "bicubic" else {}
        if attrs:
            extra["attributes"] = attrs
        estuary.write_weights(args.out, rows, cols, w, src.size, dst.size, comm, map_method=method,
                              src_grid=sgrid, dst_grid=dgrid, normalization=norm, dst_frac=frac, **extra)
    except estuary.Error as e:
        if comm.rank == 0:
            print(str(e), file=sys.stderr)
        return 1
    links = comm.allreduce(len(rows))
    secs = MPI.Wtime() - t0
    if comm.rank == 0:
        rec = {"file": str(Path(args.out).resolve()), "method": args.method, "src": args.src, "dst": args.dst,
               "src_size": src.size, "dst_size": dst.size, "links": links, "ranks": comm.size, "seconds": secs}
        if args.json:
            print(json.dumps(rec))
        else:
            print(f"{rec['file']}: {links} links, {args.src} ({src.size} points) -> {args.dst} "
                  f"({dst.size} points), {args.method}, {comm.size} ranks, {secs:.2f} s")
    return 0


# ---- inspect plan ----

def _inspect_redist(args, argv):
    """The Redist that `inspect plan|schedule` look at, with the two decompositions:
    (comm, redist, src, dst), or (exit code, None, None, None) when this process only relaunched
    itself under mpirun or the set-up failed."""
    code = _needs_ranks(args, argv)
    if code is not None:
        return code, None, None, None
    from mpi4py import MPI

    import estuary

    comm = MPI.COMM_WORLD
    if not _under_mpirun() and comm.size != args.ranks:
        return _fail(f"--ranks {args.ranks} but this MPI world has {comm.size} ranks"), None, None, None
    try:
        src = estuary.gen.by_name(args.src, args.n, comm.rank, comm.size)
        dst = estuary.gen.by_name(args.dst, args.n, comm.rank, comm.size)
        return comm, estuary.Redist(src, dst, comm, algorithm=args.algorithm), src, dst
    except estuary.Error as e:
        if comm.rank == 0:
            print(str(e), file=sys.stderr)
        return 1, None, None, None


def cmd_inspect_plan(args, argv) -> int:
    if args.config:  # a run set-up: the couplings' schedules (p2p, so the plans themselves)
        from .inspect_config import cmd_inspect_config

        return cmd_inspect_config(args, argv)
    missing = [o for o in ("src", "dst", "n") if getattr(args, o) is None]
    if missing:
        return _fail("inspect plan needs " + ", ".join("--" + o for o in missing) +
                     " (generated decompositions) or --config with --component (a run set-up)")
    comm, r, src, dst = _inspect_redist(args, argv)
    if r is None:
        return comm
    esize = args.bytes_per_element
    sends = dict(r.sends())
    recvs = dict(r.recvs())
    st = r.schedule_stats()
    me = comm.rank
    row = {
        "rank": me,
        "src_elements": src.size,
        "dst_elements": dst.size,
        "messages_sent": sum(1 for p in sends if p != me),
        "bytes_sent": esize * sum(c for p, c in sends.items() if p != me),
        "messages_received": sum(1 for p in recvs if p != me),
        "bytes_received": esize * sum(c for p, c in recvs.items() if p != me),
        "bytes_self": esize * sends.get(me, 0),
        "stages": st["stages"],
        "schedule_messages_sent": st["messages_sent"],
        "schedule_bytes_sent": esize * st["elements_sent"],
    }
    matrix_row = [esize * sends.get(p, 0) for p in range(comm.size)]
    rows = comm.gather(row, root=0)
    matrix = comm.gather(matrix_row, root=0)
    if comm.rank != 0:
        return 0
    rec = {"n": args.n, "ranks": comm.size, "src": args.src, "dst": args.dst, "algorithm": r.algorithm,
           "bytes_per_element": esize, "per_rank": rows, "matrix_bytes": matrix,
           "total": {"messages": sum(x["messages_sent"] for x in rows),
                     "bytes": sum(x["bytes_sent"] for x in rows)}}
    if args.json:
        print(json.dumps(rec))
        return 0
    print(f"plan {args.src} -> {args.dst}, n = {args.n}, {comm.size} ranks, schedule {r.algorithm} "
          f"({esize} bytes an element)")
    cols = ["rank", "src_elements", "dst_elements", "messages_sent", "bytes_sent", "messages_received",
            "bytes_received", "bytes_self", "stages"]
    print(" ".join(f"{c:>17}" for c in cols))
    for x in rows:
        print(" ".join(f"{x[c]:>17}" for c in cols))
    print(f"total: {rec['total']['messages']} messages, {rec['total']['bytes']} bytes (copies to self excluded)")
    print("bytes sent (row: sender, column: receiver):")
    for s, line in enumerate(matrix):
        print(f"{s:>5} | " + " ".join(f"{b:>9}" for b in line))
    return 0


# ---- the parser ----

class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default (unless it says it already, or there is none to
    say: a flag, or None); descriptions and epilogs keep their line breaks, so examples read as
    examples."""

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if ("default" in text or d is None or d is False or d is argparse.SUPPRESS
                or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
            return text
        shown = ",".join(map(str, d)) if isinstance(d, (list, tuple)) else str(d)
        if "(" + shown + ")" in text or "(" + shown + ":" in text:  # said in the text's own words
            return text
        return (text + " " if text else "") + "(default: " + shown.replace("%", "%%") + ")"


def _all_parsers(p: argparse.ArgumentParser):
    """p and every sub-command's parser, depth first."""
    yield p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                yield from _all_parsers(sp)


def parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="estuary", description="estuary: MPI redistribution, remapping and coupling")
    p.add_argument("--version", action="version", version="estuary " + __version__)
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("demo", help="the coupled toy atmosphere-ocean run of `make demo`")
    d.add_argument("--ranks", type=int, default=4, help="MPI ranks of the coupled run")
    d.add_argument("--dir", default="estuary_demo", help="run folder (logs, restarts)")
    d.add_argument("--binary", help="toy_atm_ocn (default: $ESTUARY_TOY_ATM_OCN, else build/examples/)")
    d.add_argument("--atmos", choices=["cpp", "fortran", "python"], default="cpp",
                   help="the atmosphere's language (examples/toy_atm_ocn.cpp, .F90, .py)")
    d.add_argument("--ocean", choices=["cpp", "fortran", "python"], default="cpp", help="the ocean's language")
    d.add_argument("--dry-run", action="store_true", help="print the command only")
    d.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    d.set_defaults(func=cmd_demo)

    w = sub.add_parser("weights", help="generate a SCRIP weight file", epilog=GRID_HELP)
    w.add_argument("--src", required=True, help="source grid: a recipe, or FILE[:GRID] (SCRIP or OASIS grids.nc)")
    w.add_argument("--dst", required=True, help="destination grid: a recipe, or FILE[:GRID]")
    w.add_argument("--method", choices=["distance", "bilinear", "bicubic", "conservative", "conservative2", "stack"],
                   default="distance",
                   help="distance: cdo gendis; bilinear: cdo genbil; bicubic: cdo genbic (4 weights a link: "
                        "value and 3 source gradients); conservative: first order (cdo gencon); conservative2: "
                        "second order; stack: the stages of --stack (default: %(default)s)")
    w.add_argument("--stack", default="",
                   help="with --method stack: stages separated by '|', as the namcouple STACK line, e.g. "
                        "\"bilinear | nnn n=4 weighting=distance | creep steps=2 | fixed value=-999\" "
                        "(see docs/remap.md); the fixed value is written as the attribute estuary_fixed_value")
    w.add_argument("--normalization", choices=["fracarea", "destarea", "none"], default="fracarea",
                   help="conservative only (CDO's names)")
    w.add_argument("--neighbors", type=int, default=4, help="distance only: the n nearest source points")
    w.add_argument("--land", action="store_true", help="analytic land masks on both grids")
    w.add_argument("--out", required=True, help="the weight file to write (SCRIP layout, netCDF)")
    w.add_argument("--ranks", type=int, default=1, help="MPI ranks that generate the weights")
    w.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    w.set_defaults(func=cmd_weights)

    i = sub.add_parser("inspect", help="look at plans and schedules")
    isub = i.add_subparsers(dest="what", required=True)
    ip = isub.add_parser("plan", help="messages and bytes per rank for two generated decompositions")
    ip.add_argument("--src", help="block, cyclic, random, rows2d, transpose2d")
    ip.add_argument("--dst", help="destination decomposition (same kinds as --src)")
    ip.add_argument("--n", type=int, help="global elements")
    ip.add_argument("--ranks", type=int, default=1, help="ranks of the decompositions")
    ip.add_argument("--algorithm", default="p2p", help="schedule (p2p, ...)")
    ip.add_argument("--bytes-per-element", type=int, default=8, help="bytes counted per element moved")
    ip.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    # --config: a coupled run's set-up instead of generated decompositions (inspect_config.py)
    from .inspect_config import add_config_arguments

    add_config_arguments(ip, png=True)
    ip.set_defaults(func=cmd_inspect_plan)

    # estuary inspect schedule (python/estuary/inspect_schedule.py), estuary bench (bench.py)
    from .inspect_schedule import add_parser as _add_schedule
    from .bench import add_parser as _add_bench

    _add_schedule(isub)
    _add_bench(sub)

    # estuary simulate transposition|halo|allreduce|coupling (python/estuary/simulate.py)
    from .simulate import add_parser as _add_simulate

    _add_simulate(sub)

    # --- estuary timeline RUN_DIR (python/estuary/timeline.py): LUCIA's load-balance analysis ---
    from .timeline import add_parser as _add_timeline

    _add_timeline(sub)
    for q in _all_parsers(p):
        q.formatter_class = HelpFormatter
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    return args.func(args, argv)


if __name__ == "__main__":
    sys.exit(main())
