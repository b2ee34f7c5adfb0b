"""`mis-bench plan` (sample sizes from a pilot): Bonett (2002) against a published example and hand computations,
the resampled sizes against the ordinary bootstrap and the PPI++ simulation, the design effect against the
clinician bootstrap, the planned size against fresh studies drawn at a clustering the pilot does not have, the
floors (one clinician, a rater without spread, too few labels), the cap on clinicians, CLI round trips and
refusals. Synthetic pilots (`tests/_metric_helpers.py` and a small clinician-effects simulation here)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_estimate import _write

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_icc_metric import (
    DifferenceTarget,
    StudyDesign,
    bonett_sample_size,
    make_resampling,
    plan_difference,
    plan_icc,
    plan_labels,
    planning,
    ppi_coverage_simulation,
)
from mis_icc_metric.bootstrap import bootstrap_blocks, percentile_ci
from mis_icc_metric.planning import (
    SizedDraws,
    _add_draws,
    _pilot,
    _poisson_counts,
    _sized_summaries,
    _units,
    clinician_correlation,
    icc_influence,
    icc_variance_factor,
)
from mis_icc_metric.reporting_floor import MIN_CI_CLUSTERS, MIN_LABELLED_VIDEOS
from mis_icc_metric.resampling import design_effect

from _metric_helpers import make_scores, video_ids

Z95 = 1.959963984540054  # the 97.5% normal quantile, written out
# A study whose CI treats videos as independent (no design effect), with clinicians enough for any size.
INDEPENDENT = StudyDesign(unit="video", clinicians=100_000)


def test_bonett_equals_the_published_example_and_hand_computations():
    # Bonett (2002) as quoted with his formula by the ICC sample-size calculators: ICC 0.8, two raters, a 95% CI
    # of width 0.2 (0.7 to 0.9) needs 51 subjects.
    assert bonett_sample_size(0.8, 0.2) == 51
    # By hand, n = 1 + 8 z^2 (1 - rho)^2 (1 + (k - 1) rho)^2 / (k (k - 1) w^2):
    # rho 0.5, k 3, w 0.3: 1 + 8 * 3.8415 * 0.25 * 4 / (6 * 0.09) = 57.91 -> 58.
    assert bonett_sample_size(0.5, 0.3, raters=3) == int(np.ceil(1 + 8 * Z95**2 * 0.25 * 4 / (6 * 0.09))) == 58
    # rho 0.3, k 2, w 0.2, 90%: z = 1.6449; 1 + 8 * 2.7055 * 0.49 * 1.69 / (2 * 0.04) = 225.04 -> 226.
    assert bonett_sample_size(0.3, 0.2, confidence=0.9) == 226


@settings(max_examples=50, deadline=None)
@given(icc=st.floats(0.0, 0.95), width=st.floats(0.05, 0.6))
def test_bonett_properties(icc, width):
    n = bonett_sample_size(icc, width)
    assert n >= bonett_sample_size(icc, width * 1.2)  # a wider CI never needs more
    assert n >= bonett_sample_size(min(icc + 0.04, 1.0), width)  # nor does a higher ICC
    # Bonett's n is where the large-sample variance's CI has the width: 2 z sqrt(factor / (n - 1)) = w.
    assert n - 1 == pytest.approx(4 * Z95**2 * icc_variance_factor(icc) / width**2, abs=1)


def _pilot_files(tmp_path, n=150, seed=2, noise=0.5, offset=0.0):
    predictions, gold = make_scores(n=n, seed=seed, noise=noise, unparsed=0.0)
    shifted = {k: round(v + offset, 1) for k, v in predictions.items()}
    return _write(tmp_path / f"pred{offset}.csv", "prediction", shifted), _write(tmp_path / "gold.csv", "score", gold)


def test_the_size_draws_at_the_pilot_size_are_the_ordinary_bootstrap():
    """m videos drawn with replacement at m = n: the CI half-width of the ordinary video bootstrap (`Resampling`),
    within Monte Carlo error."""
    predictions, gold = make_scores(n=150, seed=2, noise=0.5, unparsed=0.0)
    videos, keys, ratings, valid = _pilot([predictions], gold)
    clusters, n_units, _ = _units(videos, "video")
    sized = bootstrap_blocks(ratings, valid, SizedDraws(clusters, n_units, n_units, 4000, 1))["icc"]
    ordinary = bootstrap_blocks(ratings, valid, make_resampling(videos, 4000, 2, "video"))["icc"]
    width = np.diff(percentile_ci(sized), axis=1)[:, 0]
    reference = np.diff(percentile_ci(ordinary), axis=1)[:, 0]
    np.testing.assert_allclose(width, reference, rtol=0.1)


@pytest.mark.parametrize("size", [3, 40, 250, 2000, 30_000])  # index draws (few a unit), Poisson-started (many)
def test_the_draws_are_multinomial_counts(size):
    """Each row is `size` draws with replacement of 50 units: it sums to `size` exactly, and its counts have the
    multinomial's mean size / n, variance size (1 / n) (1 - 1 / n) and covariance -size / n^2 (within 5 standard
    errors over 4,000 rows)."""
    n, rows = 50, 4000
    counts = np.zeros((rows, n))
    _add_draws(np.random.default_rng(size), counts, size)
    assert (counts.sum(axis=1) == size).all() and (counts >= 0).all() and (counts == np.round(counts)).all()
    p = 1 / n
    mean, var, cov = size * p, size * p * (1 - p), -size * p * p
    assert abs(counts.mean() - mean) < 5 * np.sqrt(var / (rows * n))
    assert counts.var(axis=0, ddof=1).mean() == pytest.approx(var, rel=5 * np.sqrt(2 / (rows * n)) + 0.01)
    pairs = np.mean((counts[:, :1] - mean) * (counts[:, 1:] - mean), axis=0).mean()
    assert abs(pairs - cov) < 5 * var / np.sqrt(rows * (n - 1))


@pytest.mark.parametrize("mean", [0.7, 4.9, 15.3, 260.0])
def test_the_poisson_counts_follow_the_poisson_law(mean):
    """`_poisson_counts` by inversion: each count's frequency within 5 standard errors of scipy's Poisson pmf
    (every count with an expected 20 or more), the mean and variance within 5 standard errors (200,000 draws),
    and every draw exactly the number of CDF values at most its uniform (the guide table only speeds the search)."""
    from scipy.special import pdtr
    from scipy.stats import poisson

    shape = (400, 500)
    drawn = _poisson_counts(np.random.default_rng(7), shape, mean)
    assert drawn.shape == shape and drawn.dtype == np.float64 and (drawn == np.round(drawn)).all()
    values, frequency = np.unique(drawn, return_counts=True)
    expected = poisson.pmf(values, mean) * drawn.size
    enough = expected >= 20
    assert enough.sum() >= 2
    assert np.all(np.abs(frequency - expected)[enough] < 5 * np.sqrt(expected[enough]))
    assert abs(drawn.mean() - mean) < 5 * np.sqrt(mean / drawn.size)
    assert drawn.var() == pytest.approx(mean, rel=5 * np.sqrt(2 / drawn.size) + 0.01)
    u = np.random.default_rng(7).random(shape)
    cdf = pdtr(np.arange(int(mean + 60 * np.sqrt(mean) + 60)), mean)
    np.testing.assert_array_equal(drawn, np.searchsorted(cdf, u, side="right"))


def test_the_nested_size_draws_give_each_size_the_separate_draws_half_width(monkeypatch):
    """At every size of the grid the nested draws (each extending the draw at the size before) give the CI
    half-width of separate draws at that size (`SizedDraws`, another seed), within Monte Carlo error."""
    predictions, gold = make_scores(n=80, seed=3, noise=0.5, unparsed=0.0)
    videos, keys, ratings, valid = _pilot([predictions], gold)
    clusters, n_units, _ = _units(videos, "video")
    grid = np.array([20, 80, 400])
    nested = _sized_summaries(ratings, valid, grid, (3000, 1), percentile_ci)
    with monkeypatch.context() as patch:  # in groups of one size: the same draws
        patch.setattr(planning, "_REPLICATE_CELLS", 1)
        np.testing.assert_array_equal(_sized_summaries(ratings, valid, grid, (3000, 1), percentile_ci), nested)
    for g, size in enumerate(grid):
        separate = percentile_ci(bootstrap_blocks(ratings, valid, SizedDraws(clusters, n_units, size, 3000, 5))["icc"])
        np.testing.assert_allclose(np.diff(nested[g], axis=1), np.diff(separate, axis=1), rtol=0.1)


def test_the_gathered_sums_of_few_draws_equal_the_count_product(monkeypatch):
    """The sizes whose draws are few sum the drawn videos' features (`_gathered`); their replicates equal those of
    the whole count matrix's product (every size by the product) to 1e-12, on the same draws."""
    predictions, gold = make_scores(n=120, seed=4, noise=0.5, unparsed=0.0)
    videos, keys, ratings, valid = _pilot([predictions], gold)
    grid = np.array([2, 3, 5, 9, 40, 300, 2000])
    gathered = _sized_summaries(ratings, valid, grid, (500, 3), lambda replicates: replicates)
    monkeypatch.setattr(planning, "_GATHER_SHARE", 10**9)  # no draw is few enough: the product everywhere
    product = _sized_summaries(ratings, valid, grid, (500, 3), lambda replicates: replicates)
    assert np.isfinite(product[2:]).all()
    np.testing.assert_allclose(gathered, product, rtol=0, atol=1e-12)


@pytest.mark.slow  # five plans and checks at 2,000 resamples: about 6 s
def test_the_planned_size_gives_the_half_width():
    """Fresh resamples at the planned size (another seed) reach the half-width; at two thirds of it they do not."""
    predictions, gold = make_scores(n=150, seed=2, noise=0.5, unparsed=0.0)
    plan = plan_icc(predictions, gold, half_width=0.08, design=INDEPENDENT, n_resamples=2000, seed=0)
    videos, keys, ratings, valid = _pilot([predictions], gold)
    clusters, n_units, _ = _units(videos, "video")
    for c, key in enumerate(keys):
        size = plan["dimensions"][key]["videos"]
        at = percentile_ci(bootstrap_blocks(ratings, valid, SizedDraws(clusters, n_units, size, 2000, 9))["icc"])
        short = percentile_ci(
            bootstrap_blocks(ratings, valid, SizedDraws(clusters, n_units, int(size * 2 / 3), 2000, 9))["icc"]
        )
        assert (at[c, 1] - at[c, 0]) / 2 <= 0.08 * 1.05
        assert (short[c, 1] - short[c, 0]) / 2 > 0.08
    # A tighter CI needs more videos.
    tighter = plan_icc(predictions, gold, half_width=0.05, design=INDEPENDENT, n_resamples=2000, seed=0)
    assert all(tighter["dimensions"][k]["videos"] > plan["dimensions"][k]["videos"] for k in keys)


def test_clinicians_are_counted_at_the_stated_videos_per_clinician_not_the_pilots():
    predictions, gold = make_scores(n=160, seed=4, noise=0.5, unparsed=0.0)  # 8 videos per clinician
    independent = plan_icc(predictions, gold, half_width=0.05, design=INDEPENDENT, n_resamples=500)
    design = StudyDesign(videos_per_clinician=3.0, clinicians=100_000)
    clustered = plan_icc(predictions, gold, half_width=0.05, design=design, n_resamples=500)
    assert clustered["pilot"]["videos_per_clinician"] == pytest.approx(8.0)
    assert clustered["design"] == {
        "videos_per_clinician": 3.0,
        "clinicians_available": 100_000,
        "resample": "clinician",
    }
    for key, entry in clustered["dimensions"].items():
        assert entry["clinicians"] == max(math.ceil(entry["videos"] / 3.0), MIN_CI_CLUSTERS)
        assert entry["more_videos"] == max(0, entry["videos"] - 160)
        assert entry["more_clinicians"] == max(0, entry["clinicians"] - 20)
        assert entry["bonett_videos"] == independent["dimensions"][key]["bonett_videos"]
        # The design effect only ever adds videos (rho clipped at 0).
        assert entry["design_effect"] >= 1 and entry["videos"] >= independent["dimensions"][key]["videos"] - 1


def test_labels_for_a_ppi_ci_reach_the_width_in_the_simulation():
    """At the planned number of labels, the simulated PPI++ CI (random labelled sets) has the width asked."""
    predictions, gold = make_scores(n=800, seed=6, noise=0.35, unparsed=0.0)
    plan = plan_labels(predictions, gold, half_width=0.06)
    key = DIMENSION_KEYS[0]
    labels = plan["dimensions"][key]["ppi_labels"]
    simulated = ppi_coverage_simulation(predictions, gold, share=labels / 800, n_draws=400, seed=1)
    assert simulated["dimensions"][key]["ppi_width"] / 2 == pytest.approx(0.06, rel=0.05)
    y = np.array([gold[(v, d)] for (v, d) in gold if d == key])
    assert plan["dimensions"][key]["classical_labels"] == int(np.ceil((Z95 * y.std() / 0.06) ** 2))
    assert labels < plan["dimensions"][key]["classical_labels"]


def test_a_larger_difference_needs_fewer_videos():
    a, gold = make_scores(n=150, seed=2, noise=0.4, unparsed=0.0)
    b, _ = make_scores(n=150, seed=3, noise=0.8, unparsed=0.0)
    small = plan_difference(a, b, gold, DifferenceTarget(0.1), design=INDEPENDENT, n_resamples=1000)
    large = plan_difference(a, b, gold, DifferenceTarget(0.2), design=INDEPENDENT, n_resamples=1000)
    vpc = small["design"]["videos_per_clinician"]
    for key, entry in small["dimensions"].items():
        assert entry["videos"] > large["dimensions"][key]["videos"]
        assert entry["analytic_videos"] > large["dimensions"][key]["analytic_videos"]
        assert entry["clinicians"] == math.ceil(entry["videos"] / vpc)  # at the stated videos per clinician
    capped = plan_difference(a, b, gold, DifferenceTarget(0.1), design=StudyDesign(clinicians=25), n_resamples=500)
    for entry in capped["dimensions"].values():
        assert entry["clinicians"] is None or entry["clinicians"] <= 25
        assert entry["clinicians"] is not None or "25 exist" in entry["withheld"]
        assert entry["analytic_clinicians"] is None or entry["analytic_clinicians"] <= 25
        low, high = entry["videos_needed_range"]
        assert entry["videos"] is None or low <= entry["videos"] <= high


def test_the_cli_round_trip_and_refusals(tmp_path, capsys):
    pred, gold = _pilot_files(tmp_path)
    out = tmp_path / "plan.json"
    args = ["plan", "icc", "--predictions", str(pred), "--references", str(gold), "--half-width", "0.1"]
    assert main([*args, "--bootstrap", "300", "--clinicians", "60", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Bonett videos" in text and "12.8 videos per clinician" in text and "at most 60 clinicians" in text
    assert "Headline: the resampled videos and clinicians" in text and "not for therapist supervision" in text
    written = json.loads(out.read_text())
    assert written["target"] == "icc" and written["design"]["resample"] == "clinician"
    assert written["design"]["clinicians_available"] == 60 and written["headline"]["method"] == "resampling"
    assert main(["plan", "difference", "--predictions", str(pred), "--references", str(gold)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["mis-bench plan: error: plan difference needs --difference and --compare; see mis-bench plan --help"]
    tiny = _write(tmp_path / "tiny.csv", "score", {(v, DIMENSION_KEYS[0]): 3.0 for v in video_ids(3)})
    assert main(["plan", "icc", "--predictions", str(pred), "--references", str(tiny), "--half-width", "0.1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a planned size needs at least 10" in err[0]
    # A pilot of 19 clinicians cannot plan for 10 available.
    assert main([*args, "--clinicians", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already has 19 clinicians" in err[0]


STIMULI = "ABCDEFGH"


def _clustered_study(rng: np.random.Generator, sizes, first: int = 0):
    """One dimension's gold and judge on videos of clinicians with `sizes` videos each: a clinician shifts both
    the gold (u) and, differently, the judge (w), so two videos of one clinician err alike (true ICC about 0.63,
    within-clinician correlation of the ICC's terms about 0.25)."""
    counts = np.asarray(sizes)
    clinician = np.repeat(np.arange(counts.size), counts)
    u, w = rng.normal(0, 0.35, counts.size)[clinician], rng.normal(0, 0.3, counts.size)[clinician]
    gold = 3.5 + u + rng.normal(0, 0.35, clinician.size)
    judge = 3.5 + 0.7 * (gold - 3.5) + w + rng.normal(0, 0.3, clinician.size)
    within = np.concatenate([np.arange(m) for m in counts])
    videos = [f"CL{1000 + first + g}_T{1 + i % 3}_{STIMULI[i // 3]}" for g, i in zip(clinician, within, strict=True)]
    return videos, gold, judge


def _mappings(videos, gold, judge):
    key = DIMENSION_KEYS[0]
    return (
        {(v, key): float(x) for v, x in zip(videos, judge, strict=True)},
        {(v, key): float(y) for v, y in zip(videos, gold, strict=True)},
    )


def test_the_delta_method_and_design_effect_agree_with_the_bootstrap():
    """The ICC's per-video terms give the video bootstrap's variance (sum of squares / n^2), and their
    within-clinician correlation the clinician bootstrap's design effect at the pilot's own clustering,
    1 + (m_eff - 1) rho with m_eff = sum m_g^2 / n (Kish), within Monte Carlo error."""
    videos, gold, judge = _clustered_study(np.random.default_rng(3), [2, 5, 9, 13] * 15)
    ratings, valid = np.stack([gold, judge], axis=-1)[:, None, :], np.ones((len(videos), 1), bool)
    influence = icc_influence(ratings, valid)
    codes = np.unique(np.array([v.split("_")[0] for v in videos]), return_inverse=True)[1]
    rho, with_pairs, _ = clinician_correlation(influence, valid, codes)
    by_video = bootstrap_blocks(ratings, valid, make_resampling(videos, 4000, 1, "video"))["icc"]
    by_clinician = bootstrap_blocks(ratings, valid, make_resampling(videos, 4000, 1, "clinician"))["icc"]
    assert (influence**2).sum() / len(videos) ** 2 == pytest.approx(by_video.var(), rel=0.1)
    m_eff = np.sum(np.bincount(codes) ** 2) / len(videos)
    assert with_pairs[0] == 60 and rho[0] > 0.1
    assert 1 + (m_eff - 1) * rho[0] == pytest.approx(design_effect(by_clinician, by_video)[0], rel=0.15)


def test_the_planned_size_holds_at_a_clustering_the_pilot_does_not_have():
    """Issue 44: a pilot of 1.8 videos per clinician (600 videos, 334 clinicians), a study planned at the
    benchmark's 12.8. Studies drawn afresh at the planned size (videos in clinicians of 12 or 13) give a median
    clinician-bootstrap CI half-width within 20% of the target; the plan that assumed the pilot's own clustering
    (1.8 per clinician) misses by more, so the test can fail. A pilot's own noise moves the plan too (about
    +/-15% in half-width at this pilot size), which is why the pilot is not smaller."""
    target, key = 0.08, DIMENSION_KEYS[0]
    pilot = _mappings(*_clustered_study(np.random.default_rng(0), [2] * 266 + [1] * 68))
    design = StudyDesign(videos_per_clinician=12.8, clinicians=100_000)
    entry = plan_icc(*pilot, half_width=target, design=design, n_resamples=200, seed=0)["dimensions"][key]
    naive = StudyDesign(videos_per_clinician=600 / 334, clinicians=100_000)
    naive_videos = plan_icc(*pilot, half_width=target, design=naive, n_resamples=200, seed=0)["dimensions"][key]
    assert entry["design_effect"] > 2 and entry["more_videos"] == entry["videos"] - 600
    low, high = entry["videos_needed_range"]
    assert low <= entry["videos"] <= high and entry["clinicians_needed_range"][1] == math.ceil(high / 12.8)
    # A smaller pilot (75 clinicians with two videos, not 266) pins the size more loosely.
    small = _mappings(*_clustered_study(np.random.default_rng(0), [2] * 75))
    loose = plan_icc(*small, half_width=target, design=design, n_resamples=200, seed=0)["dimensions"][key]
    assert loose["videos_needed_range"][1] / loose["videos_needed_range"][0] > high / low

    def realized(n_videos: int, n_clinicians: int) -> float:
        rng, widths = np.random.default_rng(100), []
        sizes = [n_videos // n_clinicians + (g < n_videos % n_clinicians) for g in range(n_clinicians)]
        for draw in range(40):
            videos, gold, judge = _clustered_study(rng, sizes)
            ratings = np.stack([gold, judge], axis=-1)[:, None, :]
            valid = np.ones((len(videos), 1), bool)
            reps = bootstrap_blocks(ratings, valid, make_resampling(videos, 400, draw, "clinician"))["icc"]
            low, high = percentile_ci(reps)[0]
            widths.append((high - low) / 2)
        return float(np.median(widths))

    assert realized(entry["videos"], entry["clinicians"]) == pytest.approx(target, rel=0.2)
    n_naive = naive_videos["videos"]
    assert realized(n_naive, math.ceil(n_naive / 12.8)) > 1.2 * target


def test_a_one_clinician_or_constant_pilot_gets_a_reason_not_a_size():
    """Issue 44: a one-clinician pilot gave a half-width of 0.0 and a design effect of 3.6e-30; a constant judge
    'needed' 24 videos. Now: refused (every dimension) or withheld (one dimension) with the counts."""
    videos, gold, judge = _clustered_study(np.random.default_rng(1), [20])
    with pytest.raises(DataError, match=r"1 clinician\(s\); a planned size needs at least 5"):
        plan_icc(*_mappings(videos, gold, judge), half_width=0.1, n_resamples=200)
    predictions, references = make_scores(n=160, seed=4, noise=0.5, unparsed=0.0)
    constant = {k: 3.0 for k in predictions}
    with pytest.raises(DataError, match="no spread"):
        plan_icc(constant, references, half_width=0.1, n_resamples=200)
    one_flat = {k: (3.0 if k[1] == DIMENSION_KEYS[0] else v) for k, v in predictions.items()}
    plan = plan_icc(one_flat, references, half_width=0.1, n_resamples=200)
    flat = plan["dimensions"][DIMENSION_KEYS[0]]
    assert flat["videos"] is None and "no spread" in flat["withheld"] and flat["bonett_videos"] is None
    assert all(plan["dimensions"][k]["videos"] for k in DIMENSION_KEYS[1:])
    # One video per clinician: no pair to estimate the clustering at 12.8 per clinician; fine at 1.
    single = _mappings(*_clustered_study(np.random.default_rng(2), [1] * 80))
    with pytest.raises(DataError, match=r"0 pilot clinician\(s\) with two or more videos"):
        plan_icc(*single, half_width=0.1, design=StudyDesign(clinicians=1000), n_resamples=200)
    alone = plan_icc(*single, half_width=0.1, design=StudyDesign(1.0, 1000), n_resamples=200)
    assert alone["dimensions"][DIMENSION_KEYS[0]]["videos"] is not None


@settings(max_examples=6, deadline=None)
@given(available=st.integers(20, 200))
def test_no_plan_asks_for_more_clinicians_than_exist(available):
    """Past --clinicians the size is withheld with the count it needs, and the half-width all of them reach is
    given (wider than the target) with a warning."""
    predictions, references = make_scores(n=160, seed=4, noise=0.5, unparsed=0.0)
    plan = plan_icc(predictions, references, half_width=0.04, design=StudyDesign(clinicians=available), n_resamples=200)
    for entry in plan["dimensions"].values():
        if entry["clinicians"] is None:
            assert f"{available} exist" in entry["withheld"] and entry["reachable_half_width"] > 0.04
        else:
            assert entry["clinicians"] <= available and entry["reachable_half_width"] <= 0.04 * 1.1
        assert entry["bonett_clinicians"] is None or entry["bonett_clinicians"] <= available
    assert any("cannot reach" in w for w in plan["warnings"]) == any(
        e["clinicians"] is None for e in plan["dimensions"].values()
    )
    with pytest.raises(UsageError, match="already has 20 clinicians"):
        plan_icc(predictions, references, half_width=0.04, design=StudyDesign(clinicians=19), n_resamples=200)


def test_label_planning_follows_the_floor_and_counts_the_labels_still_needed():
    predictions, gold = make_scores(n=400, seed=6, noise=0.35, unparsed=0.0)
    few = dict(list(gold.items())[: 8 * (MIN_LABELLED_VIDEOS - 1)])  # 9 labelled videos a dimension
    with pytest.raises(
        DataError, match=f"9 labelled video\\(s\\); a planned label count needs at least {MIN_LABELLED_VIDEOS}"
    ):
        plan_labels(predictions, few, half_width=0.1)
    pilot = {k: v for k, v in gold.items() if int(k[0][2:6]) < 1010}  # the first 80 videos, 10 clinicians
    plan = plan_labels(predictions, pilot, half_width=0.06)
    for entry in plan["dimensions"].values():
        assert entry["n_pilot_labelled"] == 80 and entry["n_pilot_clinicians"] == 10
        assert entry["more_labels"] == max(0, entry["ppi_labels"] - 80)
    flat = {k: 3.0 for k in pilot}
    with pytest.raises(DataError, match="same score"):
        plan_labels(predictions, flat, half_width=0.1)
    # 16 labelled videos, all of two clinicians: enough videos, too few clinicians.
    two = {k: v for k, v in gold.items() if int(k[0][2:6]) < 1002}
    with pytest.raises(DataError, match=r"2 clinician\(s\); a planned label count needs at least 5"):
        plan_labels(predictions, two, half_width=0.1)
