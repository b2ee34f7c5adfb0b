"""Agreement by subgroup and at the therapist level (`mis_icc_metric.groups`) as tables and sentences: the same
cells for the terminal (`plain_text`), the report (Markdown / HTML) and the docs page `reproduce trust` writes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eval_scripts.report.formatting import MISSING, ci_pct, num, p_text, pct, signed, withheld_cell, withheld_lines
from eval_scripts.report.table import Table
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY
from mis_bench_dataset.toolkit.defaults import DEFAULT_RESAMPLE
from mis_icc_metric.resampling_options import ResamplingOptions

__all__ = [
    "BY_TITLES",
    "subgroup_table",
    "equal_bias_table",
    "therapist_table",
    "subgroup_paragraphs",
    "therapist_paragraphs",
    "plain_text",
    "subgroup_results",
    "report_parts",
]

BY_TITLES = {"time_point": "time point", "stimulus": "stimulus", "clinician": "clinician"}


def _signed_ci(ci: Sequence[float] | None) -> str:
    return MISSING if not ci else f"[{signed(ci[0])}, {signed(ci[1])}]"


def _with_ci(value: str, ci: str) -> str:
    return value if ci == MISSING else f"{value} {ci}"


def _withheld(cell: Mapping[str, Any], key: str) -> str | None:
    """The cell's text where the one rule withheld its CI `key` past the floor (undefined resamples, zero width)."""
    reason = (cell.get("withheld") or {}).get(key)
    return f"({withheld_cell(reason)})" if reason else None


def _icc(cell: Mapping[str, Any]) -> str:
    return _with_ci(pct(cell.get("icc")), _withheld(cell, "icc_ci") or ci_pct(cell.get("icc_ci")))


def _bias(cell: Mapping[str, Any]) -> str:
    return _with_ci(signed(cell.get("bias")), _withheld(cell, "bias_ci") or _signed_ci(cell.get("bias_ci")))


def _mae(cell: Mapping[str, Any]) -> str:
    ci = cell.get("mae_ci")
    shown = _withheld(cell, "mae_ci") or (MISSING if not ci else f"[{num(ci[0])}, {num(ci[1])}]")
    return _with_ci(num(cell.get("mae")), shown)


def subgroup_table(result: Mapping[str, Any]) -> Table:
    """Per group: videos, clinicians, the overall score's ICC(3,1) %, bias and MAE with CIs (when some video has
    all eight dimensions scored: the overall score is their per-video mean), then each dimension's ICC(3,1) %."""
    dims = list(result["dimensions"])
    with_overall = any(cell["n"] for cell in result["overall"]["groups"].values())
    header = [BY_TITLES[result["by"]], "videos", "clinicians"]
    if with_overall:
        header += ["ICC % (overall) [95% CI]", "bias [95% CI]", "MAE [95% CI]"]
    header += [DIMENSION_BY_KEY[key].abbreviation for key in dims]
    rows = []
    for name in result["groups"]:
        overall = result["overall"]["groups"][name]
        row = [name, str(result["n_videos"][name]), str(result["n_clinicians"][name])]
        if with_overall:
            row += [_icc(overall), _bias(overall), _mae(overall)]
        rows.append(row + [pct(result["dimensions"][key]["groups"][name]["icc"]) for key in dims])
    return Table(header, rows, set(), label_columns=1)


def equal_bias_table(result: Mapping[str, Any]) -> Table:
    """Per dimension and overall: the test of equal bias across the groups (F, its df, p) and the groups' mean
    bias from lowest to highest."""
    blocks = [(DIMENSION_BY_KEY[key].abbreviation, entry) for key, entry in result["dimensions"].items()]
    rows = []
    for label, entry in [*blocks, ("Overall", result["overall"])]:
        test = entry["equal_bias"]
        df = MISSING if not test.get("df") else f"{test['df'][0]}, {test['df'][1]}"
        biases = sorted((cell["bias"], name) for name, cell in entry["groups"].items() if cell["n"])
        ends = [f"{signed(bias)} ({name})" for bias, name in (biases[0], biases[-1])] if biases else [MISSING] * 2
        p_cell = withheld_cell(test["withheld"]) if test.get("withheld") else p_text(test.get("p_value"))
        rows.append([label, num(test.get("statistic"), 2), df, p_cell, *ends])
    header = ["Dimension", "F", "df", "p", "lowest group bias", "highest group bias"]
    return Table(header, rows, set(), label_columns=1)


def therapist_table(result: Mapping[str, Any]) -> Table:
    """Per dimension and overall: therapist means (n, stimuli per therapist, ICC % and bias with CIs) and each
    clinician's change from T1 to T3 (n, ICC % and bias with CIs)."""
    levels = result["therapists"], result["change"]
    blocks = [(DIMENSION_BY_KEY[key].abbreviation, key) for key in levels[0]["dimensions"]] + [("Overall", None)]
    rows = []
    for label, key in blocks:
        unit, change = (level["overall"] if key is None else level["dimensions"][key] for level in levels)
        rows.append(
            [label, str(unit["n"]), num(unit["mean_videos_per_unit"], 1), _icc(unit), _bias(unit)]
            + [str(change["n"]), _icc(change), _bias(change)]
        )
    header = ["Dimension", "therapists", "stimuli each", "ICC % [95% CI]", "bias [95% CI]"]
    header += [f"clinicians at {result['change_from']} and {result['change_to']}", "change ICC % [95% CI]"]
    header += ["change bias [95% CI]"]
    return Table(header, rows, set(), label_columns=1)


def _resampling_sentence(meta: Mapping[str, Any]) -> str:
    draw = meta.get("resampling")
    if not draw:
        return "No CIs (no resamples asked)."
    text = f"CIs: {int(100 * meta['confidence'])}% {draw['method']}, {draw['n_resamples']:,} resamples, seed "
    text += f"{draw['seed']} ({draw['n_clusters']} {'clinicians' if draw['unit'] == 'clinician' else 'videos'})."
    return text + (f" Note: {meta['resampling_note']}." if meta.get("resampling_note") else "")


def subgroup_paragraphs(result: Mapping[str, Any]) -> list[str]:
    """What the subgroup tables are, how their CIs and test were made, which groups have no CI, and what for."""
    meta = result["meta"]
    paragraphs = [
        f"Agreement by {BY_TITLES[result['by']]}: ICC(3,1), bias (model minus expert, score points) and MAE on each "
        "group's scored pairs, the same pairs `score` uses. " + _resampling_sentence(meta),
        f"Equal bias across groups: {meta['equal_bias_method']}.",
    ]
    small = sorted({item["group"] for item in result["without_ci"]})
    if small:
        paragraphs.append(
            f"No CI for {len(small)} group(s) with fewer than {meta['min_ci_videos']} videos"
            + (
                f" or {meta['min_ci_clusters']} clinicians"
                if (meta.get("resampling") or {}).get("unit") == "clinician"
                else ""
            )
            + f" in some block (their values are shown): {', '.join(small)}."
        )
    tests = [("Overall", result["overall"]["equal_bias"])]
    tests += [(DIMENSION_BY_KEY[key].abbreviation, entry["equal_bias"]) for key, entry in result["dimensions"].items()]
    paragraphs += withheld_lines([(label, test.get("withheld")) for label, test in tests if test.get("withheld")])
    paragraphs.append(f"These statistics are {meta['purpose']}.")
    return paragraphs


def therapist_paragraphs(result: Mapping[str, Any]) -> list[str]:
    """What the therapist-level table is and how its CIs were made."""
    meta = result["meta"]
    return [
        f"Therapist level: {meta['unit']} ({result['n_units']} therapists from {result['n_clinicians']} "
        f"clinicians); the change: {meta['change']} ({result['n_clinicians_with_change']} clinicians seen at both). "
        + _resampling_sentence(meta),
        f"These statistics are {meta['purpose']}.",
    ]


def plain_text(table: Table) -> str:
    """The table as aligned columns for the terminal (labels left, numbers right)."""
    lines = [table.header, *table.rows]
    widths = [max(len(row[i]) for row in lines) for i in range(len(table.header))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if i < table.label_columns else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in lines
    )


def subgroup_results(
    runs: Sequence[Any],
    references: Mapping[tuple[str, str], float],
    by: Sequence[str],
    *,
    n_bootstrap: int,
    seed: int,
    resample: str = DEFAULT_RESAMPLE,
) -> list[dict[str, Any]]:
    """Per run (a `RunView` with predictions) and grouping: {"label", "by", "result"}, the JSON of
    `subgroup_agreement` (with `resample`) or, for "therapist", `therapist_agreement` (clinicians, always)."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.groups import agreement_by

    out = []
    for run in runs:
        predictions = {key: value for key, value in run.predictions.items() if key in references}
        gold = {key: references[key] for key in predictions}
        for grouping in by:
            result = agreement_by(
                predictions,
                gold,
                grouping,
                resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed, resample=resample),
            )
            out.append({"label": run.label, "by": grouping, "result": json_safe(result)})
    return out


def report_parts(results: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[tuple[str, Table]]]:
    """The report section's paragraphs (said once per grouping) and its captioned tables, run by run."""
    paragraphs: list[str] = []
    tables: list[tuple[str, Table]] = []
    said: set[str] = set()
    for item in results:
        result, by = item["result"], item["by"]
        if by in BY_TITLES:
            tables.append((f"{item['label']}: agreement by {BY_TITLES[by]}", subgroup_table(result)))
            tables.append((f"{item['label']}: test of equal bias across {BY_TITLES[by]}s", equal_bias_table(result)))
            text = subgroup_paragraphs(result)
        else:
            tables.append((f"{item['label']}: agreement at the therapist level", therapist_table(result)))
            text = therapist_paragraphs(result)
        if by not in said:
            said.add(by)
            paragraphs += text[:-1]
    purpose = results[0]["result"]["meta"]["purpose"] if results else ""
    return paragraphs + ([f"These statistics are {purpose}."] if purpose else []), tables
