"""Faults for the trust tests: a full disk (real, on a tiny tmpfs, or faked), a stale staging folder; the
run command line, error-line and strict-JSONL helpers and the private dataset copy the fault tests share."""

from __future__ import annotations

import errno
import json
import os
import shutil
from functools import partial
from pathlib import Path

from eval_scripts.cli import main

from _run_args import TEST_KEY_ENV, run_args


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


REPO = Path(__file__).resolve().parents[1]


_run_args = partial(run_args, api_key_env=TEST_KEY_ENV, limit=1, retries=1, backoff_base=0.001, backoff_max=0.002)


def _error_lines(err: str) -> list[str]:
    assert "Traceback" not in err and "internal error" not in err, err
    return [line for line in err.splitlines() if line.startswith("mis-bench")]


def _strict_lines(path: Path) -> list[dict]:
    """Every line of a JSONL file, parsed strictly (no NaN, valid UTF-8)."""

    def refuse(token):
        raise ValueError(f"non-JSON token {token}")

    lines = path.read_bytes().decode("utf-8").split("\n")[:-1]  # JSON lines end in \n only (not U+0085)
    return [json.loads(line, parse_constant=refuse) for line in lines]


def _first_run(dataset: Path, tmp_path: Path, chat_server) -> tuple[Path, list[str]]:
    out = tmp_path / "out"
    with chat_server() as server:
        args = _run_args(dataset, out, server.base_url)
        assert main(args) == 0
    return out / "responses.cache.jsonl", args


def _rewrite(cache: Path, lines: list[str]) -> None:
    cache.write_text("".join(line + "\n" for line in lines))
