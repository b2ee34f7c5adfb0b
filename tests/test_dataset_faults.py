"""Bad input: every fault kind is reported by video, modality and reason; nothing is lost;
--strict fails with the same list; the output appears atomically."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mis_bench_dataset import BuildChecks, BuildError, SplitPlan, build_dataset, generate_synthetic_release
from mis_bench_dataset.dataset.format import REPORT_NAME
from mis_bench_dataset.release.tree import MODALITY_BY_NAME


@pytest.fixture(scope="module")
def clean_release(tmp_path_factory):
    return generate_synthetic_release(tmp_path_factory.mktemp("clean") / "release", n_videos=12, seed=3)


def _copy(release, tmp_path: Path) -> Path:
    target = tmp_path / "release"
    shutil.copytree(release.release_dir, target)
    return target


def _npz(root: Path, modality: str, video_id: str) -> Path:
    return root / MODALITY_BY_NAME[modality].folder / f"{video_id}.npz"


def _load_all(out: Path) -> dict[str, dict]:
    from datasets import load_dataset

    rows = {}
    for split in ("train", "validation", "test"):
        for row in load_dataset(str(out), "features", split=split).with_format("numpy"):
            rows[str(row["video_id"])] = row
    return rows


def _inject_faults(root: Path, ids: list[str]) -> dict[str, tuple[str, str]]:
    """Break one file per kind; returns video -> (kind, modality)."""
    expected = {}
    _npz(root, "wav2vec", ids[0]).unlink()
    expected[ids[0]] = ("missing_file", "wav2vec")
    path = _npz(root, "openface", ids[1])
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    expected[ids[1]] = ("unreadable", "openface")
    np.savez(_npz(root, "librosa", ids[2]), feats=np.zeros((3, 93), np.float32), timestamps=np.zeros(3, np.float32))
    expected[ids[2]] = ("bad_keys", "librosa")
    np.savez(_npz(root, "prosody", ids[3]), features=np.zeros((1, 14), np.float32), timestamps=np.zeros(1, np.float32))
    expected[ids[3]] = ("bad_width", "prosody")
    bad = np.ones((4, 208), np.float32)
    bad[2, 7] = np.nan
    np.savez(_npz(root, "openface", ids[4]), features=bad, timestamps=np.arange(4, dtype=np.float32))
    expected[ids[4]] = ("non_finite", "openface")
    np.savez(_npz(root, "librosa", ids[5]), features=np.zeros((5, 93), np.float32), timestamps=np.zeros(4, np.float32))
    expected[ids[5]] = ("timestamp_mismatch", "librosa")
    np.savez(root / "text" / "words" / f"{ids[6]}.npz", text=np.arange(3))
    expected[ids[6]] = ("bad_dtype", "text")
    np.save(
        _npz(root, "wav2vec", ids[7]).with_suffix(".tmp.npy"), np.array([{"a": 1}], dtype=object), allow_pickle=True
    )
    _npz(root, "wav2vec", ids[7]).with_suffix(".tmp.npy").rename(_npz(root, "wav2vec", ids[7]))
    expected[ids[7]] = ("unreadable", "wav2vec")
    return expected


def test_every_modality_fault_is_reported_and_no_video_is_lost(clean_release, tmp_path):
    root = _copy(clean_release, tmp_path)
    ids = list(clean_release.video_ids)
    expected = _inject_faults(root, ids)
    (root / "video" / "openface3" / "notes.txt").write_text("hello")
    (root / "junk.bin").write_bytes(b"\x00")
    shutil.copy(_npz(root, "prosody", ids[8]), root / "audio" / "prosody" / "not-an-id.npz")
    clinician, time_point, stimulus = ids[9].split("_")
    shutil.copy(
        _npz(root, "prosody", ids[9]),
        root / "audio" / "prosody" / f"{clinician}_FIS_Time{time_point[1]}_{stimulus}.npz",
    )

    report = build_dataset(root, tmp_path / "out", labels=clean_release.ratings_csv, progress=False)

    found = {(p.video_id, p.kind, p.modality) for p in report.problems}
    for video_id, (kind, modality) in expected.items():
        assert (video_id, kind, modality) in found, (video_id, kind, modality)
    kinds = report.problem_counts()
    assert kinds["unknown_file"] == 2 and kinds["malformed_id"] == 1 and kinds["duplicate_id"] == 1
    assert any(p.path == "junk.bin" for p in report.problems)
    assert report.n_videos == 12

    on_disk = json.loads((tmp_path / "out" / REPORT_NAME).read_text())
    assert on_disk["problem_counts"] == kinds
    assert len(on_disk["problems"]) == len(report.problems)

    rows = _load_all(tmp_path / "out")
    assert set(rows) == set(ids)
    for video_id, (_, modality) in expected.items():
        if modality == "text":
            assert rows[video_id]["transcript"] == ""
            continue
        width = MODALITY_BY_NAME[modality].width
        assert not rows[video_id][f"has_{modality}"]
        assert rows[video_id][modality].shape == (0, width)
        assert rows[video_id][f"{modality}_timestamps"].shape == (0,)
    # An intact modality of a damaged video is untouched.
    with np.load(_npz(root, "librosa", ids[0])) as npz:
        np.testing.assert_array_equal(rows[ids[0]]["librosa"], npz["features"])


def test_strict_fails_with_the_same_list_and_writes_nothing(clean_release, tmp_path):
    root = _copy(clean_release, tmp_path)
    _npz(root, "wav2vec", clean_release.video_ids[0]).unlink()
    with pytest.raises(BuildError) as info:
        build_dataset(root, tmp_path / "out", checks=BuildChecks(strict=True), progress=False)
    assert [p.kind for p in info.value.problems] == ["missing_file"]
    assert clean_release.video_ids[0] in info.value.listing() and "wav2vec" in info.value.listing()
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")], "staging folder left behind"


def test_absent_modality_folder_is_reported_once_and_text_only_tree_builds(clean_release, tmp_path):
    root = _copy(clean_release, tmp_path)
    for folder in ("video", "audio"):
        shutil.rmtree(root / folder)
    report = build_dataset(root, tmp_path / "out", progress=False)
    assert report.problem_counts() == {"missing_modality_folder": 4}
    assert sorted(report.absent_modalities) == ["librosa", "openface", "prosody", "wav2vec"]
    rows = _load_all(tmp_path / "out")
    assert len(rows) == 12
    row = next(iter(rows.values()))
    assert row["transcript"]
    assert not row["has_openface"] and row["openface"].shape == (0, 208)
    assert row["duration_seconds"] is None or np.isnan(row["duration_seconds"])


def test_manifest_video_without_files_is_kept_and_reported(clean_release, tmp_path):
    root = _copy(clean_release, tmp_path)
    manifest = json.loads((root / "subset_manifest.json").read_text())
    manifest["sample_ids"].append("ZZ0101_T2_Sean")
    (root / "subset_manifest.json").write_text(json.dumps(manifest))
    report = build_dataset(root, tmp_path / "out", progress=False)
    assert ("ZZ0101_T2_Sean", "missing_video") in {(p.video_id, p.kind) for p in report.problems}
    assert "ZZ0101_T2_Sean" in _load_all(tmp_path / "out")


def test_failed_rebuild_keeps_previous_build_and_leaves_no_loadable_folder(clean_release, tmp_path, monkeypatch):
    import mis_bench_dataset.builder.builder as build_module

    out = tmp_path / "out"
    first = build_dataset(clean_release.release_dir, out, progress=False)
    card_before = (out / "README.md").read_text()

    def explode(*args, **kwargs):
        raise RuntimeError("disk full (simulated)")

    monkeypatch.setattr(build_module, "_scoring_batch", explode)
    with pytest.raises(RuntimeError, match="simulated"):
        build_dataset(clean_release.release_dir, out, split=SplitPlan(seed=1), progress=False)
    assert (out / "README.md").read_text() == card_before
    assert json.loads((out / REPORT_NAME).read_text())["fingerprint"] == first.fingerprint
    leftovers = [p for p in tmp_path.iterdir() if p.name != "out"]
    assert leftovers == []


def test_refuses_to_replace_a_folder_that_is_not_a_build(clean_release, tmp_path):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.tex").write_text("do not delete")
    from mis_bench_dataset.toolkit.errors import DataError

    with pytest.raises(DataError, match="did not write: thesis.tex"):
        build_dataset(clean_release.release_dir, out, progress=False)
    assert (out / "thesis.tex").read_text() == "do not delete"


def test_rebuild_is_deterministic(clean_release, tmp_path):
    a = build_dataset(clean_release.release_dir, tmp_path / "a", labels=clean_release.ratings_csv, progress=False)
    b = build_dataset(clean_release.release_dir, tmp_path / "b", labels=clean_release.ratings_csv, progress=False)
    assert a.fingerprint == b.fingerprint and a.split_counts == b.split_counts
    for config in ("features", "scoring"):
        for path in sorted((tmp_path / "a" / config).iterdir()):
            assert path.read_bytes() == (tmp_path / "b" / config / path.name).read_bytes()


def test_load_dataset_sees_a_rebuild_in_the_same_folder(clean_release, tmp_path):
    from datasets import load_dataset

    out = tmp_path / "out"
    build_dataset(clean_release.release_dir, out, split=SplitPlan(seed=0), progress=False)
    first = sorted(set(load_dataset(str(out), "scoring", split="train")["video_id"]))
    report = build_dataset(clean_release.release_dir, out, split=SplitPlan(seed=5), progress=False)
    second = sorted(set(load_dataset(str(out), "scoring", split="train")["video_id"]))
    assert first != second  # not served from the datasets cache of the first build
    assert len(second) == report.split_counts["train"]
