"""The `estuary` command line.

    estuary demo [--ranks 4] [--dir DIR] [--binary PATH] [--dry-run] [--json]
    estuary weights --src lonlat:12x6 --dst gaussian:16x8 [--method distance|bilinear|bicubic|conservative|conservative2]
                    [--neighbors 4] [--land] --out w.nc [--ranks P] [--json]
                    (--src/--dst also FILE[:GRID]: a SCRIP grid file, or an OASIS grids.nc with masks.nc
                     and areas.nc next to it, GRID its grid prefix)
    estuary inspect plan --src block --dst cyclic --n N --ranks P [--algorithm p2p] [--json]
    estuary inspect schedule --src block --dst cyclic --n N --ranks P [--algorithm butterfly]
                             [--png F.png | --no-png] [--json]
    estuary inspect plan|schedule --config namcouple --component atmos:3:apple:lmdz --component ocean:2:box:torc
                             [--grid torc=lonlat:12x6] [--png F.png | --no-png] [--json]
    estuary bench NAME [--ranks 1,2,4] [--out F.jsonl] [--json] [--binary PATH] [BENCH ARGS...]
    estuary simulate transposition|halo|allreduce|coupling --ranks 16,64 [--topology T] [--routing R]
                     [--algorithm A] [--bandwidth GB/s] [--latency ns] [--json] [--plot F.png] [--matrix F.png]
    estuary timeline RUN_DIR [--out DIR] [--json] [--no-png] [--no-trace] [--all-calls]
    estuary io check IODEF [--set KEY=VALUE ...] [--context C] [--timestep S] [--skip-unsupported] [--json]

Commands that need P ranks run their work under `mpirun -n P` (started here when this process
is not already an MPI rank), on MPI_COMM_WORLD of that run; rank 0 prints. This process does
not import mpi4py unless it is itself an MPI rank, so starting mpirun from it is safe.

The package: this module holds the parser and main(); each command is a module of its own
(demo, weights, inspect_plan, inspect_schedule with inspect_config and schedule_report, bench,
simulate, timeline, io_check) with add_parser(sub) and its cmd_* function; helpers holds what they share
(the MPI launch, error messages, the one program finder and the one progress bar). The modules
import helpers and one another at their top, without a cycle (tests/test_cli_imports.py).
"""
from __future__ import annotations

import argparse
import sys

from . import bench, demo, inspect_plan, inspect_schedule, io_check, simulate, timeline, weights

# ---- the parser ----

class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default (unless it says it already, or there is none to
    say: a flag, or None); descriptions and epilogs keep their line breaks, so examples read as
    examples."""

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if ("default" in text or d is None or d is False or d is argparse.SUPPRESS
                or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
            return text
        shown = ",".join(map(str, d)) if isinstance(d, (list, tuple)) else str(d)
        if "(" + shown + ")" in text or "(" + shown + ":" in text:  # said in the text's own words
            return text
        return (text + " " if text else "") + "(default: " + shown.replace("%", "%%") + ")"


def _all_parsers(p: argparse.ArgumentParser):
    """p and every sub-command's parser, depth first."""
    yield p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                yield from _all_parsers(sp)


def parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = argparse.ArgumentParser(prog="estuary", description="estuary: MPI redistribution, remapping and coupling")
    p.add_argument("--version", action="version", version="estuary " + __version__)
    sub = p.add_subparsers(dest="command", required=True)

    demo.add_parser(sub)
    weights.add_parser(sub)
    i = sub.add_parser("inspect", help="look at plans and schedules")
    isub = i.add_subparsers(dest="what", required=True)
    inspect_plan.add_parser(isub)
    inspect_schedule.add_parser(isub)
    bench.add_parser(sub)
    simulate.add_parser(sub)
    timeline.add_parser(sub)
    io_check.add_parser(sub)
    for q in _all_parsers(p):
        q.formatter_class = HelpFormatter
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    return args.func(args, argv)
