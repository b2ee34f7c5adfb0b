"""The paper's published model results, as printed, for side-by-side reproductions.

Table 4: ICC(3,1) in percent by FIS dimension for Qwen2.5-VL-7B-Instruct under raw
inference, standard fine-tuning and MIS-RAFT, with 95% percentile bootstrap CIs over
videos (10,000 resamples), and each condition's mean over the eight dimensions. The
predictions behind it are the authors' public files (`mis_bench_dataset.release.provenance`).
Table 3: each zero-shot model's best configuration, dimension ICCs in percent, as printed (their
predictions are not public: reported, never rescored).
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


@dataclass(frozen=True)
class Table3Row:
    """One row of the paper's Table 3 as printed: each model's best configuration (by overall ICC), its dimension
    ICCs in percent. Reported, never rescored: the predictions behind it are not public."""

    model: str
    size: str
    inputs: str  # the table's A / V / T ticks (the inputs the model takes), as a modality setting's name
    open_source: bool
    icc: dict[str, float]  # dimension key -> ICC %

    @property
    def mean(self) -> float:
        """The mean of the eight dimension ICCs (the paper's §4.2 "average ICC": 38.6% for GPT-5.4)."""
        return sum(self.icc.values()) / len(self.icc)

    @property
    def mean_text(self) -> str:
        """The mean to one decimal, rounded half up on the exact tenths (38.55 -> "38.6", as the paper prints)."""
        from decimal import ROUND_HALF_UP, Decimal

        exact = sum(Decimal(str(v)) for v in self.icc.values()) / len(self.icc)
        return str(exact.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def _row(model: str, size: str, inputs: str, open_source: bool, values: tuple[float, ...]) -> Table3Row:
    return Table3Row(model, size, inputs, open_source, dict(zip(DIMENSION_KEYS, values, strict=True)))


TABLE3: tuple[Table3Row, ...] = (
    _row("Qwen2-Audio-7B-Instruct", "7B", "audio+text", True, (-6.0, 17.1, 8.4, 0.9, 8.4, 2.3, 9.1, 0.1)),
    _row("Qwen2.5-VL-7B-Instruct", "7B", "video+text", True, (2.8, 39.9, 29.9, 16.5, 36.4, 28.8, 33.0, 27.4)),
    _row("Qwen2.5-Omni-7B", "7B", "audio+video+text", True, (-3.1, 19.4, 15.3, 11.0, 18.6, 23.0, 26.1, 20.1)),
    _row(
        "Qwen3-Omni-30B-A3B-Instruct", "30B", "audio+video+text", True, (21.2, 24.6, 25.1, 14.8, 22.8, 24.6, 18.6, 22.7)
    ),
    _row("InternVL3.5-8B-HF", "8B", "video+text", True, (5.9, 32.4, 16.6, 14.7, 28.9, 22.9, 26.8, 17.6)),
    _row("MiniCPM-V-4.5", "9B", "video+text", True, (8.8, 26.9, 17.2, 14.3, 25.1, 22.6, 32.8, 18.5)),
    _row("MiniCPM-o-4.5", "9B", "audio+video+text", True, (30.5, 32.6, 26.7, 21.9, 32.4, 29.2, 31.0, 22.1)),
    _row("GPT-5.4", "—", "video+text", False, (40.1, 46.4, 31.2, 21.8, 46.7, 42.4, 36.5, 43.3)),
    _row("Gemini-3.1-Pro-Preview", "—", "audio+video+text", False, (17.5, 37.8, 35.9, 32.0, 33.9, 25.3, 38.7, 46.6)),
)
