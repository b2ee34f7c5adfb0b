"""Speed of the `features` baseline's fit and of the cross-validation: the code before (`git show REF`) against
this tree, in one run.

1. In-process, the old `eval_scripts/baselines/models.py` (read from git at `--ref`, imported beside this tree's)
   and this tree's, each fitting and predicting the same rows (the summaries computed once beforehand and shared,
   as the default job and the cross-validation share them): the default sample's four `features` settings (796
   train / 100 test videos), the text ridge on a build of the real transcripts + coding.csv, the 15 fits of
   `--cv-folds 5` (5 clinician folds x 3 seeds) on every video of it, and the text ridge on its paper-rows build
   (`reproduce table4`'s column; unlabelled rows per dimension). Wall and CPU seconds (BLAS on one thread, as the
   fits run), the ratio of CPU times (steadier than wall time on a shared machine), the largest difference of
   any prediction and CV error, whether every chosen alpha is the same, and the peak of Python-tracked memory
   (tracemalloc, numpy included) of one fit, measured in a separate untimed pass.
2. With `--commands` (run first, while this process is small: a child's peak RSS starts from its parent's), the
   four commands end to end in fresh processes, with PYTHONPATH set to the old code (`git archive REF`) and to
   this tree in turn, old and new alternating: `mis-bench run --dataset REAL --cv-folds 5`, `mis-bench run
   --dataset REAL`, the default job on the cached default sample, and `mis-bench reproduce table4 --transcripts`.
   Wall and CPU time (user + sys; the median of `--repeats`) and peak RSS.

Needs ../shared (the real transcripts and the authors' files) for everything but the default sample.

    python3 benchmarks/bench_baselines.py [--ref a2a5ca1] [--commands] [--repeats 1] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
TRANSCRIPTS = SHARED / "mis-bench-transcripts.csv"
AUTHORS = SHARED / "authors"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
sys.path.insert(0, str(REPO))
from _old_tree import module_at  # noqa: E402 - after the environment is set


def old_models(ref: str, work: Path):
    """The `models` module as it was at `ref`, importable beside this tree's (its imports are this tree's)."""
    return module_at(ref, "eval_scripts/baselines/models.py", "old_models", work)


def _fit_predict(module, jobs, cache):
    """[(fitted model, predictions)] of each (modality, train rows, rows to predict)."""
    out = []
    for modality, train, held in jobs:
        model = module.FeatureRidgeBaseline(modality, summary_cache=cache).fit(train)
        out.append((model, model.predict(held)))
    return out


def _peak_mb(module, job, cache) -> float:
    tracemalloc.start()
    _fit_predict(module, [job], cache)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return round(peak / 2**20, 1)


def compare(name: str, old, new, jobs: list, cache: dict) -> dict:
    """Old and new on the same jobs: seconds, ratio, agreement, peak memory of the first job's fit."""
    import numpy as np

    from eval_scripts.baselines import fold_features
    from eval_scripts.baselines.summaries import MODALITY_GROUPS, summarise

    for modality, train, held in jobs:  # once, for old and new: the summaries (shared as the jobs share them) ...
        summarise(train, MODALITY_GROUPS[modality], cache), summarise(held, MODALITY_GROUPS[modality], cache)
        for row in [*train, *held]:  # ... and each module's cached analysis of the transcripts
            (
                old.transcript_terms(str(row.get("transcript") or "")),
                new.transcript_terms(str(row.get("transcript") or "")),
            )
    _fit_predict(new, [(jobs[0][0], jobs[0][1][:60], jobs[0][2])], cache)  # imports
    fold_features._corpus.clear(), fold_features._cached_lexical_fold.cache_clear()  # nothing of these rows kept
    figures = {"case": name, "fits": len(jobs)}
    results = {}
    for label, module in (("old", old), ("new", new)):
        started, cpu = time.perf_counter(), time.process_time()
        results[label] = _fit_predict(module, jobs, cache)
        figures[f"{label}_s"] = round(time.perf_counter() - started, 2)
        figures[f"{label}_cpu_s"] = round(time.process_time() - cpu, 2)
    figures["speedup_cpu"] = round(figures["old_cpu_s"] / figures["new_cpu_s"], 1)  # steadier on a shared machine
    pairs = list(zip(results["old"], results["new"], strict=True))
    figures["max_abs_prediction_diff"] = float(
        max(np.abs(po[k] - pn[k]).max() for (_, po), (_, pn) in pairs for k in po)
    )
    figures["max_abs_cv_mse_diff"] = float(
        max(abs(mo.cv_mse[k] - mn.cv_mse[k]) for (mo, _), (mn, _) in pairs for k in mo.cv_mse)
    )
    figures["same_alphas"] = all(mo.chosen_alpha == mn.chosen_alpha for (mo, _), (mn, _) in pairs)
    figures["old_peak_mb"], figures["new_peak_mb"] = _peak_mb(old, jobs[0], cache), _peak_mb(new, jobs[0], cache)
    print(json.dumps(figures), flush=True)
    return figures


def in_process(ref: str, work: Path, cache_dir: Path) -> list[dict]:
    from eval_scripts.baselines import models as new
    from eval_scripts.baselines.baseline_run import load_feature_rows
    from eval_scripts.baselines.crossval import all_feature_rows, clinician_folds
    from eval_scripts.baselines.on_the_fly import temporary_build
    from mis_bench_dataset import build_dataset, default_sample
    from mis_bench_dataset.release.labels import read_labels

    old = old_models(ref, work)
    sample = default_sample(cache_dir).build_dir
    train, test = load_feature_rows(sample, "train"), load_feature_rows(sample, "test")
    settings = ("text", "audio+text", "video+text", "audio+video+text")
    figures = [compare("default sample, 4 settings", old, new, [(s, train, test) for s in settings], {})]
    if not TRANSCRIPTS.is_file():
        return figures
    real = work / "real"
    build_dataset(None, real, labels=AUTHORS / "coding.csv", transcripts=TRANSCRIPTS, progress=False)
    train, test = load_feature_rows(real, "train"), load_feature_rows(real, "test")
    figures.append(compare("real build, text ridge", old, new, [("text", train, test)], {}))
    rows = all_feature_rows(real)
    folds = [clinician_folds(rows, 5, seed) for seed in (0, 1, 2)]
    cv_jobs = [
        (
            "text",
            [r for r, f in zip(rows, fs, strict=True) if f != k],
            [r for r, f in zip(rows, fs, strict=True) if f == k],
        )
        for fs in folds
        for k in range(5)
    ]
    figures.append(compare("real build, --cv-folds 5 (3 seeds)", old, new, cv_jobs, {}))
    with temporary_build(read_labels(AUTHORS / "coding.csv"), TRANSCRIPTS, split_by="paper-rows") as handle:
        train, test = load_feature_rows(handle, "train"), load_feature_rows(handle, "test")
    figures.append(compare("paper-rows build, text ridge (reproduce table4)", old, new, [("text", train, test)], {}))
    return figures


def _command(tree: Path, args: list[str], env: dict) -> tuple[float, float, float]:
    """(wall s, CPU s (user + sys), peak RSS MB) of one command in a fresh process (`os.wait4`: that child's own)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_scripts.cli", *args],
        env={**env, "PYTHONPATH": str(tree)},
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, args)
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def commands(ref: str, work: Path, cache_dir: Path, repeats: int) -> list[dict]:
    """The four commands end to end, old tree and this one alternating (fresh processes). Run before anything is
    imported here: a child's peak RSS starts from its parent's at the fork."""
    old_tree = work / "old-tree"
    old_tree.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old_tree)], input=archive, check=True)
    env = {**os.environ, "MIS_BENCH_CACHE": str(cache_dir)}
    sample = f"from mis_bench_dataset import default_sample; default_sample({str(cache_dir)!r})"
    subprocess.run([sys.executable, "-c", sample], env={**env, "PYTHONPATH": str(REPO)}, check=True)
    real = work / "real-cli"
    build = ["build", "--transcripts", str(TRANSCRIPTS), "--labels", str(AUTHORS / "coding.csv"), "--out", str(real)]
    _command(REPO, build, env)
    table4 = ["reproduce", "table4", "--from", str(AUTHORS), "--transcripts", str(TRANSCRIPTS)]
    cases = {
        "run --dataset REAL --cv-folds 5": ["run", "--dataset", str(real), "--cv-folds", "5"],
        "run --dataset REAL": ["run", "--dataset", str(real)],
        "run (default job, cached sample)": ["run"],
        "reproduce table4 --transcripts": table4,
    }
    figures = []
    for name, args in cases.items():
        times: dict[str, list] = {"old": [], "new": []}
        for i in range(repeats):
            for label, tree in (("old", old_tree), ("new", REPO)):
                out = ["--out", str(work / f"out-{label}-{i}-{len(figures)}")] if args[0] == "run" else []
                times[label].append(_command(tree, args + out, env))
        row = {"command": name, "load_average": round(os.getloadavg()[0], 2)}
        for label in ("old", "new"):
            row[f"{label}_s"] = round(statistics.median(t for t, _, _ in times[label]), 1)
            row[f"{label}_cpu_s"] = round(statistics.median(c for _, c, _ in times[label]), 1)
            row[f"{label}_peak_rss_mb"] = round(max(m for _, _, m in times[label]))
        row["speedup"] = round(row["old_s"] / row["new_s"], 1)
        row["speedup_cpu"] = round(row["old_cpu_s"] / row["new_cpu_s"], 1)
        print(json.dumps(row), flush=True)
        figures.append(row)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="a2a5ca1", help="the code before (a git revision)")
    parser.add_argument("--commands", action="store_true", help="also time the four commands end to end")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cache", help="MIS_BENCH_CACHE holding the default sample (default: that variable, or new)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        figures = {"cpus": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2)}
        cache = Path(args.cache or os.environ.get("MIS_BENCH_CACHE") or work / "cache")
        if args.commands and TRANSCRIPTS.is_file():
            figures["commands"] = commands(args.ref, work, cache, args.repeats)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):  # as the fits run, so old and new pay the same
            figures["fits"] = in_process(args.ref, work, cache)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
