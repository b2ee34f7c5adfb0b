"""A release's size limits: an array's header is read without its data, an array beyond two hours is reported
and never decompressed, and the limit is settable.
"""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mis_bench_dataset import BuildChecks, build_dataset, generate_synthetic_release
from mis_bench_dataset.release.tree import MODALITY_BY_NAME, npz_headers


def _header_only_npz(path: Path, shape: tuple[int, ...]) -> None:
    """An npz whose `features` header claims `shape` (float32) with no data behind it: what a 3 MB hostile
    file claiming 1.5 million frames looks like to a reader that trusts it."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("features.npy", header.getvalue())
        timestamps = io.BytesIO()
        np.save(timestamps, np.zeros(3, np.float32))
        archive.writestr("timestamps.npy", timestamps.getvalue())


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return generate_synthetic_release(tmp_path_factory.mktemp("hostile") / "release", n_videos=6, seed=5)


def test_the_header_is_read_without_the_data(tmp_path):
    path = tmp_path / "x.npz"
    _header_only_npz(path, (1_500_000, 208))
    assert path.stat().st_size < 1000
    shape, dtype = npz_headers(path)["features"]
    assert shape == (1_500_000, 208) and dtype == np.float32


def test_an_array_beyond_two_hours_is_reported_and_never_decompressed(release, tmp_path, monkeypatch):
    import mis_bench_dataset.release.tree as release_module

    root = tmp_path / "release"
    shutil.copytree(release.release_dir, root)
    victim = release.video_ids[0]
    path = root / MODALITY_BY_NAME["openface"].folder / f"{victim}.npz"
    _header_only_npz(path, (1_500_000, 208))  # 1.5 M frames: 14 hours at 30 fps, 1.2 GB as float32
    loaded = []  # the shape of every array whose data was read
    real_read = release_module._read_array

    def read_and_record(archive, name):
        array = real_read(archive, name)
        loaded.append(array.shape)
        return array

    monkeypatch.setattr(release_module, "_read_array", read_and_record)
    report = build_dataset(root, tmp_path / "out", progress=False)
    problems = [p for p in report.problems if p.kind == "too_large"]
    assert [(p.video_id, p.modality) for p in problems] == [(victim, "openface")]
    assert "1,500,000 rows" in problems[0].reason and "never decompressed" in problems[0].reason
    assert (1_500_000, 208) not in loaded and len(loaded) > 10  # every other array was read
    assert report.n_videos == 6 and report.modalities_present["openface"] == 5  # the video is kept, its face empty


def test_the_limit_is_settable(release, tmp_path):
    report = build_dataset(release.release_dir, tmp_path / "out", progress=False, checks=BuildChecks(max_seconds=0.05))
    kinds = {(p.kind, p.modality) for p in report.problems}
    assert ("too_large", "openface") in kinds and ("too_large", "librosa") in kinds  # 0.05 s: 3 frames at 60 fps
