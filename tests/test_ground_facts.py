"""The ground package's facts module holds the benchmark's facts only (issue 48 item 4): the toolkit's defaults,
option factories, wording and calibrate's choices live in their own modules, and the default follows the paper."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mis_bench_dataset import dimensions
from mis_bench_dataset.toolkit import defaults

FACTS = Path(dimensions.__file__)

MOVED = {
    "mis_bench_dataset.toolkit.defaults": ("DEFAULT_BOOTSTRAP", "DEFAULT_SEED", "DEFAULT_CONFIDENCE", "MAX_BOOTSTRAP"),
    "mis_bench_dataset.toolkit.options": ("bootstrap_option", "resample_option", "seed_option"),
    "mis_bench_dataset.wording": ("SYNTHETIC_MARK", "SYNTHETIC_LINE", "RESEARCH_USE", "HEADLINE_NUMBERS"),
    "mis_icc_metric.calibrator_file": ("CALIBRATION_METHODS", "DEFAULT_COVERAGE", "DEFAULT_FIT_SPLIT"),
}


def test_the_default_resample_count_is_the_papers():
    assert defaults.DEFAULT_BOOTSTRAP == dimensions.PAPER_BOOTSTRAP_RESAMPLES == 10_000
    assert defaults.PAPER_RESAMPLE in defaults.RESAMPLE_UNITS and defaults.DEFAULT_RESAMPLE in defaults.RESAMPLE_UNITS


@pytest.mark.parametrize("module", sorted(MOVED))
def test_a_moved_name_has_one_home(module):
    """Each moved name is defined in its module and no longer in `dimensions` (no second definition)."""
    home = __import__(module, fromlist=["_"])
    for name in MOVED[module]:
        assert hasattr(home, name), f"{module} lost {name}"
        assert not hasattr(dimensions, name), f"dimensions still defines {name}"


def test_the_facts_import_no_toolkit_helper():
    """`dimensions` needs only the standard library: no options, no wording, no defaults."""
    tree = ast.parse(FACTS.read_text(encoding="utf-8"))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module != "__future__"
    }
    assert not {m for m in imported if m and m.startswith("mis_")}, imported
