#!/usr/bin/env python3
"""The coupled toy of `make demo` (examples/toy_atm_ocn.cpp) written in Python with
estuary.couple (pyOASIS's names): an atmosphere on a reduced Gaussian grid and an ocean on a
tripolar grid with land exchange two fields each way every coupling hour (configuration:
toy_atm_ocn.yaml, next to this file). Either side may run with the C++ or the Fortran toy:

    mpirun -n 4 python3 toy_atm_ocn.py [run_folder]              half the ranks each model
    mpirun -n 2 python3 toy_atm_ocn.py atmos [run_folder] : -n 2 toy_atm_ocn_f ocean [run_folder]

Same grids, partitions, physics and order of calls as the C++ toy, so that every field received
is bit for bit the one of the all-C++ run (tests/toy_mixed.py checks it). The physics is
evaluated point by point with the math module (the C library's sin and cos, as C++ and Fortran
call them; numpy's vectorised ones may round differently).
"""
import math
import os
import shutil
import sys
import time

import traceback

import numpy as np
from mpi4py import MPI

PI = math.pi  # the double nearest to pi, as C++'s constant


def sst(lon, lat, t):
    return np.array([288.0 - 30.0 * math.sin(y * PI / 180.0) * math.sin(y * PI / 180.0) +
                     2.0 * math.cos((x + t / 240.0) * PI / 180.0) for x, y in zip(lon, lat)])


def heat_flux(lon, lat, t):
    return np.array([150.0 * math.cos(y * PI / 180.0) + 40.0 * math.sin((2.0 * x - t / 120.0) * PI / 180.0)
                     for x, y in zip(lon, lat)])


def main(argv):
    global estuary, pyoasis, OASIS
    import estuary
    import estuary.couple as pyoasis
    from estuary.couple import OASIS

    world = MPI.COMM_WORLD
    args = list(argv[1:])
    role = args.pop(0) if args and args[0] in ("atmos", "ocean") else ""
    folder = os.path.abspath(args[0] if args else "estuary_demo")
    if not role:
        role = "atmos" if world.rank < max(1, world.size // 2) else "ocean"
    if world.size < 2:
        if world.rank == 0:
            print("toy_atm_ocn.py: run it on 2 or more ranks (mpirun -n 4 python3 toy_atm_ocn.py)", file=sys.stderr)
        return 2
    if world.rank == 0:
        os.makedirs(folder, exist_ok=True)
        shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "toy_atm_ocn.yaml"),
                        os.path.join(folder, "estuary.yaml"))
    world.Barrier()

    status = 0
    comp = pyoasis.Component(role, directory=folder)  # finds estuary.yaml there (or $ESTUARY_CONFIG)
    try:
        local = comp.localcomm
        atm = role == "atmos"
        # Grid and partition, as an OASIS model defines them (ig_paral arrays).
        if atm:  # apple: a contiguous range of points (whole latitude rows stay together)
            gen = estuary.GridGen.reduced_gaussian(32)
            n = gen.size
            lo, hi = local.rank * n // local.size, (local.rank + 1) * n // local.size
            part = pyoasis.ApplePartition(lo, hi - lo, global_size=n)
        else:  # box: bands of rows of the 180 x 140 grid
            gen = estuary.GridGen.tripolar(180, 140).with_land()
            n, nx, ny = gen.size, 180, 140
            j0, j1 = local.rank * ny // local.size, (local.rank + 1) * ny // local.size
            part = pyoasis.BoxPartition(j0 * nx, nx, j1 - j0, nx, global_size=n)
        grid = gen.make(part.decomp)
        comp.def_grid("rgg" if atm else "torc", part, grid)
        outs = ["HEATFLX", "FRESHW"] if atm else ["SST", "ICEFRAC"]
        ins = ["A_SST", "A_ICE"] if atm else ["O_QNS", "O_EMP"]
        out_vars = [pyoasis.Var(f, part, OASIS.OUT) for f in outs]
        in_vars = [pyoasis.Var(f, part, OASIS.IN) for f in ins]
        t0 = time.perf_counter()
        comp.enddef()
        setup_s = time.perf_counter() - t0

        dt = 1200.0 if atm else 3600.0
        runtime = comp.runtime
        lon, lat, area, valid = grid.lon, grid.lat, grid.area, grid.mask != 0
        m = grid.size
        ga, gb = np.zeros(m), np.zeros(m)
        worst, exchanges, t = 0.0, 0, 0.0
        # The fields that do not depend on time, computed once.
        b = (np.array([1e-5 * math.cos(y * PI / 90.0) for y in lat]) if atm else
             np.array([max(0.0, min(1.0, (abs(y) - 60.0) / 20.0)) for y in lat]))
        while t < runtime:
            # Receive first (the coupler returns at once between coupling times), then step, then send.
            for k, (var, dst) in enumerate(zip(in_vars, (ga, gb))):
                info = var.get(t, dst)
                if info == OASIS.Ok:
                    continue
                exchanges += 1 if k == 0 else 0
                if not atm and k == 0:  # the ocean checks that the heat flux kept its global integral
                    got = local.allreduce(math.fsum(dst[valid] * area[valid]), op=MPI.SUM)
                    sent = comp.native.last_source_integral(var.id)
                    err = abs(got - sent) / max(abs(sent), 1e-300)
                    worst = max(worst, err)
                    if local.rank == 0 and (t == 0 or math.fmod(t, 6 * 3600.0) == 0):
                        print(f"ocean  t={t:6.0f} s  got O_QNS: integral {got:.12e}, atmosphere sent {sent:.12e}, "
                              f"relative error {err:.1e}", flush=True)
            a = heat_flux(lon, lat, t) if atm else sst(lon, lat, t)
            out_vars[0].put(t, a)
            out_vars[1].put(t, b)
            t += dt
        timers = comp.timers()
        comp.terminate()
        status = 0
        if local.rank == 0:
            print(f"{role}: {n} points on {local.size} ranks (Python), set-up {setup_s:.2f} s, "
                  f"{exchanges} coupling exchanges received")
            for f in ins:
                print(f"{role}: received {f}")
            for f in outs:
                print(f"{role}: sent {f}")
            if not atm:
                print(f"ocean: worst relative conservation error of the heat flux over the run: {worst:.1e}")
            for ti in timers:
                print(f"{role}: {ti['field']}:\n        put {ti['put_s']:.3f} s  get {ti['get_s']:.3f} s "
                      f"(of which waiting {ti['wait_s']:.3f} s)  transfer+remap {ti['remap_s']:.3f} s")
            if not atm and worst > 1e-12:
                print(f"ocean: conservation error {worst:.1e} exceeds 1e-12", file=sys.stderr)
                status = 1
    except Exception as e:  # one side failing must not leave the other waiting
        comp.abort(f"toy_atm_ocn.py ({role}, rank {world.rank}): {e}")
    # Buffer-based, so that it matches the MPI_Allreduce of the C++ and Fortran toys (mpi4py's
    # lower-case allreduce of Python objects is not the same collective).
    flag = np.array([status], dtype=np.intc)
    world.Allreduce(MPI.IN_PLACE, flag, op=MPI.MAX)
    status = int(flag[0])
    if world.rank == 0:
        print(f"log and restart files in {folder}", flush=True)
    return status


if __name__ == "__main__":
    try:
        code = main(sys.argv)
    except Exception:  # before the component exists (an import, the run folder): stop every side
        traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
    sys.exit(code)
