"""Faults for the trust tests: a full disk (real, on a tiny tmpfs, or faked), a stale staging folder."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path


def fill_disk(folder: Path, leave_bytes: int) -> Path:
    """Fill the file system of `folder` until about `leave_bytes` are free (a filler file, returned)."""
    filler = folder / "filler.bin"
    free = shutil.disk_usage(folder).free
    with open(filler, "wb") as handle:
        handle.write(b"\0" * max(0, free - leave_bytes))
    return filler


def fake_full_disk(monkeypatch, budget_bytes: int = 0) -> list[int]:
    """`os.write` fails with ENOSPC once `budget_bytes` have been written through it (what a full disk does).

    Only code that writes through `os.write` (the toolkit's one writer) meets the fault; the list
    returned holds the sizes of the writes attempted.
    """
    real_write = os.write
    attempts: list[int] = []
    written = [0]

    def write(fd: int, data) -> int:
        attempts.append(len(data))
        room = budget_bytes - written[0]
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        done = real_write(fd, bytes(data)[:room])
        written[0] += done
        return done

    monkeypatch.setattr(os, "write", write)
    return attempts


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative POSIX path -> bytes)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
