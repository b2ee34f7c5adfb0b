"""The process-wide settings `mis-bench` makes for itself, and only for itself: a library that imports the toolkit
keeps its own. Each one yields to a setting the user made.

- OpenBLAS's threads spin on a core for about 0.1 s after they start, and after each job, before they sleep (its
  THREAD_TIMEOUT: 2^28 cycles); numpy and scipy each load a copy. A statistics command answers in half a second
  and resamples on threads of its own (mis_icc_metric.resampling_threads): the spinning took 0.2 s of CPU and a
  core from them (measured on 2 cores: `score --bootstrap 10000` 0.87 -> 0.79 s, 1.41 -> 1.04 s of CPU). 2^4
  cycles: they sleep at once. Each copy reads it as it loads: set before numpy is imported.
- glibc hands every freed array above a threshold back to the kernel (its trim and mmap thresholds start at
  128 KiB), so the next array of that size faults its pages in again, one by one: `calibrate` took 445,000 page
  faults and 0.6-0.8 s of system time for 2.1 s of wall. Told to keep up to `KEPT_BYTES` freed and to take
  arrays up to `MMAP_BYTES` from the heap (the ceiling glibc's own adaptive threshold would reach), it takes
  36,500 and 0.2 s (measured on 2 cores: `calibrate` 2.1 -> 1.9 s, `plan icc` 1.8 -> 1.65 s). Not for the
  commands that load a model and may run for hours (`MODEL_COMMANDS`): torch's memory habits are its own.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["BLAS_THREAD_TIMEOUT", "KEPT_BYTES", "MMAP_BYTES", "MODEL_COMMANDS", "before_imports", "for_command"]

BLAS_THREAD_TIMEOUT = ("OPENBLAS_THREAD_TIMEOUT", "4")
KEPT_BYTES = 256 << 20
MMAP_BYTES = 32 << 20
MODEL_COMMANDS = frozenset({"run", "batch", "train"})
# glibc's mallopt parameters, and the environment variables (or tunables) by which a user sets them.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_USER_ALLOCATOR_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")


def before_imports() -> None:
    """What must be set before numpy loads: OpenBLAS's thread timeout, unless the user set one."""
    os.environ.setdefault(*BLAS_THREAD_TIMEOUT)


def for_command(command: str) -> bool:
    """Keep freed memory for reuse in `command`'s process, unless it loads a model or the user tuned the allocator;
    whether it was set (False, too, where the C library is not glibc: its own allocator, unchanged)."""
    if command in MODEL_COMMANDS or any(name in os.environ for name in _USER_ALLOCATOR_SETTINGS):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (macOS, musl)
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES))
