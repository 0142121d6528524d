"""Structure rules of the source tree (DESIGN.md, "The layers"): no import cycle among the
modules of ``src/assay``, no layer importing a layer above it, and no module over 500 lines.

Every import counts: at module level, inside functions and under ``if TYPE_CHECKING:`` (a
deferred import is still a dependency; deferring one only hides a cycle)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import assay

SRC = Path(assay.__file__).parent
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import of a module: module level, ``if TYPE_CHECKING:`` blocks and function
    bodies alike."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if _is_package(path) else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    root = ".".join(base + ([node.module] if node.module else []))
                else:
                    root = node.module or ""
                # ``from pkg import sub`` imports the submodule; ``from pkg import name``
                # runs the package.
                targets = [
                    f"{root}.{a.name}" if f"{root}.{a.name}" in modules else root
                    for a in node.names
                ]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_imports() -> None:
    graph = import_graph()
    assert "assay.runner" in graph["assay.judge.calls"]
    assert "assay.judge._inside.codec" in graph["assay.judge.values"]
    assert "assay.executor.local" in graph["assay.executor"]


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


def test_no_import_cycle() -> None:
    """Function-level and ``if TYPE_CHECKING:`` imports count: a module that needs
    another's types or defers an import still depends on it."""
    assert [sorted(c) for c in cycles(import_graph())] == []


#: DESIGN.md's floors, top first. A module may import its own package and any package on a
#: lower floor (it may skip floors), never one on a higher floor. Packages on one floor may
#: import each other (in one direction: the cycle test sees the other).
FLOORS: list[set[str]] = [
    {"cli"},
    {"server", "integrations", "client", "evaluate", "demo", ""},  # "": assay/__init__
    {"executor"},
    {"sessions", "agents"},
    {"tasks", "testgen"},
    {"reward", "formats"},
    {"judge"},
    {"runner"},
    {"images"},
    {"languages"},
    {"sandbox"},
    {"scheduler", "telemetry"},
    {"types", "defaults", "errors", "_threads", "_fs", "_pysource", "_extract", "_progress"},
]


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def floor_of(module: str) -> int:
    """A module's floor, counted from the ground (0)."""
    package = _package(module)
    for i, names in enumerate(FLOORS):
        if package in names:
            return len(FLOORS) - 1 - i
    raise AssertionError(f"{module}: its package {package!r} is on no floor of DESIGN.md")


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    found = []
    for module, targets in graph.items():
        for target in targets:
            if _package(target) == _package(module):
                continue
            if floor_of(target) > floor_of(module):
                found.append((module, target))
    return sorted(found)


def test_the_layering_check_sees_an_upward_import() -> None:
    assert upward_imports({"assay.judge.x": {"assay.executor.y"}}) == [
        ("assay.judge.x", "assay.executor.y")
    ]
    assert upward_imports({"assay.executor.y": {"assay.judge.x", "assay.executor.z"}}) == []


def test_no_layer_imports_a_layer_above_it() -> None:
    assert upward_imports(import_graph()) == []


def test_every_package_is_on_a_floor() -> None:
    for module in import_graph():
        floor_of(module)


def test_no_module_over_500_lines() -> None:
    long = {
        str(path.relative_to(SRC)): n
        for path in SRC.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_benchmark_script_shadows_a_standard_library_module() -> None:
    """``python benchmarks/X.py`` puts ``benchmarks/`` first on ``sys.path``: a script named
    like a standard module (``queue.py``) replaced it for every other script (``import
    redis`` imports ``queue``), and ``benchmarks/sessions.py`` could not start."""
    scripts = {p.stem for p in (Path(__file__).parents[1] / "benchmarks").glob("*.py")}
    assert "sessions" in scripts
    assert sorted(scripts & set(sys.stdlib_module_names)) == []


def test_no_select_select() -> None:
    """``select.select`` refuses descriptors above 1023, which a busy service has (CI saw
    ``filedescriptor out of range in select()``), and a sandbox's fork server keeps the
    host's numbers: ``poll`` everywhere instead."""
    offenders = [
        f"{path.relative_to(SRC)}:{node.lineno}"
        for path in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr == "select"
        and isinstance(node.value, ast.Name)
        and node.value.id == "select"
    ]
    assert offenders == []


def test_test_modules_outside_packages_have_unique_names() -> None:
    """pytest imports a test file of a folder without ``__init__.py`` by its base name: two
    such ``test_types.py`` collide, and the second is an error at collection (CI saw
    ``import file mismatch``), its tests not run."""
    tests = Path(__file__).parent
    loose = [p for p in tests.rglob("test_*.py") if not (p.parent / "__init__.py").exists()]
    names = [p.name for p in loose]
    assert len(loose) > 100
    assert sorted({n for n in names if names.count(n) > 1}) == []
