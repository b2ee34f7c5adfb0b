"""Speed of agreement by subgroup (`mis_icc_metric.groups`) vs the loop a user would write, in one run.

SYNTHETIC data in the real layout: 996 videos of 78 clinicians (time points and stimuli drawn as the real
benchmark's counts run), 8 dimensions, about 0.2% unparsed. Times (best of --repeats) of
`subgroup_agreement` by time point, by stimulus and by clinician (ICC(3,1), bias, MAE per group and dimension
and overall with percentile CIs from one shared draw, and the equal-bias test) and `therapist_agreement`, with
--resamples clinician resamples (by clinician: video resamples, as the function does). The reference: per
resample, the drawn clinicians' rows, then per group and block pingouin's ICC(C,1) and numpy's mean and mean
absolute difference (a pandas groupby loop), timed on --loop-resamples resamples and extrapolated. Checks that
every replicate of the timed resamples equals the loop's and reports peak memory (tracemalloc).

    python3 benchmarks/bench_subgroups.py [--resamples 10000] [--loop-resamples 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_icc import best_of  # noqa: E402

from mis_bench_dataset.dimensions import DIMENSION_KEYS  # noqa: E402
from mis_bench_dataset.video_ids import STIMULI, TIME_POINTS  # noqa: E402
from mis_icc_metric import ResamplingOptions
from mis_icc_metric.groups import grouped_moments, subgroup_agreement, therapist_agreement  # noqa: E402
from mis_icc_metric.resampling import make_resampling  # noqa: E402


def make_scores(n_clinicians: int = 78, n_videos: int = 996, seed: int = 0):
    """SYNTHETIC (predictions, references) of n_videos videos from n_clinicians clinicians, a clinician effect on
    the gold and on the model."""
    rng = np.random.default_rng(seed)
    videos: set[str] = set()
    while len(videos) < n_videos:
        c = int(rng.integers(n_clinicians))
        videos.add(f"SY{1000 + c}_{TIME_POINTS[int(rng.integers(3))]}_{STIMULI[int(rng.integers(8))]}")
    effect = rng.normal(0, 0.3, n_clinicians)
    predictions, references = {}, {}
    for video in sorted(videos):
        shift = effect[int(video[2:6]) - 1000]
        for key in DIMENSION_KEYS:
            gold = float(np.round(np.clip(rng.normal(3.5 + shift, 0.4), 1, 5), 1))
            references[(video, key)] = gold
            guess = np.round(np.clip(gold + 0.5 * shift + rng.normal(0, 0.5), 1, 5), 1)
            predictions[(video, key)] = None if rng.random() < 0.002 else float(guess)
    return predictions, references


def loop_replicates(predictions, references, by: str, draw, resamples: int) -> dict[tuple[int, str, str], float]:
    """(resample, group, dimension) -> ICC(3,1) by pingouin, per resample a pandas frame of the drawn rows."""
    import pandas as pd
    import pingouin

    part = {"time_point": 1, "stimulus": 2, "clinician": 0}[by]
    rows = [
        {"video": v, "key": k, "group": v.split("_")[part], "clinician": v.split("_")[0], "pred": p, "gold": g}
        for (v, k), g in references.items()
        if (p := predictions[(v, k)]) is not None
    ]
    frame = pd.DataFrame(rows)
    out = {}
    for r in range(resamples):
        if draw.unit == "clinician":
            drawn = pd.concat([frame[frame.clinician == draw.cluster_names[c]] for c in draw.draws[r]])
        else:
            videos = sorted({v for v, _ in references})
            picked = pd.DataFrame({"video": [videos[i] for i in draw.draws[r]]})
            drawn = picked.merge(frame, on="video")
        for (group, key), cell in drawn.groupby(["group", "key"]):
            n = len(cell)
            long = pd.DataFrame(
                {
                    "t": np.repeat(np.arange(n), 2),
                    "r": np.tile([0, 1], n),
                    "y": np.stack([cell.pred, cell.gold], 1).ravel(),
                }
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = pingouin.intraclass_corr(long, targets="t", raters="r", ratings="y")
            out[(r, group, key)] = float(table["ICC"].iloc[2]) if n >= 2 else float("nan")  # row 3: ICC(C,1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--loop-resamples", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    predictions, references = make_scores()
    doc: dict = {"resamples": args.resamples, "python": platform.python_version(), "load": os.getloadavg()[0]}
    for by in ("time_point", "stimulus", "clinician"):
        unit = "video" if by == "clinician" else "clinician"
        wall, _ = best_of(
            args.repeats,
            lambda by=by: subgroup_agreement(
                predictions, references, by=by, resampling=ResamplingOptions(n_bootstrap=args.resamples, seed=0)
            ),
        )
        start = time.perf_counter()
        videos = sorted({v for v, _ in references})
        draw = make_resampling(videos, args.loop_resamples, 0, unit)
        reference = loop_replicates(predictions, references, by, draw, args.loop_resamples)
        per_resample = (time.perf_counter() - start) / args.loop_resamples
        doc[by] = {"ours_s": wall, "loop_s_per_resample": per_resample, "ratio": per_resample * args.resamples / wall}
        doc[by]["max_abs_difference"] = _check(predictions, references, by, draw, reference)
    tracemalloc.start()
    doc["therapist_s"], _ = best_of(
        args.repeats,
        lambda: therapist_agreement(
            predictions, references, resampling=ResamplingOptions(n_bootstrap=args.resamples, seed=0)
        ),
    )
    subgroup_agreement(
        predictions, references, by="clinician", resampling=ResamplingOptions(n_bootstrap=args.resamples, seed=0)
    )
    doc["peak_mib_by_clinician"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(json.dumps(doc, indent=1))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")


def _check(predictions, references, by: str, draw, reference: dict) -> float:
    """Largest |ours - loop| over the timed resamples' (group, dimension) ICCs (the same draw for both)."""
    from mis_icc_metric.groups import _aligned, _codes, group_labels

    data, ratings, valid, blocks = _aligned(predictions, references, "not-asked")
    codes, names = _codes(group_labels(data.videos, by), by)
    _, boot = grouped_moments(ratings, valid, codes, len(names), draw)
    worst = 0.0
    for (r, group, key), value in reference.items():
        ours = boot["icc3_1"][r, names.index(group), blocks.index(key)]
        if not (np.isnan(ours) and np.isnan(value)):
            worst = max(worst, abs(float(ours) - value))
    return worst


if __name__ == "__main__":
    main()
