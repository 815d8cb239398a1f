"""`estuary bench NAME [--ranks 1,2,4] [--out FILE] [--json] [--binary PATH] [--timeout S] [ARGS...]`

Runs the benchmark program bench/NAME of the build tree (redist, allreduce, globalsum, remap,
io, pingpong, sim) under mpirun once for each rank count of --ranks, passes it every other
argument (put them after `--` when one is named like an option of this command), collects the
JSON objects it prints one a line, shows a progress bar while it runs, prints a table and saves
the lines to --out (default bench_NAME.jsonl). With --json it prints one JSON object: the
command lines, the records and the file written.

The program is --binary, else $ESTUARY_BENCH_DIR/NAME, else the package's own (a wheel's), else
bench/NAME of a build folder of the checkout or the working directory, else PATH
(estuary.cli.helpers.find_program).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from .helpers import Progress, fail, find_program, mpi_env, mpiexec

BENCHES = ("redist", "allreduce", "globalsum", "remap", "weights", "io", "pingpong", "sim")
# Columns that say what was measured: shown first when they vary between records.
_WHAT = ("algorithm", "choice", "k", "ranks", "n", "count", "bytes", "fields", "src", "dst", "op", "type", "mode",
         "writers", "method", "grid", "size", "platform", "topology")
# Columns of results: shown when present.
_RESULT_SUFFIXES = ("_s_min", "_s_median", "gbps", "setup_s", "_s")


def add_parser(sub):
    b = sub.add_parser("bench", help="run a benchmark program of bench/ under mpirun, table + JSON lines",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("name", help="benchmark: " + ", ".join(BENCHES))
    b.add_argument("rest", nargs=argparse.REMAINDER, help="--ranks LIST, --out FILE, --json, --binary PATH, "
                   "--timeout S, then the benchmark's own arguments")
    b.set_defaults(func=cmd_bench)
    return b


def _own_options(rest):
    p = argparse.ArgumentParser(prog="estuary bench NAME", add_help=False)
    p.add_argument("--ranks", default="2", help="comma-separated rank counts, one run each")
    p.add_argument("--out", help="JSON lines file (default bench_NAME.jsonl)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--binary")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds a run may take")
    if "--" in rest:
        i = rest.index("--")
        own, extra = p.parse_known_args(rest[:i])
        return own, extra + rest[i + 1:]
    return p.parse_known_args(rest)


def _ranks(text: str) -> list[int]:
    try:
        r = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        r = []
    if not r or min(r) < 1:
        raise ValueError(f"--ranks {text!r}: give positive rank counts, comma-separated (1,2,4)")
    return r


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def table(records: list[dict]) -> str:
    """A plain-text table: the columns that vary (what was run), then the result columns."""
    if not records:
        return "(no records)"
    keys = []
    for r in records:
        for k in r:
            if k not in keys:
                keys.append(k)
    varying = [k for k in _WHAT if k in keys and len({json.dumps(r.get(k)) for r in records}) > 1]
    if "ranks" in keys and "ranks" not in varying:
        varying.insert(0, "ranks")
    results = []
    for suffix in _RESULT_SUFFIXES:  # times and bandwidths first, other durations last
        results += [k for k in keys if k.endswith(suffix) and k not in varying and k not in results]
    results = results[:6]
    cols = (["bench"] if len({r.get("bench") for r in records}) > 1 else []) + varying + results
    rows = [[_fmt(r.get(c, "")) for c in cols] for r in records]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def cmd_bench(args, argv) -> int:
    own, extra = _own_options(args.rest)
    name = args.name
    try:
        ranks = _ranks(own.ranks)
    except ValueError as e:
        return fail(str(e))
    prog = find_program(name, "bench", own.binary, "ESTUARY_BENCH_DIR")
    if prog is None:
        return fail(f"benchmark \"{name}\" not found (bench/{name} of the build tree; known: {', '.join(BENCHES)}); "
                     "build it (make build), or give --binary or $ESTUARY_BENCH_DIR")
    out_path = Path(own.out or f"bench_{name}.jsonl").resolve()
    records, commands, runs = [], [], []
    t_all = time.time()
    with Progress(total=len(ranks), desc=f"estuary bench {name}") as bar:
        for p in ranks:
            cmd = [mpiexec(), "-n", str(p), str(prog), *extra]
            commands.append(cmd)
            bar.update(0, note=f"{p} ranks")
            t0 = time.time()
            proc = subprocess.Popen(cmd, env=mpi_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            got, other = [], []
            try:
                for line in proc.stdout:  # one JSON object a line; anything else is kept as text
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        other.append(line)
                        continue
                    if isinstance(rec, dict):
                        got.append(rec)
                        bar.update(0, note=f"{p} ranks, {len(got)} records")
                    if time.time() - t0 > own.timeout:
                        proc.kill()
                        break
                err = proc.stderr.read()
                code = proc.wait(timeout=max(1.0, own.timeout - (time.time() - t0)))
            except subprocess.TimeoutExpired:
                proc.kill()
                err, code = f"killed after {own.timeout:.0f} s", -9
            secs = time.time() - t0
            runs.append({"ranks": p, "command": cmd, "returncode": code, "seconds": secs, "records": len(got)})
            records += got
            bar.update(1)
            if code != 0:
                if not own.json:
                    print("\n".join(other), file=sys.stderr)
                print(f"estuary bench: {' '.join(cmd)} failed (exit {code}):\n{err.strip()}", file=sys.stderr)
                break
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    failed = any(r["returncode"] != 0 for r in runs)
    if own.json:
        print(json.dumps({"bench": name, "program": str(prog), "runs": runs, "records": records, "out": str(out_path),
                          "seconds": time.time() - t_all, "ok": not failed}))
    else:
        print(table(records))
        print(f"{len(records)} records from {len(runs)} runs in {time.time() - t_all:.1f} s, saved to {out_path}")
    return 1 if failed else 0
