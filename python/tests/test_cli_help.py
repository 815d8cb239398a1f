"""The command line's help and version, and the documentation's links: every option of every
sub-command has help text that gives its default, `estuary --version` agrees with the version the
C++ library and the Python package declare, and every relative link in README.md and docs/ points
to a file (and anchor) that exists. No MPI, no build products needed."""
import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from estuary import __version__, cli

ROOT = Path(__file__).resolve().parents[2]


def _actions():
    for p in cli._all_parsers(cli.parser()):
        for a in p._actions:
            if not isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                yield p, a


def test_every_option_has_help():
    missing = [f"{p.prog} {'/'.join(a.option_strings) or a.dest}" for p, a in _actions() if not (a.help or "").strip()]
    assert not missing, "options without help: " + ", ".join(missing)


def test_help_shows_every_default():
    for p, a in _actions():
        d = a.default
        if d is None or d is False or d is argparse.SUPPRESS:
            continue
        text = p.formatter_class(prog=p.prog)._get_help_string(a)
        assert "default" in text or f"({d})" in text or f"({d}:" in text, f"{p.prog} {a.option_strings}: {text!r}"


def test_help_of_each_command_runs():
    # the formatted help, as a user sees it (argparse fails on a stray % in a help text)
    for p in cli._all_parsers(cli.parser()):
        assert p.format_help().startswith("usage:")


def _declared_versions():
    cmake = re.search(r"project\(estuary VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())[1]
    pyproject = re.search(r'^version = "([0-9.]+)"', (ROOT / "python/pyproject.toml").read_text(), re.M)[1]
    return cmake, pyproject


def test_version_agrees_everywhere():
    out = subprocess.run([sys.executable, "-m", "estuary", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    cmake, pyproject = _declared_versions()
    assert out.stdout.strip() == "estuary " + __version__
    assert __version__ == cmake == pyproject


def _anchors(md: Path):
    text = md.read_text()
    ids = set(re.findall(r'<a id="([^"]+)"', text))
    for h in re.findall(r"^#+ (.+)$", text, re.M):  # GitHub's heading anchors
        ids.add(re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-"))
    return ids


@pytest.mark.parametrize("md", [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_relative_links_resolve(md):
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", md.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (md.parent / path).resolve() if path else md
        if not dest.exists():
            bad.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(target)
    assert not bad, f"{md.name}: links to nothing: {bad}"
