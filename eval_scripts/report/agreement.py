"""The report's agreement tables: each system's best configuration with every statistic beyond ICC(3,1)
(from its scores' `agreement` blocks), and the model as one more rater (`mis_icc_metric.raters`).

Cells that carry a CI read "value [low, high]" so the HTML puts the interval on a second line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eval_scripts.report.formatting import MISSING, ci_pct, num, pct, signed, withheld_cell
from eval_scripts.report.table import RunView, Table
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSIONS

__all__ = [
    "AGREEMENT_NOTE",
    "HALO_NOTE",
    "agreement_table",
    "certification_rule",
    "certification_table",
    "halo_cells",
    "halo_table",
    "raters_table",
]

AGREEMENT_NOTE = (
    "Same pairs as the ICC (parsed predictions per dimension; complete videos overall), each with its 95% "
    "percentile bootstrap CI from the run's resamples. ICC(3,1) (the paper's metric) ignores a constant offset; "
    "ICC(2,1) and ICC(1,1) count it; Krippendorff's alpha is the interval-metric chance-corrected agreement; r and "
    "rho are Pearson and Spearman correlations (blind to offset and scale). MAE, bias (model minus expert) and the "
    "Bland-Altman 95% limits of agreement (bias +- 1.96 sd of the differences) are in score points. Range use: sd "
    "ratio model / expert (below 1: scores compressed toward the middle), share of answers on whole points, number "
    "of distinct answers. See docs/agreement.md."
)
_PERCENT = ("icc3_1", "icc2_1", "icc1_1", "krippendorff_alpha", "pearson", "spearman")
_HEADER = ["ICC(3,1) %", "ICC(2,1) %", "ICC(1,1) %", "alpha %", "r %", "rho %", "MAE", "bias", "95% limits"]
_HEADER += ["sd ratio", "on integers %", "distinct"]


def _stat(block: Mapping[str, Any], key: str) -> tuple[Any, Any]:
    stat = ((block or {}).get("agreement") or {}).get(key) or {}
    return stat.get("value"), stat.get("ci")


def _with_ci(text: str, ci_text: str) -> str:
    return text if text == MISSING or ci_text == MISSING else f"{text} {ci_text}"


def _ci_text(entry: Mapping[str, Any], show) -> str:
    """`show(ci)` of a statistic's CI, "(withheld: ...)" where the one rule withheld it
    (`mis_icc_metric.reporting_floor`), MISSING where it has none."""
    if entry.get("withheld"):
        return f"({withheld_cell(entry['withheld'])})"
    return show(entry["ci"]) if entry.get("ci") else MISSING


def _cells(block: Mapping[str, Any]) -> list[str]:
    stats = (block or {}).get("agreement") or {}
    cells = []
    for key in _PERCENT:
        value, _ = _stat(block, key)
        cells.append(_with_ci(pct(value), _ci_text(stats.get(key) or {}, ci_pct)))
    mae, _ = _stat(block, "mae")
    bias, _ = _stat(block, "bias")
    low, _ = _stat(block, "loa_low")
    high, _ = _stat(block, "loa_high")
    cells.append(_with_ci(num(mae, 3), _ci_text(stats.get("mae") or {}, lambda c: f"[{num(c[0], 3)}, {num(c[1], 3)}]")))
    cells.append(
        _with_ci(signed(bias), _ci_text(stats.get("bias") or {}, lambda c: f"[{signed(c[0])}, {signed(c[1])}]"))
    )
    cells.append(MISSING if signed(low) == MISSING else f"{signed(low)} to {signed(high)}")
    ratio, _ = _stat(block, "sd_ratio")
    cells.append(
        _with_ci(num(ratio, 2), _ci_text(stats.get("sd_ratio") or {}, lambda c: f"[{num(c[0], 2)}, {num(c[1], 2)}]"))
    )
    share, _ = _stat(block, "integer_share")
    cells.append(pct(share))
    distinct, _ = _stat(block, "n_distinct")
    cells.append(num(distinct, 0))  # undefined (no pairs: NaN, or null once in JSON) reads as missing
    return cells


HALO_NOTE = (
    "Halo, beside range use: the mean Pearson correlation between two dimensions' scores over the videos scored on "
    "both, over the dimension pairs where it is defined (at least 3 such videos, a spread on both sides), for the "
    "system and for the expert gold on the same pairs, with 95% bootstrap CIs over the same resamples. A judge that "
    "rates every dimension of a video alike has a halo well above the gold's; a dimension it scores the same for "
    "every video has no correlation at all (its pairs drop out). See docs/agreement.md."
)


def halo_cells(scores: Mapping[str, Any]) -> tuple[str, str, str]:
    """("model r [CI]", "gold r [CI]", "k of 28") of a scores object's `halo`, r as a plain 2-decimal number."""
    halo = (scores or {}).get("halo") or {}

    def side(name: str) -> str:
        entry = halo.get(name) or {}
        return _with_ci(num(entry.get("value"), 2), _ci_text(entry, lambda c: f"[{num(c[0], 2)}, {num(c[1], 2)}]"))

    model = halo.get("model") or {}
    pairs = f"{model['n_pairs']} of {model['n_pairs_total']}" if model else MISSING
    return side("model"), side("gold"), pairs


def halo_table(runs: Sequence[RunView]) -> Table:
    """Per run its halo and the expert gold's on the same pairs, and how many dimension pairs define it."""
    rows = [[run.label, *halo_cells(run.scores)] for run in runs]
    return Table(["System", "halo (model)", "halo (expert gold)", "dimension pairs"], rows, set(), label_columns=1)


def agreement_table(runs: Sequence[RunView]) -> Table:
    """Per run a row per dimension and Overall (the run named on its first row), a column per statistic
    (ICC(3,1) first, as everywhere). User text sits in the label columns, so it is escaped."""
    rows = []
    for run in runs:
        blocks = [(d.abbreviation, run.dim(d.key)) for d in DIMENSIONS] + [("Overall", run.overall)]
        rows += [[run.label if i == 0 else "", name, *_cells(block)] for i, (name, block) in enumerate(blocks)]
    return Table(["System", "Dimension", *_HEADER], rows, set(), label_columns=2)


def raters_table(rated: Sequence[tuple[RunView, Mapping[str, Any]]]) -> Table:
    """`model_as_rater` outputs (one labels file, so one set of raters): per run and dimension n, the
    model's ICC(3,1) % with each rater, their mean, the raters' ICC together (Table 2's ceiling on these
    videos), the mean rater pair, leave one rater out (the ICC with that rater replaced by the model, and
    in brackets the change in points) and Table 2's own computation on every fully rated video."""
    names = list(rated[0][1]["raters"]) if rated else []
    header = ["System", "Dimension", "n"] + [f"model vs {r}" for r in names]
    header += ["mean model vs rater", "raters together", "mean rater pair"]
    header += [f"{r} replaced by model (Δ points)" for r in names] + ["Table 2 computation"]
    rows = []
    for run, result in rated:
        for i, (key, entry) in enumerate(result["dimensions"].items()):
            rows.append([run.label if i == 0 else "", DIMENSION_BY_KEY[key].abbreviation, *_rater_cells(entry, names)])
    return Table(header, rows, set(), label_columns=2)


def _rater_cells(entry: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    model_vs = entry.get("model_vs_rater") or {}
    loo = entry.get("leave_one_out") or {}
    raters_icc = entry.get("raters_icc") or {}
    ceiling = entry.get("human_ceiling") or {}
    cells = [str(entry.get("n", 0))]
    cells += [
        _with_ci(pct((model_vs.get(r) or {}).get("icc")), ci_pct((model_vs.get(r) or {}).get("ci"))) for r in names
    ]
    cells += [pct(entry.get("mean_model_vs_rater")), _with_ci(pct(raters_icc.get("icc")), ci_pct(raters_icc.get("ci")))]
    cells.append(pct(entry.get("mean_rater_vs_rater")))
    for r in names:
        item = loo.get(r) or {}
        delta = item.get("delta")
        cells.append(MISSING if delta is None else f"{pct(item.get('icc'))} ({100 * delta:+.1f})")
    cells.append(
        MISSING if ceiling.get("icc") is None else f"{pct(ceiling['icc'])} {ci_pct(ceiling.get('ci'))} n={ceiling['n']}"
    )
    return cells


def certification_table(rated: Sequence[tuple[RunView, Mapping[str, Any]]]) -> Table:
    """The Appendix B rule run on each system: passed or not, the longest run of clips above the threshold
    and where it is, and how many clips pass."""
    header = ["System", "Certified", "Longest run (clips)", "Run from", "Run to", "Clips above threshold", "Clips"]
    rows = []
    for run, result in rated:
        cert = result["certification"]
        span = cert["best_run_clips"] or [MISSING, MISSING]
        verdict = f"yes, at {cert['certified_at']}" if cert["passed"] else "no"
        rows.append(
            [run.label, verdict, str(cert["best_run"]), span[0], span[1], str(cert["n_passing"]), str(cert["n_clips"])]
        )
    return Table(header, rows, set(), label_columns=1)


def certification_rule(result: Mapping[str, Any]) -> str:
    """The rule as run: threshold, run length, clip order, and what breaks a run."""
    cert = result["certification"]
    return (
        f'Appendix B certification (raters were trained "until each rater achieved ICC greater than 0.8 with expert '
        f'ratings on six consecutive clips"), run on the model: {cert["rule"]}; clips in {cert["order"]}; a clip with '
        "any dimension unparsed, or an ICC at or below the threshold, ends a run."
    )
