"""Number and text formatting shared by reports and the leaderboard page (ICC in percent, as the paper).

The number rules themselves (percent text, MISSING) are defined once in
`mis_bench_dataset.toolkit.numbers`; this module adds what only tables need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mis_bench_dataset.toolkit.numbers import MISSING, ci_pct, is_number, num, pct, signed
from mis_bench_dataset.toolkit.text_safety import escape_markdown as md_escape

__all__ = [
    "MISSING",
    "best_rows",
    "ci_pct",
    "floor_sentence",
    "is_number",
    "md_escape",
    "num",
    "p_text",
    "pct",
    "signed",
    "signed_pct",
    "withheld_cell",
    "withheld_lines",
]


def best_rows(values: Sequence[float | None], *, higher_is_better: bool = True) -> set[int]:
    """Indices holding the best defined value of a column (all of them on a tie)."""
    defined = [(i, v) for i, v in enumerate(values) if is_number(v)]
    if not defined:
        return set()
    target = (max if higher_is_better else min)(v for _, v in defined)
    return {i for i, v in defined if v == target}


def signed_pct(value: float | None, digits: int = 1) -> str:
    """A difference of fractions in percentage points with its sign ("+5.2", "-0.3")."""
    return f"{100.0 * value:+.{digits}f}" if is_number(value) else MISSING


def p_text(value: float | None) -> str:
    """A p-value with three decimals ("p=0.042"), "p<0.001" below that."""
    if not is_number(value):
        return MISSING
    return "p<0.001" if value < 0.001 else f"p={value:.3f}"


def withheld_cell(reason: str) -> str:
    """What stands where a withheld CI or p-value would (`mis_icc_metric.reporting_floor`): "withheld: " and the
    count that withheld it ("withheld: 1 clinician(s)"); `withheld_lines` gives the whole reason."""
    return f"withheld: {reason.split(';')[0]}"


def withheld_lines(reasons: Sequence[tuple[str, str]]) -> list[str]:
    """One line per distinct reason a figure was withheld, naming where (`reasons`: (where, reason) pairs)."""
    by_reason: dict[str, list[str]] = {}
    for where, reason in reasons:
        if reason and where not in by_reason.setdefault(reason, []):
            by_reason[reason].append(where)
    return [f"Withheld ({', '.join(where)}): {reason}." for reason, where in by_reason.items()]


def floor_sentence(meta: Mapping[str, Any]) -> str:
    """The one rule (`mis_icc_metric.reporting_floor`) in one sentence, from an output's metadata
    (`meta["reporting_floor"]`, its `floor_description()`); "" where the output carries none."""
    floor = meta.get("reporting_floor")
    if not floor:
        return ""
    return (
        f" A CI or p-value from fewer than {floor['min_ci_clinicians']} clinicians (resampling clinicians) or"
        f" {floor['min_ci_videos']} videos, with over {floor['max_undefined_share']:.0%} undefined resamples, or of"
        " zero width is withheld with its reason."
    )
