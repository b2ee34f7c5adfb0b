"""Agreement by subgroup and at the therapist level (`mis_icc_metric.groups`) against independent references:
pingouin's ICC on each group's subset and on the therapist means, statsmodels' cluster-robust Wald test, scipy's
one-way ANOVA, loops over resamples, hand computations; hypothesis properties (groups partition the items, a
permutation of the rows changes nothing). Synthetic scores, not real data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset import DIMENSION_KEYS, STIMULI, TIME_POINTS
from mis_icc_metric import ResamplingOptions
from mis_icc_metric.bootstrap import bootstrap_indices
from mis_icc_metric.groups import equal_bias_test, grouped_moments

from _independent import pingouin_icc


def clustered_scores(n_clinicians: int = 24, seed: int = 0, unparsed: float = 0.05):
    """(predictions, references) of clinicians with a few videos each at several time points and stimuli; the
    model is biased by time point and by clinician, so groups differ (synthetic)."""
    rng = np.random.default_rng(seed)
    predictions, references = {}, {}
    for c in range(n_clinicians):
        clinician_effect = rng.normal(0, 0.3)
        for t, time in enumerate(TIME_POINTS):
            if rng.random() < 0.2:
                continue
            for stimulus in rng.choice(STIMULI, size=int(rng.integers(1, 5)), replace=False):
                video = f"CL{1000 + c}_{time}_{stimulus}"
                for key in DIMENSION_KEYS:
                    gold = float(np.round(np.clip(rng.normal(3.5, 0.5), 1, 5), 1))
                    guess = gold + 0.2 * t + clinician_effect + rng.normal(0, 0.5)
                    references[(video, key)] = gold
                    parsed = rng.random() >= unparsed
                    predictions[(video, key)] = float(np.round(np.clip(guess, 1, 5), 1)) if parsed else None
    return predictions, references


def _arrays(n: int = 40, blocks: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    gold = rng.normal(3.5, 0.5, (n, blocks))
    pred = gold + rng.normal(0.2, 0.4, (n, blocks))
    ratings = np.stack([pred, gold], axis=-1)
    valid = rng.random((n, blocks)) > 0.1
    codes = rng.integers(0, 3, n)
    return ratings, valid, codes


def test_each_group_is_pingouins_icc_and_the_hand_bias_and_mae_of_its_subset():
    ratings, valid, codes = _arrays()
    point, _ = grouped_moments(ratings, valid, codes, 3)
    for g in range(3):
        for b in range(ratings.shape[1]):
            rows = valid[:, b] & (codes == g)
            pred, gold = ratings[rows, b, 0], ratings[rows, b, 1]
            assert point["icc3_1"][g, b] == pytest.approx(pingouin_icc(pred, gold), abs=1e-12)
            assert point["bias"][g, b] == pytest.approx(np.mean(pred - gold), abs=1e-12)
            assert point["mae"][g, b] == pytest.approx(np.mean(np.abs(pred - gold)), abs=1e-12)


def test_each_resample_of_each_group_is_the_statistic_of_the_resampled_rows():
    """The vectorised replicates equal a Python loop over the resamples: the rows each index row draws (a video
    drawn twice is two items), restricted to the group, scored by pingouin and by hand."""
    ratings, valid, codes = _arrays(n=30)
    indices = bootstrap_indices(30, 12, seed=3)
    _, boot = grouped_moments(ratings, valid, codes, 3, indices)
    for r in range(indices.shape[0]):
        drawn = indices[r].astype(int)
        for g in range(3):
            for b in range(ratings.shape[1]):
                rows = drawn[valid[drawn, b] & (codes[drawn] == g)]
                pred, gold = ratings[rows, b, 0], ratings[rows, b, 1]
                if len(rows) >= 2 and np.ptp(pred) > 0 and np.ptp(gold) > 0:
                    assert boot["icc3_1"][r, g, b] == pytest.approx(pingouin_icc(pred, gold), abs=1e-9)
                if len(rows):
                    assert boot["bias"][r, g, b] == pytest.approx(np.mean(pred - gold), abs=1e-12)
                    assert boot["mae"][r, g, b] == pytest.approx(np.mean(np.abs(pred - gold)), abs=1e-12)
                else:
                    assert math.isnan(boot["bias"][r, g, b])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_groups=st.integers(1, 6))
def test_groups_partition_the_items_and_a_permutation_of_rows_changes_nothing(seed, n_groups):
    ratings, valid, _ = _arrays(n=25, seed=seed)
    codes = np.random.default_rng(seed + 1).integers(0, n_groups, 25)
    point, _ = grouped_moments(ratings, valid, codes, n_groups)
    n = np.array([[np.sum(valid[:, b] & (codes == g)) for b in range(2)] for g in range(n_groups)])
    # The groups partition the items: the n-weighted mean of the group biases is the pooled bias.
    pooled = np.array([np.mean(ratings[valid[:, b], b, 0] - ratings[valid[:, b], b, 1]) for b in range(2)])
    weighted = np.nansum(np.where(n > 0, point["bias"] * n, 0.0), axis=0) / n.sum(axis=0)
    np.testing.assert_allclose(weighted, pooled, atol=1e-12)
    order = np.random.default_rng(seed + 2).permutation(25)
    permuted, _ = grouped_moments(ratings[order], valid[order], codes[order], n_groups)
    for key in ("icc3_1", "bias", "mae"):
        np.testing.assert_allclose(permuted[key], point[key], atol=1e-12, equal_nan=True)


def test_the_equal_bias_test_is_statsmodels_cluster_robust_wald_test():
    import statsmodels.api as sm

    rng = np.random.default_rng(1)
    n = 300
    groups, clusters = rng.integers(0, 4, n), rng.integers(0, 40, n)
    differences = rng.normal(size=n) + 0.3 * (groups == 1) + rng.normal(size=40)[clusters]
    ours = equal_bias_test(differences, groups, clusters)
    fit = sm.OLS(differences, np.eye(4)[groups]).fit(cov_type="cluster", cov_kwds={"groups": clusters}, use_t=True)
    contrast = np.hstack([-np.ones((3, 1)), np.eye(3)])
    wald = fit.wald_test(contrast, use_f=True, scalar=True)
    assert ours["statistic"] == pytest.approx(float(wald.fvalue), rel=1e-9)
    assert ours["p_value"] == pytest.approx(float(wald.pvalue), rel=1e-9)
    assert ours["df"] == [int(wald.df_num), int(wald.df_denom)] == [3, 39]
    np.testing.assert_allclose(ours["means"], fit.params, atol=1e-12)


def test_the_classical_equal_bias_test_is_scipys_one_way_anova():
    from scipy import stats

    rng = np.random.default_rng(2)
    groups = rng.integers(0, 5, 80)
    differences = rng.normal(size=80) + 0.5 * (groups == 2)
    ours = equal_bias_test(differences, groups, None)
    reference = stats.f_oneway(*[differences[groups == g] for g in range(5)])
    assert ours["statistic"] == pytest.approx(reference.statistic, rel=1e-12)
    assert ours["p_value"] == pytest.approx(reference.pvalue, rel=1e-9)


def test_one_group_gets_no_test_and_says_why():
    result = equal_bias_test(np.arange(5.0), np.zeros(5, int), np.arange(5))
    assert result["p_value"] is None and "fewer than two groups" in result["note"]


# ------------------------------------------------------------------------------------------ the API


def _pairs(predictions, references, key, rows=None):
    """The (prediction, gold) pairs `score` scores for dimension `key` (parsed), optionally only `rows` videos."""
    pairs = [
        (predictions[(v, k)], g)
        for (v, k), g in sorted(references.items())
        if k == key and predictions.get((v, k)) is not None and (rows is None or v in rows)
    ]
    return np.array([p for p, _ in pairs]), np.array([g for _, g in pairs])


def _group_of(video: str, by: str) -> str:
    clinician, time, stimulus = video.split("_")
    return {"clinician": clinician, "time_point": time, "stimulus": stimulus}[by]


@pytest.mark.parametrize("by", ["time_point", "stimulus"])
def test_subgroup_values_are_pingouins_icc_and_the_hand_bias_of_each_groups_pairs(by):
    from mis_icc_metric import subgroup_agreement

    predictions, references = clustered_scores()
    result = subgroup_agreement(predictions, references, by=by, resampling=ResamplingOptions(n_bootstrap=0))
    videos = {v for v, _ in references}
    assert result["meta"]["purpose"].startswith("for research on judges")
    for name in result["groups"]:
        rows = {v for v in videos if _group_of(v, by) == name}
        for key in ("verbal_fluency", "empathy"):
            pred, gold = _pairs(predictions, references, key, rows)
            cell = result["dimensions"][key]["groups"][name]
            assert cell["n"] == len(pred)
            if len(pred) >= 3:
                assert cell["icc"] == pytest.approx(pingouin_icc(pred, gold), abs=1e-12)
            assert cell["bias"] == pytest.approx(np.mean(pred - gold), abs=1e-12)
            assert cell["mae"] == pytest.approx(np.mean(np.abs(pred - gold)), abs=1e-12)
            assert cell["icc_ci"] is None  # no resamples asked
    # The groups partition the videos.
    assert sum(result["n_videos"].values()) == len(videos)


def test_clinician_resampled_group_cis_are_the_percentiles_of_a_loop_over_the_drawn_clinicians():
    """Each resample: the clinicians the shared draw names, each with all its videos (twice if drawn twice),
    restricted to the group; the CI is np.percentile of pingouin's ICC / the mean difference over them."""
    from mis_icc_metric import make_resampling, subgroup_agreement

    predictions, references = clustered_scores(n_clinicians=16, seed=4)
    result = subgroup_agreement(
        predictions, references, by="time_point", resampling=ResamplingOptions(n_bootstrap=40, seed=7)
    )
    assert result["meta"]["resampling"]["unit"] == "clinician"
    videos = sorted({v for v, _ in references})
    draw = make_resampling(videos, 40, 7, "clinician")
    key = "hope_and_pe"
    for name in result["groups"]:
        iccs, biases = [], []
        for row in draw.draws:
            drawn = [v for c in row for v in videos if v.split("_")[0] == draw.cluster_names[c]]
            pairs = [
                (predictions[(v, key)], references[(v, key)])
                for v in drawn
                if _group_of(v, "time_point") == name and predictions[(v, key)] is not None
            ]
            pred, gold = np.array([p for p, _ in pairs]), np.array([g for _, g in pairs])
            biases.append(np.mean(pred - gold) if len(pairs) else np.nan)
            iccs.append(pingouin_icc(pred, gold) if len(pairs) >= 2 and np.ptp(pred) > 0 else np.nan)
        cell = result["dimensions"][key]["groups"][name]
        biases = np.array(biases)
        np.testing.assert_allclose(cell["bias_ci"], np.percentile(biases[~np.isnan(biases)], [2.5, 97.5]), atol=1e-12)
        iccs = np.array(iccs)
        np.testing.assert_allclose(cell["icc_ci"], np.percentile(iccs[~np.isnan(iccs)], [2.5, 97.5]), atol=1e-9)


def test_the_equal_bias_test_of_the_api_is_statsmodels_on_the_scored_pairs():
    import statsmodels.api as sm

    from mis_icc_metric import subgroup_agreement

    predictions, references = clustered_scores(seed=5)
    result = subgroup_agreement(predictions, references, by="time_point", resampling=ResamplingOptions(n_bootstrap=0))
    key = "persuasiveness"
    scored = sorted(v for (v, k) in references if k == key and predictions[(v, k)] is not None)
    diff = np.array([predictions[(v, key)] - references[(v, key)] for v in scored])
    groups = np.array([TIME_POINTS.index(_group_of(v, "time_point")) for v in scored])
    clinicians = np.unique([v.split("_")[0] for v in scored], return_inverse=True)[1]
    fit = sm.OLS(diff, np.eye(3)[groups]).fit(cov_type="cluster", cov_kwds={"groups": clinicians}, use_t=True)
    wald = fit.wald_test(np.array([[-1, 1, 0], [-1, 0, 1]]), use_f=True, scalar=True)
    test = result["dimensions"][key]["equal_bias"]
    assert test["method"] == "cluster" and test["p_value"] == pytest.approx(float(wald.pvalue), rel=1e-9)
    assert result["meta"]["equal_bias_method"].startswith("Wald test")


def test_groups_too_small_for_a_ci_are_listed_with_their_values_never_dropped():
    from mis_icc_metric import subgroup_agreement
    from mis_icc_metric.groups import MIN_CI_VIDEOS

    predictions, references = clustered_scores(n_clinicians=10, seed=2)
    result = subgroup_agreement(
        predictions, references, by="clinician", resampling=ResamplingOptions(n_bootstrap=20, seed=0)
    )
    # Grouped by clinician, a clinician draw would keep or drop a whole group: the CIs resample videos.
    assert result["meta"]["resampling"]["unit"] == "video" and "whole group" in result["meta"]["resampling_note"]
    assert result["meta"]["equal_bias_method"].startswith("one-way ANOVA")
    listed = {(item["group"], item["block"]) for item in result["without_ci"]}
    assert listed  # some clinicians have fewer than MIN_CI_VIDEOS videos
    for block, entry in [*result["dimensions"].items(), ("overall", result["overall"])]:
        assert set(entry["groups"]) == set(result["groups"])  # every group present in every block
        for name, cell in entry["groups"].items():
            small = cell["n"] < MIN_CI_VIDEOS
            assert ((name, block) in listed) == (small and cell["n"] > 0)  # an empty cell has nothing to show
            assert (cell["no_ci_reason"] is not None) == small
            if small:
                assert cell["icc_ci"] is None and cell["bias_ci"] is None and not math.isnan(cell["bias"])


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000))
def test_the_order_of_the_input_pairs_changes_nothing(seed):
    from mis_icc_metric import subgroup_agreement, therapist_agreement

    predictions, references = clustered_scores(n_clinicians=8, seed=seed % 7)
    order = np.random.default_rng(seed).permutation(len(references))
    keys = list(references)
    shuffled_refs = {keys[i]: references[keys[i]] for i in order}
    shuffled_preds = {keys[i]: predictions[keys[i]] for i in order}
    for run in (
        lambda p, r: subgroup_agreement(p, r, by="stimulus", resampling=ResamplingOptions(n_bootstrap=15, seed=1)),
        lambda p, r: therapist_agreement(p, r, resampling=ResamplingOptions(n_bootstrap=15, seed=1)),
    ):
        assert repr(run(shuffled_preds, shuffled_refs)) == repr(run(predictions, references))


def test_therapist_means_and_changes_are_pingouins_icc_of_the_hand_averages():
    import pandas as pd

    from mis_icc_metric import therapist_agreement

    predictions, references = clustered_scores(n_clinicians=30, seed=3)
    result = therapist_agreement(predictions, references, resampling=ResamplingOptions(n_bootstrap=0))
    frame = pd.DataFrame(
        [
            {"clinician": v.split("_")[0], "time": v.split("_")[1], "key": k, "pred": predictions[(v, k)], "gold": g}
            for (v, k), g in references.items()
            if predictions[(v, k)] is not None
        ]
    )
    for key in ("abc", "arrr"):
        units = (
            frame[frame.key == key]
            .groupby(["clinician", "time"])
            .agg(pred=("pred", "mean"), gold=("gold", "mean"), n=("pred", "size"))
        )
        entry = result["therapists"]["dimensions"][key]
        assert entry["n"] == len(units)
        assert entry["icc"] == pytest.approx(pingouin_icc(units.pred, units.gold), abs=1e-12)
        assert entry["bias"] == pytest.approx((units.pred - units.gold).mean(), abs=1e-12)
        assert entry["mean_videos_per_unit"] == pytest.approx(units.n.mean(), abs=1e-12)
        wide = units.unstack("time")
        both = wide[wide.pred["T1"].notna() & wide.pred["T3"].notna()]
        change_pred, change_gold = both.pred["T3"] - both.pred["T1"], both.gold["T3"] - both.gold["T1"]
        change = result["change"]["dimensions"][key]
        assert change["n"] == change["n_clinicians"] == len(both)
        assert change["icc"] == pytest.approx(pingouin_icc(change_pred, change_gold), abs=1e-12)
        assert change["mae"] == pytest.approx(np.mean(np.abs(change_pred - change_gold)), abs=1e-12)


def test_therapist_cis_resample_clinicians_with_all_their_units_from_one_draw():
    """The therapist-level and change CIs: a loop over the draw's clinicians (each with all its units, twice if
    drawn twice), pingouin's ICC of the drawn therapist means and of the drawn changes, np.percentile."""
    import pandas as pd

    from mis_icc_metric import make_resampling, therapist_agreement

    predictions, references = clustered_scores(n_clinicians=20, seed=6)
    result = therapist_agreement(predictions, references, resampling=ResamplingOptions(n_bootstrap=30, seed=2))
    key = "wau"
    frame = pd.DataFrame(
        [
            {"clinician": v.split("_")[0], "time": v.split("_")[1], "pred": predictions[(v, k)], "gold": g}
            for (v, k), g in references.items()
            if k == key and predictions[(v, k)] is not None
        ]
    )
    units = frame.groupby(["clinician", "time"]).mean().reset_index()
    draw = make_resampling(sorted({v for v, _ in references}), 30, 2, "clinician")
    assert result["meta"]["resampling"]["unit"] == "clinician"
    unit_iccs, change_iccs = [], []
    wide = units.set_index(["clinician", "time"]).unstack("time")
    for row in draw.draws:
        names = [draw.cluster_names[c] for c in row]
        drawn = pd.concat([units[units.clinician == name] for name in names])
        unit_iccs.append(pingouin_icc(drawn.pred, drawn.gold))
        changes = [wide.loc[name] for name in names if not np.isnan(wide.loc[name].pred.get("T1", np.nan))]
        changes = [c for c in changes if not np.isnan(c.pred.get("T3", np.nan))]
        change_pred = np.array([c.pred["T3"] - c.pred["T1"] for c in changes])
        change_gold = np.array([c.gold["T3"] - c.gold["T1"] for c in changes])
        change_iccs.append(pingouin_icc(change_pred, change_gold) if len(changes) >= 2 else np.nan)
    np.testing.assert_allclose(
        result["therapists"]["dimensions"][key]["icc_ci"], np.percentile(unit_iccs, [2.5, 97.5]), atol=1e-9
    )
    change_iccs = np.array(change_iccs)
    np.testing.assert_allclose(
        result["change"]["dimensions"][key]["icc_ci"],
        np.percentile(change_iccs[~np.isnan(change_iccs)], [2.5, 97.5]),
        atol=1e-9,
    )


# ------------------------------------------------------------------------------------------ mis-bench score --by


def _score_files(tmp_path, predictions, references):
    from mis_icc_metric import write_predictions

    from _metric_helpers import write_scoring_dataset

    dataset = write_scoring_dataset(tmp_path / "ds", references)
    rows = [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items()]
    return write_predictions(tmp_path / "preds.csv", rows), dataset


def test_score_by_adds_the_apis_results_from_the_scores_own_draw_and_prints_them(tmp_path, capsys):
    import json

    from eval_scripts.cli import main
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import subgroup_agreement, therapist_agreement

    predictions, references = clustered_scores(n_clinicians=12, seed=8)
    preds, dataset = _score_files(tmp_path, predictions, references)
    argv = ["score", "--predictions", str(preds), "--references", str(dataset), "--bootstrap", "100", "--seed", "3"]
    assert main([*argv, "--by", "stimulus,therapist", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    expected = json_safe(
        subgroup_agreement(
            predictions, references, by="stimulus", resampling=ResamplingOptions(n_bootstrap=100, seed=3)
        )
    )
    assert doc["subgroups"]["stimulus"] == expected
    assert doc["therapist_level"] == json_safe(
        therapist_agreement(predictions, references, resampling=ResamplingOptions(n_bootstrap=100, seed=3))
    )
    # The subgroups' draw is the score's own: the same resampling plan.
    assert doc["subgroups"]["stimulus"]["meta"]["resampling"] == doc["meta"]["resampling"]
    assert main([*argv, "--by", "stimulus", "--resample", "video", "--json"]) == 0
    by_video = json.loads(capsys.readouterr().out)
    assert by_video["subgroups"]["stimulus"]["meta"]["resampling"] == by_video["meta"]["resampling"]
    assert by_video["meta"]["resampling"]["unit"] == "video"
    assert main([*argv, "--by", "stimulus"]) == 0
    printed = capsys.readouterr().out
    for name, cell in expected["overall"]["groups"].items():
        line = next(line for line in printed.splitlines() if line.startswith(name + " "))
        assert f"{100 * cell['icc']:.1f}" in line and f"{cell['bias']:+.2f}" in line
    assert printed.count("not for therapist supervision, training, hiring or patient-facing evaluation") == 1


def test_score_by_an_unknown_grouping_is_a_usage_error(tmp_path, capsys):
    from eval_scripts.cli import main

    predictions, references = clustered_scores(n_clinicians=4)
    preds, dataset = _score_files(tmp_path, predictions, references)
    assert main(["score", "--predictions", str(preds), "--references", str(dataset), "--by", "patient"]) == 2
    assert "time_point, stimulus, clinician, therapist" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ the report section


def test_the_report_section_shows_the_apis_numbers_for_each_best_configuration(tmp_path):
    import json

    from eval_scripts import ReportOptions, write_report
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import score_predictions, subgroup_agreement, therapist_agreement

    from _leaderboard_helpers import make_results

    predictions, references = clustered_scores(n_clinicians=12, seed=9)
    scores = json_safe(score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=30, seed=0)))
    results = [make_results(predictions, model="org/judge", scores=scores)]
    files = write_report(
        results,
        tmp_path / "out",
        ReportOptions(comparison_bootstrap=40, by=("time_point", "therapist")),
        references=references,
    )
    doc = json.loads(files.json.read_text())
    (by_time, therapists) = doc["subgroups"]
    assert by_time["by"] == "time_point" and therapists["by"] == "therapist"
    expected = json_safe(
        subgroup_agreement(
            predictions, references, by="time_point", resampling=ResamplingOptions(n_bootstrap=40, seed=0)
        )
    )
    assert by_time["result"] == expected
    assert therapists["result"] == json_safe(
        therapist_agreement(predictions, references, resampling=ResamplingOptions(n_bootstrap=40, seed=0))
    )
    markdown = files.markdown.read_text()
    section = markdown.split("Agreement by subgroup and at the therapist level", 1)[1]
    for name, cell in expected["overall"]["groups"].items():
        row = next(line for line in section.splitlines() if line.startswith(f"| {name} |"))
        assert f"{100 * cell['icc']:.1f} [{100 * cell['icc_ci'][0]:.1f}, {100 * cell['icc_ci'][1]:.1f}]" in row
    assert "not for therapist supervision, training, hiring or patient-facing evaluation" in section
    assert "Agreement by subgroup and at the therapist level" in files.html.read_text()


def test_the_report_refuses_subgroups_without_gold(tmp_path):
    from eval_scripts import ReportOptions, write_report
    from mis_bench_dataset.toolkit.errors import UsageError
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import score_predictions

    from _leaderboard_helpers import make_results

    predictions, references = clustered_scores(n_clinicians=4)
    results = [
        make_results(
            predictions,
            scores=json_safe(score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0))),
        )
    ]
    with pytest.raises(UsageError, match="needs the gold scores"):
        write_report(results, tmp_path / "out", ReportOptions(by=("stimulus",)))
    assert not (tmp_path / "out").exists()


def test_the_therapist_level_gives_no_ci_from_fewer_than_five_clinicians():
    """Twelve therapist units of four clinicians are enough units but not enough clinicians for a clinician-resampled
    CI, as for the subgroups (`MIN_CI_CLUSTERS`); seven clinicians are."""
    from mis_icc_metric import therapist_agreement
    from mis_icc_metric.groups import MIN_CI_CLUSTERS

    from _metric_helpers import make_scores

    few = therapist_agreement(*make_scores(n=32, seed=4, unparsed=0.0), resampling=ResamplingOptions(n_bootstrap=50))[
        "therapists"
    ]["overall"]
    assert few["n"] == 12 and few["icc_ci"] is None and not math.isnan(few["icc"])
    enough = therapist_agreement(
        *make_scores(n=56, seed=4, unparsed=0.0), resampling=ResamplingOptions(n_bootstrap=50)
    )["therapists"]["overall"]
    assert MIN_CI_CLUSTERS <= 56 // 8 and enough["icc_ci"] is not None
