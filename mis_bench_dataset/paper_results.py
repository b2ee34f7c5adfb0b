"""The paper's published model results, as printed, for side-by-side reproductions.

Table 4: ICC(3,1) in percent by FIS dimension for Qwen2.5-VL-7B-Instruct under raw
inference, standard fine-tuning and MIS-RAFT, with 95% percentile bootstrap CIs over
videos (10,000 resamples), and each condition's mean over the eight dimensions. The
predictions behind it are the authors' public files (`mis_bench_dataset.release.provenance`).
Table 2 (human ceiling) and Table 6 (gold statistics) are in `mis_bench_dataset.dimensions`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mis_bench_dataset.dimensions import DIMENSION_KEYS, PAPER_BOOTSTRAP_RESAMPLES


@dataclass(frozen=True)
class PublishedICC:
    """One cell of a results table: ICC % and its 95% CI bounds in percent, as printed."""

    icc: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Table4Condition:
    key: str
    title: str  # the paper's column heading
    file: str  # the authors' predictions file (`provenance.PublicFile.name`)
    cells: dict[str, PublishedICC]  # dimension key -> cell
    mean: float  # "Mean Average" row


def _cells(rows: tuple[tuple[float, float, float], ...]) -> dict[str, PublishedICC]:
    return {key: PublishedICC(*row) for key, row in zip(DIMENSION_KEYS, rows, strict=True)}


TABLE4: tuple[Table4Condition, ...] = (
    Table4Condition(
        "raw",
        "Raw",
        "raw_inference.csv",
        _cells(
            (
                (-3.8, -12.5, 2.0),
                (37.6, 24.0, 49.5),
                (-2.0, -6.6, 0.0),
                (-0.0, -0.0, 0.0),
                (12.9, -1.6, 27.3),
                (43.6, 28.2, 55.9),
                (15.2, -5.3, 34.9),
                (6.7, -12.8, 25.6),
            )
        ),
        13.8,
    ),
    Table4Condition(
        "fine_tuning",
        "Fine-tuning",
        "finetune.csv",
        _cells(
            (
                (1.2, -16.3, 18.9),
                (21.7, 12.3, 31.2),
                (1.8, -15.7, 16.6),
                (-13.5, -29.4, 4.1),
                (-12.2, -22.9, 0.0),
                (3.7, -7.6, 15.3),
                (7.6, -16.6, 28.7),
                (11.1, -1.9, 24.2),
            )
        ),
        2.7,
    ),
    Table4Condition(
        "mis_raft",
        "MIS-RAFT",
        "finetune_raft.csv",
        _cells(
            (
                (-0.7, -16.0, 12.6),
                (50.7, 38.0, 62.3),
                (33.6, 20.2, 45.9),
                (17.0, 0.6, 31.1),
                (31.4, 14.9, 46.6),
                (35.5, 19.1, 50.7),
                (41.8, 26.8, 55.2),
                (39.2, 24.4, 52.4),
            )
        ),
        31.1,
    ),
)
TABLE4_BOOTSTRAP = PAPER_BOOTSTRAP_RESAMPLES  # "10,000 bootstrap resamples" (Table 4 caption)
