"""Halo (mis_icc_metric.agreement_statistics.halo): the mean correlation between two dimensions' scores over the videos
scored on both, checked against an independent hand computation (numpy corrcoef on each pair's set of videos,
and on the resampled rows for a bootstrap replicate)."""

from __future__ import annotations

import numpy as np
import pytest

from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import ResamplingOptions, score_predictions
from mis_icc_metric.agreement_statistics import halo


def _hand_pairs(scores: np.ndarray, present: np.ndarray) -> dict[tuple[int, int], float]:
    """Each dimension pair's Pearson r by np.corrcoef on the videos scored on both (>= 3, a spread on both)."""
    out = {}
    n_dims = scores.shape[1]
    for i in range(n_dims):
        for j in range(i + 1, n_dims):
            both = present[:, i] & present[:, j]
            x, y = scores[both, i], scores[both, j]
            if both.sum() >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
                out[(i, j)] = float(np.corrcoef(x, y)[0, 1])
    return out


def _hand_halo(systems: list[np.ndarray], present: np.ndarray) -> list[float]:
    """Mean r over the dimension pairs defined for every system."""
    pairs = [_hand_pairs(s, present) for s in systems]
    common = set.intersection(*(set(p) for p in pairs))
    return [float(np.mean([p[k] for k in sorted(common)])) if common else float("nan") for p in pairs]


def _sample(seed: int, n: int = 60, n_dims: int = 8, missing: float = 0.3):
    rng = np.random.default_rng(seed)
    trait = rng.normal(size=(n, 1))
    gold = np.clip(3 + 0.6 * trait + 0.5 * rng.normal(size=(n, n_dims)), 1, 5).round(1)
    model = np.clip(gold + 0.8 * rng.normal(size=(n, n_dims)), 1, 5).round(1)
    present = rng.random((n, n_dims)) > missing
    return model, gold, present


@pytest.mark.parametrize("seed", range(4))
def test_halo_equals_corrcoef_per_video_set(seed):
    model, gold, present = _sample(seed)
    model[:, 3] = 2.0  # one dimension scored alike for every video: its 7 pairs drop out
    got = halo([model, gold], present, None)
    expected = _hand_halo([model, gold], present)
    assert [g["value"] for g in got] == pytest.approx(expected, abs=1e-12)
    assert got[0]["n_pairs"] == got[1]["n_pairs"] == 21 and got[0]["n_pairs_total"] == 28
    own = {(p["i"], p["j"]): p["r"] for p in got[1]["pairs"] if not np.isnan(p["r"])}
    hand = _hand_pairs(gold, present)
    assert own.keys() == hand.keys() and all(own[k] == pytest.approx(hand[k], abs=1e-12) for k in hand)


def test_a_bootstrap_replicate_is_the_halo_of_the_resampled_rows():
    model, gold, present = _sample(7, n=40)
    rng = np.random.default_rng(1)
    for _ in range(3):
        rows = rng.integers(0, 40, size=(1, 40))
        got = halo([model, gold], present, rows)
        point = _hand_pairs(model, present).keys() & _hand_pairs(gold, present).keys()
        for k, system in enumerate((model, gold)):
            resampled = _hand_pairs(system[rows[0]], present[rows[0]])
            expected = np.mean([resampled[p] for p in sorted(point) if p in resampled])
            assert got[k]["ci"] == pytest.approx([expected, expected], abs=1e-12)


def test_a_judge_rating_every_dimension_alike_has_halo_one_in_the_scores():
    model, gold, present = _sample(3, n=50, missing=0.0)
    videos = [f"V{i:03d}_T1_X" for i in range(50)]
    references = {(v, k): float(gold[i, j]) for i, v in enumerate(videos) for j, k in enumerate(DIMENSION_KEYS)}
    one_score = {(v, k): float(gold[i].mean().round(1)) for i, v in enumerate(videos) for k in DIMENSION_KEYS}
    scores = score_predictions(one_score, references, resampling=ResamplingOptions(n_bootstrap=200, seed=0))
    assert scores["halo"]["model"]["value"] == pytest.approx(1.0, abs=1e-12)
    expected_gold = np.corrcoef(gold.T)[np.triu_indices(8, 1)].mean()  # complete: one video set for all pairs
    assert scores["halo"]["gold"]["value"] == pytest.approx(expected_gold, abs=1e-12)
    low, high = scores["halo"]["gold"]["ci"]
    assert low < expected_gold < high
    # every resample's halo is exactly 1: the zero-width interval is withheld as degenerate (reporting_floor)
    assert scores["halo"]["model"]["ci"] is None and "zero width" in scores["halo"]["model"]["withheld"]


def _grid(predictions: dict, videos, keys) -> np.ndarray:
    return np.array(
        [[np.nan if predictions.get((v, k)) is None else predictions[(v, k)] for k in keys] for v in videos]
    )


def test_score_prints_and_the_leaderboard_shows_the_halo(tmp_path, capsys):
    import json

    from eval_scripts import build_leaderboard
    from eval_scripts.cli import main
    from eval_scripts.leaderboard.outputs import csv_rows
    from eval_scripts.leaderboard.page import render_page

    from _leaderboard_helpers import VIDEO_IDS, make_references, make_results, noisy_predictions

    references = make_references()
    predictions = noisy_predictions(references, 0.4, seed=3, none_rate=0.05)
    videos = sorted(VIDEO_IDS)
    pred, gold = _grid(predictions, videos, DIMENSION_KEYS), _grid(references, videos, DIMENSION_KEYS)
    present = ~np.isnan(pred)
    model_hand, gold_hand = _hand_halo([pred, gold], present)

    results = tmp_path / "results.json"
    results.write_text(json.dumps(make_results(predictions)))
    labels = tmp_path / "gold.csv"
    labels.write_text("video_id,dimension,score\n" + "".join(f"{v},{k},{s}\n" for (v, k), s in references.items()))
    assert main(["score", "--predictions", str(results), "--references", str(labels), "--bootstrap", "100"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("Halo"))
    assert f"model {model_hand:.2f} [" in line and f"expert gold {gold_hand:.2f} [" in line and "28 of 28" in line

    # The board ranks (and shows figures of) a submission that answers every pair: one without a null. It
    # publishes figures at 3 significant digits.
    predictions = noisy_predictions(references, 0.4, seed=3, none_rate=0.0)
    model_hand, gold_hand = _hand_halo([_grid(predictions, videos, DIMENSION_KEYS), gold], np.ones_like(present))
    submissions = tmp_path / "subs"
    submissions.mkdir()
    (submissions / "a.json").write_text(json.dumps(make_results(predictions)))
    board = build_leaderboard(submissions, references, resampling=ResamplingOptions(n_bootstrap=50, seed=0))
    (row,) = csv_rows(board)
    assert row["halo"] == pytest.approx(model_hand, rel=5e-3) and row["halo_gold"] == pytest.approx(gold_hand, rel=5e-3)
    page = render_page(board)
    assert 'data-key="halo"' in page and f">{model_hand:.2f}</td>" in page
    assert f"gold on the same pairs {gold_hand:.2f} [" in page
