"""The package's layout: ``--help`` loads no numerical library, no import cycle, no module over
800 lines, lazy top-level names that are the same objects as before."""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cmdp_rl.cli import build_parser

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "cmdp_rl"
HEAVY = ("numpy", "scipy", "numba", "gymnasium")
MAX_LINES = 800


def _subcommands() -> list[str]:
    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) == 1
    return sorted(actions[0].choices)


def _modules_after(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; its last stdout line is a JSON object (returned)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _help_code(argv: list[str]) -> str:
    return (
        "import json, sys\n"
        "from cmdp_rl.cli import main\n"
        f"code = main({argv!r})\n"
        f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "print()\n"
        "print(json.dumps({'code': code, 'heavy': heavy}))\n"
    )


HELP_ARGV = [["--help"], ["--version"], *[[cmd, "--help"] for cmd in _subcommands()]]


@pytest.mark.parametrize("argv", HELP_ARGV, ids=" ".join)
def test_help_imports_no_numerical_library(argv: list[str]) -> None:
    result = _modules_after(_help_code(argv))
    assert result == {"code": 0, "heavy": []}, (argv, result)


def test_import_cmdp_rl_is_light_and_its_names_load_on_use() -> None:
    code = (
        "import json, sys\n"
        "import cmdp_rl\n"
        f"before = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "names = [n for n in cmdp_rl.__all__ if getattr(cmdp_rl, n, None) is None]\n"
        "print(json.dumps({'before': before, 'missing': names, 'numpy': 'numpy' in sys.modules}))\n"
    )
    assert _modules_after(code) == {"before": [], "missing": [], "numpy": True}


def test_lazy_names_are_the_modules_objects() -> None:
    import cmdp_rl
    import cmdp_rl.certificates.certify
    import cmdp_rl.evaluation.evaluate
    from cmdp_rl import learners, planning
    from cmdp_rl.learners.catalog import LEARNERS
    from cmdp_rl.planning import result
    from cmdp_rl.plumbing import errors, validation
    from cmdp_rl.plumbing.names import ONLINE_ALGORITHMS

    assert cmdp_rl.certify is sys.modules["cmdp_rl.certificates.certify"].certify
    assert cmdp_rl.evaluate is sys.modules["cmdp_rl.evaluation.evaluate"].evaluate
    assert isinstance(cmdp_rl.pg, ModuleType) and cmdp_rl.pg.run is sys.modules["cmdp_rl.pg.methods"].run
    assert cmdp_rl.learn is learners.learn is sys.modules["cmdp_rl.simulators.learning"].learn
    assert cmdp_rl.CMDPInputError is validation.CMDPInputError is errors.CMDPInputError
    assert cmdp_rl.SolverError is planning.SolverError is result.SolverError is errors.SolverError
    assert cmdp_rl.OnlineCRL is learners.OnlineCRL
    assert set(cmdp_rl.__all__) <= set(dir(cmdp_rl))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = cmdp_rl.nothing  # type: ignore[attr-defined]
    assert tuple(LEARNERS) == ONLINE_ALGORITHMS == learners.ONLINE_ALGORITHMS


# -- the import graph ------------------------------------------------------------------------------------


def _module_files() -> dict[str, Path]:
    """Every module of ``src/cmdp_rl`` by dotted name (a package by its ``__init__.py``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, dict[str, str]]:
    """``module -> {imported module: where}`` over ``src/cmdp_rl``, from the source: every import
    statement counts (module level, inside functions, under ``TYPE_CHECKING``); relative imports
    are resolved; ``from X import name`` is an import of ``X.name`` when that is a module, else of
    ``X`` (an import of a module outside the package is left out; a missing submodule counts as
    its nearest package). ``where`` is ``file:line`` of the first such import."""
    files = _module_files()
    graph: dict[str, dict[str, str]] = {m: {} for m in files}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in files else target for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in files:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    graph[mod].setdefault(t, f"{path.relative_to(SRC)}:{node.lineno}")
    return graph


def strongly_connected(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def cycle_in(component: list[str], graph: dict[str, dict[str, str]]) -> list[str]:
    """One cycle through the component's first module, as ``module (where it imports the next)``."""
    start, members = component[0], set(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier and start not in parents:  # breadth first: a shortest cycle
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w in members and w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    path = [start]
    while parents[path[-1]] != start:
        path.append(parents[path[-1]])
    path = [start, *reversed(path[1:])]
    return [f"{m} ({graph[m][path[(i + 1) % len(path)]]})" for i, m in enumerate(path)] + [start]


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "cmdp_rl.model.table_rows" in graph["cmdp_rl.model.cmdp"]  # module level
    assert "cmdp_rl.envs.registry" in graph["cmdp_rl.cli.common"]  # inside a function
    assert "cmdp_rl.learners" in graph["cmdp_rl"]  # under TYPE_CHECKING
    assert "cmdp_rl.pg.methods" in graph["cmdp_rl"]  # from . import pg: the submodule
    assert "cmdp_rl.cli.simulator" in graph["cmdp_rl.cli.learn"]  # relative, inside a function


def test_no_import_cycle() -> None:
    graph = import_graph()
    cycles = [" -> ".join(cycle_in(comp, graph)) for comp in strongly_connected(graph)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_cycle_report_names_the_imports() -> None:
    graph = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:2"}, "c": {"a": "c.py:3"}, "d": {"a": "d.py:4"}}
    (comp,) = strongly_connected(graph)
    assert comp == ["a", "b", "c"]
    assert cycle_in(comp, graph) == ["a (a.py:1)", "b (b.py:2)", "c (c.py:3)", "a"]


def test_no_module_over_800_lines() -> None:
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
