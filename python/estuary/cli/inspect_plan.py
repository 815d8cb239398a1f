"""`estuary inspect plan`: messages and bytes per rank of a Redist between two generated decompositions."""
from __future__ import annotations

import json
import sys

from .helpers import fail, needs_ranks, under_mpirun
from .inspect_config import add_config_arguments, cmd_inspect_config


def inspect_redist(args, argv):
    """The Redist that `inspect plan|schedule` look at, with the two decompositions:
    (comm, redist, src, dst), or (exit code, None, None, None) when this process only relaunched
    itself under mpirun or the set-up failed."""
    code = needs_ranks(args, argv)
    if code is not None:
        return code, None, None, None
    from mpi4py import MPI

    import estuary

    comm = MPI.COMM_WORLD
    if not under_mpirun() and comm.size != args.ranks:
        return fail(f"--ranks {args.ranks} but this MPI world has {comm.size} ranks"), None, None, None
    try:
        src = estuary.gen.from_name(args.src, args.n, comm.rank, comm.size)
        dst = estuary.gen.from_name(args.dst, args.n, comm.rank, comm.size)
        return comm, estuary.Redist(src, dst, comm, algorithm=args.algorithm), src, dst
    except estuary.Error as e:
        if comm.rank == 0:
            print(str(e), file=sys.stderr)
        return 1, None, None, None


def cmd_inspect_plan(args, argv) -> int:
    if args.config:  # a run set-up: the couplings' schedules (p2p, so the plans themselves)
        return cmd_inspect_config(args, argv)
    missing = [o for o in ("src", "dst", "n") if getattr(args, o) is None]
    if missing:
        return fail("inspect plan needs " + ", ".join("--" + o for o in missing) +
                     " (generated decompositions) or --config with --component (a run set-up)")
    comm, r, src, dst = inspect_redist(args, argv)
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



def add_decomposition_arguments(p, algorithm_help: str) -> None:
    """The options of `inspect plan` and `inspect schedule` for two generated decompositions."""
    p.add_argument("--src", help="block, cyclic, random, rows2d, transpose2d, colblocks")
    p.add_argument("--dst", help="destination decomposition (same kinds as --src)")
    p.add_argument("--n", type=int, help="global elements")
    p.add_argument("--ranks", type=int, default=1, help="ranks of the decompositions")
    p.add_argument("--algorithm", default="p2p", help=algorithm_help)
    p.add_argument("--bytes-per-element", type=int, default=8, help="bytes counted per element moved")


def add_parser(isub):
    ip = isub.add_parser("plan", help="messages and bytes per rank for two generated decompositions")
    add_decomposition_arguments(ip, "schedule (p2p, ...)")
    ip.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    # --config: a coupled run's set-up instead of generated decompositions (inspect_config.py)
    add_config_arguments(ip, png=True)
    ip.set_defaults(func=cmd_inspect_plan)
    return ip
