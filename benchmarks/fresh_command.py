"""One `mis-bench` command in a fresh interpreter, timed as a user pays it: the benchmarks' one way of doing so.

The child reads compiled bytecode as an installed toolkit does: with PYTHONDONTWRITEBYTECODE set (as on some
build machines) every run would compile the toolkit's modules again, about 0.12 s that inflates a baseline and
flatters every ratio to it. CPU is the child's user + system time (all its threads): on a shared machine it moves
less with the load than wall time.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child_env(tree: Path = ROOT) -> dict[str, str]:
    """The environment of a timed child: the toolkit in `tree` first on the path, offline, bytecode cached."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def timed_command(argv: list[str], tree: Path = ROOT) -> tuple[float, float]:
    """(wall, CPU) seconds of `mis-bench ARGV` from the toolkit in `tree`; it must succeed."""
    command = [sys.executable, "-m", "eval_scripts.cli", *map(str, argv)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=child_env(tree), cwd=tree)  # `-m`: cwd first
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"mis-bench {' '.join(map(str, argv))} failed ({done.returncode}): {done.stderr.strip()[-500:]}"
        )
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
