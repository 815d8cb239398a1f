"""The `estuary` command line.

    estuary demo [--ranks 4] [--dir DIR] [--binary PATH] [--dry-run] [--json]
    estuary weights --src lonlat:12x6 --dst gaussian:16x8 [--method distance|bilinear]
                    [--neighbors 4] [--land] --out w.nc [--ranks P] [--json]
    estuary inspect plan --src block --dst cyclic --n N --ranks P [--algorithm p2p] [--json]

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
    cmd = [_mpiexec(), "-n", str(ranks), sys.executable, "-m", "estuary.cli", *argv]
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
    if args.dry_run:
        if args.json:
            print(json.dumps({"command": cmd, "dir": str(folder)}))
        else:
            print(" ".join(cmd))
        return 0
    t0 = time.time()
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
             "cubed_sphere:N, t799, orca025")


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


def cmd_weights(args, argv) -> int:
    code = _needs_ranks(args, argv)
    if code is not None:
        return code
    from mpi4py import MPI

    import estuary

    comm = MPI.COMM_WORLD
    t0 = MPI.Wtime()
    try:
        src = grid_gen(args.src, args.land)
        dst = grid_gen(args.dst, args.land)
        dpart = estuary.gen.block(dst.size, comm.rank, comm.size)
        spart = estuary.gen.block(src.size, comm.rank, comm.size)
        dgrid = dst.make(dpart)
        if args.method == "distance":
            rows, cols, w = estuary.distance_weights(src, dgrid, comm, neighbors=args.neighbors)
            method = "Distance weighted avg of nearest neighbors"
        else:
            rows, cols, w = estuary.bilinear_weights(src, dgrid, comm)
            method = "Bilinear remapping"
        sgrid = src.make(spart)
        estuary.write_weights(args.out, rows, cols, w, src.size, dst.size, comm, map_method=method,
                              src_grid=sgrid, dst_grid=dgrid)
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

def cmd_inspect_plan(args, argv) -> int:
    code = _needs_ranks(args, argv)
    if code is not None:
        return code
    from mpi4py import MPI

    import estuary

    comm = MPI.COMM_WORLD
    if not _under_mpirun() and comm.size != args.ranks:
        return _fail(f"--ranks {args.ranks} but this MPI world has {comm.size} ranks")
    try:
        src = estuary.gen.by_name(args.src, args.n, comm.rank, comm.size)
        dst = estuary.gen.by_name(args.dst, args.n, comm.rank, comm.size)
        r = estuary.Redist(src, dst, comm, algorithm=args.algorithm)
    except estuary.Error as e:
        if comm.rank == 0:
            print(str(e), file=sys.stderr)
        return 1
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

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="estuary", description="estuary: MPI redistribution, remapping and coupling")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("demo", help="the coupled toy atmosphere-ocean run of `make demo`")
    d.add_argument("--ranks", type=int, default=4)
    d.add_argument("--dir", default="estuary_demo", help="run folder (logs, restarts)")
    d.add_argument("--binary", help="toy_atm_ocn (default: $ESTUARY_TOY_ATM_OCN, else build/examples/)")
    d.add_argument("--dry-run", action="store_true", help="print the command only")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_demo)

    w = sub.add_parser("weights", help="generate a SCRIP weight file", epilog=GRID_HELP)
    w.add_argument("--src", required=True, help="source grid recipe")
    w.add_argument("--dst", required=True, help="destination grid recipe")
    w.add_argument("--method", choices=["distance", "bilinear"], default="distance")
    w.add_argument("--neighbors", type=int, default=4)
    w.add_argument("--land", action="store_true", help="analytic land masks on both grids")
    w.add_argument("--out", required=True)
    w.add_argument("--ranks", type=int, default=1)
    w.add_argument("--json", action="store_true")
    w.set_defaults(func=cmd_weights)

    i = sub.add_parser("inspect", help="look at plans and schedules")
    isub = i.add_subparsers(dest="what", required=True)
    ip = isub.add_parser("plan", help="messages and bytes per rank for two generated decompositions")
    ip.add_argument("--src", required=True, help="block, cyclic, random, rows2d, transpose2d")
    ip.add_argument("--dst", required=True)
    ip.add_argument("--n", type=int, required=True, help="global elements")
    ip.add_argument("--ranks", type=int, default=1)
    ip.add_argument("--algorithm", default="p2p", help="schedule (p2p, ...)")
    ip.add_argument("--bytes-per-element", type=int, default=8)
    ip.add_argument("--json", action="store_true")
    ip.set_defaults(func=cmd_inspect_plan)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    return args.func(args, argv)


if __name__ == "__main__":
    sys.exit(main())
