"""Fast feature access: `FeatureArrays` returns exactly the release's npz arrays, as zero-copy
views, from a build folder or a loaded `datasets.Dataset`; the baselines read through it; and the
dataset page's (docs/dataset.md) `with_format("torch")` padding-collate example trains on a build."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset import FeatureArrays
from mis_bench_dataset.builder.schema import arrays_1d, arrays_2d
from mis_bench_dataset.dataset.arrays import ARRAY_WIDTHS
from mis_bench_dataset.release.tree import MODALITY_BY_NAME
from mis_bench_dataset.toolkit.errors import DataError, UsageError

SPLITS = ("train", "validation", "test")
DATASET_PAGE = Path(__file__).resolve().parents[1] / "docs" / "dataset.md"


def _npz(release: Path, modality: str, video_id: str) -> tuple[np.ndarray, np.ndarray] | None:
    path = release / MODALITY_BY_NAME[modality].folder / f"{video_id}.npz"
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as npz:
        return npz["features"], npz["timestamps"]


def _assert_matches_release(build: Path, release: Path) -> int:
    seen = 0
    for split in SPLITS:
        features = FeatureArrays.open(build, split)
        for video_id in features.video_ids:
            for modality, width in ARRAY_WIDTHS.items():
                array, stamps = features.array(video_id, modality), features.timestamps(video_id, modality)
                expected = _npz(release, modality, video_id)
                if expected is None:  # absent in the release: empty, flagged
                    assert array.shape == (0, width) and features.value(video_id, f"has_{modality}") is False
                    continue
                assert array.dtype == np.float32 and stamps.dtype == np.float32
                np.testing.assert_array_equal(array, expected[0].astype(np.float32), strict=True)
                np.testing.assert_array_equal(stamps, expected[1].astype(np.float32), strict=True)
                assert not array.flags.writeable and not array.flags.owndata  # a view, not a copy
            seen += 1
    return seen


def test_arrays_equal_the_release_npz_exactly(synthetic_build):
    assert _assert_matches_release(synthetic_build, synthetic_build.parent / "release") == 40


def test_arrays_equal_the_real_subset_npz_exactly(subset10_dir, tmp_path_factory):
    from mis_bench_dataset import build_dataset

    build = tmp_path_factory.mktemp("arrays_real") / "mis-bench"
    build_dataset(subset10_dir, build, progress=False)
    assert _assert_matches_release(build, subset10_dir) == 10


def test_views_share_the_mapped_buffer(synthetic_build):
    features = FeatureArrays.open(synthetic_build, "train", columns=["openface"])
    first, again = features.array(0, "openface"), features.array(features.video_ids[0], "openface")
    assert np.shares_memory(first, again) and features.column_names == ["video_id", "openface"]


def test_a_loaded_dataset_with_an_indices_mapping(synthetic_build):
    from datasets import load_dataset

    with tempfile.TemporaryDirectory() as cache:
        dataset = load_dataset(str(synthetic_build), "features", split="train", cache_dir=cache)
        reordered = FeatureArrays(dataset.shuffle(seed=1).select(range(10)))
        direct = FeatureArrays.open(synthetic_build, "train")
        assert len(reordered) == 10 and reordered.video_ids != direct.video_ids[:10]
        numpy_rows = dataset.shuffle(seed=1).select(range(10)).with_format("numpy")
        for i, video_id in enumerate(reordered.video_ids):
            assert numpy_rows[i]["video_id"] == video_id
            for modality in ARRAY_WIDTHS:
                np.testing.assert_array_equal(
                    reordered.array(i, modality),
                    numpy_rows[i][modality].reshape(-1, ARRAY_WIDTHS[modality]),
                    strict=True,
                )
                np.testing.assert_array_equal(reordered.array(i, modality), direct.array(video_id, modality))
            assert reordered.value(i, "wau") == numpy_rows[i]["wau"] and str(reordered.value(i, "wau")) == str(
                numpy_rows[i]["wau"]
            )


def test_errors_name_what_is_wrong(synthetic_build, tmp_path):
    features = FeatureArrays.open(synthetic_build, "test", columns=["openface", "wau"])
    with pytest.raises(UsageError, match="unknown modality 'face'"):
        features.array(0, "face")
    with pytest.raises(UsageError, match="no column 'librosa'"):
        features.array(0, "librosa")
    with pytest.raises(DataError, match="no video 'XX0000_T1_Luke'"):
        features.array("XX0000_T1_Luke", "openface")
    with pytest.raises(IndexError):
        features.array(len(features), "openface")
    with pytest.raises(DataError, match="not a MIS-Bench build"):
        FeatureArrays.open(tmp_path, "test")
    with pytest.raises(UsageError, match="split 'dev'"):
        FeatureArrays.open(synthetic_build, "dev")
    with pytest.raises(UsageError, match="unknown `features` column"):
        FeatureArrays.open(synthetic_build, "test", columns=["face"])


_arrays = st.lists(st.integers(0, 5), min_size=1, max_size=12)


@settings(max_examples=50, deadline=None)
@given(_arrays, st.integers(1, 4), st.integers(0, 3), st.integers(0, 10_000))
def test_chunked_and_sliced_columns(lengths, n_chunks, offset, seed):
    """Rows of multi-chunk, sliced Arrow columns come back exactly (the layouts Arrow tables take)."""
    rng = np.random.default_rng(seed)
    width = ARRAY_WIDTHS["prosody"]
    arrays = [rng.standard_normal((t, width)).astype(np.float32) for t in lengths]
    stamps = [rng.standard_normal(t).astype(np.float32) for t in lengths]
    padded = [np.zeros((1, width), np.float32)] * offset + arrays  # sliced off again below
    bounds = np.linspace(0, len(arrays), n_chunks + 1).astype(int)
    chunks_2d, chunks_1d = [], []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        chunks_2d.append(arrays_2d(padded[: offset + b], width).slice(offset + a, b - a) if b > a else None)
        chunks_1d.append(
            arrays_1d([np.zeros(1, np.float32)] * offset + stamps[:b]).slice(offset + a, b - a) if b > a else None
        )
    table = pa.table(
        {
            "video_id": [f"AB{i:04d}_T1_Luke" for i in range(len(arrays))],
            "prosody": pa.chunked_array([c for c in chunks_2d if c is not None], type=pa.list_(pa.list_(pa.float32()))),
            "prosody_timestamps": pa.chunked_array(
                [c for c in chunks_1d if c is not None], type=pa.list_(pa.float32())
            ),
        }
    )
    features = FeatureArrays(table)
    for i, (array, stamp) in enumerate(zip(arrays, stamps, strict=True)):
        np.testing.assert_array_equal(features.array(i, "prosody"), array, strict=True)
        np.testing.assert_array_equal(features.timestamps(i, "prosody"), stamp, strict=True)


def test_baseline_rows_are_the_npz_arrays(synthetic_build):
    from eval_scripts.baselines.baseline_run import load_feature_rows

    release = synthetic_build.parent / "release"
    rows = load_feature_rows(synthetic_build, "test")
    assert len(rows) == 4
    for row in rows:
        for modality in ARRAY_WIDTHS:
            features, stamps = _npz(release, modality, row["video_id"])
            np.testing.assert_array_equal(row[modality], features, strict=True)
            np.testing.assert_array_equal(row[f"{modality}_timestamps"], stamps, strict=True)


def _readme_example() -> str:
    text = DATASET_PAGE.read_text(encoding="utf-8")
    block = text.split("<!-- example:torch-collate -->", 1)[1]
    return re.search(r"```python\n(.*?)```", block, re.S).group(1)


def test_readme_torch_padding_collate_example_trains(synthetic_build, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import datasets
    import torch

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path))  # the example's default cache

    code = _readme_example().replace('"/tmp/mis-bench"', repr(str(synthetic_build)))
    namespace: dict = {}
    exec(compile(code, "docs/dataset.md example", "exec"), namespace)
    batch, losses = namespace["batch"], namespace["losses"]
    lengths = batch["lengths"]
    assert batch["openface"].shape == (len(lengths), int(lengths.max()), 208)
    assert batch["scores"].shape == (len(lengths), 8) and batch["openface"].dtype == torch.float32
    for i, n in enumerate(lengths.tolist()):  # padding is zeros past each video's own length
        assert not batch["openface"][i, n:].any() and batch["mask"][i].sum() == n
    assert len(losses) > 1 and all(np.isfinite(losses))
