"""Reading a built MIS-Bench folder back with `datasets`, the one way every command does it.

`datasets` keys the cache of a local folder by the folder's name and card, not by its
content, so two builds in same-named folders (or a rebuild with another seed) would share
cached rows. Every reader in the toolkit therefore loads a build through `load_build`,
which checks the folder with the one rule (`format.check_build_dir`) and uses a private,
throw-away cache (the Parquet files are small; conversion is fast), and only by path: a
name that is not a folder is refused, never looked up on the Hub or in the user's
`datasets` cache. The toolkit's own commands read rows through `BuiltDataset` (once per run).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mis_bench_dataset.dataset.format import check_build_dir
from mis_bench_dataset.toolkit.errors import DataError


@contextmanager
def quiet_datasets() -> Iterator[None]:
    """`datasets`' own progress bars ("Generating train split", "Map", "Filter") off for the toolkit's internal
    loads, which take well under a second each; the user's setting is restored afterwards, and a user who set
    HF_DATASETS_DISABLE_PROGRESS_BARS=0 keeps the bars."""
    from datasets import config
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    if are_progress_bars_disabled() or config.HF_DATASETS_DISABLE_PROGRESS_BARS is False:
        yield
        return
    disable_progress_bars()
    try:
        yield
    finally:
        enable_progress_bars()


@contextmanager
def load_build(folder: str | Path, config: str, split: str | None = None) -> Iterator[Any]:
    """The `datasets` Dataset (or DatasetDict without `split`) of one config of a built folder.

    Use the result inside the `with` block: its cache is removed afterwards.
    """
    from datasets import load_dataset

    path = check_build_dir(folder, (config,))
    with tempfile.TemporaryDirectory(prefix="mis_bench_load_") as cache_dir:
        try:
            with quiet_datasets():
                loaded = load_dataset(str(path), config, split=split, cache_dir=cache_dir)
        except (ValueError, FileNotFoundError, KeyError) as err:
            what = f"config {config!r}" + (f", split {split!r}" if split else "")
            raise DataError(
                f"cannot load {what} of {path}: {err}",
                where="dataset",
                hint="rebuild it with `mis-bench build`, or pick an existing --split",
            ) from err
        try:
            yield loaded
        finally:
            del loaded


def gold_references(rows: Sequence[dict]) -> dict[tuple[str, str], float]:
    """(video_id, dimension) -> gold score at its exact decimal, from built rows.

    Takes `scoring` rows (one per video and dimension, gold in `score`) or `features` rows
    (one per video, gold in one column per dimension key). Unlabelled pairs are left out.
    """
    from mis_bench_dataset.dimensions import DIMENSION_KEYS
    from mis_bench_dataset.toolkit.numbers import gold_decimal

    references: dict[tuple[str, str], float] = {}
    for row in rows:
        video = str(row["video_id"])
        pairs = (
            [(row["dimension"], row.get("score"))] if "dimension" in row else [(k, row.get(k)) for k in DIMENSION_KEYS]
        )
        for dimension, value in pairs:
            if value is not None and value == value:  # NaN is unlabelled too
                references[(video, str(dimension))] = gold_decimal(value)
    return references
