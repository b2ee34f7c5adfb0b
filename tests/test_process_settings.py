"""The process-wide settings the console script makes for itself (`eval_scripts.cli.process_settings`): what each
does, for which commands, and that a user's own setting wins."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

import pytest

from eval_scripts.cli import main, process_settings

# A fresh interpreter touches a 24 MiB array, frees it and touches a new one: how many pages each touch faults in.
_TOUCHES = """
import json, resource, sys
import numpy as np
from eval_scripts.cli import process_settings
applied = process_settings.for_command(sys.argv[1])
faults = []
for _ in range(2):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    array = np.ones(3 << 20)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    del array
print(json.dumps({"applied": applied, "faults": faults}))
"""


def _touches(command: str) -> dict:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(process_settings.__file__).rsplit("/eval_scripts/", 1)[0]}
    done = subprocess.run([sys.executable, "-c", _TOUCHES, command], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_statistics_command_reuses_freed_memory_where_glibc_allocates():
    kept = _touches("score")
    if not kept["applied"]:
        pytest.skip("not glibc: the C library's own allocator is left as it is")
    assert kept["faults"][0] > 100  # the first array's pages fault in
    assert kept["faults"][1] == 0  # the second takes the first one's pages: none fault in again


def test_commands_that_load_a_model_and_a_users_allocator_settings_are_left_alone(monkeypatch):
    calls = []
    monkeypatch.setattr(process_settings.ctypes, "CDLL", lambda name: calls.append(name) or pytest.fail("loaded"))
    for command in sorted(process_settings.MODEL_COMMANDS):
        assert process_settings.for_command(command) is False
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert process_settings.for_command("score") is False
    assert calls == []


def test_without_glibc_nothing_is_set(monkeypatch):
    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)

    def no_glibc(name: str):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(process_settings.ctypes, "CDLL", no_glibc)
    assert process_settings.for_command("calibrate") is False


def test_the_cli_applies_them_for_the_command_it_runs(monkeypatch):
    seen = []
    monkeypatch.setattr(process_settings, "for_command", seen.append)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["backends"]) == 0
    assert seen == ["backends"]


def test_the_cli_lets_openblas_threads_sleep_at_once_unless_the_user_says_otherwise(monkeypatch):
    # Read by each OpenBLAS copy as it loads: a fresh `mis-bench` process has not imported numpy when it is set.
    import os

    name, value = process_settings.BLAS_THREAD_TIMEOUT
    monkeypatch.delenv(name, raising=False)
    with contextlib.redirect_stdout(io.StringIO()):
        main(["--version"])
    assert os.environ[name] == value
    monkeypatch.setenv(name, "12")
    with contextlib.redirect_stdout(io.StringIO()):
        main(["--version"])
    assert os.environ[name] == "12"
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, eval_scripts.cli; print('numpy' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "False"
