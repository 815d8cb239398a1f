"""The Spack recipe (packaging/spack/packages/estuary/package.py), without Spack: it is loaded
with a stand-in for `spack.package` that records what the recipe declares, and each CMake option
it sets must be an option() of the project's CMakeLists files, each variant must reach one, and
the `make lib` options must exist too (a renamed option would otherwise break cluster builds
silently: CMake ignores unknown -D options)."""
import importlib.util
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "packaging/spack/packages/estuary/package.py"


def cmake_options():
    opts = set()
    for f in [ROOT / "CMakeLists.txt", *ROOT.glob("*/CMakeLists.txt"), *ROOT.glob("src/*/CMakeLists.txt")]:
        opts |= set(re.findall(r"^\s*option\((\w+)", f.read_text(), re.M))
    return opts


def load_recipe():
    declared = {"variants": {}, "depends": [], "versions": [], "conflicts": []}

    class CMakePackage:
        run_tests = False

        def __init__(self, spec):
            self.spec = spec

        def define(self, name, value):
            return f"-D{name}:BOOL={'ON' if value else 'OFF'}"

        def define_from_variant(self, name, variant):
            assert variant in declared["variants"], f"{name} from undeclared variant {variant}"
            return self.define(name, variant in self.spec)

    spack = types.ModuleType("spack")
    pkg = types.ModuleType("spack.package")
    pkg.CMakePackage = CMakePackage
    pkg.version = lambda v, **kw: declared["versions"].append(v)
    pkg.variant = lambda name, default, description: declared["variants"].__setitem__(name, default)
    pkg.depends_on = lambda spec, **kw: declared["depends"].append((spec, kw.get("when")))
    pkg.conflicts = lambda spec, when=None, msg="": declared["conflicts"].append((spec, when, msg))
    pkg.generator = lambda *g: None
    pkg.__all__ = ["CMakePackage", "version", "variant", "depends_on", "conflicts", "generator"]
    sys.modules["spack"], sys.modules["spack.package"] = spack, pkg
    try:
        spec = importlib.util.spec_from_file_location("estuary_spack_recipe", RECIPE)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["spack"], sys.modules["spack.package"]
    return mod.Estuary, declared


def test_recipe_options_exist_in_cmake():
    Estuary, declared = load_recipe()
    assert declared["versions"] == ["main"]
    options = cmake_options()
    on = set(declared["variants"])  # every variant on
    for spec in (on, set()):
        args = Estuary(spec).cmake_args()
        names = [re.match(r"-D(\w+):", a)[1] for a in args]
        unknown = [n for n in names if n not in options]
        assert not unknown, f"package.py sets CMake options the project does not have: {unknown}"
    # each variant switches exactly the option it names, and its dependency
    for v in declared["variants"]:
        with_v = Estuary({v}).cmake_args()
        without = Estuary(set()).cmake_args()
        assert sum(a != b for a, b in zip(with_v, without)) == 1, v
    deps = {w for _, w in declared["depends"] if w}
    for v in ("netcdf", "yaml", "pnetcdf", "simgrid"):
        assert f"+{v}" in deps, f"variant {v} pulls in no dependency"


def test_make_lib_options_exist():
    makefile = (ROOT / "Makefile").read_text()
    lib = makefile[makefile.index("\nlib:"):]
    lib = lib[: lib.index("\n\n")]
    names = re.findall(r"-D(ESTUARY_\w+)=", lib)
    assert names and not [n for n in names if n not in cmake_options()]


def test_python_folder_alone_fails_with_a_message(tmp_path):
    """python/ copied out of the checkout (an sdist, or a pip before 21.3, which copied the folder
    before building) has none of the library's sources: pip's build stops at configure, naming
    what is missing and the ways that work, not on some missing file later."""
    import shutil
    import subprocess
    copy = tmp_path / "python"
    shutil.copytree(ROOT / "python", copy, ignore=shutil.ignore_patterns("__pycache__", "tests"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                          "-w", str(tmp_path / "dist"), str(copy)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    text = " ".join((out.stdout + out.stderr).split())  # CMake wraps its message's lines
    assert out.returncode != 0
    assert "has no repository around it" in text, text[-3000:]
    assert f"missing: {tmp_path}/CMakeLists.txt" in text, text[-3000:]
    assert "pip install ./python" in text
    assert not list((tmp_path / "dist").glob("*.whl"))
