"""`estuary inspect plan|schedule --config`: what a coupled run really moves.

For a coupling configuration (OASIS namcouple or estuary YAML) and what a configuration does
not hold -- each component's rank count and partition kind, and where needed its grids -- this
runs under mpirun on the sum of the components' ranks, builds every component as the run would
(`estuary.Component` with the partitions, grids and fields the configuration names), calls
enddef (which sets up every coupling's Remap, generating SCRIPR weights if needed), and
reports, per coupling, the schedules its Remap executes at each coupling time: messages, bytes
and stages per rank, and the sender x receiver byte matrix as a PNG. Nothing is put or got; no
restart or EXPOUT file is read or written.

    estuary inspect schedule --config namcouple --component atmos:3:apple:lmdz --component ocean:2:box:torc
                             [--grid torc=tripolar:30x20 ...] [--png F.png | --no-png] [--json]
                             [--rundir DIR] [--workdir DIR]

--component NAME:RANKS:KIND[:GRID,GRID...]: world ranks are given to the components in the order
of the options. KIND: serial (all points on the component's first rank), apple (one contiguous
segment a rank, as estuary.gen.block), box (2-D boxes of the grid's nx x ny points over a
px x py process grid, px dividing RANKS with boxes as square as can be; rank r holds column
r % px, row r // px), orange (segments of one grid row -- n/(4 RANKS) points on a 1-D grid --
dealt round-robin), points (round-robin points, as estuary.gen.cyclic; also "round-robin").
GRID: the grids of the component, which a namcouple (naming no components) needs; YAML names
each side's component itself.

--grid NAME=RECIPE: the grid's points and coordinates from one of `estuary weights`' recipes
(lonlat:NLONxNLAT, ...); SCRIPR couplings need them. Grid sizes come from the recipe, else the
configuration's nx ny, else the MAPPING weight file.

Relative file names of the configuration (weight files) are looked up in --rundir (default: the
working directory), as the run would; estuary's log and any weights it generates go to
--workdir (default: a temporary folder, removed at the end).
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .helpers import fail, relaunch, under_mpirun
from .schedule_report import print_schedule_summary, schedule_rank_row, schedule_totals, write_matrix_png

KINDS = ("serial", "apple", "box", "orange", "points")
KIND_ALIASES = {"round-robin": "points", "roundrobin": "points", "cyclic": "points", "block": "apple"}


@dataclass
class ComponentSpec:
    name: str
    ranks: int
    kind: str
    grids: list = field(default_factory=list)
    first: int = 0  # its first world rank


def add_config_arguments(p, png: bool = False) -> None:
    """The run set-up options (on `inspect schedule`, and `inspect plan` with png=True)."""
    g = p.add_argument_group("run set-up (instead of --src/--dst/--n)")
    g.add_argument("--config", help="namcouple or estuary YAML file")
    g.add_argument("--component", action="append", default=[], metavar="NAME:RANKS:KIND[:GRID,...]",
                   help="a component: its ranks and partition kind (" + ", ".join(KINDS) +
                   "), and for a namcouple its grids; once per component")
    g.add_argument("--grid", action="append", default=[], metavar="NAME=RECIPE",
                   help="a grid's points from an `estuary weights` recipe (lonlat:NLONxNLAT, ...); SCRIPR needs it")
    g.add_argument("--rundir", default=".", help="where the configuration's relative file names are (default: .)")
    g.add_argument("--workdir", help="where estuary's log and generated weights go (default: a temporary folder)")
    if png:
        g.add_argument("--png", help="the matrix figures: F.png gives F_<coupling>.png")
        g.add_argument("--no-png", action="store_true", help="do not draw the communication matrix")


def parse_components(specs: list) -> list:
    """ComponentSpecs from NAME:RANKS:KIND[:GRID,...]; ValueError naming the faulty option."""
    out = []
    for spec in specs:
        parts = spec.split(":")
        if len(parts) not in (3, 4) or not parts[0]:
            raise ValueError(f"--component {spec}: expected NAME:RANKS:KIND[:GRID,GRID...], e.g. atmos:3:apple")
        name, ranks, kind = parts[0], parts[1], parts[2].lower()
        kind = KIND_ALIASES.get(kind, kind)
        try:
            n = int(ranks)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"--component {spec}: the rank count \"{ranks}\" of component {name} is not a positive integer")
        if kind not in KINDS:
            raise ValueError(f"--component {spec}: partition kind \"{parts[2]}\" of component {name} is not one of "
                             + ", ".join(KINDS) + " (or round-robin)")
        if any(c.name == name for c in out):
            raise ValueError(f"--component {name} is given twice")
        grids = [g for g in parts[3].split(",") if g] if len(parts) == 4 else []
        out.append(ComponentSpec(name, n, kind, grids, sum(c.ranks for c in out)))
    return out


def parse_grid_recipes(specs: list) -> dict:
    out = {}
    for spec in specs:
        name, eq, recipe = spec.partition("=")
        if not eq or not name or not recipe:
            raise ValueError(f"--grid {spec}: expected NAME=RECIPE, e.g. torc=lonlat:12x6")
        out[name] = recipe
    return out


def box_shape(ranks: int, nx: int, ny: int) -> tuple:
    """px x py = ranks, px dividing ranks, with boxes as square as can be (ties: fewer columns)."""
    best = None
    for px in range(1, ranks + 1):
        if ranks % px:
            continue
        py = ranks // px
        score = abs(nx / px - ny / py)
        if best is None or score < best[0] - 1e-12:
            best = (score, px, py)
    return best[1], best[2]


def partition(kind: str, n: int, nx: int, ny: int, r: int, ranks: int):
    """Rank r's Decomp (of `ranks`) of a grid of n = nx * ny points (point index: x fastest)."""
    import estuary

    if kind == "serial":
        return estuary.Decomp.stripes(n, [(0, n, 1)]) if r == 0 else estuary.Decomp.empty(n)
    if kind == "apple":
        return estuary.gen.block(n, r, ranks)
    if kind == "points":
        return estuary.gen.cyclic(n, r, ranks)
    if kind == "box":
        px, py = box_shape(ranks, nx, ny)
        i, j = r % px, r // px
        x0, x1 = i * nx // px, (i + 1) * nx // px
        y0, y1 = j * ny // py, (j + 1) * ny // py
        return estuary.Decomp.box([ny, nx], [y0, x0], [y1 - y0, x1 - x0], "C")
    # orange: segments of one row (a 1-D grid: n / (4 ranks) points), dealt round-robin
    seg = nx if ny > 1 else max(1, -(-n // (4 * ranks)))
    nseg = -(-n // seg)
    return estuary.Decomp.stripes(n, [(k * seg, min(seg, n - k * seg), 1) for k in range(r, nseg, ranks)])


class SetupError(Exception):
    """A fault of the command line against the configuration (the same on every rank)."""


def resolve(setup: dict, comps: list, recipes: dict, rundir: Path, read_sizes) -> dict:
    """Which component holds each coupling side, and every (component, grid)'s size and shape.
    `read_sizes(path)`: (src_size, dst_size) of a weight file. Raises SetupError."""
    by_name = {c.name: c for c in comps}
    given = ", ".join(c.name for c in comps)
    owner = {}  # grid -> component named in --component NAME:...:GRID
    for c in comps:
        for g in c.grids:
            if g in owner and owner[g] != c.name:
                raise SetupError(f"grid {g} is given to two components ({owner[g]} and {c.name}) by --component")
            owner[g] = c.name
    path = setup["path"]
    sides = []  # per coupling: {"src": (comp, grid) or None, "dst": ...}
    for cp in setup["couplings"]:
        label = f"{':'.join(cp['src_fields'])} -> {':'.join(cp['dst_fields'])} ({cp['origin']})"
        s = {}
        for side in ("src", "dst"):
            if (side == "src" and cp["status"] == "INPUT") or (side == "dst" and cp["status"] == "OUTPUT"):
                s[side] = None
                continue
            grid = cp[side + "_grid"]["name"]
            comp = cp[side + "_component"]
            what = "source" if side == "src" else "target"
            if comp:
                if comp not in by_name:
                    raise SetupError(f"coupling {label} names component {comp} on its {what} side, which no "
                                     f"--component gives (given: {given})")
                if grid in owner and owner[grid] != comp:
                    raise SetupError(f"grid {grid} of coupling {label} belongs to component {comp} in {path}, "
                                     f"but --component gives it to {owner[grid]}")
            else:
                comp = owner.get(grid)
                if comp is None:
                    raise SetupError(f"grid {grid} ({what} of coupling {label}) belongs to no component: name it "
                                     f"in the component's option, e.g. --component NAME:RANKS:KIND:{grid} "
                                     f"(a namcouple does not name components; given: {given})")
            s[side] = (comp, grid)
        sides.append(s)
    # Grid sizes and shapes, per (component, grid).
    import estuary

    info = {}  # (comp, grid) -> {"n", "nx", "ny", "recipe"}
    for cp, s in zip(setup["couplings"], sides):
        for side in ("src", "dst"):
            if s[side] is None:
                continue
            d = info.setdefault(s[side], {"n": None, "nx": 0, "ny": 0, "recipe": recipes.get(s[side][1])})
            ref = cp[side + "_grid"]
            if d["recipe"] and d["n"] is None:
                try:
                    gen = estuary.GridGen.from_name(d["recipe"])
                except estuary.Error as e:
                    raise SetupError(f"--grid {s[side][1]}={d['recipe']}: {e}") from None
                d["n"] = gen.size
                dims = list(gen.dims)
                if len(dims) == 2:
                    d["nx"], d["ny"] = dims
            if ref["nx"] > 0 and ref["ny"] > 0:
                if d["n"] is None:
                    d["n"], d["nx"], d["ny"] = ref["nx"] * ref["ny"], ref["nx"], ref["ny"]
                elif d["n"] != ref["nx"] * ref["ny"]:
                    raise SetupError(f"grid {s[side][1]} has {d['n']} points (--grid {d['recipe']}), but {cp['origin']} "
                                     f"gives it {ref['nx']} x {ref['ny']}")
                elif not d["nx"]:
                    d["nx"], d["ny"] = ref["nx"], ref["ny"]
    for cp, s in zip(setup["couplings"], sides):
        label = f"{':'.join(cp['src_fields'])} -> {':'.join(cp['dst_fields'])} ({cp['origin']})"
        generates = bool(cp["scripr"] or cp.get("interpolation"))
        if cp["mapping"] and s["src"] and s["dst"]:
            f = Path(cp["mapping"]["file"])
            f = f if f.is_absolute() else rundir / f
            # MAPPING with SCRIPR (OASIS3-MCT): the file if it is there, else the SCRIPR weights.
            if not generates or f.exists():
                generates = False
                sizes = read_sizes(str(f))
                for side, n in zip(("src", "dst"), sizes):
                    d = info[s[side]]
                    if d["n"] is None and n > 0:
                        d["n"] = n
        if generates and s["src"] and s["dst"]:
            what = f"SCRIPR {cp['scripr']['method']}" if cp["scripr"] else "STACK"
            for side in ("src", "dst"):
                if not info[s[side]]["recipe"]:
                    raise SetupError(f"grid {s[side][1]} of coupling {label} ({what}) has no "
                                     f"coordinates: give --grid {s[side][1]}=RECIPE (e.g. lonlat:NLONxNLAT)")
    for (comp, grid), d in info.items():
        if d["n"] is None:
            raise SetupError(f"the size of grid {grid} (component {comp}) is unknown: give --grid {grid}=RECIPE, "
                             f"nx and ny in the configuration, or use it in a MAPPING with a weight file")
        if not d["nx"] or not d["ny"]:
            d["nx"], d["ny"] = estuary.gen.grid_shape(d["n"])
    # The fields each component defines: (comp, field, out?) -> grid
    fields = {}
    for cp, s in zip(setup["couplings"], sides):
        for side, names, out in (("src", cp["src_fields"], True), ("dst", cp["dst_fields"], False)):
            if s[side] is None:
                continue
            for name in names:
                key = (s[side][0], name, out)
                if fields.setdefault(key, s[side][1]) != s[side][1]:
                    raise SetupError(f"field {name} of component {s[side][0]} lies on grids {fields[key]} and "
                                     f"{s[side][1]} in {path}")
    return {"sides": sides, "grids": info, "fields": fields}


def _link_inputs(setup: dict, rundir: Path, workdir: Path) -> None:
    """Makes the run folder's input files visible in the work folder, where estuary looks for
    them: relative MAPPING files and OASIS's rmp_* files of SCRIPR CONSERV (estuary writes its
    own weights beside them, replacing the link, never the user's file)."""
    names = []
    for cp in setup["couplings"]:
        if cp["mapping"]:
            names.append(cp["mapping"]["file"])
        if cp["scripr"] and cp["scripr"]["method"] == "CONSERV":
            norm = cp["scripr"]["normalization"] or "DESTAREA"
            names.append(f"rmp_{cp['src_grid']['name']}_to_{cp['dst_grid']['name']}_CONSERV_{norm}.nc")
    for name in names:
        src, dst = rundir / name, workdir / name
        if Path(name).is_absolute() or not src.exists() or dst.exists() or dst.is_symlink():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(src.resolve())


def _png_name(args, cp: dict) -> str:
    def clean(names):
        return re.sub(r"[^A-Za-z0-9_.+-]", "_", "+".join(names))

    suffix = f"{clean(cp['src_fields'])}_to_{clean(cp['dst_fields'])}"
    if args.png:
        p = Path(args.png)
        return str(p.with_name(f"{p.stem}_{suffix}{p.suffix or '.png'}"))
    return f"estuary_schedule_{Path(args.config).name.replace('.', '_')}_{suffix}.png"


def cmd_inspect_config(args, argv) -> int:

    try:
        comps = parse_components(args.component)
        recipes = parse_grid_recipes(args.grid)
    except ValueError as e:
        return fail(str(e))
    if not comps:
        return fail("--config needs the components: --component NAME:RANKS:KIND[:GRID,...] once for each")
    if not Path(args.config).is_file():
        return fail(f"configuration file {args.config} not found")
    total = sum(c.ranks for c in comps)
    if not under_mpirun() and total > 1:
        return relaunch(total, argv)

    import shutil
    import tempfile

    from mpi4py import MPI

    import estuary


    comm = MPI.COMM_WORLD
    me, p = comm.rank, comm.size
    if p != total:
        if me == 0:
            fail(f"the components have {total} ranks together, this MPI world {p}")
        return 2
    mine = next(c for c in comps if c.first <= me < c.first + c.ranks)
    rundir = Path(args.rundir).resolve()
    workdir, temporary, comp = None, args.workdir is None, None

    def read_sizes(path):
        _, info = estuary.read_weights(path, comm)
        return info["src_size"], info["dst_size"]

    try:
        setup = estuary.read_coupling_config(args.config)
        plan = resolve(setup, comps, recipes, rundir, read_sizes)
        if me == 0:
            if temporary:
                workdir = tempfile.mkdtemp(prefix="estuary_inspect_")
            else:
                workdir = str(Path(args.workdir).resolve())
                Path(workdir).mkdir(parents=True, exist_ok=True)
            if Path(workdir) != rundir:
                _link_inputs(setup, rundir, Path(workdir))
        workdir = comm.bcast(workdir, root=0)
        # The component as its model would define it, set up only (no restarts, no transfers).
        comp = estuary._native().Component(mine.name, config=args.config, directory=workdir,
                                           world=comm, setup_only=True)
        part_of, points = {}, {}
        for (cname, grid), d in sorted(plan["grids"].items()):
            if cname != mine.name:
                continue
            dec = partition(mine.kind, d["n"], d["nx"], d["ny"], me - mine.first, mine.ranks)
            part_of[grid] = comp.def_partition(dec, grid)
            points[grid] = dec.size
            if d["recipe"]:
                comp.def_grid(grid, part_of[grid], estuary.GridGen.from_name(d["recipe"]).make(dec))
        for (cname, fname, out), grid in sorted(plan["fields"].items()):
            if cname == mine.name:
                comp.def_var(fname, part_of[grid], out)
        comp.enddef()
        schedules = comp.schedules()
    except (SetupError, estuary.Error) as e:
        if me == 0:
            print(f"estuary: {e}", file=sys.stderr)
        if comp is not None:
            comp.terminate()
        if me == 0 and temporary and workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        return 1

    components = [{"name": c.name, "ranks": c.ranks, "first_rank": c.first, "kind": c.kind} for c in comps]
    for cp, s, sched in zip(setup["couplings"], plan["sides"], schedules):
        values = sched["values"]
        esize = 8 * values  # float64 values, all of a coupling's fields in one exchange
        # This rank's messages over the exchanges its Remap runs in turn, stages numbered on. An
        # exchange within one component staged over that component's ranks (the `schedule` key)
        # exists on those ranks only: the stages are numbered by every rank's largest count.
        most = {}
        for counts in comm.allgather({e["name"]: e["stats"]["stages"] for e in sched["exchanges"]}):
            for name, n in counts.items():
                most[name] = max(most.get(name, 0), n)
        msgs, stage_names, offset = [], {}, 0
        for name in sorted(most, key=lambda n: {"gather": 0, "after": 1}.get(n, 2)):
            e = next((e for e in sched["exchanges"] if e["name"] == name), None)
            for stage, peer, count in e["sends"] if e else []:
                msgs.append((offset + stage, peer, count))
            for k in range(most[name]):
                stage_names[offset + k] = name
            offset += most[name]
        row, matrix_row, stage_rows = schedule_rank_row(me, p, esize, [e["stats"] for e in sched["exchanges"]], msgs)
        row = {"rank": me, "component": mine.name,
               "src_points": points.get(s["src"][1], 0) if s["src"] and s["src"][0] == mine.name else 0,
               "dst_points": points.get(s["dst"][1], 0) if s["dst"] and s["dst"][0] == mine.name else 0,
               **{k: v for k, v in row.items() if k != "rank"}}
        per_exchange = {e["name"]: [e["algorithm"], e["stats"]["stages"], e["stats"]["messages_sent"],
                                    esize * e["stats"]["elements_sent"]] for e in sched["exchanges"]}
        got = comm.gather((row, matrix_row, stage_rows, stage_names, per_exchange,
                           (sched["location"], sched["order"])), root=0)
        if me != 0:
            continue
        rows = [g[0] for g in got]
        matrix = [g[1] for g in got]
        names = {}
        for g in got:
            names.update(g[3])
        per_stage, total_rec = schedule_totals(rows, [g[2] for g in got], max(names, default=-1) + 1)
        for st in per_stage:
            st["exchange"] = names.get(st["stage"], "")
        exchanges = []
        for g in got:
            for name, (alg, nst, nmsg, nbytes) in g[4].items():
                x = next((x for x in exchanges if x["name"] == name), None)
                if x is None:
                    x = {"name": name, "algorithm": alg, "stages": 0, "messages": 0, "bytes": 0}
                    exchanges.append(x)
                x["stages"] = max(x["stages"], nst)
                x["messages"] += nmsg
                x["bytes"] += nbytes
        order = {"gather": 0, "after": 1}
        exchanges.sort(key=lambda x: order.get(x["name"], 2))
        # Where the Remap works, as set up (ranks outside the coupling have no Remap).
        location, order_ = next((g[5] for g in got if g[5][0]), ("", ""))
        mapping = None
        if location:
            kind = ("MAPPING" if cp["mapping"] else "SCRIPR" if cp["scripr"] else "STACK" if cp.get("interpolation")
                    else "identity")
            mapping = {"kind": kind, "location": location, "order": order_}
            if cp["mapping"]:
                mapping["file"] = cp["mapping"]["file"]
            if cp["scripr"]:
                mapping["method"] = cp["scripr"]["method"]
            if cp.get("interpolation"):
                mapping["stages"] = [st["name"] for st in cp["interpolation"]]
        rec = {"coupling": sched["label"], "origin": cp["origin"], "config": setup["path"], "status": cp["status"],
               "src_component": sched["src_component"], "dst_component": sched["dst_component"],
               "src_grid": {"name": cp["src_grid"]["name"], **({k: plan["grids"][s["src"]][k] for k in ("n", "nx", "ny")}
                                                              if s["src"] else {})},
               "dst_grid": {"name": cp["dst_grid"]["name"], **({k: plan["grids"][s["dst"]][k] for k in ("n", "nx", "ny")}
                                                              if s["dst"] else {})},
               "mapping": mapping, "fields": values, "bytes_per_element": 8, "ranks": p, "components": components,
               "exchanges": exchanges, "per_rank": rows, "per_stage": per_stage, "matrix_bytes": matrix,
               "total": total_rec, "png": None}
        if exchanges and not args.no_png:
            rec["png"] = write_matrix_png(_png_name(args, cp), matrix,
                                          f"{sched['label']}\n{sched['src_component']} -> {sched['dst_component']}: "
                                          f"{total_rec['stages']} stages, {total_rec['bytes']} bytes")
        if args.json:
            print(json.dumps(rec), flush=True)
            continue
        print(f"coupling {sched['label']}: {sched['src_component'] or 'file'} -> {sched['dst_component'] or 'file'}, "
              f"{values} field(s) of 8 bytes an element, {p} ranks")
        if not exchanges:
            print("  no transfer between components (" + cp["status"] + ")\n")
            continue
        how = ", ".join(f"{x['name']} ({x['algorithm']}, {x['stages']} stage(s))" for x in exchanges)
        if mapping:
            how += f"; {mapping['kind']} location {mapping['location']} order {mapping['order']}"
        print(f"  remap exchanges: {how}")
        print_schedule_summary(rows, per_stage, total_rec, rec["png"], first_cols=("rank", "component"))
        print()
    comp.terminate()
    del comp
    if me == 0:
        if temporary:
            shutil.rmtree(workdir, ignore_errors=True)
        elif not args.json:
            print(f"estuary's log and generated files: {workdir}")
    return 0
