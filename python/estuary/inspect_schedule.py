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

from pathlib import Path


def add_parser(isub):
    s = isub.add_parser("schedule", help="stages, messages and bytes per rank and stage; PNG of the matrix",
                        description=__doc__)
    s.add_argument("--src", help="block, cyclic, random, rows2d, transpose2d")
    s.add_argument("--dst", help="destination decomposition (same kinds as --src)")
    s.add_argument("--n", type=int, help="global elements")
    s.add_argument("--ranks", type=int, default=1, help="ranks of the decompositions")
    s.add_argument("--algorithm", default="p2p", help="schedule: p2p, butterfly, burst, bruck, ring-k, ...")
    s.add_argument("--bytes-per-element", type=int, default=8, help="bytes counted per element moved")
    s.add_argument("--fields", type=int, default=1, help="fields moved together (bytes scale with it)")
    s.add_argument("--png", help="the matrix figure (default estuary_schedule_SRC_DST_ALGORITHM_pRANKS.png)")
    s.add_argument("--no-png", action="store_true", help="do not draw the communication matrix")
    s.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    from .inspect_config import add_config_arguments

    add_config_arguments(s)
    s.set_defaults(func=cmd_inspect_schedule)
    return s


def write_matrix_png(path, matrix, title: str) -> str:
    """Sender x receiver bytes as a colour image (zero: white), with a colour bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import LogNorm

    m = np.asarray(matrix, dtype=float)
    p = m.shape[0]
    fig, ax = plt.subplots(figsize=(5.2, 4.4), dpi=110)
    shown = np.ma.masked_where(m <= 0, m)
    cmap = matplotlib.colormaps["viridis"].copy()
    cmap.set_bad("white")
    positive = m[m > 0]
    norm = LogNorm(vmin=positive.min(), vmax=positive.max()) if positive.size and positive.max() > positive.min() \
        else None
    im = ax.imshow(shown, cmap=cmap, norm=norm, origin="upper", interpolation="nearest",
                   extent=(-0.5, p - 0.5, p - 0.5, -0.5))
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("receiver rank")
    ax.set_ylabel("sender rank")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="bytes")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return str(Path(path).resolve())


# The per-rank summary, the stage table and the printout below are shared with the run set-up
# mode (`--config`, inspect_config.py), which sums the schedules a coupling's Remap runs in turn.

def schedule_rank_row(me: int, p: int, esize: int, stats: list, msgs) -> tuple:
    """This rank's line of the summary, its row of the sender x receiver byte matrix and its
    per-stage counts {stage: [messages, bytes]}. `stats`: schedule_stats() dicts of the
    schedules it runs (their counts add up); `msgs`: (stage, peer, elements) of every message
    it sends; `esize`: bytes of one element of all fields moved together."""
    row = {"rank": me, "stages": sum(s["stages"] for s in stats),
           "messages_sent": sum(s["messages_sent"] for s in stats),
           "bytes_sent": esize * sum(s["elements_sent"] for s in stats),
           "messages_received": sum(s["messages_received"] for s in stats),
           "bytes_received": esize * sum(s["elements_received"] for s in stats),
           "bytes_copied": esize * sum(s["elements_copied"] for s in stats),
           "largest_message_bytes": esize * max([s["largest_message"] for s in stats], default=0)}
    matrix_row = [0] * p
    stage_rows = {}
    for stage, peer, count in msgs:
        matrix_row[peer] += esize * count
        st = stage_rows.setdefault(stage, [0, 0])
        st[0] += 1
        st[1] += esize * count
    return row, matrix_row, stage_rows


def schedule_totals(rows: list, stages: list, nstages: int | None = None) -> tuple:
    """(per_stage, total) from every rank's row and per-stage counts, as gathered on the root."""
    if nstages is None:
        nstages = max(x["stages"] for x in rows)
    per_stage = []
    for k in range(nstages):
        per_stage.append({"stage": k, "messages": sum(s.get(k, [0, 0])[0] for s in stages),
                          "bytes": sum(s.get(k, [0, 0])[1] for s in stages),
                          "ranks_sending": sum(1 for s in stages if s.get(k, [0, 0])[0] > 0)})
    total = {"stages": nstages, "messages": sum(x["messages_sent"] for x in rows),
             "bytes": sum(x["bytes_sent"] for x in rows),
             "max_messages_per_rank": max(x["messages_sent"] for x in rows),
             "max_bytes_per_rank": max(x["bytes_sent"] for x in rows)}
    return per_stage, total


def print_schedule_summary(rows: list, per_stage: list, total: dict, png, first_cols=("rank",)) -> None:
    """The table per rank, the lines per stage, the totals and where the PNG went."""
    cols = [*first_cols, "stages", "messages_sent", "bytes_sent", "messages_received", "bytes_received",
            "bytes_copied"]
    print(" ".join(f"{c:>17}" for c in cols))
    for x in rows:
        print(" ".join(f"{x[c]:>17}" for c in cols))
    print("per stage:")
    for s in per_stage:
        what = f" ({s['exchange']})" if "exchange" in s else ""
        print(f"  stage {s['stage']}{what}: {s['messages']} messages, {s['bytes']} bytes, "
              f"{s['ranks_sending']} ranks sending")
    t = total
    print(f"total: {t['stages']} stages, {t['messages']} messages, {t['bytes']} bytes "
          f"(at most {t['max_messages_per_rank']} messages and {t['max_bytes_per_rank']} bytes a rank)")
    if png:
        print(f"communication matrix: {png}")


def cmd_inspect_schedule(args, argv) -> int:
    from .cli import _fail, _inspect_redist

    if getattr(args, "config", None):
        from .inspect_config import cmd_inspect_config

        return cmd_inspect_config(args, argv)
    missing = [o for o in ("src", "dst", "n") if getattr(args, o) is None]
    if missing:
        return _fail("inspect schedule needs " + ", ".join("--" + o for o in missing) +
                     " (generated decompositions) or --config with --component (a run set-up)")
    if args.fields < 1 or args.bytes_per_element < 1:
        return _fail("--fields and --bytes-per-element must be positive")
    comm, r, _, _ = _inspect_redist(args, argv)
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
        import json

        print(json.dumps(rec))
        return 0
    print(f"schedule {r.algorithm}: {args.src} -> {args.dst}, n = {args.n}, {p} ranks, {args.fields} field(s) of "
          f"{args.bytes_per_element} bytes an element")
    print_schedule_summary(rows, per_stage, total, rec["png"])
    return 0
