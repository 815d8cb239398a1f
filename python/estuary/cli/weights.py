"""`estuary weights`: a SCRIP weight file generated between two grids (recipes or grid files)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .helpers import needs_ranks


GRID_HELP = ("grid recipes: lonlat:NLONxNLAT, gaussian:NLONxNLAT, reduced_gaussian:N, tripolar:NXxNY, "
             "cubed_sphere:N, t799, orca025 (estuary.GridGen.from_name); or grid files FILE[:GRID]: a SCRIP grid "
             "file, or an OASIS grids.nc (masks.nc and areas.nc next to it are read too; GRID: the grid prefix, "
             "needed when the file holds several grids)")


def extrapolation(args):
    """--extrapolate, else REMAP_EXTRAPOLATE (on/off, as CDO reads it), else None: CDO's default."""
    import estuary
    value = args.extrapolate or os.environ.get("REMAP_EXTRAPOLATE", "").strip().lower()
    if value in ("on", "off"):
        return value == "on"
    if value:
        raise estuary.Error(f"REMAP_EXTRAPOLATE={value!r}: CDO takes on or off", "estuary weights")
    return None


def grid_gen(spec: str, land: bool = False):
    """An estuary.GridGen from a recipe such as lonlat:12x6: the core reads the name
    (GridGen::from_name); --land adds the analytic land mask."""
    import estuary

    g = estuary.GridGen.from_name(spec)
    return g.with_land() if land else g


class FileGrid:
    """A grid file as `estuary weights` uses a recipe: its size, and any rank's share (make)."""

    def __init__(self, spec: str, path: str, grid: str, comm, corners: bool):
        import estuary

        self.spec, self.path, self.comm, self.corners = spec, path, comm, corners
        self.info = estuary.grid_file_info(path, grid)
        self.size = self.info["size"]
        if corners and not self.info["ncorner"]:
            raise estuary.Error(f"estuary: the grid file {spec} has no cell corners, which the conservative "
                                "methods need")

    def make(self, part):
        import estuary

        return estuary.read_grid_file(self.path, self.info["name"], part, self.comm, corners=self.corners)


def grid_source(spec: str, land: bool, comm, corners: bool):
    """A GridGen for a recipe, a FileGrid for FILE or FILE:GRID (a file that exists)."""
    import estuary

    path, grid = spec, ""
    if not os.path.isfile(path) and ":" in spec:
        head, _, tail = spec.rpartition(":")
        if os.path.isfile(head):
            path, grid = head, tail
    if not os.path.isfile(path):
        return grid_gen(spec, land)
    if land:
        raise estuary.Error(f"estuary: --land applies to grid recipes, not to the grid file {spec}")
    return FileGrid(spec, path, grid, comm, corners)


def stack_needs_corners(text: str) -> bool:
    """Whether a stack's stages need cell corners (conservative, creep on an unstructured grid)."""
    names = [part.split()[0].lower() for part in text.split("|") if part.split()]
    return any(n in ("conservative", "conserv", "creep") for n in names)


def cmd_weights(args, argv) -> int:
    code = needs_ranks(args, argv)
    if code is not None:
        return code
    from mpi4py import MPI

    import estuary

    comm = MPI.COMM_WORLD
    t0 = MPI.Wtime()
    try:
        corners = args.method.startswith("conservative") or (args.method == "stack" and stack_needs_corners(args.stack))
        if args.method == "stack" and not args.stack:
            raise estuary.Error("--method stack needs --stack \"stage | stage ...\"", "estuary weights")
        src = grid_source(args.src, args.land, comm, corners)
        dst = grid_source(args.dst, args.land, comm, corners)
        dpart = estuary.gen.block(dst.size, comm.rank, comm.size)
        spart = estuary.gen.block(src.size, comm.rank, comm.size)
        dgrid = dst.make(dpart)
        sgrid = src.make(spart)
        # A recipe builds any source point where it is needed; a file's grid is read in shares.
        sarg = sgrid if isinstance(src, FileGrid) else src
        norm, frac, attrs = "none", None, {}
        if args.method == "distance":
            rows, cols, w = estuary.distance_weights(sarg, dgrid, comm, neighbors=args.neighbors)
            method = "Distance weighted avg of nearest neighbors"
        elif args.method == "bilinear":
            rows, cols, w = estuary.bilinear_weights(sarg, dgrid, comm, extrapolate=extrapolation(args))
            method = "Bilinear remapping"
        elif args.method == "bicubic":  # CDO's genbic: 4 weights a link (value, 3 gradients)
            (rows, cols, w), columns, _ = estuary.bicubic_weights(sgrid, dgrid, comm, extrapolate=extrapolation(args))
            method = "Bicubic remapping"
        elif args.method == "stack":  # estuary's interpolation stack: one matrix, the fixed value as an attribute
            (rows, cols, w), fixed, _, text = estuary.stack_weights(sgrid, dgrid, comm, args.stack)
            method = ""  # no CDO method applies a stack's matrix as it is
            if fixed is not None:
                attrs = {"estuary_fixed_value": repr(float(fixed))}
        else:  # conservative: first or second order, CDO's normalisation names
            order = 2 if args.method == "conservative2" else 1
            rows, cols, w, frac, _ = estuary.conservative_weights(sgrid, dgrid, comm, order=order,
                                                                  normalization=args.normalization)
            method = "Conservative remapping"
            norm = args.normalization
        extra = {"columns": columns.ravel(), "num_wgts": 4} if args.method == "bicubic" else {}
        if attrs:
            extra["attributes"] = attrs
        estuary.write_weights(args.out, rows, cols, w, src.size, dst.size, comm, map_method=method,
                              src_grid=sgrid, dst_grid=dgrid, normalization=norm, dst_frac=frac, **extra)
    except estuary.Error as e:
        if comm.rank == 0:
            print(str(e), file=sys.stderr)
        return 1
    links = comm.allreduce(len(rows))
    secs = MPI.Wtime() - t0
    if comm.rank == 0:
        rec = {"file": str(Path(args.out).resolve()), "method": args.method, "src": args.src, "dst": args.dst,
               "src_size": src.size, "dst_size": dst.size, "links": links, "ranks": comm.size, "seconds": secs}
        if args.json:
            print(json.dumps(rec))
        else:
            print(f"{rec['file']}: {links} links, {args.src} ({src.size} points) -> {args.dst} "
                  f"({dst.size} points), {args.method}, {comm.size} ranks, {secs:.2f} s")
    return 0



def add_parser(sub):
    w = sub.add_parser("weights", help="generate a SCRIP weight file", epilog=GRID_HELP)
    w.add_argument("--src", required=True, help="source grid: a recipe, or FILE[:GRID] (SCRIP or OASIS grids.nc)")
    w.add_argument("--dst", required=True, help="destination grid: a recipe, or FILE[:GRID]")
    w.add_argument("--method", choices=["distance", "bilinear", "bicubic", "conservative", "conservative2", "stack"],
                   default="distance",
                   help="distance: cdo gendis; bilinear: cdo genbil; bicubic: cdo genbic (4 weights a link: "
                        "value and 3 source gradients); conservative: first order (cdo gencon); conservative2: "
                        "second order; stack: the stages of --stack (default: %(default)s)")
    w.add_argument("--stack", default="",
                   help="with --method stack: stages separated by '|', as the namcouple STACK line, e.g. "
                        "\"bilinear | nnn n=4 weighting=distance | creep steps=2 | fixed value=-999\" "
                        "(see docs/remap.md); the fixed value is written as the attribute estuary_fixed_value")
    w.add_argument("--normalization", choices=["fracarea", "destarea", "none"], default="fracarea",
                   help="conservative only (CDO's names)")
    w.add_argument("--neighbors", type=int, default=4, help="distance only: the n nearest source points")
    w.add_argument("--extrapolate", choices=["on", "off"], default=None,
                   help="bilinear and bicubic: targets no source quad holds get the 4 nearest source points "
                        "(on) or no links (off); default: the environment's REMAP_EXTRAPOLATE as CDO reads it, "
                        "else as CDO, on for a source grid that is cyclic in longitude (global), off for a "
                        "regional one")
    w.add_argument("--land", action="store_true", help="analytic land masks on both grids")
    w.add_argument("--out", required=True, help="the weight file to write (SCRIP layout, netCDF)")
    w.add_argument("--ranks", type=int, default=1, help="MPI ranks that generate the weights")
    w.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    w.set_defaults(func=cmd_weights)
    return w
