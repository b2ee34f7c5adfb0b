"""Backends from outside: installed packages name backend classes in the entry-point group `mis_bench.backends`.

A lab with its own inference stack ships a package whose metadata says, in `entry_points.txt`::

    [mis_bench.backends]
    mystack = my_package.module:MyBackend

and `mis-bench run --backend mystack --model M` finds it (`importlib.metadata.entry_points`). Listing the
installed names reads only the packages' metadata: no plugin module is imported until its backend is asked
for, so `mis-bench run --help` stays fast. A name that a built-in backend already has is the built-in one
(the plugin is ignored, with a warning when asked for). The class is checked when it is loaded
(`eval_scripts.backends.base.get_backend`): a subclass of `Backend` implementing `complete`.
"""

from __future__ import annotations

import functools
import logging
import sys
from importlib.metadata import EntryPoint, entry_points

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "mis_bench.backends"


def installed_backends(built_in: tuple[str, ...] = ()) -> dict[str, EntryPoint]:
    """name -> entry point of every installed backend plugin (sorted by name), those named like a built-in left out."""
    found: dict[str, EntryPoint] = {}
    for point in _group_points(tuple(sys.path)):
        if point.name in built_in:
            logger.warning("the installed backend %r (%s) is shadowed by the built-in one", point.name, point.value)
        else:
            found.setdefault(point.name, point)
    return dict(sorted(found.items()))


@functools.lru_cache(maxsize=4)
def _group_points(search_path: tuple[str, ...]) -> tuple[EntryPoint, ...]:
    """The group's entry points, read once per import path: `entry_points` opens every installed distribution's
    metadata (about 50 ms in an environment with the training stack), and a parser is built with the names twice
    (choices and help); keyed by `sys.path` so a folder put on it (a test's plugin) is seen."""
    del search_path  # only the cache key: entry_points reads sys.path itself
    return tuple(entry_points(group=ENTRY_POINT_GROUP))


def origin(point: EntryPoint) -> str:
    """Where a plugin comes from, for messages: `module:Class` and its distribution."""
    dist = getattr(point, "dist", None)
    package = f" from {dist.name} {dist.version}" if dist is not None else ""
    return f"{point.value}{package}"
