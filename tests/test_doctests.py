"""The documentation's examples run and are right: the metric script's docstring (imported the way
evaluate imports it, as evaluate's own suite runs its metrics' doctests), the metric card, and every
other toolkit module whose docstrings hold `>>>` examples."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import evaluate
import pytest

import mis_icc_metric
from mis_bench_dataset.toolkit.errors import UsageError

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")
METRIC_DIR = Path(mis_icc_metric.metric_path())


def _modules_with_examples() -> list[str]:
    """Dotted names of the package modules with `>>>` in them, except the evaluate module folder
    (its script runs through evaluate below; its app.py starts a web server when imported)."""
    names = []
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if path.parent != METRIC_DIR and ">>>" in path.read_text(encoding="utf-8"):
                names.append(".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__"))
    return names


def _assert_passed(results: doctest.TestResults) -> None:
    assert results.failed == 0, "a documented example gives another output (the report is above)"
    assert results.attempted > 1


def test_metric_script_examples_as_evaluate_imports_it():
    module = importlib.import_module(evaluate.loading.evaluation_module_factory(str(METRIC_DIR)).module_path)
    metric_class = evaluate.loading.import_main_class(module.__name__)
    # evaluate's contract is `_compute(**inputs, **compute_kwargs)` (its own base `_compute` takes `**kwargs`): the
    # script's options travel as `**options`, each described in the card's inputs, and an unknown one is refused.
    described = set(re.findall(r"^    (\w+) \(", module._KWARGS_DESCRIPTION, re.M))
    assert described == {"predictions", "references", "video_ids", "dimensions", *module._OPTION_DEFAULTS}
    columns = {"predictions": [1.0], "references": [1.0], "video_ids": ["v"], "dimensions": ["empathy"]}
    with pytest.raises(UsageError, match="no option n_bootstraps"):
        metric_class()._compute(**columns, n_bootstraps=0)
    _assert_passed(doctest.testmod(module))


def test_metric_card_examples():
    _assert_passed(doctest.testfile(str(METRIC_DIR / "README.md"), module_relative=False))


@pytest.mark.parametrize("module_name", _modules_with_examples())
def test_module_docstring_examples(module_name):
    _assert_passed(doctest.testmod(importlib.import_module(module_name)))
