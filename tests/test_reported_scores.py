"""Every number `score_predictions`, `paired_comparison`, `mis-bench score` and `mis-bench compare`
report, checked against an independent computation (tests/_independent.py: pingouin's ICC(C,1), the
ANOVA mean squares by hand, a Python loop over the seeded resamples, np.percentile, scipy's F
quantiles, counting for the p-value), and the printed tables against the JSON they came from."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS, DIMENSIONS
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_icc_metric import ResamplingOptions, paired_comparison, score_predictions
from mis_icc_metric.reporting_floor import MAX_UNDEFINED_SHARE, MIN_CI_CLUSTERS, MIN_CI_VIDEOS

from _independent import (
    TABLE2_PERCENT,
    anova_icc,
    clinician_rows,
    ftest_ci,
    grid,
    overall_pairs,
    percentile_interval,
    pingouin_icc,
    replicates,
    two_sided_p,
)
from _metric_helpers import make_scores, write_inputs

N_BOOT = 300
SEED = 7
CONFIDENCE = 0.9
CLOSE = {"rel": 1e-9, "abs": 1e-12}


def _close(value, expected):
    return value == pytest.approx(expected, **CLOSE)


def _ruled(interval: list[float], reps, n_videos: int, n_clinicians: int) -> list[float]:
    """`interval` if the one rule (mis_icc_metric.reporting_floor, restated here from its documented numbers) lets
    it through, else [nan, nan] (withheld): resampling clinicians, at least MIN_CI_VIDEOS videos and
    MIN_CI_CLUSTERS clinicians, at most MAX_UNDEFINED_SHARE undefined resamples, a nonzero width."""
    undefined = sum(math.isnan(r) for r in reps)
    if (
        n_videos < MIN_CI_VIDEOS
        or n_clinicians < MIN_CI_CLUSTERS
        or undefined > MAX_UNDEFINED_SHARE * len(reps)
        or not interval[1] > interval[0]
    ):
        return [math.nan, math.nan]
    return interval


def _clinicians(videos, rows) -> int:
    return len({video.split("_")[0] for video, row in zip(videos, rows, strict=True) if row})


# ----------------------------------------------------------------------------- one system


@pytest.fixture(scope="module")
def case():
    """36 videos with unparsed outputs, one missing prediction, one missing gold label and one
    out-of-range prediction; scored with a common set, at confidence 0.9."""
    predictions, references = make_scores(n=36, seed=21, noise=0.5, unparsed=0.06)
    videos = sorted({v for v, _ in references})
    del references[(videos[4], "empathy")]
    del predictions[(videos[4], "empathy")]
    predictions[(videos[5], "abc")] = 5.4
    del predictions[(videos[6], "wau")]  # counted as unparsed (missing="unparsed")
    common = videos[::3]
    result = score_predictions(
        predictions,
        references,
        resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=SEED, confidence=CONFIDENCE),
        common_videos=common,
        missing="unparsed",
    )
    videos, pred, gold = grid(predictions, references, DIMENSION_KEYS)
    assert videos == sorted(videos) and len(videos) == 36
    return {
        "predictions": predictions,
        "references": references,
        "result": result,
        "videos": videos,
        "pred": pred,
        "gold": gold,
        "common": np.isin(videos, common),
        "indices": clinician_rows(videos, N_BOOT, SEED),  # the default: clinicians with all their videos
    }


def _dimension_replicates(case, usable: np.ndarray, pred: np.ndarray | None = None) -> list[list[float]]:
    """Per dimension, the ICC of every resample on the items `usable` marks (a Python loop)."""
    pred = case["pred"] if pred is None else pred
    gold = case["gold"]
    return [
        replicates(
            case["indices"], lambda row, j=j: anova_icc(pred[row, j][usable[row, j]], gold[row, j][usable[row, j]])
        )
        for j in range(len(DIMENSION_KEYS))
    ]


def _mean_over_dimensions(per_dimension: list[list[float]]) -> list[float]:
    """Each resample's mean of the eight dimension ICCs (NaN when any is undefined)."""
    return [float(np.mean(values)) for values in zip(*per_dimension, strict=True)]


def test_every_dimension_number(case):
    result, pred, gold = case["result"], case["pred"], case["gold"]
    parsed = ~np.isnan(pred) & ~np.isnan(gold)
    reps = _dimension_replicates(case, parsed)
    for j, key in enumerate(DIMENSION_KEYS):
        entry, ok = result["dimensions"][key], parsed[:, j]
        p, g = pred[ok, j], gold[ok, j]
        assert _close(entry["icc"], pingouin_icc(p, g)), key
        assert _close(entry["mse"], float(np.mean((p - g) ** 2))), key
        assert _close(entry["icc_ci_ftest"], ftest_ci(p, g, CONFIDENCE)), key
        assert _close(entry["icc_ci"], percentile_interval(reps[j], CONFIDENCE)), key
        mse_reps = replicates(
            case["indices"],
            lambda row, j=j: float(np.mean((pred[row, j][parsed[row, j]] - gold[row, j][parsed[row, j]]) ** 2)),
        )
        assert _close(entry["mse_ci"], percentile_interval(mse_reps, CONFIDENCE)), key
        assert entry["n_bootstrap_undefined"] == sum(np.isnan(reps[j]))
        labelled = ~np.isnan(gold[:, j])
        unparsed = labelled & np.isnan(pred[:, j])
        missing = sum((v, key) not in case["predictions"] for v in case["videos"] if (v, key) in case["references"])
        assert (entry["n"], entry["n_total"], entry["n_unparsed"], entry["n_missing"]) == (
            ok.sum(),
            labelled.sum(),
            unparsed.sum(),
            missing,
        ), key
        assert _close(entry["parse_rate"], (labelled.sum() - unparsed.sum()) / labelled.sum())
        assert result["parse_rates"][key] == entry["parse_rate"]
        assert entry["n_out_of_range"] == int(((p < 1) | (p > 5)).sum())
        icc, low, high = (v / 100 for v in TABLE2_PERCENT[key])
        assert entry["human_ceiling"] == {"icc": pytest.approx(icc), "icc_ci": pytest.approx([low, high])}
        # The gap is what is left to reach the human ceiling: ceiling minus the model's ICC.
        assert _close(entry["gap_to_ceiling"], icc - entry["icc"]), key
        assert (entry["gap_to_ceiling"] > 0) == (entry["icc"] < icc), key
    assert result["dimensions"]["abc"]["n_out_of_range"] == 1
    assert result["dimensions"]["wau"]["n_missing"] == 1
    assert {result["dimensions"][k]["gap_to_ceiling"] > 0 for k in DIMENSION_KEYS} == {True, False}  # both signs seen


def test_overall_and_mean_icc(case):
    result, pred, gold = case["result"], case["pred"], case["gold"]
    gold_complete = ~np.isnan(gold).any(axis=1)
    complete = gold_complete & ~np.isnan(pred).any(axis=1)
    p, g = overall_pairs(pred, gold, complete)
    overall = result["overall"]
    assert _close(overall["icc"], pingouin_icc(p, g))
    assert _close(overall["mse"], float(np.mean((p - g) ** 2)))
    reps = replicates(case["indices"], lambda row: anova_icc(*overall_pairs(pred[row], gold[row], complete[row])))
    assert _close(overall["icc_ci"], percentile_interval(reps, CONFIDENCE))
    mse_reps = replicates(
        case["indices"],
        lambda row: float(np.mean(np.subtract(*overall_pairs(pred[row], gold[row], complete[row])) ** 2)),
    )
    assert _close(overall["mse_ci"], percentile_interval(mse_reps, CONFIDENCE))
    n_labelled = int(gold_complete.sum())
    assert (overall["n"], overall["n_total"], overall["n_excluded"], overall["n_incomplete_gold"]) == (
        complete.sum(),
        n_labelled,
        n_labelled - complete.sum(),
        1,
    )
    assert _close(overall["excluded_rate"], (n_labelled - complete.sum()) / n_labelled)
    assert 0 < overall["excluded_rate"] < 1

    iccs = [result["dimensions"][k]["icc"] for k in DIMENSION_KEYS]
    assert _close(
        result["mean_icc"],
        sum(
            pingouin_icc(
                pred[:, j][~np.isnan(pred[:, j]) & ~np.isnan(gold[:, j])],
                gold[:, j][~np.isnan(pred[:, j]) & ~np.isnan(gold[:, j])],
            )
            for j in range(8)
        )
        / 8,
    )
    assert _close(result["mean_icc"], float(np.mean(iccs)))
    per_dimension = _dimension_replicates(case, ~np.isnan(pred) & ~np.isnan(gold))
    assert _close(result["mean_icc_ci"], percentile_interval(_mean_over_dimensions(per_dimension), CONFIDENCE))
    meta = result["meta"]
    assert (meta["n_videos"], meta["n_bootstrap"], meta["seed"], meta["confidence"]) == (36, N_BOOT, SEED, CONFIDENCE)
    assert meta["dimensions"] == list(DIMENSION_KEYS)


def test_midpoint_imputation_sensitivity(case):
    result, pred, gold = case["result"], case["pred"], case["gold"]
    labelled = ~np.isnan(gold)
    unparsed = labelled & np.isnan(pred)
    imputed = np.where(unparsed, 3.0, pred)
    sens = result["midpoint_imputation"]
    assert (sens["value"], sens["n_imputed"]) == (3.0, unparsed.sum())
    reps = _dimension_replicates(case, labelled, imputed)
    for j, key in enumerate(DIMENSION_KEYS):
        entry, ok = sens["dimensions"][key], labelled[:, j]
        assert _close(entry["icc"], pingouin_icc(imputed[ok, j], gold[ok, j])), key
        assert _close(entry["mse"], float(np.mean((imputed[ok, j] - gold[ok, j]) ** 2))), key
        assert _close(entry["icc_ci"], percentile_interval(reps[j], CONFIDENCE)), key
        assert (entry["n"], entry["n_imputed"]) == (ok.sum(), unparsed[:, j].sum())
    gold_complete = labelled.all(axis=1)
    p, g = overall_pairs(imputed, gold, gold_complete)
    assert _close(sens["overall"]["icc"], pingouin_icc(p, g))
    assert _close(sens["overall"]["mse"], float(np.mean((p - g) ** 2)))
    assert sens["overall"]["n"] == gold_complete.sum()
    overall_reps = replicates(
        case["indices"], lambda row: anova_icc(*overall_pairs(imputed[row], gold[row], gold_complete[row]))
    )
    assert _close(sens["overall"]["icc_ci"], percentile_interval(overall_reps, CONFIDENCE))
    assert _close(sens["mean_icc"], float(np.mean([sens["dimensions"][k]["icc"] for k in DIMENSION_KEYS])))
    assert _close(sens["mean_icc_ci"], percentile_interval(_mean_over_dimensions(reps), CONFIDENCE))


def test_common_set_sensitivity(case):
    result, pred, gold, common = case["result"], case["pred"], case["gold"], case["common"]
    parsed = ~np.isnan(pred) & ~np.isnan(gold)
    usable = parsed & common[:, None]
    videos, block = case["videos"], result["common_set"]
    assert block["n_videos"] == common.sum() == 12
    reps = _dimension_replicates(case, usable)
    for j, key in enumerate(DIMENSION_KEYS):
        entry, ok = block["dimensions"][key], usable[:, j]
        assert _close(entry["icc"], pingouin_icc(pred[ok, j], gold[ok, j])), key
        assert _close(entry["mse"], float(np.mean((pred[ok, j] - gold[ok, j]) ** 2))), key
        expected = _ruled(percentile_interval(reps[j], CONFIDENCE), reps[j], ok.sum(), _clinicians(videos, ok))
        assert _same(entry["icc_ci"], expected), key
        assert (entry["icc_ci"] is None) == bool(entry["withheld"].get("icc_ci")), key
        assert entry["n"] == ok.sum()
    complete = parsed.all(axis=1) & ~np.isnan(gold).any(axis=1) & common
    p, g = overall_pairs(pred, gold, complete)
    assert _close(block["overall"]["icc"], pingouin_icc(p, g)) and block["overall"]["n"] == complete.sum()
    overall_reps = replicates(
        case["indices"], lambda row: anova_icc(*overall_pairs(pred[row], gold[row], complete[row]))
    )
    expected = percentile_interval(overall_reps, CONFIDENCE)
    assert _same(
        block["overall"]["icc_ci"], _ruled(expected, overall_reps, complete.sum(), _clinicians(videos, complete))
    )
    assert _close(block["mean_icc"], float(np.mean([block["dimensions"][k]["icc"] for k in DIMENSION_KEYS])))
    mean_reps = _mean_over_dimensions(reps)
    fewest = min(usable.sum(axis=0)), min(_clinicians(videos, usable[:, j]) for j in range(8))
    assert _same(block["mean_icc_ci"], _ruled(percentile_interval(mean_reps, CONFIDENCE), mean_reps, *fewest))
    # a common set of 12 videos sits at the floor: the rule withholds some of its intervals, and says why
    assert any(entry["withheld"] for entry in [*block["dimensions"].values(), block["overall"]])


def _same(value, expected) -> bool:
    """Equal to 1e-9, with undefined (None / NaN) equal only to undefined."""
    expected = expected if isinstance(expected, list) else [expected]
    if value is None:  # an undefined number or interval
        return all(math.isnan(b) for b in expected)
    value = [math.nan if v is None else v for v in (value if isinstance(value, list) else [value])]
    return len(value) == len(expected) and all(
        (math.isnan(a) and math.isnan(b)) or (not math.isnan(a) and not math.isnan(b) and abs(a - b) <= 1e-9)
        for a, b in zip(value, expected, strict=True)
    )


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(4, 14), st.floats(0.0, 0.5))
def test_property_small_samples_every_interval_equals_the_loop(seed, n, unparsed):
    """Few videos and many unparsed outputs: resamples with one usable video, copies of one video,
    no variance. Every interval and count still equals the loop's (undefined where it is undefined)."""
    predictions, references = make_scores(n=n, seed=seed, unparsed=unparsed)
    own = {
        video: f"CL{2000 + i}_{video.split('_', 1)[1]}" for i, video in enumerate(sorted({v for v, _ in references}))
    }
    predictions = {(own[v], d): x for (v, d), x in predictions.items()}  # a clinician each: n clinicians, so
    references = {(own[v], d): x for (v, d), x in references.items()}  # the floor is met from 10 videos on
    result = json_safe(
        score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=60, seed=seed))
    )
    videos, pred, gold = grid(predictions, references, DIMENSION_KEYS)
    indices = clinician_rows(videos, 60, seed)
    parsed = ~np.isnan(pred)
    per_dimension = []
    for j, key in enumerate(DIMENSION_KEYS):
        entry, ok = result["dimensions"][key], parsed[:, j]
        reps = replicates(
            indices, lambda row, j=j: anova_icc(pred[row, j][parsed[row, j]], gold[row, j][parsed[row, j]])
        )
        per_dimension.append(reps)
        point = anova_icc(pred[ok, j], gold[ok, j]) if ok.sum() >= 3 else math.nan
        assert _same(entry["icc"], point), key
        ruled = _ruled(percentile_interval(reps), reps, ok.sum(), ok.sum()) if ok.sum() else [math.nan] * 2
        assert _same(entry["icc_ci"], [math.nan, math.nan] if math.isnan(point) else ruled), key
        if ok.sum() >= 3:
            assert entry["n_bootstrap_undefined"] == sum(np.isnan(reps)), key
    complete = parsed.all(axis=1)
    reps = replicates(indices, lambda row: anova_icc(*overall_pairs(pred[row], gold[row], complete[row])))
    point = anova_icc(*overall_pairs(pred, gold, complete)) if complete.sum() >= 3 else math.nan
    assert _same(result["overall"]["icc"], point)
    ruled = _ruled(percentile_interval(reps), reps, complete.sum(), complete.sum()) if complete.sum() else None
    assert _same(result["overall"]["icc_ci"], [math.nan, math.nan] if math.isnan(point) else ruled)
    mean = float(
        np.mean(
            [
                anova_icc(pred[parsed[:, j], j], gold[parsed[:, j], j]) if parsed[:, j].sum() >= 3 else math.nan
                for j in range(8)
            ]
        )
    )
    assert _same(result["mean_icc"], mean)
    mean_reps = _mean_over_dimensions(per_dimension)
    fewest = int(parsed.sum(axis=0).min())
    ruled = _ruled(percentile_interval(mean_reps), mean_reps, fewest, fewest) if not math.isnan(mean) else None
    assert _same(result["mean_icc_ci"], [math.nan, math.nan] if math.isnan(mean) else ruled)


# ----------------------------------------------------------------------------- paired comparison


def test_paired_comparison_numbers():
    pred_a, references = make_scores(n=40, seed=31, noise=0.35, unparsed=0.05)
    pred_b, _ = make_scores(n=40, seed=32, noise=0.8, unparsed=0.05)
    result = paired_comparison(
        pred_a,
        pred_b,
        references,
        resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=SEED, confidence=CONFIDENCE),
        names=("sys-a", "sys-b"),
    )
    videos, a, gold = grid(pred_a, references, DIMENSION_KEYS)
    _, b, _ = grid(pred_b, references, DIMENSION_KEYS)
    indices = clinician_rows(videos, N_BOOT, SEED)
    both = ~np.isnan(a) & ~np.isnan(b)
    per_dimension = []
    for j, key in enumerate(DIMENSION_KEYS):
        ok = both[:, j]
        entry = result["dimensions"][key]
        icc_a, icc_b = pingouin_icc(a[ok, j], gold[ok, j]), pingouin_icc(b[ok, j], gold[ok, j])
        assert _close(entry["icc_a"], icc_a) and _close(entry["icc_b"], icc_b), key
        assert _close(entry["delta"], icc_a - icc_b) and entry["n"] == ok.sum(), key
        deltas = replicates(
            indices,
            lambda row, j=j: (
                anova_icc(a[row, j][both[row, j]], gold[row, j][both[row, j]])
                - anova_icc(b[row, j][both[row, j]], gold[row, j][both[row, j]])
            ),
        )
        per_dimension.append(deltas)
        assert _close(entry["delta_ci"], percentile_interval(deltas, CONFIDENCE)), key
        assert _close(entry["p_value"], two_sided_p(deltas)), key
        assert (entry["name"], entry["abbreviation"]) == (DIMENSIONS[j].name, DIMENSIONS[j].abbreviation)
    complete = both.all(axis=1)
    icc_a = pingouin_icc(*overall_pairs(a, gold, complete))
    icc_b = pingouin_icc(*overall_pairs(b, gold, complete))
    overall = result["overall"]
    assert _close(overall["icc_a"], icc_a) and _close(overall["icc_b"], icc_b)
    assert _close(overall["delta"], icc_a - icc_b) and overall["delta"] > 0 and overall["n"] == complete.sum()
    deltas = replicates(
        indices,
        lambda row: (
            anova_icc(*overall_pairs(a[row], gold[row], complete[row]))
            - anova_icc(*overall_pairs(b[row], gold[row], complete[row]))
        ),
    )
    assert _close(overall["delta_ci"], percentile_interval(deltas, CONFIDENCE))
    assert _close(overall["p_value"], two_sided_p(deltas))
    mean = result["mean_icc"]
    assert _close(mean["icc_a"], np.mean([result["dimensions"][k]["icc_a"] for k in DIMENSION_KEYS]))
    assert _close(mean["icc_b"], np.mean([result["dimensions"][k]["icc_b"] for k in DIMENSION_KEYS]))
    assert _close(mean["delta"], mean["icc_a"] - mean["icc_b"])
    mean_deltas = _mean_over_dimensions(per_dimension)
    assert _close(mean["delta_ci"], percentile_interval(mean_deltas, CONFIDENCE))
    assert _close(mean["p_value"], two_sided_p(mean_deltas))
    assert result["systems"] == {"a": "sys-a", "b": "sys-b"}
    assert (result["meta"]["n_bootstrap"], result["meta"]["seed"], result["meta"]["n_videos"]) == (N_BOOT, SEED, 40)
    # Swapping the systems flips every difference and keeps every p-value.
    swapped = paired_comparison(
        pred_b, pred_a, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=SEED, confidence=CONFIDENCE)
    )
    assert _close(swapped["overall"]["delta"], -overall["delta"])
    assert _close(swapped["overall"]["delta_ci"], [-overall["delta_ci"][1], -overall["delta_ci"][0]])
    assert _close(swapped["overall"]["p_value"], overall["p_value"])


# ----------------------------------------------------------------------------- the printed tables

PERCENT = r"-?\d+\.\d"
CI = rf"\[\s*({PERCENT}),\s*({PERCENT})\]"


def _shows_percent(text: str, value: float) -> bool:
    """One decimal of the value in percent, rounded to nearest (what the tables document)."""
    return bool(re.fullmatch(PERCENT, text)) and abs(float(text) - 100 * value) <= 0.05 + 1e-9


def _shows_number(text: str, value: float, digits: int) -> bool:
    return bool(re.fullmatch(rf"-?\d+\.\d{{{digits}}}", text)) and abs(float(text) - value) <= 0.5 * 10**-digits + 1e-12


def _shows_ci(low: str, high: str, ci: list[float]) -> bool:
    return _shows_percent(low, ci[0]) and _shows_percent(high, ci[1])


def test_score_cli_prints_what_the_json_holds(tmp_path, capsys):
    predictions, references = make_scores(n=48, seed=41, noise=0.5, unparsed=0.08)  # 6 clinicians: CIs shown
    dataset, paths = write_inputs(tmp_path, references, preds=predictions)
    common = tmp_path / "common.txt"
    common.write_text("\n".join(sorted({v for v, _ in references})[::2]) + "\n")
    out = tmp_path / "scores.json"
    assert (
        main(
            [
                "score",
                "--predictions",
                str(paths["preds"]),
                "--references",
                str(dataset),
                "--bootstrap",
                str(N_BOOT),
                "--seed",
                str(SEED),
                "--common-videos",
                str(common),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out.splitlines()
    saved = json.loads(out.read_text())
    direct = json_safe(
        score_predictions(
            predictions,
            references,
            resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=SEED),
            common_videos=sorted({v for v, _ in references})[::2],
        )
    )
    # a folder without a build report is not marked synthetic (the build report's rule)
    assert saved["left_aside"]["n_pairs"] == 0  # every predicted pair has gold: none left aside
    assert saved == json.loads(
        json.dumps({**direct, "meta": saved["meta"], "synthetic": False, "left_aside": saved["left_aside"]})
    )
    row = re.compile(
        rf"^(\S+)\s+({PERCENT})\s+{CI}\s+(\d+\.\d{{3}})\s+(\d+)\s+(\d+)\s+(\d+\.\d\d)\s+({PERCENT})%\s+({PERCENT})\s+{CI}$"
    )
    rows = {m.group(1): m.groups()[1:] for m in map(row.match, printed) if m}
    assert list(rows) == [d.abbreviation for d in DIMENSIONS]
    for dim in DIMENSIONS:
        entry = saved["dimensions"][dim.key]
        icc, low, high, mse, n, clinicians, deff, parsed, ceiling, ceiling_low, ceiling_high = rows[dim.abbreviation]
        assert _shows_percent(icc, entry["icc"]) and _shows_ci(low, high, entry["icc_ci"]), dim.key
        assert _shows_number(mse, entry["mse"], 3) and int(n) == entry["n"], dim.key
        assert int(clinicians) == entry["n_clusters"] and _shows_number(deff, entry["design_effect"], 2), dim.key
        assert _shows_percent(parsed, entry["parse_rate"]), dim.key
        assert (float(ceiling), float(ceiling_low), float(ceiling_high)) == TABLE2_PERCENT[dim.key]
    overall = saved["overall"]
    match = next(
        m
        for m in (
            re.match(
                rf"^All\s+({PERCENT})\s+{CI}\s+(\d+\.\d{{3}})\s+(\d+) excluded ({PERCENT})% "
                r"of (\d+) videos$",
                line,
            )
            for line in printed
        )
        if m
    )
    icc, low, high, mse, n, excluded, total = match.groups()
    assert _shows_percent(icc, overall["icc"]) and _shows_ci(low, high, overall["icc_ci"])
    assert _shows_number(mse, overall["mse"], 3) and int(n) == overall["n"] and int(total) == overall["n_total"]
    assert _shows_percent(excluded, overall["excluded_rate"]) and overall["excluded_rate"] > 0
    match = next(m for m in (re.match(rf"^Mean ICC over dimensions: ({PERCENT}) {CI}$", line) for line in printed) if m)
    assert _shows_percent(match.group(1), saved["mean_icc"]) and _shows_ci(*match.groups()[1:], saved["mean_icc_ci"])
    sens = saved["midpoint_imputation"]
    match = next(
        m
        for m in (
            re.match(
                rf"^Sensitivity, (\d+) unparsed imputed with 3.0: overall ({PERCENT}) {CI}, "
                rf"mean ICC ({PERCENT})$",
                line,
            )
            for line in printed
        )
        if m
    )
    assert int(match.group(1)) == sens["n_imputed"] > 0
    assert _shows_percent(match.group(2), sens["overall"]["icc"])
    assert _shows_ci(match.group(3), match.group(4), sens["overall"]["icc_ci"])
    assert _shows_percent(match.group(5), sens["mean_icc"])
    block = saved["common_set"]
    match = next(
        m
        for m in (
            re.match(rf"^Common set of (\d+) videos: overall ({PERCENT}) {CI}, mean ICC ({PERCENT})$", line)
            for line in printed
        )
        if m
    )
    assert int(match.group(1)) == block["n_videos"] == 24
    assert _shows_percent(match.group(2), block["overall"]["icc"])
    assert _shows_ci(match.group(3), match.group(4), block["overall"]["icc_ci"])
    assert _shows_percent(match.group(5), block["mean_icc"])


def test_compare_cli_prints_what_the_json_holds(tmp_path, capsys):
    pred_b, references = make_scores(n=48, seed=51, noise=0.3, unparsed=0.04)  # 6 clinicians: CIs shown
    pred_a, _ = make_scores(n=48, seed=52, noise=0.3, unparsed=0.04)  # made for other gold scores: far worse
    dataset, paths = write_inputs(tmp_path, references, a=pred_a, b=pred_b)
    out = tmp_path / "cmp.json"
    assert (
        main(
            [
                "compare",
                str(paths["a"]),
                str(paths["b"]),
                "--references",
                str(dataset),
                "--bootstrap",
                str(N_BOOT),
                "--seed",
                str(SEED),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out.splitlines()
    saved = json.loads(out.read_text())
    direct = json.loads(
        json.dumps(
            json_safe(
                paired_comparison(
                    pred_a, pred_b, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=SEED)
                )
            )
        )
    )
    assert saved["dimensions"] == direct["dimensions"] and saved["overall"] == direct["overall"]
    assert saved["mean_icc"] == direct["mean_icc"]
    assert saved["overall"]["delta"] < 0  # A is the noisier system
    row = re.compile(
        rf"^(\S+)\s+({PERCENT})\s+({PERCENT})\s+({PERCENT})\s+{CI}\s+(\d\.\d{{4}})\s*(\d*)\s*(\d*)\s*(\d+\.\d\d)?$"
    )
    rows = {m.group(1): m.groups()[1:] for m in map(row.match, printed) if m}
    assert list(rows) == [d.abbreviation for d in DIMENSIONS] + ["All", "Mean"]
    blocks = [saved["dimensions"][d.key] for d in DIMENSIONS] + [saved["overall"], saved["mean_icc"]]
    for label, entry in zip(rows, blocks, strict=True):
        icc_a, icc_b, delta, low, high, p_value, n, clinicians, deff = rows[label]
        if label != "Mean":
            assert int(clinicians) == entry["n_clusters"] and _shows_number(deff, entry["design_effect"], 2), label
        assert _shows_percent(icc_a, entry["icc_a"]) and _shows_percent(icc_b, entry["icc_b"]), label
        assert _shows_percent(delta, entry["delta"]) and _shows_ci(low, high, entry["delta_ci"]), label
        assert _shows_number(p_value, entry["p_value"], 4), label
        assert (n == "") if label == "Mean" else int(n) == entry["n"], label
