"""The model as one more rater and the Appendix B certification rule, against a hand computation on a
small SYNTHETIC per-rater labels file (ANOVA ICC written out in tests/_independent.py), and the
`score --raters` command line."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS, read_labels
from mis_bench_dataset.release.labels import write_ratings_long
from mis_bench_dataset.toolkit.errors import UsageError
from mis_icc_metric import model_as_rater
from mis_icc_metric.raters import certification

from _independent import anova_forms, anova_icc

RATERS = ("R1", "R2", "R3")
# Eight SYNTHETIC videos; the last is missing R3 on empathy, so it is not fully rated.
VIDEOS = [f"SY{i:04d}_T1_Luke" for i in range(8)]


def _ratings(seed: int = 0) -> np.ndarray:
    """(video, dimension, rater) integer ratings with a shared true score per video and dimension."""
    rng = np.random.default_rng(seed)
    true = rng.normal(3, 0.8, (len(VIDEOS), len(DIMENSION_KEYS), 1))
    return np.clip(np.round(true + rng.normal(0, 0.6, (len(VIDEOS), len(DIMENSION_KEYS), len(RATERS)))), 1, 5)


@pytest.fixture()
def labelled(tmp_path):
    ratings = _ratings()
    rows = [
        (video, rater, dim, float(ratings[i, d, r]))
        for i, video in enumerate(VIDEOS)
        for d, dim in enumerate(DIMENSION_KEYS)
        for r, rater in enumerate(RATERS)
        if not (i == len(VIDEOS) - 1 and dim == "empathy" and rater == "R3")
    ]
    path = write_ratings_long(tmp_path / "ratings.csv", rows)
    labels = read_labels(path)
    references = {(v, d): g for v, dims in labels.gold.items() for d, g in dims.items() if g is not None}
    rng = np.random.default_rng(7)
    predictions = {key: float(np.clip(round(g + rng.normal(0.2, 0.5), 1), 1, 5)) for key, g in references.items()}
    predictions[(VIDEOS[2], "wau")] = None  # unparsed: video 2 leaves the WAU panel
    return path, labels, references, predictions, ratings


def test_per_rater_comparisons_match_a_hand_computation(labelled):
    _, labels, references, predictions, ratings = labelled
    result = model_as_rater(predictions, references, labels)
    assert result["raters"] == list(RATERS) and result["n_panel_videos"] == 7 and result["note"] is None
    for d, key in enumerate(DIMENSION_KEYS):
        rows = [i for i in range(7) if predictions[(VIDEOS[i], key)] is not None]
        humans = ratings[rows, d, :]
        model = np.array([predictions[(VIDEOS[i], key)] for i in rows])
        entry = result["dimensions"][key]
        assert entry["n"] == len(rows) == (6 if key == "wau" else 7)
        assert entry["raters_icc"]["icc"] == pytest.approx(anova_forms(humans)["icc3_1"], abs=1e-12)
        for r, rater in enumerate(RATERS):
            assert entry["model_vs_rater"][rater]["icc"] == pytest.approx(anova_icc(model, humans[:, r]), abs=1e-12)
            replaced = humans.copy()
            replaced[:, r] = model
            loo = entry["leave_one_out"][rater]
            assert loo["icc"] == pytest.approx(anova_forms(replaced)["icc3_1"], abs=1e-12)
            assert loo["delta"] == pytest.approx(loo["icc"] - entry["raters_icc"]["icc"], abs=1e-15)
        pairs = {
            f"{a}-{b}": anova_icc(humans[:, i], humans[:, j])
            for i, a in enumerate(RATERS)
            for j, b in enumerate(RATERS)
            if i < j
        }
        for name, value in pairs.items():
            assert entry["rater_vs_rater"][name]["icc"] == pytest.approx(value, abs=1e-12)
        assert entry["mean_rater_vs_rater"] == pytest.approx(np.mean(list(pairs.values())), abs=1e-12)
        # Table 2's computation (labels.human_ceiling) on all seven fully rated videos, parsed or not.
        assert entry["human_ceiling"]["icc"] == pytest.approx(anova_forms(ratings[:7, d, :])["icc3_1"], abs=1e-12)
        assert entry["human_ceiling"]["n"] == 7
    assert result["dimensions"]["empathy"]["human_ceiling"] == {
        "icc": result["dimensions"]["empathy"]["raters_icc"]["icc"],
        "ci": result["dimensions"]["empathy"]["raters_icc"]["ci"],
        "n": 7,
        "withheld": "7 video(s); a CI needs at least 10",  # seven videos: below the one rule's floor
    }
    assert result["dimensions"]["empathy"]["raters_icc"]["ci"] is None


def test_certification_by_hand():
    """Clips in video-id order; clip ICC = ICC(3,1) over the eight dimensions; a run of six passes."""
    rng = np.random.default_rng(3)
    videos = sorted(f"SY{i:04d}_T{1 + i % 3}_Luke" for i in range(12))
    gold = {(v, d): float(np.round(rng.uniform(1.5, 4.5), 1)) for v in videos for d in DIMENSION_KEYS}
    good = {key: float(np.round(value + rng.normal(0, 0.05), 2)) for key, value in gold.items()}
    predictions = dict(good)
    for d in DIMENSION_KEYS:  # clip 3 answers a constant: ICC exactly 0, the run breaks
        predictions[(videos[3], d)] = 3.0
    predictions[(videos[10], "abc")] = None  # clip 10 is not complete: the run breaks
    result = certification(predictions, gold)
    expected_icc = [
        anova_icc([predictions[(v, d)] for d in DIMENSION_KEYS], [gold[(v, d)] for d in DIMENSION_KEYS]) for v in videos
    ]
    for video, value in zip(videos, expected_icc, strict=True):
        if video == videos[10]:
            assert result["clip_icc"][video] is None
        else:
            assert result["clip_icc"][video] == pytest.approx(value, abs=1e-12)
    # passing: 0-2 (run 3), 3 fails, 4-9 (run 6: certified at clip 9), 10 breaks, 11 (run 1)
    assert all(result["clip_icc"][videos[i]] > 0.8 for i in (0, 1, 2, 4, 5, 6, 7, 8, 9, 11))
    assert result["passed"] is True and result["certified_at"] == videos[9]
    assert result["best_run"] == 6 and result["best_run_clips"] == [videos[4], videos[9]]
    assert (result["n_clips"], result["n_complete"], result["n_passing"]) == (12, 11, 10)
    strict = certification(predictions, gold, run_length=7)
    assert strict["passed"] is False and strict["certified_at"] is None and strict["best_run"] == 6
    # The threshold is strict: a clip whose ICC equals it does not pass.
    own = certification(good, gold)["clip_icc"]
    at = certification(good, gold, threshold=min(own.values()))
    assert at["n_passing"] == 11


def test_different_rater_names_on_the_panel_are_a_note_not_a_wrong_number(tmp_path):
    rows = []
    rng = np.random.default_rng(0)
    for i, video in enumerate(VIDEOS[:5]):
        names = ("A", "B") if i < 3 else ("A", "C")
        rows += [(video, name, dim, float(rng.integers(1, 6))) for dim in DIMENSION_KEYS for name in names]
    labels = read_labels(write_ratings_long(tmp_path / "mixed.csv", rows))
    references = {(v, d): g for v, dims in labels.gold.items() for d, g in dims.items() if g is not None}
    result = model_as_rater(dict(references), references, labels)
    assert result["raters"] == [] and "different rater names" in result["note"]
    assert result["dimensions"]["empathy"]["human_ceiling"]["n"] == 5  # positional, as Table 2's code does
    assert "model_vs_rater" not in result["dimensions"]["empathy"]


def test_wide_labels_are_refused(tmp_path, labelled):
    _, labels, references, predictions, _ = labelled
    from mis_bench_dataset.release.labels import write_gold_wide

    wide = read_labels(write_gold_wide(tmp_path / "gold.csv", labels.gold))
    with pytest.raises(UsageError, match="per-rater labels"):
        model_as_rater(predictions, references, wide)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_score_raters_cli_writes_the_same_numbers(tmp_path, labelled):
    path, labels, references, predictions, _ = labelled
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import write_predictions

    pred_file = tmp_path / "pred.csv"
    write_predictions(
        pred_file, [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items()]
    )
    code, out, err = _cli(
        "score",
        "--predictions",
        str(pred_file),
        "--references",
        str(path),
        "--raters",
        str(path),
        "--bootstrap",
        "100",
        "--out",
        str(tmp_path / "scores.json"),
    )
    assert code == 0, err
    written = json.loads((tmp_path / "scores.json").read_text())
    expected = json_safe(model_as_rater(predictions, references, labels))
    assert written["model_as_rater"]["dimensions"] == expected["dimensions"]
    assert written["model_as_rater"]["certification"] == expected["certification"]
    assert "The model as one more rater (R1, R2, R3; 7 fully rated videos" in out
    assert "Appendix B certification:" in out and "Agreement beyond ICC(3,1)" in out
    vf = expected["dimensions"]["verbal_fluency"]
    lines = out.splitlines()
    header = next(i for i, row in enumerate(lines) if "M-R1" in row)
    line = lines[header + 1]
    assert line.startswith("VF ") and f" {vf['n']} " in line
    assert f"{100 * vf['model_vs_rater']['R1']['icc']:.1f}" in line


def test_score_raters_cli_refuses_wide_labels(tmp_path, labelled):
    path, labels, _, predictions, _ = labelled
    from mis_bench_dataset.release.labels import write_gold_wide
    from mis_icc_metric import write_predictions

    pred_file = tmp_path / "pred.csv"
    write_predictions(
        pred_file, [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items()]
    )
    wide = write_gold_wide(tmp_path / "gold.csv", labels.gold)
    code, out, err = _cli(
        "score", "--predictions", str(pred_file), "--references", str(path), "--raters", str(wide), "--bootstrap", "0"
    )
    assert code == 2
    assert err.count("\n") == 1 and "per-rater labels" in err and "gold.csv" in err
