"""`estuary simulate`: Zheng & Marguinaud 2018's skeletons replayed on simulated machines (SimGrid).

    estuary simulate transposition --ranks 16,64,256 --algorithm burst,bruck,ring-1,ring-4 --plot t.png
    estuary simulate halo --ranks 16,64 --width 3,10,20 --topology dragonfly --matrix halo.png
    estuary simulate allreduce --ranks 64,512 --algorithm recursive-2,recursive-8 --json
    estuary simulate coupling --ranks 16,64 --algorithm p2p,butterfly,adaptive --dst-chunk 4
    estuary simulate coupling --config namcouple --component ocn:10000:box:torc=orca025 \
                              --component atm:10000:apple:atmo=t799 --topology dragonfly

Each run (one variant at one rank count) is one call of the `bench/sim` program of the build
(found with --bench, $ESTUARY_SIM_BENCH, or build*/bench/sim of the checkout), which prints one
JSON object; the runs are independent processes, so a SimGrid abort ends one run, not the
command. Options given as comma lists (--topology, --platform, --routing, --algorithm,
--bandwidth, --latency, --width) are variants: every combination is one line of the plot
(time against ranks, as Zheng & Marguinaud 2018 Figs. 5, 9 and 10); --matrix draws the communication matrix
of one run (Fig. 9d).
"""
from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .helpers import Progress, fail, find_program

KINDS = ("transposition", "halo", "allreduce", "coupling")
DEFAULT_ALGORITHM = {"transposition": "ring-1", "halo": "", "allreduce": "recursive-2", "coupling": "p2p"}


def _fail(msg: str, code: int = 2) -> int:
    return fail(msg, code, "estuary simulate")


def _ints(text: str) -> list[int]:
    try:
        out = [int(float(x)) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--ranks {text}: not a comma list of numbers") from None
    if not out or min(out) < 1:
        raise ValueError(f"--ranks {text}: need rank counts >= 1")
    return out


def _list(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def _floats(text: str, what: str) -> list[float]:
    try:
        out = [float(x) for x in _list(text)]
    except ValueError:
        raise ValueError(f"--{what} {text}: not a comma list of numbers") from None
    if not out or min(out) <= 0:
        raise ValueError(f"--{what} {text}: need positive values")
    return out


def _algorithm_args(kind: str, algo: str) -> list[str]:
    if kind == "transposition":
        return ["--algo", algo]
    if kind == "allreduce":
        if algo == "recursive-doubling":
            return ["--k", "2"]
        if algo.startswith("recursive-") and algo[10:].isdigit() and int(algo[10:]) >= 2:
            return ["--k", algo[10:]]
        raise ValueError(f"allreduce algorithm '{algo}': use recursive-doubling or recursive-K (K >= 2)")
    if kind == "coupling":
        if algo not in ("p2p", "butterfly", "adaptive"):
            raise ValueError(f"coupling algorithm '{algo}': use p2p, butterfly or adaptive")
        return ["--algo", algo]
    if algo:
        raise ValueError("halo has one algorithm (Zheng & Marguinaud 2018 Fig. 4b): vary --width instead")
    return []


def variants(args) -> list[dict]:
    """Every combination of the list-valued options, each a dict of its settings."""
    machines = [("platform", p) for p in _list(args.platform)] or [("topology", t) for t in _list(args.topology)]
    algos = _list(args.algorithm) or [DEFAULT_ALGORITHM[args.kind]]
    widths = [int(w) for w in _list(args.width)] if args.kind == "halo" else [None]
    dims = {
        "machine": machines,
        "routing": _list(args.routing),
        "network": _list(args.network),
        "algorithm": algos,
        "bandwidth_GBps": _floats(args.bandwidth, "bandwidth"),
        "latency_ns": _floats(args.latency, "latency"),
        "width": widths,
    }
    for r in dims["routing"]:
        if r not in ("minimal", "valiant", "ugal", "ugal-l"):
            raise ValueError(f"routing '{r}': use minimal, valiant, ugal or ugal-l")
    for n in dims["network"]:
        if n not in ("cm02", "ib"):
            raise ValueError(f"network '{n}': use cm02 or ib")
    for kind, name in machines:
        if kind == "topology" and name not in ("torus", "fattree", "dragonfly", "switch"):
            raise ValueError(f"topology '{name}': use torus, fattree, dragonfly or switch")
    for a in algos:
        _algorithm_args(args.kind, a)
    varied = [k for k, v in dims.items() if len(v) > 1]
    out = []
    for combo in itertools.product(*dims.values()):
        v = dict(zip(dims.keys(), combo))
        (mkind, mname) = v.pop("machine")
        v[mkind] = mname
        parts = []
        for k in varied:
            if k == "machine":
                parts.append(mname)
            elif k == "bandwidth_GBps":
                parts.append(f"{v[k]:g} GB/s")
            elif k == "latency_ns":
                parts.append(f"{v[k]:g} ns")
            elif k == "width":
                parts.append(f"halo {v[k]}")
            else:
                parts.append(str(v[k]))
        v["label"] = ", ".join(parts) or (v["algorithm"] or args.kind)
        out.append(v)
    return out


def bench_command(bench: Path, args, v: dict, ranks: int, matrix_bins: int = 0) -> list[str]:
    cmd = [str(bench), "--pattern", args.kind, "--ranks", str(ranks), "--routing", v["routing"],
           "--bw", repr(v["bandwidth_GBps"]), "--lat", repr(v["latency_ns"]), "--network", v["network"]]
    cmd += ["--platform", v["platform"]] if "platform" in v else ["--topology", v["topology"]]
    cmd += _algorithm_args(args.kind, v["algorithm"])
    if v["width"] is not None:
        cmd += ["--width", str(v["width"])]
    for opt in ("nx", "ny", "nz", "transpositions", "doubles", "repeat", "points", "dst_chunk", "fields", "src_kind",
                "dst_kind"):
        val = getattr(args, opt, None)
        if val is not None:
            cmd += ["--" + opt.replace("_", "-"), str(val)]
    if args.overhead:
        cmd += ["--overhead", repr(args.overhead)]
    if args.ranks_per_host > 1:
        cmd += ["--ranks-per-host", str(args.ranks_per_host)]
    if args.crosstraffic:
        cmd += ["--crosstraffic"]
    if matrix_bins > 0:
        cmd += ["--matrix-bins", str(matrix_bins)]
    return cmd


def _run_ticking(cmd: list[str], prog: Progress, what: str, limit_s: float = 0) -> subprocess.CompletedProcess:
    """Runs cmd, redrawing the progress bar (with the run's elapsed time) while it runs. Past
    limit_s seconds (0: none) the run and its simulating child (bench/sim forks one, in the same
    session) are killed and the result has no stdout and a stderr saying so."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        t0 = time.time()
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if limit_s and time.time() - t0 > limit_s:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.communicate()
                    return subprocess.CompletedProcess(cmd, -signal.SIGKILL, "",
                                                       f"stopped at the time limit of {limit_s:g} s (--time-limit)")
                prog.update(0, note=f"{what} {time.time() - t0:.0f} s")
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def plot_times(records: list[dict], path: str, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    lines: dict[str, list[tuple[int, float]]] = {}
    for r in records:
        if "simulated_s" in r:
            lines.setdefault(r["variant"], []).append((r["ranks"], r["simulated_s"]))
    for label, pts in lines.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    xs = sorted({p[0] for pts in lines.values() for p in pts})
    if xs:
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("number of MPI processes")
    ax.set_ylabel("communication time (s, simulated)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    if lines:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_matrix(rec: dict, path: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import LogNorm

    m = np.array(rec["matrix_bytes"], dtype=float)
    fig, ax = plt.subplots(figsize=(5.6, 4.8))
    shown = np.ma.masked_where(m <= 0, m)
    vmin = m[m > 0].min() if (m > 0).any() else 1.0
    im = ax.imshow(shown, origin="upper", interpolation="nearest", cmap="plasma",
                   norm=LogNorm(vmin=vmin, vmax=max(m.max(), vmin * 10)),
                   extent=(0, rec["ranks"], rec["ranks"], 0))
    fig.colorbar(im, ax=ax, label="bytes sent (all stages)")
    ax.set_xlabel("receiving rank")
    ax.set_ylabel("sending rank")
    ax.set_title(f"{rec.get('pattern', '')}, {rec['ranks']} ranks", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def config_command(bench: Path, args, v: dict) -> list[str]:
    """bench/sim --config for one machine variant; every algorithm and rank count in one run (the
    weights are made once)."""
    cmd = [str(bench), "--config", str(Path(args.config).resolve()), "--routing", v["routing"],
           "--bw", repr(v["bandwidth_GBps"]), "--lat", repr(v["latency_ns"]), "--network", v["network"],
           "--algo", args.algorithm or "p2p,butterfly", "--locations", args.locations,
           "--rundir", str(Path(args.rundir).resolve())]
    cmd += ["--platform", v["platform"]] if "platform" in v else ["--topology", v["topology"]]
    for c in args.component:
        cmd += ["--component", c]
    for g in args.grid:
        cmd += ["--grid", g]
    if args.workdir:
        cmd += ["--workdir", str(Path(args.workdir).resolve())]
    if args.ranks:
        cmd += ["--total-ranks", ",".join(str(r) for r in _ints(args.ranks))]
    if args.overhead:
        cmd += ["--overhead", repr(args.overhead)]
    if args.ranks_per_host > 1:
        cmd += ["--ranks-per-host", str(args.ranks_per_host)]
    if args.crosstraffic:
        cmd += ["--crosstraffic"]
    if args.matrix:
        cmd += ["--matrix-bins", str(args.matrix_bins)]
    return cmd


def _short(label: str) -> str:
    return label.split(" (")[0]


def cmd_simulate_config(args, bench: Path) -> int:
    """`estuary simulate coupling --config`: per coupling of the set-up, the predicted time of one
    exchange for each mapping location and algorithm, and the best."""
    if not args.component:
        return _fail("--config needs the components: --component NAME:RANKS:KIND[:GRID[=RECIPE],...] once for each")
    if not Path(args.config).is_file():
        return _fail(f"configuration file {args.config} not found")
    for loc in _list(args.locations):
        if loc not in ("src", "dst"):
            return _fail(f"--locations {args.locations}: use src, dst or src,dst")
    for a in _list(args.algorithm):
        if a not in ("p2p", "butterfly", "adaptive"):
            return _fail(f"coupling algorithm '{a}': use p2p, butterfly or adaptive")
    temporary = args.workdir is None
    if temporary:
        import tempfile
        args.workdir = tempfile.mkdtemp(prefix="estuary_simulate_")
    try:
        return _simulate_config(args, bench)
    finally:
        if temporary:
            import shutil
            shutil.rmtree(args.workdir, ignore_errors=True)


def _simulate_config(args, bench: Path) -> int:
    try:
        algorithms, args.algorithm = args.algorithm, None  # every algorithm in each bench run, not a variant
        vs = variants(args)
        args.algorithm = algorithms
        if args.ranks:
            _ints(args.ranks)
    except ValueError as e:
        return _fail(str(e))
    for v in vs:
        if v["label"] == DEFAULT_ALGORITHM["coupling"]:  # nothing varied: name the machine
            v["label"] = v.get("topology") or v.get("platform")
    prog = Progress(total=len(vs), desc="estuary simulate coupling --config", enabled=not args.no_progress)
    records, failures = [], 0
    for v in vs:
        t0 = time.time()
        out = _run_ticking(config_command(bench, args, v), prog, f"{v['label']}: running", args.time_limit)
        got = []
        for line in out.stdout.splitlines():
            try:
                got.append(json.loads(line))
            except ValueError:
                pass
        if not got:
            got = [{"error": (out.stderr.strip() or f"bench/sim exited with {out.returncode} and no JSON")[-2000:]}]
        for rec in got:
            rec = {"command": "simulate", "kind": "coupling", "variant": v["label"], **rec}
            rec.pop("bench", None)
            rec["wall_s"] = time.time() - t0  # the whole bench run: weights, flows, every replay
            if "error" in rec:
                failures += 1
                print(f"\nestuary simulate: {rec.get('coupling', args.config)} ({v['label']}): {rec['error']}",
                      file=sys.stderr)
            records.append(rec)
            if args.json:
                print(json.dumps(rec), flush=True)
        prog.update(1, note=v["label"])
    prog.close()
    ok = [r for r in records if "options" in r]
    if not args.json:
        for r in ok:
            print(f"coupling {r['coupling']}: {r['src_component']} ({r['src_ranks']} ranks, {r['src_grid']['n']} points) "
                  f"-> {r['dst_component']} ({r['dst_ranks']} ranks, {r['dst_grid']['n']} points), {r['weights']}, "
                  f"{r['links']} links, {r['fields']} field(s); {r['platform']}"
                  + (f", {r['ranks_per_host']} ranks a host" if r.get("ranks_per_host", 1) > 1 else ""))
            print(f"  {'location':<9} {'order':<5} {'algorithm':<10} {'simulated (s)':>14} {'alpha-beta (s)':>14} "
                  f"{'stages':>6} {'messages':>9} {'bytes':>12}")
            best = r["best"]
            for o in r["options"]:
                mark = "  <- best" if (o["location"], o["algorithm"]) == (best["location"], best["algorithm"]) else ""
                print(f"  {o['location']:<9} {o['order']:<5} {o['algorithm']:<10} {o['simulated_s']:>14.6g} "
                      f"{o['alpha_beta_s']:>14.6g} {o['stages']:>6} {o['messages']:>9} {o['bytes']:>12}{mark}")
            print(f"  virtual Remap (remap_flows) {r['remap_flows_s']:.2f} s, peak memory {r['host_peak_rss_mb']:.0f} MB"
                  f" (simulation {max(o['peak_rss_mb'] for o in r['options']):.0f} MB)\n")
    if args.plot and ok:
        flat = [{"variant": f"{_short(r['coupling'])}, {o['location']} {o['algorithm']}" +
                 (f", {r['variant']}" if len(vs) > 1 else ""), "ranks": r["ranks"], "simulated_s": o["simulated_s"]}
                for r in ok for o in r["options"]]
        plot_times(flat, args.plot, f"coupling --config {Path(args.config).name}")
        if not args.json:
            print(f"plot: {Path(args.plot).resolve()}")
    if args.matrix:
        drawn = 0
        for k, r in enumerate(ok):
            if "matrix_bytes" not in r or r["ranks"] != min(x["ranks"] for x in ok):
                continue
            loc = r["best"]["location"]
            p = Path(args.matrix)
            name = str(p.with_name(f"{p.stem}_{k}_{loc}{p.suffix or '.png'}"))
            plot_matrix({"matrix_bytes": r["matrix_bytes"][loc], "ranks": r["ranks"],
                         "pattern": f"{_short(r['coupling'])}, mapping at {loc}"}, name)
            drawn += 1
            if not args.json:
                print(f"matrix: {Path(name).resolve()}")
        if not drawn:
            print("estuary simulate: no communication matrix (no coupling was simulated)", file=sys.stderr)
            failures += 1
    return 1 if failures else 0


def cmd_simulate(args, argv) -> int:
    bench = find_program("sim", "bench", args.bench, "ESTUARY_SIM_BENCH")
    if bench is None:
        return _fail("the bench/sim program was not found: build it (ninja -C build sim), or give --bench or "
                     "$ESTUARY_SIM_BENCH")
    if args.ranks_per_host < 1:
        return _fail(f"--ranks-per-host {args.ranks_per_host}: give 1 or more ranks a host")
    if args.config:
        if args.kind != "coupling":
            return _fail("--config is for `estuary simulate coupling`")
        return cmd_simulate_config(args, bench)
    if args.component:
        return _fail("--component needs --config (the coupled set-up)")
    args.ranks = args.ranks or "16,64"
    try:
        ranks_list = _ints(args.ranks)
        vs = variants(args)
    except ValueError as e:
        return _fail(str(e))
    matrix_ranks = args.matrix_ranks or min(ranks_list)
    if args.matrix and matrix_ranks not in ranks_list:
        ranks_list = sorted(set(ranks_list) | {matrix_ranks})
    runs = [(v, r) for v in vs for r in ranks_list]
    prog = Progress(total=len(runs), desc=f"estuary simulate {args.kind}", enabled=not args.no_progress)
    prog.update(0, note=f"{len(vs)} variant(s) x {len(ranks_list)} rank count(s) with {bench}")
    records, failures, matrix_rec = [], 0, None
    for v, ranks in runs:
        want_matrix = bool(args.matrix) and matrix_rec is None and ranks == matrix_ranks
        cmd = bench_command(bench, args, v, ranks, args.matrix_bins if want_matrix else 0)
        t0 = time.time()
        out = _run_ticking(cmd, prog, f"{args.kind} {ranks} ranks, {v['label']}: running", args.time_limit)
        rec = {"command": "simulate", "kind": args.kind, "variant": v["label"], "ranks": ranks}
        rec.update({k: v[k] for k in ("topology", "platform", "routing", "network", "algorithm", "bandwidth_GBps", "latency_ns",
                                      "width") if k in v and v[k] is not None})
        try:
            rec.update(json.loads(out.stdout.strip().splitlines()[-1]))
        except (IndexError, ValueError):
            rec["error"] = (out.stderr.strip() or f"bench/sim exited with {out.returncode} and no JSON")[-2000:]
        if "platform" in v:  # bench/sim's "platform" is the machine's description; keep the name too
            rec["platform_name"] = v["platform"]
        rec["wall_s"] = time.time() - t0
        rec["ranks"] = ranks
        rec.pop("bench", None)
        if "error" in rec:
            failures += 1
            print(f"\nestuary simulate: {args.kind} on {ranks} ranks ({v['label']}): {rec['error']}", file=sys.stderr)
        if want_matrix and "matrix_bytes" in rec:
            matrix_rec = rec
        records.append(rec)
        if args.json:
            print(json.dumps(rec), flush=True)
        prog.update(1, note=f"{ranks} ranks, {v['label']}: "
                    + (f"{rec['simulated_s']:.3g} s simulated" if "simulated_s" in rec else "FAILED"))
    prog.close()
    if not args.json:
        print(f"{'variant':<32} {'ranks':>8} {'simulated (s)':>14} {'messages':>10} {'wall (s)':>9} {'RSS (MB)':>9}")
        for r in records:
            if "simulated_s" in r:
                print(f"{r['variant'][:32]:<32} {r['ranks']:>8} {r['simulated_s']:>14.6g} {r['messages']:>10} "
                      f"{r['wall_s']:>9.2f} {r['peak_rss_mb']:>9.0f}")
            else:
                print(f"{r['variant'][:32]:<32} {r['ranks']:>8} {'error':>14}")
    if args.plot:
        machines = {v.get("topology") or v.get("platform") for v in vs}
        title = args.kind + (f", {machines.pop()}" if len(machines) == 1 else "")
        plot_times(records, args.plot, title)
        if not args.json:
            print(f"plot: {Path(args.plot).resolve()}")
    if args.matrix:
        if matrix_rec is None:
            print(f"estuary simulate: no communication matrix (the run on {matrix_ranks} ranks failed)", file=sys.stderr)
            failures += 1
        else:
            plot_matrix(matrix_rec, args.matrix)
            if not args.json:
                print(f"matrix: {Path(args.matrix).resolve()}")
    return 1 if failures else 0


def add_parser(sub):
    """Adds `simulate` to the command line's subparsers."""
    s = sub.add_parser("simulate", help="replay Zheng & Marguinaud 2018's skeletons on simulated machines (SimGrid)",
                       description=__doc__.split("\n\n")[0])
    s.add_argument("kind", choices=KINDS, help="the exchange to simulate: a skeleton of Zheng & Marguinaud (2018), or a coupling")
    s.add_argument("--ranks", help="comma list of rank counts (1e3 allowed; default 16,64); with --config the "
                                   "total ranks, the components scaled (default: their own counts)")
    s.add_argument("--topology", default="dragonfly",
                   help="comma list of torus, fattree, dragonfly, switch (a machine just large enough per rank count)")
    s.add_argument("--platform", help="comma list of Zheng & Marguinaud 2018 Table 1 machines (torus-M, dragonfly-MM, ...) "
                                      "instead of --topology")
    s.add_argument("--routing", default="minimal", help="comma list of minimal, valiant, ugal (global knowledge), ugal-l (SST/macro's local UGAL)")
    s.add_argument("--network", default="cm02",
                   help="comma list of network models: cm02 (max-min fair sharing of links) or ib (SimGrid's "
                        "InfiniBand model: flows also slowed by the flows in flight at their nodes)")
    s.add_argument("--algorithm", help="comma list: transposition burst, bruck, ring-K; allreduce "
                                       "recursive-doubling, recursive-K; coupling p2p, butterfly, adaptive")
    s.add_argument("--bandwidth", default="12.5", help="link bandwidth, GB/s (comma list)")
    s.add_argument("--latency", default="100", help="link latency, ns (comma list)")
    s.add_argument("--width", default="20", help="halo width in points (comma list)")
    s.add_argument("--nx", type=int, help="grid points along x (default: the paper's grid)")
    s.add_argument("--ny", type=int, help="grid points along y (default: the paper's grid)")
    s.add_argument("--nz", type=int, help="grid (default Zheng & Marguinaud 2018 Table 3: 28800 x 14400 x 256)")
    s.add_argument("--transpositions", type=int, help="transposition: 1 to 3 slab transpositions (3)")
    s.add_argument("--doubles", type=int, help="allreduce: doubles per allreduce (3)")
    s.add_argument("--repeat", type=int, help="allreduce: allreduces (50: GCR with N = 25)")
    s.add_argument("--points", type=int, help="coupling: points of the coupled field (1e8)")
    s.add_argument("--dst-chunk", type=int, help="coupling: 0 block -> block; c: destination points dealt in "
                                                 "round-robin chunks of c (every pair of ranks exchanges)")
    s.add_argument("--fields", type=int, help="coupling: fields moved at once (1)")
    s.add_argument("--src-kind", help="coupling: the sources' decomposition (block, cyclic, random, rows2d, cols2d); "
                                      "with --dst-kind, the plan the ranks would build, made in one process "
                                      "(sim::plan_flows) and replayed with the engine's schedules")
    s.add_argument("--dst-kind", help="coupling: the destinations' decomposition (as --src-kind)")
    g = s.add_argument_group("a coupled set-up's own exchanges (coupling --config)")
    g.add_argument("--config", help="namcouple or estuary YAML: each coupling's Remap exchanges (its grids, weights "
                                    "and the components' partitions, made without the ranks) for mapping at src and "
                                    "dst, with --algorithm p2p,butterfly,adaptive (default p2p,butterfly)")
    g.add_argument("--component", action="append", default=[], metavar="NAME:RANKS:KIND[:GRID[=RECIPE],...]",
                   help="a component: its ranks, partition kind (serial, apple, box, orange, points) and grids, "
                        "each with an `estuary weights` recipe where the weights are generated (torc=orca025)")
    g.add_argument("--grid", action="append", default=[], metavar="NAME=RECIPE", help="a grid's recipe")
    g.add_argument("--rundir", default=".", help="where the configuration's weight files and grids.nc are (.)")
    g.add_argument("--workdir", help="where generated weights are cached (default: a temporary folder)")
    g.add_argument("--locations", default="src,dst", help="mapping locations to compare (src,dst)")
    s.add_argument("--overhead", type=float, default=0.0,
                   help="CPU time per message sent or received, ns (LogP's o; 0: the network alone)")
    s.add_argument("--ranks-per-host", type=int, default=1, metavar="K",
                   help="K ranks a simulated host (a node with one network port): one flow per host pair and stage, "
                        "messages within a host free, the machine sized for the hosts; what makes 10^4-rank "
                        "replays fit (1: a host per rank, exact)")
    s.add_argument("--crosstraffic", action="store_true", help="SimGrid network/crosstraffic on")
    s.add_argument("--time-limit", type=float, default=0,
                   help="seconds of wall time a run may take before it is stopped and reported as failed (0: none)")
    s.add_argument("--json", action="store_true", help="one JSON object a run on stdout")
    s.add_argument("--plot", help="PNG: simulated time against ranks, one line per variant")
    s.add_argument("--matrix", help="PNG: bytes sent between ranks (Fig. 9d) of the first variant")
    s.add_argument("--matrix-ranks", type=int, help="rank count of the --matrix run (default: the smallest)")
    s.add_argument("--matrix-bins", type=int, default=256, help="at most this many rank blocks a side (256)")
    s.add_argument("--bench", help="the bench/sim program (default $ESTUARY_SIM_BENCH, else the package's own, else "
                                  "bench/sim of a build folder, else PATH)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    s.set_defaults(func=cmd_simulate)
    return s
