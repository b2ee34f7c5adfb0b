"""The toolkit's user-facing wording, said once: the SYNTHETIC mark, what every statistic about a judge is for (the
paper's ethics statement), the headline numbers and which to cite, the abbreviations' legend.

Here, in the ground layer, so the trainer's outputs and the build's figures use the same words as the CLI's and the
reports'. The benchmark's facts the wording speaks of are `dimensions`'. Internal: import the names from here.
"""

from __future__ import annotations

from mis_bench_dataset.dimensions import DIMENSIONS

SYNTHETIC_MARK = "SYNTHETIC"
"""The one mark every output of synthetic data carries (terminal lines, figure titles, leaderboard rows)."""
SYNTHETIC_LINE = f"{SYNTHETIC_MARK} data: these numbers say nothing about any model on MIS-Bench."
"""The line a command prints under results from synthetic data."""
RESEARCH_USE = (
    "for research on judges (how far a model's scores agree with the experts'), not for therapist supervision, "
    "training, hiring or patient-facing evaluation (the paper's ethics statement)"
)
"""What every statistic about a judge is for (the paper's ethics statement): said once, by every output that has
one."""
HEADLINE_NUMBERS: dict[str, str] = {
    "mean ICC": "the mean ICC(3,1) over the eight dimensions (the paper's Mean column), with its 95% CI from "
    "resampling clinicians with all their videos: the number to cite",
    "mean over fold seeds": "for a model evaluated by cross-validation over every video (`run --cv-folds`), the mean "
    "ICC averaged over the fold seeds, with its range over them: the number to cite for such a model",
    "per-seed CV": "the mean ICC of one cross-validation partition (each video predicted out of fold): one draw of "
    "the figure above",
    "test split": "the mean ICC on one split's videos (100 of 996): a wider CI, and it moves with the split",
    "Overall": "the ICC(3,1) of each video's mean over the eight dimensions (`All` in `score`): agreement on a "
    "video's total, higher because the dimensions' errors partly cancel; beside the mean ICC, never instead of it",
}
"""The headline numbers a judge shows across the README, reports, `score` and the trust pages, each named once:
which one to cite, and what the others are (reports, `mis-bench trust` and docs/trust-card.md print this list)."""
ABBREVIATION_LEGEND: str = "Dimensions: " + "; ".join(f"{d.abbreviation} = {d.name}" for d in DIMENSIONS) + "."
"""The paper's abbreviations spelt out: the legend under every table that uses them (reports, leaderboard)."""
