"""PPI++ means and differences (`mis_icc_metric.ppi`) against ppi_py, the PPI authors' package, to 1e-6."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_icc_metric import classical_difference, classical_mean, ppi_difference, ppi_mean
from mis_icc_metric.ppi import clustered_ppi_means, mean_lambda, weighted_ppi_means

from _ppi_reference import ppi_reference


def _scores(rng, size, noise, bias=0.0, scale=1.0):
    """Gold-like scores in [1, 5] at one decimal and a judge that tracks them with noise, offset and scale."""
    gold = np.clip(np.round(rng.normal(3.2, 0.7, size), 1), 1, 5)
    judge = np.clip(np.round(bias + scale * gold + rng.normal(0, noise, size), 1), 1, 5)
    return gold, judge


def _cases(seed: int = 7, count: int = 24):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        n, big_n = int(rng.integers(5, 120)), int(rng.integers(3, 900))
        noise, bias, scale = rng.uniform(0.05, 2.0), rng.uniform(-1, 1), rng.uniform(0.2, 1.5)
        gold, judge = _scores(rng, n + big_n, noise, bias, scale)
        in_b = rng.random(n + big_n) < rng.uniform(0.2, 0.8)
        in_b[:2], in_b[2:4], in_b[n : n + 1], in_b[n + 1 : n + 2] = True, False, True, False
        confidence = (0.9, 0.95, 0.99)[i % 3]
        args = {
            "y": gold[:n].tolist(),
            "yhat": judge[:n].tolist(),
            "yhat_unlabeled": judge[n:].tolist(),
            "in_b": in_b[:n].astype(float).tolist(),
            "in_b_unlabeled": in_b[n:].astype(float).tolist(),
        }
        for kind in ("mean", "classical_mean", "difference", "classical_difference"):
            cases.append({"kind": kind, "confidence": confidence, "args": args})
    return cases


def _ours(case) -> list[float]:
    a = {k: np.asarray(v) for k, v in case["args"].items()}
    c = case["confidence"]
    if case["kind"] == "mean":
        result = ppi_mean(a["y"], a["yhat"], a["yhat_unlabeled"], confidence=c)
    elif case["kind"] == "classical_mean":
        result = classical_mean(a["y"], confidence=c)
    elif case["kind"] == "difference":
        result = ppi_difference(
            a["y"], a["yhat"], a["in_b"] > 0, a["yhat_unlabeled"], a["in_b_unlabeled"] > 0, confidence=c
        )
    else:
        in_b = a["in_b"] > 0
        result = classical_difference(a["y"][~in_b], a["y"][in_b], confidence=c)
    return [result.estimate, result.low, result.high]


@pytest.mark.slow  # importing ppi_py (numba, statsmodels, scikit-learn) in the child takes about 6 s
def test_means_and_differences_equal_ppi_py():
    """Power-tuned PPI++ means (`ppi_mean_ci`), differences (`ppi_ols_ci`, coord=1) and the classical intervals
    (`classical_mean_ci`, `classical_ols_ci`) equal ppi_py's on 24 random judge/expert sets, to 1e-6."""
    cases = _cases()
    reference = ppi_reference(cases)
    for case, expected in zip(cases, reference, strict=True):
        np.testing.assert_allclose(_ours(case), expected, atol=1e-6, rtol=0, err_msg=case["kind"])


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(3, 60),
    big_n=st.integers(1, 300),
    shift=st.floats(-3, 3),
)
def test_ppi_properties(seed, n, big_n, shift):
    rng = np.random.default_rng(seed)
    gold, judge = _scores(rng, n + big_n, rng.uniform(0.01, 3))
    y, yhat, unl = gold[:n], judge[:n], judge[n:]
    tuned = ppi_mean(y, yhat, unl)
    assert 0.0 <= tuned.lam <= 1.0
    # lambda = 0 is the experts-only estimate and interval.
    zero, classical = ppi_mean(y, yhat, unl, lam=0.0), classical_mean(y)
    np.testing.assert_allclose(
        [zero.estimate, zero.low, zero.high], [classical.estimate, classical.low, classical.high]
    )
    # A common shift of gold and judge shifts the estimate and keeps the interval's width and lambda.
    moved = ppi_mean(y + shift, yhat + shift, unl + shift)
    np.testing.assert_allclose(
        [moved.estimate - shift, moved.width, moved.lam], [tuned.estimate, tuned.width, tuned.lam], atol=1e-9
    )
    # The vectorised resampled estimator at weight one per video is the plain estimate.
    every = np.concatenate([y, np.zeros(big_n)])
    labelled = np.arange(n + big_n) < n
    one = clustered_ppi_means(np.ones((1, n + big_n)), every, judge, labelled)[0]
    assert one == pytest.approx(tuned.estimate, abs=1e-9)
    assert mean_lambda(y, yhat, unl) == pytest.approx(tuned.lam)


def test_a_perfect_judge_narrows_the_interval_to_the_judged_set():
    rng = np.random.default_rng(0)
    gold = rng.normal(3, 0.7, 500)
    perfect = ppi_mean(gold[:20], gold[:20], gold[20:])
    # By hand: cov(y, y) / ((1 + n/N) var(all)) with the labelled spread over n, the pooled one over n + N - 1.
    assert perfect.lam == pytest.approx(gold[:20].var() / ((1 + 20 / 480) * gold.var(ddof=1)))
    assert perfect.width < classical_mean(gold[:20]).width / 2


def test_weighted_means_equal_ppi_mean_on_each_labelled_set_and_on_each_resample():
    """The vectorised estimator against a loop of `ppi_mean`: (a) 0/1 masks (which videos an expert labelled),
    (b) bootstrap counts, checked by repeating each video as often as it was drawn."""
    from scipy.stats import norm

    rng = np.random.default_rng(3)
    gold, judge = _scores(rng, 300, 0.5, 0.4, 0.8)
    masks = np.zeros((40, 300))
    for row in masks:
        row[rng.choice(300, 30, replace=False)] = 1
    estimate, se, lam = weighted_ppi_means(np.ones_like(masks), masks > 0, gold, judge)
    for b, mask in enumerate(masks.astype(bool)):
        expected = ppi_mean(gold[mask], judge[mask], judge[~mask])
        assert estimate[b] == pytest.approx(expected.estimate, abs=1e-10)
        assert 2 * norm.ppf(0.975) * se[b] == pytest.approx(expected.width, abs=1e-10)
        assert lam[b] == pytest.approx(expected.lam, abs=1e-10)
    labelled = rng.random(300) < 0.2
    counts = rng.multinomial(300, np.full(300, 1 / 300), size=25).astype(float)
    resampled = clustered_ppi_means(counts, np.where(labelled, gold, np.nan), judge, labelled)
    for b, count in enumerate(counts.astype(int)):
        lab, unl = (
            np.repeat(np.flatnonzero(labelled), count[labelled]),
            np.repeat(np.flatnonzero(~labelled), count[~labelled]),
        )
        assert resampled[b] == pytest.approx(ppi_mean(gold[lab], judge[lab], judge[unl]).estimate, abs=1e-10)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), offset=st.floats(-2, 2), n=st.integers(3, 50), big_n=st.integers(2, 300))
def test_a_judge_offset_changes_neither_the_estimate_nor_the_interval(seed, offset, n, big_n):
    """PPI++ is unbiased whatever the judge's offset: adding a constant to every judge score leaves a mean's
    estimate, CI and lambda unchanged. (Not so for a difference's lambda: ppi_py tunes it on OLS gradients,
    whose spread a constant shifts by group, so the test stops at means; any lambda stays valid.)"""
    rng = np.random.default_rng(seed)
    gold, judge = _scores(rng, n + big_n, rng.uniform(0.05, 2), scale=rng.uniform(0.3, 1.2))
    plain = ppi_mean(gold[:n], judge[:n], judge[n:])
    moved = ppi_mean(gold[:n], judge[:n] + offset, judge[n:] + offset)
    np.testing.assert_allclose(
        [moved.estimate, moved.low, moved.high, moved.lam],
        [plain.estimate, plain.low, plain.high, plain.lam],
        atol=1e-12,  # a lambda clipped at 0 on one side can be 3e-31 on the other (seed 3, offset 1, n 3, N 107)
    )


def test_the_differences_are_b_minus_a_by_hand():
    """In the default suite (ppi_py's comparison is slow): the classical difference is mean(b) - mean(a) with the
    HC0 standard error sqrt(var_a / n_a + var_b / n_b), and PPI++ points the same way: a flipped sign fails."""
    from statistics import NormalDist

    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 6.0])
    result = classical_difference(a, b, confidence=0.95)
    se = np.sqrt(a.var() / a.size + b.var() / b.size)  # population variances (HC0)
    half = NormalDist().inv_cdf(0.975) * se
    assert (result.estimate, result.low, result.high) == pytest.approx((3.0, 3.0 - half, 3.0 + half))
    rng = np.random.default_rng(0)
    in_b = np.arange(40) % 2 == 1
    y = np.where(in_b, 4.0, 2.0) + rng.normal(0, 0.3, 40)
    in_b_unlabelled = np.arange(400) % 2 == 1
    yhat_unlabelled = np.where(in_b_unlabelled, 4.0, 2.0) + rng.normal(0, 0.3, 400)
    ppi = ppi_difference(y, y + rng.normal(0, 0.1, 40), in_b, yhat_unlabelled, in_b_unlabelled, confidence=0.95)
    assert 1.7 < ppi.estimate < 2.3 and ppi.low < ppi.estimate < ppi.high
