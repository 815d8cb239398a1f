# The fault suite: what the I/O server does when the disk or the job fails under it. Each case
# runs the toy writer of tests/test_io_writer.cpp under mpirun and then reads the files with an
# independent reader (netCDF4-python), checking every record the file shows against values
# computed here. The rule under test: the run fails on every rank with an error naming the
# file and record, nothing hangs, and a file shows only whole records, each exact.
#
# Faults: a real full filesystem (a tmpfs of a few pages, mounted here when the machine allows
# it), a write error injected at a chosen record on a chosen writer (ESTUARY_IO_FAULT), an
# output directory that cannot be created, SIGTERM in the middle of a step, a rank killed with
# SIGKILL, files truncated by a few bytes, and an uncaught Python exception on one rank.
import os
import shutil
import signal
import subprocess
import sys
import time

import netCDF4
import numpy as np
import pytest

from test_io_files import NX, NY, NLEV, value2, value3

CONFIG = """output:
  mode: {mode}
  writers: {writers}
  directory: {dir}
  format: {format}
  calendar: noleap
  reference_time: "2001-01-01 00:00:00"
  files:
    - name: inst
      output_freq: 2h
      fields: [{{name: t3, precision: double}}, {{name: sst, precision: double}}]
    - name: stats
      output_freq: 3h
      fields:
        - {{name: t3, operation: average, precision: double}}
        - {{name: sst, operation: maximum, precision: double}}
    - name: rst
      output_freq: 2h
      restart: true
      fields: [{{name: sst, precision: double}}, {{name: t3, precision: double}}]
"""

TIMEOUT = 90  # seconds: any case that takes longer has hung


def run_writer(io_env, d, ranks, mode, writers, nsteps, extra=(), env=None, fmt="cdf5", popen=False):
    os.makedirs(d, exist_ok=True)
    cfg = os.path.join(io_env["tmp"], os.path.basename(d) + ".yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(mode=mode, writers=writers, dir=d, format=fmt))
    cmd = [io_env["mpiexec"], "-n", str(ranks), io_env["writer"], cfg, "cyclic", str(nsteps), *extra]
    full_env = {**os.environ, **(env or {})}
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env,
                         start_new_session=True)
    if popen:
        return p
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # every rank, so that nothing keeps the files open
        p.communicate()
        raise AssertionError(f"hung: {' '.join(cmd)} did not end within {TIMEOUT} s")
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def fresh(io_env, name):
    d = os.path.join(io_env["tmp"], "faults", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def whole_records(path, every, stats=False):
    """The number of records `path` shows; asserts each one is whole and exact: its time, and
    every variable equal to the reference of its step (no fill value, no zeros)."""
    with netCDF4.Dataset(path) as ds:
        n = len(ds["time"])
        np.testing.assert_array_equal(ds["time"][:], (every * np.arange(1, n + 1) - (every / 2 if stats else 0)) * 3600.0)
        for r in range(n):
            steps = [every * r + k for k in range(1, every + 1)]
            if stats:
                t3 = value3(steps[0])
                for s in steps[1:]:
                    t3 = t3 + value3(s)
                np.testing.assert_array_equal(np.ma.filled(ds["t3"][r], np.nan), t3 / every, err_msg=f"{path} t3 record {r}")
                np.testing.assert_array_equal(np.ma.filled(ds["sst"][r], np.nan), np.maximum.reduce([value2(s) for s in steps]),
                                              err_msg=f"{path} sst record {r}")
            else:
                np.testing.assert_array_equal(np.ma.filled(ds["t3"][r], np.nan), value3(every * (r + 1)), err_msg=f"{path} t3 record {r}")
                np.testing.assert_array_equal(np.ma.filled(ds["sst"][r], np.nan), value2(every * (r + 1)), err_msg=f"{path} sst record {r}")
    return n


# ---- write errors: injected at a chosen record, and a real full filesystem ----

@pytest.mark.parametrize("ranks,mode,writers,fmt", [(3, "serverless", 2, "cdf5"), (2, "serverless", 1, "cdf5"),
                                                    (4, "server", 2, "cdf5"), (3, "server", 1, "cdf5"),
                                                    (3, "serverless", 2, "netcdf4")])
def test_write_error_is_every_ranks_and_keeps_whole_records(io_env, ranks, mode, writers, fmt):
    """A write error on the last writer at record 2 (step 6 of inst.nc): the run fails on every
    rank naming file and record, and every file holds exactly its records completed before."""
    d = fresh(io_env, f"inject_{mode}_{ranks}_{writers}_{fmt}")
    p = run_writer(io_env, d, ranks, mode, writers, 12, fmt=fmt,
                   env={"ESTUARY_IO_FAULT": f"record=2,writer={writers - 1}"})
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert "No space left on device (injected by ESTUARY_IO_FAULT)" in out, out
    assert os.path.join(d, "inst.nc") in out and "record 2" in out, out
    # inst.nc: records 0 and 1 (steps 2, 4) were complete; record 2 failed while being written.
    if fmt == "netcdf4":
        # HDF5's record dimension cannot shrink: the failed record shows, with a missing time.
        with netCDF4.Dataset(os.path.join(d, "inst.nc")) as ds:
            assert len(ds["time"]) == 3 and np.ma.is_masked(ds["time"][2])
        with netCDF4.Dataset(os.path.join(d, "inst.nc")) as ds:
            for r in range(2):
                np.testing.assert_array_equal(ds["t3"][r], value3(2 * (r + 1)))
                np.testing.assert_array_equal(ds["sst"][r], value2(2 * (r + 1)))
    else:
        assert whole_records(os.path.join(d, "inst.nc"), 2) == 2
    # stats.nc: record 0 (step 3) complete; record 1 (step 6) never got its sst.
    assert whole_records(os.path.join(d, "stats.nc"), 3, stats=True) == 1
    # The restart file is not put in place after an error: the previous one (none) stands.
    assert not os.path.exists(os.path.join(d, "rst.nc"))


def mount_tmpfs(d, size):
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d], capture_output=True, text=True)
    return r.returncode == 0


@pytest.mark.parametrize("ranks,mode,writers,fmt", [(3, "serverless", 2, "cdf5"), (2, "serverless", 1, "cdf5"),
                                                    (4, "server", 2, "cdf5"), (3, "serverless", 2, "netcdf4")])
def test_full_filesystem(io_env, ranks, mode, writers, fmt):
    """A real full disk: a tmpfs of 48 KiB (1280 KiB for netCDF-4, whose writers keep 1 MiB
    free for HDF5's metadata) fills after a few dozen steps."""
    d = fresh(io_env, f"full_{mode}_{ranks}_{writers}_{fmt}")
    # The project's machines and CI run as root, where a tmpfs can be mounted: a failure to
    # mount is a failure of this test, not a reason to pass it by.
    assert mount_tmpfs(d, "1280k" if fmt == "netcdf4" else "48k"), "cannot mount a tmpfs (run as root)"
    try:
        p = run_writer(io_env, d, ranks, mode, writers, 400, fmt=fmt)
        out = p.stdout + p.stderr
        assert p.returncode != 0, out
        assert "exception:" in out and "record" in out and d in out, out
        n = whole_records(os.path.join(d, "inst.nc"), 2)
        assert 1 <= n < 200, n
        whole_records(os.path.join(d, "stats.nc"), 3, stats=True)
    finally:
        subprocess.run(["umount", d], check=False)


@pytest.mark.parametrize("mode,ranks,writers", [("serverless", 3, 2), ("server", 4, 2), ("serverless", 2, 1)])
def test_directory_that_cannot_be_created(io_env, mode, ranks, writers):
    """output.directory under a regular file: an error naming the directory on every rank."""
    base = fresh(io_env, f"nodir_{mode}_{writers}")
    blocker = os.path.join(base, "not_a_directory")
    open(blocker, "w").close()
    d = os.path.join(blocker, "out")
    cfg = os.path.join(base, "io.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(mode=mode, writers=writers, dir=d, format="cdf5"))
    p = subprocess.run([io_env["mpiexec"], "-n", str(ranks), io_env["writer"], cfg, "cyclic", "4"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode != 0
    assert "cannot create the output directory" in p.stdout and d in p.stdout, p.stdout + p.stderr


# ---- SIGTERM in the middle of a step, a killed rank ----

@pytest.mark.parametrize("ranks,mode,writers,at", [(3, "serverless", 2, 6), (4, "server", 2, 4), (2, "serverless", 1, 2)])
def test_sigterm_mid_step_leaves_no_half_record(io_env, ranks, mode, writers, at):
    """SIGTERM raised during the step: the ranks stop at the first output step from there, in
    the middle of it (t3 handed over, sst not). That step's records must not appear at all, in
    the output files and in the restart file; every earlier one is whole."""
    d = fresh(io_env, f"sigterm_{mode}_{ranks}_{at}")
    p = run_writer(io_env, d, ranks, mode, writers, 12, extra=("sigterm-at", str(at)))
    assert "terminated: estuary: SIGTERM received" in p.stdout, p.stdout + p.stderr
    s = at  # an output step of inst and rst (even), reached by every rank with the signal
    assert whole_records(os.path.join(d, "inst.nc"), 2) == (s - 1) // 2
    assert whole_records(os.path.join(d, "rst.nc"), 2) == (s - 1) // 2
    assert whole_records(os.path.join(d, "stats.nc"), 3, stats=True) == (s - 1) // 3


def children(pid):
    r = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]


@pytest.mark.parametrize("mode,ranks,writers,victim", [("serverless", 3, 2, 1), ("server", 4, 2, 0)])
def test_killed_rank_does_not_hang_and_keeps_whole_records(io_env, mode, ranks, writers, victim):
    """SIGKILL to one rank while the model runs: the job ends (no hang) and the files show only
    whole records — the record count reaches the file after every complete record."""
    d = fresh(io_env, f"kill9_{mode}_{ranks}")
    p = run_writer(io_env, d, ranks, mode, writers, 100000, extra=("sleep-ms", "20"), popen=True)
    deadline = time.time() + 60
    while time.time() < deadline and not os.path.exists(os.path.join(d, "inst.nc")):
        time.sleep(0.1)
    time.sleep(1.5)
    ranks_pids = sorted(children(p.pid))
    assert len(ranks_pids) == ranks, ranks_pids
    os.kill(ranks_pids[victim], signal.SIGKILL)
    out, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode != 0
    n = whole_records(os.path.join(d, "inst.nc"), 2)
    assert n >= 2, (n, out, err)
    whole_records(os.path.join(d, "stats.nc"), 3, stats=True)


# ---- truncated files are refused, naming the file ----

@pytest.fixture(scope="module")
def complete_output(io_env):
    d = fresh(io_env, "complete")
    p = run_writer(io_env, d, 2, "serverless", 1, 12)
    assert p.returncode == 0, p.stdout + p.stderr
    nc4 = fresh(io_env, "complete_nc4")
    p = run_writer(io_env, nc4, 2, "serverless", 1, 12, fmt="netcdf4")
    assert p.returncode == 0, p.stdout + p.stderr
    return d, nc4


def truncated_copy(src, dst, cut):
    shutil.copyfile(src, dst)
    os.truncate(dst, os.path.getsize(dst) - cut)
    return dst


def read_with_estuary(code):
    """Runs `code` (with `import estuary`) in a fresh Python on one MPI rank."""
    return subprocess.run([sys.executable, "-c", "import estuary\n" + code], capture_output=True, text=True,
                          timeout=TIMEOUT)


@pytest.mark.parametrize("cut", [1, 8, 2000])
def test_truncated_output_is_refused_by_the_reader(io_env, complete_output, cut):
    d, _ = complete_output
    bad = truncated_copy(os.path.join(d, "inst.nc"), os.path.join(io_env["tmp"], "faults", f"inst_cut{cut}.nc"), cut)
    # netCDF itself reads the cut file without a word (the tail as fill values): the premise.
    with netCDF4.Dataset(bad) as ds:
        assert len(ds["time"]) == 6
    r = read_with_estuary(f"r = estuary.Reader({bad!r})\nprint('records', r.records)")
    assert r.returncode != 0 and "the file is truncated" in r.stderr and bad in r.stderr, r.stdout + r.stderr
    ok = read_with_estuary(f"r = estuary.Reader({os.path.join(d, 'inst.nc')!r})\nprint('records', r.records)")
    assert ok.returncode == 0 and "records 6" in ok.stdout, ok.stdout + ok.stderr


def test_truncated_netcdf4_is_refused(io_env, complete_output):
    _, nc4 = complete_output
    bad = truncated_copy(os.path.join(nc4, "inst.nc"), os.path.join(io_env["tmp"], "faults", "inst_nc4_cut.nc"), 16)
    r = read_with_estuary(f"r = estuary.Reader({bad!r})\nprint('records', r.records)")
    assert r.returncode != 0 and bad in r.stderr, r.stdout + r.stderr


def test_truncated_weight_file_is_refused(io_env):
    """A SCRIP weight file written by CDO, cut by 4 bytes: refused naming the file."""
    tmp = fresh(io_env, "weights")
    src = os.path.join(tmp, "src.nc")
    subprocess.run(["cdo", "-s", "-f", "nc", "const,1,r36x18", src], check=True)
    w = os.path.join(tmp, "w.nc")
    subprocess.run(["cdo", "-s", "gendis,r24x12", src, w], check=True)
    code = "from mpi4py import MPI\nw = estuary.read_weights({!r}, MPI.COMM_WORLD)\nprint('ok')"
    ok = read_with_estuary(code.format(w))
    assert ok.returncode == 0 and "ok" in ok.stdout, ok.stdout + ok.stderr
    bad = truncated_copy(w, os.path.join(tmp, "w_cut.nc"), 4)
    r = read_with_estuary(code.format(bad))
    assert r.returncode != 0 and "the file is truncated" in r.stderr and bad in r.stderr, r.stdout + r.stderr


# ---- one failed Python rank stops the job ----

HANGER = """
import estuary
from mpi4py import MPI
comm = MPI.COMM_WORLD
if comm.rank == 1:
    raise ValueError("model failure on rank 1")
comm.recv(source=1)  # waits for a message rank 1 will never send
"""


def test_python_exception_on_one_rank_aborts_the_job(io_env, tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(HANGER)
    t0 = time.time()
    p = subprocess.run([io_env["mpiexec"], "-n", "2", sys.executable, str(script)], capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert p.returncode != 0
    assert "ValueError: model failure on rank 1" in p.stderr and "aborting every rank" in p.stderr, p.stderr
    assert time.time() - t0 < 60


def test_python_hook_opt_out_leaves_the_job_waiting(io_env, tmp_path):
    """Without the hook (ESTUARY_ABORT_ON_EXCEPTION=0) rank 0 waits forever: what the hook prevents."""
    script = tmp_path / "hang.py"
    script.write_text(HANGER)
    p = subprocess.Popen([io_env["mpiexec"], "-n", "2", sys.executable, str(script)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env={**os.environ, "ESTUARY_ABORT_ON_EXCEPTION": "0"},
                         start_new_session=True)
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(timeout=8)
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate()


STUCK_PARTNER = """
import sys, time
import numpy as np
import estuary
import estuary.couple as pyoasis
from estuary.couple import OASIS
from mpi4py import MPI

d = sys.argv[1]
comm = MPI.COMM_WORLD
if comm.rank == 0:
    rows = np.arange(8, dtype=np.int64)
    estuary.write_weights(d + "/w.nc", rows, rows, np.ones(8), 8, 8, MPI.COMM_SELF)
    open(d + "/namcouple", "w").write(
        " $NFIELDS\\n 1\\n $END\\n $RUNTIME\\n 7200\\n $END\\n $NNOREST\\n T\\n $END\\n $STRINGS\\n"
        "A_F O_F 1 3600 1 rst.nc EXPORTED\\n8 1 8 1 agrd ogrd\\nR 0 R 0\\nMAPPING\\nw.nc dst bfb\\n $END\\n")
comm.Barrier()
name = "atm" if comm.rank == 0 else "ocn"
comp = pyoasis.Component(name, config=d + "/namcouple", directory=d)
part = pyoasis.ApplePartition(0, 8, global_size=8, name="agrd" if comm.rank == 0 else "ogrd")
var = pyoasis.Var("A_F" if comm.rank == 0 else "O_F", part, OASIS.OUT if comm.rank == 0 else OASIS.IN)
comp.enddef()
if comm.rank == 0:
    var.put(0.0, np.arange(8.0))
    comp.terminate()   # the ocean never comes: bounded by the time-out
else:
    var.get(0.0, np.zeros(8))
    time.sleep(600)    # stuck (an endless loop, a hung file system) instead of terminate
"""


def test_terminate_waits_at_most_the_timeout_for_a_stuck_partner(io_env, tmp_path):
    """The atmosphere reaches terminate, the ocean never does: terminate raises after the
    coupling time-out (2 x 2 s x (1 coupling + 1)) naming the step, and the abort hook ends the job."""
    script = tmp_path / "stuck.py"
    script.write_text(STUCK_PARTNER)
    t0 = time.time()
    p = subprocess.Popen([io_env["mpiexec"], "-n", "2", sys.executable, str(script), str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "ESTUARY_COUPLE_TIMEOUT": "2"}, start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise AssertionError("terminate waited for the stuck partner beyond the time-out")
    assert p.returncode != 0
    assert "terminate of component atm: the other ranks did not all arrive within 8 s" in err, out + err
    assert time.time() - t0 < 60


# ---- configuration faults: refused with the file, the line and the key, nothing written ----

FAULT_YAML = """output:
  mode: {mode}
  writers: {writers}
  directory: {dir}
  files:
    - name: f
      output_freq: 2h
      fields:
        - {{name: t3}}
{fields}"""

FAULT_XML = """<?xml version="1.0"?>
<simulation>
 <context id="w">
  <axis_definition>
   <axis id="depth"/>
   <axis id="d2" axis_ref="depth" value="(0,1)[20 100]"><interpolate_axis type="polynomial" order="{order}"/></axis>
  </axis_definition>
  <domain_definition>
   <domain id="atm"/>
   <domain id="box" domain_ref="atm"><zoom_domain {zoom}/></domain>
  </domain_definition>
  <grid_definition>
   <grid id="g3"><domain domain_ref="atm"/><axis axis_ref="depth"/></grid>
   <grid id="g3i"><domain domain_ref="atm"/><axis axis_ref="d2"/></grid>
   <grid id="g2"><domain domain_ref="atm"/></grid>
   <grid id="g2z"><domain domain_ref="box"/></grid>
  </grid_definition>
  <field_definition operation="instant" prec="8">
   <field id="t3" grid_ref="g3"/>
   <field id="sst" grid_ref="g2"/>
  </field_definition>
  <file_definition>
   <file id="f" output_freq="2h">
{fields}
   </file>
  </file_definition>
 </context>
</simulation>
"""

# (id, mode (server: the servers fail alike at end_def), fields (YAML entries or XML elements), the marker of the line at fault, what the
# message says, the key or attribute it names). YAML: the keys added with derived fields,
# output_name, start_date, zoom and levels; XML: unknown attribute, field_ref to nothing, and
# XIOS transformations (zoom_domain, interpolate_axis) that do not map.
CONFIG_FAULTS = [
    ("expr_syntax", "serverless", '        - {name: x, expr: "t3 - * 2"}', "name: x",
     "syntax error in expression 't3 - * 2'", "key output.files[0] (f).fields[1] (x).expr"),
    ("expr_unknown", "server", '        - {name: x, expr: "t3 + wo"}', "name: x",
     "unknown variable 'wo' in expression 't3 + wo'", "key output.files[0] (f).fields[1] (x).expr"),
    ("expr_cycle", "serverless", '        - {name: a, expr: "b + 1"}\n        - {name: b, expr: "2 * a"}', "name: b",
     "derived fields use each other in a cycle", ".expr)"),
    ("output_name_clash", "serverless", "        - {name: sst, output_name: t3}", "output_name: t3",
     "field listed twice (variable 't3')", "key output.files[0] (f).fields[1] (sst))"),
    ("start_date", "serverless", "start_date: 2001-02-30 00:00:00", "start_date:",
     "in calendar standard", "key start_date)"),
    ("zoom_lat", "serverless", "        - {name: sst, zoom: {lat: [40, -40]}}", "zoom:",
     "zoom latitudes [40, -40] are not south <= north", "key output.files[0] (f).fields[1] (sst).zoom)"),
    ("zoom_outside", "server", "        - {name: sst, zoom: {i: [0, 12]}}", "zoom:",
     "zoom i [0, 12], j [0, last] is outside grid 'atm' of 12 x 8 points", "key output.files[0] (f).fields[1] (sst).zoom)"),
    ("zoom_empty", "serverless", "        - {name: sst, zoom: {lat: [80, 85]}}", "zoom:",
     "no point of grid 'atm' lies in the zoom box", "key output.files[0] (f).fields[1] (sst).zoom)"),
    ("levels_beyond", "server", "        - {name: t3, output_name: t3b, levels: [1, 3]}", "levels:",
     "level index 3 is beyond the 3 levels of field 't3'", "key output.files[0] (f).fields[1] (t3).levels)"),
    ("interp_coordinate", "serverless",
     "        - {name: t3, output_name: ti, interpolate_levels: {values: [20], coordinate: air_pressure}}",
     "interpolate_levels", "interpolation coordinate 'air_pressure' is not the level axis of field 't3'",
     "key output.files[0] (f).fields[1] (t3).interpolate_levels)"),
    ("levels_and_interp", "serverless",
     "        - name: t3\n          output_name: tl\n          levels: [0]\n          interpolate_levels: {values: [20]}",
     "interpolate_levels", "levels and interpolate_levels together", "key output.files[0] (f).fields[1] (t3).interpolate_levels)"),
    ("xml_unknown_attribute", "serverless", '    <field field_ref="sst" colour="red"/>', "colour",
     "unknown attribute of <field>", "attribute colour)"),
    ("xml_field_ref", "serverless", '    <field field_ref="sss"/>', "sss",
     "no field 'sss' in the field definition", "attribute field_ref)"),
    ("xml_interp_order", "serverless", '    <field field_ref="t3" name="ti" grid_ref="g3i"/>', "order=",
     "interpolate_axis of order other than 1 is not supported", "<interpolate_axis>, attribute order)"),
    ("xml_zoom_attribute", "serverless", '    <field field_ref="sst" name="sz" grid_ref="g2z"/>', "zoom_domain",
     "unknown attribute of <zoom_domain>", "attribute ibgin)"),
    ("xml_own_zoom", "serverless", '    <field id="sz" grid_ref="g2z" operation="instant"/>', 'id="sz"',
     "the field's own grid is transformed", '<field id="sz">, attribute grid_ref)'),
    ("xml_zoom_outside", "serverless", '    <field field_ref="sst" name="sz" grid_ref="g2z"/>', 'name="sz"',
     "zoom i [10, 14], j [1, 3] is outside grid 'atm'", '<field field_ref="sst">, attribute grid_ref)'),
]


@pytest.mark.parametrize("case,mode,fields,marker,what,key", CONFIG_FAULTS, ids=[c[0] for c in CONFIG_FAULTS])
def test_configuration_fault_names_place_and_writes_nothing(io_env, case, mode, fields, marker, what, key):
    """A configuration error — found when the file is read or at end_def, on every rank — stops
    the run with a message naming the file, the line and the key, and leaves no file behind."""
    base = fresh(io_env, "config_" + case)
    d = os.path.join(base, "out")
    xml = case.startswith("xml_")
    if xml:
        zoom = 'ibgin="0" ni="5"' if case == "xml_zoom_attribute" else 'ibegin="10" ni="5" jbegin="1" nj="3"'
        text = FAULT_XML.format(fields=fields, order=2 if case == "xml_interp_order" else 1, zoom=zoom)
    elif case == "start_date":
        text = fields + "\n" + FAULT_YAML.format(mode=mode, writers=1, dir=d, fields="")
    else:
        text = FAULT_YAML.format(mode=mode, writers=1, dir=d, fields=fields)
    cfg = os.path.join(base, "io.xml" if xml else "io.yaml")
    with open(cfg, "w") as f:
        f.write(text)
    line = next(i + 1 for i, t in enumerate(text.splitlines()) if marker in t)
    p = subprocess.run([io_env["mpiexec"], "-n", "3", io_env["writer"], cfg, "cyclic", "4"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode != 0, p.stdout + p.stderr
    assert what in p.stdout and key in p.stdout, p.stdout + p.stderr
    assert f"{cfg}:{line}" in p.stdout, f"line {line}: " + p.stdout
    written = [os.path.join(r, f) for r, _, fs in os.walk(base) for f in fs if f.endswith((".nc", ".tmp"))]
    assert not written, written
