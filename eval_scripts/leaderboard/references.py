"""The board's references and what follows from them, read once the same way by `mis-bench leaderboard` and
the Space: the labels, the fingerprints a submission must record, and whether the board is synthetic."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mis_bench_dataset.toolkit.errors import DataError


@dataclass(frozen=True)
class BoardReferences:
    """A board's gold and what follows from it: `build_leaderboard` rejects a submission recording another
    fingerprint, and marks the board SYNTHETIC by this flag, never by the submitter's claim."""

    labels: dict  # (video_id, dimension) -> gold score of the split
    # The build's fingerprints of the split (None for a labels file, which has none: not checked).
    fingerprints: frozenset[str] | None
    # The build report's flag (None for a labels file: then a submission's own claim can only add the mark).
    synthetic: bool | None


def read_board_references(path: str | Path, split: str) -> BoardReferences:
    """The references at `path` (a labelled build folder or a labels file) for `split`."""
    from mis_bench_dataset.dataset.handle import BuiltDataset
    from mis_icc_metric.predictions_io import read_references

    path = Path(path)
    labels = read_references(path, split=split)
    if not labels:
        raise DataError(
            f"the references have no gold scores for split {split!r}",
            where=str(path),
            hint="give the hidden labels: a labelled build or a labels file",
        )
    if not path.is_dir():
        return BoardReferences(labels, None, None)
    build = BuiltDataset.open(path)
    return BoardReferences(labels, frozenset(build.fingerprints(split)), build.synthetic)
