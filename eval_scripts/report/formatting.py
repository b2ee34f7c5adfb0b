"""Number formatting shared by reports and the leaderboard page (ICC in percent, as the paper)."""

from __future__ import annotations

import math
from collections.abc import Sequence

MISSING = "–"


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def pct(value: float | None, digits: int = 1) -> str:
    """A raw fraction as percent with `digits` decimals; MISSING when undefined."""
    return f"{100.0 * value:.{digits}f}" if is_number(value) else MISSING


def ci_pct(ci: Sequence[float | None] | None, digits: int = 1) -> str:
    if not ci or len(ci) != 2 or not all(is_number(v) for v in ci):
        return MISSING
    return f"[{pct(ci[0], digits)}, {pct(ci[1], digits)}]"


def num(value: float | None, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if is_number(value) else MISSING


def best_rows(values: Sequence[float | None], *, higher_is_better: bool = True) -> set[int]:
    """Indices holding the best defined value of a column (all of them on a tie)."""
    defined = [(i, v) for i, v in enumerate(values) if is_number(v)]
    if not defined:
        return set()
    target = (max if higher_is_better else min)(v for _, v in defined)
    return {i for i, v in defined if v == target}
