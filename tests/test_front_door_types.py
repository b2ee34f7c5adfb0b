"""The front door as tools see it (issue 48 item 2): each package's `if TYPE_CHECKING:` block imports exactly the
names of its lazy map, from the same modules (read here from the source, independently of the script that writes
the block), so every export is visible without running `__getattr__`; each package ships `py.typed`; and every
`mis-bench` command's job has a public Python name (the table on docs/api/index.md lists them)."""

from __future__ import annotations

import argparse
import ast
import configparser
import fnmatch
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")


def _package(name: str):
    if name == "raft_trainer":
        pytest.importorskip("torch", reason="raft_trainer needs the train extra")
    return importlib.import_module(name)


def _imports(package: str, root: Path = REPO) -> tuple[dict[str, str], dict[str, str]]:
    """(eager, type_checking): `name -> absolute module` of the `from M import N` statements at the top level of
    the package's `__init__.py`, and of those in its `if TYPE_CHECKING:` block (only `N as N`, the explicit
    re-export mypy's strict mode and pyright read)."""
    tree = ast.parse((root / package / "__init__.py").read_text(encoding="utf-8"))

    def names(statements, explicit: bool) -> dict[str, str]:
        found = {}
        for node in statements:
            if isinstance(node, ast.ImportFrom) and node.module != "typing":
                where = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                found.update({a.name: where for a in node.names if not explicit or a.asname == a.name})
        return found

    blocks = [n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING"]
    assert len(blocks) == 1, f"{package}/__init__.py: one `if TYPE_CHECKING:` block"
    return names(tree.body, explicit=False), names(blocks[0].body, explicit=True)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_type_checking_block_is_the_lazy_map(package):
    module = _package(package)
    lazy = {name: importlib.util.resolve_name(where, package) for name, where in module._LAZY.items()}
    eager, type_checking = _imports(package)
    assert type_checking == lazy, {
        "lazy, not in the block": sorted(set(lazy) - set(type_checking)),
        "in the block, not lazy": sorted(set(type_checking) - set(lazy)),
        "another module": sorted(n for n in set(lazy) & set(type_checking) if lazy[n] != type_checking[n]),
    }
    # every export is bound where a type checker looks: imported at the top, or in the block
    assert set(module.__all__) == set(lazy) | (set(module.__all__) & set(eager))
    for name, where in type_checking.items():  # the block names the module the lazy export really comes from
        assert getattr(importlib.import_module(where), name) is getattr(module, name), name


def test_a_block_out_of_step_with_the_map_fails(tmp_path):
    """The check above can fail: a package whose block lacks one lazy name is caught."""
    package = tmp_path / "demo_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n_LAZY = {'sqrt': 'math', 'pi': 'math'}\n"
        "if TYPE_CHECKING:\n    from math import sqrt as sqrt\n",
        encoding="utf-8",
    )
    _, type_checking = _imports("demo_pkg", tmp_path)
    assert type_checking == {"sqrt": "math"} != {"sqrt": "math", "pi": "math"}


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_is_marked_typed_and_ships_the_marker(package):
    assert (REPO / package / "py.typed").is_file()
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    patterns = [p.strip() for p in setup["options.package_data"]["*"].split(",")]
    assert any(fnmatch.fnmatch("py.typed", pattern) for pattern in patterns)


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every leaf command of the parser (`batch export`, `cache merge`, ...)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*prefix, name)) or [" ".join((*prefix, name))]
    return found


def _command_table() -> dict[str, list[str]]:
    """docs/api/index.md's table: command -> the `package.name`s in its row."""
    page = (REPO / "docs" / "api" / "index.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `mis-bench ([\w ]+)` \| (.+) \|$", page, re.M)
    names = r"`((?:" + "|".join(PACKAGES) + r")\.\w+)`"
    return {command: re.findall(names, python) for command, python in rows}


def test_every_command_has_its_job_in_the_api_index_and_every_name_there_is_exported():
    from eval_scripts.cli import build_parser

    table = _command_table()
    commands = [c for c in _commands(build_parser()) if c != "help"]
    assert sorted(table) == sorted(commands), {
        "commands without a row": sorted(set(commands) - set(table)),
        "rows without a command": sorted(set(table) - set(commands)),
    }
    for command, names in table.items():
        assert names, f"mis-bench {command}: no Python name"
        for qualified in names:
            package, _, name = qualified.partition(".")
            assert name in _package(package).__all__, f"mis-bench {command}: {qualified} is not exported"


@pytest.mark.slow
def test_mypy_sees_the_type_of_every_export(tmp_path):
    """What an editor sees: mypy (strict re-exports) on a script that imports every export from its package
    reveals the type the defining module's own import reveals (a name only `__getattr__` provides is `Any`).
    Third-party packages are left out of the analysis (`--no-site-packages`: seconds, not minutes), so a function
    behind a torch decorator is `Any` both ways; the comparison with the defining module keeps that fair."""
    pytest.importorskip("mypy", reason="mypy checks what type checkers see (pip install mypy)")
    import subprocess
    import sys

    probe, names = [], []
    for package in PACKAGES:
        module = _package(package)
        for name in module.__all__:
            lazy = module._LAZY.get(name)
            defining = importlib.util.resolve_name(lazy, package) if lazy else package
            for where in (package, defining):
                probe.append(f"from {where} import {name} as _{len(probe)}\nreveal_type(_{len(probe)})")
            names.append(f"{package}.{name}")
    (tmp_path / "probe.py").write_text("\n".join(probe) + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-implicit-reexport", "--follow-imports=silent", "--ignore-missing-imports"]
        + ["--no-site-packages", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", "probe.py"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "", "MYPYPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    revealed = dict(re.findall(r"^probe\.py:(\d+): note: Revealed type is \"(.*)\"$", done.stdout, re.M))
    assert len(revealed) == len(probe), done.stdout[-3000:] + done.stderr[-3000:]
    shown = [revealed[str(2 * i + 2)] for i in range(len(probe))]  # line 2i+2 reveals probe i
    untyped = [name for i, name in enumerate(names) if shown[2 * i] == "Any" and shown[2 * i + 1] != "Any"]
    assert not untyped, f"type checkers see these exports as Any through the package only: {untyped}"
    assert sum(s != "Any" for s in shown[::2]) > 0.9 * len(names), "mypy saw almost no export's type"
