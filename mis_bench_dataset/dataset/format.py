"""A build folder's format, defined once beside its reader: file names, configs, shards, the "is this a build?" rule.

A build (written by `mis_bench_dataset.builder.builder`) is a folder holding `README.md` (the
card `load_dataset` reads), `build_report.json`, and one folder per config (`features/`,
`scoring/`) of `{split}-NNNNN-of-NNNNN.parquet` shards. The writer imports these names from
here, so the format has one definition and reading never imports the writer.

`datasets.load_dataset` converts a whole config (every split, every column) into its Arrow
cache before returning anything, and keys that cache by the folder's name, not its content.
Statistics and fast feature access need a few columns of one split: these helpers find the
split's shards and read only what is asked for, row group by row group.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mis_bench_dataset.splits import ALL_SPLITS, SPLITS
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.ownership import check_arrow_path

if TYPE_CHECKING:  # pyarrow is imported where it is read: `mis-bench --help` imports this module
    import pyarrow as pa

CONFIGS: tuple[str, ...] = ("features", "scoring")
CARD_NAME = "README.md"
REPORT_NAME = "build_report.json"
STATS_FOLDER = "stats"
BUILD_WRITER = "build"  # the writer name a build's files are claimed under (`toolkit.ownership`)
# `mis-bench build`'s default folder. Not "mis-bench": `load_dataset("mis-bench")` reads a bare name as a Hub
# id and, offline or without such a folder here, returns whatever the `datasets` cache holds under that name.
# Load a build by its path, `load_dataset("./mis-bench-build", "scoring")`.
DEFAULT_BUILD_DIR = "mis-bench-build"
# The config sets a results file's fingerprint may cover: text settings read `scoring`, the
# feature-described settings and the baselines `scoring` and `features` together.
FINGERPRINT_CONFIGS: tuple[tuple[str, ...], ...] = (("scoring",), ("scoring", "features"))

_BUILD_HINT = "give a folder written by `mis-bench build`"


def check_build_dir(folder: str | Path, configs: Sequence[str] = (), *, where: str = "dataset") -> Path:
    """The one "is this a build?" rule: a folder (else UsageError) holding the `configs` read (else DataError)."""
    path = Path(folder)
    if not path.is_dir():
        raise UsageError(
            f"{path} is not a folder" if path.exists() else f"no such folder: {path}", where=where, hint=_BUILD_HINT
        )
    check_arrow_path(path, where=where)
    for config in configs:
        if not (path / config).is_dir():
            raise DataError(
                f"{path} is not a MIS-Bench build: it has no `{config}` config", where=where, hint=_BUILD_HINT
            )
    return path


def fingerprint_key(configs: Sequence[str]) -> str:
    """How the build report names a config set's fingerprint: `scoring`, `scoring+features`."""
    return "+".join(configs)


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


def read_build_report(build_dir: str | Path) -> dict:
    """The build report's content (OSError or ValueError when it is missing or not JSON)."""
    return json.loads((Path(build_dir) / REPORT_NAME).read_text(encoding="utf-8"))


def fingerprint_files(build_dir: str | Path, split: str, configs: Sequence[str]) -> str:
    """sha256 over the split's Parquet files of `configs` (content and `config/name`, not paths), read in full."""
    files = sorted(f for config in configs for f in split_files(build_dir, config, split))
    if not files:
        raise DataError(
            f"{build_dir} has no {split}-*.parquet under {', '.join(configs)}",
            where="dataset",
            hint="check --split, or rebuild with `mis-bench build`",
        )
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.parent.name}/{f.name}\0".encode())
        with open(f, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def split_fingerprints(build_dir: str | Path) -> dict[str, dict[str, str]]:
    """split -> {config set key -> fingerprint} of every written split: what the build report records."""
    return {
        split: {
            fingerprint_key(configs): fingerprint_files(build_dir, split, configs)
            for configs in FINGERPRINT_CONFIGS
            if all(split_files(build_dir, config, split) for config in configs)
        }
        for split in SPLITS
        if split_files(build_dir, "scoring", split)
    }


def shard_sizes(build_dir: str | Path) -> dict[str, int]:
    """`config/name` -> bytes of every shard: how a reader checks the report's fingerprints still match the files."""
    return {
        f"{config}/{f.name}": f.stat().st_size
        for config in CONFIGS
        for f in sorted((Path(build_dir) / config).glob("*.parquet"))
    }


def iter_row_groups(files: Sequence[Path], columns: Sequence[str]) -> Iterator[pa.Table]:
    """The given columns of each row group of each file in turn (memory: one row group)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in files:
        try:
            parquet = pq.ParquetFile(path)
        except (OSError, pa.ArrowException) as err:
            if isinstance(err, OSError) and err.errno is not None:
                raise  # the disk's or the system's (EIO, EACCES, ...): said as such, at the CLI's boundary
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


def read_columns(build_dir: str | Path, config: str, split: str, columns: Sequence[str] | None = None) -> pa.Table:
    """The given columns (default: all) of one split, read into memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = split_files(build_dir, config, split)
    if not files:
        raise DataError(f"no {config}/{split}-*.parquet files", where=str(build_dir), hint=_BUILD_HINT)
    if columns is None:
        columns = pq.ParquetFile(files[0]).schema_arrow.names
    return pa.concat_tables(list(iter_row_groups(files, columns)))
