"""`BuiltDataset`: one handle for a built dataset, opened once.

Its rows equal what `datasets.load_dataset` gives, its fingerprints equal an independent sha256
over the split's Parquet files (the value results, caches and the leaderboard have always
recorded) while being taken from the build report, and a grid of 8 settings, dry or against a
local Chat Completions server, opens the dataset once and reads each Parquet row group once.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from datasets import Dataset, DatasetDict, load_dataset

from eval_scripts.cli import main
from mis_bench_dataset import BuiltDataset
from mis_bench_dataset.dataset import format as fmt
from mis_bench_dataset.toolkit.errors import DataError, UsageError

from _batch_helpers import closed_port_url
from _run_args import run_args


def _independent_fingerprint(folder: Path, split: str, configs: tuple[str, ...]) -> str:
    """The fingerprint as results files record it, computed here from the bytes: sha256 over each file's
    `config/name` and content, files sorted by path."""
    digest = hashlib.sha256()
    for path in sorted(p for config in configs for p in (folder / config).glob(f"{split}-*.parquet")):
        digest.update(f"{path.parent.name}/{path.name}\0".encode())
        digest.update(path.read_bytes())
    return "sha256:" + digest.hexdigest()


def test_rows_equal_what_datasets_loads(synthetic_build, tmp_path):
    handle = BuiltDataset.open(synthetic_build)
    for config in ("scoring", "features"):
        for split in handle.splits(config):
            loaded = load_dataset(str(synthetic_build), config, split=split, cache_dir=str(tmp_path / "hf"))
            assert handle.rows(split, config) == loaded.to_list(), (config, split)
    assert handle.splits("scoring") == ["train", "validation", "test"]
    rows = handle.rows("test")
    rows[0]["score"] = -1.0  # callers get their own dicts: the cached rows are never changed
    assert handle.rows("test")[0]["score"] != -1.0


def test_fingerprints_are_the_recorded_values_and_come_from_the_report(synthetic_build, monkeypatch):
    report = fmt.read_build_report(synthetic_build)
    handle = BuiltDataset.open(synthetic_build)
    expected = {
        (split, configs): _independent_fingerprint(synthetic_build, split, configs)
        for split in ("train", "validation", "test")
        for configs in fmt.FINGERPRINT_CONFIGS
    }
    for (split, configs), value in expected.items():
        assert report["split_fingerprints"][split][fmt.fingerprint_key(configs)] == value

    def no_hashing(*args, **kwargs):
        raise AssertionError("the handle re-read the Parquet bytes")

    monkeypatch.setattr(fmt, "fingerprint_files", no_hashing)
    for (split, configs), value in expected.items():
        assert handle.fingerprint(split, configs) == value
    assert handle.fingerprints("test") == {expected[("test", c)] for c in fmt.FINGERPRINT_CONFIGS}
    record = handle.record("test")  # the build's one fingerprint: over every config it holds
    assert record == {
        "name": "mis-bench",
        "fingerprint": expected[("test", ("scoring", "features"))],
        "split": "test",
        "synthetic": True,
    }


def test_a_build_without_recorded_fingerprints_or_with_changed_shards_is_hashed(synthetic_build, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(synthetic_build, old)
    report = json.loads((old / fmt.REPORT_NAME).read_text())
    del report["split_fingerprints"], report["shard_sizes"]  # a build written before the report held them
    (old / fmt.REPORT_NAME).write_text(json.dumps(report))
    assert BuiltDataset.open(old).fingerprint("test") == _independent_fingerprint(synthetic_build, "test", ("scoring",))

    changed = tmp_path / "changed"
    shutil.copytree(synthetic_build, changed)
    shard = next((changed / "scoring").glob("test-*.parquet"))
    table = pq.read_table(shard)
    pq.write_table(table.slice(0, table.num_rows - 1), shard)  # another size: the report's values no longer hold
    fingerprint = BuiltDataset.open(changed).fingerprint("test")
    assert fingerprint == _independent_fingerprint(changed, "test", ("scoring",))
    assert fingerprint != _independent_fingerprint(synthetic_build, "test", ("scoring",))


def test_the_one_is_this_a_build_rule(synthetic_build, tmp_path):
    with pytest.raises(UsageError, match="no such folder"):
        BuiltDataset.open(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(UsageError, match="is not a folder"):
        BuiltDataset.open(tmp_path / "file.txt")
    with pytest.raises(DataError, match="not a MIS-Bench build: it has no `features` config") as caught:
        BuiltDataset.open(tmp_path, configs=("features",), where="--dataset")
    assert caught.value.where == "--dataset"
    with pytest.raises(DataError, match="no `scoring` config"):
        BuiltDataset.open(tmp_path).rows("test")
    assert BuiltDataset.open(tmp_path).synthetic is None  # no report: unknown, never guessed


def test_in_memory_data_is_wrapped(synthetic_build):
    rows = BuiltDataset.open(synthetic_build).rows("test")
    data = Dataset.from_list(rows)
    handle = BuiltDataset.of(data)
    assert handle.rows("test") == rows and not handle.is_folder and handle.name == "in-memory"
    assert handle.record("test") == {
        "name": "in-memory",
        "fingerprint": f"datasets:{data._fingerprint}",
        "split": "test",
    }
    splits = BuiltDataset.of(DatasetDict({"test": data, "train": Dataset.from_list(rows[:8])}))
    assert splits.splits() == ["train", "test"] and splits.rows("train") == rows[:8]
    with pytest.raises(UsageError, match="split 'validation'"):
        splits.rows("validation")
    with pytest.raises(DataError, match="no `features` config"):
        handle.features("test")
    assert BuiltDataset.of(handle) is handle
    first, again, memory, none = BuiltDataset.of_each([synthetic_build, str(synthetic_build), data, None])
    assert first is again and first.path == synthetic_build and memory.rows("test") == rows and none is None


@contextmanager
def counting_reads():
    """Counts `BuiltDataset.open`, `datasets.load_dataset`, full-byte hashes, and each Parquet row group read."""
    counts: Counter = Counter()
    opened = BuiltDataset.open.__func__
    read_row_group = pq.ParquetFile.read_row_group
    hash_files = fmt.fingerprint_files

    def count_open(cls, *args, **kwargs):
        counts["open"] += 1
        return opened(cls, *args, **kwargs)

    def count_row_group(self, i, *args, **kwargs):
        counts[("row group", self._source_name, i)] += 1
        return read_row_group(self, i, *args, **kwargs)

    def count_hash(*args, **kwargs):
        counts["hash"] += 1
        return hash_files(*args, **kwargs)

    def count_load(*args, **kwargs):
        counts["load_dataset"] += 1
        raise AssertionError("a run loads its rows through the handle, not datasets.load_dataset")

    original_init = pq.ParquetFile.__init__

    def remember_source(self, source, *args, **kwargs):
        original_init(self, source, *args, **kwargs)
        self._source_name = str(source)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BuiltDataset, "open", classmethod(count_open))
        patch.setattr(pq.ParquetFile, "__init__", remember_source)
        patch.setattr(pq.ParquetFile, "read_row_group", count_row_group)
        patch.setattr(fmt, "fingerprint_files", count_hash)
        patch.setattr("datasets.load_dataset", count_load)
        yield counts


def _row_group_reads(counts: Counter) -> dict[tuple[str, int], int]:
    """(`config/shard`, row group) -> times read."""
    return {
        (f"{Path(key[1]).parent.name}/{Path(key[1]).name}", key[2]): n
        for key, n in counts.items()
        if key[0] == "row group"
    }


_grid = partial(run_args, limit=2, retries=0, backoff_base=0, flags=("--grid",))


def _assert_opened_once(counts: Counter) -> None:
    reads = _row_group_reads(counts)
    assert counts["open"] == 1, counts
    assert counts["hash"] == 0 and counts["load_dataset"] == 0, counts
    assert reads and all(n == 1 for n in reads.values()), reads  # every row group read once
    assert {name.split("/")[0] for name, _ in reads} == {"scoring", "features"}
    assert all(name.split("/")[1].startswith("test-") for name, _ in reads)  # only the evaluated split


def test_a_dry_run_grid_opens_the_dataset_once(synthetic_build, tmp_path, capsys):
    with counting_reads() as counts:
        assert main([*_grid(synthetic_build, tmp_path / "dry", closed_port_url(), "--dry-run", "--json")]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert len(plan["settings"]) == 8 and plan["requests"] == 8 * 2 * 8  # 8 settings x 2 videos x 8 dimensions
    _assert_opened_once(counts)


def test_a_grid_against_a_server_opens_the_dataset_once(synthetic_build, tmp_path, capsys, chat_server):
    with chat_server() as server, counting_reads() as counts:
        code = main([*_grid(synthetic_build, tmp_path / "live", server.base_url, "--json")])
    entries = json.loads(capsys.readouterr().out)
    assert code == 0 and len(entries) == 8 and all("refused" not in e for e in entries), entries
    assert server.requests == 8 * 2 * 8
    _assert_opened_once(counts)
    records = {json.loads(p.read_text())["dataset"]["fingerprint"] for p in (tmp_path / "live").rglob("results.json")}
    # one build, one fingerprint: the text settings and the feature-based ones record the same (over every config)
    assert records == {_independent_fingerprint(synthetic_build, "test", ("features", "scoring"))}
