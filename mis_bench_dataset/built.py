"""Reading a built MIS-Bench folder's Parquet files directly with pyarrow.

`datasets.load_dataset` converts a whole config (every split, every column) into its Arrow
cache before returning anything, and keys that cache by the folder's name, not its content.
Statistics and fast feature access need a few columns of one split: these helpers find the
split's shards (the `{config}/{split}-*.parquet` layout the build writes) and read only what
is asked for, row group by row group.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from mis_bench_dataset.errors import DataError, UsageError
from mis_bench_dataset.outputs import check_arrow_path
from mis_bench_dataset.splits import ALL_SPLITS, SPLITS

_BUILD_HINT = "give a folder written by `mis-bench build`"


def check_build_dir(build_dir: str | Path) -> Path:
    """The folder as a Path, or DataError when it is not a MIS-Bench build."""
    from mis_bench_dataset.build import REPORT_NAME

    path = Path(build_dir)
    if not path.is_dir():
        raise DataError("not a folder", where=str(path), hint=_BUILD_HINT)
    check_arrow_path(path, where="dataset")
    if not (path / REPORT_NAME).is_file() or not (path / "features").is_dir():
        raise DataError(f"not a MIS-Bench build (no {REPORT_NAME} or features/)", where=str(path), hint=_BUILD_HINT)
    return path


def split_files(build_dir: str | Path, config: str, split: str) -> list[Path]:
    """The split's Parquet shards in order; empty when the build has no such split."""
    return sorted((Path(build_dir) / config).glob(f"{split}-*.parquet"))


def built_splits(build_dir: str | Path, config: str = "features") -> list[str]:
    """The splits the build wrote (a split with too few videos is not written), in SPLITS order."""
    return [split for split in SPLITS if split_files(build_dir, config, split)]


def resolve_splits(build_dir: str | Path, split: str, config: str = "features") -> list[str]:
    """`split` ('all' or a name) as the list of written splits it means; UsageError for an unknown one."""
    present = built_splits(build_dir, config)
    if split == ALL_SPLITS:
        if not present:
            raise DataError(f"no {config}/*.parquet files", where=str(build_dir), hint=_BUILD_HINT)
        return present
    if split not in present:
        raise UsageError(
            f"split {split!r} is not in this build",
            where=str(build_dir),
            hint=f"choose one of {', '.join(present) or '(none)'} or {ALL_SPLITS!r}",
        )
    return [split]


def iter_row_groups(files: Sequence[Path], columns: Sequence[str]) -> Iterator[pa.Table]:
    """The given columns of each row group of each file in turn (memory: one row group)."""
    for path in files:
        try:
            parquet = pq.ParquetFile(path)
        except (OSError, pa.ArrowException) as err:
            raise DataError(f"unreadable Parquet file: {err}", where=str(path), hint="rebuild the dataset") from err
        missing = [c for c in columns if c not in parquet.schema_arrow.names]
        if missing:
            raise DataError(
                f"column(s) {missing} are missing",
                where=str(path),
                hint="rebuild the dataset with this version of mis-bench",
            )
        for group in range(parquet.metadata.num_row_groups):
            yield parquet.read_row_group(group, columns=list(columns))


def read_columns(build_dir: str | Path, config: str, split: str, columns: Sequence[str]) -> pa.Table:
    """The given (small) columns of one split, read into memory."""
    tables = list(iter_row_groups(split_files(build_dir, config, split), columns))
    if not tables:
        raise DataError(f"no {config}/{split}-*.parquet files", where=str(build_dir), hint=_BUILD_HINT)
    return pa.concat_tables(tables)
