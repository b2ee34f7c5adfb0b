"""The one rule for when an uncertainty is reported (mis_icc_metric.reporting_floor)."""

from __future__ import annotations

import numpy as np
import pytest

from mis_icc_metric.reporting_floor import (
    MAX_UNDEFINED_SHARE,
    MIN_CI_CLUSTERS,
    MIN_CI_VIDEOS,
    MIN_LABELLED_VIDEOS,
    Support,
    guarded_interval,
    withhold_reason,
)


@pytest.mark.parametrize(
    ("support", "withheld"),
    [
        (Support(MIN_CI_VIDEOS - 1, 20), True),
        (Support(MIN_CI_VIDEOS, MIN_CI_CLUSTERS - 1), True),
        (Support(MIN_CI_VIDEOS, MIN_CI_CLUSTERS), False),
        (Support(50, 1, unit="video"), False),  # one clinician's videos by video: a CI about that clinician
        (Support(MIN_LABELLED_VIDEOS - 1, None, unit="labelled"), True),
        (Support(MIN_LABELLED_VIDEOS, None, unit="labelled"), False),
    ],
)
def test_withhold_reason_names_the_count_below_its_floor(support, withheld):
    reason = withhold_reason(support, "a p-value")
    assert (reason is not None) is withheld
    if withheld:
        assert "a p-value" in reason and str(min(support.n_videos, support.n_clusters or 10**9)) in reason


def test_one_clinician_resampled_gives_no_interval():
    # Resampling clinicians out of one draws that clinician every time: every resample equals the sample.
    samples = np.full(1000, 0.501)
    bounds, facts = guarded_interval(samples, Support(12, 1), [0.501, 0.501])
    assert bounds is None and "1 clinician" in facts["withheld"]


def test_zero_width_and_undefined_resamples_are_withheld_with_their_counts():
    support = Support(100, 30)
    assert guarded_interval(np.full(200, 0.3), support, [0.3, 0.3])[0] is None
    samples = np.linspace(0, 1, 1000)
    samples[: int(MAX_UNDEFINED_SHARE * 1000) + 1] = np.nan
    bounds, facts = guarded_interval(samples, support, [0.1, 0.9])
    assert bounds is None and facts["undefined"] == int(MAX_UNDEFINED_SHARE * 1000) + 1
    samples[: int(MAX_UNDEFINED_SHARE * 1000)] = np.nan
    samples[int(MAX_UNDEFINED_SHARE * 1000)] = 0.5
    bounds, facts = guarded_interval(samples, support, [0.1, 0.9])
    assert bounds == [0.1, 0.9] and facts["withheld"] is None


def test_a_counted_figure_may_be_constant_but_not_below_its_floor():
    # A judge that answers only whole points has a whole-point share of 1 in every resample: a fact, not a CI
    # claiming certainty the data lack; the floors still hold.
    constant = np.ones(500)
    assert guarded_interval(constant, Support(100, 30), [1.0, 1.0], counted=True)[0] == [1.0, 1.0]
    assert guarded_interval(constant, Support(100, 30), [1.0, 1.0])[0] is None
    assert guarded_interval(constant, Support(100, 2), [1.0, 1.0], counted=True)[0] is None
