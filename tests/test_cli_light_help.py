"""`mis-bench --help` and `mis-bench run --help` stay light: building the parser and printing the help
imports neither numpy nor pyarrow (each checked in a fresh interpreter, where nothing is imported yet)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "pyarrow", "pandas", "torch")
PROBE = """
import contextlib, io, json, sys
from eval_scripts.cli import build_parser, main
build_parser()
with contextlib.redirect_stdout(io.StringIO()) as help_text:
    code = main({argv!r})
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"code": code, "help": len(help_text.getvalue()), "heavy": heavy}}))
"""


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]], ids=" ".join)
def test_help_imports_neither_numpy_nor_pyarrow(argv):
    probe = PROBE.format(argv=argv, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0 and report["help"] > 500, report
    assert report["heavy"] == [], f"`mis-bench {' '.join(argv)}` imported {report['heavy']}"


def test_the_probe_sees_a_heavy_import():
    """The check can fail: an interpreter that imports numpy is caught."""
    probe = PROBE.format(argv=["--help"], heavy=HEAVY).replace("build_parser()", "build_parser(); import numpy")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1])["heavy"] == ["numpy"]
