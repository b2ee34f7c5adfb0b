"""The one reporting rule (`mis_icc_metric.reporting_floor`) in `score`, `compare` and `run --perturb`: on one
clinician's videos, two videos or a 2-clinician split no CI or p-value is shown as valid (the reason stands where
it would, in the text and the JSON); a healthy sample keeps its intervals, equal to an explicit loop's."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eval_scripts.cli import main
from eval_scripts.report.sensitivity_view import shift_table_lines
from mis_bench_dataset import DIMENSION_KEYS, STIMULI
from mis_icc_metric import ResamplingOptions, paired_comparison, perturbation_shift, score_predictions

from _independent import anova_icc, clinician_rows, grid, percentile_interval, replicates, two_sided_p
from _metric_helpers import make_scores, write_inputs

N_BOOT = 200


def _one_clinician(n_videos: int = 24, seed: int = 3):
    """`n_videos` videos of one clinician (three time points x eight stimuli), synthetic scores."""
    predictions, references = make_scores(n=n_videos, seed=seed, unparsed=0.0)
    rename = {v: f"CL1000_T{1 + i // 8}_{STIMULI[i % 8]}" for i, v in enumerate(sorted({v for v, _ in references}))}
    return (
        {(rename[v], d): x for (v, d), x in predictions.items()},
        {(rename[v], d): x for (v, d), x in references.items()},
    )


def _intervals(node, path=""):
    """Every [low, high] interval under a result (key ending in _ci, or "ci"), with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            if (key == "ci" or key.endswith("_ci")) and isinstance(value, list) and len(value) == 2:
                yield f"{path}.{key}", value
            else:
                yield from _intervals(value, f"{path}.{key}")


# ----------------------------------------------------------------------------- score


def test_score_on_one_clinicians_videos_withholds_every_interval_with_its_reason():
    predictions, references = _one_clinician()
    result = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=1))
    shown = dict(_intervals(result))
    assert not [where for where, (low, high) in shown.items() if high - low <= 0]  # no zero-width interval
    assert not [where for where in shown if "human_ceiling" not in where]  # and none resting on one clinician
    for entry in [*result["dimensions"].values(), result["overall"]]:
        assert entry["n_clusters"] == 1 and entry["icc"] == entry["icc"]  # the point value is still given
        for key in ("icc_ci", "mse_ci", "icc_ci_ftest"):
            assert entry[key] is None and entry["withheld"][key] == "1 clinician(s); a CI needs at least 5"
    assert result["mean_icc_ci"] is None and "1 clinician(s)" in result["withheld"]["mean_icc_ci"]
    assert result["meta"]["reporting_floor"]["min_ci_clinicians"] == 5
    assert "independent videos" in result["meta"]["ci_ftest"]


def test_score_cli_prints_the_reason_where_the_interval_would_stand(tmp_path, capsys):
    predictions, references = _one_clinician()
    dataset, paths = write_inputs(tmp_path, references, preds=predictions)
    args = ["score", "--predictions", str(paths["preds"]), "--references", str(dataset), "--bootstrap", str(N_BOOT)]
    assert main(args) == 0
    text = capsys.readouterr().out
    table = text.split("Agreement beyond")[0]  # the score table, before the other agreement statistics
    rows = [line for line in table.splitlines() if line.split()[:1] and line.split()[0] in {"VF", "All", "Emp."}]
    assert len(rows) == 3 and all("withheld: 1 clinician(s)" in row for row in rows)
    assert "Withheld (" in text and "a CI needs at least 5" in text and "[" not in rows[0].split("%")[0]
    assert main([*args, "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert saved["dimensions"]["empathy"]["icc_ci"] is None
    assert saved["dimensions"]["empathy"]["withheld"]["icc_ci"].startswith("1 clinician(s)")
    assert saved["meta"]["reporting_floor"]["max_undefined_share"] == pytest.approx(0.05)


def test_score_on_two_videos_withholds_by_video_count_whatever_the_unit():
    predictions, references = make_scores(n=2, seed=5, unparsed=0.0)
    for resample in ("clinician", "video"):
        result = score_predictions(
            predictions, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=1, resample=resample)
        )
        entry = result["dimensions"]["empathy"]
        assert entry["mse_ci"] is None and entry["withheld"]["mse_ci"] == "2 video(s); a CI needs at least 10"
        assert all(high > low for _, (low, high) in _intervals(result))


def test_score_by_video_on_one_clinician_is_a_ci_about_that_clinician():
    """Resampling videos (said in the output: as if independent) is not floored by clinicians: the rule's choice."""
    predictions, references = _one_clinician()
    result = score_predictions(
        predictions, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=1, resample="video")
    )
    entry = result["dimensions"]["empathy"]
    assert entry["icc_ci"][1] > entry["icc_ci"][0] and "icc_ci" not in entry["withheld"]


def test_a_healthy_sample_keeps_its_intervals_equal_to_the_loop():
    predictions, references = make_scores(n=80, seed=8, unparsed=0.0)  # 10 clinicians of 8 videos
    result = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=4))
    videos, pred, gold = grid(predictions, references, DIMENSION_KEYS)
    rows = clinician_rows(videos, N_BOOT, 4)
    for j, key in enumerate(DIMENSION_KEYS):
        entry = result["dimensions"][key]
        reps = replicates(rows, lambda row, j=j: anova_icc(pred[row, j], gold[row, j]))
        assert entry["icc_ci"] == pytest.approx(percentile_interval(reps), abs=1e-12), key
        assert entry["withheld"] == {} and entry["icc_ci_ftest"] is not None, key
    assert result["withheld"] == {} and result["mean_icc_ci"] is not None


# ----------------------------------------------------------------------------- compare


def _two_clinician_split():
    pred_a, references = make_scores(n=16, seed=6, noise=0.3, unparsed=0.0)  # CL1000 and CL1001, 8 videos each
    pred_b, _ = make_scores(n=16, seed=7, noise=0.9, unparsed=0.0)
    return pred_a, pred_b, references


def test_compare_on_a_two_clinician_split_withholds_the_p_value():
    pred_a, pred_b, references = _two_clinician_split()
    result = paired_comparison(pred_a, pred_b, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=2))
    for entry in [*result["dimensions"].values(), result["overall"], result["mean_icc"]]:
        assert entry["p_value"] is None and entry["delta_ci"] is None
        assert "2 clinician(s); a p-value needs at least 5" in entry["withheld"]["p_value"]
    assert result["meta"]["reporting_floor"]["min_ci_clinicians"] == 5


def test_compare_cli_prints_withheld_for_the_p_value(tmp_path, capsys):
    pred_a, pred_b, references = _two_clinician_split()
    dataset, paths = write_inputs(tmp_path, references, a=pred_a, b=pred_b)
    args = ["compare", str(paths["a"]), str(paths["b"]), "--references", str(dataset), "--bootstrap", str(N_BOOT)]
    assert main(args) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("All "))
    assert "withheld: 2 clinician(s)" in row and row.count("withheld") == 2
    assert "a p-value needs at least 5" in text
    assert main([*args, "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert saved["overall"]["p_value"] is None and saved["overall"]["withheld"]["p_value"]


def test_compare_on_a_healthy_split_keeps_p_values_equal_to_the_loop():
    pred_a, references = make_scores(n=64, seed=9, noise=0.3, unparsed=0.0)  # 8 clinicians
    pred_b, _ = make_scores(n=64, seed=10, noise=0.8, unparsed=0.0)
    result = paired_comparison(pred_a, pred_b, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=3))
    videos, a, gold = grid(pred_a, references, DIMENSION_KEYS)
    _, b, _ = grid(pred_b, references, DIMENSION_KEYS)
    rows = clinician_rows(videos, N_BOOT, 3)
    deltas = [anova_icc(a[row, 0], gold[row, 0]) - anova_icc(b[row, 0], gold[row, 0]) for row in rows]
    entry = result["dimensions"][DIMENSION_KEYS[0]]
    assert entry["p_value"] == pytest.approx(two_sided_p(deltas)) and entry["withheld"] == {}
    assert entry["delta_ci"] == pytest.approx(percentile_interval(deltas), abs=1e-12)


# ----------------------------------------------------------------------------- run --perturb


def _three_videos_of_one_clinician():
    videos = [f"CL1000_T1_{stimulus}" for stimulus in STIMULI[:3]]
    rng = np.random.default_rng(0)
    gold = {(v, d): float(np.round(rng.uniform(2, 5), 1)) for v in videos for d in DIMENSION_KEYS}
    base = {k: value + 0.3 for k, value in gold.items()}
    moved = {k: value + float(rng.choice([0.0, -0.6, 0.7])) for k, value in base.items()}
    return gold, base, moved


def test_perturb_on_three_videos_of_one_clinician_gives_no_shift_interval():
    gold, base, moved = _three_videos_of_one_clinician()
    table = perturbation_shift(base, moved, gold, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=0))
    entries = [*table["dimensions"].values(), table["mean"]]
    assert len(entries) == 9
    for entry in entries:
        for key in ("mean_shift_ci", "share_moved_ci", "icc_change_ci", "icc_change_p"):
            if key in entry:
                assert entry[key] is None, key
        assert "3 video(s); a CI needs at least 10" in entry["withheld"]["mean_shift_ci"]
    assert table["meta"]["reporting_floor"]["min_ci_videos"] == 10
    lines = shift_table_lines({"typos": table})
    assert sum("withheld: 3 video(s)" in line for line in lines) == 9
    assert any(line.startswith("Withheld (") and "a CI needs at least 10" in line for line in lines)


def test_perturb_on_one_clinicians_videos_is_floored_by_clinicians():
    base, gold = _one_clinician()
    moved = {k: value + (0.6 if i % 3 == 0 else 0.0) for i, (k, value) in enumerate(sorted(base.items()))}
    table = perturbation_shift(base, moved, gold, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=0))
    assert table["mean"]["mean_shift_ci"] is None and table["mean"]["icc_change_p"] is None
    assert table["mean"]["withheld"]["mean_shift_ci"] == "1 clinician(s); a CI needs at least 5"


# ----------------------------------------------------------------------------- score --retest


def test_retest_ci_counts_videos_not_rows():
    """Two videos x eight dimensions are 16 rows but 2 videos: the test-retest F-test CI is withheld."""
    from eval_scripts.harness.readout_agreement import run_agreement

    first, _ = make_scores(n=2, seed=11, unparsed=0.0)
    second = {key: value + 0.1 * (i % 3) for i, (key, value) in enumerate(sorted(first.items()))}
    block = run_agreement(first, second)
    assert block["n"] == 16 and block["icc"] is not None
    assert block["ci"] is None and block["withheld"] == "2 video(s); a CI needs at least 10"
    many, _ = make_scores(n=40, seed=12, unparsed=0.0)
    again = {key: value + 0.1 * (i % 3) for i, (key, value) in enumerate(sorted(many.items()))}
    healthy = run_agreement(many, again)
    assert healthy["withheld"] is None and healthy["ci"][0] < healthy["icc"] < healthy["ci"][1]


def test_score_text_counts_the_undefined_resamples(tmp_path, capsys):
    """A dimension parsed on few videos has resamples without an ICC: counted in the JSON and the text."""
    predictions, references = make_scores(n=64, seed=13, unparsed=0.0)  # 8 clinicians
    videos = sorted({v for v, _ in references})
    for video in videos[4:]:
        predictions[(video, "empathy")] = None  # empathy parsed on 4 videos of one clinician only
    dataset, paths = write_inputs(tmp_path, references, preds=predictions)
    args = ["score", "--predictions", str(paths["preds"]), "--references", str(dataset), "--bootstrap", str(N_BOOT)]
    assert main([*args, "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["dimensions"]["empathy"]
    assert entry["n_bootstrap_undefined"] > 0 and entry["icc_ci"] is None
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"Emp. {entry['n_bootstrap_undefined']:,}" in text and f"of {N_BOOT:,}:" in text


def test_the_reports_cross_validation_view_shows_a_withheld_ci_with_its_reason():
    from eval_scripts.report.crossval_view import crossval_table
    from mis_bench_dataset.dimensions import DIMENSION_KEYS

    def seed(mean, ci, withheld=None):
        return {"mean_icc": mean, "mean_icc_ci": ci, "withheld": withheld or {}, "fold_mean_icc": []}

    spread = {"mean": 0.3, "min": 0.2, "max": 0.4}
    doc = {
        "seeds": [0, 1],
        "runs": {
            "features": {
                "by_seed": {"0": seed(0.3, [0.2, 0.4]), "1": seed(0.31, None, {"mean_icc_ci": "3 clinician(s); x"})},
                "across_seeds": {"mean_icc": spread, "dimensions": dict.fromkeys(DIMENSION_KEYS, spread)},
            }
        },
    }
    row = crossval_table(doc, {"features": 0.35}).rows[0]
    assert row[2:4] == ["30.0 [20.0, 40.0]", "31.0 (withheld: 3 clinician(s))"]
