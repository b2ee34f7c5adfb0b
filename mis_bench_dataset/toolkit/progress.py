"""Progress on long steps, one helper for all of them: a tqdm bar on a terminal, one line per step elsewhere.

On a terminal (stderr is a TTY) a step shows tqdm's bar, which is removed when the step ends, so a finished
command leaves only its results. Anywhere else (a pipe, a CI log, a test) a bar's carriage returns would be
noise: the step logs one INFO line when it ends (`cross-validating: 8 settings in 95.2s`), which `mis-bench -v`
shows. `show=False` silences both (a library caller that reports progress its own way). `mis-bench --progress`
(`force_bars()`, or `MIS_BENCH_PROGRESS=1`, which child processes inherit) draws the bars anywhere.

Every bar of the toolkit goes through here (tests/test_progress.py checks that no other module imports tqdm);
`bars_shown()` tells the libraries that draw their own (transformers' Trainer, `datasets`) whether they may.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

FORCE_ENV = "MIS_BENCH_PROGRESS"


def on_terminal() -> bool:
    """Whether stderr is a terminal."""
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def force_bars() -> None:
    """Bars on whatever stderr is (`mis-bench --progress`): set in the environment, so child processes draw too."""
    os.environ[FORCE_ENV] = "1"


def bars_shown() -> bool:
    """Whether progress bars are drawn: stderr is a terminal, or `--progress` / `MIS_BENCH_PROGRESS=1` asked."""
    return os.environ.get(FORCE_ENV, "") not in ("", "0") or on_terminal()


class _Step:
    """What a step reports: `update(n)` as work is done (the bar moves), `count` at its end (the line)."""

    def __init__(self, bar) -> None:
        self.bar = bar
        self.count = 0

    def update(self, n: int = 1) -> None:
        self.count += n
        if self.bar is not None:
            self.bar.update(n)

    def describe(self, text: str) -> None:
        """Say what the step is at now (the setting, the fold): the bar's postfix on a terminal."""
        if self.bar is not None:
            self.bar.set_postfix_str(text, refresh=False)


@contextlib.contextmanager
def step(
    desc: str,
    *,
    total: int | None = None,
    unit: str = "it",
    show: bool = True,
    initial: int = 0,
    unit_scale: bool = False,
) -> Iterator[_Step]:
    """A long step with `total` units (`initial` of them already done; `unit_scale`: bytes as kB, MB): a bar on a
    terminal, else one INFO line when it ends."""
    bar = None
    if show and bars_shown():
        from tqdm.auto import tqdm

        # Without a total (one indivisible step) the bar is the step's name until it ends.
        shape = {} if total is not None else {"bar_format": "{desc} ..."}
        bar = tqdm(
            total=total,
            initial=initial,
            desc=desc,
            unit=unit,
            unit_scale=unit_scale,
            leave=False,
            dynamic_ncols=True,
            file=sys.stderr,
            **shape,
        )
    started = time.perf_counter()
    done = _Step(bar)
    try:
        yield done
    finally:
        if bar is not None:
            bar.close()
    if show and bar is None:
        took = time.perf_counter() - started
        if done.count:
            logger.info("%s: %d %s in %.1fs", desc, done.count, unit, took)
        else:
            logger.info("%s: done in %.1fs", desc, took)


def progress(
    iterable: Iterable[T], *, desc: str, total: int | None = None, unit: str = "it", show: bool = True
) -> Iterator[T]:
    """Iterate `iterable` as one long step (see `step`); `total` defaults to its length when it has one."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with step(desc, total=total, unit=unit, show=show) as done:
        for item in iterable:
            yield item
            done.update()
