"""Checks against the real public subset and the 996 real transcripts (skip without ../shared)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from mis_bench_dataset import build_dataset
from mis_bench_dataset.release.tree import MODALITIES

SPLITS = ("train", "validation", "test")


@pytest.fixture(scope="module")
def subset_build(subset10_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("subset10") / "mis-bench"
    return build_dataset(subset10_dir, out, progress=False), out


def _rows(out, config="features"):
    from datasets import load_dataset

    rows = []
    for split in SPLITS:
        ds = load_dataset(str(out), config, split=split)
        rows += list(ds.with_format("numpy") if config == "features" else ds)
    return rows


def test_subset10_arrays_equal_the_npz_files_exactly(subset_build, subset10_dir):
    report, out = subset_build
    rows = _rows(out)
    assert sorted(str(r["video_id"]) for r in rows) == sorted(
        p.stem for p in (subset10_dir / "video" / "openface3").iterdir()
    )
    for row in rows:
        video_id = str(row["video_id"])
        for m in MODALITIES:
            path = subset10_dir / m.folder / f"{video_id}.npz"
            if not path.exists():
                assert not row[f"has_{m.name}"] and row[m.name].shape == (0, m.width)
                continue
            with np.load(path, allow_pickle=False) as npz:
                assert row[f"has_{m.name}"]
                assert row[m.name].dtype == np.float32
                np.testing.assert_array_equal(row[m.name], npz["features"])
                np.testing.assert_array_equal(row[f"{m.name}_timestamps"], npz["timestamps"])
        with np.load(subset10_dir / "text" / "words" / f"{video_id}.npz", allow_pickle=False) as npz:
            assert row["transcript"] == str(npz["text"])
        with np.load(subset10_dir / "audio" / "librosa" / f"{video_id}.npz") as npz:
            assert row["duration_seconds"] == pytest.approx(float(npz["timestamps"][-1]) + 0.02, abs=1e-3)


def test_subset10_missing_wav2vec_are_flagged_and_no_video_lost(subset_build, subset10_dir):
    report, _ = subset_build
    missing = sorted(p.video_id for p in report.problems if p.kind == "missing_file" and p.modality == "wav2vec")
    present = {p.stem for p in (subset10_dir / "audio" / "wav2vec").iterdir()}
    assert len(missing) == 8 and not set(missing) & present
    assert report.n_videos == 10 and report.modalities_present["wav2vec"] == 2
    assert report.problem_counts() == {"missing_file": 8}


def test_subset10_strict_exits_nonzero_naming_them(subset10_dir, subset_build, tmp_path, capsys):
    report, _ = subset_build
    from eval_scripts.cli import main

    assert main(["build", str(subset10_dir), "--out", str(tmp_path / "x"), "--strict"]) == 1
    printed = capsys.readouterr().err  # the listing is a diagnostic: stderr
    for p in report.problems:
        assert p.video_id in printed
    assert not (tmp_path / "x").exists()


def test_real_transcripts_build_996_by_8_scoring_rows(real_transcripts_csv, tmp_path):
    report = build_dataset(None, tmp_path / "out", transcripts=real_transcripts_csv, progress=False)
    assert report.n_videos == 996 and report.n_scoring_rows == 996 * 8 and report.problems == []
    rows = _rows(tmp_path / "out", "scoring")
    assert len(rows) == 996 * 8 and len({r["video_id"] for r in rows}) == 996
    with open(real_transcripts_csv, newline="", encoding="utf-8") as handle:
        truth = {r["video"]: r["transcript"] for r in csv.DictReader(handle)}
    assert all(r["transcript"] == truth[r["video_id"]] for r in rows)


def test_real_transcripts_as_a_text_only_tree(real_transcripts_csv, tmp_path):
    with open(real_transcripts_csv, newline="", encoding="utf-8") as handle:
        truth = {r["video"]: r["transcript"] for r in csv.DictReader(handle)}
    words = tmp_path / "release" / "text" / "words"
    words.mkdir(parents=True)
    for video_id, text in truth.items():
        np.savez_compressed(words / f"{video_id}.npz", text=np.array(text))
    report = build_dataset(tmp_path / "release", tmp_path / "out", progress=False)
    assert report.n_scoring_rows == 996 * 8
    assert report.problem_counts() == {"missing_modality_folder": 4}
    rows = _rows(tmp_path / "out", "scoring")
    assert len(rows) == 996 * 8
    assert all(r["transcript"] == truth[r["video_id"]] for r in rows[::97])


def test_subset10_text_agrees_with_the_transcripts_csv(subset10_dir, real_transcripts_csv, tmp_path):
    report = build_dataset(subset10_dir, tmp_path / "out", transcripts=real_transcripts_csv, progress=False)
    assert report.n_videos == 996
    assert "transcript_conflict" not in report.problem_counts()
    assert report.modalities_present["openface"] == 10
