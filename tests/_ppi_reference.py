"""`ppi_py` (the PPI authors' package) as an independent reference, run in a subprocess.

ppi-python 0.2.3 installs a top-level `tests` package that would shadow this suite's, so it is never installed
into the environment: `scripts/check` installs it (with numba and llvmlite, which it imports) into `.ppi-ref/`,
and the reference runs with `PYTHONPATH=.ppi-ref` in a child process. Without the folder the tests skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PPI_REF = REPO / ".ppi-ref"
# The install command is scripts/check's line (one definition): quoted in the skip reason.
INSTALL = next(line for line in (REPO / "scripts" / "check").read_text().splitlines() if "--target .ppi-ref" in line)

_CHILD = r"""
import json, sys
import numpy as np
import ppi_py
cases = json.load(sys.stdin)
out = []
for case in cases:
    a = {k: np.asarray(v, dtype=float) if isinstance(v, list) else v for k, v in case["args"].items()}
    alpha = 1 - case["confidence"]
    if case["kind"] == "mean":
        low, high = ppi_py.ppi_mean_ci(a["y"], a["yhat"], a["yhat_unlabeled"], alpha=alpha)
        est = ppi_py.ppi_mean_pointestimate(a["y"], a["yhat"], a["yhat_unlabeled"])
        out.append([float(np.ravel(est)[0]), float(low[0]), float(high[0])])
    elif case["kind"] == "classical_mean":
        low, high = ppi_py.classical_mean_ci(a["y"], alpha=alpha)
        out.append([float(a["y"].mean()), float(low), float(high)])
    elif case["kind"] == "difference":
        x = np.column_stack([np.ones(a["in_b"].size), a["in_b"]])
        xu = np.column_stack([np.ones(a["in_b_unlabeled"].size), a["in_b_unlabeled"]])
        low, high = ppi_py.ppi_ols_ci(x, a["y"], a["yhat"], xu, a["yhat_unlabeled"], alpha=alpha, coord=1)
        # The centre of ppi_ols_ci's interval: its lambda is tuned twice (ppi_ols_pointestimate(lam=None) tunes
        # once, so its estimate differs slightly from the interval's centre); the toolkit reports the centre.
        out.append([float((low[1] + high[1]) / 2), float(low[1]), float(high[1])])
    elif case["kind"] == "classical_difference":
        x = np.column_stack([np.ones(a["in_b"].size), a["in_b"]])
        low, high = ppi_py.classical_ols_ci(x, a["y"], alpha=alpha)
        out.append([float(np.linalg.lstsq(x, a["y"], rcond=None)[0][1]), float(low[1]), float(high[1])])
json.dump(out, sys.stdout)
"""


def ppi_reference(cases: list[dict]) -> list[list[float]]:
    """[estimate, low, high] per case from ppi_py; each case: {"kind", "confidence", "args": {name: list}}."""
    if not (PPI_REF / "ppi_py").is_dir():
        pytest.skip(f"ppi_py reference absent: {PPI_REF} (scripts/check installs it: `{INSTALL}`)")
    env = {**os.environ, "PYTHONPATH": str(PPI_REF), "NUMBA_CACHE_DIR": "/tmp/numba-cache-ppi-ref"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], input=json.dumps(cases), capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
