"""Where the toolkit keeps what it downloads or generates once per machine (`MIS_BENCH_CACHE`, else
`~/.cache/mis-bench`): the default sample and the authors' fetched files live under it."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The toolkit's cache folder: `cache_dir` when given, else `$MIS_BENCH_CACHE`, else `~/.cache/mis-bench`."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("MIS_BENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mis-bench"
