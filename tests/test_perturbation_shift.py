"""The shift table (`mis_icc_metric.sensitivity.perturbation_shift`) against hand computations: the mean shift and
its clinician-resampled CI from an explicit loop over the plan's draws, the share moved by >= 0.5, the ICC
change from independent ANOVA ICCs; and `mis-bench run --perturb` on the text ridge writing it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import ResamplingOptions, make_resampling, perturbation_shift

from _independent import anova_icc, percentile_interval


def _arms(seed: int = 0, n_clinicians: int = 9, per_clinician: int = 4):
    rng = np.random.default_rng(seed)
    stimuli = ("Jessica", "Luke", "Bethany", "Savannah")
    videos = [f"ZZ10{c:02d}_T{1 + t % 3}_{stimuli[t]}" for c in range(n_clinicians) for t in range(per_clinician)]
    keys = [(v, d) for v in videos for d in DIMENSION_KEYS[:3]]
    gold = {k: float(np.round(rng.uniform(2, 5), 1)) for k in keys}
    base = {k: gold[k] + float(rng.normal(0, 0.4)) for k in keys}
    moved = {k: base[k] + float(rng.choice([0.0, 0.1, -0.6, 0.7])) for k in keys}
    return videos, gold, base, moved


def test_shift_table_equals_hand_computation() -> None:
    videos, gold, base, moved = _arms()
    table = perturbation_shift(base, moved, gold, resampling=ResamplingOptions(n_bootstrap=300, seed=5))
    plan = make_resampling(sorted(videos), 300, 5, "clinician")
    clinician_of = {v: v.split("_")[0] for v in videos}
    by_clinician = {name: sorted(v for v in videos if clinician_of[v] == name) for name in plan.cluster_names}
    for key in DIMENSION_KEYS[:3]:
        diffs = {v: moved[(v, key)] - base[(v, key)] for v in videos}
        entry = table["dimensions"][key]
        assert entry["mean_shift"] == pytest.approx(np.mean(list(diffs.values())))
        assert entry["share_moved"] == pytest.approx(np.mean([abs(d) >= 0.5 - 1e-9 for d in diffs.values()]))
        replicates = []
        for draw in plan.draws:  # the reference: an explicit loop over resamples, clinicians with all their videos
            drawn = [v for c in draw for v in by_clinician[plan.cluster_names[c]]]
            replicates.append(np.mean([diffs[v] for v in drawn]))
        assert entry["mean_shift_ci"] == pytest.approx(percentile_interval(replicates))
        icc_before = anova_icc([base[(v, key)] for v in videos], [gold[(v, key)] for v in videos])
        icc_after = anova_icc([moved[(v, key)] for v in videos], [gold[(v, key)] for v in videos])
        assert entry["icc_change"] == pytest.approx(icc_after - icc_before)
        assert entry["icc_change_ci"][0] <= entry["icc_change"] <= entry["icc_change_ci"][1]
    assert table["meta"]["resampling"]["unit"] == "clinician" and table["meta"]["resampling"]["n_clusters"] == 9
    assert "not for therapist" in table["meta"]["purpose"]


def test_the_summary_pools_every_pair_when_dimensions_answer_different_numbers() -> None:
    """The summary's mean shift is over every pair both arms answered, and its CI is that same pooled mean in each
    resample (not the mean of the dimensions' means, which differs when their counts differ)."""
    videos, gold, base, moved = _arms()
    moved = {k: value for i, (k, value) in enumerate(sorted(moved.items())) if k[1] != "empathy" or i % 3}
    table = perturbation_shift(base, moved, gold, resampling=ResamplingOptions(n_bootstrap=200, seed=2))
    plan = make_resampling(sorted(videos), 200, 2, "clinician")
    rows = {name: sorted(v for v in videos if v.split("_")[0] == name) for name in plan.cluster_names}
    shift = {k: moved[k] - base[k] for k in moved if k in base and k in gold}
    assert table["mean"]["n"] == len(shift) and table["mean"]["mean_shift"] == pytest.approx(
        np.mean(list(shift.values()))
    )
    pooled = []
    for draw in plan.draws:
        drawn = [v for c in draw for v in rows[plan.cluster_names[c]]]
        pooled.append(np.mean([shift[(v, k)] for v in drawn for k in DIMENSION_KEYS if (v, k) in shift]))
    assert table["mean"]["mean_shift_ci"] == pytest.approx(percentile_interval(pooled))


def test_an_unchanged_arm_has_no_shift() -> None:
    _, gold, base, _ = _arms(1)
    table = perturbation_shift(base, dict(base), gold, resampling=ResamplingOptions(n_bootstrap=50, seed=0))
    mean = table["mean"]
    assert mean["mean_shift"] == 0 and mean["share_moved"] == 0 and mean["icc_change"] == pytest.approx(0)
    # every resample's shift is 0: a zero-width CI is withheld as degenerate (reporting_floor), never [0, 0]
    assert mean["mean_shift_ci"] is None and "zero width" in mean["withheld"]["mean_shift_ci"]


def test_run_perturb_on_the_text_ridge_writes_the_shift_table(synthetic_build, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    args = ["run", "--dataset", str(synthetic_build), "--perturb", "first-half,no-fillers", "--bootstrap", "100"]
    assert main([*args, "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((out / "perturbations" / "text-ridge" / "shifts.json").read_text())
    assert printed["perturbations"] == written["perturbations"]
    table = written["perturbations"]["first-half"]
    assert table["meta"]["resampling"]["unit"] == "clinician"
    assert set(table["dimensions"]) == set(DIMENSION_KEYS)
    assert table["perturbation"] == {
        "name": "first-half",
        "kind": "transcript",
        "seed": 0,
        "description": "only the first half of the transcript's words",
    }
    # the perturbed arm is the same fitted ridge asked with each transcript cut: recomputed here independently
    from eval_scripts.answers.perturbations import first_half
    from eval_scripts.baselines.baseline_run import load_feature_rows
    from eval_scripts.baselines.models import make_baseline
    from mis_bench_dataset.dataset.loading import gold_references

    train, test = load_feature_rows(synthetic_build, "train"), load_feature_rows(synthetic_build, "test")
    model = make_baseline("features", "text").fit(train)
    before = model.predict(test)
    after = model.predict([{**row, "transcript": first_half(row["transcript"])} for row in test])
    gold = gold_references(test)
    key = DIMENSION_KEYS[2]
    diffs = [after[key][i] - before[key][i] for i, row in enumerate(test) if (row["video_id"], key) in gold]
    assert table["dimensions"][key]["mean_shift"] == pytest.approx(np.mean(diffs))
    markdown = (out / "perturbations" / "text-ridge" / "shifts.md").read_text()
    assert "| first-half | **mean** |" in markdown and "clinician" in markdown
    # four test videos: below the one rule's floor (reporting_floor), every shift CI and p-value is withheld, its
    # reason in the JSON and where the number would stand in the table, never a zero-width interval
    n_videos = len({row["video_id"] for row in test})
    assert n_videos < 10
    for entry in [*table["dimensions"].values(), table["mean"]]:
        assert entry["mean_shift_ci"] is None and entry["icc_change_p"] is None
        assert entry["withheld"]["mean_shift_ci"] == f"{n_videos} video(s); a CI needs at least 10"
    assert f"withheld: {n_videos} video(s)" in markdown and "a CI needs at least 10" in markdown
    assert table["meta"]["reporting_floor"]["min_ci_videos"] == 10
    assert (out / "perturbations" / "text-ridge" / "sensitivity.png").read_bytes()[:4] == b"\x89PNG"


def test_run_perturb_refuses_prompt_perturbations_for_the_ridge(synthetic_build, tmp_path, capsys) -> None:
    args = ["run", "--dataset", str(synthetic_build), "--perturb", "rubric-reversed", "--out", str(tmp_path / "o")]
    assert main(args) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert lines == [
        "mis-bench run: error: rubric-reversed changes the prompt, and the text ridge reads no prompt (--perturb); "
        "give it transcript perturbations only (no-fillers, add-fillers, asr-errors, first-half, padded)"
    ]


@pytest.mark.slow
def test_the_ridge_on_the_real_transcripts_reads_length_not_fillers(real_text_build) -> None:
    """What the Reproducing page says of the text ridge on the real data, as properties of its shift tables."""
    from eval_scripts.baselines.perturbed_ridge import ridge_sensitivity

    doc = ridge_sensitivity(
        real_text_build, ["no-fillers", "first-half", "padded"], resampling=ResamplingOptions(n_bootstrap=300)
    )
    tables = doc["perturbations"]
    assert doc["n_videos"] == 100
    assert tables["no-fillers"]["mean"]["mean_abs_shift"] < 0.01 and tables["no-fillers"]["mean"]["share_moved"] == 0
    first_half = tables["first-half"]
    assert first_half["mean"]["mean_shift_ci"][1] < 0  # shorter transcripts score lower, clearly
    assert sum(e["mean_shift"] < -0.1 for e in first_half["dimensions"].values()) == 7
    assert tables["padded"]["mean"]["mean_shift_ci"][0] > 0  # longer ones higher
    assert first_half["meta"]["resampling"]["unit"] == "clinician"
