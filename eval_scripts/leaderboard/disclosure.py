"""What a board publishes: figures at the precision a reader needs, never of a handful of videos, and on a
hidden-label board only the agreement figures of ranked entries.

Threat model (docs/reports.md, "What a submission learns"): a submitter chooses predictions and reads
the published figures back. A figure of one video, or a full-precision MSE, gives its gold exactly
(1 + sqrt(MSE) for a prediction of 1.0; two submissions differing on one video give that video's gold from
the difference of their MSEs). So figures are rounded to three significant digits, none is published for
fewer than `MIN_PUBLISHED_VIDEOS` videos, entries that do not answer the whole split publish no figure,
and a hidden-label board publishes the ICCs (with their CIs) and the comparison with the leader but no MSE,
bias, limits of agreement or other error statistics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

SIGNIFICANT_DIGITS = 3
MIN_PUBLISHED_VIDEOS = 10
# What a hidden-label board keeps of a scores block (a dimension, the overall) and of a score dict.
_HIDDEN_BLOCK_KEYS = frozenset(
    {"name", "abbreviation", "icc", "icc_ci", "n", "n_total", "n_unparsed", "n_excluded", "excluded_rate"}
)
_HIDDEN_BLOCK_KEYS |= {"parse_rate", "human_ceiling", "note", "withheld"}  # withheld: why a CI is not shown
_HIDDEN_SCORE_KEYS = frozenset(
    {"dimensions", "overall", "mean_icc", "mean_icc_ci", "parse_rates", "coverage", "withheld"}
)


def significant(value: Any, digits: int = SIGNIFICANT_DIGITS) -> Any:
    """`value` rounded to `digits` significant digits, recursively through dicts and lists (ints, text and
    None unchanged)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else value
    if isinstance(value, Mapping):
        return {key: significant(item, digits) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [significant(item, digits) for item in value]
    return value


def _hidden_block(block: Any) -> Any:
    if not isinstance(block, Mapping):
        return block
    return {key: value for key, value in block.items() if key in _HIDDEN_BLOCK_KEYS}


def published_scores(scores: Mapping[str, Any], *, hidden: bool, n_videos: int) -> dict[str, Any]:
    """The figures of one ranked entry as the board publishes them (see the module docstring)."""
    if n_videos < MIN_PUBLISHED_VIDEOS:
        return {
            "dimensions": {},
            "overall": {},
            "mean_icc": None,
            "withheld": f"the split has {n_videos} videos, fewer than the {MIN_PUBLISHED_VIDEOS} a published "
            "figure needs",
        }
    if hidden:
        scores = {key: value for key, value in scores.items() if key in _HIDDEN_SCORE_KEYS}
        scores["dimensions"] = {key: _hidden_block(b) for key, b in (scores.get("dimensions") or {}).items()}
        scores["overall"] = _hidden_block(scores.get("overall") or {})
    return significant(dict(scores))


def published_comparison(comparison: Mapping[str, Any] | None, *, n_videos: int) -> dict[str, Any] | None:
    """The paired comparison with the leader at the published precision (none below the minimum of videos)."""
    if comparison is None or n_videos < MIN_PUBLISHED_VIDEOS:
        return None
    return significant(dict(comparison))
