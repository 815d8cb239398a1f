# Zoomed and level-selected output against whole-grid output (docs/performance.md, "Zoomed
# output"): end_def's set-up, the model ranks' time in write and close, bytes written. A 10-level
# float field on a 1440 x 720 lon-lat grid or on T799 (843 490 points), 6 instant records,
# serverless with 2 writers (CDF-5 through PnetCDF).
#
#   mpirun -n 4 python3 bench/io_zoom.py lonlat|t799 [DIR]      (PYTHONPATH: python/ and build/python/)
import os
import shutil
import sys
import time

from mpi4py import MPI
import numpy as np
import estuary

comm = MPI.COMM_WORLD
grid = sys.argv[1]
base = sys.argv[2] if len(sys.argv) > 2 else "io_zoom_out"
NLEV, NSTEPS = 10, 6
gen = estuary.GridGen.lonlat(1440, 720) if grid == "lonlat" else estuary.GridGen.t799()
G = gen.size
cases = {
    "whole": "",
    "box": "zoom: {lon: [-30, 45], lat: [30, 75]}, ",
    "box_levels": "zoom: {lon: [-30, 45], lat: [30, 75]}, levels: [0, 5], ",
    "box_interp": "zoom: {lon: [-30, 45], lat: [30, 75]}, interpolate_levels: {values: [15, 55, 95]}, ",
}
if grid == "lonlat":
    cases["index"] = "zoom: {i: [0, 719], j: [0, 359]}, "
part = estuary.gen.cyclic(G, comm.rank, comm.size)
g = gen.make(part)
pts = np.asarray(part.to_indices())
idx3 = (np.arange(NLEV)[:, None] * G + pts[None, :]).ravel()
d3 = estuary.Decomp.indices(NLEV * G, idx3)
vals = np.sin(idx3 * 1e-3)
levels = [10.0 * (k + 1) for k in range(NLEV)]
for name, zoom in cases.items():
    d = f"{base}/{grid}/{name}"
    if comm.rank == 0:
        shutil.rmtree(d, ignore_errors=True)
    comm.Barrier()
    yaml = (f"output:\n  writers: 2\n  directory: {d}\n  files:\n    - name: f\n      output_freq: 1h\n"
            f"      fields: [{{name: t, {zoom}precision: float}}]\n")
    out = estuary.Output.from_yaml(yaml, comm)
    out.def_grid("g", g)
    out.def_field("t", "g", d3, levels=levels)
    comm.Barrier()
    t0 = time.perf_counter()
    out.enddef()
    setup = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    for s in range(NSTEPS):
        out.write("t", 3600.0 * (s + 1), vals)
    out.close()
    st = out.stats()
    model = comm.allreduce(st["model_io_s"], op=MPI.MAX)
    nbytes = comm.allreduce(st["bytes_written"], op=MPI.SUM)
    out.free()
    if comm.rank == 0:
        print(f"{grid} {name:10s} end_def {setup:.3f} s, write+close (max over ranks) {model:.3f} s, "
              f"{nbytes / 1e6:.1f} MB, file {os.path.getsize(d + '/f.nc') / 1e6:.1f} MB", flush=True)
