"""The shape of the code, measured the same way before and after a restructuring (issue 38).

Prints, per package: modules and lines; the rooms (folders holding an `__init__.py`) and the arrows between
them (distinct room -> room imports, from the AST, lazy imports included); functions taking more than 7
parameters positionally and more than 7 in all (`self`/`cls` not counted); module names used twice in a package.

    python3 benchmarks/structure.py            # this checkout
    python3 benchmarks/structure.py --json     # the same figures as JSON
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _room(module: str, rooms: set[str]) -> str:
    """The innermost room (package folder) a module belongs to."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in rooms:
            return ".".join(parts[:end])
    return parts[0]


def _imports(tree: ast.AST, module: str) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(module.split(".")[: -node.level] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def parameter_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    """Every parameter a caller may pass, `self` / `cls` aside: positional-only, positional, keyword-only, and
    `*args` / `**kwargs` as one each (a pass-through `**kwargs` to a parent class, TRL-style, counts once). The one
    statement of the rule: tests/test_architecture.py holds the library to at most 7 by it."""
    arguments = function.args
    names = [arg.arg for arg in (*arguments.posonlyargs, *arguments.args)]
    names = names[1:] if names[:1] in (["self"], ["cls"]) else names
    names += [arg.arg for arg in arguments.kwonlyargs]
    names += [f"*{arguments.vararg.arg}"] if arguments.vararg else []
    names += [f"**{arguments.kwarg.arg}"] if arguments.kwarg else []
    return names


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """(positional, all) parameters of `node`, by `parameter_names`."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    if positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    return len(positional), len(parameter_names(node))


def measure() -> dict:
    files = {path: path.read_text(encoding="utf-8") for package in PACKAGES for path in (REPO / package).rglob("*.py")}
    modules = {_module(path): path for path in files}
    rooms = {_module(path) for path in files if path.name == "__init__.py"}
    arrows: set[tuple[str, str]] = set()
    over_positional, over_total = [], []
    for path, text in files.items():
        module = _module(path)
        tree = ast.parse(text)
        for name in _imports(tree, module):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                source, target = _room(module, rooms), _room(name, rooms)
                if source != target:
                    arrows.add((source, target))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                positional, total = _parameters(node)
                where = f"{path.relative_to(REPO)}:{node.lineno} {node.name}"
                if positional > 7:
                    over_positional.append(where)
                if total > 7:
                    over_total.append(where)
    per_package = {}
    for package in PACKAGES:
        paths = [path for path in files if path.relative_to(REPO).parts[0] == package]
        names = Counter(path.stem for path in paths if not path.name.startswith("__"))
        per_package[package] = {
            "modules": len(paths),
            "lines": sum(files[path].count("\n") for path in paths),
            "rooms": sum(1 for room in rooms if room.split(".")[0] == package),
            "names_used_twice": sorted(name for name, count in names.items() if count > 1),
        }
    return {
        "packages": per_package,
        "rooms": len(rooms),
        "arrows": len(arrows),
        "functions_over_7_positional": sorted(over_positional),
        "functions_over_7_parameters": len(over_total),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    figures = measure()
    if parser.parse_args().json:
        print(json.dumps(figures, indent=2))
        return
    for package, row in figures["packages"].items():
        twice = ", ".join(row["names_used_twice"]) or "none"
        size = f"{row['modules']:4} modules {row['lines']:6} lines {row['rooms']:3} rooms"
        print(f"{package:18} {size}; names twice: {twice}")
    print(f"rooms {figures['rooms']}, arrows between rooms {figures['arrows']}")
    print(
        f"functions over 7 parameters: {figures['functions_over_7_parameters']} in all, "
        f"{len(figures['functions_over_7_positional'])} positionally"
    )
    for where in figures["functions_over_7_positional"]:
        print(f"  {where}")


if __name__ == "__main__":
    main()
