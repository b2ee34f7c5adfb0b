"""Small hand-made results objects and labels for the leaderboard / report / baseline tests."""

from __future__ import annotations

import numpy as np

from mis_bench_dataset import DIMENSION_KEYS, STIMULI

VIDEO_IDS: tuple[str, ...] = tuple(
    f"C{clinician:02d}{clinician:02d}_T{1 + clinician % 3}_{STIMULI[clinician % len(STIMULI)]}"
    for clinician in range(1, 31)
)


def make_references(video_ids=VIDEO_IDS, seed: int = 0) -> dict[tuple[str, str], float]:
    rng = np.random.default_rng(seed)
    return {
        (video, dim): float(np.round(np.clip(rng.normal(3.5, 0.5), 1.0, 5.0), 1))
        for video in video_ids
        for dim in DIMENSION_KEYS
    }


def noisy_predictions(references, noise: float, seed: int, none_rate: float = 0.0) -> dict:
    """Gold plus Gaussian noise (clipped, one decimal); a share of None for unparsed outputs."""
    rng = np.random.default_rng(seed)
    predictions = {}
    for key, gold in sorted(references.items()):
        if rng.random() < none_rate:
            predictions[key] = None
        else:
            predictions[key] = float(np.round(np.clip(gold + rng.normal(0, noise), 1.0, 5.0), 1))
    return predictions


def make_results(
    predictions: dict,
    *,
    model: str = "test/model",
    modality: str = "text",
    prompt_style: str = "direct",
    split: str = "test",
    scores=None,
) -> dict:
    """A results object in the submission schema, as the harness would write it."""
    rows = [
        {"video_id": video, "dimension": dim, "prediction": value, "raw_response": f"Score: {value}"}
        for (video, dim), value in sorted(predictions.items())
    ]
    parsed = {
        dim: sum(r["prediction"] is not None for r in rows if r["dimension"] == dim)
        / max(1, sum(r["dimension"] == dim for r in rows))
        for dim in DIMENSION_KEYS
    }
    return {
        "schema_version": "1.1",
        "system": {
            "model": model,
            "backend": "transformers",
            "decoding": {"temperature": 0.0, "max_new_tokens": 16},
            "package_versions": {"mis-bench": "0.1.0"},
        },
        "setting": {"modality": modality, "prompt_style": prompt_style, "few_shot_k": 0, "input_source": "text"},
        "dataset": {"name": "mis-bench-synthetic", "fingerprint": "abc123", "split": split, "synthetic": True},
        "predictions": rows,
        "scores": scores,
        "parse_rates": parsed,
        "created_at": "2026-05-26T16:03:25+00:00",
    }


def contract_scores(
    iccs: dict[str, float | None],
    *,
    overall: float | None = None,
    mse: float = 0.25,
    n: int = 30,
    excluded_rate: float = 0.0,
) -> dict:
    """A score dict of the metric's contract shape with chosen ICCs (for report/table tests)."""
    defined = [v for v in iccs.values() if v is not None]
    return {
        "dimensions": {
            key: {
                "icc": icc,
                "icc_ci": None if icc is None else [icc - 0.1, icc + 0.1],
                "mse": mse,
                "n": n,
                "n_unparsed": 0,
            }
            for key, icc in iccs.items()
        },
        "overall": {
            "icc": overall,
            "icc_ci": None if overall is None else [overall - 0.05, overall + 0.05],
            "mse": mse,
            "n": n,
            "excluded_rate": excluded_rate,
        },
        "mean_icc": sum(defined) / len(defined) if defined else None,
    }
