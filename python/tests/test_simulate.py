"""`estuary simulate` on small inputs: every subcommand runs the real SimGrid replay (the
bench/sim program, $ESTUARY_SIM_BENCH) and its JSON is checked against the alpha-beta model
computed here, independently, for contention-free cases (one crossbar switch, `--topology
switch`: every route is two links, so alpha = 2 x link latency, and a rank's messages share its
own link), and the PNG figures are checked to be real, non-empty PNG files. Runs outside mpirun
(ctest entry python_simulate)."""
import json
import math
import os
import subprocess
import sys
import time

import pytest

BW = 12.5e9  # the CLI's default link bandwidth, B/s
LAT = 100e-9  # the CLI's default link latency, s
ALPHA = 2 * LAT  # host - switch - host


def simulate(*args, check=True, env=None):
    out = subprocess.run([sys.executable, "-m", "estuary", "simulate", *args], capture_output=True, text=True,
                         timeout=300, env=None if env is None else dict(os.environ, **env))
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def records(out):
    recs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert recs, out.stdout + out.stderr
    for r in recs:
        assert "error" not in r, r["error"]
    return recs


def assert_png(path):
    assert path.is_file(), path
    data = path.read_bytes()
    assert len(data) > 1000, f"{path}: {len(data)} bytes"
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path


def close(a, b, rel=0.05):
    return abs(a - b) <= rel * abs(b)


@pytest.fixture(autouse=True)
def _need_bench():
    if not os.environ.get("ESTUARY_SIM_BENCH"):
        pytest.fail("ESTUARY_SIM_BENCH (the bench/sim program) not set: run through ctest, which sets it")


def test_allreduce_contention_free_equals_alpha_beta(tmp_path):
    repeat, doubles = 2, 3
    out = simulate("allreduce", "--ranks", "8,16,32", "--topology", "switch", "--algorithm",
                   "recursive-doubling,recursive-4", "--doubles", str(doubles), "--repeat", str(repeat), "--json",
                   "--plot", str(tmp_path / "t.png"), "--matrix", str(tmp_path / "m.png"))
    recs = records(out)
    assert len(recs) == 6
    for r in recs:
        p = r["ranks"]
        if r["algorithm"] == "recursive-doubling":
            # log2 p stages of one exchange with a partner, per allreduce
            stages = repeat * int(math.log2(p))
            assert r["messages"] == stages * p
            expect = stages * (ALPHA + 8 * doubles / BW)
            assert r["stages"] == stages
            assert close(r["simulated_s"], expect), (r, expect)
        assert close(r["simulated_s"], r["alpha_beta_s"]), r
    rd = {r["ranks"]: r["simulated_s"] for r in recs if r["algorithm"] == "recursive-doubling"}
    assert rd[8] < rd[16] < rd[32]  # Fig. 10a: allreduce time grows with ranks
    assert_png(tmp_path / "t.png")
    assert_png(tmp_path / "m.png")
    assert "matrix_bytes" in recs[0] and len(recs[0]["matrix_bytes"]) == 8


def test_allreduce_ranks_per_host_on_a_crossbar():
    """Recursive doubling on 16 ranks, 4 a host: partners 1 and 2 are on the same host (free),
    partners 4 and 8 pair whole hosts, each sending its 4 ranks' values as one message."""
    doubles = 3
    (r,) = records(simulate("allreduce", "--ranks", "16", "--topology", "switch", "--algorithm",
                            "recursive-doubling", "--doubles", str(doubles), "--repeat", "1",
                            "--ranks-per-host", "4", "--json"))
    assert r["ranks"] == 16 and r["ranks_per_host"] == 4
    assert r["messages"] == 2 * 4  # 2 stages between hosts, 4 hosts
    expect = 2 * (ALPHA + 4 * 8 * doubles / BW)
    assert close(r["simulated_s"], expect), (r, expect)
    assert close(r["alpha_beta_s"], expect), (r, expect)


@pytest.mark.parametrize("width", [3, 10])
def test_halo_contention_free_equals_alpha_beta(tmp_path, width):
    n, nz = 64, 4
    out = simulate("halo", "--ranks", "16,64", "--topology", "switch", "--width", str(width), "--nx", str(n), "--ny",
                   str(n), "--nz", str(nz), "--json", "--matrix", str(tmp_path / "halo.png"), "--matrix-ranks", "64")
    recs = records(out)
    for r in recs:
        q = int(math.isqrt(r["ranks"]))  # 16 -> 4 x 4, 64 -> 8 x 8 subdomains of b x b points
        b = n // q
        # x sweep: w columns of b rows to each side; y sweep: w rows of b + 2w (corners), each way
        x_bytes = 2 * width * b * nz * 8
        y_bytes = 2 * width * (b + 2 * width) * nz * 8
        expect = 2 * ALPHA + (x_bytes + y_bytes) / BW
        assert close(r["simulated_s"], expect), (r, expect)
    # Fig. 9d: the matrix of the 64-rank run holds every byte sent, x and y neighbours only
    m = [rec for rec in recs if "matrix_bytes" in rec][0]
    assert m["ranks"] == 64
    total = sum(map(sum, m["matrix_bytes"]))
    assert total == m["bytes"]
    assert_png(tmp_path / "halo.png")


def test_transposition_contention_free_and_algorithms(tmp_path):
    n = 64
    out = simulate("transposition", "--ranks", "16,64", "--topology", "switch", "--algorithm", "burst,ring-1,bruck",
                   "--nx", str(n), "--ny", str(n), "--nz", str(n), "--transpositions", "1", "--json", "--plot",
                   str(tmp_path / "tr.png"))
    recs = records(out)
    assert len(recs) == 6
    for r in recs:
        p = r["ranks"]
        cx = int(math.isqrt(p))
        if r["algorithm"] == "burst":
            # one stage: each rank sends all but its own 1/cx of its n^3/p doubles
            expect = ALPHA + (n ** 3 * 8 / p) * (cx - 1) / cx / BW
            assert r["stages"] == 1
            assert close(r["simulated_s"], expect), (r, expect)
        if r["algorithm"] == "ring-1":
            assert r["stages"] == cx - 1
        assert close(r["simulated_s"], r["alpha_beta_s"]), r
    by = {(r["algorithm"], r["ranks"]): r["simulated_s"] for r in recs}
    assert by[("bruck", 64)] > by[("burst", 64)]  # Bruck moves bytes several times
    assert_png(tmp_path / "tr.png")


def test_network_models_and_platform_shapes():
    # a 256-host fat tree given by its shape, filled by 16 x 16 ranks; under max-min sharing
    # burst is as fast as ring-1, under SimGrid's InfiniBand model (per-node flow penalty) ring-1
    # beats burst, as in paper 004 Fig. 5a
    out = simulate("transposition", "--ranks", "256", "--platform", "fattree:4x4", "--network", "cm02,ib",
                   "--algorithm", "burst,ring-1", "--nx", "1024", "--ny", "512", "--nz", "64", "--transpositions",
                   "1", "--json", "--no-progress")
    by = {(r["network"], r["algorithm"]): r for r in records(out)}
    assert len(by) == 4
    assert all(r["platform"].startswith("fat-tree 4;4,4,4,4") for r in by.values())
    assert by[("cm02", "burst")]["simulated_s"] <= 1.01 * by[("cm02", "ring-1")]["simulated_s"]
    assert by[("ib", "ring-1")]["simulated_s"] < 0.9 * by[("ib", "burst")]["simulated_s"]
    assert by[("ib", "burst")]["simulated_s"] > by[("cm02", "burst")]["simulated_s"]
    # a run over its time limit is stopped (with its simulating child) and reported, not waited for
    t0 = time.time()
    out = simulate("transposition", "--ranks", "4096", "--topology", "dragonfly", "--algorithm", "burst",
                   "--time-limit", "2", "--json", "--no-progress", check=False)
    assert out.returncode == 1 and "time limit of 2 s" in json.loads(out.stdout.splitlines()[-1])["error"]
    assert time.time() - t0 < 30
    out = simulate("allreduce", "--ranks", "8", "--network", "tcp", check=False)
    assert out.returncode == 2 and "network 'tcp'" in out.stderr
    out = simulate("allreduce", "--ranks", "8", "--platform", "torus:2x0x2", "--json", "--no-progress", check=False)
    assert out.returncode == 1 and "bad number '0'" in json.loads(out.stdout.splitlines()[-1])["error"]


def test_coupling_p2p_butterfly_adaptive(tmp_path):
    points = 64000
    out = simulate("coupling", "--ranks", "16,32", "--topology", "switch", "--algorithm", "p2p,butterfly,adaptive",
                   "--points", str(points), "--json", "--plot", str(tmp_path / "c.png"))
    recs = records(out)
    assert len(recs) == 6
    by = {(r["algorithm"], r["ranks"]): r for r in recs}
    for p in (16, 32):
        a = p // 2
        r = by[("p2p", p)]
        # block -> block with as many ranks on either side: one message of points/a doubles each
        assert r["messages"] == a and r["stages"] == 1
        assert close(r["simulated_s"], ALPHA + points / a * 8 / BW), r
        ad = by[("adaptive", p)]
        trials = [t["simulated_s"] for t in ad["trials"]]
        # the engine's search (kernel of p positions: every rank holds data) passes over
        # candidates whose stages equal one already replayed
        assert 2 <= len(trials) <= int(math.log2(p)) + 1
        assert close(ad["simulated_s"], min(trials), 1e-4)
        assert ad["simulated_s"] <= by[("butterfly", p)]["simulated_s"] * (1 + 1e-6)
        assert ad["simulated_s"] <= r["simulated_s"] * (1 + 1e-6)
        # the engine's butterfly: its mapping hosts kernel positions on sources and destinations,
        # so one-to-one flows are forwarded through kernel stages (one on either side at most
        # for the mappings), and on a switch that costs more than P2P's one stage
        assert 2 <= by[("butterfly", p)]["stages"] <= int(math.log2(p)) + 2
        assert by[("butterfly", p)]["simulated_s"] > r["simulated_s"]
    assert_png(tmp_path / "c.png")


def test_coupling_plan_without_the_ranks():
    # block -> cyclic over 32 + 32 ranks, built in one process: every source block (200
    # consecutive points) holds points of every cyclic destination, so P2P is 32 x 32 messages
    # moving every point once; the butterfly moves at least as many bytes through fewer messages
    out = simulate("coupling", "--ranks", "64", "--topology", "switch", "--algorithm", "p2p,butterfly",
                   "--points", "6400", "--src-kind", "block", "--dst-kind", "cyclic", "--json", "--no-progress")
    by = {r["algorithm"]: r for r in records(out)}
    p2p, bf = by["p2p"], by["butterfly"]
    assert p2p["plan_flows"] == 32 * 32 and p2p["messages"] == 32 * 32 and p2p["stages"] == 1
    assert p2p["bytes"] == 6400 * 8
    assert bf["bytes"] >= p2p["bytes"] and bf["messages"] < p2p["messages"] and bf["stages"] > 1
    assert "block -> cyclic" in p2p["pattern"]


def test_coupling_adaptive_picks_butterfly_with_message_overhead():
    # every source meets every destination (chunks of 1 point): many small messages, each costing
    # 1 us of CPU; the butterfly's few larger messages win and profiling finds it
    out = simulate("coupling", "--ranks", "64", "--topology", "fattree", "--algorithm", "p2p,adaptive", "--points",
                   "100000", "--dst-chunk", "1", "--overhead", "1000", "--json", "--no-progress")
    by = {r["algorithm"]: r for r in records(out)}
    assert by["adaptive"]["choice"] != "coupling p2p"
    assert by["adaptive"]["stages"] > 1
    assert by["adaptive"]["simulated_s"] < 0.8 * by["p2p"]["simulated_s"]


def test_routing_variants_and_progress(tmp_path):
    out = simulate("halo", "--ranks", "64", "--topology", "dragonfly", "--routing", "minimal,valiant,ugal,ugal-l", "--width",
                   "3", "--nx", "64", "--ny", "64", "--nz", "4", "--json",
                   env={"ESTUARY_PROGRESS": "1", "ESTUARY_PROGRESS_DELAY": "0"})  # the bar, though stderr is a pipe
    recs = records(out)
    assert [r["routing"] for r in recs] == ["minimal", "valiant", "ugal", "ugal-l"]
    assert recs[0]["detoured"] == 0 and recs[1]["detoured"] == recs[1]["messages"]
    assert all(r["messages"] == 256 for r in recs)
    assert "4/4" in out.stderr  # the progress bar reached the end
    # the table form (no --json)
    out = simulate("allreduce", "--ranks", "8", "--topology", "torus", "--no-progress")
    assert "simulated (s)" in out.stdout and out.stderr == ""
    # into a pipe, without ESTUARY_PROGRESS: no bar either
    out = simulate("allreduce", "--ranks", "8", "--topology", "torus", env={"ESTUARY_PROGRESS_DELAY": "0"})
    assert "simulated (s)" in out.stdout and out.stderr == ""


def test_errors_are_reported():
    out = simulate("halo", "--routing", "adaptive", check=False)
    assert out.returncode == 2 and "routing 'adaptive'" in out.stderr
    out = simulate("allreduce", "--algorithm", "ring-2", check=False)
    assert out.returncode == 2 and "recursive" in out.stderr
    out = simulate("halo", "--ranks", "abc", check=False)
    assert out.returncode == 2 and "--ranks" in out.stderr
    # a run that fails (too few routers for the groups SimGrid needs) is reported, not hidden
    out = simulate("allreduce", "--ranks", "8", "--platform", "dragonfly-SL", "--json", "--no-progress", check=False)
    assert out.returncode == 1
    rec = json.loads(out.stdout.splitlines()[-1])
    assert "routers" in rec["error"]
    out = simulate("allreduce", "--bench", "/nonexistent/sim", check=False)
    assert out.returncode == 2 and "bench/sim" in out.stderr


# ---- `estuary simulate coupling --config`: a coupled set-up's own exchanges ----

def _write_scrip(path, nsrc, ndst, rows, cols):
    import netCDF4
    import numpy as np

    with netCDF4.Dataset(path, "w") as f:
        f.createDimension("src_grid_size", nsrc)
        f.createDimension("dst_grid_size", ndst)
        f.createDimension("num_links", len(rows))
        f.createDimension("num_wgts", 1)
        f.createVariable("src_address", "i4", ("num_links",))[:] = np.array(cols) + 1
        f.createVariable("dst_address", "i4", ("num_links",))[:] = np.array(rows) + 1
        f.createVariable("remap_matrix", "f8", ("num_links", "num_wgts"))[:] = np.ones((len(rows), 1))


def _namcouple(path, order):
    path.write_text(f""" $NFIELDS
 1
 $END
 $RUNTIME
 7200
 $END
 $STRINGS
A_X:A_Y O_X:O_Y 1 3600 1 x.nc EXPORTED
agrid ogrid LAG=0 SEQ=1
P 0 P 0
MAPPING
rmp_a_to_o.nc src {order}
 $END
""")


def _brute_force_remap(nsrc, ndst, rows, cols, S, D, location):
    """The messages of one exchange of the coupler's Remap (bfb), written out from its rules by
    brute force: sources apple over ranks 0..S-1, destinations points (round-robin) over ranks
    S..S+D-1. Returns a list of exchanges, each a dict (from, to) -> elements."""
    src_owner = {c: i for i in range(S) for c in range(nsrc * i // S, nsrc * (i + 1) // S)}
    dst_owner = {b: S + b % D for b in range(ndst)}
    links = list(zip(rows, cols))
    if location == "dst":  # the rows on their destination ranks; their columns gathered there
        holder = dst_owner
    else:  # rows in blocks over the source ranks, results then sent to the destination ranks
        holder = {b: i for i in range(S) for b in range(ndst * i // S, ndst * (i + 1) // S)}
    need = {}
    for b, c in links:
        need.setdefault(holder[b], set()).add(c)
    gather = {}
    for r, cs in need.items():
        for c in cs:
            if src_owner[c] != r:
                gather[(src_owner[c], r)] = gather.get((src_owner[c], r), 0) + 1
    if location == "dst":
        return [gather]
    after = {}
    for b in range(ndst):
        if holder[b] != dst_owner[b]:
            after[(holder[b], dst_owner[b])] = after.get((holder[b], dst_owner[b]), 0) + 1
    return [gather, after]


def _random_config(tmp_path, seed, least_links, nsrc, ndst, S, D):
    """A MAPPING file of random links (least_links..3 per destination point) in a namcouple of
    one bfb coupling, and the `simulate coupling --config` options of its components (S atm
    ranks in apples, D ocean ranks in points) on one crossbar."""
    import random

    rng = random.Random(seed)
    rows, cols = [], []
    for b in range(ndst):
        for _ in range(rng.randint(least_links, 3)):
            rows.append(b)
            cols.append(rng.randrange(nsrc))
    _write_scrip(tmp_path / "rmp_a_to_o.nc", nsrc, ndst, rows, cols)
    _namcouple(tmp_path / "namcouple", "bfb")
    args = ["coupling", "--config", str(tmp_path / "namcouple"), "--rundir", str(tmp_path),
            "--component", f"atm:{S}:apple:agrid", "--component", f"ocn:{D}:points:ogrid", "--topology", "switch"]
    return rows, cols, args


@pytest.mark.parametrize("location", ["dst", "src"])
def test_coupling_config_equals_brute_force(tmp_path, location):
    nsrc, ndst, S, D, fields = 41, 29, 3, 2, 2
    rows, cols, args = _random_config(tmp_path, 7, 0, nsrc, ndst, S, D)
    out = simulate(*args, "--locations", location, "--algorithm", "p2p,butterfly", "--json",
                   "--plot", str(tmp_path / "t.png"), "--matrix", str(tmp_path / "m.png"))
    (rec,) = records(out)
    assert rec["links"] == len(rows) and rec["ranks"] == S + D and rec["fields"] == fields
    p2p = next(o for o in rec["options"] if o["algorithm"] == "p2p")
    ref = _brute_force_remap(nsrc, ndst, rows, cols, S, D, location)
    eb = 8 * fields
    assert [e["name"] for e in p2p["exchanges"]] == (["gather"] if location == "dst" else ["gather", "after"])
    assert p2p["messages"] == sum(len(x) for x in ref)
    assert p2p["bytes"] == sum(n * eb for x in ref for n in x.values())
    # One crossbar: each exchange takes alpha + the busiest rank's bytes (the larger of sent and
    # received) over the bandwidth; the exchanges follow one another.
    expect = 0.0
    for x in ref:
        if not x:
            continue
        load = {}
        for (a, b), n in x.items():
            load[("s", a)] = load.get(("s", a), 0) + n * eb
            load[("r", b)] = load.get(("r", b), 0) + n * eb
        expect += ALPHA + max(load.values()) / BW
    assert close(p2p["simulated_s"], expect), (p2p["simulated_s"], expect)
    assert close(p2p["alpha_beta_s"], expect), (p2p["alpha_beta_s"], expect)  # one crossbar: no contention
    assert rec["best"]["simulated_s"] == min(o["simulated_s"] for o in rec["options"])
    assert_png(tmp_path / "t.png")
    assert_png(tmp_path / f"m_0_{rec['best']['location']}.png")


def test_coupling_config_ranks_per_host(tmp_path):
    """--ranks-per-host 2: the brute-force Remap's messages seen by the hosts (rank r on host r // 2),
    those within a host dropped and those between two hosts merged; one crossbar of 3 hosts, so the
    exchange takes alpha + the busiest host's bytes over the bandwidth."""
    nsrc, ndst, S, D, fields, k = 41, 29, 3, 2, 2, 2
    rows, cols, args = _random_config(tmp_path, 11, 1, nsrc, ndst, S, D)
    out = simulate(*args, "--locations", "dst", "--algorithm", "p2p", "--ranks-per-host", str(k), "--json")
    (rec,) = records(out)
    assert rec["ranks"] == S + D and rec["ranks_per_host"] == k
    assert rec["platform"].startswith("fat-tree 1;3;"), rec["platform"]  # the machine sized for 3 hosts
    (gather,) = _brute_force_remap(nsrc, ndst, rows, cols, S, D, "dst")
    eb = 8 * fields
    hosts = {}
    for (a, b), n in gather.items():
        if a // k != b // k:
            hosts[(a // k, b // k)] = hosts.get((a // k, b // k), 0) + n * eb
    (p2p,) = rec["options"]
    assert p2p["messages"] == len(hosts) > 0
    assert p2p["bytes"] == sum(hosts.values())
    load = {}
    for (a, b), n in hosts.items():
        load[("s", a)] = load.get(("s", a), 0) + n
        load[("r", b)] = load.get(("r", b), 0) + n
    expect = ALPHA + max(load.values()) / BW
    assert close(p2p["simulated_s"], expect), (p2p["simulated_s"], expect)
    assert close(p2p["alpha_beta_s"], expect), (p2p["alpha_beta_s"], expect)
    out = simulate(*args, "--ranks-per-host", "0", check=False)
    assert out.returncode == 2 and "--ranks-per-host" in out.stderr


def test_coupling_config_errors(tmp_path):
    _namcouple(tmp_path / "namcouple", "bfb")
    out = simulate("coupling", "--config", str(tmp_path / "namcouple"), check=False)
    assert out.returncode == 2 and "--component" in out.stderr
    out = simulate("coupling", "--config", str(tmp_path / "namcouple"), "--component", "atm:3:apple:agrid",
                   "--component", "ocn:2:points:ogrid", "--rundir", str(tmp_path), "--json", check=False)
    assert out.returncode == 1 and "rmp_a_to_o.nc" in out.stdout + out.stderr  # the weight file is missing
    out = simulate("coupling", "--config", str(tmp_path / "namcouple"), "--component", "atm:3:hexagon:agrid",
                   check=False)
    assert out.returncode != 0 and "hexagon" in out.stdout + out.stderr


CONFIG_NAMCOUPLE = """ $NFIELDS
 4
 $END
 $RUNTIME
 7200
 $END
 $STRINGS
O_A O_A2 1 3600 1 a.nc EXPORTED
torc lmdz LAG=0 SEQ=1
P 0 P 0
SCRIPR
DISTWGT LR SCALAR LATLON 1 4
O_B:O_C O_B2:O_C2 1 3600 1 b.nc EXPORTED
torc lmdz LAG=0 SEQ=1
P 0 P 0
MAPPING
w_o2a.nc src bfb
O_D O_D2 1 3600 1 d.nc EXPORTED
torc lmdz LAG=0 SEQ=1
P 0 P 0
MAPPING
w_o2a.nc dst opt
A_E O_E 1 3600 1 e.nc EXPORTED
lmdz torc LAG=0 SEQ=1
P 0 P 0
MAPPING
w_a2o.nc src opt
 $END
"""


def test_coupling_config_equals_the_real_coupler(tmp_path, split=("3:box", "2:orange")):
    """The virtual set-up equals the real one: `estuary inspect schedule --config` (the coupler set
    up on real MPI ranks: its Remaps' schedules, world rank x world rank bytes) and `estuary
    simulate coupling --config` (the same namcouple, partitions, grids and weights, without the
    ranks) give the same byte matrix for every coupling at its configured location and order
    (SCRIPR weights generated by both; MAPPING at src bfb, dst sum, src sum)."""
    import random

    rng = random.Random(3)
    no, na = 12 * 8, 8 * 6
    for name, ns, nd in (("w_o2a.nc", no, na), ("w_a2o.nc", na, no)):
        rows, cols = [], []
        for b in range(nd):
            for _ in range(rng.randint(0, 4)):
                rows.append(b)
                cols.append(rng.randrange(ns))
        _write_scrip(tmp_path / name, ns, nd, rows, cols)
    (tmp_path / "namcouple").write_text(CONFIG_NAMCOUPLE)
    comps = ["--component", f"ocean:{split[0]}:torc", "--component", f"atmos:{split[1]}:lmdz",
             "--grid", "torc=lonlat:12x8", "--grid", "lmdz=lonlat:8x6", "--rundir", str(tmp_path)]
    real = subprocess.run([sys.executable, "-m", "estuary", "inspect", "schedule", "--config",
                           str(tmp_path / "namcouple"), *comps, "--no-png", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert real.returncode == 0, real.stdout + real.stderr
    reals = [json.loads(line) for line in real.stdout.splitlines() if line.strip()]
    virt = records(simulate("coupling", "--config", str(tmp_path / "namcouple"), *comps, "--topology", "switch",
                            "--algorithm", "p2p", "--json", "--matrix", str(tmp_path / "m.png"),
                            "--matrix-bins", "1000"))
    assert [r["coupling"] for r in virt] == [r["coupling"] for r in reals] and len(reals) == 4
    locations = []
    for r, v in zip(reals, virt):
        loc, order = r["mapping"]["location"], r["mapping"]["order"]
        locations.append((loc, order))
        assert v["fields"] == r["fields"]
        assert v["matrix_bytes"][loc] == r["matrix_bytes"], r["coupling"]
        (o,) = [o for o in v["options"] if o["location"] == loc]
        assert o["order"] == order
        assert [e["name"] for e in o["exchanges"]] == [e["name"] for e in r["exchanges"]]
        assert [e["bytes"] for e in o["exchanges"]] == [e["bytes"] for e in r["exchanges"]]
        assert o["messages"] == sum(e["messages"] for e in r["exchanges"])
        assert sum(map(sum, r["matrix_bytes"])) > 0
    assert locations == [("dst", "bfb"), ("src", "bfb"), ("dst", "sum"), ("src", "sum")]
