"""estuary io check: the output set-up an XIOS iodef.xml gives, as estuary reads it.

    estuary io check iodef.xml --set expname=ORCA2 --set startdate=20000101 --set enddate=20001231
                              [--context nemo] [--timestep 5400] [--skip-unsupported] [--json]

Prints each file estuary would write (its name, output frequency, format) and each variable
(its name in the file, the model field it takes data from, operation, precision, units), then
the warnings: what estuary reads but writes differently from XIOS (metadata, file layout), and
with --skip-unsupported what it leaves out (grid transformations, ...). Expressions are listed
with their `@` terms. An error (what
estuary would refuse) is printed with its file and line, and the exit code is 1. Nothing is
written; no MPI run is started (docs/io.md, "XIOS XML").
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys

from .helpers import fail


def add_parser(sub):
    io = sub.add_parser("io", help="the I/O server's configurations")
    isub = io.add_subparsers(dest="what", required=True)
    c = isub.add_parser("check", help="what an XIOS iodef.xml gives: files, variables, warnings",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("path", metavar="IODEF", help="an iodef.xml (or a file whose root is a <context>)")
    c.add_argument("--context", help="the context to read (default: nemo if there is one, else the only one)")
    c.add_argument("--timestep", type=float, default=0.0,
                   help="the model's time step in seconds, for durations in time steps (1ts); 0: none")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a value of the file names' @KEY@ templates (expname, startdate, ...); repeat")
    c.add_argument("--skip-unsupported", action="store_true",
                   help="leave out what estuary cannot write as XIOS would, with a warning, instead of failing")
    c.add_argument("--json", action="store_true", help="print the set-up as one JSON object")
    c.set_defaults(func=cmd_io_check)
    return c


def _freq(sec_months) -> str:
    seconds, months = sec_months
    if months:
        return f"{months}mo"
    if not seconds:
        return "-"
    for unit, n in (("d", 86400), ("h", 3600), ("mi", 60)):
        if seconds % n == 0:
            return f"{int(seconds // n)}{unit}"
    return f"{seconds:g}s"


def cmd_io_check(args, argv=None) -> int:
    subs = {}
    for kv in args.set:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            return fail(f"--set {kv}: write KEY=VALUE", command="estuary io check")
        subs[key] = value
    estuary = importlib.import_module("estuary")  # the native module: imported only to run
    try:
        got = estuary.io.read_xios_xml(args.path, context=args.context, timestep=args.timestep,
                                       substitutions=subs, skip_unsupported=args.skip_unsupported)
    except estuary.Error as e:
        msg = str(e)
        return fail(msg[len("estuary: "):] if msg.startswith("estuary: ") else msg, code=1, command="estuary io check")
    if args.json:
        print(json.dumps(got))
        return 0
    nvar = sum(len(f["fields"]) for f in got["files"])
    print(f"context {got['context']}: {len(got['files'])} files, {nvar} variables "
          f"(calendar {got['calendar']}, reference time {got['reference_time']})")
    for f in got["files"]:
        split = f"  split {_freq(f['split_freq'])}" if f["split_freq"][0] or f["split_freq"][1] else ""
        print(f"{f['name']}.nc  every {_freq(f['output_freq'])}{split}  {f['format']}")
        for v in f["fields"]:
            src = "" if v["source"] == v["variable"] else f" <- {v['source']}"
            if v.get("expr"):  # a derived field: its expression; `@x` terms over freq_op periods
                src = f" = {v['expr']}"
                if v["at"]:
                    src += " where " + ", ".join(f"@{n} = {op}({fld})" for n, (fld, op) in v["at"].items())
                    src += f" over {_freq(v['freq_op'])}" if v["freq_op"][0] or v["freq_op"][1] else " each step"
            extra = f"  sampling {v['sampling_freq']:g}s" if v["sampling_freq"] else ""
            extra += f"  deflate {v['deflate']}" if v["deflate"] else ""
            zoom = v.get("zoom")  # XIOS zoom_domain, zoom_axis, interpolate_axis
            if zoom:
                extra += "  zoom " + ", ".join(f"{k} [{a:g}, {b:g}]" for k, (a, b) in zoom.items())
            extra += f"  levels {v['levels']}" if v.get("levels") else ""
            extra += f"  interpolated to {v['interpolate_levels']}" if v.get("interpolate_levels") else ""
            print(f"  {v['variable']}{src}  {v['operation']} {v['precision']}  [{v['units']}]{extra}")
    if got.get("derived"):
        print("derived fields the expressions use:")
        for name, d in got["derived"].items():
            print(f"  {name} = {d['expr']}")
    if got["warnings"]:
        print(f"{len(got['warnings'])} warnings:")
        for w in got["warnings"]:
            print("  " + w)
    sys.stdout.flush()
    return 0
