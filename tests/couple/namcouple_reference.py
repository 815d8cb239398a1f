#!/usr/bin/env python3
"""Reference reader for OASIS3-MCT ``namcouple`` files (stdlib only).

This module reads a namcouple the way OASIS3-MCT's ``lib/psmile/src/mod_oasis_namcouple.F90``
does, and returns the result in estuary's vocabulary (the dict that
``estuary.read_coupling_config(path)`` returns).  It was written from the OASIS Fortran source
and the OASIS3-MCT user guide only, not from estuary's C++ reader, so that the two can be
checked against each other (``python/tests/test_namcouple_corpus.py``).

    read(path) -> dict                 raises NamcoupleRefused(line, reason)
    unsupported(reading) -> [(line, what)]   features estuary does not implement (yet)
    python3 tests/couple/namcouple_reference.py FILE...   prints the readings as JSON

Sources (GitHub ``ACCESS-NRI/oasis3-mct``, path ``lib/psmile/src/mod_oasis_namcouple.F90``):

* **4.0**: commit ``01be3925654af00295e0fe62376864590401f9c1`` (has $NMAPDEC, $NMATXRD,
  $NWGTOPT, 2-value $NLOGPRT, no LOCC* methods);
* **5.0+**: commit ``74c929d7f88edcb3eea87f929964c64f6f0607c8`` (adds $NCDFTYP, the third
  $NLOGPRT value, SCRIPR LOCCUNIF/LOCCDIST/LOCCGAUS, CONSERV north/south thresholds, the new
  BLASNEW syntax and, under ``#ifdef YAC_REMAP``, the YAC transformation).

This reader follows 5.0+ built without YAC_REMAP; "(4.0: ...)" notes where 4.0 differs.  F90
references name the subroutine and quote a string found next to the rule (grep for it).
OASIS reads the file in three passes (``inipar_alloc`` twice over $STRINGS, then ``inipar``,
then checks in ``oasis_namcouple_init``); this reader makes one pass in file order, so when a
file has several defects the one reported is the first in file order (OASIS may abort on
another one first).  Rules marked **[strict]** are estuary's: OASIS would not abort there but
would silently misread the file, so the reference refuses.

Refusals: ``NamcoupleRefused.line`` is the 1-based line of the defect (None for a file-level
defect such as a missing keyword) and ``NamcoupleRefused.reason`` is a short lower-case
substring that a good error message must contain (usually the offending token itself).

LINES AND TOKENS
L1  The file is a sequence of records separated by LF; one trailing CR is dropped (gfortran
    ends a record at CR LF).  A last line without LF is still a record.  Records are read with
    ``rform = '(A5000)'``; a non-comment line longer than 5000 characters is refused [strict]
    (OASIS silently truncates it).  Reason "5000".
L2  A line is a comment if, after its leading blanks, it is empty or starts with ``#``
    (``checkcomment``).  ``#`` anywhere else is an ordinary character: ``3600 # s`` has the
    tokens ``3600``, ``#``, ``s``.
L3  Tokens are separated by blanks (``' '``) only (``parse``).  A TAB is an ordinary character
    to OASIS, so a non-comment line containing a TAB is refused [strict]; reason "tab".
L4  "The next line" always means the next non-comment line (``skip``).  Running out of lines
    where OASIS needs one aborts (READ without END=, or ``parse`` called on the comment line
    ``skip`` leaves behind: "ERROR comment line found").  Reason "end of file"; the line is
    the keyword line or the first line of the entry being read.
L5  Unfilled template placeholders are refused [strict] before anything else, in file order:
    a token of a non-comment line containing ``<name>``, ``${..}``, ``$(..)``, ``@name@``,
    ``{{..}}``, or a ``$name`` that is not the line's first token.  Reason: the placeholder
    text (lower case).  Bare words such as ``namcouple_runtime`` where a number is expected are
    caught by N1.
N1  Numbers are Fortran formatted reads of the token: ``I4`` ($NFIELDS, label, number of
    transformations, SCRIPR bins, neighbours, BLAS counts), ``I8`` (period, grid sizes, the
    number in LAG=/SEQ=), ``I12`` ($RUNTIME, $NLOGPRT, $NUNITNO), ``I2`` (overlaps).  An
    absent token reads as 0; otherwise ``[+-]digits`` or OASIS aborts (runtime I/O error).
    Reason: the token (lower case).  A token longer than the field width is refused [strict]
    (OASIS would read only its first w characters: ``315360000`` as I8 is 31536000).
N2  Reals (BLASOLD/BLASNEW coefficients, GAUSWGT variance, CONSERV thresholds): the token is
    read as ``A15``; without a ``.`` it is read as ``I10``, else as ``E15.6`` (inipar,
    "convert it accordingly").  Tokens longer than 15 (or 10 without ``.``) are refused
    [strict].  D/Q exponents are accepted as Fortran does.

FIRST SECTION (header keywords)
K1  Every non-comment line whose first token starts with ``$`` must be one of $NFIELDS
    $CHANNEL $STRINGS $NBMODEL $JOBNAME $RUNTIME $SEQMODE $INIDATE $MODINFO $NLOGPRT $NMAPDEC
    $NCDFTYP $NMATXRD $NUNITNO $NNOREST $CALTYPE $END $NWGTOPT (case-sensitive, exact), or
    OASIS aborts (inipar_alloc, "invalid keyword").  This includes lines inside $STRINGS.
    Reason: the token.  (4.0: no $NCDFTYP.)
K2  A keyword is found by scanning the whole file for the first non-comment line whose first
    token is the keyword (``findkeyword``); its value is the next non-comment line (L4), token
    1 (token 2... for multi-value keywords).  Blocks may come in any order; ``$END`` after a
    value is optional and is never looked for; lines between blocks that do not start with
    ``$`` (e.g. a stray ``END``) are ignored.  Anything after the keyword on its own line is
    ignored.
K3  $NFIELDS (required, "not found in namcouple"; reason "$nfields", line None): I4 ->
    ``nfields``, the MAXIMUM number of $STRINGS entries read.
K4  $STRINGS is required (reason "$strings", line None).
K5  $RUNTIME (required, reason "$runtime"): I12 -> ``runtime`` (seconds).
K6  $NLOGPRT (optional): I12 -> ``log_level`` (default 2); token 2 ntlogprt (I12, default 0;
    if negative it is set to 0 and token 3 is not read); token 3 nlblogprt (I12, 5.0+).
K7  $NNOREST: true if the token starts with t, T, .t or .T.  $NMAPDEC must be decomp_1d or
    decomp_wghtfile; $NMATXRD orig or ceg; $NCDFTYP cdf1, cdf2 (or cdf5, accepted here; OASIS
    needs CDF_64BIT_DATA for it); $NWGTOPT abort_on_bad_index, ignore_bad_index,
    ignore_bad_index_silently or use_bad_index; $NUNITNO two I12.  Otherwise OASIS aborts
    ("ERROR in namcouple ... argument"); reason: the token.  These values are checked but
    are not part of the reading.
K8  $NBMODEL $CHANNEL $JOBNAME $SEQMODE $INIDATE $MODINFO $CALTYPE are obsolete: only their
    keyword line is looked at (a warning); their value lines are not read.

SECOND SECTION ($STRINGS)
S1  Entries start on the line after $STRINGS.  At most ``nfields`` entries are read
    (inipar_alloc, ``DO WHILE (.not. endflag .and. jf < ig_total_nfield)``).  An entry whose
    first token is ``$END`` ends the list; the end of the file ends it too (READ END=241).
    But if $NFIELDS is larger than the number of entries, there is no $END, and only comment
    or blank lines follow the last entry, OASIS reads such a line as an entry and aborts
    ("comment line found"): reason "$nfields", line = that trailing line.
S2  After the last entry only ``$END`` lines (and comments) may follow, else OASIS aborts
    ("NFIELDS too small, increase it in namcouple").  So $STRINGS must be the LAST block.
    Reason "$nfields" for an entry-like line, "after $strings" if the line's first token
    starts with ``$`` (also when such a line comes where an entry is expected: OASIS reads
    it as an entry and aborts on its period 0).
E1  Entry line 1: ``src dst label period ntrans file status``.  ``src``/``dst`` are
    colon-separated lists (``src_fields``/``dst_fields``).  ntrans = I4(token 5), negative
    means 0.  Status (inipar_alloc "Get field STATUS"): token 6 starting with OUTPUT means
    OUTPUT with no file; else token 7 by prefix: EXPORTED (8 chars), OUTPUT (6), IGNORED (7),
    EXPOUT (6), IGNOUT (6), AUXILARY (exact), INPUT (5).  File (token 6) is the restart file,
    except for INPUT where it is the input file.  ``restart_file``/``input_file`` are "" when
    absent.  (estuary's brief put OUTPUT's file in ``input_file``; OASIS stores it in
    ``namrstfil`` (the restart of the LOCTRANS accumulation), and so does this reader.)
E2  IGNORED -> EXPORTED and IGNOUT -> EXPOUT (oasis_namcouple_init, "IGNORED converted to
    EXPORTED"), but they keep the non-EXPORTED layout (E5, E7).  AUXILARY aborts
    ("AUXILARY NOT SUPPORTED"); reason "auxilary".  Any other status: OASIS keeps the entry
    with operation 0 (never exchanged) or misreads the following lines; refused [strict],
    reason "status".
E3  label = I4(token 3), read but unused.  period (inipar "Get field exchange frequency"):
    token 4 starting with ONCE means ``runtime``; else I8; 0 aborts ("The coupling period must
    not be 0"), reason "period".  Negative periods are accepted unchanged (no sentinel in the
    reader; ACCESS-OM2 writes -1).  A period longer than $RUNTIME only warns.
E4  Line 2 (every status but INPUT; INPUT entries are one line): if it has fewer than 3
    tokens, tokens 1-2 are the grid names, sizes 0.  Else token 3 is read as (A3,A1,I8): if it
    is ``SEQ...`` or ``LAG=...`` tokens 1-2 are the names and tokens 3-6 the LAG/SEQ
    candidates; otherwise tokens 1-4 are nx_src ny_src nx_dst ny_dst (I8), tokens 5-6 the
    names, tokens 7-10 the candidates.  Each candidate present is read as (A3,A1,I8) (a bad
    number aborts even if it is not SEQ/LAG); ``SEQ`` sets seq, ``LAG`` sets lag (the ``=`` is
    not checked there).  Defaults lag 0, seq 1; INPUT entries have lag 0 and seq 0
    (ig_total_nseqn is never set for them).  Grid names and restart/input file names longer
    than 32 characters are refused [strict] (OASIS's CHARACTER(32) truncates them); reason
    "32 characters".  The names/sizes are reported for every status that has a line 2 (OASIS
    keeps them only for EXPORTED/EXPOUT).
E5  Line 3 only for EXPORTED, EXPOUT (not IGNORED/IGNOUT/OUTPUT/INPUT): ``P|R n P|R n``;
    tokens 1 and 3 must be exactly P or R ("==> must be P or R"), reason "p or r"; tokens 2
    and 4 are I2 (absent: 0).  Without line 3 the grids are reported as ("R", 0).
E6  If ntrans > 0, the transformations line follows.  EXPORTED/EXPOUT: its first ntrans tokens
    are the transformations (extra tokens are ignored by OASIS; refused [strict] unless the
    first extra token starts with #).  Fewer than ntrans tokens aborts (blank transformation:
    "Type of analysis not implemented yet"); reason "transformations".  Obsolete ones abort
    (inipar_alloc "OBSOLETE OPERATION": NOINTERP REDGLO INVERT MASK EXTRAP CORRECT INTERP
    MOZAIC FILLING MASKP REVERSE GLORED), reason: the name; YAC aborts without YAC_REMAP,
    reason "yac"; unknown names abort ("not implemented yet"), reason: the name.
E7  IGNORED/IGNOUT/OUTPUT with ntrans > 0: the transformations line must start with LOCTRANS
    ("Only local transformations are available"), reason "loctrans"; then ntrans lines each
    holding a LOCTRANS value (the last one wins).  ``transforms`` = [first token].
E8  Then, for EXPORTED/EXPOUT, each transformation in order reads its configuration line(s):
    LOCTRANS: one line; INSTANT AVERAGE ACCUMUL by 7-char prefix, T_MIN T_MAX by 5-char prefix
      ("Must be INSTANT, AVERAGE, ACCUMUL, T_MIN or T_MAX"); reason "loctrans".
    CHECKIN / CHECKOUT: one line, content ignored (e.g. INT=1).
    MAPPING: ``file [a] [b]``; a and b each one of src dst (location) bfb sum opt (strategy),
      else abort ("ERROR in namcouple mapping argument"), reason: the token.  Defaults src, bfb.
      ``order``: bfb -> "bfb", sum -> "sum", opt -> "sum".
    SCRIPR (inipar "Get Scrip remapping method"): ``METHOD GRIDTYPE FIELDTYPE RESTRICT NBINS
      ...``.  METHOD in CONSERV BILINEAR(NF) BICUBIC(NF) DISTWGT(NF) GAUSWGT(NF) LOCCUNIF
      LOCCDIST LOCCGAUS (4.0: no LOCC*), else abort, reason: the token.  BILINEAR*/BICUBIC*
      need GRIDTYPE LR or D ("cannot be used if grid is not LR or D"), reason "lr or d".
      FIELDTYPE: VECTOR is read as SCALAR; anything else but SCALAR aborts, reason "scalar".
      RESTRICT: with GRIDTYPE D and BILINEAR*/BICUBIC* it must be LATITUDE and becomes REDUCED
      (reason "latitude"); then it must be LATITUDE, LATLON or REDUCED ("must be LATITUDE or
      LATLON"), reason "latitude".  NBINS I4.  CONSERV: token 6 normalisation in FRACAREA
      DESTAREA FRACNNEI DESTNNEI FRACARTR DESTARTR FRACNNTR DESTNNTR (absent or other: abort,
      reason "normalization"); token 7 order required ("ORDER must be indicated"), reason
      "order", not validated; tokens 8-9 north/south thresholds (E15.6, 5.0+), both or none
      ("NTHRESH and STHRESH must both appear"), reason "threshold".  DISTWGT* GAUSWGT* LOCC*:
      token 6 neighbours required ("Number of neighbours must be indicated"), reason
      "neighbo".  GAUSWGT GAUSWGTNF LOCCGAUS: token 7 variance required ("Variance must be
      indicated"), reason "variance" (4.0: GAUSWGT only; GAUSWGTNF kept the default 1).
      Reported: ``method`` without the NF suffix, ``nearest_fill`` = not NF, ``normalization``
      and ``order`` "" unless CONSERV, ``neighbors`` 0 and ``variance`` 0.0 unless used.
    CONSERV: ``MODE [OPT]``; MODE in GLOBAL GLBPOS GSSPOS BASBAL BASPOS BSSPOS (checked in
      oasis_namcouple_init, "CONSERV option not supported"), reason: the token; OPT in bfb opt
      lsum8 lsum16 gather ddpdd reprosum ("ERROR in namcouple conserv argument"), reason: the
      token; default bfb.  ``method``: bfb -> "gather", opt -> "lsum8" (mod_oasis_advance sums
      'opt' as lsum8), other names kept.
    BLASOLD: ``MULT N`` then N lines ``CONSTANT value``; a term other than CONSTANT aborts
      ("BLASOLD only supports CONSTANT"), reason "constant".  ``{"scale": MULT, "add": last
      value or 0}``.
    BLASNEW (5.0+ syntax): ``MULT N``; N > 0 lines: the first ``CONSTANT add`` (else abort,
      reason "constant"), the others ``FIELD mult add`` (a field combination; missing tokens
      abort "BLASNEW parse error", reason "blasnew"; a field repeated or equal to the
      destination list aborts, reason "repeated").  ``{"scale": MULT, "add": add or 0}``.
      (4.0: every term line was ``CONSTANT value`` and the last one won.)
E9  A transformation listed twice is read twice; the last reading wins.

UNSUPPORTED (``unsupported(reading)``, the UNSUPPORTED table below; edit it as estuary grows)
U1  CONSERV normalisations (SCRIPR LOCCUNIF, LOCCDIST, LOCCGAUS: supported since issue 20)
    DESTNNEI FRACARTR DESTARTR FRACNNTR DESTNNTR; CONSERV order other than FIRST or SECOND;
    CONSERV north/south thresholds; global CONSERV GSSPOS/BSSPOS; BLASNEW field combinations.  The line is the transformation's configuration
    line (for BLASNEW the term line); estuary should refuse naming it and "not supported".

READING (estuary's vocabulary)
    {"runtime": float, "nfields": int, "log_level": int, "couplings": [{ "line",
     "src_fields", "dst_fields", "period", "lag", "seq", "status", "restart_file",
     "input_file", "src_grid", "dst_grid", "transforms", "loctrans", "mapping", "scripr",
     "conserv", "blasold", "blasnew", "checkin", "checkout", "transform_lines"}]}
``transform_lines`` (reference only, not in estuary's dict) gives, per transformation, the
line of its first configuration line; ``unsupported()`` names those lines.
"""

import json
import re
import sys

__all__ = ["NamcoupleRefused", "ReferenceError_", "read", "unsupported", "UNSUPPORTED"]


class NamcoupleRefused(Exception):
    """OASIS aborts on this file (or estuary refuses it, see the [strict] rules)."""

    def __init__(self, line, reason, detail=""):
        self.line = line
        self.reason = reason
        self.detail = detail or reason
        where = "line %d" % line if line is not None else "file"
        super().__init__("%s: %s" % (where, self.detail))


ReferenceError_ = NamcoupleRefused  # the name used in the brief

KEYWORDS = ("$NFIELDS", "$CHANNEL", "$STRINGS", "$NBMODEL", "$JOBNAME", "$RUNTIME", "$SEQMODE",
            "$INIDATE", "$MODINFO", "$NLOGPRT", "$NMAPDEC", "$NCDFTYP", "$NMATXRD", "$NUNITNO",
            "$NNOREST", "$CALTYPE", "$END", "$NWGTOPT")
OBSOLETE = ("NOINTERP", "REDGLO", "INVERT", "MASK", "EXTRAP", "CORRECT", "INTERP", "MOZAIC",
            "FILLING", "MASKP", "REVERSE", "GLORED")
KNOWN = ("LOCTRANS", "CHECKIN", "CHECKOUT", "MAPPING", "SCRIPR", "CONSERV", "BLASOLD", "BLASNEW")
SCRIPR_METHODS = ("CONSERV", "BILINEAR", "BILINEARNF", "BICUBIC", "BICUBICNF", "DISTWGT",
                  "DISTWGTNF", "GAUSWGT", "GAUSWGTNF", "LOCCUNIF", "LOCCDIST", "LOCCGAUS")
NORMALIZATIONS = ("FRACAREA", "DESTAREA", "FRACNNEI", "DESTNNEI", "FRACARTR", "DESTARTR",
                  "FRACNNTR", "DESTNNTR")
CONSERV_MODES = ("GLOBAL", "GLBPOS", "GSSPOS", "BASBAL", "BASPOS", "BSSPOS")
CONSERV_OPTS = ("bfb", "opt", "lsum8", "lsum16", "gather", "ddpdd", "reprosum")

# What estuary does not implement yet (edit these when it does).
UNSUPPORTED = {
    "scripr_methods": (),
    "normalizations": ("DESTNNEI", "FRACARTR", "DESTARTR", "FRACNNTR", "DESTNNTR"),
    "orders": ("FIRST", "SECOND"),  # anything else is unsupported
    "conserv_modes": ("GSSPOS", "BSSPOS"),
    "conserv_methods": (),  # estuary has all of OASIS's sums
}

_PLACEHOLDER = re.compile(r"<[A-Za-z_][A-Za-z0-9_.-]*>|\$\{[^}]*\}|\$\([^)]*\)"
                          r"|@[A-Za-z_][A-Za-z0-9_]*@|\{\{[^}]*\}\}")
_SHELLVAR = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*")
_REAL = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)(([eEdDqQ][+-]?|[+-])\d+)?$")


def _toks(text):
    return [t for t in text.split(" ") if t]


def _is_comment(text):
    s = text.lstrip(" ")
    return s == "" or s.startswith("#")


class _File:
    """The namcouple as Fortran sees it: numbered records and a read position."""

    def __init__(self, data):
        text = data.decode("latin-1")
        recs = text.split("\n")
        if recs and recs[-1] == "":
            recs.pop()
        self.lines = [r[:-1] if r.endswith("\r") else r for r in recs]
        self.pos = 0

    def next_nc(self):
        """(lineno, tokens) of the next non-comment line from the read position, or None."""
        i = self.pos
        while i < len(self.lines):
            if not _is_comment(self.lines[i]):
                self.pos = i + 1
                return i + 1, _toks(self.lines[i])
            i += 1
        self.pos = i
        return None


def _out(s):
    """A string of the file as Python str (the file was decoded byte for byte)."""
    return s.encode("latin-1").decode("utf-8", "surrogateescape")


def _int(tok, width, line):
    """Fortran Iw formatted read of a token (absent token: 0)."""
    if tok is None or tok == "":
        return 0
    if not re.fullmatch(r"[+-]?\d+", tok):
        raise NamcoupleRefused(line, tok.lower(), "'%s' is not an integer" % tok)
    if len(tok) > width:
        raise NamcoupleRefused(line, tok.lower(), "'%s' has more than the %d characters OASIS "
                               "reads here (format I%d)" % (tok, width, width))
    return int(tok)


def _real(tok, line):
    """OASIS's real read: A15, then I10 without a '.', else E15.6 (absent token: 0)."""
    if tok is None or tok == "":
        return 0.0
    if len(tok) > 15:
        raise NamcoupleRefused(line, tok.lower(), "'%s' is longer than 15 characters" % tok)
    if "." not in tok:
        return float(_int(tok, 10, line))
    if not _REAL.match(tok):
        raise NamcoupleRefused(line, tok.lower(), "'%s' is not a number" % tok)
    m = re.match(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:[eEdDqQ]?([+-]?\d+))?$", tok)
    mant, exp = m.group(1), m.group(2)
    return float(mant + ("e" + exp if exp else ""))


def _lag_seq(tok, line):
    """(A3,A1,I8) read of a LAG=/SEQ= candidate."""
    if len(tok) > 12:
        raise NamcoupleRefused(line, tok.lower(), "'%s' is longer than OASIS's (A3,A1,I8)" % tok)
    return tok[:3], tok[3:4], _int(tok[4:12], 8, line)


def _tok(t, i):
    return t[i] if i < len(t) else ""


def _prescan(f):
    for n, text in enumerate(f.lines, 1):
        if _is_comment(text):
            continue
        if len(text) > 5000:
            raise NamcoupleRefused(n, "5000", "line longer than the 5000 characters OASIS reads")
        if "\t" in text:
            raise NamcoupleRefused(n, "tab", "TAB character (OASIS separates tokens by blanks "
                                   "only)")
        toks = _toks(text)
        for i, t in enumerate(toks):
            m = _PLACEHOLDER.search(t) or (i > 0 and _SHELLVAR.search(t))
            if m:
                raise NamcoupleRefused(n, m.group(0).lower(),
                                       "unfilled template placeholder '%s'" % m.group(0))
        if toks[0].startswith("$") and toks[0] not in KEYWORDS:
            raise NamcoupleRefused(n, toks[0].lower(), "invalid keyword '%s'" % toks[0])


def _find(f, key):
    """Line number of the first non-comment line whose first token is key, or None."""
    for n, text in enumerate(f.lines, 1):
        if not _is_comment(text) and _toks(text)[0] == key:
            return n
    return None


def _value(f, key, required):
    n = _find(f, key)
    if n is None:
        if required:
            raise NamcoupleRefused(None, key.lower(), "%s not found" % key)
        return None, None
    f.pos = n
    r = f.next_nc()
    if r is None:
        raise NamcoupleRefused(n, "end of file", "%s has no value (end of file)" % key)
    return r


def _header(f, out, ref):
    ln, t = _value(f, "$RUNTIME", True)
    out["runtime"] = float(_int(t[0], 12, ln))
    out["log_level"] = 2
    ref["ntlogprt"] = ref["nlblogprt"] = 0
    ln, t = _value(f, "$NLOGPRT", False)
    if t:
        out["log_level"] = _int(t[0], 12, ln)
        if len(t) > 1:
            ntl = _int(t[1], 12, ln)
            if ntl < 0:
                ntl = 0
            elif len(t) > 2:
                ref["nlblogprt"] = _int(t[2], 12, ln)
            ref["ntlogprt"] = ntl
    ln, t = _value(f, "$NNOREST", False)
    ref["nnorest"] = bool(t) and (t[0][:1] in "tT" or t[0][:2] in (".t", ".T"))
    for key, allowed in (("$NMAPDEC", ("decomp_1d", "decomp_wghtfile")),
                         ("$NMATXRD", ("orig", "ceg")),
                         ("$NCDFTYP", ("cdf1", "cdf2", "cdf5")),
                         ("$NWGTOPT", ("abort_on_bad_index", "ignore_bad_index",
                                       "ignore_bad_index_silently", "use_bad_index"))):
        ln, t = _value(f, key, False)
        if t:
            if t[0] not in allowed:
                raise NamcoupleRefused(ln, t[0].lower(), "%s value '%s' is not one of %s"
                                       % (key, t[0], ", ".join(allowed)))
            ref[key[1:].lower()] = t[0]
    ln, t = _value(f, "$NUNITNO", False)
    if t:
        ref["nunitno"] = (_int(t[0], 12, ln), _int(_tok(t, 1), 12, ln) if len(t) > 1 else 9999)


def _status(t, line):
    t6, t7 = _tok(t, 5), _tok(t, 6)
    if t6[:6] == "OUTPUT":
        return "OUTPUT", False, "", ""
    if t7[:8] == "EXPORTED":
        return "EXPORTED", True, t6, ""
    if t7[:6] == "OUTPUT":
        return "OUTPUT", False, t6, ""
    if t7[:7] == "IGNORED":
        return "EXPORTED", False, t6, ""
    if t7[:6] == "EXPOUT":
        return "EXPOUT", True, t6, ""
    if t7[:6] == "IGNOUT":
        return "EXPOUT", False, t6, ""
    if t7 == "AUXILARY":
        raise NamcoupleRefused(line, "auxilary", "status AUXILARY is not supported by "
                               "OASIS3-MCT")
    if t7[:5] == "INPUT":
        return "INPUT", False, "", t6
    raise NamcoupleRefused(line, "status", "unknown field status '%s' (use EXPORTED, EXPOUT, "
                           "IGNORED, IGNOUT, INPUT or OUTPUT)" % t7)


def _need(f, entry_line, what):
    r = f.next_nc()
    if r is None:
        raise NamcoupleRefused(entry_line, "end of file",
                               "end of file while reading %s of this entry" % what)
    return r


def _check32(name, line, what):
    if len(name) > 32:
        raise NamcoupleRefused(line, "32 characters", "%s '%s' is longer than the 32 characters "
                               "OASIS keeps" % (what, name))


def _loctrans(tok, line):
    if tok[:7] in ("INSTANT", "AVERAGE", "ACCUMUL"):
        return tok[:7]
    if tok[:5] in ("T_MIN", "T_MAX"):
        return tok[:5]
    raise NamcoupleRefused(line, "loctrans", "LOCTRANS value '%s' is not INSTANT, AVERAGE, "
                           "ACCUMUL, T_MIN or T_MAX" % tok)


def _grid(name="", nx=0, ny=0):
    return {"name": _out(name), "nx": nx, "ny": ny, "periodicity": "R", "overlap": 0}


def _scripr(t, ln):
    method = _tok(t, 0)
    if method not in SCRIPR_METHODS:
        raise NamcoupleRefused(ln, method.lower(), "unknown SCRIPR method '%s'" % method)
    gtype = _tok(t, 1)
    base = method[:-2] if method.endswith("NF") else method
    if base in ("BILINEAR", "BICUBIC") and gtype not in ("LR", "D"):
        raise NamcoupleRefused(ln, "lr or d", "SCRIPR %s needs source grid type LR or D, not "
                               "'%s'" % (method, gtype))
    ftype = _tok(t, 2)
    if ftype == "VECTOR":
        ftype = "SCALAR"
    if ftype != "SCALAR":
        raise NamcoupleRefused(ln, "scalar", "SCRIPR field type '%s' must be SCALAR or VECTOR"
                               % ftype)
    restr = _tok(t, 3)
    if gtype == "D" and base in ("BILINEAR", "BICUBIC"):
        if restr != "LATITUDE":
            raise NamcoupleRefused(ln, "latitude", "SCRIPR %s on a reduced (D) grid needs "
                                   "restriction LATITUDE, not '%s'" % (method, restr))
        restr = "REDUCED"
    if restr not in ("LATITUDE", "LATLON", "REDUCED"):
        raise NamcoupleRefused(ln, "latitude", "SCRIPR restriction '%s' must be LATITUDE or "
                               "LATLON" % restr)
    s = {"method": base, "nearest_fill": not method.endswith("NF"), "grid_type": _out(gtype),
         "field_type": "SCALAR", "restriction": restr, "bins": _int(_tok(t, 4), 4, ln),
         "neighbors": 0, "variance": 0.0, "normalization": "", "order": ""}
    thresholds = None
    if method == "CONSERV":
        norm = _tok(t, 5)
        if norm not in NORMALIZATIONS:
            raise NamcoupleRefused(ln, "normalization", "SCRIPR CONSERV normalization '%s' "
                                   "must be one of %s" % (norm, ", ".join(NORMALIZATIONS)))
        if len(t) < 7:
            raise NamcoupleRefused(ln, "order", "SCRIPR CONSERV needs the order (FIRST) as "
                                   "7th token")
        s["normalization"], s["order"] = norm, _out(t[6])
        if len(t) > 7:
            if len(t) < 9:
                raise NamcoupleRefused(ln, "threshold", "SCRIPR CONSERV: NTHRESH and STHRESH "
                                       "must both appear if one does")
            thresholds = (_real(t[7], ln), _real(t[8], ln))
    if base in ("DISTWGT", "GAUSWGT") or method.startswith("LOCC"):
        if len(t) < 6:
            raise NamcoupleRefused(ln, "neighbo", "SCRIPR %s needs the number of neighbours "
                                   "as 6th token" % method)
        s["neighbors"] = _int(t[5], 4, ln)
    if base == "GAUSWGT" or method == "LOCCGAUS":
        if len(t) < 7:
            raise NamcoupleRefused(ln, "variance", "SCRIPR %s needs the variance as 7th token"
                                   % method)
        s["variance"] = _real(t[6], ln)
    return s, thresholds


def _entry(f, first, t, runtime):
    """Reads one $STRINGS entry whose first line (number `first`, tokens t) is read."""
    src = _tok(t, 0)
    dst = _tok(t, 1)
    ntrans = max(_int(_tok(t, 4), 4, first), 0)
    status, full, rst, inp = _status(t, first)
    _int(_tok(t, 2), 4, first)  # the label: read, unused
    p = _tok(t, 3)
    if p[:4] == "ONCE":
        period = runtime
    else:
        period = float(_int(p, 8, first))
        if period == 0:
            raise NamcoupleRefused(first, "period", "the coupling period must not be 0 (give a "
                                   "period longer than $RUNTIME to never exchange)")
    for name, what in ((rst, "restart file name"), (inp, "input file name")):
        _check32(name, first, what)
    c = {"line": first, "src_fields": [_out(x) for x in src.split(":")],
         "dst_fields": [_out(x) for x in dst.split(":")], "period": period, "lag": 0.0,
         "seq": 1, "status": status, "restart_file": _out(rst), "input_file": _out(inp),
         "src_grid": _grid(), "dst_grid": _grid(), "transforms": [], "loctrans": None,
         "mapping": None, "scripr": None, "conserv": None, "blasold": None, "blasnew": None,
         "checkin": False, "checkout": False, "transform_lines": []}
    ref = {}
    if status == "INPUT":
        c["seq"] = 0
        return c, ref
    # line 2
    ln, u = _need(f, first, "line 2 (grids, LAG=, SEQ=)")
    sizes, names = [0, 0, 0, 0], [_tok(u, 0), _tok(u, 1)]
    extras = ()
    if len(u) >= 3:
        c3, eq, _ = _lag_seq(u[2], ln)
        if c3 == "SEQ" or (c3 == "LAG" and eq == "="):
            extras = range(2, 6)
        else:
            sizes = [_int(_tok(u, i), 8, ln) for i in range(4)]
            names = [_tok(u, 4), _tok(u, 5)]
            extras = range(6, 10)
    lag, seq = 0, 1
    for i in extras:
        if i >= len(u):
            break
        c3, _, num = _lag_seq(u[i], ln)
        if c3 == "SEQ":
            seq = num
        elif c3 == "LAG":
            lag = num
    c["lag"], c["seq"] = float(lag), seq
    if full:
        for name in names:
            _check32(name, ln, "grid name")
    c["src_grid"] = _grid(names[0], sizes[0], sizes[1])
    c["dst_grid"] = _grid(names[1], sizes[2], sizes[3])
    # line 3
    if full:
        ln, v = _need(f, first, "line 3 (P/R overlaps)")
        for g, i in ((c["src_grid"], 0), (c["dst_grid"], 2)):
            pr = _tok(v, i)
            if pr not in ("P", "R"):
                raise NamcoupleRefused(ln, "p or r", "grid periodicity '%s' must be P or R "
                                       "(line 3 is 'P|R overlap P|R overlap')" % pr)
            g["periodicity"] = pr
            g["overlap"] = _int(_tok(v, i + 1), 2, ln)
    if ntrans == 0:
        return c, ref
    ln, w = _need(f, first, "the transformations line")
    if not full:
        if w[0][:8] != "LOCTRANS":
            raise NamcoupleRefused(ln, "loctrans", "only LOCTRANS is allowed for IGNORED, "
                                   "IGNOUT and OUTPUT fields, not '%s'" % w[0])
        c["transforms"] = [_out(w[0])]
        for k in range(ntrans):
            vl, v = _need(f, first, "the LOCTRANS value")
            if k == 0:
                c["transform_lines"] = [vl]
            c["loctrans"] = _loctrans(v[0], vl)
        return c, ref
    if len(w) < ntrans:
        raise NamcoupleRefused(ln, "transformations", "%d transformations announced on line %d "
                               "but this line lists %d" % (ntrans, first, len(w)))
    if len(w) > ntrans and not w[ntrans].startswith("#"):
        raise NamcoupleRefused(ln, "transformations", "%d transformations announced on line %d "
                               "but this line lists %d" % (ntrans, first, len(w)))
    names = w[:ntrans]
    for name in names:
        if name in OBSOLETE:
            raise NamcoupleRefused(ln, name.lower(), "obsolete transformation %s (not in "
                                   "OASIS3-MCT)" % name)
        if name == "YAC":
            raise NamcoupleRefused(ln, "yac", "transformation YAC needs OASIS built with "
                                   "YAC_REMAP; estuary does not read it")
        if name not in KNOWN:
            raise NamcoupleRefused(ln, name.lower(), "unknown transformation '%s'" % name)
    c["transforms"] = list(names)
    for name in names:
        cl, ct = _need(f, first, "the %s configuration line" % name)
        c["transform_lines"].append(cl)
        if name == "LOCTRANS":
            c["loctrans"] = _loctrans(ct[0], cl)
        elif name in ("CHECKIN", "CHECKOUT"):
            c[name.lower()] = True
        elif name == "MAPPING":
            m = {"file": _out(ct[0]), "location": "src", "order": "bfb"}
            for a in ct[1:3]:
                if a in ("src", "dst"):
                    m["location"] = a
                elif a in ("bfb", "sum", "opt"):
                    m["order"] = "sum" if a == "opt" else a
                else:
                    raise NamcoupleRefused(cl, a.lower(), "MAPPING argument '%s' is not src, "
                                           "dst, bfb, sum or opt" % a)
            c["mapping"] = m
        elif name == "SCRIPR":
            c["scripr"], ref["thresholds"] = _scripr(ct, cl)
        elif name == "CONSERV":
            mode = ct[0]
            if len(ct) > 1 and ct[1] not in CONSERV_OPTS:
                raise NamcoupleRefused(cl, ct[1].lower(), "CONSERV option '%s' is not one of %s"
                                       % (ct[1], ", ".join(CONSERV_OPTS)))
            if mode not in CONSERV_MODES:
                raise NamcoupleRefused(cl, mode.lower(), "CONSERV mode '%s' is not one of %s"
                                       % (mode, ", ".join(CONSERV_MODES)))
            opt = ct[1] if len(ct) > 1 else "bfb"
            c["conserv"] = {"mode": mode,
                            "method": {"bfb": "gather", "opt": "lsum8"}.get(opt, opt)}
        elif name == "BLASOLD":
            scale = _real(ct[0], cl)
            add = 0.0
            for _ in range(_int(_tok(ct, 1), 4, cl)):
                bl, b = _need(f, first, "a BLASOLD term line")
                if b[0] != "CONSTANT":
                    raise NamcoupleRefused(bl, "constant", "BLASOLD term '%s': OASIS3-MCT "
                                           "only supports CONSTANT" % b[0])
                add = _real(_tok(b, 1), bl)
            c["blasold"] = {"scale": scale, "add": add}
        elif name == "BLASNEW":
            scale = _real(ct[0], cl)
            add = 0.0
            fields = []
            seen = [dst]
            for k in range(_int(_tok(ct, 1), 4, cl)):
                bl, b = _need(f, first, "a BLASNEW term line")
                if len(b) < 2 or (k > 0 and len(b) < 3):
                    raise NamcoupleRefused(bl, "blasnew", "BLASNEW term line needs 'CONSTANT "
                                           "add' (first) or 'FIELD mult add'")
                if k == 0:
                    if b[0] != "CONSTANT":
                        raise NamcoupleRefused(bl, "constant", "the first BLASNEW term must be "
                                               "'CONSTANT add', not '%s'" % b[0])
                    add = _real(b[1], bl)
                else:
                    if b[0] in seen:
                        raise NamcoupleRefused(bl, "repeated", "BLASNEW field '%s' repeated"
                                               % b[0])
                    seen.append(b[0])
                    fields.append((bl, _out(b[0]), _real(b[1], bl), _real(b[2], bl)))
            c["blasnew"] = {"scale": scale, "add": add}
            ref["blasnew_fields"] = fields
    return c, ref


def _strings(f, nfields, runtime):
    start = _find(f, "$STRINGS")
    f.pos = start
    couplings = []
    jf = 0
    ended_by_eof = False
    while jf < nfields:
        jf += 1
        if f.pos >= len(f.lines):
            ended_by_eof = True
            break
        here = f.pos + 1
        r = f.next_nc()
        if r is None:  # only comment/blank lines left: OASIS parses one of them and aborts
            raise NamcoupleRefused(here, "$nfields", "$NFIELDS is %d but only %d entries follow, "
                                   "with no $END: OASIS reads this comment/blank line as an "
                                   "entry and aborts" % (nfields, len(couplings)))
        first, t = r
        if t[0] == "$END":
            break
        if t[0].startswith("$"):  # OASIS reads it as an entry and aborts (period 0)
            raise NamcoupleRefused(first, "after $strings", "'%s' inside $STRINGS: $STRINGS "
                                   "must be the last block (end it with $END)" % t[0])
        c, ref = _entry(f, first, t, runtime)
        c["_ref"] = ref
        couplings.append(c)
    if not ended_by_eof:
        while True:
            r = f.next_nc()
            if r is None:
                break
            ln, t = r
            if t[0] != "$END":
                if t[0].startswith("$"):
                    raise NamcoupleRefused(ln, "after $strings", "'%s' after the $STRINGS "
                                           "entries: $STRINGS must be the last block" % t[0])
                raise NamcoupleRefused(ln, "$nfields", "more $STRINGS entries than $NFIELDS "
                                       "(%d)" % nfields)
    return couplings


def read(path):
    """Reads a namcouple as OASIS3-MCT does; raises NamcoupleRefused where it would abort."""
    with open(path, "rb") as fh:
        f = _File(fh.read())
    _prescan(f)
    ln, t = _value(f, "$NFIELDS", True)
    nfields = _int(t[0], 4, ln)
    if _find(f, "$STRINGS") is None:
        raise NamcoupleRefused(None, "$strings", "$STRINGS not found")
    out = {"runtime": 0.0, "nfields": nfields, "log_level": 2, "couplings": []}
    ref = {}
    _header(f, out, ref)
    out["couplings"] = _strings(f, nfields, out["runtime"])
    out["_ref"] = ref
    return out


def unsupported(reading):
    """[(line, what)] for the features of a reading that estuary does not implement yet."""
    res = []
    for c in reading["couplings"]:
        lines = dict(zip(c["transforms"], c.get("transform_lines", [])))
        ref = c.get("_ref", {})
        s = c["scripr"]
        if s:
            ln = lines.get("SCRIPR", c["line"])
            if s["method"] in UNSUPPORTED["scripr_methods"]:
                res.append((ln, "SCRIPR %s" % s["method"]))
            if s["method"] == "CONSERV":
                if s["normalization"] in UNSUPPORTED["normalizations"]:
                    res.append((ln, "SCRIPR CONSERV normalization %s" % s["normalization"]))
                if s["order"] not in UNSUPPORTED["orders"]:
                    res.append((ln, "SCRIPR CONSERV order %s" % s["order"]))
                if ref.get("thresholds"):
                    res.append((ln, "SCRIPR CONSERV north/south thresholds"))
        cv = c["conserv"]
        if cv:
            ln = lines.get("CONSERV", c["line"])
            if cv["mode"] in UNSUPPORTED["conserv_modes"]:
                res.append((ln, "CONSERV %s" % cv["mode"]))
            if cv["method"] in UNSUPPORTED["conserv_methods"]:
                res.append((ln, "CONSERV option %s" % cv["method"]))
        for bl, name, _, _ in ref.get("blasnew_fields", ()):
            res.append((bl, "BLASNEW combination with field %s" % name))
    return sorted(res)


def _main(argv):
    status = 0
    for p in argv:
        try:
            r = read(p)
            doc = {"file": p, "reading": r, "unsupported": unsupported(r)}
        except NamcoupleRefused as e:
            doc = {"file": p, "refused": {"line": e.line, "reason": e.reason, "detail": e.detail}}
        except Exception as e:  # a bug in this reader
            doc = {"file": p, "error": repr(e)}
            status = 1
        print(json.dumps(doc, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
