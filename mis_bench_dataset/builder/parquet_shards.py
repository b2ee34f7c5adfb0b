"""Streaming Parquet shards in the Hub layout `{config}/{split}-0000i-of-0000N.parquet`.

Rows are buffered only up to a row-group budget, so memory does not grow with the
number of videos; shard files roll over at `max_shard_bytes` and get their final
`-of-N` names when closed.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


class ShardedParquetWriter:
    def __init__(
        self,
        directory: Path,
        split: str,
        schema: pa.Schema,
        row_group_bytes: int = 64 << 20,
        max_shard_bytes: int = 512 << 20,
        dictionary_columns: list[str] | None = None,
    ):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.split = split
        self.schema = schema
        self.row_group_bytes = row_group_bytes
        self.max_shard_bytes = max_shard_bytes
        # Dictionary encoding only where values repeat (ids, rubric texts): on float arrays it
        # is tried and abandoned at a 6x cost in write time; statistics likewise.
        self.dictionary_columns = (
            dictionary_columns
            if dictionary_columns is not None
            else [f.name for f in schema if pa.types.is_string(f.type)]
        )
        self.statistics_columns = [f.name for f in schema if not pa.types.is_list(f.type)]
        self._buffer: list[pa.RecordBatch] = []
        self._buffered_bytes = 0
        self._writer: pq.ParquetWriter | None = None
        self._shard_bytes = 0
        self._partials: list[Path] = []
        self.num_rows = 0
        self.final_paths: list[Path] = []

    def write(self, batch: pa.RecordBatch) -> None:
        """Buffer a batch; the buffer never holds more than max(row_group_bytes, one batch)."""
        size = batch.nbytes  # summed over every buffer of every column: once per batch
        if self._buffer and self._buffered_bytes + size > self.row_group_bytes:
            self._flush()
        self._buffer.append(batch)
        self._buffered_bytes += size
        self.num_rows += batch.num_rows
        if self._buffered_bytes >= self.row_group_bytes:
            self._flush()

    def _open_shard(self) -> None:
        path = self.directory / f"{self.split}-{len(self._partials):05d}.parquet.partial"
        self._partials.append(path)
        self._writer = pq.ParquetWriter(
            path,
            self.schema,
            compression="snappy",
            use_dictionary=self.dictionary_columns,
            write_statistics=self.statistics_columns,
        )
        self._shard_bytes = 0

    def _flush(self) -> None:
        if not self._buffer:
            return
        if self._writer is None or self._shard_bytes >= self.max_shard_bytes:
            if self._writer is not None:
                self._writer.close()
            self._open_shard()
        table = pa.Table.from_batches(self._buffer, schema=self.schema)
        self._writer.write_table(table, row_group_size=table.num_rows)
        self._shard_bytes += self._buffered_bytes
        self._buffer.clear()
        self._buffered_bytes = 0
        del table
        pa.default_memory_pool().release_unused()  # keep RSS at the working set, not the high-water mark

    def close(self) -> list[Path]:
        self._flush()
        if self._writer is None:  # empty split: no file (datasets cannot load an empty split)
            return self.final_paths
        self._writer.close()
        n = len(self._partials)
        for i, partial in enumerate(self._partials):
            final = self.directory / f"{self.split}-{i:05d}-of-{n:05d}.parquet"
            partial.rename(final)
            self.final_paths.append(final)
        return self.final_paths
