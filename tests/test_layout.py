"""The package's layout: ``--help`` loads no numerical library; lazy top-level names; the homes
(at most eight modules at the top, floors from plumbing up to the command line and no import back
up one, no import cycle, no private name of another module, no module over 500 lines or function
over 120); ``tests/`` mirrors ``src/``."""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cmdp_rl.cli import build_parser

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "cmdp_rl"
HEAVY = ("numpy", "scipy", "numba", "gymnasium")


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
    assert "cmdp_rl.pg" in graph["cmdp_rl"]  # from cmdp_rl import pg: the subpackage
    assert "cmdp_rl.cli.simulator" in graph["cmdp_rl.cli.learn"]  # inside a function


def test_no_import_cycle() -> None:
    graph = import_graph()
    cycles = [" -> ".join(cycle_in(comp, graph)) for comp in strongly_connected(graph)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_cycle_report_names_the_imports() -> None:
    graph = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:2"}, "c": {"a": "c.py:3"}, "d": {"a": "d.py:4"}}
    (comp,) = strongly_connected(graph)
    assert comp == ["a", "b", "c"]
    assert cycle_in(comp, graph) == ["a (a.py:1)", "b (b.py:2)", "c (c.py:3)", "a"]


# -- the homes: floors, sizes, private names --------------------------------------------------------

#: the floors from the ground up: a module may import from its own floor or below, never above
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("plumbing", ("plumbing",)),
    ("the model", ("model",)),
    ("kernels", ("kernels",)),
    ("evaluation and confidence sets", ("evaluation", "confidence")),
    ("planning", ("planning",)),
    ("certificates", ("certificates",)),
    ("learners", ("learners",)),
    ("environments", ("envs", "simulators")),
    ("policy gradient", ("pg",)),
    ("experiments", ("experiments",)),
    ("command line", ("cli",)),
    ("the package's face", ("", "__main__")),
)
#: names a package's face has always exported and now forwards (lazily, through ``__getattr__``)
#: to the floor above where they live; nothing else may be imported from above
FORWARDED: dict[str, dict[str, str]] = {"cmdp_rl.learners": {"learn": "cmdp_rl.simulators.learning"}}
MAX_TOP_LEVEL = 8
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 120


def floor_of(module: str) -> int:
    """The floor (0 = the ground) of a dotted module name of ``src/cmdp_rl``."""
    first = module.split(".")[1] if "." in module else ""
    for i, (_, folders) in enumerate(FLOORS):
        if first in folders:
            return i
    raise AssertionError(f"{module}: in no floor of FLOORS; give its folder a floor")


def _forwarded(module: str, node: ast.AST, target: str) -> bool:
    forwards = FORWARDED.get(module, {})
    return (
        isinstance(node, ast.ImportFrom) and target in forwards.values() and all(a.name in forwards for a in node.names)
    )


def upward_imports() -> list[str]:
    """Every import of a module on a higher floor, as ``file:line: A (floor) imports B (floor)``."""
    files = _module_files()
    out = []
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, package, files):
                if target == mod or _forwarded(mod, node, target):
                    continue
                if floor_of(target) > floor_of(mod):
                    out.append(
                        f"{path.relative_to(SRC)}:{getattr(node, 'lineno', 0)}: {mod} "
                        f"({FLOORS[floor_of(mod)][0]}) imports {target} ({FLOORS[floor_of(target)][0]})"
                    )
    return out


def _targets(node: ast.AST, package: str, files: dict[str, Path]) -> list[str]:
    """The package's modules that one import statement loads (as in ``import_graph``)."""
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
        return []
    out = []
    for t in targets:
        while t and t not in files:
            t = t.rpartition(".")[0]
        if t:
            out.append(t)
    return out


def private_imports() -> list[str]:
    """Every use of another module's private name (``_name``, not a dunder): ``from M import _x``,
    or ``alias._x`` where ``alias`` is an imported module of the package."""
    files = _module_files()
    out = []
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        aliases: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    one = ast.ImportFrom(module=node.module, names=[a], level=node.level)
                    for target in _targets(one, package, files):
                        if target.endswith(f".{a.name}"):
                            aliases.add(a.asname or a.name)
                        elif _private(a.name) and target != mod:
                            out.append(f"{path.relative_to(SRC)}:{node.lineno}: {target}.{a.name}")
            elif isinstance(node, ast.Import):
                aliases.update(a.asname for a in node.names if a.asname and a.name.startswith("cmdp_rl"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                out.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.value.id}.{node.attr}")
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_at_most_eight_modules_at_the_top() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= MAX_TOP_LEVEL, f"{len(top)} modules at the top of src/cmdp_rl: {top}"


def test_every_folder_has_a_floor() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == {f for _, fs in FLOORS for f in fs if f not in ("", "__main__")}
    for mod in _module_files():
        floor_of(mod)  # raises for a module in no floor


def test_no_import_back_up_a_floor() -> None:
    up = upward_imports()
    assert not up, "imports back up a floor:\n" + "\n".join(up)


def test_the_floor_check_sees_an_upward_import(tmp_path: Path) -> None:
    files = {"cmdp_rl.model.cmdp": tmp_path / "x.py", "cmdp_rl.learners.base": tmp_path / "y.py"}
    node = ast.parse("from cmdp_rl.learners.base import Learner").body[0]
    assert _targets(node, "cmdp_rl.model", files) == ["cmdp_rl.learners.base"]
    assert floor_of("cmdp_rl.learners.base") > floor_of("cmdp_rl.model.cmdp")
    assert floor_of("cmdp_rl") == len(FLOORS) - 1


def test_no_private_name_of_another_module() -> None:
    found = private_imports()
    assert not found, "private names of other modules:\n" + "\n".join(found)


def test_no_module_over_500_lines() -> None:
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    long = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_120_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.name} ({n} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


#: the kernel layer (item 1): the folders that choose between the dense and the sparse layout
KERNEL_LAYER = ("kernels", "evaluation", "confidence")
#: lines outside the kernel layer that may still call ``issparse(`` or read ``.is_sparse``
MAX_LAYOUT_LINES = 5
LAYOUT_BRANCH = re.compile(r"issparse\(|\.is_sparse\b")
#: where such lines remain: the model's one layout helper (the model is below the layer), and
#: OptPess's safety test (its dense evaluation is the forward occupancy of the recorded runs)
LAYOUT_PENDING = ("model/sparse.py", "learners/optpess.py")


def layout_lines() -> list[str]:
    """Every line of ``src/cmdp_rl`` outside the kernel layer that calls ``issparse(`` or reads
    ``.is_sparse``, as ``path:line: text`` (``path`` relative to the package)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in KERNEL_LAYER:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if LAYOUT_BRANCH.search(line):
                out.append(f"{rel.as_posix()}:{i}: {line.strip()}")
    return out


def test_at_most_five_layout_lines_outside_the_kernel_layer() -> None:
    lines = layout_lines()
    assert len(lines) <= MAX_LAYOUT_LINES, f"{len(lines)} layout branches outside {KERNEL_LAYER}:\n" + "\n".join(lines)


def test_no_new_layout_lines_outside_the_kernel_layer() -> None:
    """The lines outside the layer stay where they are; none is added elsewhere."""
    stray = [line for line in layout_lines() if not line.startswith(LAYOUT_PENDING)]
    assert not stray, "layout branches outside the kernel layer:\n" + "\n".join(stray)


def test_the_layout_check_sees_a_branch() -> None:
    assert LAYOUT_BRANCH.search("    if sp.issparse(counts):")
    assert LAYOUT_BRANCH.search("kind = 'sparse' if model.is_sparse else 'dense'")
    assert not LAYOUT_BRANCH.search("if is_sparse_input(P):")
    assert any(line.startswith("model/sparse.py:") for line in layout_lines())


def test_tests_mirror_src() -> None:
    """``tests/X/`` for each package ``X`` of ``src/cmdp_rl``; every test module there is named
    after a source module of ``X`` (``test_NAME.py`` or ``test_NAME_more.py``)."""
    tests = Path(__file__).resolve().parent
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages <= {p.name for p in tests.iterdir() if p.is_dir()}, sorted(packages)
    stray = []
    for pkg in sorted(packages):
        sources = {p.stem for p in (PACKAGE / pkg).glob("*.py")}
        for test in sorted((tests / pkg).glob("test_*.py")):
            name = test.stem.removeprefix("test_")
            if not any(name == s or name.startswith(f"{s}_") for s in sources):
                stray.append(str(test.relative_to(tests)))
    loose = sorted(p.name for p in tests.glob("test_*.py") if p.name != "test_layout.py")
    assert not stray and not loose, f"named after no source module: {stray}; loose at the top: {loose}"


def test_every_module_has_its_place_in_the_api_reference() -> None:
    """``docs/api/X.md`` documents every module of the package ``X`` (``package.md`` the face)."""
    docs = Path(__file__).resolve().parents[1] / "docs" / "api"
    missing = []
    for mod in _module_files():
        if mod.endswith("__main__"):
            continue
        folder = mod.split(".")[1] if "." in mod else "package"
        page = docs / f"{folder}.md"
        if not page.exists() or f"::: {mod}\n" not in page.read_text():
            missing.append(f"{mod} (docs/api/{folder}.md)")
    assert not missing, "modules not in the API reference: " + ", ".join(missing)


def test_the_compilation_marks_name_compiled_functions() -> None:
    """The command line's first-run note looks for numba's cache files of these functions: each must
    be a compiled (``@nb.njit``) function of the module it names (a move must carry the mark along)."""
    from cmdp_rl.cli.common import COMPILED_MARKS

    for mark in COMPILED_MARKS:
        path, _, func = mark.rpartition(".")
        tree = ast.parse((PACKAGE / f"{path}.py").read_text())
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func]
        assert defs, f"{mark}: no function {func} in cmdp_rl/{path}.py"
        assert any("njit" in ast.unparse(d) for d in defs[0].decorator_list), f"{mark}: not compiled"


def test_test_modules_have_distinct_names() -> None:
    """pytest imports test modules by their file name (no ``__init__.py`` in ``tests/``): two folders'
    ``test_X.py`` would collide (name the second after what it tests, e.g. ``test_X_command.py``)."""
    tests = Path(__file__).resolve().parent
    seen: dict[str, list[str]] = {}
    for path in tests.rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests)))
    same = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not same, f"test modules sharing a name: {same}"
