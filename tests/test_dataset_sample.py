"""The embedded default sample (generated on first use into a cache) and the thin Hub push."""

from __future__ import annotations

import json

from mis_bench_dataset import default_sample
from mis_bench_dataset.synth.sample import DEFAULT_SAMPLE_VIDEOS


def test_default_sample_is_generated_once_then_reused(default_sample_cache, monkeypatch):
    monkeypatch.setenv("MIS_BENCH_CACHE", str(default_sample_cache))
    first = default_sample()  # the session fixture generated it with default_sample(default_sample_cache)
    assert first.root.parent == default_sample_cache
    report = json.loads((first.build_dir / "build_report.json").read_text())
    assert report["n_videos"] == DEFAULT_SAMPLE_VIDEOS == 996 and report["synthetic"] and report["problems"] == []
    assert report["split_by"] == "video" and report["split_counts"] == {"train": 796, "validation": 100, "test": 100}
    assert report["out_dir"] == str(first.build_dir.resolve())
    stamp = (first.build_dir / "README.md").stat().st_mtime_ns
    again = default_sample()
    assert again == first and (again.build_dir / "README.md").stat().st_mtime_ns == stamp


def test_default_sample_rebuilds_a_missing_build_without_regenerating(tmp_path, monkeypatch):
    import shutil

    import mis_bench_dataset.synth.sample as sample_module

    monkeypatch.setattr(sample_module, "DEFAULT_SAMPLE_VIDEOS", 6)  # the logic, not the size, is under test
    sample = default_sample(tmp_path)
    ratings_stamp = sample.ratings_csv.stat().st_mtime_ns
    shutil.rmtree(sample.build_dir)
    again = default_sample(tmp_path)
    assert (again.build_dir / "README.md").is_file()
    assert sample.ratings_csv.stat().st_mtime_ns == ratings_stamp


def test_push_to_hub_uploads_the_folder_as_a_dataset_repo(tmp_path, monkeypatch):
    import huggingface_hub

    from mis_bench_dataset import push_to_hub

    calls = []

    class FakeApi:
        def __init__(self, token=None):
            calls.append(("init", token))

        def create_repo(self, repo_id, **kwargs):
            calls.append(("create_repo", repo_id, kwargs))
            return f"https://huggingface.co/datasets/{repo_id}"

        def upload_folder(self, **kwargs):
            calls.append(("upload_folder", kwargs))

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    url = push_to_hub(tmp_path, "me/mis-bench", private=True)
    assert url.endswith("me/mis-bench")
    assert calls[1] == ("create_repo", "me/mis-bench", {"repo_type": "dataset", "private": True, "exist_ok": True})
    assert calls[2][1]["folder_path"] == str(tmp_path) and calls[2][1]["repo_type"] == "dataset"
