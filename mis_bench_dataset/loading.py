"""Reading a built MIS-Bench folder back with `datasets`, the one way every command does it.

`datasets` keys the cache of a local folder by the folder's name and card, not by its
content, so two builds in same-named folders (or a rebuild with another seed) would share
cached rows. Every reader in the toolkit therefore loads a build through `load_build`,
which uses a private, throw-away cache (the Parquet files are small; conversion is fast),
and only by path: a name that is not a folder is refused, never looked up on the Hub or in
the user's `datasets` cache.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mis_bench_dataset.errors import DataError, UsageError
from mis_bench_dataset.outputs import check_arrow_path

# `mis-bench build`'s default folder. Not "mis-bench": `load_dataset("mis-bench")` reads a bare name as a Hub
# id and, offline or without such a folder here, returns whatever the `datasets` cache holds under that name.
# Load a build by its path, `load_dataset("./mis-bench-build", "scoring")`.
DEFAULT_BUILD_DIR = "mis-bench-build"


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

    path = Path(folder)
    if not path.is_dir():
        raise UsageError(
            f"{path} is not a folder" if path.exists() else f"no such folder: {path}",
            where="dataset",
            hint="give a folder written by `mis-bench build`",
        )
    check_arrow_path(path, where="dataset")
    if not (path / config).is_dir():
        raise DataError(
            f"{path} has no `{config}` config", where="dataset", hint="give a folder written by `mis-bench build`"
        )
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


def load_rows(dataset: Any, config: str, split: str) -> list[dict]:
    """Rows (plain dicts) of a built folder's config and split, or of an in-memory Dataset."""
    if isinstance(dataset, (str, Path)):
        with load_build(dataset, config, split) as loaded:
            return loaded.to_list()
    return dataset.to_list() if hasattr(dataset, "to_list") else [dict(row) for row in dataset]


def dataset_fingerprint(dataset: Any, split: str, configs: Sequence[str] = ("scoring",)) -> str:
    """sha256 over the split's Parquet files (content, not paths), or an in-memory Dataset's own fingerprint."""
    if isinstance(dataset, (str, Path)):
        digest = hashlib.sha256()
        from mis_bench_dataset.built import split_files

        files = sorted(f for config in configs for f in split_files(dataset, config, split))
        if not files:
            raise DataError(
                f"{dataset} has no {split}-*.parquet under {', '.join(configs)}",
                where="dataset",
                hint="check --split, or rebuild with `mis-bench build`",
            )
        for f in files:
            digest.update(f"{f.parent.name}/{f.name}\0".encode())
            with open(f, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
        return "sha256:" + digest.hexdigest()
    return "datasets:" + str(getattr(dataset, "_fingerprint", "in-memory"))


# The config sets a results file's fingerprint may cover: text settings read `scoring`, the
# feature-described settings and the baselines `scoring` and `features` together.
FINGERPRINT_CONFIGS: tuple[tuple[str, ...], ...] = (("scoring",), ("scoring", "features"))


def dataset_fingerprints(build_dir: str | Path, split: str) -> set[str]:
    """Every fingerprint a run on this build's `split` records (one per config set it may have read)."""
    from mis_bench_dataset.built import split_files

    return {
        dataset_fingerprint(build_dir, split, configs)
        for configs in FINGERPRINT_CONFIGS
        if all(split_files(build_dir, config, split) for config in configs)
    }


def gold_references(rows: Sequence[dict]) -> dict[tuple[str, str], float]:
    """(video_id, dimension) -> gold score at its exact decimal, from built rows.

    Takes `scoring` rows (one per video and dimension, gold in `score`) or `features` rows
    (one per video, gold in one column per dimension key). Unlabelled pairs are left out.
    """
    from mis_bench_dataset.dimensions import DIMENSION_KEYS
    from mis_bench_dataset.numbers import gold_decimal

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
