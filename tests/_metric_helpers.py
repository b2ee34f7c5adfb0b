"""Small synthetic predictions/references for the metric tests (synthetic, not real data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mis_bench_dataset import DIMENSION_KEYS, STIMULI


def video_ids(n: int) -> list[str]:
    return [f"CL{1000 + i // 8}_T{1 + i % 3}_{STIMULI[i % 8]}" for i in range(n)]


def make_scores(n: int = 60, seed: int = 0, noise: float = 0.6, unparsed: float = 0.05):
    """(predictions, references) mappings over n videos x 8 dimensions; some predictions None."""
    rng = np.random.default_rng(seed)
    gold = np.round(np.clip(rng.normal(3.5, 0.5, (n, 8)), 1, 5), 1)
    pred = np.round(np.clip(gold + rng.normal(0, noise, (n, 8)), 1, 5), 1)
    drop = rng.random((n, 8)) < unparsed
    videos = video_ids(n)
    references = {(v, d): float(gold[i, j]) for i, v in enumerate(videos) for j, d in enumerate(DIMENSION_KEYS)}
    predictions = {
        (v, d): (None if drop[i, j] else float(pred[i, j]))
        for i, v in enumerate(videos)
        for j, d in enumerate(DIMENSION_KEYS)
    }
    return predictions, references


def write_scoring_dataset(directory: Path, references: dict, split: str = "test") -> Path:
    """A minimal built-dataset folder with a `scoring` config (the contract's columns that matter here)."""
    import datasets

    rows = sorted(references.items())
    columns = {
        "video_id": [v for (v, _), _ in rows],
        "dimension": [d for (_, d), _ in rows],
        "score": [s for _, s in rows],
    }
    features = datasets.Features(
        {
            "video_id": datasets.Value("string"),
            "dimension": datasets.Value("string"),
            "score": datasets.Value("float32"),
        }
    )
    (directory / "scoring").mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(columns, features=features).to_parquet(
        str(directory / "scoring" / f"{split}-00000-of-00001.parquet")
    )
    (directory / "README.md").write_text(
        "---\nconfigs:\n- config_name: scoring\n  data_files:\n"
        f"  - split: {split}\n    path: scoring/{split}-*.parquet\n---\n# synthetic test dataset\n",
        encoding="utf-8",
    )
    return directory


def write_inputs(tmp_path: Path, references: dict, **systems: dict) -> tuple[Path, dict[str, Path]]:
    """A scoring build of `references` (`tmp_path/ds`) and one long predictions CSV per system (`name=preds`)."""
    from mis_icc_metric import write_predictions

    dataset = write_scoring_dataset(tmp_path / "ds", references)
    paths = {
        name: write_predictions(
            tmp_path / f"{name}.csv", [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in preds.items()]
        )
        for name, preds in systems.items()
    }
    return dataset, paths


def pingouin_icc3_1(matrix: np.ndarray) -> tuple[float, list[float]]:
    """ICC(3,1) and its CI95 of an (n items x k raters) matrix from pingouin: an independent reference."""
    import pandas as pd
    import pingouin as pg

    n, k = matrix.shape
    frame = pd.DataFrame(
        {
            "target": np.repeat(np.arange(n), k),
            "rater": np.tile(np.arange(k), n),
            "score": np.asarray(matrix, dtype=np.float64).ravel(),
        }
    )
    table = pg.intraclass_corr(frame, targets="target", raters="rater", ratings="score").set_index("Type")
    name = "ICC(C,1)" if "ICC(C,1)" in table.index else "ICC3"  # pingouin >= 0.6 renamed ICC3
    return float(table.loc[name, "ICC"]), list(table.loc[name, "CI95"])
