"""Speed of the main job, the features baseline and the leaderboard, in one run.

1. The default job (`mis-bench run`, no model) from a cold cache: generation of the
   996-video sample + build + 4 feature settings + mean floor + scoring (10,000 bootstrap
   resamples) + report + leaderboard; then again with the cache warm. Wall time, CPU time
   (user + sys, so a busy shared machine can be told apart from a slow job), peak RSS,
   and the headline numbers of the job's summary (test videos, best mean ICC).
2. The features baseline's cross-validation against what a user would write with
   scikit-learn: GridSearchCV per dimension over the same pipeline and folds (ratio;
   the chosen alphas must be equal), on the default sample's 796 train videos.
3. The leaderboard: N submissions of 996 videos x 8 dimensions, 10,000 bootstrap
   resamples each, plus the paired comparison against the leader.

    python3 benchmarks/bench_main_job.py [--submissions 10] [--skip-default-job] [--skip-cv]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mis_icc_metric import ResamplingOptions

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def _peak_rss_mb(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def _run_job(work: Path, env: dict, out: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "eval_scripts.cli", "run", "--out", str(work / out)],
        check=True,
        env=env,
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads((work / out / "summary.json").read_text())
    best = max((r for r in summary["runs"] if r["mean_icc"] is not None), key=lambda r: r["mean_icc"])
    return {
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "load_average_before": round(load, 2),
        "test_videos": summary["n_videos"],
        "best": f"{best['baseline']} {best['modality']}",
        "best_mean_icc": round(best["mean_icc"], 3),
    }


def bench_default_job(work: Path) -> dict:
    env = {**os.environ, "MIS_BENCH_CACHE": str(work / "cache")}
    cold = _run_job(work, env, "results")
    cold["peak_rss_mb"] = round(_peak_rss_mb(resource.RUSAGE_CHILDREN), 0)  # the cold run is the only child so far
    warm = _run_job(work, env, "results2")
    return {"cold": cold, "warm": warm, "peak_rss_mb_any_run": round(_peak_rss_mb(resource.RUSAGE_CHILDREN), 0)}


def bench_cv(work: Path) -> dict:
    import numpy as np
    from sklearn.model_selection import GridSearchCV, GroupKFold

    from eval_scripts.baselines.baseline_run import load_feature_rows
    from eval_scripts.baselines.models import FeatureRidgeBaseline
    from mis_bench_dataset import default_sample
    from mis_bench_dataset.dimensions import DIMENSION_KEYS

    rows = load_feature_rows(default_sample(work / "cache").build_dir, "train")
    started = time.perf_counter()
    ours = FeatureRidgeBaseline("audio+video+text").fit(rows)
    ours_s = time.perf_counter() - started

    frame = ours._frame(rows)
    groups = [str(r["clinician"]) for r in rows]
    started = time.perf_counter()
    chosen = {}
    for key in DIMENSION_KEYS:
        labels = np.array([float(str(r[key])) for r in rows])
        search = GridSearchCV(
            ours._pipeline(frame.shape[1] - 1),
            {"ridge__alpha": list(ours.alphas)},
            cv=GroupKFold(n_splits=min(5, len(set(groups)))),
            scoring="neg_mean_squared_error",
        )
        search.fit(frame, labels, groups=groups)
        chosen[key] = search.best_params_["ridge__alpha"]
    grid_s = time.perf_counter() - started
    return {
        "train_videos": len(rows),
        "features": int(frame.shape[1] - 1),
        "ours_s": round(ours_s, 2),
        "gridsearchcv_s": round(grid_s, 2),
        "speedup": round(grid_s / ours_s, 1),
        "same_alphas": chosen == ours.chosen_alpha,
    }


def bench_leaderboard(work: Path, n_submissions: int) -> dict:
    import numpy as np

    from eval_scripts.leaderboard import build_leaderboard, write_leaderboard
    from mis_bench_dataset.dimensions import DIMENSION_KEYS
    from mis_bench_dataset.video_ids import STIMULI

    rng = np.random.default_rng(0)
    videos = [f"B{c:04d}_T{1 + t}_{s}" for c in range(42) for t in range(3) for s in STIMULI][:996]
    references = {
        (v, d): float(np.round(np.clip(rng.normal(3.5, 0.5), 1, 5), 1)) for v in videos for d in DIMENSION_KEYS
    }
    folder = work / "submissions"
    folder.mkdir()
    for i in range(n_submissions):
        noise = 0.3 + 0.1 * i
        rows = [
            {
                "video_id": v,
                "dimension": d,
                "prediction": None
                if rng.random() < 0.01
                else float(np.round(np.clip(g + rng.normal(0, noise), 1, 5), 1)),
            }
            for (v, d), g in references.items()
        ]
        obj = {
            "schema_version": "1.0",
            "system": {"model": f"bench/m{i}", "backend": "bench", "decoding": {}, "package_versions": {}},
            "setting": {"modality": "text", "prompt_style": "direct", "few_shot_k": 0, "input_source": "text"},
            "dataset": {"name": "bench", "fingerprint": "x", "split": "test", "synthetic": True},
            "predictions": rows,
            "scores": None,
            "parse_rates": {d: 1.0 for d in DIMENSION_KEYS},
            "created_at": "2026-01-01T00:00:00+00:00",
        }
        (folder / f"m{i}.json").write_text(json.dumps(obj))
    started = time.perf_counter()
    board = build_leaderboard(folder, references, resampling=ResamplingOptions(n_bootstrap=10_000))
    write_leaderboard(board, work / "board")
    seconds = time.perf_counter() - started
    return {
        "submissions": n_submissions,
        "videos": len(videos),
        "n_bootstrap": 10_000,
        "total_s": round(seconds, 1),
        "per_submission_s": round(seconds / n_submissions, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=10)
    parser.add_argument("--skip-default-job", action="store_true")
    parser.add_argument("--skip-cv", action="store_true", help="skip the GridSearchCV comparison (minutes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        figures = {"cpus": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2)}
        if not args.skip_default_job:
            figures["default_job"] = bench_default_job(work)
        if not args.skip_cv:
            figures["features_cv"] = bench_cv(work)
        figures["leaderboard"] = bench_leaderboard(work, args.submissions)
        figures["peak_rss_mb_self"] = round(_peak_rss_mb(), 0)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
