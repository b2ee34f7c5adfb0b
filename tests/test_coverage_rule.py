"""The coverage rule on synthetic partial prediction files: the pairs a file names are the ones evaluated,
parse rates are over them, the overall score uses only videos with all eight asked (or says why there is
none), and CSV (long and wide), JSONL (long and wide) and a results JSON give the same scores; `compare`,
`evaluate.load`, `report` and the leaderboard follow the same rule. Checked against pingouin."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_BY_KEY, DIMENSION_KEYS
from mis_icc_metric import ResamplingOptions, score_predictions
from mis_icc_metric.coverage import coverage_of

from _leaderboard_helpers import make_results
from _metric_helpers import pingouin_icc3_1, video_ids

VIDEOS = video_ids(15)  # 15 videos with gold; 12 asked, 3 never asked
FULLY_ASKED = VIDEOS[:6]


def _gold() -> dict[tuple[str, str], float]:
    rng = np.random.default_rng(3)
    return {(v, k): float(np.round(rng.uniform(1.5, 4.8), 1)) for v in VIDEOS for k in DIMENSION_KEYS}


def _asked() -> dict[tuple[str, str], float | None]:
    """Six videos fully asked (one with an unparsed answer), six with two to five dimensions, three not at all."""
    rng = np.random.default_rng(4)
    gold = _gold()
    asked = {}
    for i, video in enumerate(VIDEOS[:12]):
        keys = DIMENSION_KEYS if video in FULLY_ASKED else DIMENSION_KEYS[i % 4 : i % 4 + 2 + i % 4]
        for key in keys:
            asked[(video, key)] = float(np.round(np.clip(gold[(video, key)] + rng.normal(0, 0.5), 1, 5), 1))
    asked[(VIDEOS[1], "empathy")] = None  # asked, unparsed: excludes VIDEOS[1] from the overall score
    asked[(VIDEOS[8], "hope_and_pe")] = None
    return asked


def _write_gold(path) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video_id", "dimension", "score"])
        writer.writerows([v, k, s] for (v, k), s in sorted(_gold().items()))


def _write_forms(folder, asked) -> dict[str, object]:
    """The same predictions in five forms."""
    records = [{"video_id": v, "dimension": k, "prediction": p} for (v, k), p in sorted(asked.items())]
    files = {}
    files["long.csv"] = folder / "long.csv"
    with open(files["long.csv"], "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video_id", "dimension", "prediction"])
        writer.writerows(
            [r["video_id"], r["dimension"], "" if r["prediction"] is None else r["prediction"]] for r in records
        )
    files["long.jsonl"] = folder / "long.jsonl"
    files["long.jsonl"].write_text("".join(json.dumps(r) + "\n" for r in records))
    files["results.json"] = folder / "results.json"
    files["results.json"].write_text(json.dumps(make_results(asked)))
    videos = sorted({v for v, _ in asked})
    names = [DIMENSION_BY_KEY[k].name for k in DIMENSION_KEYS]
    files["wide.csv"] = folder / "wide.csv"  # the authors' layout: blank = not asked, a null token = unparsed
    with open(files["wide.csv"], "w", newline="", encoding="utf-8-sig") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video", *names])
        for v in videos:
            cells = [asked.get((v, k), "") for k in DIMENSION_KEYS]
            writer.writerow([f"data/FIS996/{v}", *("null" if c is None else c for c in cells)])
    files["wide.jsonl"] = folder / "wide.jsonl"  # an absent key = not asked, null = unparsed
    files["wide.jsonl"].write_text(
        "".join(
            json.dumps({"video_id": v, **{k: asked[(v, k)] for k in DIMENSION_KEYS if (v, k) in asked}}) + "\n"
            for v in videos
        )
    )
    return files


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    folder = tmp_path_factory.mktemp("coverage")
    _write_gold(folder / "gold.csv")
    results = {}
    for name, path in _write_forms(folder, _asked()).items():
        out = folder / f"{name}.scores.json"
        assert (
            main(
                [
                    "score",
                    "--predictions",
                    str(path),
                    "--references",
                    str(folder / "gold.csv"),
                    "--bootstrap",
                    "300",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        results[name] = json.loads(out.read_text())
    return folder, results


def test_every_form_gives_the_same_scores(scored):
    _, results = scored
    first = results["long.csv"]
    for name, result in results.items():
        for part in (
            "dimensions",
            "overall",
            "mean_icc",
            "mean_icc_ci",
            "coverage",
            "parse_rates",
            "midpoint_imputation",
        ):
            assert result[part] == first[part], (name, part)


def test_coverage_parse_rates_and_dimensions_are_over_the_asked_pairs(scored):
    _, results = scored
    result = results["long.csv"]
    asked, gold = _asked(), _gold()
    coverage = result["coverage"]
    assert (coverage["n_gold_pairs"], coverage["n_asked_pairs"]) == (len(gold), len(asked))
    assert (coverage["n_gold_videos"], coverage["n_asked_videos"], coverage["n_fully_asked_videos"]) == (15, 12, 6)
    assert result["meta"]["n_videos"] == 12  # the bootstrap resamples the asked videos
    for key in DIMENSION_KEYS:
        pairs = [(v, p) for (v, k), p in sorted(asked.items()) if k == key]
        parsed = [(v, p) for v, p in pairs if p is not None]
        entry = result["dimensions"][key]
        assert (entry["n_total"], entry["n"], entry["n_missing"]) == (len(pairs), len(parsed), 0)
        assert entry["parse_rate"] == pytest.approx(len(parsed) / len(pairs))
        reference, _ = pingouin_icc3_1(np.array([[p, gold[(v, key)]] for v, p in parsed]))
        assert entry["icc"] == pytest.approx(reference, abs=1e-9)


def test_overall_uses_only_the_videos_with_all_eight_asked(scored):
    _, results = scored
    overall = results["long.csv"]["overall"]
    asked, gold = _asked(), _gold()
    complete = [v for v in FULLY_ASKED if all(asked[(v, k)] is not None for k in DIMENSION_KEYS)]
    assert (overall["n_total"], overall["n"], overall["n_excluded"]) == (6, len(complete), 1)
    matrix = np.array(
        [
            [np.mean([asked[(v, k)] for k in DIMENSION_KEYS]), np.mean([gold[(v, k)] for k in DIMENSION_KEYS])]
            for v in complete
        ]
    )
    assert overall["icc"] == pytest.approx(pingouin_icc3_1(matrix)[0], abs=1e-9)
    assert results["long.csv"]["midpoint_imputation"]["n_imputed"] == 2  # the asked unparsed ones only


def test_no_fully_asked_video_means_no_overall_score_and_says_why(tmp_path, capsys):
    partial = {k: v for k, v in _asked().items() if k[0] not in FULLY_ASKED}
    result = score_predictions(partial, _gold(), resampling=ResamplingOptions(n_bootstrap=0))
    assert result["overall"]["icc"] is None or np.isnan(result["overall"]["icc"])
    assert result["overall"]["n_total"] == 0
    assert "no video has all eight dimensions asked (at most 5 per video)" in result["overall"]["note"]
    _write_gold(tmp_path / "gold.csv")
    files = _write_forms(tmp_path, partial)
    assert (
        main(
            [
                "score",
                "--predictions",
                str(files["wide.csv"]),
                "--references",
                str(tmp_path / "gold.csv"),
                "--bootstrap",
                "0",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "no overall score: no video has all eight dimensions asked" in printed and "excluded" not in printed
    assert f"{len(partial)} of 120 gold pairs predicted (6 of 15 videos, 0 with all eight dimensions)" in printed


def test_stricter_policies_count_or_refuse_the_unasked_pairs():
    asked, gold = _asked(), _gold()
    unparsed = score_predictions(asked, gold, resampling=ResamplingOptions(n_bootstrap=0), missing="unparsed")
    assert unparsed["dimensions"]["empathy"]["n_total"] == 15
    assert unparsed["coverage"]["policy"] == "unparsed" and unparsed["meta"]["n_videos"] == 15
    with pytest.raises(ValueError, match="have no prediction"):
        score_predictions(asked, gold, resampling=ResamplingOptions(n_bootstrap=0), missing="error")


def test_evaluate_module_follows_the_same_rule():
    import evaluate

    import mis_icc_metric

    asked, gold = _asked(), _gold()
    keys = sorted(asked)
    metric = evaluate.load(mis_icc_metric.metric_path())
    out = metric.compute(
        predictions=[asked[k] for k in keys],
        references=[gold[k] for k in keys],
        video_ids=[v for v, _ in keys],
        dimensions=[d for _, d in keys],
        n_bootstrap=0,
    )
    direct = score_predictions(asked, gold, resampling=ResamplingOptions(n_bootstrap=0))
    for key in DIMENSION_KEYS:
        assert out["dimensions"][key]["icc"] == pytest.approx(direct["dimensions"][key]["icc"], abs=1e-12)
        assert out["dimensions"][key]["parse_rate"] == direct["dimensions"][key]["parse_rate"]
    assert out["overall"]["n_total"] == 6 and out["overall"]["icc"] == pytest.approx(
        direct["overall"]["icc"], abs=1e-12
    )


def test_compare_uses_the_pairs_both_asked_and_parsed(scored, capsys):
    from mis_icc_metric import paired_comparison

    folder, _ = scored
    asked, gold = _asked(), _gold()
    other = {k: (None if v is None else min(5.0, v + 0.3)) for k, v in asked.items() if k[0] != VIDEOS[0]}
    result = paired_comparison(asked, other, gold, resampling=ResamplingOptions(n_bootstrap=200))
    both = {k for k in asked if k in other and asked[k] is not None and other[k] is not None}
    for key in DIMENSION_KEYS:
        assert result["dimensions"][key]["n"] == sum(1 for _, d in both if d == key)
    assert result["overall"]["n"] == 4  # fully asked by both, parsed by both: VIDEOS[2:6]
    assert result["coverage"]["b"]["n_asked_pairs"] == len(other)
    files = _write_forms(folder, asked)
    assert (
        main(
            [
                "compare",
                str(files["long.csv"]),
                str(files["wide.csv"]),
                "--references",
                str(folder / "gold.csv"),
                "--bootstrap",
                "100",
            ]
        )
        == 0
    )
    assert "All" in capsys.readouterr().out


def test_report_and_leaderboard_show_coverage(scored, tmp_path):
    from eval_scripts import ReportOptions, build_leaderboard, rescore, write_report

    folder, _ = scored
    asked, gold = _asked(), _gold()
    results = rescore(
        [make_results(asked)], gold, resampling=ResamplingOptions(n_bootstrap=50, seed=0), sources=["partial.json"]
    )
    assert results[0]["scores"]["coverage"]["n_asked_pairs"] == len(asked)
    files = write_report(results, tmp_path / "report", ReportOptions(comparison_bootstrap=20, scatters="none"))
    text = files.markdown.read_text()
    assert f"{len(asked)} of 120 gold pairs predicted (12 of 15 videos, 6 with all eight dimensions)" in text
    submissions = tmp_path / "subs"
    submissions.mkdir()
    full = {k: (3.0 if v is None else v) for k, v in gold.items()}
    (submissions / "full.json").write_text(json.dumps(make_results(full)))
    board = build_leaderboard(submissions, gold, resampling=ResamplingOptions(n_bootstrap=20))
    assert board["entries"][0]["coverage"]["n_asked_pairs"] == 120


_pairs = st.sets(st.tuples(st.sampled_from(VIDEOS), st.sampled_from(DIMENSION_KEYS)), min_size=1, max_size=120)


@settings(max_examples=60, deadline=None)
@given(_pairs)
def test_coverage_counts_are_set_arithmetic(asked):
    gold = _gold()
    coverage = coverage_of(asked, gold, "not-asked")
    per_video = {v: sum((v, k) in asked for k in DIMENSION_KEYS) for v in VIDEOS}
    assert coverage.n_asked_pairs == len(asked) and coverage.n_gold_pairs == 120
    assert coverage.n_asked_videos == sum(n > 0 for n in per_video.values())
    assert coverage.n_fully_asked_videos == sum(n == 8 for n in per_video.values())
    assert coverage.max_dimensions_per_video == max(per_video.values())
    assert sum(coverage.asked_per_dimension.values()) == len(asked)
