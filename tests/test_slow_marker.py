"""The quick suite and the full one: tests marked `slow` are skipped unless RUN_SLOW is set, and what CI runs
(`scripts/check`) sets it, so every test runs there (tests/conftest.py, `run_slow`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO_ROOT, run_slow
from test_docs_blocks import PAGES, SLOW_PAGES, _pages_with_code

SLOW_TEST = "tests/test_docs_site.py::test_mkdocs_build_strict_passes"


def _pytest(*args: str, run_slow: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RUN_SLOW"))}
    if run_slow is not None:
        env["RUN_SLOW"] = run_slow
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_slow_test_is_skipped_with_its_reason_unless_run_slow(tmp_path):
    done = _pytest("-rs", "--basetemp", str(tmp_path), SLOW_TEST, run_slow=None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout and "RUN_SLOW=1 runs it" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("value", "slow_too"),
    [
        ("1", True),
        (" Yes ", True),
        ("TRUE", True),
        ("on", True),
        ("", False),
        ("0", False),
        ("no", False),
        ("False", False),
    ],
)
def test_run_slow_reads_yes_and_no_as_transformers_does(value, slow_too, monkeypatch):
    monkeypatch.setenv("RUN_SLOW", value)
    assert run_slow() is slow_too


def test_a_run_slow_that_is_neither_yes_nor_no_stops_pytest_with_a_usage_error(tmp_path):
    done = _pytest("--collect-only", "--basetemp", str(tmp_path), SLOW_TEST, run_slow="maybe")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's ExitCode.USAGE_ERROR
    assert "RUN_SLOW='maybe': expected 1" in done.stderr


def test_ci_runs_the_slow_tests_too():
    """`scripts/check` (the README's test command, which .ci/run calls) runs pytest with RUN_SLOW=1."""
    lines = (REPO_ROOT / "scripts" / "check").read_text(encoding="utf-8").splitlines()
    pytest_lines = [line for line in lines if " -m pytest" in line and not line.lstrip().startswith("#")]
    assert pytest_lines == ["RUN_SLOW=1 python3 -m pytest -q -n 2"]


def test_every_slow_page_is_a_page_the_docs_test_runs():
    """A renamed page would otherwise leave a stale name here and run in the quick suite unnoticed."""
    params = _pages_with_code()
    marked = {p.values[0] for p in params if not isinstance(p, str) and any(m.name == "slow" for m in p.marks)}
    assert marked == SLOW_PAGES, SLOW_PAGES - set(PAGES)
