"""Rules of the code's layout that review alone would not keep: no import cycle between the
package's parts nor between the service's modules, SQL of the episode engine only in its store,
plugins only through the host."""

from __future__ import annotations

import ast
from pathlib import Path

import tribalmemory

PACKAGE = Path(tribalmemory.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports(path: Path, typing_too: bool = False) -> set[str]:
    """Modules ``path`` imports when it runs (function-level imports included, imports under
    ``if TYPE_CHECKING:`` left out unless ``typing_too``), as absolute names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if not typing_too
        and isinstance(block, ast.If)
        and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] == "tribalmemory"}


MODULES = {module_name(path) for path in PACKAGE.rglob("*.py")}


def part(name: str) -> str:
    """The package part an imported name belongs to: ``tribalmemory.<top-level module or
    subpackage>`` (``tribalmemory`` itself for its ``__init__``)."""
    while name not in MODULES:  # ``from .x import name``: a name in module x
        name = name.rsplit(".", 1)[0]
    return ".".join(name.split(".")[:2])


def part_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        source = part(module_name(path))
        targets = {part(m) for m in runtime_imports(path)} - {source, "tribalmemory"}
        graph.setdefault(source, set()).update(targets)
    return graph


def cycle_from(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A path start -> ... -> start, if there is one (depth-first)."""
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for target in sorted(graph.get(node, ())):
            if target == start:
                return path + [start]
            if target not in seen:
                seen.add(target)
                stack.append((target, path + [target]))
    return None


def test_the_package_parts_import_each_other_without_a_cycle() -> None:
    graph = part_graph()
    assert "tribalmemory.interfaces" in graph["tribalmemory.client"]  # the walk sees imports
    cycles = [c for c in (cycle_from(graph, node) for node in sorted(graph)) if c]
    assert cycles == [], " ; ".join(" -> ".join(c) for c in cycles)


def test_only_the_episode_store_runs_sql() -> None:
    offenders = []
    store = PACKAGE / "episodes" / "store"
    for path in sorted((PACKAGE / "episodes").rglob("*.py")):
        if store in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("execute", "executemany", "db"):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}")
    assert offenders == []


def test_the_episode_plugin_reaches_the_service_only_through_the_plugin_contract() -> None:
    contract = ("tribalmemory.service.hookspecs", "tribalmemory.service.host")
    used = {
        f"{path.name}: {name}"
        for path in sorted((PACKAGE / "episodes").glob("*.py"))
        for name in runtime_imports(path)
        if part(name) == "tribalmemory.service"
        and not any(name == c or name.startswith(c + ".") for c in contract)
    }
    assert used == set()


def test_the_service_modules_import_each_other_without_a_cycle() -> None:
    """Imports for types count too: the plugin contract (hookspecs, host) names nothing of
    the service that implements it, so the service may import the contract."""
    paths = sorted((PACKAGE / "service").glob("*.py"))
    modules = {module_name(path): path for path in paths if path.name != "__init__.py"}
    graph = {
        name: {m for m in runtime_imports(path, typing_too=True) if m in modules} - {name}
        for name, path in modules.items()
    }
    cycles = [c for c in (cycle_from(graph, node) for node in sorted(graph)) if c]
    assert cycles == [], " ; ".join(" -> ".join(c) for c in cycles)
