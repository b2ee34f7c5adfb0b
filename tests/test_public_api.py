"""The front door (issue 38): each package's public API is exactly its `__all__`, and docs/api/<package>.md
renders exactly those names, each from the module that defines it. Fails when a documented name is not
exported, an exported name is not documented, not importable from the package (or shadowed by a submodule of
the same name), or has no docstring (read by griffe, as mkdocstrings renders it); and when importing the
packages stops being light."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")
# What each package exports at least (the list; a package may export more). Adding a name is one line.
FRONT_DOOR = {
    "mis_bench_dataset": (
        "BuiltDataset",
        "build_dataset",
        "generate_synthetic_release",
        "default_sample",
        "DIMENSIONS",
    ),
    "mis_icc_metric": (
        "score_predictions",
        "icc3",
        "Resampling",
        "subgroup_agreement",
        "therapist_agreement",
        "fit_calibrator",
        "ppi_mean",
        "estimate_means",
        "plan_icc",
        "perturbation_shift",
        "agreement",
        "calibration_summary",
        "variance_sources",
    ),
    "raft_trainer": ("RAFTConfig", "RAFTTrainer", "raft_loss", "expected_decimal_score", "predict_scores"),
    "eval_scripts": (
        "RunConfig",
        "Setting",
        "ReportOptions",
        "run_setting",
        "run_grid",
        "get_backend",
        "Backend",
        "Completion",
        "Prompt",
        "DecodingConfig",
        "parse_score",
        "write_report",
        "build_leaderboard",
        "run_jury",
        "calibrate",
    ),
}
HEAVY = ("numpy", "pyarrow", "pandas", "torch")


def _package(name: str) -> ModuleType:
    if name == "raft_trainer":
        pytest.importorskip("torch", reason="raft_trainer needs the train extra")
    return importlib.import_module(name)


def _documented(package: str) -> list[str]:
    """The `::: target` lines of the package's API page, in order."""
    page = (REPO / "docs" / "api" / f"{package}.md").read_text(encoding="utf-8")
    return re.findall(r"^::: ([\w.]+)\s*$", page, re.M)


@cache
def _griffe_package(top: str):
    griffe = pytest.importorskip("griffe", reason="griffe comes with the docs extra (mkdocstrings)")
    return griffe.load(top, search_paths=[str(REPO)])


def test_the_front_door_of_the_harness():
    """The issue's "done when", as a user would write it."""
    from eval_scripts import Backend, RunConfig, build_leaderboard, get_backend, run_grid, run_setting, write_report

    assert RunConfig.__module__ == "eval_scripts.harness.config" and callable(run_setting) and callable(run_grid)
    assert callable(get_backend) and inspect.isabstract(Backend)  # a plugin subclasses it (docs/harness.md)
    assert write_report.__name__ == "write_report" and build_leaderboard.__name__ == "build_leaderboard"


@pytest.mark.parametrize("package", PACKAGES)
def test_the_front_door_names_are_exported(package):
    module = _package(package)
    assert set(FRONT_DOOR[package]) <= set(module.__all__), set(FRONT_DOOR[package]) - set(module.__all__)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_export_is_importable_from_the_package(package):
    """`from package import name` gives the object, never a submodule: a function named like a module of its
    package would turn into that module once the module is imported (a lazy export cannot win that race)."""
    module = _package(package)
    assert len(module.__all__) == len(set(module.__all__))
    assert set(module.__all__) <= set(dir(module))  # tab completion and help() see the lazy names
    shadowed = [name for name in module.__all__ if importlib.util.find_spec(f"{package}.{name}") is not None]
    assert not shadowed, f"exports named like a submodule of {package}: {shadowed}"
    for name in module.__all__:
        value = getattr(module, name)
        assert not isinstance(value, ModuleType), name
        namespace: dict = {}
        exec(f"from {package} import {name}", namespace)
        assert namespace[name] is value


@pytest.mark.parametrize("package", PACKAGES)
def test_the_api_page_renders_exactly_the_exports(package):
    """docs/api/<package>.md: the package's docstring, then one `::: module.name` per export, from the module that
    defines it (so mkdocstrings renders the object, not an alias); nothing else (no internal module)."""
    module = _package(package)
    targets = _documented(package)
    assert targets.count(package) == 1, "the page opens with the package's docstring (`::: package`)"
    named = [target for target in targets if target != package]
    names = [target.rpartition(".")[2] for target in named]
    assert len(names) == len(set(names)), "each export once"
    assert set(names) == set(module.__all__), {
        "documented, not exported": sorted(set(names) - set(module.__all__)),
        "exported, not documented": sorted(set(module.__all__) - set(names)),
    }
    for target in named:
        where, _, name = target.rpartition(".")
        defined = getattr(importlib.import_module(where), name)
        assert defined is getattr(module, name), f"{target} is not what `from {package} import {name}` gives"
        if inspect.isclass(defined) or inspect.isfunction(defined):
            assert defined.__module__ == where, f"{target}: defined in {defined.__module__}"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_export_has_a_docstring(package):
    """As mkdocstrings reads it (griffe, from the source): a function's or class's own docstring, a constant's
    attribute docstring (the string after its assignment)."""
    _package(package)
    missing = []
    for target in _documented(package):
        top, _, rest = target.partition(".")
        found = _griffe_package(top)[rest] if rest else _griffe_package(top)
        docstring = found.docstring
        if docstring is None or not docstring.value.strip():
            missing.append(target)
    assert not missing, f"no docstring: {missing}"


def test_the_rule_is_written_where_a_user_reads_it():
    rule = "The public API is exactly each package's `__all__`"
    for page in ("docs/api/index.md", "docs/architecture.md"):
        assert rule in (REPO / page).read_text(encoding="utf-8"), page
    for package in PACKAGES:
        assert "The public API is exactly `__all__`" in (REPO / package / "__init__.py").read_text(encoding="utf-8")


LIGHT_PROBE = """
import json, sys
import mis_bench_dataset, mis_icc_metric, eval_scripts
print(json.dumps([m for m in {heavy!r} if m in sys.modules]))
"""


def test_importing_the_packages_stays_light():
    """`import eval_scripts` (what `mis-bench --help` does) loads neither numpy nor pyarrow: the exports are lazy."""
    done = subprocess.run(
        [sys.executable, "-c", LIGHT_PROBE.format(heavy=HEAVY)], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
