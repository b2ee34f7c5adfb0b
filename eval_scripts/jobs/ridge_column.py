"""The text ridge beside Table 4: the `features` baseline (text setting) fitted on the authors' own
training rows and scored on their 797 test pairs, with a paired bootstrap test against MIS-RAFT.

It is the same code as `mis-bench build --split-by paper-rows` then `mis-bench run --dataset`:
`build_dataset` lays the rows out exactly as the authors split them (`splits.assign_rows`), and
`baselines.make_baseline("features", "text")` fits and predicts; only the scoring follows the Table 4
columns (`score_predictions` on the pairs asked, over the same shared bootstrap of the asked videos).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mis_bench_dataset.dimensions import DIMENSION_KEYS

logger = logging.getLogger(__name__)

RIDGE_KEY = "text_ridge"
RIDGE_TITLE = "Text ridge"
RIDGE_SETTING = "text"
FAIRNESS = (
    "Why the comparison is fair: the ridge is fitted per dimension on transcripts alone, so a test pair's "
    "gold never reaches its own prediction (dimension d's model sees only dimension d's training gold); the "
    "leak of the row-level split (a test video's other dimensions are in training) helps a model trained on "
    "all eight dimensions of a video at once, as the paper's were, not this one."
)

Key = tuple[str, str]


def ridge_predictions(train_rows: Sequence[Mapping[str, Any]], test_rows: Sequence[Mapping[str, Any]]) -> dict:
    """(video, dimension) -> the text ridge's prediction for every labelled pair of `test_rows`.

    `features`-config rows (one per video and split; a paper-rows copy carries only that split's gold).
    Dimension d's prediction is a function of the transcripts and dimension d's training gold only: the
    preprocessing (TF-IDF, scaler) sees no label, each dimension's alpha is chosen on its own labels
    (the clinician folds depend on no label) and its ridge is fitted on its own labelled rows.
    """
    from eval_scripts.baselines.models import make_baseline

    predicted = make_baseline("features", RIDGE_SETTING).fit(list(train_rows)).predict(list(test_rows))
    return {
        (str(row["video_id"]), key): float(predicted[key][i])
        for i, row in enumerate(test_rows)
        for key in DIMENSION_KEYS
        if row.get(key) is not None
    }


def paper_rows_predictions(labels, transcripts: str | Path) -> dict:
    """The text ridge's predictions on the test rows of a paper-rows build of `labels` + `transcripts`,
    built in a temporary folder (removed afterwards)."""
    from eval_scripts.baselines.run import load_feature_rows
    from mis_bench_dataset.build.builder import build_dataset
    from mis_bench_dataset.built.handle import BuiltDataset
    from mis_bench_dataset.splits import PAPER_ROWS

    quiet = logging.getLogger("mis_bench_dataset")
    level = quiet.level
    with tempfile.TemporaryDirectory(prefix="mis-bench-ridge-") as tmp:
        out = Path(tmp) / "paper-rows"
        # The build's own lines (its leak warning, its temporary path) say nothing the column does not say.
        quiet.setLevel(logging.ERROR)
        try:
            build_dataset(None, out, labels=labels, transcripts=transcripts, split_by=PAPER_ROWS, progress=False)
        finally:
            quiet.setLevel(level)
        handle = BuiltDataset.open(out)
        return ridge_predictions(load_feature_rows(handle, "train"), load_feature_rows(handle, "test"))


def ridge_column(
    predictions: Mapping[Key, float],
    references: Mapping[Key, float],
    raft: Mapping[Key, object],
    *,
    n_bootstrap: int,
    seed: int,
) -> dict[str, Any]:
    """The ridge scored like a Table 4 column, and ridge - MIS-RAFT paired on the shared pairs."""
    from mis_bench_dataset.rules.jsonio import json_safe
    from mis_icc_metric.paired import paired_comparison
    from mis_icc_metric.scoring import score_predictions

    scores = json_safe(score_predictions(predictions, references, n_bootstrap=n_bootstrap, seed=seed))
    paired = json_safe(
        paired_comparison(
            predictions, raft, references, n_bootstrap=max(n_bootstrap, 1), seed=seed, names=(RIDGE_TITLE, "MIS-RAFT")
        )
    )
    rows = {}
    for key in DIMENSION_KEYS:
        entry, versus = scores["dimensions"][key], paired["dimensions"][key]
        rows[key] = {
            "icc": entry["icc"],
            "icc_ci": entry["icc_ci"],
            "n": entry["n"],
            "vs_mis_raft": {f: versus[f] for f in ("delta", "delta_ci", "p_value", "n")},
        }
    return {
        "title": RIDGE_TITLE,
        "setting": RIDGE_SETTING,
        "fitted_on": "the authors' training rows (the paper-rows split, seed 42), transcripts only",
        "coverage": scores["coverage"],
        "dimensions": rows,
        "mean_icc": scores["mean_icc"],
        "mean_icc_ci": scores["mean_icc_ci"],
        "vs_mis_raft": {
            "mean": {f: paired["mean_icc"][f] for f in ("delta", "delta_ci", "p_value")},
            "meta": paired["meta"],
        },
        "fairness": FAIRNESS,
    }
