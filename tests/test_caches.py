"""The suite writes nothing into the user's caches (tests/conftest.py points them to a temporary folder),
and the toolkit never loads a build by name, so a cached dataset of another build can never stand in
for it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import USER_HF_HOME

from mis_bench_dataset import load_build
from mis_bench_dataset.toolkit.errors import UsageError

REPO = Path(__file__).resolve().parents[1]


def _inside(path, folder) -> bool:
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def test_every_library_cache_is_the_suites_private_one():
    import datasets
    import huggingface_hub

    from mis_bench_dataset.toolkit.cache_folder import cache_root

    private = Path(os.environ["HF_HOME"])
    assert not _inside(private, USER_HF_HOME) and private != USER_HF_HOME
    caches = {
        "datasets": datasets.config.HF_DATASETS_CACHE,
        "datasets modules": datasets.config.HF_MODULES_CACHE,
        "hub": huggingface_hub.constants.HF_HUB_CACHE,
        "hub token": huggingface_hub.constants.HF_TOKEN_PATH,
    }
    try:
        import evaluate

        caches["evaluate"] = evaluate.config.HF_EVALUATE_CACHE
    except ImportError:  # pragma: no cover - evaluate is a core requirement
        pass
    for name, path in caches.items():
        assert _inside(path, private), f"{name} cache {path} is outside the suite's private {private}"
    assert not _inside(cache_root(), Path.home() / ".cache" / "mis-bench")
    assert _inside(cache_root(), Path(os.environ["MIS_BENCH_CACHE"]))


def test_a_dataset_load_in_a_subprocess_writes_only_into_the_private_cache(synthetic_build, tmp_path):
    """The probe build's folder has a name no other process uses; after loading it (in a subprocess, as the
    CLI tests run), the private cache holds it and the user's cache has nothing of that name."""
    probe = tmp_path / f"mis-bench-cache-probe-{uuid.uuid4().hex}"
    shutil.copytree(synthetic_build, probe)
    code = (
        "import json, sys\nfrom datasets import load_dataset\n"
        "d = load_dataset(sys.argv[1], 'scoring', split='test')\n"
        "print(json.dumps([f['filename'] for f in d.cache_files]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(probe)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cache_files = json.loads(done.stdout.strip().splitlines()[-1])
    assert cache_files and all(_inside(f, os.environ["HF_HOME"]) and probe.name in f for f in cache_files)
    if USER_HF_HOME.is_dir():
        leaked = [p for p in USER_HF_HOME.glob("*/*") if probe.name in p.name]
        leaked += [p for p in USER_HF_HOME.glob("*/*/*") if probe.name in p.name]
        assert not leaked, leaked


def test_the_toolkit_never_takes_a_cached_dataset_for_a_build_name(synthetic_build, tmp_path, monkeypatch):
    """`load_dataset("mis-bench", ...)` outside a folder holding ./mis-bench returns what is cached under that
    name (any earlier build); the toolkit loads builds by path only, so a name is refused in one line."""
    from datasets import load_dataset

    there = tmp_path / "there"
    shutil.copytree(synthetic_build, there / "mis-bench")
    monkeypatch.chdir(there)
    load_dataset("mis-bench", "scoring", split="test")  # now cached under the name "mis-bench"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "p.csv").write_text("video_id,dimension,prediction\n", encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    with pytest.raises(UsageError, match="no such folder: mis-bench"), load_build("mis-bench", "scoring", "test"):
        pass
    done = subprocess.run(
        [sys.executable, "-m", "eval_scripts.cli", "score", "--predictions", "p.csv", "--references", "mis-bench"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=elsewhere,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("mis-bench score: error:")
    assert "mis-bench" in done.stderr.removeprefix("mis-bench score: error:") and "--references" in done.stderr


def test_the_dataset_card_loads_the_build_by_its_path(synthetic_build):
    card = (synthetic_build / "README.md").read_text(encoding="utf-8")
    assert f'load_dataset("./{synthetic_build.name}", "scoring", split="test")' in card
    assert f'load_dataset("{synthetic_build.name}"' not in card  # a bare name would be a Hub id
    assert 'load_dataset("USER/REPO", "scoring")' in card and "--push-to-hub USER/REPO" in card
