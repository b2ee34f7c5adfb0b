"""Fast, zero-copy access to one video's feature arrays in a built dataset.

`FeatureArrays` wraps the `features` config of one split (an Arrow table that is memory
mapped) and returns a video's `(T, W)` float32 array as a read-only numpy *view* of the
Arrow buffer: no copy of the row, let alone of the column. Arrow keeps a
`list<list<float32>>` column as one flat float buffer plus two offset arrays, so a row is
`values[inner[outer[i]] : inner[outer[i + 1]]].reshape(-1, W)`; the offsets and buffers are
looked up once per column, after which an access costs a few integer reads.

Two ways in:

* ``FeatureArrays.open(build_dir, split, columns=...)`` reads the chosen columns of the
  split's Parquet shards row group by row group into a private Arrow file, memory-maps it
  and deletes the file at once (Linux keeps the mapping alive while arrays use it); peak
  memory is one row group.
* ``FeatureArrays(dataset)`` wraps a `datasets.Dataset` you already loaded (its Arrow cache
  is memory mapped; a `.select()`/`.shuffle()` indices mapping is honoured).

Returned arrays are read-only views; ``np.array(x)`` when you need to modify one.
"""

from __future__ import annotations

import bisect
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from mis_bench_dataset.dataset.format import check_build_dir, iter_row_groups, resolve_splits, split_files
from mis_bench_dataset.release.tree import MODALITY_BY_NAME
from mis_bench_dataset.toolkit.errors import DataError, UsageError

# The `features` config's columns holding one (T, W) array per video, and their widths.
ARRAY_WIDTHS: dict[str, int] = {name: m.width for name, m in MODALITY_BY_NAME.items()}


@dataclass(frozen=True)
class _ChunkViews:
    """numpy views of one Arrow chunk of a list column: row offsets, (inner offsets,) values."""

    outer: np.ndarray
    inner: np.ndarray | None  # None for list<float32> (timestamps)
    values: np.ndarray


def _storage(chunk: pa.Array) -> pa.Array:
    return chunk.storage if isinstance(chunk, pa.ExtensionArray) else chunk


def _chunk_views(chunk: pa.Array, column: str) -> _ChunkViews:
    chunk = _storage(chunk)
    if not pa.types.is_list(chunk.type) and not pa.types.is_large_list(chunk.type):
        raise DataError(f"column {column!r} is {chunk.type}, not a list column")
    outer = chunk.offsets.to_numpy()
    child = chunk.values
    inner = None
    if pa.types.is_list(child.type) or pa.types.is_large_list(child.type):
        inner = child.offsets.to_numpy()
        child = child.values
    if child.null_count:
        raise DataError(f"column {column!r} holds {child.null_count} null value(s) inside its arrays")
    return _ChunkViews(outer, inner, child.to_numpy(zero_copy_only=True))


class _ListColumn:
    """Row -> numpy view for a (possibly chunked) list<list<float32>> or list<float32> column."""

    def __init__(self, column: pa.ChunkedArray, name: str):
        self.name = name
        self.chunks = [_chunk_views(chunk, name) for chunk in column.chunks]
        self.starts = np.cumsum([0] + [len(chunk) for chunk in column.chunks]).tolist()

    def row(self, position: int, width: int | None) -> np.ndarray:
        c = bisect.bisect_right(self.starts, position) - 1
        views = self.chunks[c]
        i = position - self.starts[c]
        start, end = int(views.outer[i]), int(views.outer[i + 1])
        if views.inner is None:
            return views.values[start:end]
        first, last = int(views.inner[start]), int(views.inner[end])
        if width is None or last - first != (end - start) * width:
            raise DataError(
                f"row {position} of column {self.name!r} is not a (T, {width}) array "
                f"({end - start} rows holding {last - first} values)"
            )
        return views.values[first:last].reshape(end - start, width)


class FeatureArrays:
    """One split of a built dataset's `features` config, for zero-copy per-video reads."""

    def __init__(self, data: Any, source: str = "dataset"):
        """`data`: a `datasets.Dataset` of the `features` config, or a `pyarrow.Table` with its columns."""
        if isinstance(data, pa.Table):
            table, indices = data, None
        elif hasattr(data, "data") and hasattr(data.data, "table"):
            table = data.data.table
            mapping = getattr(data, "_indices", None)  # set by select/shuffle/filter; no public accessor
            indices = None if mapping is None else mapping.column(0).to_numpy()
        else:
            raise TypeError(f"expected a datasets.Dataset or pyarrow.Table, got {type(data).__name__}")
        if "video_id" not in table.column_names:
            raise DataError("no video_id column: not the `features` config", where=source)
        self.source = source
        self._table = table
        self._positions = indices
        ids = table.column("video_id")
        ids = ids.take(pa.array(indices)) if indices is not None else ids
        self.video_ids: tuple[str, ...] = tuple(ids.to_pylist())
        self._index = {video_id: i for i, video_id in enumerate(self.video_ids)}
        self._lists: dict[str, _ListColumn] = {}
        self._scalars: dict[str, list] = {}

    @classmethod
    def open(cls, build_dir: str | Path, split: str, columns: Sequence[str] | None = None) -> FeatureArrays:
        """Memory-map the given columns (default: all) of one split of a built folder.

        The split's Parquet is decoded once, row group by row group, into a private Arrow
        file that is deleted as soon as it is mapped; nothing is left on disk.
        """
        folder = check_build_dir(build_dir, ("features",))
        (split,) = resolve_splits(folder, split)
        files = split_files(folder, "features", split)
        import pyarrow.parquet as pq

        names = pq.ParquetFile(files[0]).schema_arrow.names
        wanted = list(dict.fromkeys(["video_id", *(columns if columns is not None else names)]))
        unknown = [c for c in wanted if c not in names]
        if unknown:
            raise UsageError(
                f"unknown `features` column(s) {unknown}", where=str(folder), hint=f"choose from {', '.join(names)}"
            )
        with tempfile.TemporaryDirectory(prefix="mis_bench_features_") as scratch:
            path = Path(scratch) / f"{split}.arrow"
            writer = None
            for group in iter_row_groups(files, wanted):
                if writer is None:
                    writer = pa.ipc.new_file(str(path), group.schema)
                writer.write_table(group)
            if writer is None:
                raise DataError("the split's Parquet files hold no rows", where=f"{folder}/features/{split}")
            writer.close()
            table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        return cls(table, source=f"{folder}/features/{split}")

    def __len__(self) -> int:
        return len(self.video_ids)

    @property
    def column_names(self) -> list[str]:
        return self._table.column_names

    def index(self, video: int | str) -> int:
        """Position of a video (its id, or a position checked against the length)."""
        if isinstance(video, str):
            try:
                return self._index[video]
            except KeyError:
                raise DataError(f"no video {video!r}", where=self.source, hint="check the id and the split") from None
        position = int(video)
        if not -len(self) <= position < len(self):
            raise IndexError(f"video position {position} out of range for {len(self)} videos ({self.source})")
        return position % len(self)

    def _row_position(self, video: int | str) -> int:
        i = self.index(video)
        return int(self._positions[i]) if self._positions is not None else i

    def _list_column(self, name: str) -> _ListColumn:
        if name not in self._lists:
            if name not in self._table.column_names:
                raise UsageError(
                    f"no column {name!r}", where=self.source, hint=f"choose from {', '.join(self._table.column_names)}"
                )
            self._lists[name] = _ListColumn(self._table.column(name), name)
        return self._lists[name]

    def array(self, video: int | str, modality: str) -> np.ndarray:
        """The video's (T, W) float32 array of `modality` as a read-only view; (0, W) when absent."""
        if modality not in ARRAY_WIDTHS:
            raise UsageError(f"unknown modality {modality!r}", hint=f"choose from {', '.join(ARRAY_WIDTHS)}")
        return self._list_column(modality).row(self._row_position(video), ARRAY_WIDTHS[modality])

    def timestamps(self, video: int | str, modality: str) -> np.ndarray:
        """The video's (T,) float32 timestamps of `modality` as a read-only view."""
        return self._list_column(f"{modality}_timestamps").row(self._row_position(video), None)

    def value(self, video: int | str, column: str) -> Any:
        """A scalar column's value: None when null; a float column's as numpy.float32 (so `str()`
        gives the stored decimal, 3.7, as with `with_format("numpy")`); others as Python objects."""
        if column not in self._scalars:
            if column not in self._table.column_names:
                raise UsageError(
                    f"no column {column!r}",
                    where=self.source,
                    hint=f"choose from {', '.join(self._table.column_names)}",
                )
            data = self._table.column(column)
            if pa.types.is_floating(data.type):
                values = data.to_numpy()
                valid = data.is_valid().to_numpy(zero_copy_only=False)
                self._scalars[column] = [v if ok else None for v, ok in zip(values, valid, strict=True)]
            else:
                self._scalars[column] = data.to_pylist()
        return self._scalars[column][self._row_position(video)]

    def row(self, video: int | str, columns: Sequence[str] | None = None) -> dict[str, Any]:
        """The video's row as a dict: arrays as zero-copy views, other columns as Python values."""
        wanted = self.column_names if columns is None else columns
        row: dict[str, Any] = {}
        for column in wanted:
            if column in ARRAY_WIDTHS:
                row[column] = self.array(video, column)
            elif column.endswith("_timestamps") and column[: -len("_timestamps")] in ARRAY_WIDTHS:
                row[column] = self.timestamps(video, column[: -len("_timestamps")])
            else:
                row[column] = self.value(video, column)
        return row

    def rows(self, columns: Sequence[str] | None = None) -> Iterator[dict[str, Any]]:
        """Every video's row in order (see `row`)."""
        for i in range(len(self)):
            yield self.row(i, columns)
