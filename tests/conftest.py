"""Shared test set-up: offline Hub, no telemetry, and the ../shared data when present."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
SUBSET10 = SHARED_DATA / "MIS-Bench_subset10"
REAL_TRANSCRIPTS = SHARED_DATA / "mis-bench-transcripts.csv"


@pytest.fixture(scope="session")
def subset10_dir() -> Path:
    """The real public release subset; skips when ../shared is absent."""
    if not SUBSET10.is_dir():
        pytest.skip(f"{SUBSET10} not present (../shared is only laid out for developers and CI)")
    return SUBSET10


@pytest.fixture(scope="session")
def real_transcripts_csv() -> Path:
    """The 996 real transcripts; skips when ../shared is absent."""
    if not REAL_TRANSCRIPTS.is_file():
        pytest.skip(f"{REAL_TRANSCRIPTS} not present")
    return REAL_TRANSCRIPTS


@pytest.fixture(scope="session")
def synthetic_build(tmp_path_factory) -> Path:
    """A small labelled SYNTHETIC build (40 short videos, seed 0, split by video).

    Built with `mis_bench_dataset.build_dataset` from `generate_synthetic_release`;
    `load_dataset(str(path), "scoring", split="test")` works on it; the release tree it was
    built from (with `ratings.csv`) is `path.parent / "release"`. Read-only: copy it
    before changing anything.
    """
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    root = tmp_path_factory.mktemp("synthetic_build")
    release = generate_synthetic_release(root / "release", n_videos=40, seed=0)
    build_dataset(release.release_dir, root / "mis-bench", labels=release.ratings_csv, progress=False)
    return root / "mis-bench"


@pytest.fixture(scope="session")
def default_sample_cache(tmp_path_factory) -> Path:
    """A cache folder holding the embedded default sample (SYNTHETIC, 996 short videos, seed 0),
    generated once per test session: pass it as `MIS_BENCH_CACHE` or to `default_sample(path)`.

    The sample is what `mis-bench run` uses by default, so tests of the default job and of the
    generator's calibration look at the real thing. Read-only.
    """
    from mis_bench_dataset import default_sample

    cache = tmp_path_factory.mktemp("mis-bench-cache")
    default_sample(cache)
    return cache


AUTHORS_ANSWERS = SHARED_DATA / "authors" / "answers_dev.json"


@pytest.fixture(scope="session")
def authors_answers() -> list[dict]:
    """Real answers of the authors' fine-tuned judges, hand-labelled (`text`, `score` or null); skips without
    ../shared."""
    import json

    if not AUTHORS_ANSWERS.is_file():
        pytest.skip(f"{AUTHORS_ANSWERS} not present")
    return json.loads(AUTHORS_ANSWERS.read_text(encoding="utf-8"))
