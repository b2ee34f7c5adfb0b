"""Builds made on the fly from a labels file and the transcripts, in a temporary folder, for the commands that
fit the CPU baselines on the authors' public files (`reproduce table4`'s ridge column, the real leaderboard page).

The build is exactly `mis-bench build --transcripts CSV --labels FILE --split-by SCHEME` (`build_dataset`), and the
ridge exactly `mis-bench run --dataset`'s (`make_baseline("features", "text")`): nothing here is a second copy of
either, only the temporary folder and the quiet log around them.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.dimensions import DIMENSION_KEYS

RIDGE_SETTING = "text"


@contextlib.contextmanager
def temporary_build(labels, transcripts: str | Path, *, split_by: str) -> Iterator[BuiltDataset]:
    """A text-only build of `labels` (a path or `Labels`) and `transcripts`, removed on exit. The build's own log
    lines (its leak warning, its temporary path) are kept quiet: the caller says what was built."""
    from mis_bench_dataset.builder.builder import SplitPlan, build_dataset

    quiet = logging.getLogger("mis_bench_dataset")
    level = quiet.level
    with tempfile.TemporaryDirectory(prefix="mis-bench-build-") as tmp:
        out = Path(tmp) / split_by
        quiet.setLevel(logging.ERROR)
        try:
            build_dataset(
                None, out, labels=labels, transcripts=transcripts, split=SplitPlan(split_by=split_by), progress=False
            )
        finally:
            quiet.setLevel(level)
        yield BuiltDataset.open(out)


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
    """The text ridge's predictions on the test pairs of a paper-rows build of `labels` + `transcripts`."""
    from eval_scripts.baselines.baseline_run import load_feature_rows
    from mis_bench_dataset.splits import PAPER_ROWS

    with temporary_build(labels, transcripts, split_by=PAPER_ROWS) as handle:
        return ridge_predictions(load_feature_rows(handle, "train"), load_feature_rows(handle, "test"))
