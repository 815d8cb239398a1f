"""`estuary timeline RUN_DIR`: the load balance of a coupled run, as OASIS's LUCIA analyses it,
from the timeline files the coupler writes at terminate (timeline_<component>.jsonl, recorded
with `timeline: true` in the YAML, a negative second number under $NLOGPRT in a namcouple, or
ESTUARY_TIMELINE=1; docs/user-guide.md "Timeline (LUCIA)").

    estuary timeline RUN_DIR [--out DIR] [--json] [--no-png] [--no-trace] [--trace FILE]
                             [--all-calls] [--with-setup] [--max-ranks 64]

Prints, per component: its run time, the computing time and the time in coupling calls (LUCIA's
"calculations" and "waiting time", the slowest rank counting at every coupling event), the
coupling cost (coupling / run, LUCIA's "partial coupling cost"), what the coupling time went to
(blocked on the partner, remap products, data transfer, files, the rest of the coupler: means
over the component's ranks), whom the component waits for, and per coupling field the calls,
their time and waits; then the coupled system's speed (simulated years per day) and cost (core
hours per simulated year). Writes into --out (default RUN_DIR): timeline_<component>.png (the
component's ranks against wall time: the coupling calls, their waits drawn in red, computing in
between), timeline_balance.png (computing against coupling per component, as LUCIA's
oasis_balance figure) and timeline_trace.json (Chrome's trace-event format: open it in
https://ui.perfetto.dev or chrome://tracing; one process per component, one thread per rank,
arrows from each put to the get that received it).

Definitions (all times are wall-clock seconds from the common start, a barrier over every
component at the end of enddef):
  run            largest time a rank of the component entered terminate
  coupling       sum over the component's coupling events (a put or get of one field at one model
                 time, on every rank that holds the field) of  max(leave) - max(enter)  over
                 those ranks: LUCIA's "waiting time"
  computing      run - coupling: LUCIA's "calculations"
  jitter         sum over the events of  max(enter) - min(enter): how unevenly the ranks arrive
  blocked, remap, transfer, files, other
                 per rank the sums over its put/get calls of the time waiting for the partner,
                 in the remap's products, moving data, in OUTPUT/EXPOUT/INPUT files, and the rest
                 (LOCTRANS, CONSERV, checks); the mean over the component's ranks
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

FORMAT = "estuary-timeline"
KINDS_CALL = ("put", "get")
# Info codes of calls that did something (moved, received, wrote or read): estuary::Info.
ACTED = {3, 4, 6, 7, 8, 9, 10, 11, 12, 13}
MOVED_PUT = {4, 8}     # Sent, SentOut: a get on the other side receives it
MOVED_GET = {3, 12}    # Recvd, RecvOut: a put on the other side sent it


class TimelineError(Exception):
    pass


# ---- reading ----

def load_component(path: Path) -> dict:
    """One timeline file: {"header", "ranks": {rank: summary}, "events": [dict, ...], "path",
    "truncated"}. Events keep the file's per-rank order."""
    with open(path, encoding="utf-8") as f:
        first = f.readline()
        try:
            header = json.loads(first)
        except json.JSONDecodeError as e:
            raise TimelineError(f"{path}: the first line is not the timeline header ({e})") from None
        if header.get("format") != FORMAT:
            raise TimelineError(f"{path}: not an estuary timeline (format {header.get('format')!r})")
        if header.get("version") != 1:
            raise TimelineError(f"{path}: timeline version {header.get('version')}, this reader knows 1")
        cols = header["columns"]
        ranks, events, truncated = {}, [], False
        for no, line in enumerate(f, start=2):
            if not line.strip():
                continue
            try:
                v = json.loads(line)
            except json.JSONDecodeError:
                truncated = True  # a run stopped while writing: keep what is whole
                print(f"estuary timeline: {path}:{no}: unreadable line, the rest of the file is skipped",
                      file=sys.stderr)
                break
            if isinstance(v, dict):
                ranks[v["rank"]] = v
            else:
                events.append(dict(zip(cols, v)))
    header["couplings_by_id"] = {c["id"]: c for c in header["couplings"]}
    return {"header": header, "ranks": ranks, "events": events, "path": str(path), "truncated": truncated}


def load_run(run_dir) -> dict[str, dict]:
    """Every timeline file of a run folder, by component name."""
    run_dir = Path(run_dir)
    files = sorted(run_dir.glob("timeline_*.jsonl"))
    if not files:
        raise TimelineError(f"no timeline_*.jsonl in {run_dir}: record one with `timeline: true` in the YAML "
                            "configuration, a negative second number under $NLOGPRT in the namcouple, or "
                            "ESTUARY_TIMELINE=1 in the environment")
    out = {}
    for p in files:
        c = load_component(p)
        out[c["header"]["component"]] = c
    return out


# ---- analysis ----

def _partner(coupling: dict, kind: str) -> str:
    other = coupling["target"] if kind == "put" else coupling["source"]
    return other or "file"


def _field_name(coupling: dict, kind: str, field: int) -> str:
    names = coupling["source_fields"] if kind == "put" else coupling["target_fields"]
    return names[field] if 0 <= field < len(names) else f"field {field}"


def analyse_component(comp: dict) -> dict:
    h = comp["header"]
    cpl = h["couplings_by_id"]
    evs = comp["events"]
    ranks = sorted(comp["ranks"]) or sorted({e["rank"] for e in evs})
    nr = max(1, len(ranks))
    # Per rank: the end of its run (entering terminate) and its sums over put/get calls.
    term = {}
    for e in evs:
        if e["kind"] == "terminate":
            term[e["rank"]] = e["enter"]
    for r in ranks:
        term.setdefault(r, comp["ranks"].get(r, {}).get("end", 0.0))
    run = max(term.values()) if term else 0.0
    keys = ("calls", "wait", "remap", "transfer", "io")
    per_rank = {r: dict.fromkeys(keys, 0.0) for r in ranks}
    groups: dict[tuple, list] = {}
    fields: dict[tuple, dict] = {}
    blocked_on: dict[str, float] = {}
    for e in evs:
        k = e["kind"]
        if k not in KINDS_CALL:
            continue
        d = e["leave"] - e["enter"]
        pr = per_rank.setdefault(e["rank"], dict.fromkeys(keys, 0.0))
        pr["calls"] += d
        for x in ("wait", "remap", "transfer", "io"):
            pr[x] += e[x]
        groups.setdefault((k, e["coupling"], e["field"], e["time"]), []).append(e)
        c = cpl.get(e["coupling"], {})
        partner = _partner(c, k) if c else "?"
        blocked_on[partner] = blocked_on.get(partner, 0.0) + e["wait"] / nr
        f = fields.setdefault((e["coupling"], k, e["field"]), {
            "coupling": e["coupling"], "kind": k, "field": _field_name(c, k, e["field"]) if c else "?",
            "partner": partner, "label": c.get("label", ""), "times": set(), "acted_times": set(),
            "time": 0.0, "wait": 0.0, "remap": 0.0, "transfer": 0.0, "io": 0.0, "max_wait": 0.0, "coupling_s": 0.0})
        f["times"].add(e["time"])  # calls and acted: coupling events (model times), not summed over ranks
        if e["info"] in ACTED:
            f["acted_times"].add(e["time"])
        f["time"] += d / nr
        for x in ("wait", "remap", "transfer", "io"):
            f[x] += e[x] / nr
        f["max_wait"] = max(f["max_wait"], e["wait"])
    # LUCIA: per coupling event over the ranks, the slowest rank's end after the last arrival.
    coupling_s = jitter = 0.0
    get_from: dict[str, float] = {}
    for (k, cid, fld, _t), es in groups.items():
        last_in = max(e["enter"] for e in es)
        ext = max(e["leave"] for e in es) - last_in
        coupling_s += ext
        jitter += last_in - min(e["enter"] for e in es)
        fields[(cid, k, fld)]["coupling_s"] += ext
        if k == "get":
            p = _partner(cpl.get(cid, {"source": "?"}), "get")
            get_from[p] = get_from.get(p, 0.0) + ext
    for f in fields.values():
        f["calls"] = len(f.pop("times"))
        f["acted"] = len(f.pop("acted_times"))
    mean = {x: sum(per_rank[r][x] for r in per_rank) / nr for x in keys}
    other = mean["calls"] - mean["wait"] - mean["remap"] - mean["transfer"] - mean["io"]
    enddef = [e for e in evs if e["kind"] == "enddef"]
    final = [e for e in evs if e["kind"] in ("terminate", "restart")]
    return {
        "component": h["component"], "ranks": h["ranks"], "ranks_recorded": len(ranks),
        "events": len(evs), "dropped": sum(s.get("dropped", 0) for s in comp["ranks"].values()),
        "run_s": run,
        "coupling_s": coupling_s,
        "computing_s": run - coupling_s,
        "coupling_cost_pct": 100.0 * coupling_s / run if run > 0 else 0.0,
        "jitter_s": jitter,
        "in_calls_s": mean["calls"], "blocked_s": mean["wait"], "remap_s": mean["remap"],
        "transfer_s": mean["transfer"], "io_s": mean["io"], "other_s": other,
        "blocked_pct": 100.0 * mean["wait"] / run if run > 0 else 0.0,
        "blocked_on": dict(sorted(blocked_on.items())),
        "get_from": dict(sorted(get_from.items())),
        "enddef_s": max((e["leave"] - e["enter"] for e in enddef), default=0.0),
        "terminate_s": max((e["leave"] for e in final), default=run) - run if final else 0.0,
        "fields": sorted(fields.values(), key=lambda f: (f["coupling"], f["kind"], f["field"])),
        "truncated": comp["truncated"],
        "recorded": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(h.get("start_unix", 0))),
    }


def analyse(run: dict[str, dict]) -> dict:
    comps = [analyse_component(run[name]) for name in sorted(run)]
    runtime = max((c["header"].get("runtime", 0) for c in run.values()), default=0)
    wall = max((c["run_s"] for c in comps), default=0.0)
    total_ranks = sum(c["ranks"] for c in comps)
    years = runtime / (365.0 * 86400.0)
    out = {"run_dir": None, "components": comps, "runtime_model_s": runtime, "wall_s": wall,
           "ranks": total_ranks}
    if wall > 0 and years > 0:
        out["sypd"] = years / (wall / 86400.0)     # simulated years per wall-clock day
        out["chpsy"] = total_ranks * (wall / 3600.0) / years  # core hours per simulated year
    # The component the others wait for: the one least blocked on its partners, when it is
    # blocked clearly less (under half as much, and by more than 5% of the run) than the most.
    coupled = [c for c in comps if c["blocked_on"]]
    if len(coupled) > 1:
        slow = min(coupled, key=lambda c: c["blocked_pct"])
        fast = max(coupled, key=lambda c: c["blocked_pct"])
        out["blocked_pct_range"] = [slow["blocked_pct"], fast["blocked_pct"]]
        clear = fast["blocked_pct"] - slow["blocked_pct"] > 5.0 and slow["blocked_pct"] < 0.5 * fast["blocked_pct"]
        out["bottleneck"] = slow["component"] if clear else None
    return out


# ---- text ----

def report(a: dict) -> str:
    L = []
    L.append("Load balance (LUCIA): seconds of wall clock from the common start (end of enddef)")
    L.append("")
    L.append(f"{'component':<14}{'ranks':>6}{'run':>10}{'computing':>11}{'coupling':>10}{'cost %':>8}"
             f"{'blocked':>10}{'jitter':>9}")
    for c in a["components"]:
        L.append(f"{c['component']:<14}{c['ranks']:>6}{c['run_s']:10.3f}{c['computing_s']:11.3f}{c['coupling_s']:10.3f}"
                 f"{c['coupling_cost_pct']:8.1f}{c['blocked_s']:10.3f}{c['jitter_s']:9.4f}")
    for c in a["components"]:
        L.append("")
        L.append(f"{c['component']} ({c['ranks']} rank{'s' if c['ranks'] != 1 else ''}, {c['events']} events, "
                 f"recorded {c['recorded']}"
                 + (f", {c['dropped']} dropped" if c["dropped"] else "")
                 + (", file truncated" if c["truncated"] else "") + ")")
        L.append(f"  in put/get (mean over ranks) {c['in_calls_s']:.4f} s: blocked on partners {c['blocked_s']:.4f}, "
                 f"remap {c['remap_s']:.4f}, transfer {c['transfer_s']:.4f}, files {c['io_s']:.4f}, "
                 f"coupler other {c['other_s']:.4f}")
        L.append(f"  set-up (enddef, slowest rank) {c['enddef_s']:.3f} s; termination {c['terminate_s']:.3f} s")
        if c["blocked_on"]:
            waits = ", ".join(f"{p} {s:.4f} s" for p, s in c["blocked_on"].items())
            L.append(f"  waits for: {waits}")
        if c["get_from"]:
            gets = ", ".join(f"{p} {s:.4f} s" for p, s in c["get_from"].items())
            L.append(f"  time in gets, by source (LUCIA's specific get time): {gets}")
        if c["fields"]:
            L.append(f"  {'field':<16}{'call':<5}{'partner':<12}{'calls':>7}{'acted':>7}{'time':>10}{'coupling':>10}"
                     f"{'blocked':>10}{'max wait':>10}{'remap':>9}{'transfer':>10}{'files':>8}")
            for f in c["fields"]:
                L.append(f"  {f['field']:<16}{f['kind']:<5}{f['partner']:<12}{f['calls']:>7}{f['acted']:>7}"
                         f"{f['time']:10.4f}{f['coupling_s']:10.4f}{f['wait']:10.4f}{f['max_wait']:10.4f}"
                         f"{f['remap']:9.4f}{f['transfer']:10.4f}{f['io']:8.4f}")
    L.append("")
    line = f"coupled system: {a['ranks']} ranks, {a['wall_s']:.3f} s for {a['runtime_model_s']:g} model seconds"
    if "sypd" in a:
        line += f"; {a['sypd']:.3g} simulated years/day (SYPD), {a['chpsy']:.3g} core hours/simulated year (CHPSY)"
    L.append(line)
    if a.get("bottleneck"):
        L.append(f"the others wait for {a['bottleneck']}: it is the slowest component; more ranks for it, or fewer "
                 "for the components waiting on it, balance the run")
    elif "bottleneck" in a:
        lo, hi = a["blocked_pct_range"]
        if hi <= 5.0:
            L.append("balanced: no component is blocked on its partners more than 5% of its run")
        else:
            L.append(f"no single bottleneck: every component is blocked on the others a comparable share of its run "
                     f"({lo:.0f}-{hi:.0f}%): the exchanges themselves, not one component, set the pace")
    return "\n".join(L)


# ---- Chrome trace ----

def _shown(e: dict, all_calls: bool) -> bool:
    return all_calls or e["kind"] not in KINDS_CALL or e["info"] in ACTED


def trace(run: dict[str, dict], all_calls: bool = False) -> dict:
    """Chrome's trace-event format (a dict for json.dump): one process per component, one
    thread per rank, a complete ("X") event per call with a nested "waiting for" slice, and flow
    arrows from each put that sent to the gets that received it."""
    t0 = min((e["enter"] for c in run.values() for e in c["events"]), default=0.0)
    us = lambda t: round((t - t0) * 1e6, 3)  # noqa: E731
    out = []
    names = sorted(run)
    for pid, name in enumerate(names, start=1):
        comp = run[name]
        h = comp["header"]
        out.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                    "args": {"name": f"{name} ({h['ranks']} ranks)"}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        for r, s in sorted(comp["ranks"].items()):
            out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": r,
                        "args": {"name": f"rank {r} (world {s.get('world_rank')}, {s.get('host', '')})"}})
        cpl = h["couplings_by_id"]
        for e in comp["events"]:
            if not _shown(e, all_calls):
                continue
            k = e["kind"]
            c = cpl.get(e["coupling"])
            if k in KINDS_CALL and c:
                label = f"{k} {_field_name(c, k, e['field'])}"
                partner = _partner(c, k)
            else:
                label, partner = k, None
            args = {"model_time": e["time"], "info": h.get("info_names", {}).get(str(e["info"]), e["info"]),
                    "wait_ms": e["wait"] * 1e3, "remap_ms": e["remap"] * 1e3, "transfer_ms": e["transfer"] * 1e3,
                    "files_ms": e["io"] * 1e3}
            if c:
                args["coupling"] = c["label"]
            out.append({"name": label, "cat": k, "ph": "X", "ts": us(e["enter"]),
                        "dur": round((e["leave"] - e["enter"]) * 1e6, 3), "pid": pid, "tid": e["rank"], "args": args})
            if partner and e["wait"] > 0:
                # The coupler waits at the start of the call (a get for the header, a put for the
                # acknowledgement of its previous exchange): drawn there, inside the call.
                out.append({"name": f"waiting for {partner}", "cat": "wait", "ph": "X", "ts": us(e["enter"]),
                            "dur": round(e["wait"] * 1e6, 3), "pid": pid, "tid": e["rank"]})
    # Flows: the put of the source's lowest rank at t to the get of the target's lowest rank at t + lag.
    pids = {n: i for i, n in enumerate(names, start=1)}
    sends, recvs = {}, {}
    for name in names:
        comp = run[name]
        cpl = comp["header"]["couplings_by_id"]
        for e in comp["events"]:
            c = cpl.get(e["coupling"])
            if not c:
                continue
            if e["kind"] == "put" and e["info"] in MOVED_PUT and c["target"]:
                key = (e["coupling"], e["field"], e["time"] + c["lag"])
                if key not in sends or e["rank"] < sends[key][1]["rank"]:
                    sends[key] = (name, e)
            elif e["kind"] == "get" and e["info"] in MOVED_GET:
                key = (e["coupling"], e["field"], e["time"])
                if key not in recvs or e["rank"] < recvs[key][1]["rank"]:
                    recvs[key] = (name, e)
    for n, key in enumerate(sorted(k for k in sends if k in recvs), start=1):
        (sn, se), (rn, re_) = sends[key], recvs[key]
        out.append({"name": "coupling", "cat": "flow", "ph": "s", "id": n, "pid": pids[sn], "tid": se["rank"],
                    "ts": us(se["leave"]) - 0.001})
        out.append({"name": "coupling", "cat": "flow", "ph": "f", "bp": "e", "id": n, "pid": pids[rn],
                    "tid": re_["rank"], "ts": us(re_["enter"]) + 0.001})
    return {"traceEvents": out, "displayTimeUnit": "ms",
            "otherData": {"source": "estuary timeline", "origin_s": t0,
                          "components": {n: run[n]["path"] for n in names}}}


# ---- figures ----

def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_component(comp: dict, summary: dict, path: Path, max_ranks: int = 64, all_calls: bool = False,
                   with_setup: bool = False) -> None:
    """The component's ranks against wall time: computing (pale), put and get calls, their waits;
    from the common start (the set-up before it only `with_setup`: it often dwarfs the run)."""
    plt = _plt()
    from matplotlib.patches import Patch

    ranks = sorted(comp["ranks"]) or sorted({e["rank"] for e in comp["events"]})
    if len(ranks) > max_ranks:  # evenly spread rows, the first and last included
        step = (len(ranks) - 1) / (max_ranks - 1)
        ranks = sorted({ranks[round(i * step)] for i in range(max_ranks)})
    row = {r: i for i, r in enumerate(ranks)}
    cats = {"put": [], "get": [], "wait": [], "enddef": [], "terminate": [], "restart": []}
    ends = {}
    for e in comp["events"]:
        if e["rank"] not in row:
            continue
        if e["kind"] == "terminate":
            ends[e["rank"]] = e["enter"]
        if not _shown(e, all_calls):
            continue
        cats[e["kind"]].append((e["rank"], e["enter"], e["leave"] - e["enter"]))
        if e["kind"] in KINDS_CALL and e["wait"] > 0:
            cats["wait"].append((e["rank"], e["enter"], e["wait"]))
    colours = {"computing": "#dcdcdc", "put": "#1f77b4", "get": "#2ca02c", "wait": "#d62728",
               "enddef": "#9467bd", "terminate": "#7f7f7f", "restart": "#8c564b"}
    h = max(2.6, min(12.0, 1.2 + 0.3 * len(ranks)))
    fig, ax = plt.subplots(figsize=(11, h), dpi=110)
    for r in ranks:
        y = row[r]
        ax.broken_barh([(0.0, ends.get(r, summary["run_s"]))], (y - 0.4, 0.8), facecolors=colours["computing"])
    for kind in ("enddef", "put", "get", "wait", "terminate", "restart"):
        per_row: dict[int, list] = {}
        for r, x, w in cats[kind]:
            per_row.setdefault(r, []).append((x, max(w, 0.0)))
        for r, spans in per_row.items():
            y = row[r]
            pad = 0.25 if kind == "wait" else 0.4  # a wait is drawn thinner, inside its call
            ax.broken_barh(spans, (y - pad, 2 * pad), facecolors=colours[kind], edgecolors=colours[kind],
                           linewidth=0.3)
    ax.set_yticks(range(len(ranks)))
    ax.set_yticklabels([str(r) for r in ranks], fontsize=7 if len(ranks) > 16 else 9)
    ax.set_ylim(-0.7, len(ranks) - 0.3)
    ax.invert_yaxis()
    ax.set_ylabel("rank of the component")
    ax.set_xlabel("wall clock (s) from the common start (end of enddef)")
    last = max([x + w for spans in cats.values() for _r, x, w in spans] + [summary["run_s"]])
    if not with_setup:
        ax.set_xlim(-0.01 * last, 1.01 * last)
    ax.set_title(f"{summary['component']}: computing {summary['computing_s']:.2f} s, coupling "
                 f"{summary['coupling_s']:.2f} s ({summary['coupling_cost_pct']:.1f}% of {summary['run_s']:.2f} s), "
                 f"blocked on partners {summary['blocked_s']:.2f} s"
                 + ("" if with_setup else f"; set-up before: {summary['enddef_s']:.2f} s"), fontsize=9)
    handles = [Patch(color=colours[k], label=lbl) for k, lbl in (
        ("computing", "computing (between calls)"), ("put", "put"), ("get", "get"),
        ("wait", "waiting for the partner"), ("enddef", "enddef"), ("terminate", "terminate"),
        ("restart", "restart files"))]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_balance(a: dict, path: Path) -> None:
    """LUCIA's oasis_balance figure: per component, computing and coupling (its blocked part hatched)."""
    plt = _plt()
    comps = a["components"]
    fig, ax = plt.subplots(figsize=(8.0, 1.4 + 0.5 * len(comps)), dpi=110)
    ys = range(len(comps))
    comp_s = [c["computing_s"] for c in comps]
    cpl_s = [c["coupling_s"] for c in comps]
    blk = [min(c["blocked_s"], c["coupling_s"]) for c in comps]
    ax.barh(ys, comp_s, color="#1f77b4", label="computing")
    ax.barh(ys, cpl_s, left=comp_s, color="#ff7f0e", label="coupling (put/get)")
    ax.barh(ys, blk, left=comp_s, color="none", edgecolor="#d62728", hatch="///", linewidth=0, label="of which blocked")
    ax.set_yticks(list(ys))
    ax.set_yticklabels([f"{c['component']} ({c['ranks']})" for c in comps])
    ax.invert_yaxis()
    ax.set_xlabel("wall clock (s)")
    ax.set_title("load balance (LUCIA)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---- command ----

def add_parser(sub):
    t = sub.add_parser("timeline", help="LUCIA's load-balance analysis of a run's coupling timeline; PNGs and a "
                       "Chrome trace", description=__doc__, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    t.add_argument("run_dir", metavar="RUN_DIR", help="the run folder holding timeline_<component>.jsonl")
    t.add_argument("--out", help="folder for the PNGs and the trace (default: RUN_DIR)")
    t.add_argument("--trace", default="timeline_trace.json",
                   help="name of the Chrome trace-event file in --out (default: timeline_trace.json)")
    t.add_argument("--no-trace", action="store_true", help="do not write the trace")
    t.add_argument("--no-png", action="store_true", help="do not draw the PNGs")
    t.add_argument("--all-calls", action="store_true",
                   help="also draw and trace the puts and gets that did nothing (between coupling times); "
                        "the analysis counts them always")
    t.add_argument("--with-setup", action="store_true",
                   help="draw the set-up (enddef) before the common start in the PNGs too (default: the run only)")
    t.add_argument("--max-ranks", type=int, default=64,
                   help="rows of a component's PNG at most: ranks evenly spread beyond (default: 64)")
    t.add_argument("--json", action="store_true", help="print the analysis as one JSON object")
    t.set_defaults(func=cmd_timeline)
    return t


def cmd_timeline(args, argv=None) -> int:
    try:
        run = load_run(args.run_dir)
    except (TimelineError, OSError, KeyError) as e:
        print(f"estuary timeline: {e}", file=sys.stderr)
        return 1
    a = analyse(run)
    a["run_dir"] = str(Path(args.run_dir).resolve())
    out_dir = Path(args.out) if args.out else Path(args.run_dir)
    written = []
    if not (args.no_png and args.no_trace):
        out_dir.mkdir(parents=True, exist_ok=True)
    if not args.no_png:
        for c in a["components"]:
            p = out_dir / f"timeline_{c['component']}.png"
            plot_component(run[c["component"]], c, p, max_ranks=max(2, args.max_ranks), all_calls=args.all_calls,
                           with_setup=args.with_setup)
            written.append(p)
        p = out_dir / "timeline_balance.png"
        plot_balance(a, p)
        written.append(p)
    if not args.no_trace:
        p = out_dir / args.trace
        with open(p, "w", encoding="utf-8") as f:
            json.dump(trace(run, all_calls=args.all_calls), f)
        written.append(p)
    a["written"] = [str(p.resolve()) for p in written]
    if args.json:
        print(json.dumps(a))
    else:
        print(report(a))
        for p in written:
            print(f"wrote {p.resolve()}")
    return 0
