"""`mis-bench estimate` (PPI++ means from a judge and a few expert labels): the CLI's numbers against ppi_py and
an independent clinician bootstrap, round trips and refusals. Synthetic data (`tests/_metric_helpers.py`)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS, parse_video_id
from mis_icc_metric import estimate_means, make_resampling, ppi_mean

from _metric_helpers import make_scores
from _ppi_reference import ppi_reference


def _write(path: Path, column: str, pairs: dict) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video_id", "dimension", column])
        for (video, dim), value in sorted(pairs.items()):
            writer.writerow([video, dim, "" if value is None else value])
    return path


@pytest.fixture()
def judge_and_experts(tmp_path):
    """A judge (offset +0.3) on 240 synthetic videos, experts on a random 48 of them: the two CSV files."""
    predictions, gold = make_scores(n=240, seed=5, noise=0.4, unparsed=0.0)
    rng = np.random.default_rng(1)
    videos = sorted({v for v, _ in gold})
    labelled = set(rng.choice(videos, 48, replace=False))
    judge = {key: round(value + 0.3, 1) for key, value in predictions.items()}
    experts = {key: value for key, value in gold.items() if key[0] in labelled}
    return _write(tmp_path / "judge.csv", "prediction", judge), _write(tmp_path / "experts.csv", "score", experts)


def _read(path: Path) -> dict:
    with path.open(encoding="utf-8") as handle:
        return {(row["video_id"], row["dimension"]): float(list(row.values())[2]) for row in csv.DictReader(handle)}


def _estimate(capsys, *args: str) -> dict:
    assert main(["estimate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow  # the ppi_py child process (about 6 s)
def test_the_cli_equals_ppi_py_per_dimension_per_group_and_between_groups(judge_and_experts, capsys):
    judge_file, experts_file = judge_and_experts
    result = _estimate(
        capsys,
        "--predictions",
        str(judge_file),
        "--references",
        str(experts_file),
        "--by",
        "time_point",
        "--bootstrap",
        "0",
    )
    judge, experts = _read(judge_file), _read(experts_file)
    cases, where = [], []
    for dim in DIMENSION_KEYS:
        videos = sorted(v for v, d in judge if d == dim)
        time = {v: parse_video_id(v).time_point for v in videos}
        for group in (None, "T1", "T2", "T3"):
            chosen = [v for v in videos if group is None or time[v] == group]
            lab = [v for v in chosen if (v, dim) in experts]
            unl = [v for v in chosen if (v, dim) not in experts]
            args = {
                "y": [experts[(v, dim)] for v in lab],
                "yhat": [judge[(v, dim)] for v in lab],
                "yhat_unlabeled": [judge[(v, dim)] for v in unl],
            }
            cases.append({"kind": "mean", "confidence": 0.95, "args": args})
            block = result["dimensions"][dim] if group is None else result["groups"][group][dim]
            where.append(block["ppi"])
            cases.append({"kind": "classical_mean", "confidence": 0.95, "args": {"y": args["y"]}})
            where.append(block["classical"])
        pair = [v for v in videos if time[v] in ("T1", "T3")]
        lab = [v for v in pair if (v, dim) in experts]
        unl = [v for v in pair if (v, dim) not in experts]
        args = {
            "y": [experts[(v, dim)] for v in lab],
            "yhat": [judge[(v, dim)] for v in lab],
            "yhat_unlabeled": [judge[(v, dim)] for v in unl],
            "in_b": [float(time[v] == "T3") for v in lab],
            "in_b_unlabeled": [float(time[v] == "T3") for v in unl],
        }
        for kind, name in (("difference", "ppi"), ("classical_difference", "classical")):
            cases.append({"kind": kind, "confidence": 0.95, "args": args})
            where.append(result["differences"]["T3 - T1"][dim][name])
    withheld = 0
    for block, expected in zip(where, ppi_reference(cases), strict=True):
        if block["ci"] is None:  # the floor rule: T1 has 7 labelled videos, under MIN_LABELLED_VIDEOS
            withheld += 1
            assert block["withheld"].startswith("7 labelled video(s)")
            np.testing.assert_allclose(block["estimate"], expected[0], atol=1e-6, rtol=0)
            continue
        np.testing.assert_allclose([block["estimate"], *block["ci"]], expected, atol=1e-6, rtol=0)
    assert withheld == 8 * 4  # per dimension: T1's and T3 - T1's PPI++ and experts-only CIs


def test_the_clustered_variant_equals_a_loop_over_clinician_resamples(judge_and_experts):
    """Each resample redrawn by hand: the drawn clinicians' videos, repeated as drawn, through `ppi_mean`."""
    judge_file, experts_file = judge_and_experts
    judge, experts = _read(judge_file), _read(experts_file)
    videos = sorted({v for v, _ in judge})
    resampling = make_resampling(videos, 150, 3, "clinician")
    result = estimate_means(judge, experts, resampling=resampling)
    clinicians = np.array([parse_video_id(v).clinician for v in videos])
    dim = DIMENSION_KEYS[2]
    replicates = []
    for draw in resampling.draws:
        drawn = [
            v for name in np.asarray(resampling.cluster_names)[draw] for v in np.asarray(videos)[clinicians == name]
        ]
        lab = [v for v in drawn if (v, dim) in experts]
        unl = [v for v in drawn if (v, dim) not in experts]
        replicates.append(
            ppi_mean(
                [experts[(v, dim)] for v in lab], [judge[(v, dim)] for v in lab], [judge[(v, dim)] for v in unl]
            ).estimate
        )
    expected = np.quantile(replicates, [0.025, 0.975])
    np.testing.assert_allclose(result["clustered"]["dimensions"][dim]["ci"], expected, atol=1e-10)
    assert result["clustered"]["resampling"]["unit"] == "clinician"


def test_text_and_out_file_say_what_the_ci_assumes(judge_and_experts, tmp_path, capsys):
    judge_file, experts_file = judge_and_experts
    out = tmp_path / "estimate.json"
    args = ["estimate", "--predictions", str(judge_file), "--references", str(experts_file), "--bootstrap", "200"]
    assert main([*args, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "CIs assume the CLT interval of PPI++" in text and "not for therapist supervision" in text
    assert "percentile bootstrap over clinicians" in text and "biased" in text
    written = json.loads(out.read_text())
    printed = _estimate(
        capsys, "--predictions", str(judge_file), "--references", str(experts_file), "--bootstrap", "200"
    )
    assert written["dimensions"] == printed["dimensions"] and written["clustered"] == printed["clustered"]
    # The judge's +0.3 offset: the judge-only mean is off, PPI++ is not (its CI covers the experts' mean).
    gold_mean = np.mean([v for (_, d), v in _read(experts_file).items() if d == DIMENSION_KEYS[0]])
    block = printed["dimensions"][DIMENSION_KEYS[0]]
    assert block["judge_only"]["biased"] is True
    assert abs(block["judge_only"]["estimate"] - gold_mean) > abs(block["ppi"]["estimate"] - gold_mean)


def test_an_expert_set_that_overlaps_nothing_is_one_line(judge_and_experts, tmp_path, capsys):
    judge_file, _ = judge_and_experts
    other = _write(tmp_path / "other.csv", "score", {("ZZ9999_T1_Sean", DIMENSION_KEYS[0]): 3.0})
    assert main(["estimate", "--predictions", str(judge_file), "--references", str(other)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no expert-labelled video is among the judge's videos" in err[0]


def test_groups_with_too_few_labels_are_listed_in_one_line(judge_and_experts, tmp_path, capsys):
    judge_file, experts_file = judge_and_experts
    kept = {key: value for key, value in _read(experts_file).items() if parse_video_id(key[0]).time_point != "T2"}
    one = next(k for k in _read(experts_file) if parse_video_id(k[0]).time_point == "T2" and k[1] == DIMENSION_KEYS[0])
    kept[one] = 3.0
    few = _write(tmp_path / "few.csv", "score", kept)
    assert main(["estimate", "--predictions", str(judge_file), "--references", str(few), "--by", "time_point"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "too few expert-labelled videos" in err[0] and "T2/VF: 1" in err[0] and "T2/H/PE: 0" in err[0]
    )


def test_the_coverage_simulation_equals_a_loop_over_draws():
    """`ppi_coverage_simulation` against `ppi_mean` and `classical_mean` draw by draw (the same random keys), and
    its coverage near the nominal level on synthetic data where the truth is known."""
    from mis_icc_metric import classical_mean, ppi_coverage_simulation

    predictions, gold = make_scores(n=400, seed=8, noise=0.4, unparsed=0.0)
    result = ppi_coverage_simulation(predictions, gold, share=0.1, n_draws=60, seed=4)
    videos = sorted({v for v, _ in gold})
    keys = np.random.default_rng(4).random((60, len(videos)))
    dim = DIMENSION_KEYS[1]
    y = np.array([gold[(v, dim)] for v in videos])
    yhat = np.array([predictions[(v, dim)] for v in videos])
    covered, widths, classical_covered = 0, [], 0
    for draw in keys:
        chosen = np.zeros(len(videos), bool)
        chosen[np.argsort(draw)[:40]] = True
        ppi = ppi_mean(y[chosen], yhat[chosen], yhat[~chosen])
        classical = classical_mean(y[chosen])
        covered += ppi.low <= y.mean() <= ppi.high
        classical_covered += classical.low <= y.mean() <= classical.high
        widths.append(ppi.width)
    entry = result["dimensions"][dim]
    assert entry["ppi_coverage"] == pytest.approx(covered / 60)
    assert entry["classical_coverage"] == pytest.approx(classical_covered / 60)
    assert entry["ppi_width"] == pytest.approx(np.mean(widths))
    assert entry["truth"] == pytest.approx(y.mean()) and entry["n_labelled"] == 40
    assert entry["judge_only_bias"] == pytest.approx(yhat.mean() - y.mean())  # judge minus gold, signed
    assert 0.85 <= result["pooled"]["ppi_coverage"] <= 1.0
