"""On the real benchmark (996 videos from 78 clinicians; skips without ../shared): `mis-bench score --resample
clinician` CIs are as wide as an independent clinician bootstrap written with pandas (another seed, another
implementation: within Monte Carlo error), wider than `--resample video`, with the design effect in --json.
The judge is the text ridge's out-of-fold predictions on every video (Table 3's protocol: every video scored)."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import ResamplingOptions

from _independent import anova_icc

pytestmark = pytest.mark.slow

INDEPENDENT_RESAMPLES = 800


def _score(oof, build, resample: str) -> dict:
    args = ["score", "--predictions", str(oof), "--references", str(build), "--split", "all", "--json"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*args, "--resample", resample, "--bootstrap", "4000", "--seed", "3"]) == 0
    return json.loads(printed.getvalue())


def _pandas_cluster_widths(oof, build) -> dict[str, float]:
    """95% percentile CI width per dimension from a clinician bootstrap a user would write with pandas."""
    predictions = pd.read_csv(oof)
    scoring = pd.concat(pd.read_parquet(p) for p in sorted((build / "scoring").glob("*.parquet")))
    table = predictions.merge(scoring[["video_id", "dimension", "score"]], on=["video_id", "dimension"])
    assert len(table) == 7968
    table["clinician"] = table["video_id"].str.split("_").str[0]
    groups = {name: group for name, group in table.groupby("clinician")}
    names = sorted(groups)
    rng = np.random.default_rng(20261203)
    replicates: dict[str, list[float]] = {key: [] for key in DIMENSION_KEYS}
    for _ in range(INDEPENDENT_RESAMPLES):
        sample = pd.concat([groups[names[i]] for i in rng.integers(0, len(names), len(names))])
        for key, group in sample.groupby("dimension"):
            replicates[key].append(anova_icc(group["prediction"].to_numpy(), group["score"].to_numpy()))
    return {key: float(np.diff(np.percentile(values, [2.5, 97.5]))[0]) for key, values in replicates.items()}


def test_clinician_cis_match_an_independent_cluster_bootstrap_and_are_wider(real_text_build, real_text_oof):
    by_clinician = _score(real_text_oof, real_text_build, "clinician")
    by_video = _score(real_text_oof, real_text_build, "video")
    assert by_clinician["meta"]["resampling"]["unit"] == "clinician"
    assert by_clinician["meta"]["resampling"]["n_clusters"] == 78
    independent = _pandas_cluster_widths(real_text_oof, real_text_build)
    ratios = []
    for key in DIMENSION_KEYS:
        ours = by_clinician["dimensions"][key]
        width = ours["icc_ci"][1] - ours["icc_ci"][0]
        # Monte Carlo error of a percentile width from 800 resamples is a few percent; 15% is far outside it
        assert width == pytest.approx(independent[key], rel=0.15), key
        video_width = by_video["dimensions"][key]["icc_ci"][1] - by_video["dimensions"][key]["icc_ci"][0]
        ratios.append(width / video_width)
        assert ours["n_clusters"] == 78 and ours["design_effect"] > 1.2, key
        # the same design effect whichever unit made the CIs (both bootstraps run, same seed and count)
        assert by_video["dimensions"][key]["design_effect"] == pytest.approx(ours["design_effect"], rel=1e-12)
    # on the full benchmark clinicians matter: README.md and docs/metric.md say 1.33x to 2.24x (10,000 resamples,
    # seed 0); 4,000 resamples with seed 3 here
    assert 1.25 < min(ratios) < 1.45 and 2.05 < max(ratios) < 2.45 and np.mean(ratios) > 1.5


def test_the_readme_s_test_split_ci_is_the_ridge_s_clinician_resampled_one(real_text_build, tmp_path):
    """README.md's row "text ridge | video-level test split, seed 0 ... | 38.4 [28.6, 46.6]" (and the reproducing
    page's table) is what `mis-bench run --dataset BUILD --bootstrap 1000` gives the `features` ridge, text setting."""
    import re

    from conftest import REPO_ROOT

    from eval_scripts import run_baseline
    from mis_bench_dataset.toolkit.numbers import ci_pct, pct

    row = next(
        line for line in (REPO_ROOT / "README.md").read_text().splitlines() if "video-level test split, seed 0" in line
    )
    shown = re.search(r"\| ([\d.]+) (\[[\d.]+, [\d.]+\]) \|$", row).groups()
    run = run_baseline(
        real_text_build, tmp_path, baseline="features", modality="text", resampling=ResamplingOptions(n_bootstrap=1000)
    )
    scores = json.loads(run.results_path.read_text())["scores"]
    assert scores["meta"]["resampling"]["unit"] == "clinician"
    assert (pct(scores["mean_icc"]), ci_pct(scores["mean_icc_ci"])) == shown
