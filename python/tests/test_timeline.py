"""`estuary timeline` (python/estuary/cli/timeline.py) on the demo's coupled toy run with the coupling
timeline recorded (ctest entry python_timeline, outside mpirun: `estuary demo` starts it).

The timeline files are checked against each other (every put that sent has its get on every
target rank at its time + lag, and back), the analysis against a recomputation written here from
the raw events (not through the module's code), the Chrome trace with json, the PNGs by their
signature; a synthetic run with numbers worked out by hand pins the definitions; with the
switch off the run writes no timeline."""
import json
import math
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

PNG = b"\x89PNG\r\n\x1a\n"
SENT, SENTOUT, RECVD, RECVOUT = 4, 8, 3, 12
ACTED = {3, 4, 6, 7, 8, 9, 10, 11, 12, 13}


def cli(*args, env=None, check=True):
    out = subprocess.run([sys.executable, "-m", "estuary", *args], capture_output=True, text=True, timeout=280,
                         env=env)
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def run_demo(folder: Path, timeline: str) -> None:
    assert os.environ.get("ESTUARY_TOY_ATM_OCN"), "ctest sets ESTUARY_TOY_ATM_OCN to the built toy_atm_ocn"
    env = dict(os.environ, ESTUARY_TIMELINE=timeline)
    rec = json.loads(cli("demo", "--json", "--dir", str(folder), env=env).stdout)
    assert rec["returncode"] == 0, rec["output"][-3000:]


def read(path: Path):
    """(header, {rank: summary}, [event dict]) from a timeline file, read here with json alone."""
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    ranks, events = {}, []
    for line in lines[1:]:
        v = json.loads(line)
        if isinstance(v, dict):
            ranks[v["rank"]] = v
        else:
            events.append(dict(zip(header["columns"], v)))
    return header, ranks, events


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timeline") / "demo"
    run_demo(folder, "1")
    return folder


@pytest.fixture(scope="module")
def files(run):
    return {name: read(run / f"timeline_{name}.jsonl") for name in ("atmos", "ocean")}


def test_files_are_written_and_consistent(run, files):
    assert sorted(p.name for p in run.glob("timeline_*")) == ["timeline_atmos.jsonl", "timeline_ocean.jsonl"]
    couplings = {}
    for name, (h, ranks, events) in files.items():
        assert h["format"] == "estuary-timeline" and h["version"] == 1 and h["component"] == name
        assert h["ranks"] == 2 and sorted(ranks) == [0, 1]
        assert h["runtime"] == 86400
        for c in h["couplings"]:
            couplings[c["id"]] = c
        for r in ranks:
            mine = [e for e in events if e["rank"] == r]
            assert len(mine) == ranks[r]["events"] and ranks[r]["dropped"] == 0
            assert mine[0]["kind"] == "enddef" and mine[0]["enter"] <= 0 and mine[0]["leave"] == 0
            assert [e["kind"] for e in mine[-2:]] == ["terminate", "restart"]
            end = mine[-2]["enter"]
            waited = 0.0
            for prev, e in zip([None] + mine, mine):
                assert e["enter"] <= e["leave"]
                if prev is not None:
                    assert e["enter"] >= prev["leave"] - 1e-9, "a rank's events are in time order"
                parts = [e["wait"], e["remap"], e["transfer"], e["io"]]
                assert min(parts) >= 0
                assert sum(parts) <= e["leave"] - e["enter"] + 5e-9
                if e["kind"] in ("put", "get"):
                    assert 0 <= e["enter"] and e["leave"] <= end + 1e-9
                    waited += e["wait"]
            assert waited <= end
    assert sorted(couplings) == [0, 1]
    # Every put that sent, received on every target rank at its time + lag; every receiving get sent.
    by = defaultdict(dict)  # (component, rank, kind, coupling, field, time) -> event
    for name, (h, ranks, events) in files.items():
        for e in events:
            if e["kind"] in ("put", "get"):
                by[name][(e["rank"], e["kind"], e["coupling"], e["field"], e["time"])] = e
    matched = 0
    for cid, c in couplings.items():
        src, dst, lag = c["source"], c["target"], c["lag"]
        for (r, kind, cc, f, t), e in by[src].items():
            if kind == "put" and cc == cid and e["info"] in (SENT, SENTOUT):
                for rr in files[dst][1]:
                    g = by[dst].get((rr, "get", cid, f, t + lag))
                    assert g is not None and g["info"] in (RECVD, RECVOUT), (cid, t, rr)
                    matched += 1
        for (r, kind, cc, f, t), g in by[dst].items():
            if kind == "get" and cc == cid and g["info"] in (RECVD, RECVOUT):
                for rr in files[src][1]:
                    e = by[src].get((rr, "put", cid, f, t - lag))
                    assert e is not None and e["info"] in (SENT, SENTOUT), (cid, t, rr)
    # A day of hourly exchanges of two fields each way, 2 x 2 ranks; the lagged coupling's last
    # put goes to the restart file instead.
    assert matched == (24 * 2 + 23 * 2) * 2 * 2


def recompute(files):
    """The analysis from the raw events, as docs/user-guide.md defines it (independent of timeline.py)."""
    out = {}
    for name, (h, ranks, events) in files.items():
        n = len(ranks)
        cpl = {c["id"]: c for c in h["couplings"]}
        end = {e["rank"]: e["enter"] for e in events if e["kind"] == "terminate"}
        calls = [e for e in events if e["kind"] in ("put", "get")]
        run_s = max(end.values())
        groups = defaultdict(list)
        for e in calls:
            groups[(e["kind"], e["coupling"], e["field"], e["time"])].append(e)
        ext = {k: max(e["leave"] for e in g) - max(e["enter"] for e in g) for k, g in groups.items()}
        coupling = math.fsum(ext.values())
        jitter = math.fsum(max(e["enter"] for e in g) - min(e["enter"] for e in g) for g in groups.values())
        blocked_on = defaultdict(float)
        for e in calls:
            c = cpl[e["coupling"]]
            blocked_on[c["target"] if e["kind"] == "put" else c["source"]] += e["wait"] / n
        get_from = defaultdict(float)
        for (kind, cid, _f, _t), x in ext.items():
            if kind == "get":
                get_from[cpl[cid]["source"]] += x
        mean = {k: math.fsum(e[k] for e in calls) / n for k in ("wait", "remap", "transfer", "io")}
        in_calls = math.fsum(e["leave"] - e["enter"] for e in calls) / n
        out[name] = {"run_s": run_s, "coupling_s": coupling, "computing_s": run_s - coupling,
                     "coupling_cost_pct": 100 * coupling / run_s, "jitter_s": jitter, "in_calls_s": in_calls,
                     "blocked_s": mean["wait"], "remap_s": mean["remap"], "transfer_s": mean["transfer"],
                     "io_s": mean["io"], "other_s": in_calls - sum(mean.values()),
                     "blocked_on": dict(blocked_on), "get_from": dict(get_from),
                     "calls": {(e["coupling"], e["kind"], e["field"]) for e in calls}}
    return out


def test_analysis_matches_a_recomputation(run, files, tmp_path):
    out = tmp_path / "out"
    a = json.loads(cli("timeline", str(run), "--out", str(out), "--json").stdout)
    ref = recompute(files)
    comps = {c["component"]: c for c in a["components"]}
    assert sorted(comps) == ["atmos", "ocean"]
    approx = lambda v: pytest.approx(v, rel=1e-9, abs=1e-12)  # noqa: E731
    for name, want in ref.items():
        got = comps[name]
        for k in ("run_s", "coupling_s", "computing_s", "coupling_cost_pct", "jitter_s", "in_calls_s", "blocked_s",
                  "remap_s", "transfer_s", "io_s", "other_s"):
            assert got[k] == approx(want[k]), (name, k)
        assert got["blocked_on"] == approx(want["blocked_on"])
        assert got["get_from"] == approx(want["get_from"])
        assert {(f["coupling"], f["kind"], f["field"]) for f in got["fields"]} == \
            {(c, k, _name(files[name][0], c, k, f)) for (c, k, f) in want["calls"]}
        assert got["ranks"] == 2 and got["dropped"] == 0
        assert got["computing_s"] > 0 and 0 <= got["coupling_cost_pct"] <= 100
    assert set(comps["atmos"]["blocked_on"]) == {"ocean"} and set(comps["ocean"]["blocked_on"]) == {"atmos"}
    wall = max(c["run_s"] for c in ref.values())
    assert a["wall_s"] == approx(wall)
    assert a["sypd"] == approx((86400 / (365 * 86400)) / (wall / 86400))
    assert a["chpsy"] == approx(4 * (wall / 3600) / (86400 / (365 * 86400)))
    # The files it says it wrote, in --out, and only there.
    names = sorted(Path(p).name for p in a["written"])
    assert names == ["timeline_atmos.png", "timeline_balance.png", "timeline_ocean.png", "timeline_trace.json"]
    assert all(Path(p).parent == out.resolve() for p in a["written"])
    for png in ("timeline_atmos.png", "timeline_ocean.png", "timeline_balance.png"):
        data = (out / png).read_bytes()
        assert data[:8] == PNG and len(data) > 2000, png
    assert not list(run.glob("*.png"))


def _name(header, cid, kind, field):
    c = next(c for c in header["couplings"] if c["id"] == cid)
    return (c["source_fields"] if kind == "put" else c["target_fields"])[field]


def test_trace_loads_and_has_the_events(run, files, tmp_path):
    cli("timeline", str(run), "--out", str(tmp_path), "--no-png", "--trace", "t.json")
    with open(tmp_path / "t.json") as f:
        t = json.load(f)
    ev = t["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert sorted(v.split()[0] for v in procs.values()) == ["atmos", "ocean"]
    pid = {v.split()[0]: k for k, v in procs.items()}
    threads = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert threads == {(p, r) for p in pid.values() for r in (0, 1)}
    calls = [e for e in ev if e["ph"] == "X" and e["cat"] != "wait"]
    for e in calls:
        assert {"name", "ph", "ts", "dur", "pid", "tid"} <= set(e) and e["ts"] >= 0 and e["dur"] >= 0
    # One complete event per recorded event that did something (the set-up, the end, and the
    # puts and gets that moved, accumulated into files or read), per component and rank.
    for name, (h, ranks, events) in files.items():
        want = [e for e in events if e["kind"] not in ("put", "get") or e["info"] in ACTED]
        got = [e for e in calls if e["pid"] == pid[name]]
        assert len(got) == len(want), name
        assert sorted((e["tid"], e["cat"]) for e in got) == sorted((e["rank"], e["kind"]) for e in want)
    # A wait inside its call, at its start.
    starts = {(e["pid"], e["tid"], e["ts"]): e for e in calls}
    waits = [e for e in ev if e["ph"] == "X" and e["cat"] == "wait"]
    assert waits
    for w in waits:
        parent = starts[(w["pid"], w["tid"], w["ts"])]
        assert w["dur"] <= parent["dur"] + 1e-3 and w["name"].startswith("waiting for ")
    # Arrows from each put that sent to the get that received it: one per field and exchange.
    s = [e for e in ev if e["ph"] == "s"]
    f = [e for e in ev if e["ph"] == "f"]
    assert len(s) == len(f) == 24 * 2 + 23 * 2
    assert {e["id"] for e in s} == {e["id"] for e in f}


def test_report_and_default_output_folder(run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    out = cli("timeline", str(copy)).stdout
    assert "Load balance (LUCIA)" in out and "atmos" in out and "ocean" in out and "waits for:" in out
    assert "SYPD" in out
    for n in ("timeline_atmos.png", "timeline_ocean.png", "timeline_balance.png"):
        assert (copy / n).read_bytes()[:8] == PNG
    with open(copy / "timeline_trace.json") as f:
        assert json.load(f)["traceEvents"]


def test_switch_off_writes_nothing(tmp_path):
    folder = tmp_path / "off"
    run_demo(folder, "0")  # the demo's YAML says timeline: true; the environment turns it off
    assert folder.is_dir() and any(folder.iterdir())
    assert not list(folder.glob("timeline*"))
    bad = cli("timeline", str(folder), check=False)
    assert bad.returncode == 1 and "timeline: true" in bad.stderr and "ESTUARY_TIMELINE" in bad.stderr


def _write(path: Path, header: dict, rows: list) -> None:
    with open(path, "w") as f:
        f.write(json.dumps(header) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")


COLUMNS = ["rank", "kind", "coupling", "field", "time", "enter", "leave", "wait", "remap", "transfer", "io", "info"]


def test_synthetic_run_numbers_by_hand(tmp_path):
    """Two components, numbers worked out by hand: A (2 ranks) puts X at t=0, B (1 rank) gets it."""
    c = {"id": 0, "label": "X -> Y", "origin": "hand", "source": "A", "target": "B", "source_fields": ["X"],
         "target_fields": ["Y"], "period": 3600, "lag": 0, "status": "EXPORTED"}
    head = lambda comp, n, role: {"format": "estuary-timeline", "version": 1, "component": comp, "ranks": n,  # noqa: E731
                                  "runtime": 3600, "start_unix": 0, "columns": COLUMNS, "info_names": {},
                                  "couplings": [dict(c, role=role)]}
    _write(tmp_path / "timeline_A.jsonl", head("A", 2, "put"), [
        {"rank": 0, "world_rank": 0, "host": "h", "events": 4, "dropped": 0, "end": 11},
        [0, "enddef", -1, 0, 0, -2.0, 0, 0, 0, 0, 0, 0],
        [0, "put", 0, 0, 0, 1.0, 1.5, 0.2, 0.1, 0.05, 0, 4],
        [0, "terminate", -1, 0, 3600, 10.0, 10.5, 0.3, 0, 0, 0, 0],
        [0, "restart", -1, 0, 3600, 10.5, 10.6, 0, 0, 0, 0, 0],
        {"rank": 1, "world_rank": 1, "host": "h", "events": 4, "dropped": 0, "end": 11},
        [1, "enddef", -1, 0, 0, -2.5, 0, 0, 0, 0, 0, 0],
        [1, "put", 0, 0, 0, 1.2, 1.6, 0.1, 0.1, 0.05, 0, 4],
        [1, "terminate", -1, 0, 3600, 9.5, 10.5, 0.9, 0, 0, 0, 0],
        [1, "restart", -1, 0, 3600, 10.5, 10.6, 0, 0, 0, 0, 0],
    ])
    _write(tmp_path / "timeline_B.jsonl", head("B", 1, "get"), [
        {"rank": 0, "world_rank": 2, "host": "h", "events": 5, "dropped": 0, "end": 11},
        [0, "enddef", -1, 0, 0, -1.0, 0, 0, 0, 0, 0, 0],
        [0, "get", 0, 0, 0, 0.5, 1.7, 1.1, 0.02, 0.03, 0, 3],
        [0, "get", 0, 0, 1200, 1.8, 1.8, 0, 0, 0, 0, 0],
        [0, "terminate", -1, 0, 3600, 10.2, 10.4, 0, 0, 0, 0, 0],
        [0, "restart", -1, 0, 3600, 10.4, 10.4, 0, 0, 0, 0, 0],
    ])
    a = json.loads(cli("timeline", str(tmp_path), "--json").stdout)
    A, B = a["components"]
    ap = lambda v: pytest.approx(v, abs=1e-12)  # noqa: E731
    # A: one coupling event; the last rank arrives at 1.2, the last leaves at 1.6.
    assert A["run_s"] == ap(10.0) and A["coupling_s"] == ap(0.4) and A["computing_s"] == ap(9.6)
    assert A["jitter_s"] == ap(0.2) and A["coupling_cost_pct"] == ap(4.0)
    assert A["in_calls_s"] == ap(0.45) and A["blocked_s"] == ap(0.15) and A["remap_s"] == ap(0.1)
    assert A["transfer_s"] == ap(0.05) and A["other_s"] == ap(0.15)
    assert A["blocked_on"] == {"B": ap(0.15)} and A["get_from"] == {}
    assert A["enddef_s"] == ap(2.5) and A["terminate_s"] == ap(0.6)
    # B: its get waited 1.1 s for A; the no-op get at 1200 adds nothing.
    assert B["run_s"] == ap(10.2) and B["coupling_s"] == ap(1.2) and B["computing_s"] == ap(9.0)
    assert B["blocked_s"] == ap(1.1) and B["get_from"] == {"A": ap(1.2)} and B["blocked_on"] == {"A": ap(1.1)}
    (fy,) = B["fields"]
    assert (fy["field"], fy["kind"], fy["partner"], fy["calls"], fy["acted"]) == ("Y", "get", "A", 2, 1)
    assert fy["max_wait"] == ap(1.1)
    # The coupled system: 3 ranks for 10.2 s, one model hour; A waits least: the others wait for it.
    assert a["wall_s"] == ap(10.2) and a["ranks"] == 3
    assert a["sypd"] == ap((3600 / (365 * 86400)) / (10.2 / 86400))
    assert a["bottleneck"] == "A"
    t = json.loads((tmp_path / "timeline_trace.json").read_text())
    flows = [e for e in t["traceEvents"] if e["ph"] in ("s", "f")]
    assert [(e["ph"], e["pid"], e["tid"]) for e in sorted(flows, key=lambda e: e["ph"] != "s")] == \
        [("s", 1, 0), ("f", 2, 0)]
    x = [e for e in t["traceEvents"] if e["ph"] == "X" and e["cat"] == "get"]
    assert len(x) == 1 and x[0]["ts"] == pytest.approx((0.5 + 2.5) * 1e6) and x[0]["dur"] == pytest.approx(1.2e6)
