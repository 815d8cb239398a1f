"""XIOS XML from Python (estuary.io.read_xios_xml, estuary.Output.from_xios_xml) with NEMO's own
files (tests/data/xios): the set-up estuary reads is compared with an independent reading of the
XML here (xml.etree, XIOS's rules written out again: group inheritance, field_ref chains,
enabled, level against output_level, NEMO's file-name templates); errors name the file and the
line found here by searching the text; a day of NEMO fields written from a set-up that uses
NEMO's field_def has the renamed variables, one record per output period, the period means, and
the CF attributes of the field_def.
"""
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import estuary

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "xios"
SUBS = {"expname": "ORCA2", "startdate": "20000101", "enddate": "20000105"}
GRID_KEYS = ("grid_ref", "domain_ref", "axis_ref", "scalar_ref")


def _duration(text):
    """(seconds, months) of an XIOS duration such as 5d, 1mo, 1y, 6h."""
    seconds, months = 0.0, 0
    for num, unit in re.findall(r"([0-9.]+)\s*(mo|mi|ts|y|d|h|s)", text):
        x = float(num)
        if unit in ("mo", "y"):
            months += int(x) * (12 if unit == "y" else 1)
        else:
            seconds += x * {"d": 86400, "h": 3600, "mi": 60, "s": 1}[unit]
    return seconds, months


def _true(v):
    return v.strip().lower() in ("true", ".true.", "1")


def independent_reading(iodef, subs, context="nemo"):
    """XIOS's resolution of a context's files, written out with xml.etree."""
    base = iodef.parent
    root = ET.parse(iodef).getroot()
    ctx = next(c for c in root.iter("context") if c.get("id") == context)
    if ctx.get("src"):
        ctx = ET.parse(base / ctx.get("src")).getroot()

    def element(e):  # an element, or the root of the file its src names
        return ET.parse(base / e.get("src")).getroot() if e.get("src") else e

    defs = {}

    def walk_defs(e, inherited):
        for c in e:
            a = dict(inherited)
            a.update({k: v for k, v in c.attrib.items() if k != "src"})
            if c.tag == "field":
                a["__text"] = (c.get("expr") or c.text or "").strip()
                a["__expr"] = bool(a["__text"])
                a["__grid"] = tuple(a.get(k, "") for k in GRID_KEYS)
                if c.get("id") in defs:          # XIOS: one object per id, the later attributes win
                    defs[c.get("id")].update({k: v for k, v in a.items() if k != "__expr"})
                elif c.get("id"):
                    defs[c.get("id")] = a
            elif c.tag == "field_group":
                a.pop("id", None)
                walk_defs(c, a)

    for fd in ctx.findall("field_definition"):
        e = element(fd)
        walk_defs(e, {k: v for k, v in e.attrib.items() if k != "src"})

    def resolve_term(name):
        """(field, operation) of `@name`: field_ref followed to the model's field or to a field
        with an expression; the operation is the first one met, the named field's own."""
        op, cur = None, name
        while True:
            d = defs[cur]
            op = op or d.get("operation")
            if d["__expr"] or not d.get("field_ref"):
                return cur, op
            cur = d["field_ref"]

    files = []

    def walk_files(e, inherited):
        for c in e:
            a = {k: v for k, v in inherited.items() if k != "id"}
            a.update({k: v for k, v in c.attrib.items() if k != "src"})
            if c.tag == "file_group":
                walk_files(c, a)
            elif c.tag == "file":
                if "enabled" in a and not _true(a["enabled"]):
                    continue
                freq = a["output_freq"].strip()
                name = a.get("name", a.get("id")) + a.get("name_suffix", "")
                name = name.replace("@freq@", freq[:-1] if freq.endswith("mo") else freq)
                for k, v in subs.items():
                    name = name.replace(f"@{k}@", v)
                out_level = int(a.get("output_level", 5))
                fields = []
                one_value = []  # instant `@` expressions over each output period
                for f in c.iter("field"):
                    own = dict(f.attrib)
                    fa = dict(own)
                    own_text = (f.get("expr") or f.text or "").strip()
                    chain_expr = bool(own_text)
                    expr_id = None  # the field_definition field whose expression gives the data
                    grids = [tuple(own.get(k, "") for k in GRID_KEYS)]
                    ref, source = own.get("field_ref"), own.get("id")
                    while ref:
                        d = defs[ref]
                        for k, v in d.items():
                            if k not in ("id", "field_ref") and not k.startswith("__") and k not in fa:
                                fa[k] = v
                        if not chain_expr and d["__expr"]:
                            expr_id = ref
                        chain_expr = chain_expr or d["__expr"]
                        grids.append(d["__grid"])
                        source, ref = ref, d.get("field_ref")
                    if "enabled" in fa and not _true(fa["enabled"]):
                        continue
                    if int(fa.get("level", 1)) > out_level:
                        continue
                    # Grid transformation: a field that sets another grid than the one it refers to.
                    g, transform = None, False
                    for grid in reversed(grids):
                        if any(grid):
                            transform = transform or (g is not None and grid != g)
                            g = grid
                    if transform or _true(fa.get("detect_missing_value", "false")):
                        continue  # what skip_unsupported leaves out
                    variable = fa.get("name", source)
                    expr, at, freq_op = "", {}, (0.0, 0)
                    if own_text:  # the file's own expression: a derived field of this file
                        source, expr = f"{variable}@{name}", own_text
                    elif expr_id:
                        source = expr_id
                    if expr:
                        for term in sorted(set(re.findall(r"@(\w+)", expr))):
                            at[term] = resolve_term(term)
                        if at and "freq_op" in fa:
                            freq_op = _duration(fa["freq_op"])
                    if at and fa["operation"] == "instant" and freq_op == _duration(freq):
                        one_value.append(len(fields))
                    fields.append({
                        "variable": variable, "source": source,
                        "operation": fa["operation"], "precision": "double" if fa.get("prec") == "8" else "float",
                        "units": fa.get("unit", ""), "long_name": fa.get("long_name", ""),
                        "standard_name": fa.get("standard_name", ""),
                        "expr": expr, "at": at, "freq_op": freq_op,
                    })
                # One time axis a file: with averaged fields beside them, the instant `@`
                # expressions over each output period are written as the mean of their one value.
                if {f["operation"] == "instant" for f in fields} == {True, False}:
                    for i in one_value:
                        fields[i]["operation"] = "average"
                if fields:
                    files.append({"name": name, "output_freq": _duration(freq), "fields": fields})

    for fd in ctx.findall("file_definition"):
        e = element(fd)
        walk_files(e, {k: v for k, v in e.attrib.items() if k != "src"})
    return files


def test_nemo_setup_matches_independent_reading():
    got = estuary.io.read_xios_xml(DATA / "iodef.xml", substitutions=SUBS, skip_unsupported=True)
    want = independent_reading(DATA / "iodef.xml", SUBS)
    assert got["context"] == "nemo"
    assert got["variables"]["ref_year"] == "1900"
    keys = ("variable", "source", "operation", "precision", "units", "long_name", "standard_name", "expr")
    mine = [{"name": f["name"], "output_freq": tuple(f["output_freq"]),
             "fields": [{**{k: v[k] for k in keys}, "at": {n: tuple(t) for n, t in v["at"].items()},
                         "freq_op": tuple(v["freq_op"])} for v in f["fields"]]} for f in got["files"]]
    assert [f["name"] for f in mine] == [f["name"] for f in want]
    for m, w in zip(mine, want):
        assert m == w, m["name"]
    assert len(mine) == 7 and sum(len(f["fields"]) for f in mine) > 100  # 5 ocean files, 2 sea-ice
    # NEMO's renames: e.g. <field field_ref="empmr" name="wfo"/> writes the model's empmr as wfo.
    t = next(f for f in got["files"] if f["name"].endswith("_grid_T"))
    wfo = next(v for v in t["fields"] if v["variable"] == "wfo")
    assert wfo["source"] == "empmr" and wfo["grid_ref"] == "grid_T_2D_inner"
    # The 8 expressions of the 5d files are read, each with the text found here; the field_def
    # expressions they use (toce_e3t = toce * e3t, sst2 = sst * sst, ...) are derived fields.
    text = (DATA / "file_def_nemo-oce.xml").read_text().splitlines()
    exprs = [m.group(1).strip() for line in text if (m := re.search(r"<field [^>]*>([^<]*\S[^<]*)</field>", line))]
    assert len(exprs) == 8
    read = [v["expr"] for f in got["files"] for v in f["fields"] if v["expr"]]
    assert sorted(read) == sorted(exprs)
    defs_text = (DATA / "field_def_nemo-oce.xml").read_text()
    for name, d in got["derived"].items():
        assert re.search(rf'<field id="{name}"[^>]*>\s*{re.escape(d["expr"])}\s*</field', defs_text), name
    assert got["derived"]["toce_e3t"]["expr"] == "toce * e3t"
    # What is left out is said, with its file and line: the zonal means of the monthly files
    # (grid transformations).
    # The sea-ice fields NEMO writes with detect_missing_value (ice temperatures, salinity) are left
    # out too, each named where the field_def sets it.
    ice = (DATA / "field_def_nemo-ice.xml").read_text().splitlines()
    dmv = [i + 1 for i, line in enumerate(ice) if 'detect_missing_value="true"' in line]
    used = {w.split(", ")[0] for w in got["warnings"] if "detect_missing_value" in w}
    assert used and used <= {f"{DATA / 'field_def_nemo-ice.xml'}:{n}" for n in dmv}


def test_errors_name_file_and_line(tmp_path):
    (tmp_path / "field_def.xml").write_text((DATA / "field_def_nemo-oce.xml").read_text())
    bad = ('<simulation><context id="nemo">\n<field_definition src="./field_def.xml"/>\n'
           '<file_definition>\n<file id="f" output_freq="1d">\n'
           '  <field field_ref="sst" name="tos"/>\n  <field field_ref="sea_ice" name="siconc"/>\n'
           '</file>\n</file_definition></context></simulation>\n')
    (tmp_path / "iodef.xml").write_text(bad)
    line = bad.splitlines().index('  <field field_ref="sea_ice" name="siconc"/>') + 1
    with pytest.raises(estuary.Error) as e:
        estuary.io.read_xios_xml(tmp_path / "iodef.xml")
    assert "no field 'sea_ice' in the field definition" in str(e.value)
    assert f"iodef.xml:{line}, <field field_ref=\"sea_ice\">, attribute field_ref" in str(e.value)
    # An attribute that would change the numbers: named with its line.
    (tmp_path / "iodef.xml").write_text(bad.replace('name="siconc"', 'scale_factor="0.01"').replace("sea_ice", "sss"))
    with pytest.raises(estuary.Error, match=rf"iodef.xml:{line}, <field field_ref=\"sss\">, attribute scale_factor"):
        estuary.io.read_xios_xml(tmp_path / "iodef.xml")


def test_interpolate_domain_is_the_file_grid(tmp_path):
    """XIOS's interpolate_domain on a field's grid becomes the file's grid in the dict (the
    values are tested in C++, test_io_regrid); a file mixing it with the model's grid is refused
    at the field's line."""
    xml = ('<simulation><context id="nemo">\n'
           '<field_definition><field id="sst" grid_ref="gT" operation="average"/></field_definition>\n'
           '<domain_definition><domain id="T"/>\n'
           '<domain id="reg" type="rectilinear" ni_glo="36" nj_glo="18"><generate_rectilinear_domain/>'
           '<interpolate_domain order="1" weight_filename="rmp.nc"/></domain></domain_definition>\n'
           '<grid_definition><grid id="gT"><domain domain_ref="T"/></grid>'
           '<grid id="greg"><domain domain_ref="reg"/></grid></grid_definition>\n'
           '<file_definition><file id="f" output_freq="1d">\n'
           '  <field field_ref="sst" grid_ref="greg"/>\n'
           '</file></file_definition></context></simulation>\n')
    (tmp_path / "iodef.xml").write_text(xml)
    got = estuary.io.read_xios_xml(tmp_path / "iodef.xml")
    assert got["files"][0]["grid"] == "lonlat:36x18 conservative order=1 destarea"
    assert got["files"][0]["weights"] == "rmp.nc"
    mixed = xml.replace('  <field field_ref="sst" grid_ref="greg"/>\n',
                        '  <field field_ref="sst" grid_ref="greg"/>\n  <field field_ref="sst" name="sst2"/>\n')
    (tmp_path / "iodef.xml").write_text(mixed)
    with pytest.raises(estuary.Error, match=r"field 'sst2' is on another grid .*iodef.xml:8, <field field_ref=\"sst\">"):
        estuary.io.read_xios_xml(tmp_path / "iodef.xml")


NX, NY, NLEV, DT = 12, 8, 3, 3600.0
LEVELS = [5.0, 50.0, 500.0]


def sval(name, g, step):
    g = np.asarray(g, dtype=np.float64)
    return {"sst": 10 + np.sin(0.3 * g), "sss": 35 + 0.01 * g, "ssh": 0.1 * np.cos(g)}[name] + 0.125 * step


def tval(g, step):
    return 2.0 + 0.25 * np.asarray(g, dtype=np.float64) + 0.5 * step


def test_write_nemo_fields_one_day(comm, shared_dir):
    """NEMO's field_def, a file_def of 6-hourly files: a day of hourly writes."""
    iodef = shared_dir / "iodef.xml"
    if comm.rank == 0:
        (shared_dir / "file_def.xml").write_text(
            '<file_definition type="one_file" name="@expname@_@freq@" sync_freq="1d">\n'
            ' <file_group id="6h" output_freq="6h" output_level="10">\n'
            '  <file id="t" name_suffix="_grid_T" compression_level="1" description="T grid">\n'
            '   <field field_ref="sst" name="tos"/>\n   <field field_ref="sss" name="sos"/>\n'
            '   <field field_ref="ssh" name="zos"/>\n   <field field_ref="sstmax" name="tosmax"/>\n'
            '   <field field_ref="toce" name="thetao"/>\n'
            '  </file>\n </file_group>\n</file_definition>\n')
        iodef.write_text(
            '<?xml version="1.0"?>\n<simulation>\n <context id="nemo">\n'
            f'  <field_definition src="{DATA / "field_def_nemo-oce.xml"}"/>\n'
            '  <file_definition src="./file_def.xml"/>\n </context>\n</simulation>\n')
    comm.Barrier()
    r, p = comm.rank, comm.size
    nh = NX * NY
    part = estuary.gen.cyclic(nh, r, p)
    idx2 = part.to_indices()
    idx3 = np.arange(r, NLEV * nh, p, dtype=np.int64)[::-1].copy()
    import warnings

    with warnings.catch_warnings(record=True) as caught:  # estuary writes no description: said once
        warnings.simplefilter("always")
        out = estuary.Output.from_xios_xml(iodef, comm, substitutions={"expname": "ORCA2"},
                                           directory=shared_dir / "out")
    said = [str(w.message) for w in caught if "attribute description" in str(w.message)]
    assert len(said) == (1 if comm.rank == 0 else 0), said
    with out:
        out.def_grid("T", estuary.GridGen.lonlat(NX, NY).make(part))
        for name in ("sst", "sss", "ssh"):
            out.def_field(name, "T", part)
        out.def_field("toce", "T", estuary.Decomp.indices(NLEV * nh, idx3), levels=LEVELS)
        out.enddef()
        for step in range(1, 25):
            for name in ("sst", "sss", "ssh"):
                out.write(name, step * DT, sval(name, idx2, step))
            out.write("toce", step * DT, tval(idx3, step))
    comm.Barrier()
    if comm.rank != 0:
        return
    # The field_def's attributes, read here from the XML.
    defs = {f.get("id"): f.attrib for f in ET.parse(DATA / "field_def_nemo-oce.xml").getroot().iter("field")}
    with netCDF4.Dataset(shared_dir / "out" / "ORCA2_6h_grid_T.nc") as ds:
        assert {"tos", "sos", "zos", "tosmax", "thetao"} <= set(ds.variables)
        assert not {"sst", "sss", "ssh", "toce"} & set(ds.variables)
        assert ds.dimensions["time"].size == 4  # 6-hourly over one day
        for var, src in (("tos", "sst"), ("sos", "sss"), ("zos", "ssh"), ("thetao", "toce")):
            v = ds[var]
            assert v.long_name == defs[src]["long_name"] and v.units == defs[src]["unit"]
            assert v.standard_name == defs[src]["standard_name"]
            assert v.cell_methods == "time: mean"
            assert v.dtype == np.float32  # field_definition's prec="4"
            assert v.filters()["zlib"] and v.filters()["complevel"] == 1
        assert ds["tosmax"].long_name == defs["sstmax"]["long_name"]
        assert ds["tosmax"].units == defs["sst"]["unit"]  # through field_ref
        assert ds["tosmax"].cell_methods == "time: maximum"
        g = np.arange(nh)
        for rec in range(4):
            steps = range(6 * rec + 1, 6 * rec + 7)
            for var, src in (("tos", "sst"), ("sos", "sss"), ("zos", "ssh")):
                want = np.mean([sval(src, g, s) for s in steps], axis=0).astype(np.float32)
                np.testing.assert_array_equal(ds[var][rec].ravel(), want, err_msg=f"{var} record {rec}")
            np.testing.assert_array_equal(ds["tosmax"][rec].ravel(),
                                          np.max([sval("sst", g, s) for s in steps], axis=0).astype(np.float32))
            want = np.mean([tval(np.arange(NLEV * nh), s) for s in steps], axis=0).astype(np.float32)
            np.testing.assert_array_equal(ds["thetao"][rec].ravel(), want)


def test_cli_io_check(capsys):
    """`estuary io check`: the same set-up as read_xios_xml (JSON), the text listing, errors."""
    import json

    from estuary.cli import main

    sets = [f"--set={k}={v}" for k, v in SUBS.items()]
    assert main(["io", "check", str(DATA / "iodef.xml"), *sets, "--skip-unsupported", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = estuary.io.read_xios_xml(DATA / "iodef.xml", substitutions=SUBS, skip_unsupported=True)
    assert [f["name"] for f in got["files"]] == [f["name"] for f in want["files"]]
    assert got["warnings"] == want["warnings"]
    assert main(["io", "check", str(DATA / "iodef.xml"), *sets, "--skip-unsupported"]) == 0
    text = capsys.readouterr().out
    assert "ORCA2_5d_20000101_20000105_grid_T.nc  every 5d  netcdf4" in text
    assert "  wfo <- empmr  average float  [kg/m2/s]" in text
    assert main(["io", "check", str(DATA / "iodef.xml"), *sets]) == 1
    err = capsys.readouterr().err
    assert "grid transformation) is not supported" in err and "file_def_nemo-oce.xml:113" in err


def test_zoom_and_levels_from_xios_transformations(tmp_path, capsys):
    """A file's fields on grids made by zoom_domain, zoom_axis and interpolate_axis show their
    zoom and levels in read_xios_xml's dict (written from them: tests/io/test_io_zoom.py)."""
    (tmp_path / "iodef.xml").write_text("""<simulation><context id="c">
 <axis_definition><axis id="z"/><axis id="zz" axis_ref="z"><zoom_axis begin="1" n="2"/></axis>
  <axis id="zi" axis_ref="z" value="(0,1)[15 75]"><interpolate_axis order="1"/></axis></axis_definition>
 <domain_definition><domain id="d"/>
  <domain id="dz" domain_ref="d"><zoom_domain ibegin="3" ni="4" jbegin="0" nj="2"/></domain></domain_definition>
 <grid_definition><grid id="g"><domain domain_ref="d"/><axis axis_ref="z"/></grid>
  <grid id="gz"><domain domain_ref="dz"/><axis axis_ref="zz"/></grid>
  <grid id="gi"><domain domain_ref="d"/><axis axis_ref="zi"/></grid></grid_definition>
 <field_definition operation="average"><field id="t" grid_ref="g"/></field_definition>
 <file_definition><file id="f" output_freq="1d">
  <field field_ref="t"/><field field_ref="t" name="tz" grid_ref="gz"/><field field_ref="t" name="ti" grid_ref="gi"/>
 </file></file_definition></context></simulation>
""")
    got = estuary.io.read_xios_xml(tmp_path / "iodef.xml")
    t, tz, ti = got["files"][0]["fields"]
    assert t["zoom"] is None and t["levels"] is None and t["interpolate_levels"] is None
    assert tz["zoom"] == {"i": (3, 6), "j": (0, 1)} and tz["levels"] == [1, 2]
    assert ti["zoom"] is None and ti["interpolate_levels"] == [15.0, 75.0]
    from estuary.cli import main

    assert main(["io", "check", str(tmp_path / "iodef.xml")]) == 0
    text = capsys.readouterr().out
    assert "  tz <- t  average float  []  zoom i [3, 6], j [0, 1]  levels [1, 2]" in text, text
    assert "  ti <- t  average float  []  interpolated to [15.0, 75.0]" in text, text
