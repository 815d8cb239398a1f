"""`estuary demo`: the coupled toy atmosphere-ocean run of `make demo`, each side in C++, Fortran or Python."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .helpers import Progress, fail, find_program, mpi_env, mpiexec


def cmd_demo(args, argv) -> int:
    toy = find_program("toy_atm_ocn", "examples", args.binary, "ESTUARY_TOY_ATM_OCN")
    if toy is None:
        return fail("toy_atm_ocn not found: build it (make build), or give --binary or $ESTUARY_TOY_ATM_OCN")
    folder = Path(args.dir).resolve()
    cmd = [mpiexec(), "-n", str(args.ranks), str(toy), str(folder)]
    if args.atmos != "cpp" or args.ocean != "cpp":  # each side in its language (MPMD launch)
        if args.ranks < 2:
            return fail("--ranks: 2 or more (half the ranks each model)")
        sides = []
        for role, lang in (("atmos", args.atmos), ("ocean", args.ocean)):
            if lang == "cpp":
                sides.append([str(toy)])
            elif lang == "fortran":
                ftoy = toy.parent / "toy_atm_ocn_f"  # next to the C++ toy, else where the finder finds it
                if not (ftoy.is_file() and os.access(ftoy, os.X_OK)):
                    ftoy = find_program("toy_atm_ocn_f", "examples", env="ESTUARY_TOY_ATM_OCN_F")
                if ftoy is None:
                    return fail("toy_atm_ocn_f not found: estuary was built without Fortran")
                sides.append([str(ftoy)])
            else:
                ptoy = find_program("toy_atm_ocn.py", "examples", executable=False)
                if ptoy is None:
                    return fail("toy_atm_ocn.py not found (examples/ of the checkout, or estuary/_bin of a wheel)")
                sides.append([sys.executable, str(ptoy)])
        na = max(1, args.ranks // 2)
        cmd = [mpiexec(), "-n", str(na), *sides[0], "atmos", str(folder), ":",
               "-n", str(args.ranks - na), *sides[1], "ocean", str(folder)]
    if args.dry_run:
        if args.json:
            print(json.dumps({"command": cmd, "dir": str(folder)}))
        else:
            print(" ".join(cmd))
        return 0
    env = mpi_env()
    if not env.get("ESTUARY_CONFIG"):  # the toys' configuration: the wheel's copy, else the checkout's
        config = find_program("toy_atm_ocn.yaml", "examples", executable=False)
        if config is not None:
            env["ESTUARY_CONFIG"] = str(config)
    t0 = time.time()
    with Progress(desc=f"estuary demo on {args.ranks} ranks"):  # shown after a few seconds
        out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE if args.json else None,
                             stderr=subprocess.STDOUT if args.json else None, text=True)
    secs = time.time() - t0
    if args.json:
        print(json.dumps({"command": cmd, "dir": str(folder), "returncode": out.returncode, "seconds": secs,
                          "output": out.stdout}))
    else:
        print(f"estuary demo: {'done' if out.returncode == 0 else 'FAILED'} in {secs:.1f} s; files in {folder}")
    return out.returncode



def add_parser(sub):
    d = sub.add_parser("demo", help="the coupled toy atmosphere-ocean run of `make demo`")
    d.add_argument("--ranks", type=int, default=4, help="MPI ranks of the coupled run")
    d.add_argument("--dir", default="estuary_demo", help="run folder (logs, restarts)")
    d.add_argument("--binary", help="toy_atm_ocn (default: $ESTUARY_TOY_ATM_OCN, else the package's own, else a build folder's examples/, else PATH; see estuary.cli.helpers.find_program)")
    d.add_argument("--atmos", choices=["cpp", "fortran", "python"], default="cpp",
                   help="the atmosphere's language (examples/toy_atm_ocn.cpp, .F90, .py)")
    d.add_argument("--ocean", choices=["cpp", "fortran", "python"], default="cpp", help="the ocean's language")
    d.add_argument("--dry-run", action="store_true", help="print the command only")
    d.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    d.set_defaults(func=cmd_demo)
    return d
