"""Every source of variance in one table (`mis_icc_metric.variance_table`) against hand computations: the
spread over prompts and samples from independent ANOVA ICCs, the resampling spread from an explicit loop over the
plan's draws, and the combined CI from the same draws assembled by hand."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import make_resampling, variance_sources

from _independent import anova_icc, percentile_interval

DIMS = DIMENSION_KEYS[:2]
STIMULI = ("Jessica", "Luke", "Bethany", "Savannah")


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    videos = [f"ZZ10{c:02d}_T{1 + t % 3}_{STIMULI[t]}" for c in range(8) for t in range(4)]
    gold = {(v, d): float(np.round(rng.uniform(2, 5), 1)) for v in videos for d in DIMS}

    def arm(noise: float) -> dict:
        return {k: g + float(rng.normal(0, noise)) for k, g in gold.items()}

    prompts = {"unperturbed": arm(0.5), "rubric-paraphrase-a": arm(0.7), "rubric-paraphrase-b": arm(0.4)}
    samples = [arm(0.5), arm(0.6), arm(0.55)]
    return videos, gold, prompts, samples


def _icc(arm, gold, videos, dim) -> float:
    return anova_icc([arm[(v, dim)] for v in videos], [gold[(v, dim)] for v in videos])


@pytest.mark.parametrize("n_arms", [3, 2])  # two prompts (or samples) are already a spread
def test_the_table_equals_the_hand_computation(n_arms) -> None:
    videos, gold, prompts, samples = _data()
    prompts, samples = dict(list(prompts.items())[:n_arms]), samples[:n_arms]
    table = variance_sources(prompts, gold, samples=samples, n_bootstrap=200, seed=3)
    plan = make_resampling(sorted(videos), 200, 3, "clinician")
    by_clinician = {name: [v for v in sorted(videos) if v.startswith(name)] for name in plan.cluster_names}
    rng = np.random.default_rng(3)
    prompt_pick, sample_pick = rng.integers(0, n_arms, 200), rng.integers(0, n_arms, 200)
    for dim in DIMS:
        entry = table["dimensions"][dim]
        by_prompt = [_icc(arm, gold, videos, dim) for arm in prompts.values()]
        by_sample = [_icc(arm, gold, videos, dim) for arm in samples]
        assert entry["icc"] == pytest.approx(by_prompt[0])
        assert entry["sd_prompts"] == pytest.approx(statistics.stdev(by_prompt))
        assert entry["sd_sampling"] == pytest.approx(statistics.stdev(by_sample))
        replicates = []
        for draw in plan.draws:  # clinicians drawn with all their videos, as a loop
            drawn = [v for c in draw for v in by_clinician[plan.cluster_names[c]]]
            replicates.append(_icc(prompts["unperturbed"], gold, drawn, dim))
        assert entry["sd_clinicians"] == pytest.approx(statistics.stdev(replicates))
        assert entry["resampling_ci"] == pytest.approx(percentile_interval(replicates))
        total = [
            r + (by_prompt[p] - np.mean(by_prompt)) + (by_sample[s] - np.mean(by_sample))
            for r, p, s in zip(replicates, prompt_pick, sample_pick, strict=True)
        ]
        assert entry["total_ci"] == pytest.approx(percentile_interval(total))
        assert (
            entry["total_ci"][1] - entry["total_ci"][0] >= entry["resampling_ci"][1] - entry["resampling_ci"][0] - 1e-9
        )
    assert table["meta"]["resampling"]["clinician"]["n_clusters"] == 8


def test_one_prompt_and_no_samples_leave_those_sources_undefined() -> None:
    videos, gold, prompts, _ = _data(1)
    table = variance_sources({"unperturbed": prompts["unperturbed"]}, gold, n_bootstrap=50, seed=0)
    entry = table["dimensions"][DIMS[0]]
    assert np.isnan(entry["sd_prompts"]) and np.isnan(entry["sd_sampling"])
    assert entry["total_ci"] == pytest.approx(entry["resampling_ci"])
