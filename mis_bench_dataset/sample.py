"""The embedded default: a small synthetic release and its build, generated on first use.

Nothing is shipped as data files: the sample is generated deterministically
(seed 0, 996 short videos, the paper's scale, so the 80/10/10 split tests on about
100 videos) into a cache folder the first time it is asked for, then reused. The
folder is `$MIS_BENCH_CACHE` if set, else `~/.cache/mis-bench`,
or any path you pass; inside it, `default-sample-v{GENERATOR_VERSION}/` holds
`release/` (with `ratings.csv`) and `mis-bench/` (the built dataset). Creation is
atomic, so concurrent first uses do not see half a sample.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from mis_bench_dataset.dimensions import N_VIDEOS
from mis_bench_dataset.synth import GENERATOR_VERSION

logger = logging.getLogger(__name__)

DEFAULT_SAMPLE_VIDEOS = N_VIDEOS
DEFAULT_SAMPLE_SEED = 0


@dataclass(frozen=True)
class DefaultSample:
    root: Path
    release_dir: Path
    ratings_csv: Path
    build_dir: Path


def cache_root(cache_dir: str | Path | None = None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("MIS_BENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mis-bench"


def default_sample(cache_dir: str | Path | None = None) -> DefaultSample:
    """The embedded default sample (SYNTHETIC), generating it on first use."""
    from mis_bench_dataset.build import build_dataset
    from mis_bench_dataset.synth import generate_synthetic_release

    root = cache_root(cache_dir) / f"default-sample-v{GENERATOR_VERSION}"
    sample = DefaultSample(root, root / "release", root / "release" / "ratings.csv", root / "mis-bench")
    if (sample.build_dir / "README.md").is_file() and sample.ratings_csv.is_file():
        return sample
    root.mkdir(parents=True, exist_ok=True)
    if not (sample.ratings_csv.is_file() and (sample.release_dir / "subset_manifest.json").is_file()):
        # The release is generated aside and renamed into place (manifest last = complete).
        staging = root / f".release.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            logger.info(
                "generating the embedded default sample (SYNTHETIC, %d videos) in %s", DEFAULT_SAMPLE_VIDEOS, root
            )
            # Uncompressed: random arrays barely compress, and zlib would dominate the first run's time.
            generate_synthetic_release(
                staging, n_videos=DEFAULT_SAMPLE_VIDEOS, seed=DEFAULT_SAMPLE_SEED, compress=False
            )
            shutil.rmtree(sample.release_dir, ignore_errors=True)  # an incomplete leftover
            try:
                staging.rename(sample.release_dir)
            except OSError:
                if not sample.ratings_csv.is_file():  # not a concurrent winner: a real failure
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    try:
        build_dataset(sample.release_dir, sample.build_dir, labels=sample.ratings_csv, progress=False)
    except OSError:
        if not (sample.build_dir / "README.md").is_file():
            raise
    return sample
