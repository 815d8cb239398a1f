"""`estuary inspect schedule`: the schedule of a redistribution between two generated
decompositions, as the executor runs it: stages, messages and bytes per rank and per stage, the
communication matrix (bytes each sender sends each receiver over all stages, forwarding
included: a butterfly's matrix is not its plan's), and a PNG of that matrix (sender x receiver,
bytes as colour, as Fig. 9d of Zheng & Marguinaud 2018).

    estuary inspect schedule --src block --dst transpose2d --n 100000 --ranks 8 --algorithm butterfly
                             [--png matrix.png | --no-png] [--bytes-per-element 8] [--fields 1] [--json]

With --config, the schedules a coupled run really executes (see inspect_config.py):

    estuary inspect schedule --config namcouple --component atmos:3:apple --component ocean:2:box
                             [--grid torc=tripolar:30x20] [--png matrix.png | --no-png] [--json]
"""
from __future__ import annotations

import json

from .helpers import fail
from .inspect_config import add_config_arguments, cmd_inspect_config
from .inspect_plan import add_decomposition_arguments, inspect_redist
from .schedule_report import print_schedule_summary, schedule_rank_row, schedule_totals, write_matrix_png


def add_parser(isub):
    s = isub.add_parser("schedule", help="stages, messages and bytes per rank and stage; PNG of the matrix",
                        description=__doc__)
    add_decomposition_arguments(s, "schedule: p2p, butterfly, burst, bruck, ring-k, ...")
    s.add_argument("--fields", type=int, default=1, help="fields moved together (bytes scale with it)")
    s.add_argument("--png", help="the matrix figure (default estuary_schedule_SRC_DST_ALGORITHM_pRANKS.png)")
    s.add_argument("--no-png", action="store_true", help="do not draw the communication matrix")
    s.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    add_config_arguments(s)
    s.set_defaults(func=cmd_inspect_schedule)
    return s


def cmd_inspect_schedule(args, argv) -> int:
    if getattr(args, "config", None):
        return cmd_inspect_config(args, argv)
    missing = [o for o in ("src", "dst", "n") if getattr(args, o) is None]
    if missing:
        return fail("inspect schedule needs " + ", ".join("--" + o for o in missing) +
                     " (generated decompositions) or --config with --component (a run set-up)")
    if args.fields < 1 or args.bytes_per_element < 1:
        return fail("--fields and --bytes-per-element must be positive")
    comm, r, _, _ = inspect_redist(args, argv)
    if r is None:
        return comm
    esize = args.bytes_per_element * args.fields
    me, p = comm.rank, comm.size
    # (stage, peer, elements) sent by this rank
    row, matrix_row, stage_rows = schedule_rank_row(me, p, esize, [r.schedule_stats()], r.schedule_messages())
    rows = comm.gather(row, root=0)
    matrix = comm.gather(matrix_row, root=0)
    stages = comm.gather(stage_rows, root=0)
    if me != 0:
        return 0
    per_stage, total = schedule_totals(rows, stages)
    nstages = total["stages"]
    rec = {"n": args.n, "ranks": p, "src": args.src, "dst": args.dst, "algorithm": r.algorithm,
           "bytes_per_element": args.bytes_per_element, "fields": args.fields, "per_rank": rows,
           "per_stage": per_stage, "matrix_bytes": matrix, "total": total, "png": None}
    if not args.no_png:
        path = args.png or f"estuary_schedule_{args.src}_{args.dst}_{r.algorithm}_p{p}.png"
        rec["png"] = write_matrix_png(path, matrix, f"{args.src} -> {args.dst}, n = {args.n}, {p} ranks\n"
                                      f"{r.algorithm}: {nstages} stages, {rec['total']['bytes']} bytes")
    if args.json:
        print(json.dumps(rec))
        return 0
    print(f"schedule {r.algorithm}: {args.src} -> {args.dst}, n = {args.n}, {p} ranks, {args.fields} field(s) of "
          f"{args.bytes_per_element} bytes an element")
    print_schedule_summary(rows, per_stage, total, rec["png"])
    return 0
