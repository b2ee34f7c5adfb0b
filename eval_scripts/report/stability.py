"""The report's judge-stability view: each run's agreement with itself beside its agreement with the experts.

From the `readouts.json` a run writes beside its results (expected-score and repeated-sample runs):
ICC(3,1) of its text vs expected readouts, of its first two samples (test-retest), and the spread of
its samples per row; and, for every two runs given of one model in one setting on one split (two runs
the user made), the ICC(3,1) between their predictions. `eval_scripts.harness.readout_agreement` computes
them; this module only gathers and lays them out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval_scripts.harness.readout_agreement import read_readouts, run_agreement
from eval_scripts.report.formatting import withheld_cell
from eval_scripts.report.table import RunView, Table
from mis_bench_dataset.toolkit.numbers import MISSING, ci_pct, num, pct

STABILITY_NOTE = (
    "A judge whose score of the same row changes from one sample or run to the next measures noise, whatever "
    "its agreement with the experts. ICC(3,1) in percent over the rows both sides scored (every video and "
    "dimension one item) with its F-test 95% CI: text vs expected readout of one run, its first two samples "
    "(test-retest), and two runs of the same model and setting given to this report; the spread is the "
    "standard deviation of a row's samples."
)


def _identity(run: RunView) -> tuple:
    return (run.model, run.modality, run.prompt_style, run.few_shot_k, run.input_source, run.fingerprint, run.split)


def stability(runs: Sequence[RunView]) -> dict[str, Any]:
    """`{"runs": [one entry per run with readouts], "pairs": [one per two runs of one model and setting]}`."""
    entries = []
    for run in runs:
        readouts = read_readouts(Path(run.source).parent) if run.source else None
        if readouts is None:
            continue
        agreement = readouts.get("agreement") or {}
        entries.append(
            {
                "label": run.label,
                "source": run.source,
                "score_from": readouts.get("score_from"),
                "samples": readouts.get("samples"),
                "experts_icc": run.overall.get("icc"),
                "distribution_only": readouts.get("distribution_only"),
                **{
                    key: agreement.get(key) for key in ("text_vs_expected", "test_retest", "text_test_retest", "spread")
                },
            }
        )
    groups: dict[tuple, list[RunView]] = defaultdict(list)
    for run in runs:
        groups[_identity(run)].append(run)
    pairs = [
        {
            "first": first.label,
            "second": other.label,
            "experts_icc": [first.overall.get("icc"), other.overall.get("icc")],
            **run_agreement(first.predictions, other.predictions),
        }
        for first, *others in groups.values()
        for other in others
    ]
    return {"runs": entries, "pairs": pairs}


_AGREEMENT_KEYS = ("text_vs_expected", "test_retest", "text_test_retest", "spread")


def _icc(block: Mapping[str, Any] | None) -> str:
    if not block:
        return MISSING
    if block.get("withheld") and block.get("icc") is None:  # the figure itself withheld (`SAME_READOUT`)
        return "withheld (the readout is the same for every sample)"
    text = pct(block.get("icc"))
    ci = f"({withheld_cell(block['withheld'])})" if block.get("withheld") else ci_pct(block.get("ci"))
    return f"{text} {ci} n={block.get('n', 0)}" if ci != MISSING else f"{text} n={block.get('n', 0)}"


def _retest(entry: Mapping[str, Any]) -> str:
    """The scores' test-retest, or, where it is withheld (an expected readout read from the prompt alone), the
    sampled texts' beside the reason."""
    text = entry.get("text_test_retest")
    if (entry.get("test_retest") or {}).get("withheld") and text:
        return f"texts: {_icc(text)} (the expected readout is the same for every sample)"
    return _icc(entry.get("test_retest"))


def _distribution_only(block: Mapping[str, Any] | None) -> str:
    """ "(n rows scored from the distribution only: reason n, ...)" of an expected-score run, else nothing."""
    if not block or not block.get("rows"):
        return ""
    reasons = ", ".join(f"{reason} {count}" for reason, count in (block.get("reasons") or {}).items())
    return f" ({block['rows']} rows scored from the distribution only, the text giving none: {reasons})"


def stability_tables(data: Mapping[str, Any]) -> list[tuple[str, Table]]:
    tables = []
    if data["runs"]:
        header = ["Run", "Readout", "Samples", "ICC with experts %", "Text vs expected %", "Test-retest %",
                  "Mean SD", "Rows differing"]  # fmt: skip
        rows = []
        for entry in data["runs"]:
            spread = entry.get("spread") or {}
            differing = spread.get("share_differing")
            rows.append(
                [
                    entry["label"],
                    str(entry.get("score_from") or MISSING) + _distribution_only(entry.get("distribution_only")),
                    str(entry.get("samples") or MISSING),
                    pct(entry["experts_icc"]),
                    _icc(entry.get("text_vs_expected")),
                    _retest(entry),
                    num(spread.get("mean_sd")),
                    pct(differing) + "%" if differing is not None else MISSING,
                ]
            )
        tables.append(
            ("Each run's agreement with itself beside its agreement with the experts", Table(header, rows, set()))
        )
    if data["pairs"]:
        header = [
            "Run",
            "Second run",
            "ICC with experts % (each)",
            "Test-retest between the runs %",
            "Rows in one only",
        ]
        rows = [
            [
                pair["first"],
                pair["second"],
                " / ".join(pct(v) for v in pair["experts_icc"]),
                _icc(pair),
                str(pair["n_only_one"]),
            ]
            for pair in data["pairs"]
        ]
        tables.append(("Two runs of the same model and setting", Table(header, rows, set(), label_columns=2)))
    return tables
