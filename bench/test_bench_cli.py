"""The benchmark programs' command lines (CLI11) and JSON lines (nlohmann::json).

Each built program: --help lists every option with its default; an unknown option (a typo such as
--iteratons) or a malformed value ends the run with an error naming it instead of running
something else; and what a short run prints is JSON that a JSON parser reads, strings escaped.
The programs' folder is $ESTUARY_BENCH_DIR (set by ctest).
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

BENCH = Path(os.environ.get("ESTUARY_BENCH_DIR", "build/bench"))
PROGRAMS = [p for p in ("allreduce", "globalsum", "redist", "remap", "weights", "io", "pingpong", "sim")
            if (BENCH / p).exists()]


def run(*argv, timeout=120):
    return subprocess.run([str(BENCH / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=timeout)


def json_lines(text):
    rows = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert rows, f"no JSON line in {text!r}"
    return rows


def test_programs_were_built():
    assert {"allreduce", "globalsum", "redist"} <= set(PROGRAMS), f"bench programs missing in {BENCH}"


@pytest.mark.parametrize("prog", PROGRAMS)
def test_help_shows_every_option_with_its_default(prog):
    out = run(prog, "--help")
    assert out.returncode == 0, out.stderr
    options = [line.split()[0] for line in out.stdout.splitlines() if line.strip().startswith("--")]
    assert len(options) >= 2, out.stdout
    assert "=" in out.stdout, f"{prog} --help shows no default:\n{out.stdout}"


@pytest.mark.parametrize("prog", PROGRAMS)
def test_unknown_option_is_refused(prog):
    out = run(prog, "--iteratons", "3")
    assert out.returncode != 0
    assert "--iteratons" in out.stdout + out.stderr


def test_malformed_number_is_refused():
    out = run("redist", "--iterations", "ten")
    assert out.returncode != 0
    assert "iterations" in out.stdout + out.stderr


def test_scientific_notation_and_lists():
    rows = json_lines(run("globalsum", "--sizes", "1e3,2e3", "--iterations", "2").stdout)
    assert sorted({r["n"] for r in rows}) == [1000, 2000]
    rows = json_lines(run("redist", "--n", "1e4", "--iterations", "2", "--src", "block", "--dst", "cyclic").stdout)
    assert rows[0]["n"] == 10000 and rows[0]["errors"] == 0


@pytest.mark.skipif("sim" not in PROGRAMS, reason="built without SimGrid")
def test_error_text_is_escaped_json():
    # A quote and a backslash in a value end up in the error text: the line must stay valid JSON
    # and carry the text unchanged.
    out = run("sim", "--pattern", "halo", "--ranks", "16", "--topology", 'a"b\\c')
    row = json_lines(out.stdout)[0]
    assert 'a"b\\c' in row["error"]
    assert out.returncode != 0


@pytest.mark.skipif("sim" not in PROGRAMS, reason="built without SimGrid")
def test_nested_values_are_json_arrays():
    row = json_lines(run("sim", "--pattern", "coupling", "--algo", "adaptive", "--ranks", "8", "--points", "1e5",
                         "--matrix-bins", "2").stdout)[0]
    assert len(row["matrix_bytes"]) == 2 and all(len(r) == 2 for r in row["matrix_bytes"])
    # Every byte sent lands in the matrix.
    assert sum(map(sum, row["matrix_bytes"])) == row["bytes"]
    assert all({"skip_mask", "simulated_s"} <= set(t) for t in row["trials"])
