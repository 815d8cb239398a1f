"""The command line (estuary/cli/) is a package without an import circle: each of its modules
imports alone in a fresh interpreter; the graph of their imports of one another has no cycle;
no module hides a sibling import inside a function (how the circle used to be kept from
failing); `helpers` imports no sibling and is the only progress bar and program finder."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[1] / "estuary" / "cli"
MODULES = sorted(p.stem for p in CLI.glob("*.py") if p.stem != "__main__")


def _sibling_imports(tree, top_level_only):
    """(module imported, line) for each `from . import x` / `from .x import y` in the tree."""
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.append((node.module.split(".")[0], node.lineno))
            else:
                out += [(a.name, node.lineno) for a in node.names]
    return out


@pytest.mark.parametrize("name", MODULES)
def test_each_module_imports_alone(name):
    mod = "estuary.cli" if name == "__init__" else f"estuary.cli.{name}"
    # and without MPI: importing the command line does not initialise it (it starts mpirun itself)
    out = subprocess.run([sys.executable, "-c", f"import sys, {mod}; print('mpi4py.MPI' in sys.modules)"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_no_cycle_and_no_hidden_sibling_imports():
    graph = {}
    for name in MODULES:
        tree = ast.parse((CLI / f"{name}.py").read_text())
        top = _sibling_imports(tree, top_level_only=True)
        every = _sibling_imports(tree, top_level_only=False)
        hidden = [(m, line) for m, line in every if (m, line) not in top]
        assert not hidden, f"{name}.py imports siblings inside functions: {hidden}"
        graph[name] = {m for m, _ in top if m in MODULES}
    graph.pop("__init__")  # the package imports every command; no command imports the package
    for name, deps in graph.items():
        assert "__init__" not in deps
    assert graph["helpers"] == set(), graph["helpers"]
    state = {}

    def visit(n, path):
        if state.get(n) == "done":
            return
        assert state.get(n) != "open", "import cycle: " + " -> ".join(path + [n])
        state[n] = "open"
        for d in sorted(graph[n]):
            visit(d, path + [n])
        state[n] = "done"

    for n in graph:
        visit(n, [])


def test_one_progress_bar_and_one_program_finder():
    for name in MODULES:
        text = (CLI / f"{name}.py").read_text()
        if name == "helpers":
            continue
        assert "class Progress" not in text, f"{name}.py has its own progress bar"
        assert "os.access(" not in text or name == "demo", f"{name}.py looks for programs itself"
        assert "def find_" not in text, f"{name}.py has its own program finder"
