"""Concurrent runs writing one output folder: the ownership manifest keeps every file each run wrote.

Without the lock, two runs reading the manifest, adding their files and writing it back lose each other's
records (issue 30: 4 files lost in one try of two); each try here starts 2 or 4 processes at one barrier.
"""

from __future__ import annotations

import multiprocessing
import os

import pytest

from mis_bench_dataset.toolkit.atomic import write_atomic
from mis_bench_dataset.toolkit.ownership import LOCK_NAME, MANIFEST_NAME, OutputFolder, foreign_files, read_manifest

FILES_PER_RUN = 4
TRIES = 20


def _run(root: str, writer: str, barrier) -> None:
    """One run: claims and writes its files one by one, as a command writing its outputs does."""
    os.fsync = lambda fd: None  # this forked run only: the test checks the lock, not durability (fsync is ~50 ms)
    barrier.wait()
    folder = OutputFolder(root, command="test")
    for index in range(FILES_PER_RUN):
        write_atomic(folder.claim(f"{writer}-{index}.txt", writer), writer)
    folder.remove_owned(f"{writer}-0.txt", writer)  # a remove is a read-modify-write too


@pytest.mark.parametrize("n_runs", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_every_file_each_run_wrote_is_in_the_manifest(tmp_path, n_runs):
    context = multiprocessing.get_context("fork")
    for attempt in range(TRIES):
        root = tmp_path / f"try{attempt}"
        barrier = context.Barrier(n_runs)
        runs = [context.Process(target=_run, args=(str(root), f"w{i}", barrier)) for i in range(n_runs)]
        for run in runs:
            run.start()
        for run in runs:
            run.join(30)
        assert [run.exitcode for run in runs] == [0] * n_runs, attempt
        expected = {f"w{i}-{j}.txt": f"w{i}" for i in range(n_runs) for j in range(1, FILES_PER_RUN)}
        assert read_manifest(root) == expected, attempt
        # The lock file is the toolkit's own: never reported as a file the user put there.
        assert (root / LOCK_NAME).exists() and (root / MANIFEST_NAME).exists()
        assert all(not name.startswith(".") for name in foreign_files(root, "w0"))
