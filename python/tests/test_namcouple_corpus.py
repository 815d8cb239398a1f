"""estuary's namcouple reader against an independent reference reader, on real namcouple files.

tests/data/namcouples/ holds real public namcouple files (SOURCES.md) and, under refused/, small
files with one defect each (refused/EXPECTED.json).  tests/couple/namcouple_reference.py reads a
namcouple the way OASIS3-MCT's mod_oasis_namcouple.F90 does; for every file:

* the reference refuses it  -> estuary.read_coupling_config raises estuary.Error naming
  "<abs path>:<line>" (just the path for a file-level defect) and the reference's reason;
* the reference reads it but unsupported() lists features estuary lacks -> estuary raises,
  naming the first such line and saying "not supported";
* otherwise estuary's dict equals the reference's (the keys listed in KEYS below).

The reference-only tests (test_reference_*) need no estuary build.  Serial: no MPI needed.
"""
import importlib.util
import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "namcouples"
REFUSED = DATA / "refused"

_spec = importlib.util.spec_from_file_location("namcouple_reference",
                                               ROOT / "tests" / "couple" / "namcouple_reference.py")
ref_reader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref_reader)

TOP_KEYS = ("runtime", "nfields", "log_level")
KEYS = ("line", "src_fields", "dst_fields", "period", "lag", "seq", "status", "restart_file",
        "input_file", "src_grid", "dst_grid", "transforms", "loctrans", "mapping", "scripr",
        "conserv", "blasold", "blasnew", "checkin", "checkout")
GRID_KEYS = ("name", "nx", "ny", "periodicity", "overlap")
SCRIPR_KEYS = ("method", "nearest_fill", "grid_type", "field_type", "restriction", "bins",
               "neighbors", "variance", "normalization", "order")

CORPUS = sorted(DATA.glob("*.namcouple"))
EXPECTED = json.loads((REFUSED / "EXPECTED.json").read_text())
REFUSED_FILES = sorted(REFUSED / name for name in EXPECTED)


def _estuary():
    return pytest.importorskip("estuary")


def _where(path, line):
    return "%s:%d" % (path, line) if line is not None else str(path)


def _expect_error(path, line, needle):
    estuary = _estuary()
    with pytest.raises(estuary.Error) as info:
        estuary.read_coupling_config(str(path))
    msg = str(info.value)
    assert _where(path, line) in msg, "estuary's message does not name %s: %s" % (_where(path, line), msg)
    assert needle in msg.lower(), "estuary's message lacks %r: %s" % (needle, msg)


def _same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    return a == b


def _subset(d, keys):
    return {k: d[k] for k in keys}


def _expected_view(ref):
    out = _subset(ref, TOP_KEYS)
    out["couplings"] = []
    for c in ref["couplings"]:
        e = _subset(c, KEYS)
        e["src_grid"] = _subset(c["src_grid"], GRID_KEYS)
        e["dst_grid"] = _subset(c["dst_grid"], GRID_KEYS)
        if c["scripr"] is not None:
            e["scripr"] = _subset(c["scripr"], SCRIPR_KEYS)
        out["couplings"].append(e)
    return out


def _got_view(got):
    """estuary's dict reduced to the compared keys (a missing key fails the test)."""
    out = _subset(got, TOP_KEYS)
    out["couplings"] = []
    for c in got["couplings"]:
        e = _subset(c, KEYS)
        e["src_grid"] = _subset(c["src_grid"], GRID_KEYS)
        e["dst_grid"] = _subset(c["dst_grid"], GRID_KEYS)
        if c["scripr"] is not None:
            e["scripr"] = _subset(c["scripr"], SCRIPR_KEYS)
        e["src_fields"] = list(e["src_fields"])
        e["dst_fields"] = list(e["dst_fields"])
        e["transforms"] = list(e["transforms"])
        out["couplings"].append(e)
    return out


def _diff(exp, got, where="reading"):
    """The first difference between two readings, as text (None when equal)."""
    if isinstance(exp, dict) and isinstance(got, dict):
        for k in exp:
            if k not in got:
                return "%s: key %r missing" % (where, k)
            d = _diff(exp[k], got[k], "%s[%r]" % (where, k))
            if d:
                return d
        return None
    if isinstance(exp, list) and isinstance(got, list):
        if len(exp) != len(got):
            return "%s: %d items expected, %d got" % (where, len(exp), len(got))
        for i, (a, b) in enumerate(zip(exp, got)):
            d = _diff(a, b, "%s[%d]" % (where, i))
            if d:
                return d
        return None
    if type(exp) is not type(got) and not (isinstance(exp, (int, float)) and isinstance(got, (int, float))
                                           and not isinstance(exp, bool) and not isinstance(got, bool)):
        return "%s: %r (%s) expected, %r (%s) got" % (where, exp, type(exp).__name__, got, type(got).__name__)
    if not _same(exp, got):
        return "%s: %r expected, %r got" % (where, exp, got)
    return None


# ---- the reference reader alone (no estuary build needed) ----

@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_reference_reads_corpus(path):
    """The reference either reads the file or refuses it with a line and a reason; never crashes."""
    try:
        r = ref_reader.read(path)
    except ref_reader.NamcoupleRefused as e:
        assert e.reason and e.reason == e.reason.lower()
        return
    assert r["nfields"] >= len(r["couplings"])
    for line, what in ref_reader.unsupported(r):
        assert line >= 1 and what
    json.dumps(_expected_view(r))


@pytest.mark.parametrize("path", REFUSED_FILES, ids=lambda p: p.stem)
def test_reference_refuses_expected(path):
    exp = EXPECTED[path.name]
    with pytest.raises(ref_reader.NamcoupleRefused) as info:
        ref_reader.read(path)
    assert (info.value.line, info.value.reason) == (exp["line"], exp["reason"])


def test_corpus_is_big_enough():
    assert len(CORPUS) >= 25 and len(REFUSED_FILES) >= 10
    listed = (DATA / "SOURCES.md").read_text()
    for p in CORPUS + REFUSED_FILES:
        assert p.stem in listed, "%s is not listed in SOURCES.md" % p.name


# ---- estuary against the reference ----

@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_estuary_matches_reference(path):
    path = path.resolve()
    try:
        ref = ref_reader.read(path)
    except ref_reader.NamcoupleRefused as e:
        _expect_error(path, e.line, e.reason)
        return
    missing = ref_reader.unsupported(ref)
    if missing:
        _expect_error(path, missing[0][0], "not supported")
        return
    estuary = _estuary()
    got = estuary.read_coupling_config(str(path))
    d = _diff(_expected_view(ref), _got_view(got))
    assert d is None, d


@pytest.mark.parametrize("path", REFUSED_FILES, ids=lambda p: p.stem)
def test_estuary_refuses(path):
    exp = EXPECTED[path.name]
    _expect_error(path.resolve(), exp["line"], exp["reason"])
