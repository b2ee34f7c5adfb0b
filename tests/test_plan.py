"""`mis-bench plan` (sample sizes from a pilot): Bonett (2002) against a published example and hand computations,
the resampled sizes against the ordinary bootstrap and the PPI++ simulation, CLI round trips and refusals.
Synthetic pilots (`tests/_metric_helpers.py`)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_estimate import _write

from eval_scripts.cli import main
from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_icc_metric.bootstrap import bootstrap_blocks, percentile_ci
from mis_icc_metric.estimates import ppi_coverage_simulation
from mis_icc_metric.planning import (
    SizedDraws,
    _pilot,
    _units,
    bonett_sample_size,
    icc_variance_factor,
    plan_difference,
    plan_icc,
    plan_labels,
)
from mis_icc_metric.resampling import make_resampling

from _metric_helpers import make_scores, video_ids

Z95 = 1.959963984540054  # the 97.5% normal quantile, written out


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


@pytest.mark.slow  # five plans and checks at 2,000 resamples: about 6 s
def test_the_planned_size_gives_the_half_width():
    """Fresh resamples at the planned size (another seed) reach the half-width; at two thirds of it they do not."""
    predictions, gold = make_scores(n=150, seed=2, noise=0.5, unparsed=0.0)
    plan = plan_icc(predictions, gold, half_width=0.08, unit="video", n_resamples=2000, seed=0)
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
    tighter = plan_icc(predictions, gold, half_width=0.05, unit="video", n_resamples=2000, seed=0)
    assert all(tighter["dimensions"][k]["videos"] > plan["dimensions"][k]["videos"] for k in keys)


def test_clinician_planning_counts_clinicians_at_the_pilots_videos_per_clinician():
    predictions, gold = make_scores(n=160, seed=4, noise=0.5, unparsed=0.0)
    by_video = plan_icc(predictions, gold, half_width=0.1, unit="video", n_resamples=1000)
    by_clinician = plan_icc(predictions, gold, half_width=0.1, unit="clinician", n_resamples=1000)
    assert by_clinician["pilot"]["videos_per_clinician"] == pytest.approx(8.0)
    for key, entry in by_clinician["dimensions"].items():
        assert entry["clinicians"] * 8 == entry["videos"]
        assert entry["bonett_videos"] == by_video["dimensions"][key]["bonett_videos"]


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
    small = plan_difference(a, b, gold, difference=0.1, unit="video", n_resamples=1000)
    large = plan_difference(a, b, gold, difference=0.2, unit="video", n_resamples=1000)
    vpc = small["pilot"]["videos_per_clinician"]
    for key, entry in small["dimensions"].items():
        assert entry["videos"] > large["dimensions"][key]["videos"]
        assert entry["analytic_videos"] > large["dimensions"][key]["analytic_videos"]
        assert entry["clinicians"] == math.ceil(entry["videos"] / vpc)  # videos resampled: clinicians from them
    by_clinician = plan_difference(a, b, gold, difference=0.2, unit="clinician", n_resamples=500)
    per_clinician = by_clinician["pilot"]["videos_per_clinician"]
    sized = [entry for entry in by_clinician["dimensions"].values() if entry["clinicians"] is not None]
    assert sized and all(e["videos"] == math.ceil(e["clinicians"] * per_clinician) for e in sized)


def test_the_cli_round_trip_and_refusals(tmp_path, capsys):
    pred, gold = _pilot_files(tmp_path)
    out = tmp_path / "plan.json"
    args = ["plan", "icc", "--predictions", str(pred), "--references", str(gold), "--half-width", "0.1"]
    assert main([*args, "--bootstrap", "300", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Bonett videos" in text and "resampling clinicians" in text and "not for therapist supervision" in text
    written = json.loads(out.read_text())
    assert written["target"] == "icc" and written["resampling"]["unit"] == "clinician"
    assert main(["plan", "difference", "--predictions", str(pred), "--references", str(gold)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["mis-bench plan: error: plan difference needs --difference and --compare; see mis-bench plan --help"]
    tiny = _write(tmp_path / "tiny.csv", "score", {(v, DIMENSION_KEYS[0]): 3.0 for v in video_ids(3)})
    assert main(["plan", "icc", "--predictions", str(pred), "--references", str(tiny), "--half-width", "0.1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "planning needs at least 10" in err[0]
