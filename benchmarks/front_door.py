"""The front door, measured and kept (issue 48 item 2).

Each package exports its names lazily (PEP 562: a `_LAZY` map `name -> module` in `__init__.py`, so `import
eval_scripts` stays light); type checkers and editors do not run `__getattr__`, so each `__init__.py` also holds an
`if TYPE_CHECKING:` block importing the same names from the same modules. This script writes that block from the
map (`--write`; tests/test_front_door_types.py checks the two are equal) and measures the front door:

- per package: exports, lazy names, whether the TYPE_CHECKING block equals the map, whether `py.typed` is there;
- the library names each CLI command (`eval_scripts/cli/*.py`) imports that no `__all__` exports;
- the tests' imports of toolkit names: through a package, from an internal module for a name a package exports
  (the same object: could go through the package), from an internal module for a name no package exports.

    python3 benchmarks/front_door.py            # the figures
    python3 benchmarks/front_door.py --json     # the same figures as JSON
    python3 benchmarks/front_door.py --write    # rewrite the four TYPE_CHECKING blocks from the lazy maps
    python3 benchmarks/front_door.py --convert-tests   # tests' top-level imports of exported names: via the package
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")
BLOCK_COMMENT = "# the names of _LAZY, for type checkers and editors (written by benchmarks/front_door.py --write)"


def lazy_map(package: str) -> dict[str, str]:
    """`name -> absolute module` of the package's lazy exports (its `_LAZY`, evaluated: it may be built)."""
    module = importlib.import_module(package)
    return {name: importlib.util.resolve_name(where, package) for name, where in module._LAZY.items()}


def _type_checking_node(tree: ast.Module) -> ast.If | None:
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return node
    return None


def type_checking_imports(package: str) -> dict[str, str]:
    """`name -> absolute module` of the `if TYPE_CHECKING:` block of the package's `__init__.py` (each import
    written `X as X`, the explicit re-export mypy's strict mode and pyright read)."""
    tree = ast.parse((REPO / package / "__init__.py").read_text(encoding="utf-8"))
    node = _type_checking_node(tree)
    found: dict[str, str] = {}
    for statement in node.body if node else []:
        if isinstance(statement, ast.ImportFrom):
            where = "." * statement.level + (statement.module or "")
            for alias in statement.names:
                if alias.asname == alias.name:
                    found[alias.name] = importlib.util.resolve_name(where, package)
    return found


def block_text(package: str) -> str:
    """The `if TYPE_CHECKING:` block of `package` from its lazy map (relative where the map is; ruff orders it)."""
    module = importlib.import_module(package)
    by_module: dict[str, list[str]] = {}
    for name, where in module._LAZY.items():
        by_module.setdefault(where, []).append(name)
    lines = [f"if TYPE_CHECKING:  {BLOCK_COMMENT}"]
    for where in sorted(by_module):
        lines += [f"    from {where} import {name} as {name}" for name in sorted(by_module[where])]
    return "\n".join(lines) + "\n"


def write_block(package: str) -> Path:
    """Replace the package's TYPE_CHECKING block (or put one before `__all__`), then let ruff order and format it."""
    path = REPO / package / "__init__.py"
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    node = _type_checking_node(ast.parse(text))
    if node is not None:
        start, end = node.lineno - 1, node.end_lineno
    else:
        start = end = next(i for i, line in enumerate(lines) if line.startswith("__all__"))
    block = block_text(package) + ("" if node is not None else "\n")
    path.write_text("".join([*lines[:start], block, *lines[end:]]), encoding="utf-8")
    if "TYPE_CHECKING" not in "".join(lines[:start]):
        text = path.read_text(encoding="utf-8").replace(
            "from mis_bench_dataset.toolkit.lazy import lazy_exports",
            "from typing import TYPE_CHECKING\n\nfrom mis_bench_dataset.toolkit.lazy import lazy_exports",
            1,
        )
        path.write_text(text, encoding="utf-8")
    subprocess.run(["ruff", "check", "--select", "I", "--fix", "-q", str(path)], cwd=REPO, check=False)
    subprocess.run(["ruff", "format", "-q", str(path)], cwd=REPO, check=True)
    return path


def _exported() -> dict[str, dict[str, object]]:
    """package -> name -> the exported object."""
    modules = {package: importlib.import_module(package) for package in PACKAGES}
    return {package: {name: getattr(module, name) for name in module.__all__} for package, module in modules.items()}


def _from_imports(path: Path):
    """(module, name, line) of each `from toolkit.module import name` in a file (lazy imports included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in PACKAGES:
            for alias in node.names:
                yield node.module, alias.name, node.lineno


def _public(exported, module: str, name: str) -> str | None:
    """The package that exports this module's `name` as the same object (None when none does)."""
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    for package, names in exported.items():
        if name in names and names[name] is value:
            return package
    return None


def cli_jobs_not_exported(exported) -> list[dict]:
    """The library names the CLI's commands import (outside `eval_scripts.cli`) that no package exports: callables
    only (a constant, a default, an exception class the CLI catches are not a command's job)."""
    found = []
    for path in sorted((REPO / "eval_scripts" / "cli").glob("*.py")):
        for module, name, line in _from_imports(path):
            if module.startswith("eval_scripts.cli") or module in PACKAGES:
                continue
            try:
                value = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                continue
            if not callable(value) or isinstance(value, type) or name.isupper():
                continue
            if _public(exported, module, name) is None:
                found.append({"file": path.name, "line": line, "name": f"{module}.{name}"})
    return found


def test_imports(exported) -> dict[str, int]:
    """The tests' `from toolkit... import name`: through a package, from an internal module for a name a package
    exports as the same object, or from an internal module for a name no package exports."""
    counts = {"through a package": 0, "internal, exported name": 0, "internal, not exported": 0}
    for path in sorted((REPO / "tests").glob("*.py")):
        for module, name, _ in _from_imports(path):
            if module in PACKAGES:
                counts["through a package"] += 1
            elif _public(exported, module, name) is not None:
                counts["internal, exported name"] += 1
            else:
                counts["internal, not exported"] += 1
    return counts


def _convert_file(path: Path, exported) -> int:
    """Rewrite the file's `from internal.module import name` statements so that each name a package exports (the
    same object) is imported from that package; the others stay. Every test sees the same objects: a top-level
    import binds at collection, before any test patches a module; inside a function only lazy exports move (the
    package's `__getattr__` reads the module's attribute when the import runs, as the direct import did). A
    statement sharing its line, carrying a comment inside parentheses, or `import *`, is left as it is. Returns
    the names moved."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    edits, moved = [], 0
    tree = ast.parse(text)
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and not node.level and node.module):
            continue
        if node.module.split(".")[0] not in PACKAGES or node.module in PACKAGES:
            continue
        if any(alias.name == "*" for alias in node.names):
            continue
        span = "".join(lines[node.lineno - 1 : node.end_lineno])
        code, _, comment = lines[node.end_lineno - 1].partition("#")
        if "#" in "".join(lines[node.lineno - 1 : node.end_lineno - 1]) or ";" in code:
            continue
        if lines[node.lineno - 1][: node.col_offset].strip():
            continue
        by_package: dict[str, list[str]] = {}
        kept = []
        for alias in node.names:
            written = alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
            package = _public(exported, node.module, alias.name)
            if package and id(node) not in top and alias.name not in importlib.import_module(package)._LAZY:
                package = None  # an eager export inside a function: bound at package import, not when this runs
            (by_package.setdefault(package, []) if package else kept).append(written)
        if not by_package:
            continue
        indent = span[: len(span) - len(span.lstrip())]
        suffix = f"  #{comment.rstrip()}" if comment else ""
        new = [f"{indent}from {node.module} import {', '.join(kept)}{suffix}\n"] if kept else []
        new += [f"{indent}from {package} import {', '.join(names)}{suffix}\n" for package, names in by_package.items()]
        edits.append((node.lineno - 1, node.end_lineno, new))
        moved += sum(len(names) for names in by_package.values())
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    if edits:
        path.write_text("".join(lines), encoding="utf-8")
        subprocess.run(["ruff", "check", "--select", "I", "--fix", "-q", str(path)], cwd=REPO, check=False)
        subprocess.run(["ruff", "format", "-q", str(path)], cwd=REPO, check=True)
    return moved


def convert_tests() -> int:
    """`_convert_file` on every test module; the names moved in all."""
    exported = _exported()
    return sum(_convert_file(path, exported) for path in sorted((REPO / "tests").glob("*.py")))


def measure() -> dict:
    exported = _exported()
    packages = {}
    for package in PACKAGES:
        lazy = lazy_map(package)
        packages[package] = {
            "exports": len(exported[package]),
            "lazy": len(lazy),
            "type_checking_block_equals_lazy_map": type_checking_imports(package) == lazy,
            "py_typed": (REPO / package / "py.typed").is_file(),
        }
    return {
        "packages": packages,
        "cli_jobs_not_exported": cli_jobs_not_exported(exported),
        "test_imports": test_imports(exported),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    parser.add_argument("--write", action="store_true", help="rewrite the TYPE_CHECKING blocks from the lazy maps")
    parser.add_argument(
        "--convert-tests", action="store_true", help="tests' top-level imports of exported names through the package"
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    if args.write:
        for package in PACKAGES:
            print(f"wrote {write_block(package).relative_to(REPO)}")
        return 0
    if args.convert_tests:
        print(f"moved {convert_tests()} imported names to their package")
        return 0
    figures = measure()
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    for package, row in figures["packages"].items():
        print(
            f"{package}: {row['exports']} exports ({row['lazy']} lazy); TYPE_CHECKING block equals the lazy map: "
            f"{row['type_checking_block_equals_lazy_map']}; py.typed: {row['py_typed']}"
        )
    jobs = figures["cli_jobs_not_exported"]
    print(f"library callables the CLI imports that no __all__ exports: {len(jobs)}")
    for job in jobs:
        print(f"  {job['file']}:{job['line']}  {job['name']}")
    print("tests' imports of toolkit names: " + ", ".join(f"{k} {v}" for k, v in figures["test_imports"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
