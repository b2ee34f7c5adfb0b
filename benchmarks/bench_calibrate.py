"""Speed of the calibration summary's resampled refit vs the loop a user would write, in one run.

A 996-video layout like MIS-Bench's (78 clinicians, about 12.8 videos each, clinicians split 80/10/10 into
fit / calibration / test; 8 dimensions; a ridge-like judge: continuous scores, nearly every one distinct).
Timed: `calibration_summary` with 10,000 clinician resamples (`--resamples`), isotonic and linear, which refits
the map in every resample and computes ICC(3,1), ICC(A,1), MAE and bias before and after. The reference is a
plain loop over the same resamples: scikit-learn's IsotonicRegression / LinearRegression fitted with the
counts as sample weights, then `agreement` on the evaluated rows repeated by their counts, timed on
`--loop-resamples` resamples and extrapolated to all. Checks the loop's replicates equal ours (1e-9) and
reports peak traced memory of ours.

With `--build BUILD --predictions FILE` (e.g. the real text build split by clinician and the ridge's out-of-fold
predictions, as `eval_scripts.jobs.calibration.real_calibration_summary` makes them), also the whole command's
work, `eval_scripts.jobs.calibration.calibrate` (reading the build and the file, fitting, writing, the summary),
wall and CPU seconds, isotonic.

    python3 benchmarks/bench_calibrate.py [--resamples 10000] [--loop-resamples 200] [--json OUT]
        [--build BUILD --predictions FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mis_bench_dataset.dimensions import DIMENSION_KEYS  # noqa: E402
from mis_icc_metric import ResamplingOptions
from mis_icc_metric.agreement_statistics import agreement  # noqa: E402
from mis_icc_metric.calibration import fit_calibrator  # noqa: E402
from mis_icc_metric.calibration_checks import SUMMARY_STATISTICS, _replicates, calibration_summary  # noqa: E402
from mis_icc_metric.resampling import make_resampling  # noqa: E402

STIMULI = ("Bethany", "Jackson", "Jessica", "John", "Lauren", "Luke", "Savannah", "Sean")


def make_layout(seed: int = 0):
    """996 videos of 78 clinicians, a gold per (video, dimension) with a clinician effect, a judge's scores."""
    rng = np.random.default_rng(seed)
    videos = []
    for c in range(78):
        for t in ("T1", "T2", "T3"):
            for s in STIMULI:
                videos.append(f"CL{c:04d}_{t}_{s}")
    videos = sorted(rng.choice(videos, 996, replace=False).tolist())
    clinician_effect = {f"CL{c:04d}": rng.normal(0, 0.3) for c in range(78)}
    gold, judge = {}, {}
    for video in videos:
        for dim in DIMENSION_KEYS:
            g = float(np.clip(np.round(3.6 + clinician_effect[video[:6]] + rng.normal(0, 0.35), 1), 1, 5))
            gold[(video, dim)] = g
            judge[(video, dim)] = float(np.clip(0.5 * g + 1.9 + rng.normal(0, 0.3), 1, 5))
    clinicians = sorted(clinician_effect)
    order = rng.permutation(len(clinicians))
    split_of = {clinicians[i]: ("fit" if k < 62 else "cal" if k < 70 else "test") for k, i in enumerate(order)}
    parts = {name: {k: v for k, v in judge.items() if split_of[k[0][:6]] == name} for name in ("fit", "cal", "test")}
    golds = {name: {k: gold[k] for k in part} for name, part in parts.items()}
    return parts, golds


def ours(parts, golds, method: str, n_resamples: int) -> tuple[float, int]:
    """CPU seconds of the summary (untraced), then its peak traced memory in a second run."""
    calibrator = fit_calibrator(parts["fit"], golds["fit"], parts["cal"], golds["cal"], method=method)

    def run() -> None:
        fit, test = (parts["fit"], golds["fit"]), (parts["test"], golds["test"])
        calibration_summary(calibrator, fit, test, resampling=ResamplingOptions(n_bootstrap=n_resamples, seed=0))

    start = time.process_time()
    run()
    seconds = time.process_time() - start
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, peak


def loop(parts, golds, method: str, n_resamples: int, n_loop: int) -> tuple[float, float]:
    """Seconds per resample of the plain loop (8 dimensions), and the largest difference from our replicates."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LinearRegression

    videos = sorted({v for v, _ in parts["fit"]} | {v for v, _ in parts["test"]})
    plan = make_resampling(videos, n_resamples, 0, "clinician")
    counts = plan.counts(slice(0, n_loop))
    column = {v: i for i, v in enumerate(videos)}
    worst, elapsed = 0.0, 0.0
    for dim in DIMENSION_KEYS:
        fit_keys = sorted(k for k in parts["fit"] if k[1] == dim)
        test_keys = sorted(k for k in parts["test"] if k[1] == dim)
        x_fit = np.array([parts["fit"][k] for k in fit_keys])
        y_fit = np.array([golds["fit"][k] for k in fit_keys])
        x_test = np.array([parts["test"][k] for k in test_keys])
        y_test = np.array([golds["test"][k] for k in test_keys])
        fit_columns = [column[k[0]] for k in fit_keys]
        test_columns = [column[k[0]] for k in test_keys]
        start = time.process_time()
        values = []
        for row in counts:
            w_fit, w_test = row[fit_columns], row[test_columns].astype(int)
            if method == "isotonic":
                model = IsotonicRegression(out_of_bounds="clip").fit(x_fit, y_fit, sample_weight=w_fit)
                calibrated = model.predict(x_test)
            else:
                keep = w_fit > 0
                line = LinearRegression().fit(x_fit[keep, None], y_fit[keep], sample_weight=w_fit[keep])
                calibrated = np.clip(line.predict(x_test[:, None]), 1, 5)
            repeat = np.repeat(np.arange(len(test_keys)), w_test)
            stats = agreement(calibrated[repeat], y_test[repeat])
            values.append([stats[s] for s in SUMMARY_STATISTICS])
        elapsed += time.process_time() - start
        mine = _replicates_for(plan, method, fit_keys, test_keys, x_fit, y_fit, x_test, y_test, column)
        got = np.stack([mine["after"][s][:n_loop] for s in SUMMARY_STATISTICS], axis=1)
        worst = max(worst, float(np.nanmax(np.abs(got - np.array(values)))))
    return elapsed / n_loop, worst


def _replicates_for(plan, method, fit_keys, test_keys, x_fit, y_fit, x_test, y_test, column):
    replicates, _ = _replicates(
        plan, method, ([k[0] for k in fit_keys], x_fit, y_fit), ([k[0] for k in test_keys], x_test, y_test), column
    )
    return replicates


def whole_command(build: Path, predictions: Path, n_resamples: int) -> dict:
    import tempfile

    from eval_scripts.jobs.calibration import calibrate

    with tempfile.TemporaryDirectory() as out:
        wall, cpu = time.perf_counter(), time.process_time()
        calibrate(predictions, build, out, resampling=ResamplingOptions(n_bootstrap=n_resamples, seed=0))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"calibrate on {build}: {wall:.1f} s wall, {cpu:.1f} s CPU ({n_resamples:,} clinician resamples, isotonic)")
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--loop-resamples", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--build", type=Path, default=None)
    parser.add_argument("--predictions", type=Path, default=None)
    args = parser.parse_args()
    parts, golds = make_layout()
    sizes = {name: len({v for v, _ in part}) for name, part in parts.items()}
    results = {"videos": sizes, "resamples": args.resamples, "machine": platform.processor() or platform.machine()}
    for method in ("isotonic", "linear"):
        seconds, peak = ours(parts, golds, method, args.resamples)
        per_resample, worst = loop(parts, golds, method, args.resamples, args.loop_resamples)
        results[method] = {
            "ours_s": round(seconds, 2),
            "peak_mib": round(peak / 2**20, 1),
            "loop_s_extrapolated": round(per_resample * args.resamples, 1),
            "ratio": round(per_resample * args.resamples / seconds, 1),
            "max_abs_difference": worst,
        }
        print(
            f"{method:8s}: calibrate summary {seconds:.2f} s CPU ({args.resamples:,} clinician resamples, "
            f"peak {peak / 2**20:.0f} MiB) vs sklearn loop {per_resample * args.resamples:.1f} s "
            f"(from {args.loop_resamples} resamples): {per_resample * args.resamples / seconds:.1f}x; "
            f"replicates equal to {worst:.1e}"
        )
    if args.build is not None:
        results["command"] = whole_command(args.build, args.predictions, args.resamples)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
