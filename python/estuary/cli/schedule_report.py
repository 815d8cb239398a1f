"""The schedule report that `estuary inspect schedule` prints for generated decompositions and for a
run set-up (--config): per-rank rows, per-stage totals, the communication matrix as a PNG."""
from __future__ import annotations

from pathlib import Path


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
