"""Every public function, class and method of the package has a docstring that names each of its
parameters (issue 22: help(estuary.Redist) tells what a call does, its parameters with units,
what it returns and raises).

The walk covers what users reach: the names of ``estuary.__all__`` and the modules among them
(estuary.couple, estuary.io, estuary.gen), the native module's namespace (the nanobind classes,
functions and methods, with ``__nb_signature__`` giving each overload's parameters) and the
public classes and functions defined in estuary.couple. A function added later without a
docstring, or with a parameter its docstring does not name, fails here. The command line's
internals (estuary.cli) are not part of the API and are left out.
"""
import enum
import inspect
import re
import types

import pytest

import estuary
import estuary.couple
import estuary.io

_SKIP_PARAMS = {"self", "cls"}


def _names_in_signature_text(sig):
    """The parameter names of one nanobind overload, e.g. 'def run(self, src: ..., dst: ...) -> None'.

    Not parsed as Python: nanobind writes array types as ndarray[dtype=float64, ...]. The
    parameters are the top-level comma-separated pieces between the name's parentheses."""
    start = sig.index("(")
    depth, pieces, cur = 0, [], ""
    for ch in sig[start + 1:]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            pieces.append(cur)
            cur = ""
        else:
            cur += ch
    pieces.append(cur)
    names = []
    for piece in pieces:
        name = re.split(r"[:=]", piece, maxsplit=1)[0].strip().lstrip("*")
        if name and name not in ("/", ""):
            names.append(name)
    return names


def _is_nb_function(obj):
    return type(obj).__name__ in ("nb_func", "nb_method", "nb_bound_method")


def _params(obj):
    """The parameter names of a Python or nanobind callable (every overload), self left out."""
    if _is_nb_function(obj):
        names = []
        for entry in obj.__nb_signature__:
            names += _names_in_signature_text(entry[0])
    else:
        try:
            names = list(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            return []
    seen = []
    for n in names:
        if n not in _SKIP_PARAMS and n not in seen:
            seen.append(n)
    return seen


def _doc_of_callable(obj):
    doc = obj.__doc__ or ""
    if _is_nb_function(obj):  # __doc__ holds the signatures too; the docstrings are what counts
        doc = "\n".join(entry[1] or "" for entry in obj.__nb_signature__)
    return doc.strip()


def _missing_names(doc, names):
    return [n for n in names if not re.search(r"(?<![A-Za-z0-9_])" + re.escape(n) + r"(?![A-Za-z0-9_])", doc)]


def _is_function(obj):
    return inspect.isfunction(obj) or inspect.isbuiltin(obj) or _is_nb_function(obj)


def _own_module(obj, module):
    """Defined in module (or one of its submodules), not imported into it (numpy, typing ...)."""
    home = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    return isinstance(home, str) and (home == module.__name__ or home.startswith(module.__name__ + "."))


class Walker:
    """Collects (qualified name, problem) for every public callable reached."""

    def __init__(self):
        self.problems = []
        self.checked = []
        self._seen = set()

    def _fail(self, name, what):
        self.problems.append(f"{name}: {what}")

    def function(self, name, fn):
        self._check_names(name, _doc_of_callable(fn), _params(fn))

    def klass(self, name, cls):
        if id(cls) in self._seen:
            return
        self._seen.add(id(cls))
        self.checked.append(name)
        own_doc = cls.__dict__.get("__doc__") or ""
        if not own_doc.strip():
            self._fail(name, "no class docstring")
        if issubclass(cls, (BaseException, enum.Enum)):
            return  # an exception's or an enum's constructor is the standard one
        init = cls.__dict__.get("__init__")
        if init is not None and _is_function(init):
            # The constructor's parameters may be described in the class's docstring or __init__'s.
            self._check_names(f"{name}.__init__", own_doc + "\n" + _doc_of_callable(init), _params(init))
        for attr, value in cls.__dict__.items():
            if attr.startswith("_"):
                continue
            qual = f"{name}.{attr}"
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                self.checked.append(qual)
                doc = value.__doc__ or (value.fget.__doc__ if value.fget else "") or ""
                if _is_nb_function(value.fget):
                    doc = value.__doc__ or _doc_of_callable(value.fget)
                if not (doc or "").strip():
                    self._fail(qual, "no docstring (property)")
            elif _is_function(value):
                self.function(qual, value)

    def _check_names(self, name, doc, names):
        self.checked.append(name)
        if not doc.strip():
            self._fail(name, "no docstring")
            return
        missing = _missing_names(doc, names)
        if missing:
            self._fail(name, f"docstring does not name the parameter(s) {', '.join(missing)}")

    def module(self, name, mod, names=None, own_only=False):
        if id(mod) in self._seen:
            return
        self._seen.add(id(mod))
        if not (mod.__doc__ or "").strip():
            self._fail(name, "no module docstring")
        if names is None:
            names = getattr(mod, "__all__", None)
            if names is None:  # no __all__: what the module defines
                names, own_only = [n for n in dir(mod) if not n.startswith("_")], True
        for n in names:
            obj = getattr(mod, n)
            if own_only and not _own_module(obj, mod):
                continue
            self.any(f"{name}.{n}", obj)

    def any(self, name, obj):
        if isinstance(obj, types.ModuleType):
            self.module(name, obj)
        elif inspect.isclass(obj):
            self.klass(name, obj)
        elif _is_function(obj):
            self.function(name, obj)


def _walk_api():
    w = Walker()
    w.module("estuary", estuary)
    native = estuary._native()
    w.module("_estuary", native)  # classes reachable only through others (Component.native ...)
    w.module("estuary.couple", estuary.couple,
             names=[n for n in dir(estuary.couple) if not n.startswith("_")], own_only=True)
    return w


def test_every_public_callable_documents_its_parameters():
    w = _walk_api()
    assert len(w.checked) > 150, f"the walk reached only {len(w.checked)} names: {w.checked}"
    for expected in ("estuary.Redist.run", "estuary.Redist.__init__", "estuary.gen.block", "estuary.io.Output.write",
                     "estuary.io.Reader.read", "estuary.couple.Component.__init__", "estuary.couple.Var.put",
                     "_estuary.Component.put", "estuary.distance_weights", "estuary.abort_on_exception",
                     "estuary.couple.Grid.set_corners", "estuary.couple.Partition.__init__"):
        assert expected in w.checked, f"{expected} was not checked"
    assert not w.problems, "undocumented public API:\n  " + "\n  ".join(w.problems)


def test_the_check_catches_what_it_should():
    # The walker itself: an undocumented function, a parameter the docstring leaves out, an
    # undocumented method and property, and a constructor whose parameters nobody names, each
    # reported; a documented one not.
    mod = types.ModuleType("fake", "A module.")

    def undocumented(a):
        return a

    def half(alpha, beta):
        """Uses alpha only."""
        return alpha

    def fine(alpha):
        """alpha: seconds."""
        return alpha

    class Thing:
        """A thing."""

        def __init__(self, width):
            self.width = width

        def method(self, x):
            return x

        @property
        def prop(self):
            return 1

    for f in (undocumented, half, fine):
        f.__module__ = "fake"
    Thing.__module__ = "fake"
    mod.undocumented, mod.half, mod.fine, mod.Thing = undocumented, half, fine, Thing
    mod.__all__ = ["undocumented", "half", "fine", "Thing"]
    w = Walker()
    w.module("fake", mod)
    text = "\n".join(w.problems)
    assert "fake.undocumented: no docstring" in text
    assert "fake.half: docstring does not name the parameter(s) beta" in text
    assert "fake.fine" not in text
    assert "fake.Thing.__init__: docstring does not name the parameter(s) width" in text
    assert "fake.Thing.method: no docstring" in text
    assert "fake.Thing.prop: no docstring (property)" in text


def test_nanobind_signatures_are_read():
    # The parameters come from __nb_signature__, overloads included: Redist.run has four
    # (float64, float32, int32, int64), each with src and dst.
    run = estuary.Redist.run
    assert len(run.__nb_signature__) == 4
    assert _params(run) == ["src", "dst"]
    assert _params(estuary.write_weights)[:6] == ["path", "rows", "cols", "weights", "src_size", "dst_size"]


@pytest.mark.parametrize("name", ["Redist", "Remap", "Decomp", "GridGen", "Output", "Component", "Var"])
def test_help_shows_the_docs(name):
    # help(estuary.X) is what users read: pydoc renders the class with its docstrings.
    import pydoc

    text = pydoc.render_doc(getattr(estuary, name), renderer=pydoc.plaintext)
    assert len(text) > 400 and "Raises" in text, text[:2000]
