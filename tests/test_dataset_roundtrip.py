"""Round trip: synthetic release -> build -> load_dataset equals the npz files exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mis_bench_dataset import DIMENSION_KEYS, RUBRIC, read_labels
from mis_bench_dataset.builder.schema import FEATURES_COLUMNS, SCORING_COLUMNS
from mis_bench_dataset.release.tree import MODALITIES


def _load(path: Path, config: str, split: str):
    from datasets import load_dataset

    return load_dataset(str(path), config, split=split)


def test_contract_columns_and_types(synthetic_build):
    from datasets import Array2D, Value

    scoring = _load(synthetic_build, "scoring", "test")
    assert tuple(scoring.column_names) == SCORING_COLUMNS
    assert scoring.features["score"] == Value("float32")
    features = _load(synthetic_build, "features", "test")
    assert tuple(features.column_names) == FEATURES_COLUMNS
    for m in MODALITIES:
        assert features.features[m.name] == Array2D((None, m.width), "float32")
        assert features.features[f"has_{m.name}"] == Value("bool")


def test_splits_partition_the_videos(synthetic_build):
    seen: dict[str, str] = {}
    for split in ("train", "validation", "test"):
        ids = set(_load(synthetic_build, "features", split)["video_id"])
        assert ids, split
        for video_id in ids:
            assert video_id not in seen, f"{video_id} in {seen.get(video_id)} and {split}"
            seen[video_id] = split
    assert len(seen) == 40


def test_arrays_equal_npz_exactly(synthetic_build):
    release = synthetic_build.parent / "release"
    features = _load(synthetic_build, "features", "train").with_format("numpy")
    for row in features.select(range(3)):
        for m in MODALITIES:
            with np.load(release / m.folder / f"{row['video_id']}.npz", allow_pickle=False) as npz:
                assert row[m.name].dtype == np.float32
                np.testing.assert_array_equal(row[m.name], npz["features"])
                np.testing.assert_array_equal(row[f"{m.name}_timestamps"], npz["timestamps"])
            assert row[f"has_{m.name}"]
        with np.load(release / "text" / "words" / f"{row['video_id']}.npz", allow_pickle=False) as npz:
            assert row["transcript"] == str(npz["text"])


def test_scoring_rows_carry_gold_and_rubric(synthetic_build):
    gold = read_labels(synthetic_build.parent / "release" / "ratings.csv").gold
    rows = _load(synthetic_build, "scoring", "validation")
    assert len(rows) == 8 * len(set(rows["video_id"]))
    for row in rows:
        expected = gold[row["video_id"]][row["dimension"]]
        assert row["score"] == pytest.approx(expected, abs=1e-6)
        assert row["criterion"] == RUBRIC[row["dimension"]].criterion
        assert row["rubric_5"] == RUBRIC[row["dimension"]].scores[4]
    assert [r["dimension"] for r in rows.select(range(8))] == list(DIMENSION_KEYS)
