"""The embedded default: a small synthetic release and its build, generated on first use.

Nothing is shipped as data files: the sample is generated deterministically
(seed 0, 996 short videos, the paper's scale, so the 80/10/10 split tests on about
100 videos) into a cache folder the first time it is asked for, then reused. The
folder is `$MIS_BENCH_CACHE` if set, else `~/.cache/mis-bench`,
or any path you pass; inside it, `default-sample-v{GENERATOR_VERSION}/` holds
`release/` (with `ratings.csv`) and `mis-bench/` (the built dataset). Creation is
atomic and runs under a file lock, so concurrent first uses wait for one another and none
sees half a sample or loses the one another is building from.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from mis_bench_dataset.dimensions import N_VIDEOS
from mis_bench_dataset.synth.generator import GENERATOR_VERSION
from mis_bench_dataset.toolkit.atomic import file_lock, staging_folder
from mis_bench_dataset.toolkit.cache_folder import cache_root

logger = logging.getLogger(__name__)

DEFAULT_SAMPLE_VIDEOS = N_VIDEOS
DEFAULT_SAMPLE_SEED = 0


@dataclass(frozen=True)
class DefaultSample:
    """Where the default sample lies in the cache: its synthetic release, its ratings file and its build."""

    root: Path
    release_dir: Path
    ratings_csv: Path
    build_dir: Path


def _complete(sample: DefaultSample) -> bool:
    return (sample.build_dir / "README.md").is_file() and sample.ratings_csv.is_file()


def _release_complete(sample: DefaultSample) -> bool:
    return sample.ratings_csv.is_file() and (sample.release_dir / "subset_manifest.json").is_file()


def default_sample(cache_dir: str | Path | None = None) -> DefaultSample:
    """The embedded default sample (SYNTHETIC), generating it on first use.

    Generation holds a file lock in the cache folder: a second first use (another terminal, a CI
    job sharing the cache) waits for the first and then uses its sample. A published release or
    build is never removed; the release is generated aside and renamed into place (manifest last).
    """
    from mis_bench_dataset.builder.builder import build_dataset
    from mis_bench_dataset.synth.generator import generate_synthetic_release

    root = cache_root(cache_dir) / f"default-sample-v{GENERATOR_VERSION}"
    sample = DefaultSample(root, root / "release", root / "release" / "ratings.csv", root / "mis-bench")
    if _complete(sample):
        return sample
    with file_lock(root / ".generate.lock", waiting=f"waiting for another process generating the sample in {root}"):
        if _complete(sample):  # the process that held the lock made it
            return sample
        if not _release_complete(sample):
            logger.info(
                "generating the embedded default sample (SYNTHETIC, %d videos) in %s", DEFAULT_SAMPLE_VIDEOS, root
            )
            with staging_folder(root, ".release.staging-") as staging:
                # Uncompressed: random arrays barely compress, and zlib would dominate the first run's time.
                generate_synthetic_release(
                    staging, n_videos=DEFAULT_SAMPLE_VIDEOS, seed=DEFAULT_SAMPLE_SEED, compress=False, progress=True
                )  # the one long wait of a first run: a bar on a terminal
                if sample.release_dir.exists():  # left by a version without the lock: never complete, never in use
                    shutil.rmtree(sample.release_dir)
                staging.rename(sample.release_dir)
            logger.info("default sample release: %s", sample.release_dir)
        build_dataset(sample.release_dir, sample.build_dir, labels=sample.ratings_csv, progress=True)
    return sample
