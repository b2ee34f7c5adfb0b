"""A Table-3-like plain-text table of a grid of runs, for the terminal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mis_bench_dataset.dimensions import DIMENSIONS
from mis_bench_dataset.toolkit.numbers import pct


def format_table(entries: Sequence[Any]) -> str:
    """ICC (%) per dimension, mean, overall, parse rate, and the rows cut at the token limit or failed,
    of grid entries (`runner.GridEntry`)."""
    header = ["setting", *(d.abbreviation for d in DIMENSIONS), "mean", "overall", "parsed", "truncated", "failed"]
    lines = [header]
    for entry in entries:
        if entry.result is None:
            lines.append([entry.label, "refused: " + (entry.refused or "")[:90]])
            continue
        result = entry.result
        scores = result.scores or {}
        dims = scores.get("dimensions", {})
        lines.append(
            [
                f"{entry.label} [{result.input_source}]",
                *(pct(dims.get(d.key, {}).get("icc")) for d in DIMENSIONS),
                pct(scores.get("mean_icc")),
                pct(scores.get("overall", {}).get("icc")),
                pct(result.n_parsed / max(result.n_rows, 1), 0) + "%",
                str(result.n_truncated),
                str(result.n_failed),
            ]
        )
    widths = [max(len(row[i]) for row in lines if len(row) == len(header)) for i in range(len(header))]
    out = []
    for row in lines:
        if len(row) != len(header):
            out.append(row[0].ljust(widths[0]) + "  " + row[1])
        else:
            out.append(
                "  ".join(
                    cell.ljust(w) if i == 0 else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(row, widths, strict=True))
                )
            )
    return "\n".join(out)
