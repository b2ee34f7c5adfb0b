"""tests/conftest.py's `shared_once`: under pytest-xdist the session fixtures (the default sample, the builds) are
made once for the whole run and shared by the workers; without xdist, once per session."""

from __future__ import annotations

import threading
from pathlib import Path

from conftest import shared_once


class _Factory:
    """The one method of pytest's TempPathFactory that shared_once uses."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base


def test_two_workers_make_it_once_and_both_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    made, started = [], threading.Barrier(2)

    def make(folder: Path) -> None:
        made.append(folder)
        (folder / "data.txt").write_text("made once")

    results = {}

    def worker(name: str) -> None:
        started.wait()
        results[name] = shared_once(_Factory(tmp_path / f"popen-{name}"), "thing", make)

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("gw0", "gw1")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(made) == 1 and results["gw0"] == results["gw1"] == tmp_path / "shared-thing"
    assert (results["gw1"] / "data.txt").read_text() == "made once"


def test_a_half_made_folder_is_made_again_and_without_xdist_it_is_the_sessions_own(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    base = tmp_path / "session"
    (base / "shared-thing").mkdir(parents=True)
    (base / "shared-thing" / "partial").write_text("a killed worker's")  # no .done mark
    folder = shared_once(_Factory(base), "thing", lambda f: (f / "data.txt").write_text("whole"))
    assert folder == base / "shared-thing" and sorted(p.name for p in folder.iterdir()) == ["data.txt"]
    again = shared_once(_Factory(base), "thing", lambda f: (_ for _ in ()).throw(AssertionError("made twice")))
    assert again == folder
