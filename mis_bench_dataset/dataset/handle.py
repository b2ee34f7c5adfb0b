"""`BuiltDataset`: one built dataset, opened once, that every reader takes.

A run used to open its dataset five ways (the overlap check, two `datasets` loads, the
feature arrays, a sha256 over every Parquet byte plus a read of the build report), and a
grid of 8 settings did it 8 times. A handle checks the folder once (`format.check_build_dir`,
the one "is this a build?" rule), reads the build report once, and keeps what it has read:
the scoring rows per split, the feature arrays per split, the fingerprints.

Fingerprints are the values recorded in results files, caches and the leaderboard: the
sha256 over a split's Parquet files (`format.fingerprint_files`). A build records them in
its report together with each shard's size; the handle takes them from there when the shards
on disk still have those names and sizes, and hashes the bytes only otherwise (a build
written before the report held them). The value is the same either way.

In-memory data (a `datasets.Dataset` of `scoring` rows, or a `DatasetDict` of splits) is
wrapped by `BuiltDataset.of` too: it has rows, no feature arrays and no build report.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from mis_bench_dataset.dataset import format as fmt
from mis_bench_dataset.splits import ALL_SPLITS, SPLITS
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.ownership import resolve_path

logger = logging.getLogger(__name__)

IN_MEMORY = "in-memory"

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict

# What a caller may hand a public entry function as a dataset: a built folder, an open handle, or in-memory
# rows (a `Dataset` of scoring rows, a `DatasetDict` of splits, a list of row dicts). The entry function opens
# it once (`BuiltDataset.of`), at the boundary; everything below takes the `BuiltDataset`.
DatasetSource: TypeAlias = "str | Path | BuiltDataset | Dataset | DatasetDict | Sequence[Mapping[str, Any]]"


class BuiltDataset:
    """A built MIS-Bench folder (or in-memory rows) with its splits, fingerprints, rows and feature arrays."""

    def __init__(self, path: Path | None = None, data: Any = None, name: str | None = None):
        """Use `BuiltDataset.open(path)` or `BuiltDataset.of(path_or_data)`."""
        self.path = path
        self._data = data
        self.name = name or (path.name if path is not None else IN_MEMORY)
        self._report: dict | None = None
        self._report_read = False
        self._rows: dict[tuple[str, str], list[dict]] = {}
        self._features: dict[str, Any] = {}
        self._fingerprints: dict[tuple[str, tuple[str, ...]], str] = {}

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, folder: str | Path, *, configs: Sequence[str] = (), where: str = "dataset") -> BuiltDataset:
        """Open a build folder: refused (one line, naming `where`) when it is not a folder or lacks `configs`."""
        return cls(path=fmt.check_build_dir(folder, configs, where=where))

    @classmethod
    def of(cls, dataset: DatasetSource | None, *, where: str = "dataset") -> BuiltDataset | None:
        """A handle for a path, an in-memory `Dataset`/`DatasetDict`/row list, or a handle (returned as is)."""
        if dataset is None or isinstance(dataset, BuiltDataset):
            return dataset
        if isinstance(dataset, (str, Path)):
            return cls.open(dataset, where=where)
        return cls(data=dataset)

    @classmethod
    def of_each(cls, datasets: Sequence[DatasetSource | None], *, where: str = "dataset") -> list[BuiltDataset | None]:
        """`of` of each; the same folder named twice (by path or by an open handle) or the same object is opened
        once and shared."""
        opened: dict[Any, BuiltDataset | None] = {}
        handles = []
        for dataset in datasets:
            folder = dataset.path if isinstance(dataset, BuiltDataset) else dataset
            key = resolve_path(folder) if isinstance(folder, (str, Path)) else id(dataset)
            if key not in opened:
                opened[key] = cls.of(dataset, where=where)
            handles.append(opened[key])
        return handles

    @property
    def is_folder(self) -> bool:
        return self.path is not None

    def require(self, *configs: str, where: str = "dataset") -> BuiltDataset:
        """This handle, or DataError when the folder lacks one of `configs` (in-memory data has only rows)."""
        if self.path is None:
            if any(config != "scoring" for config in configs):
                raise DataError(f"in-memory data has no `{configs[-1]}` config", where=where, hint=fmt._BUILD_HINT)
            return self
        fmt.check_build_dir(self.path, configs, where=where)
        return self

    def __repr__(self) -> str:
        return f"BuiltDataset({str(self.path) if self.path else IN_MEMORY!r})"

    # ------------------------------------------------------------------ what the build says

    @property
    def report(self) -> dict | None:
        """The build report (read once); None for in-memory data or a folder without a readable one."""
        if not self._report_read:
            self._report_read = True
            if self.path is not None:
                try:
                    report = fmt.read_build_report(self.path)
                except (OSError, ValueError):
                    report = None
                self._report = report if isinstance(report, dict) else None
        return self._report

    @property
    def synthetic(self) -> bool | None:
        """The one synthetic rule: the build report's `synthetic` flag; None when unknown (no report, in-memory)."""
        value = (self.report or {}).get("synthetic")
        return value if isinstance(value, bool) else None

    def splits(self, config: str = "scoring") -> list[str]:
        """The splits written for `config`, in SPLITS order (a split with too few videos is not written)."""
        if self.path is not None:
            return fmt.built_splits(self.path, config)
        if config != "scoring":
            return []
        if hasattr(self._data, "keys") and not hasattr(self._data, "features"):  # a DatasetDict
            return [s for s in SPLITS if s in self._data] + [s for s in self._data if s not in SPLITS]
        return []

    # ------------------------------------------------------------------ fingerprints

    def fingerprint(self, split: str, configs: Sequence[str] = ("scoring",)) -> str:
        """The split's content fingerprint over `configs` (computed once; see the module docstring)."""
        key = (split, tuple(configs))
        if key not in self._fingerprints:
            self._fingerprints[key] = self._fingerprint(split, tuple(configs))
        return self._fingerprints[key]

    def _fingerprint(self, split: str, configs: tuple[str, ...]) -> str:
        if self.path is None:
            data = self._split_data(split)
            return "datasets:" + str(getattr(data, "_fingerprint", IN_MEMORY))
        recorded = self._recorded_fingerprints().get(split, {}).get(fmt.fingerprint_key(configs))
        if recorded:
            return recorded
        return fmt.fingerprint_files(self.path, split, configs)

    def _recorded_fingerprints(self) -> dict[str, dict[str, str]]:
        """The report's fingerprints when its shard list (names and sizes) matches the folder; else nothing."""
        report = self.report or {}
        recorded, sizes = report.get("split_fingerprints"), report.get("shard_sizes")
        if not isinstance(recorded, dict) or not isinstance(sizes, dict):
            return {}
        if fmt.shard_sizes(self.path) != sizes:
            logger.info("%s: the shards differ from the build report's list; hashing them", self.path)
            return {}
        return recorded

    def fingerprints(self, split: str) -> set[str]:
        """Every fingerprint a run on this split records (one per config set it may have read)."""
        if self.path is None:
            return {self.fingerprint(split)}
        return {
            self.fingerprint(split, configs)
            for configs in fmt.FINGERPRINT_CONFIGS
            if all(fmt.split_files(self.path, config, split) for config in configs)
        }

    def build_fingerprint(self, split: str) -> str:
        """The one fingerprint a result on this split records, whatever it read: over every config the build holds
        for the split (`scoring` and `features` when it has features), so a model run on the text and a baseline on
        the features of one build name it alike and are compared (`fingerprints` still accepts results recorded
        before, over the configs they read). `all` (out-of-fold predictions of every split): a sha256 over the
        written splits' fingerprints, in order."""
        if split == ALL_SPLITS:
            import hashlib

            parts = [f"{name}={self.build_fingerprint(name)}" for name in self.splits()]
            return "sha256:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
        if self.path is None:
            return self.fingerprint(split)
        held = [c for c in fmt.FINGERPRINT_CONFIGS if all(fmt.split_files(self.path, config, split) for config in c)]
        return self.fingerprint(split, held[-1] if held else ("scoring",))

    def record(self, split: str, name: str | None = None) -> dict[str, Any]:
        """The results' `dataset` block: name, the build's fingerprint (`build_fingerprint`), split, and whether it
        is synthetic."""
        record: dict[str, Any] = {"name": name or self.name, "fingerprint": self.build_fingerprint(split)}
        record["split"] = split
        if self.synthetic is not None:
            record["synthetic"] = self.synthetic
        return record

    # ------------------------------------------------------------------ rows and arrays

    def _split_data(self, split: str) -> Any:
        data = self._data
        if hasattr(data, "keys") and not hasattr(data, "features"):  # a DatasetDict: pick the split
            if split not in data:
                raise UsageError(
                    f"split {split!r} is not in this dataset", where="dataset", hint=f"choose one of {', '.join(data)}"
                )
            return data[split]
        return data

    def rows(self, split: str, config: str = "scoring") -> list[dict]:
        """The split's rows as plain dicts (read once; each call returns fresh dicts)."""
        key = (config, split)
        if key not in self._rows:
            self._rows[key] = self._read_rows(split, config)
        return [dict(row) for row in self._rows[key]]

    def _read_rows(self, split: str, config: str) -> list[dict]:
        if self.path is None:
            data = self._split_data(split)
            return data.to_list() if hasattr(data, "to_list") else [dict(row) for row in data]
        self.require(config)
        if not fmt.split_files(self.path, config, split):
            raise DataError(
                f"cannot load config {config!r}, split {split!r} of {self.path}: no {split}-*.parquet files",
                where="dataset",
                hint="rebuild it with `mis-bench build`, or pick an existing --split",
            )
        # The same rows, in the same order, as `load_dataset(path, config, split=split).to_list()`
        # (plain string and float32 columns; tests/test_built_handle.py checks), without the Arrow cache.
        return fmt.read_columns(self.path, config, split).to_pylist()

    def features(self, split: str, columns: Sequence[str] | None = None):
        """The split's `FeatureArrays` (zero-copy views), opened once per split with every column.

        `columns` names what the caller needs (checked); the arrays hold every column, so a grid
        whose settings need different modalities decodes the split once.
        """
        from mis_bench_dataset.dataset.arrays import FeatureArrays

        if self.path is None:
            raise DataError("in-memory data has no `features` config", where="dataset", hint=fmt._BUILD_HINT)
        if split not in self._features:
            self._features[split] = FeatureArrays.open(self.path, split)
        arrays = self._features[split]
        unknown = [c for c in (columns or ()) if c not in arrays.column_names]
        if unknown:
            raise UsageError(
                f"unknown `features` column(s) {unknown}",
                where=str(self.path),
                hint=f"choose from {', '.join(arrays.column_names)}",
            )
        return arrays
