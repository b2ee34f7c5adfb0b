"""The report's user-facing choices, in a module light enough for the CLI to import for `--help`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mis_bench_dataset.dimensions import PAPER_BOOTSTRAP_RESAMPLES
from mis_bench_dataset.toolkit.defaults import DEFAULT_RESAMPLE, DEFAULT_SEED
from mis_bench_dataset.toolkit.errors import UsageError

if TYPE_CHECKING:
    from eval_scripts.report.about import About

# Predicted-vs-gold scatters: each system's best configuration, every run, or none.
SCATTER_CHOICES: tuple[str, ...] = ("best", "all", "none")
DEFAULT_TITLE = "MIS-Bench report"  # followed by what the runs were run on


@dataclass(frozen=True, kw_only=True)
class ReportOptions:
    """How a report is drawn and named (`write_report`), apart from the data it reports: its `title` and file
    `stem`; the comparison's `reference` system (a name or results file) and its resampling
    (`comparison_bootstrap` resamples, `seed`, `resample` unit), which the subgroups share; the predicted-vs-gold
    `scatters` ("best", "all", "none"); the subgroup columns `by` (`report.subgroups`); and `about`, what the
    runs were run on (`report.about.About`; default: the runs' datasets by name)."""

    title: str = DEFAULT_TITLE
    stem: str = "report"
    reference: str | None = None
    comparison_bootstrap: int = PAPER_BOOTSTRAP_RESAMPLES
    seed: int = DEFAULT_SEED
    resample: str = DEFAULT_RESAMPLE
    scatters: str = "best"
    by: Sequence[str] = ()
    about: About | None = None

    def __post_init__(self) -> None:
        if self.scatters not in SCATTER_CHOICES:
            raise UsageError(f"--scatters must be one of {', '.join(SCATTER_CHOICES)}, got {self.scatters!r}")
        object.__setattr__(self, "by", tuple(self.by))

    @property
    def draw(self) -> dict[str, Any]:
        """The comparison's (and the subgroups') resampling, as `compare_systems` takes it."""
        return {"n_bootstrap": self.comparison_bootstrap, "seed": self.seed, "resample": self.resample}
