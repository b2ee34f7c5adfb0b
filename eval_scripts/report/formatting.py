"""Number formatting shared by reports and the leaderboard page (ICC in percent, as the paper).

The number rules themselves (percent text, MISSING) are defined once in
`mis_bench_dataset.numbers`; this module adds what only tables need.
"""

from __future__ import annotations

from collections.abc import Sequence

from mis_bench_dataset.numbers import MISSING, ci_pct, is_number, num, pct

__all__ = ["MISSING", "best_rows", "ci_pct", "is_number", "num", "pct"]


def best_rows(values: Sequence[float | None], *, higher_is_better: bool = True) -> set[int]:
    """Indices holding the best defined value of a column (all of them on a tie)."""
    defined = [(i, v) for i, v in enumerate(values) if is_number(v)]
    if not defined:
        return set()
    target = (max if higher_is_better else min)(v for _, v in defined)
    return {i for i, v in defined if v == target}
