"""The layers hold: imports only go down, no module takes part in an import cycle, and the docs'
architecture page names every module."""

from __future__ import annotations

import ast
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")  # ground first


def _imported_packages(path: Path) -> set[tuple[str, int]]:
    """Top-level packages a module imports anywhere (module level or inside functions), with line numbers."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {(alias.name.split(".")[0], node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add((node.module.split(".")[0], node.lineno))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add((node.args[0].value.split(".")[0], node.lineno))
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_no_module_imports_a_higher_layer(layer):
    higher = set(LAYERS[LAYERS.index(layer) + 1 :])
    violations = [
        f"{path.relative_to(REPO)}:{line} imports {package}"
        for path in sorted((REPO / layer).rglob("*.py"))
        for package, line in sorted(_imported_packages(path))
        if package in higher
    ]
    assert not violations, "imports that go up a layer:\n" + "\n".join(violations)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _project_modules() -> dict[str, Path]:
    return {_module_name(path): path for layer in LAYERS for path in sorted((REPO / layer).rglob("*.py"))}


def _imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules a module imports anywhere (lazily too); `from package import name` counts the
    submodule `package.name` when there is one, else the package itself."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a non-module name: its nearest module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (within and across packages, lazy imports included)."""
    modules = _project_modules()
    return {name: _imported_modules(path, modules) for name, path in modules.items()}


def test_no_import_cycle():
    """Between modules, within a package and across packages. A package's `__init__` that re-exports its
    modules is a node like any other, so `a/__init__ -> a.b -> a` (a submodule importing its package's
    re-exports) is a cycle too."""
    try:
        order = list(TopologicalSorter(import_graph()).static_order())
    except CycleError as err:
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from None
    assert "mis_bench_dataset.built.handle" in order and "eval_scripts.runner" in order  # the graph is the tree


def test_the_cycle_check_finds_a_cycle():
    """The graph check itself: a cycle planted in a copy of the graph is found, with its modules."""
    graph = import_graph()
    assert "mis_bench_dataset.rules.errors" in graph["mis_bench_dataset.built.format"]  # edges are real imports
    graph["mis_bench_dataset.rules.errors"] = {
        *graph["mis_bench_dataset.rules.errors"],
        "mis_bench_dataset.built.format",
    }
    with pytest.raises(CycleError) as caught:
        list(TopologicalSorter(graph).static_order())
    assert {"mis_bench_dataset.rules.errors", "mis_bench_dataset.built.format"} <= set(caught.value.args[1])


def test_the_architecture_page_names_every_module():
    """Every module of every package and sub-package, and every sub-package (by name), is named in
    docs/architecture.md."""
    section = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    names = set()
    for layer in LAYERS:
        for path in (REPO / layer).rglob("*"):
            if path.is_dir() and (path / "__init__.py").is_file() and path != REPO / layer:
                names.add((layer, path.name))
            elif path.suffix == ".py" and not path.name.startswith("__"):
                names.add((layer, path.stem))
    missing = sorted(
        f"{layer}.{name}" for layer, name in names if not re.search(rf"[`.(]{re.escape(name)}[`.,)/ ]", section)
    )
    assert not missing, "modules docs/architecture.md does not name: " + ", ".join(missing)


MAX_FUNCTION_LINES = 80  # library functions stay short; argparse registration (`register`) lists options


def test_no_library_function_is_longer_than_80_lines():
    too_long = []
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name == "register":
                    continue
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({length} lines)")
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(too_long)
