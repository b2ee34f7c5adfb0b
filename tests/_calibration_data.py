"""Small data for the calibration tests: a synthetic judge and SYNTHETIC builds sized for the reporting floor.

The judge compresses the gold toward the middle, shifts it and adds noise (what calibration corrects). The builds:
`wide` (160 videos split by video: a test split of 16 videos from 10 clinicians, over the floor's 10 videos and
5 clinicians) and `clinician` (120 videos split by clinician: a validation split of 2 clinicians, the small fit
split of the issue's crash).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mis_bench_dataset import SplitPlan

BUILDS = {"wide": (160, "video"), "clinician": (120, "clinician")}


def judge(references: dict, seed: int = 0, *, scale: float = 1.0) -> dict:
    """A synthetic judge's score per (video, dimension) of `references` (times `scale`: 20 gives a 0-100 judge)."""
    rng = np.random.default_rng(seed)
    return {
        key: float(np.clip(np.round(0.4 * gold + 2.6 + rng.normal(0, 0.3), 2), 1, 5)) * scale
        for key, gold in sorted(references.items())
    }


def write_judge(path: Path, predictions: dict) -> Path:
    from mis_icc_metric import write_predictions

    return write_predictions(
        path, [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items()]
    )


def make_build(folder: Path, kind: str) -> Path:
    """One of `BUILDS` under `folder` (seed 0)."""
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    n_videos, split_by = BUILDS[kind]
    release = generate_synthetic_release(folder / "release", n_videos=n_videos, seed=0)
    build_dataset(
        release.release_dir,
        folder / "build",
        labels=release.ratings_csv,
        split=SplitPlan(split_by=split_by),
        progress=False,
    )
    return folder / "build"
